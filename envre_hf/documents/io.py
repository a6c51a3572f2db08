"""Reading and writing document files: DocRED JSON (a list), JSON Lines, Linked-(Re-)DocRED.

The dialect of each document is detected from its keys (``vertexSet`` vs ``entities``), the
container from the file name (``.jsonl`` = one document a line, anything else = a JSON list).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import DocumentError
from .formats import from_dict, to_docred, to_linked
from .schema import Document

PathLike = str | os.PathLike

_WRITERS = {"docred": to_docred, "linked": to_linked}


def _is_jsonl(path: PathLike) -> bool:
    return str(path).endswith((".jsonl", ".jsonl.gz"))


def iter_documents(path: PathLike) -> Iterator[Document]:
    """Yield the documents of a DocRED / Linked JSON list or a JSON Lines file."""
    path = Path(path)
    if _is_jsonl(path):
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DocumentError(f"{path}: line {i + 1} is not valid JSON ({err.msg})", doc_index=i) from None
                yield from_dict(obj, i)
        return
    with open(path, encoding="utf-8") as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as err:
            raise DocumentError(f"{path} is not valid JSON: {err}") from None
    if isinstance(data, dict):  # a single document
        data = [data]
    if not isinstance(data, list):
        raise DocumentError(f"{path}: expected a JSON list of documents, got {type(data).__name__}")
    for i, obj in enumerate(data):
        yield from_dict(obj, i)


def read_documents(path: PathLike) -> list[Document]:
    """Read every document of ``path`` (see :func:`iter_documents`)."""
    return list(iter_documents(path))


def write_documents(docs: Iterable[Document], path: PathLike, dialect: str = "docred") -> Path:
    """Write ``docs`` to ``path`` as a JSON list, or JSON Lines when the name ends in ``.jsonl``.

    ``dialect`` is ``"docred"`` (vertexSet/labels) or ``"linked"`` (entities/relations).
    The file is written to a temporary name and moved into place, so a crash never leaves half a file.
    """
    if dialect not in _WRITERS:
        raise ValueError(f"unknown dialect {dialect!r}; expected one of {sorted(_WRITERS)}")
    convert = _WRITERS[dialect]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        if _is_jsonl(path):
            for doc in docs:
                fh.write(json.dumps(convert(doc), ensure_ascii=False))
                fh.write("\n")
        else:
            json.dump([convert(doc) for doc in docs], fh, ensure_ascii=False)
    os.replace(tmp, path)
    return path

"""What a build renames with what: the input's documents (bad ones listed, not fatal) and the fingerprints
(input, KB snapshot, renaming config) that decide whether a build may replace a split.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from ..atomic import PathLike
from ..documents import Document, DocumentError, iter_documents
from .driver import DocumentFailure



@dataclass(frozen=True)
class SourceInfo:
    """What is being renamed with what: recorded in the statistics and the card."""

    input_path: str
    input_sha256: str
    kb_name: str
    kb_snapshot: str
    #: The renaming configuration as plain JSON (see :func:`describe_config`), for people.
    renaming_config: dict[str, Any] = field(default_factory=dict)
    #: ``RenamingConfig.fingerprint()``: with input, KB snapshot and seeds, whether a build may replace a split.
    config_fingerprint: str = ""

    def fingerprint(self, seeds: Sequence[int]) -> str:
        payload = json.dumps(
            {
                "input_sha256": self.input_sha256,
                "kb_snapshot": self.kb_snapshot,
                "renaming_config": self.config_fingerprint,
                "seeds": list(seeds),
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def file_sha256(path: PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def in_file(err: DocumentError, path: PathLike) -> DocumentError:
    """``err`` naming the input file too (once)."""
    return err if str(path) in str(err) or Path(path).name in str(err) else err.located(None, None, file=Path(path))


def read_input_documents(
    path: PathLike, skip: bool = True
) -> tuple[list[Document | None], list[DocumentFailure]]:
    """The documents of ``path`` by position (``None`` where one could not be parsed) and the parse failures;
    without ``skip`` the first bad document is raised. Validation is the pipeline's job, per seed."""
    docs: list[Document | None] = []
    failures: list[DocumentFailure] = []

    def bad(err: DocumentError, raw: Any) -> None:
        if not skip:
            raise err
        title = raw.get("title") if isinstance(raw, dict) else err.title
        failures.append(DocumentFailure(len(docs), title if isinstance(title, str) else None, None, str(err)))
        docs.append(None)

    try:
        for doc in iter_documents(path, validate=False, on_error=bad):
            docs.append(doc)
    except DocumentError as err:
        raise in_file(err, path) from None
    return docs, failures


def describe_config(config: Any) -> dict[str, Any]:
    """A JSON-able, order-independent description of a renaming config (sets are sorted, big ones hashed)."""
    if config is None:
        return {}
    items = asdict(config) if is_dataclass(config) else dict(vars(config))
    out: dict[str, Any] = {}
    for key, value in sorted(items.items()):
        if isinstance(value, (set, frozenset)):
            names = sorted(map(str, value))
            digest = hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:16]
            out[key] = {"count": len(names), "sha256": digest}
        elif isinstance(value, (str, int, float, bool)) or value is None:
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = [v if isinstance(v, (str, int, float, bool)) or v is None else repr(v) for v in value]
        elif isinstance(value, dict):
            out[key] = {str(k): v if isinstance(v, (str, int, float, bool)) else repr(v) for k, v in value.items()}
        else:
            out[key] = repr(value)
    return out


def source_info(input_path: PathLike, kb_name: str, kb_snapshot: str, renaming_config: Any) -> SourceInfo:
    """The :class:`SourceInfo` of a build of ``input_path``."""
    return SourceInfo(
        input_path=str(input_path),
        input_sha256=file_sha256(input_path),
        kb_name=kb_name,
        kb_snapshot=kb_snapshot,
        renaming_config=describe_config(renaming_config),
        config_fingerprint=renaming_config.fingerprint() if hasattr(renaming_config, "fingerprint") else "",
    )

"""Name isolation: keep the names of one benchmark out of another renaming (training twins must not see a
benchmark's names). The names go into ``RenamingConfig(exclude_names=...)``, compared by ``name_key``;
:func:`load_excluded_names` is the one reader of them from files (``envre build`` and training alike).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..documents import Document, DocumentError, read_documents
from ..documents.io import parse_json, read_text

#: The file of new names an ``envre build`` folder keeps per split, and its format tag.
NAMES_FILE = "names_used.json"
NAMES_FORMAT = "envre-names-used/1"


def used_names(renamed_docs: Iterable[Document]) -> set[str]:
    """The new names of every renamed entity (``unchanged:`` records excluded)."""
    subs = (sub for doc in renamed_docs for sub in doc.substitutions or [])
    return {sub.new_name for sub in subs if not sub.match.startswith("unchanged:")}


def document_names(docs: Iterable[Document], types: Iterable[str] | None = None) -> set[str]:
    """Every mention name of ``docs`` (only entities of the coarse ``types`` when given)."""
    wanted = None if types is None else set(types)
    entities = (entity for doc in docs for entity in doc.entities if wanted is None or entity.type in wanted)
    return {mention.name for entity in entities for mention in entity.mentions}


def load_excluded_names(sources: str | os.PathLike | Iterable[str | os.PathLike]) -> frozenset[str]:
    """Names a renaming must not use, from one path or several: ``*.txt`` (one a line), a ``names_used.json``
    (or a build folder with one), renamed documents (their new names) or plain documents (every mention name);
    see docs/renaming.md."""
    paths = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    names: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"exclude_names_from: {path} does not exist")
        if path.suffix == ".txt":
            names.update(line.strip() for line in read_text(path).splitlines() if line.strip())
            continue
        if path.is_dir() and (path / NAMES_FILE).exists():
            path = path / NAMES_FILE
        listed = _names_file(path)
        if listed is not None:
            names.update(listed)
            continue
        docs = read_documents(path)
        renamed = any(doc.substitutions for doc in docs)
        names.update(used_names(docs) if renamed else document_names(docs))
    return frozenset(names)


def names_file_problem(raw: object) -> str | None:
    """What is wrong with the parsed JSON of a ``names_used.json`` file (``None``: nothing)."""
    if not isinstance(raw, dict):
        return f"expected a JSON object with 'format' and 'splits', got {type(raw).__name__}"
    if raw.get("format") != NAMES_FORMAT:
        return f"field 'format' must be {NAMES_FORMAT!r}"
    splits = raw.get("splits")
    if not isinstance(splits, dict):
        return "field 'splits' must be an object of split name -> list of names"
    for split, split_names in splits.items():
        if not isinstance(split_names, list) or not all(isinstance(name, str) for name in split_names):
            return f"field 'splits' -> {split!r} must be a list of names (strings)"
    return None


def _names_file(path: Path) -> set[str] | None:
    """The names of a ``names_used.json``-format file (any JSON object with its format tag), or ``None``."""
    if path.is_dir() or not path.name.endswith(".json"):
        return None
    if path.name != NAMES_FILE:
        with open(path, "rb") as fh:  # a names file is a JSON object; a document list starts with "["
            head = fh.read(256).lstrip()
        if not head.startswith(b"{"):
            return None
    raw = parse_json(read_text(path), path)
    if path.name != NAMES_FILE and not (isinstance(raw, dict) and raw.get("format") == NAMES_FORMAT):
        return None
    problem = names_file_problem(raw)
    if problem:
        raise DocumentError(f"{path}: {problem}")
    return {name for split_names in raw["splits"].values() for name in split_names}


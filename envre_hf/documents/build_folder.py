"""The one reader of ``envre build`` folders (``data/<split>-NNNNN-of-NNNNN.parquet``, ``statistics.json``, the
unfinished mark ``.build/<split>``); ``envre_hf.renaming`` writes these names."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from .io import check_unique_keys, iter_documents
from .schema import Document

#: ``statistics.json``: the construction statistics of every split (its ``data_files`` name the split's shards).
STATISTICS_FILE = "statistics.json"
#: The folder of unfinished splits: ``.build/<split>`` exists while the split's files are being replaced.
WORK_DIR = ".build"
_SHARD = re.compile(r"(.+)-\d{5}-of-\d{5}\.parquet")


class BuildFolderError(ValueError):
    """A build folder that cannot be read as asked (the write of a split cut short)."""


def is_shard_of(name: str, split: str) -> bool:
    """``name`` is a shard of ``split`` exactly (``test-hard-00000-of-00001.parquet`` is not one of ``test``)."""
    return (match := _SHARD.fullmatch(name)) is not None and match.group(1) == split


def build_splits(folder: str | os.PathLike) -> list[str]:
    """The splits of a build folder, from its shard names (``[]`` for a file or a folder without ``data/``)."""
    data = Path(folder) / "data"
    if not data.is_dir():
        return []
    return sorted({m.group(1) for f in data.glob("*.parquet") if (m := _SHARD.fullmatch(f.name))})


def split_holding(folder: str | os.PathLike, references: Iterable[tuple[str | None, str | None]]) -> str | None:
    """The one split of build folder ``folder`` holding every document the ``(doc_id, title)`` references name (matched
    as the scorer does), or None when no split or several do."""
    references = list(references)
    holding = []
    for split in build_splits(folder):
        docs = read_benchmark(folder, split)
        keys, titles = {d.key for d in docs}, {d.title for d in docs}
        if all((doc_id in keys) if doc_id is not None else (title in keys or title in titles)
               for doc_id, title in references):
            holding.append(split)
    return holding[0] if len(holding) == 1 and references else None


def unfinished_splits(folder: str | os.PathLike) -> list[str]:
    """Splits of ``folder`` whose write was cut short (the fix: run the same ``envre build`` again)."""
    root = Path(folder) / WORK_DIR
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


def read_benchmark(path: str | os.PathLike, split: str = "test") -> list[Document]:
    """Documents of a DocRED-format file, or of one split of an ``envre build`` folder (exactly its shards; ``"*"``:
    every split); a missing split is a :class:`FileNotFoundError`, a cut-short write a :class:`BuildFolderError`."""
    path = Path(path)
    if not path.is_dir():
        return list(iter_documents(path))
    unfinished = unfinished_splits(path)
    if unfinished:
        raise BuildFolderError(
            f"{path}: the last write of split(s) {', '.join(unfinished)} was cut short; run the same envre build "
            f"again to finish it before reading the folder"
        )
    data = path / "data"
    every = split == "*"
    files = sorted(data.glob("*-*.parquet")) if every else sorted(
        f for f in data.glob("*.parquet") if is_shard_of(f.name, split)
    )
    if not files:
        splits = build_splits(path)
        raise FileNotFoundError(
            f"{path}: no data/{split}-*.parquet files (splits there: {', '.join(splits) or 'none'})"
            if (path / STATISTICS_FILE).exists() or splits
            else f"{path}: a folder, but not one written by envre build (no data/*.parquet); give a document file"
        )
    import pyarrow.parquet as pq  # only build folders need pyarrow here

    from .hf import document_from_row  # lazy: the datasets bridge only for build folders (docs/speed.md)

    docs = [document_from_row(row) for f in files for row in pq.read_table(f).to_pylist()]
    if not every:  # one split: one key per document (splits may share source documents)
        check_unique_keys(docs, path)
    return docs

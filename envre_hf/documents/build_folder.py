"""Documents of a benchmark given as a file or as a dataset folder written by ``envre build``.

A build folder holds ``data/<split>-*.parquet`` shards in the document schema (``DOCUMENT_FEATURES``); every
stage that accepts "a DocRED file or a build folder" (training data and twins, name isolation, ``envre analyze``,
``envre evaluate --env``, ``envre icl``) reads it here, so there is one reader of that layout.
"""

from __future__ import annotations

import os
from pathlib import Path

from .hf import dataset_to_documents, document_from_row
from .io import read_documents
from .schema import Document


def read_benchmark(path: str | os.PathLike, split: str = "test") -> list[Document]:
    """Documents of a DocRED-format file, or of ``data/<split>-*.parquet`` in a folder written by ``envre build``.

    ``split="*"`` reads every split's shards (in file-name order). A folder without shards of ``split`` raises
    :class:`FileNotFoundError` naming the pattern it looked for.
    """
    path = Path(path)
    if not path.is_dir():
        return read_documents(path)
    files = sorted((path / "data").glob(f"{split}-*.parquet"))
    if not files:
        raise FileNotFoundError(f"no {path}/data/{split}-*.parquet files")
    import pyarrow.parquet as pq  # only build folders need pyarrow here

    return [document_from_row(row) for f in files for row in pq.read_table(f).to_pylist()]


def read_any(path: str | os.PathLike) -> list[Document]:
    """Documents of a JSON/JSONL file, an ``envre build`` folder (all its splits) or a ``save_to_disk`` folder."""
    path = Path(path)
    if path.is_dir() and (path / "data").is_dir():
        return read_benchmark(path, split="*")  # "*": every split's parquet shards
    if path.is_dir():
        from datasets import load_from_disk  # only save_to_disk folders need it here

        return dataset_to_documents(load_from_disk(str(path)))
    return read_documents(path)

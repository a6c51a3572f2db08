"""Documents of a benchmark given as a file or as a dataset folder written by ``envre build``.

A build folder holds ``data/<split>-*.parquet`` shards in the document schema (``DOCUMENT_FEATURES``); every
stage that accepts "a DocRED file or a build folder" (training twins, name isolation, ``envre analyze``,
``envre evaluate --env``, ``envre icl``) reads it here, so there is one reader of that layout.
"""

from __future__ import annotations

import os
from pathlib import Path

from .hf import document_from_row
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

"""One reader for every source of documents: a document file, an ``envre build`` or ``save_to_disk`` folder, a
``datasets`` object or a Hub dataset id (``datasets`` imported only for the sources that need it)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .io import OnError, iter_documents
from .schema import Document

#: File names read as document files even when they do not exist (a clear "no such file", not a Hub lookup).
_FILE_SUFFIXES = (".json", ".jsonl", ".gz")
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


def read_documents(
    source: str | os.PathLike | Any,
    *,
    split: str | None = None,
    validate: bool = True,
    on_error: OnError = "fail",
) -> list[Document]:
    """The documents of ``source``; ``split`` picks one split (None: every split, in order). ``validate`` and
    ``on_error`` apply to document files; the other sources were validated when written."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            return _read_folder(path, split)
        name = str(source)
        if path.exists() or name.endswith(_FILE_SUFFIXES) or not _HUB_ID.fullmatch(name):
            if split is not None:
                raise ValueError(f"{path}: a document file has no splits (split={split!r})")
            return list(iter_documents(path, validate=validate, on_error=on_error))
        from datasets import load_dataset  # lazy: datasets only for a Hub id

        from ..hub_calls import hub_errors  # lazy: the Hub only for a Hub id
        from ..net.client import hub_read  # lazy: the Hub only for a Hub id

        with hub_errors(f"download of dataset {name}"):
            dataset = hub_read(lambda: load_dataset(name, split=split))
        return _from_dataset(dataset, split)
    if hasattr(source, "column_names"):  # a datasets Dataset or DatasetDict
        return _from_dataset(source, split)
    raise TypeError(f"cannot read documents from a {type(source).__name__}; give a path, a dataset or a Hub id")


def _read_folder(path: Path, split: str | None) -> list[Document]:
    if (path / "data").is_dir():
        from .build_folder import read_benchmark  # lazy: pyarrow only for build folders

        return read_benchmark(path, split="*" if split is None else split)
    from datasets import load_from_disk  # lazy: datasets only for save_to_disk folders

    return _from_dataset(load_from_disk(str(path)), split)


def _from_dataset(data: Any, split: str | None) -> list[Document]:
    from .hf import dataset_to_documents  # lazy: the datasets bridge on first use

    if isinstance(data.column_names, dict):  # a DatasetDict: one split, or all of them in order
        if split is not None:
            if split not in data:
                raise KeyError(f"no split {split!r} (splits there: {', '.join(data)})")
            return dataset_to_documents(data[split])
        return [doc for name in data for doc in dataset_to_documents(data[name])]
    return dataset_to_documents(data)

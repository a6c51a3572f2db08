"""What the builders share: the envre-hf document schema, file resolution and document conversion.

Every split is read from files found, in this order of precedence, in

1. ``data_files`` (``{"test": "path/or/url", ...}``) given to the builder,
2. ``data_dir``: a local folder laid out like the source (the original file names); its files become
   ``data_files``, so the cache follows their changes,
3. ``urls``: a builder-config mapping split -> URL, defaulting to the builder's ``URLS`` (the public source).

Rows use :data:`envre_hf.documents.DOCUMENT_FEATURES`: DocRED / Re-DocRED / Linked-DocRED JSON or JSON Lines are
converted with :func:`envre_hf.documents.document_to_row`. A folder written by ``envre build`` needs no builder:
``datasets.load_dataset(folder)`` reads its parquet through the card's ``configs`` (docs/benchmarks.md).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from typing import Any

import datasets
from datasets.builder import Key

from envre_hf.documents import DOCUMENT_FEATURES, document_to_row, iter_documents


class DocREBuilderConfig(datasets.BuilderConfig):
    """A builder config with overridable source URLs (``urls={"test": "file:///..." or "https://..."}``)."""

    def __init__(self, *args: Any, urls: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.urls = urls


def read_rows(path: str) -> Iterator[dict[str, Any]]:
    """Rows of one DocRED-format source file (JSON / JSON Lines), converted to the document schema."""
    for doc in iter_documents(path):
        yield document_to_row(doc)


class DocREBuilder(datasets.GeneratorBasedBuilder):
    """Base builder: subclasses set ``URLS``, ``SPLIT_PATTERNS`` and the card texts."""

    BUILDER_CONFIG_CLASS = DocREBuilderConfig
    BUILDER_CONFIGS = [DocREBuilderConfig(name="default", version=datasets.Version("1.0.0"))]
    DEFAULT_CONFIG_NAME = "default"
    #: split -> public URL of its file (empty when the source needs a manual download).
    URLS: dict[str, str] = {}
    #: split -> glob pattern inside ``data_dir``.
    SPLIT_PATTERNS: dict[str, str] = {}
    #: How to get the files when there is no public URL to download them from.
    MANUAL_DOWNLOAD = ""
    DESCRIPTION = ""
    CITATION = ""
    HOMEPAGE = ""
    LICENSE = "mit"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=self.DESCRIPTION,
            features=DOCUMENT_FEATURES,
            homepage=self.HOMEPAGE,
            license=self.LICENSE,
            citation=self.CITATION,
        )

    def __init__(self, *args: Any, data_dir: str | None = None, data_files: Any = None, **kwargs: Any):
        # a data_dir is turned into explicit data_files here, so the cache key covers the files themselves
        # (datasets hashes their modification times): rebuilding the folder never serves stale rows
        if data_dir is not None and data_files is None:
            data_files = self.files_in(data_dir)
        super().__init__(*args, data_dir=data_dir, data_files=data_files, **kwargs)

    @classmethod
    def files_in(cls, data_dir: str) -> dict[str, list[str]]:
        """The files of each split found in ``data_dir`` (``SPLIT_PATTERNS``)."""
        data_dir = os.path.abspath(os.path.expanduser(data_dir))
        found = {
            split: sorted(glob.glob(os.path.join(data_dir, pattern))) for split, pattern in cls.SPLIT_PATTERNS.items()
        }
        found = {split: files for split, files in found.items() if files}
        if not found:
            expected = ", ".join(cls.SPLIT_PATTERNS.values())
            raise FileNotFoundError(f"{data_dir} holds none of the expected files ({expected})")
        return found

    def _split_files(self, dl_manager: datasets.DownloadManager) -> dict[str, list[str]]:
        if self.config.data_files:
            return {split: [str(f) for f in files] for split, files in self.config.data_files.items()}
        urls = self.config.urls or self.URLS
        if not urls:
            raise FileNotFoundError(
                f"{type(self).__name__} needs data_dir=... or data_files=...: {self.MANUAL_DOWNLOAD}"
            )
        paths = dl_manager.download(dict(urls))
        return {split: [path] for split, path in paths.items()}

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"paths": paths})
            for split, paths in self._split_files(dl_manager).items()
        ]

    def _generate_examples(self, paths: list[str]) -> Iterator[tuple[Key, dict[str, Any]]]:
        for file_index, path in enumerate(paths):
            for row_index, row in enumerate(read_rows(path)):
                yield Key(file_index, row_index), row

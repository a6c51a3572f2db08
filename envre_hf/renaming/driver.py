"""The one renaming driver: (document, seed) pairs through a pipeline, in order, with failures collected, so
what happens to a document is defined once for every caller (docs/renaming.md#one-renaming-driver)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tqdm.auto import tqdm

from ..documents import Document, DocumentError, document_to_row
from ..kb.base import KnowledgeBaseError
from .leaks import find_leaks

ON_ERROR = ("fail", "skip")
#: (document index, seed): one renamed copy to make.
Unit = tuple[int, int]


class Renamer(Protocol):
    """What the driver needs from :class:`envre_hf.renaming.RenamingPipeline`."""

    def rename(self, doc: Document, seed: int) -> Document: ...


@dataclass
class DocumentFailure:
    """A (document, seed) that was not renamed. ``seed`` is None when the document could not even be parsed."""

    doc_index: int
    title: str | None
    seed: int | None
    error: str
    error_type: str = "DocumentError"


@dataclass
class RenamedUnit:
    """The outcome of one unit: the copy (with its leak count and row when asked), or why there is none."""

    doc_index: int
    seed: int
    document: Document | None
    leaks: int = 0
    row: dict[str, Any] | None = None
    failure: DocumentFailure | None = None


def rename_unit(
    pipeline: Renamer,
    doc: Document,
    seed: int,
    doc_index: int | None = None,
    *,
    skip: bool = False,
    count_leaks: bool = False,
    with_row: bool = False,
) -> RenamedUnit:
    """Rename ``doc`` (number ``doc_index`` of its collection, if it has one) at ``seed`` (see the module doc)."""
    try:
        with_report = getattr(pipeline, "rename_with_report", None)
        if with_report is not None and count_leaks:  # the pipeline already ran the leak check: reuse its count
            renamed, report = with_report(doc, seed)
            leaks = report.leaks_found - report.leaks_fixed
        else:
            renamed = pipeline.rename(doc, seed)
            leaks = len(find_leaks(renamed)) if count_leaks else 0
    except KnowledgeBaseError:
        raise  # the KB, not the document, failed: stop (a rerun asks again; replies so far are cached)
    except DocumentError as err:
        if not skip:
            raise err.located(doc_index, doc.title) from None
        return _failed(doc_index, seed, doc, err.located(doc_index, doc.title))
    except Exception as err:  # a pipeline bug on this document: report it instead of losing the whole run
        if not skip:
            raise
        return _failed(doc_index, seed, doc, err)
    row = document_to_row(renamed) if with_row else None
    return RenamedUnit(doc_index if doc_index is not None else -1, seed, renamed, leaks, row)


def _failed(doc_index: int | None, seed: int, doc: Document, err: BaseException) -> RenamedUnit:
    index = doc_index if doc_index is not None else -1
    return RenamedUnit(index, seed, None, failure=DocumentFailure(index, doc.title, seed, str(err), type(err).__name__))


#: (driver, documents) inherited by forked workers.
_WORKER_STATE: tuple[RenamingDriver, Sequence[Document | None]] | None = None


def _rename_chunk(units: list[Unit]) -> list[RenamedUnit]:
    assert _WORKER_STATE is not None
    driver, docs = _WORKER_STATE
    return [driver.rename_one(docs, unit) for unit in units]


@dataclass(frozen=True)
class RenamingDriver:
    """How to rename many documents: error policy, worker processes, leak counts and rows (see the module doc)."""

    pipeline: Renamer
    #: ``"fail"`` raises at the first bad document; ``"skip"`` reports it as a :class:`DocumentFailure`.
    on_error: str = "fail"
    #: Worker processes (fork); each takes ``chunk_size`` units at a time.
    num_proc: int = 1
    chunk_size: int = 64
    count_leaks: bool = False
    #: Also the ``datasets`` row of each copy (:func:`~envre_hf.documents.document_to_row`), made in the worker.
    with_rows: bool = False

    def __post_init__(self) -> None:
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {self.on_error!r}")
        if self.num_proc < 1 or self.chunk_size < 1:
            raise ValueError("num_proc and chunk_size must be >= 1")

    def rename_one(self, docs: Sequence[Document | None], unit: Unit) -> RenamedUnit:
        doc_index, seed = unit
        doc = docs[doc_index]
        assert doc is not None, f"document {doc_index} could not be read: it has no unit"
        return rename_unit(
            self.pipeline, doc, seed, doc_index,
            skip=self.on_error == "skip", count_leaks=self.count_leaks, with_row=self.with_rows,
        )

    def run(
        self,
        docs: Sequence[Document | None],
        units: Sequence[Unit],
        *,
        desc: str = "renaming",
        progress: bool = True,
        leave: bool = True,
    ) -> Iterator[RenamedUnit]:
        """Yield the outcome of each unit (``(index into docs, seed)``) in the order of ``units``."""
        with tqdm(total=len(units), desc=desc, unit="doc", disable=not progress, leave=leave) as bar:
            for chunk in self._chunk_results(docs, units):
                yield from chunk
                bar.update(len(chunk))

    def _chunk_results(self, docs: Sequence[Document | None], units: Sequence[Unit]) -> Iterator[list[RenamedUnit]]:
        if self.num_proc == 1 or len(units) <= self.chunk_size:
            for unit in units:
                yield [self.rename_one(docs, unit)]
            return
        global _WORKER_STATE
        _WORKER_STATE = (self, docs)
        try:
            with multiprocessing.get_context("fork").Pool(self.num_proc) as pool:
                chunks = (list(units[i : i + self.chunk_size]) for i in range(0, len(units), self.chunk_size))
                yield from pool.imap(_rename_chunk, chunks)
        finally:
            _WORKER_STATE = None

    def rename_documents(
        self, docs: Sequence[Document], seeds: Sequence[int], *, desc: str = "renaming", progress: bool = True,
        leave: bool = True,
    ) -> list[Document]:
        """The copies of ``docs`` for each of ``seeds``, seed-major; needs ``on_error="fail"`` (a list of copies
        has no place for a document that was not renamed)."""
        if self.on_error != "fail":
            raise ValueError("rename_documents returns copies only: use on_error='fail' (or run() to see failures)")
        units = [(i, seed) for seed in seeds for i in range(len(docs))]
        return [r.document for r in self.run(docs, units, desc=desc, progress=progress, leave=leave)]

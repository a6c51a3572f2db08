"""Relation extractors other than the library's models, as systems ``envre probe`` can probe (docs/probe.md).

The contract of a Python extractor (``envre probe --extractor module:function``) is :class:`TripleExtractor`: one
DocRED document dict in (title, ``vertexSet``, ``sents``; no labels, no renaming provenance), triples out
(:class:`Triple`). Whatever an extractor returns is checked by :func:`check_triples`, the one place where the
contract is enforced, and a failure names the extractor and the document on one line (:class:`ExtractorError`).
:class:`ExtractorSystem` runs such a function over the probe's documents, up to ``concurrency`` at a time; an LLM
(:func:`envre_hf.icl.probing.llm_system`) is one too.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import numbers
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict

from tqdm.auto import tqdm

from ..documents import Document, RelationSchema, docred_schema, to_docred


class Triple(TypedDict):
    """One predicted fact: head and tail entity (``vertexSet`` indices), Wikidata relation id, optional score."""

    h_idx: int
    t_idx: int
    r: str
    score: NotRequired[float]


class TripleExtractor(Protocol):
    """What ``--extractor module:function`` names: a DocRED document dict in, its triples out (any iterable)."""

    def __call__(self, document: dict[str, Any], /) -> Iterable[Triple]: ...


#: How a system maps a document to triples: (the document, its original) -> triples; the original is the document
#: itself, or the one a renamed copy was made from (an LLM draws the same demonstrations for both).
DocumentExtractor = Callable[[Document, Document], Iterable[Mapping[str, Any]]]
#: (a document, its original), and the official-format rows predicted on one document.
Pair = tuple[Document, Document]
Rows = list[dict[str, Any]]


class ExtractorError(ValueError):
    """An extractor that cannot be loaded, or that failed or broke the contract on one document (exit status 2)."""


def load_extractor(spec: str) -> TripleExtractor:
    """The function ``spec`` names: ``package.module:function`` (the current folder is searched first) or
    ``path/to/file.py:function``; dotted attributes (``module:Class.method``) are followed."""
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        raise ExtractorError(f"extractor {spec}: expected MODULE:FUNCTION (or path/to/file.py:FUNCTION)")
    try:
        module = _import(module_name)
    except ExtractorError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever the user's module raises while it is imported
        problem = f"{type(err).__name__}: {_line(err)}"
        raise ExtractorError(f"extractor {spec}: cannot import {module_name} ({problem})") from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ExtractorError(f"extractor {spec}: {module_name} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ExtractorError(f"extractor {spec}: {attribute} is a {type(target).__name__}, not a callable")
    return target


def _import(module_name: str) -> Any:
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            raise ExtractorError(f"extractor {module_name}: no such file")
        spec = importlib.util.spec_from_file_location(f"envre_extractor_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    sys.path.insert(0, str(Path.cwd()))  # as `python -m` would: the user's own module beside them
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(str(Path.cwd()))


def extractor_input(doc: Document) -> dict[str, Any]:
    """The DocRED dict an extractor reads: what a DocRE model reads (title, mentions, sentences), no labels and no
    renaming provenance (a copy's ``doc_id`` names it, ``<key>#<seed>``)."""
    plain = replace(doc, relations=[], has_labels=False, orig_title=None, seed=None, substitutions=None, extra={})
    return to_docred(plain)


def check_triples(name: str, doc: Document, triples: Any, schema: RelationSchema | None = None) -> list[dict[str, Any]]:
    """``triples`` as official-format rows of ``doc`` (``title``, ``doc_id``, ``h_idx``, ``t_idx``, ``r``,
    ``evidence``, and ``score`` when given; a repeated fact is kept once), or :class:`ExtractorError`."""
    schema = schema or docred_schema()

    def fail(problem: str) -> ExtractorError:
        return ExtractorError(f"extractor {name}: document {doc.key!r}: {problem}")

    if triples is None or isinstance(triples, (str, bytes, Mapping)) or not isinstance(triples, Iterable):
        raise fail(f"returned {type(triples).__name__}, expected a list of triples (dicts with h_idx, t_idx, r)")
    key = {"title": doc.title} if doc.doc_id is None else {"title": doc.title, "doc_id": doc.doc_id}
    rows: dict[tuple[int, int, str], dict[str, Any]] = {}
    for n, triple in enumerate(triples):
        if not isinstance(triple, Mapping):
            raise fail(f"triple {n} is a {type(triple).__name__}, expected a dict with h_idx, t_idx, r")
        h, t = (_index(triple, end, doc.num_entities, lambda p: fail(f"triple {n}: {p}")) for end in ("h_idx", "t_idx"))
        r = triple.get("r")
        if r not in schema:
            raise fail(f"triple {n}: unknown relation id {r!r} (expected a DocRED relation id such as 'P17')")
        if h == t:
            raise fail(f"triple {n}: h_idx and t_idx are both {h} (a fact relates two entities)")
        row = {**key, "h_idx": h, "t_idx": t, "r": r, "evidence": []}
        if "score" in triple:
            score = triple["score"]
            if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
                raise fail(f"triple {n}: score {score!r} is not a finite number")
            row["score"] = float(score)
        rows.setdefault((h, t, r), row)
    return list(rows.values())


def _index(triple: Mapping[str, Any], name: str, entities: int, fail: Callable[[str], ExtractorError]) -> int:
    value = triple.get(name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise fail(f"{name} {value!r} is not an entity index (an int)")
    if not 0 <= value < entities:
        raise fail(f"{name} {value} out of range (the document has {entities} entities)")
    return int(value)


def _line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300]


@dataclass(frozen=True)
class ExtractorSystem:
    """A system probed one document at a time: ``extract`` maps (document, its original) to triples.

    ``identity``: what its predictions depend on; a killed probe resumes only with the same identity (a Python
    extractor's is its name, so a fixed bug resumes the run). ``concurrency``: documents in flight at once (threads:
    worth it when ``extract`` waits on a server)."""

    name: str
    extract: DocumentExtractor
    identity: Mapping[str, Any]
    kind: str = "extractor"
    concurrency: int = 1
    schema: RelationSchema = field(default_factory=docred_schema)

    @classmethod
    def from_callable(cls, function: TripleExtractor, name: str, concurrency: int = 1) -> ExtractorSystem:
        """A :class:`TripleExtractor` (it reads :func:`extractor_input`), known by ``name`` (``module:function``)."""

        def extract(doc: Document, original: Document) -> Iterable[Mapping[str, Any]]:
            return function(extractor_input(doc))  # the original plays no part: a function reads one document

        return cls(name, extract, {"extractor": name}, concurrency=concurrency)

    def predict_one(self, doc: Document, original: Document) -> list[dict[str, Any]]:
        """``doc``'s checked rows; any failure is an :class:`ExtractorError` naming the extractor and the document."""
        try:
            return check_triples(self.name, doc, self.extract(doc, original), self.schema)
        except ExtractorError:
            raise
        except Exception as err:  # noqa: BLE001 - the extractor's own failure, named with its document
            problem = f"{type(err).__name__}: {_line(err)}"
            raise ExtractorError(f"extractor {self.name}: document {doc.key!r}: {problem}") from err

    def predict(self, units: Sequence[Pair], progress: bool = True) -> Iterator[tuple[int, Rows]]:
        """(position in ``units``, rows) of each (document, original) as it is done, in any order; after a failure
        the documents in flight finish (and are yielded), the rest are not started, and the error is raised."""
        bar = tqdm(total=len(units), desc=f"Probing {self.name}", unit="doc", disable=not progress)
        try:
            if self.concurrency == 1:
                for n, (doc, original) in enumerate(units):
                    yield n, self.predict_one(doc, original)
                    bar.update()
                return
            yield from self._concurrently(units, bar)
        finally:
            bar.close()

    def _concurrently(self, units: Sequence[Pair], bar: Any) -> Iterator[tuple[int, Rows]]:
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="envre-probe")
        futures: dict[Future, int] = {pool.submit(self.predict_one, *unit): n for n, unit in enumerate(units)}
        error: BaseException | None = None
        try:
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                if future.exception() is not None:
                    error = error or future.exception()
                    for pending in futures:
                        pending.cancel()
                    continue
                bar.update()
                yield futures[future], future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # a closed generator (an interrupt) waits for the in-flight
        if error is not None:
            raise error

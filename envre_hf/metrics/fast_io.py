"""The fast path of scoring from files: orjson parsing and indexes built straight from the parsed dicts.

``envre evaluate --predictions`` spends most of its time reading the gold file into typed documents
(every mention, sentence and label validated and wrapped), although scoring needs only keys, entity
sentence sets, labels and, for Ign, mention names. :func:`score_files` parses each file once with
orjson and builds :class:`GoldIndex` / :class:`TrainFacts` from the dicts (:meth:`GoldIndex.from_records`,
:meth:`TrainFacts.from_records`); the scores equal those of the typed path to the last digit.

Python's cyclic garbage collector is paused while these functions run (:func:`~.docre.paused_gc`): parsing
a 16 MB gold file creates millions of dicts and lists, each allocation burst triggers a collection that
walks the ever larger heap, and none of it can form a cycle (JSON trees and the indexes are acyclic). On
the 2,500-document benchmark that was a third of the whole job (``benchmarks/bench_metric.py``).
"""

from __future__ import annotations

import os
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import orjson

from ..documents import DocumentError, read_documents
from ..documents.formats import to_docred as to_record
from .cache import ScoringCache, digest, resolve_cache
from .docre import DocREScores, GoldIndex, PredictionError, TrainFacts, paused_gc, score_predictions
from ..documents.relations import docred_schema

PathLike = str | os.PathLike
#: The ``cache`` argument: None / False (no cache), True (the default folder), a folder, or a cache.
CacheArg = bool | PathLike | ScoringCache | None


def _is_jsonl(path: Path) -> bool:
    return path.name.endswith(".jsonl")


def read_json_records(path: PathLike, *, what: str = "documents", data: bytes | None = None) -> list[Any]:
    """The items of a JSON list file, a single-object JSON file, or a JSON Lines file (orjson).

    ``data``: the file's bytes when the caller has read them already (they are parsed instead of the file).
    Raises :class:`DocumentError` (``what="documents"``) or :class:`PredictionError` (``"predictions"``)
    naming the file, and the line for JSON Lines, when the file is not valid JSON.
    """
    path = Path(path)
    error = PredictionError if what == "predictions" else DocumentError
    data = path.read_bytes() if data is None else data
    if _is_jsonl(path):
        items = []
        for i, line in enumerate(data.splitlines()):
            if not line.strip():
                continue
            try:
                items.append(orjson.loads(line))
            except orjson.JSONDecodeError as err:
                raise error(f"{path}: line {i + 1} is not valid JSON ({err})") from None
        return items
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise error(f"{path} is not valid JSON: {err}") from None
    if isinstance(parsed, dict) and what == "documents":
        return [parsed]
    if not isinstance(parsed, list):
        raise error(f"{path}: expected a JSON list of {what}, got {type(parsed).__name__}")
    return parsed


def _is_int(value: Any) -> bool:
    return type(value) is int


def _plain_valid(rec: Any) -> bool:
    """A cheap structural check of a raw DocRED record: the shapes and ranges that
    :func:`~envre_hf.documents.validate_document` checks, as a yes/no answer (no message).

    Records it rejects go through the typed reader, which raises the error naming file, document and
    field; so the fast path accepts exactly what ``envre build`` accepts, without building typed documents
    for the valid ones.
    """
    if type(rec) is not dict or type(rec.get("title")) is not str or not rec.keys() <= _PLAIN_KEYS:
        return False  # other fields (seed, substitutions, Linked-DocRED ids): the typed reader checks them
    if "doc_id" in rec and rec["doc_id"] is not None and type(rec["doc_id"]) is not str:
        return False
    sents, vertex = rec.get("sents"), rec.get("vertexSet")
    if type(sents) is not list or not sents or type(vertex) is not list:
        return False
    if set(map(type, sents)) != {list} or set(map(type, chain.from_iterable(sents))) - {str}:
        return False
    lengths = list(map(len, sents))
    for entity in vertex:
        if type(entity) is not list or not entity:
            return False
        for m in entity:
            if type(m) is not dict or type(m.get("name")) is not str or not m.get("type") or type(m["type"]) is not str:
                return False
            sid, pos = m.get("sent_id"), m.get("pos")
            if not _is_int(sid) or not 0 <= sid < len(lengths) or type(pos) is not list or len(pos) != 2:
                return False
            if not (_is_int(pos[0]) and _is_int(pos[1]) and 0 <= pos[0] < pos[1] <= lengths[sid]):
                return False
    labels = rec.get("labels", [])
    if type(labels) is not list:
        return False
    seen = set()
    for label in labels:
        if type(label) is not dict:
            return False
        h, t, r, ev = label.get("h"), label.get("t"), label.get("r"), label.get("evidence", [])
        if not (_is_int(h) and _is_int(t) and 0 <= h < len(vertex) and 0 <= t < len(vertex)):
            return False
        if type(r) is not str or r not in _relations() or (h, t, r) in seen:
            return False
        seen.add((h, t, r))
        if type(ev) is not list or not all(_is_int(s) and 0 <= s < len(lengths) for s in ev):
            return False
    return True


def _relations() -> frozenset[str]:
    global _RELATIONS
    if _RELATIONS is None:

        _RELATIONS = frozenset(docred_schema().rel2index)
    return _RELATIONS


_RELATIONS: frozenset[str] | None = None
#: The fields of a plain DocRED / Re-DocRED record (anything else is checked by the typed reader).
_PLAIN_KEYS = frozenset({"title", "sents", "vertexSet", "labels", "doc_id"})


def _checked_records(path: PathLike, data: bytes | None = None) -> tuple[list[Any], bool]:
    """Raw records of a document file (or of its bytes ``data``, already read), validated (the typed reader
    raises the precise error on a bad one), and whether all of them are plain DocRED records that passed
    :func:`_plain_valid`."""
    path = Path(path)
    if path.name.endswith(".gz"):
        return [to_record(doc) for doc in read_documents(path)], False
    records = read_json_records(path, data=data)
    plain = all(_plain_valid(rec) for rec in records)
    if not plain:
        read_documents(path)  # raises DocumentError naming the file, document and field
    keys = [rec.get("doc_id") or rec.get("title") for rec in records if type(rec) is dict]
    if len(set(keys)) != len(keys):
        read_documents(path)  # duplicate keys: the typed reader names them
    return records, plain


@paused_gc()
def read_gold_index(path: PathLike, *, cache: CacheArg = None) -> GoldIndex:
    """:class:`GoldIndex` of a gold file (DocRED / Re-DocRED JSON or JSONL; Linked-DocRED via the typed reader).

    ``cache``: None / False (none), True (``$ENVRE_CACHE/scoring``), a folder or a :class:`ScoringCache`; the
    index of a file read before (same bytes) is read from it instead of the file (:mod:`~.cache`).
    """
    return _read_cached(path, "gold", resolve_cache(cache))[0]


@paused_gc()
def read_train_facts(path: PathLike, *, cache: CacheArg = None) -> TrainFacts:
    """:class:`TrainFacts` (for Ign) of a training file (``cache`` as in :func:`read_gold_index`)."""
    return _read_cached(path, "train", resolve_cache(cache))[0]


def _read_cached(path: PathLike, kind: str, cache: ScoringCache | None) -> tuple[Any, str | None]:
    """The index (``kind`` gold) or facts (train) of a file and the file's digest (None without a cache)."""
    if cache is None:
        return _build(path, kind), None
    # The bytes that are hashed are the bytes that are parsed: a file rewritten meanwhile cannot end up
    # stored under the digest of its old content.
    data = Path(path).read_bytes()
    source = digest(data)
    columns = cache.load(kind, source)
    if columns is not None:
        try:
            if kind == "gold":
                index = GoldIndex.from_columns(columns, names_loader=lambda: _cached_names(path, source, cache, index))
                return index, source
            return TrainFacts.from_columns(columns), source
        except (KeyError, IndexError, TypeError, ValueError):  # a damaged or foreign entry: rebuilt below
            pass
    built = _build(path, kind, data)
    columns = built.to_columns()
    if kind == "gold":  # mention names (only Ign needs them, once per training file) in an entry of their own
        cache.store("names", source, columns.pop("names"))
    cache.store(kind, source, columns)
    return built, source


def _cached_names(path: PathLike, source: str, cache: ScoringCache, index: GoldIndex) -> list[list[list[str]]]:
    """The mention names of a gold file whose ``index`` came from the cache: from their entry when they fit
    the index, else from the file (and stored)."""
    names = cache.load("names", source)
    if index.names_fit(names):
        return names
    data = Path(path).read_bytes()
    if digest(data) != source:
        raise DocumentError(f"{path} changed while it was being scored: score again")
    built = _build(path, "gold", data)
    names = [built.names(key) for key in built.docs]
    cache.store("names", source, names)
    return names


def _build(path: PathLike, kind: str, data: bytes | None = None) -> GoldIndex | TrainFacts:
    records, plain = _checked_records(path, data)
    return (GoldIndex if kind == "gold" else TrainFacts).from_records(records, checked=plain)


@paused_gc()
def read_predictions_fast(path: PathLike) -> list[dict[str, Any]]:
    """:func:`~envre_hf.metrics.read_predictions` with orjson: a JSON list of objects or JSON Lines."""
    preds = read_json_records(path, what="predictions")
    if set(map(type, preds)) <= {dict} and all(
        set(map(type, map(dict.get, preds, repeat(key)))) <= {str, type(None)} for key in ("title", "doc_id")
    ):
        return preds  # checked in bulk; otherwise the loop below names the first bad prediction
    for i, pred in enumerate(preds):
        if type(pred) is not dict:
            raise PredictionError(f"{path}: expected an object, got {type(pred).__name__}", index=i)
        for key in ("title", "doc_id"):
            value = pred.get(key)
            if value is not None and type(value) is not str:
                raise PredictionError(f"{path}: {key} must be a string, got {type(value).__name__}", index=i)
    return preds


@paused_gc()
def score_files(
    predictions: PathLike,
    gold: PathLike,
    train: PathLike | None = None,
    *,
    allow_unknown_documents: bool = False,
    cache: CacheArg = None,
) -> DocREScores:
    """Score a prediction file against a gold file (Ign against ``train``) on the fast path.

    ``cache``: None / False (none), True (``$ENVRE_CACHE/scoring``), a folder or a :class:`ScoringCache`:
    the gold index, the training facts and which gold labels are in train are kept there per file content,
    so scoring more prediction files against the same gold file skips reading it (``envre evaluate`` uses
    the default folder unless ``--no-cache``). The scores are the same either way.
    """
    store = resolve_cache(cache)
    index, gold_digest = _read_cached(gold, "gold", store)
    facts = None
    if train is not None:
        facts, train_digest = _read_cached(train, "train", store)
        if store is not None:
            _cached_labels_in_train(index, facts, store, f"{gold_digest}-{train_digest}")
    preds = read_predictions_fast(predictions)
    return score_predictions(preds, index, facts, allow_unknown_documents=allow_unknown_documents)


def _cached_labels_in_train(index: GoldIndex, facts: TrainFacts, cache: ScoringCache, source: str) -> None:
    """:meth:`GoldIndex.labels_in_train` from the cache, or computed and stored (as positions in the label order)."""
    labels = list(index.labels)
    stored = cache.load("in-train", source)
    if type(stored) is dict and stored.get("num_labels") == len(labels) and type(stored.get("positions")) is list:
        positions = stored["positions"]
        if not set(map(type, positions)) - {int} and (not positions or 0 <= min(positions) <= max(positions) < len(labels)):
            index.remember_labels_in_train(facts, map(labels.__getitem__, positions))
            return
    in_train = index.labels_in_train(facts)
    positions = [i for i, label in enumerate(labels) if label in in_train]
    cache.store("in-train", source, {"num_labels": len(labels), "positions": positions})

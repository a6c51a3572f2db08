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
from pathlib import Path
from typing import Any

import orjson

from ..documents import DocumentError, read_documents
from ..documents.formats import to_docred as to_record
from .docre import DocREScores, GoldIndex, PredictionError, TrainFacts, paused_gc, score_predictions
from ..documents.relations import docred_schema

PathLike = str | os.PathLike


def _is_jsonl(path: Path) -> bool:
    return path.name.endswith(".jsonl")


def read_json_records(path: PathLike, *, what: str = "documents") -> list[Any]:
    """The items of a JSON list file, a single-object JSON file, or a JSON Lines file (orjson).

    Raises :class:`DocumentError` (``what="documents"``) or :class:`PredictionError` (``"predictions"``)
    naming the file, and the line for JSON Lines, when the file is not valid JSON.
    """
    path = Path(path)
    error = PredictionError if what == "predictions" else DocumentError
    data = path.read_bytes()
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
    lengths = []
    for sent in sents:
        if type(sent) is not list or not all(type(tok) is str for tok in sent):
            return False
        lengths.append(len(sent))
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


def _checked_records(path: PathLike) -> list[Any]:
    """Raw records of a document file, validated: the typed reader raises the precise error on a bad one."""
    path = Path(path)
    if path.name.endswith(".gz"):
        return [to_record(doc) for doc in read_documents(path)]
    records = read_json_records(path)
    if not all(_plain_valid(rec) for rec in records):
        read_documents(path)  # raises DocumentError naming the file, document and field
    keys = [rec.get("doc_id") or rec.get("title") for rec in records if type(rec) is dict]
    if len(set(keys)) != len(keys):
        read_documents(path)  # duplicate keys: the typed reader names them
    return records


@paused_gc()
def read_gold_index(path: PathLike) -> GoldIndex:
    """:class:`GoldIndex` of a gold file (DocRED / Re-DocRED JSON or JSONL; Linked-DocRED via the typed reader)."""
    return GoldIndex.from_records(_checked_records(path))


@paused_gc()
def read_train_facts(path: PathLike) -> TrainFacts:
    """:class:`TrainFacts` (for Ign) of a training file."""
    return TrainFacts.from_records(_checked_records(path))


@paused_gc()
def read_predictions_fast(path: PathLike) -> list[dict[str, Any]]:
    """:func:`~envre_hf.metrics.read_predictions` with orjson: a JSON list of objects or JSON Lines."""
    preds = read_json_records(path, what="predictions")
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
) -> DocREScores:
    """Score a prediction file against a gold file (Ign against ``train``) on the fast path."""
    index = read_gold_index(gold)
    facts = read_train_facts(train) if train is not None else None
    preds = read_predictions_fast(predictions)
    return score_predictions(preds, index, facts, allow_unknown_documents=allow_unknown_documents)

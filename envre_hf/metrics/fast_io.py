"""The fast path of scoring from files: orjson parsing and indexes built straight from the parsed dicts.

``envre evaluate --predictions`` spends most of its time reading the gold file into typed documents
(every mention, sentence and label validated and wrapped), although scoring needs only keys, entity
sentence sets, labels and, for Ign, mention names. :func:`score_files` parses each file once with
orjson and builds :class:`GoldIndex` / :class:`TrainFacts` from the dicts (:meth:`GoldIndex.from_records`,
:meth:`TrainFacts.from_records`); the scores equal those of the typed path to the last digit.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ..documents import DocumentError
from .docre import DocREScores, GoldIndex, PredictionError, TrainFacts, score_predictions

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


def read_gold_index(path: PathLike) -> GoldIndex:
    """:class:`GoldIndex` of a gold file (DocRED / Re-DocRED JSON or JSONL; Linked-DocRED via the typed reader)."""
    return GoldIndex.from_records(read_json_records(path))


def read_train_facts(path: PathLike) -> TrainFacts:
    """:class:`TrainFacts` (for Ign) of a training file."""
    return TrainFacts.from_records(read_json_records(path))


def read_predictions_fast(path: PathLike) -> list[dict[str, Any]]:
    """:func:`~envre_hf.metrics.read_predictions` with orjson: a JSON list of objects or JSON Lines."""
    preds = read_json_records(path, what="predictions")
    for i, pred in enumerate(preds):
        if type(pred) is not dict:
            raise PredictionError(f"{path}: expected an object, got {type(pred).__name__}", index=i)
    return preds


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

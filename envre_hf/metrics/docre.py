"""envre-hf's adapter over :mod:`~envre_hf.metrics.scoring`: typed documents (from the one document reader) and
files in, scores out; a :class:`~.scoring.GoldError` becomes a ``DocumentError`` with the same message."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..documents import Document, DocumentError, read_documents
from ..documents.build_folder import build_splits
from ..documents.io import iter_documents
from ..failures import Remedy
from .predictions import in_file, prediction_file, with_relation_ids
from .scoring import DocREScores, DocumentFields, GoldError, GoldIndex, PredictionError, TrainFacts
from .scoring import prediction_reference, score


def _fields(doc: Document) -> DocumentFields:
    """What scoring reads of a typed document."""
    return DocumentFields(
        doc.key, doc.title, doc.has_labels, [[(m.name, m.sent_id) for m in e.mentions] for e in doc.entities],
        [(r.h, r.t, r.r, r.evidence) for r in doc.relations],
    )  # fmt: skip


@contextmanager
def _as_document_errors() -> Iterator[None]:
    try:
        yield
    except GoldError as err:
        raise DocumentError(err.reason, **err.where) from None


def gold_index(gold: Iterable[Document]) -> GoldIndex:
    """The :class:`GoldIndex` of typed gold documents (build it once to score several submissions)."""
    with _as_document_errors():
        return GoldIndex(map(_fields, gold))


def train_facts(train: Iterable[Document]) -> TrainFacts:
    """The :class:`TrainFacts` (for Ign) of typed training documents."""
    with _as_document_errors():
        return TrainFacts.from_documents(map(_fields, train))


def score_predictions(
    predictions: Sequence[Mapping[str, Any]],
    gold: Sequence[Document] | GoldIndex,
    train: Sequence[Document] | TrainFacts | None = None,
    *,
    allow_unknown_documents: bool = False,
) -> DocREScores:
    """:func:`~.scoring.score` (the official DocRED scorer's rules) against typed documents (``doc_id`` is matched
    to :attr:`Document.key`), or a prebuilt :class:`GoldIndex` / :class:`TrainFacts` (no ``train``: Ign is None).
    Relations named by name or by an id in another case are scored as their ids; any other unknown relation is
    wrong, as officially, with a warning (:func:`~.predictions.with_relation_ids`; a file's is refused)."""
    index = gold if isinstance(gold, GoldIndex) else gold_index(gold)
    facts = train if train is None or isinstance(train, TrainFacts) else train_facts(train)
    preds = with_relation_ids(predictions, refuse_unknown=False)
    return score(preds, index, facts, allow_unknown_documents=allow_unknown_documents)


def score_files(
    predictions: str | os.PathLike,
    gold: str | os.PathLike,
    train: str | os.PathLike | None = None,
    *,
    allow_unknown_documents: bool = False,
    gold_split: str | None = None,
    train_split: str | None = None,
) -> DocREScores:
    """Score a prediction file against a gold file or build folder (Ign against ``train``), as ``envre evaluate``;
    ``gold_split`` / ``train_split``: required for a build folder of several splits (all at once would count every
    other split's facts as missed)."""
    index = gold_index(_documents(gold, gold_split, "gold_split"))
    facts = None if train is None else train_facts(_documents(train, train_split, "train_split"))
    preds = prediction_file(predictions)
    try:
        return score(preds, index, facts, allow_unknown_documents=allow_unknown_documents)
    except PredictionError as err:
        raise in_file(err, predictions) from None


def _documents(source: str | os.PathLike, split: str | None, keyword: str) -> Iterable[Document]:
    """The documents of a file one at a time (each is dropped once indexed), or of one split of any other source."""
    if split is None and Path(source).is_file():
        return iter_documents(source)
    splits = build_splits(source)
    if split is None and len(splits) > 1:
        raise ValueError(Remedy(f"{source}: a build folder holding splits {', '.join(splits)}; pass ", keyword, "NAME"))
    return read_documents(source, split=split)


def read_predictions(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The predictions of a file (a JSON list, or JSON Lines; ``.gz`` too) in the official format, each an object
    naming its document (``doc_id`` / ``title`` strings); ``envre predict``'s output is read as official rows, and
    relation names as ids (:func:`~.predictions.prediction_file`); the rest is checked when scoring."""
    preds = prediction_file(path)
    for i, pred in enumerate(preds):
        try:
            prediction_reference(pred, i)
        except PredictionError as err:
            raise in_file(err, path) from None
    return preds

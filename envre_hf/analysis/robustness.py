"""One model scored on an original set and on its renamed copies: the one owner of scoring originals against copies.

* :func:`performance_table`: the study's Tables 2 and 3 (P, R, F1, Ign F1, Intra / Inter, and the change), each
  side scored as one set (``envre analyze``);
* :func:`robustness_report`: Table 7, each renamed set (seed) scored on its own and averaged, with the relative drop
  (``envre evaluate --env``, ``envre probe`` with gold labels, ``benchmarks/replicate.py``);
* :func:`model_robustness_report`: predict both with a model first (:func:`predict_sets`). Under a length cap an
  original and its copies keep the same mentions (:func:`~envre_hf.features.featurize_aligned`, as EVRT's training
  pairs do), so the drop measures the names, not what the cap cut.

Fractions in ``to_dict``, percentages in the markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..documents import Document, DocumentError, RelationSchema
from ..metrics import score_predictions
from ..renaming.pipeline import original_key

#: (column title, DocREScores attribute) of the robustness report, in table order.
REPORT_COLUMNS = (
    ("P", "precision"),
    ("R", "recall"),
    ("F1", "f1"),
    ("Ign F1", "ign_f1"),
    ("Intra F1", "intra_f1"),
    ("Inter F1", "inter_f1"),
)
#: The DocREScores fields of Tables 2 and 3 (fractions in [0, 1]).
FIELDS = ("precision", "recall", "f1", "ign_f1", "intra_precision", "intra_recall", "intra_f1", "inter_precision",
          "inter_recall", "inter_f1")  # fmt: skip
REPORT_FIELDS = tuple(attr for _, attr in REPORT_COLUMNS)

Scores = dict[str, float | None]
Predictions = Sequence[Mapping[str, Any]]


def score_row(
    predictions: Predictions, gold: Sequence[Document], train: Sequence[Document] | None, fields: Sequence[str]
) -> Scores:
    """The ``fields`` of the official scores of ``predictions`` on ``gold`` (``train``: Ign F1), as floats."""
    scores = score_predictions(list(predictions), list(gold), train)
    return {f: (None if getattr(scores, f) is None else float(getattr(scores, f))) for f in fields}


def performance_table(
    original: Sequence[Document],
    renamed: Sequence[Document],
    pred_original: Predictions | None,
    pred_renamed: Predictions | None,
    train: Sequence[Document] | None = None,
) -> dict[str, Scores]:
    """``{"original": {...}, "renamed": {...}, "change": renamed - original}`` of the sets with predictions
    (``change`` needs both); ``train`` enables Ign F1."""
    train = list(train) if train else None
    rows: dict[str, Scores] = {}
    for name, docs, preds in (("original", original, pred_original), ("renamed", renamed, pred_renamed)):
        if preds is not None:
            rows[name] = score_row(preds, docs, train, FIELDS)
    if len(rows) < 2:
        return rows
    before, after = rows["original"], rows["renamed"]
    rows["change"] = {f: None if before[f] is None or after[f] is None else after[f] - before[f] for f in FIELDS}
    return rows


@dataclass
class RobustnessReport:
    """Scores on the original and renamed sets, and the relative drop per score."""

    original: Scores
    renamed: Scores
    relative_drop: Scores
    renamed_sets: dict[str, Scores] = field(default_factory=dict)
    documents: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_markdown(self, title: str | None = None) -> str:
        """A markdown table: Original, Renamed (mean over sets) and Relative drop rows, in %."""
        n_sets = len(self.renamed_sets)
        rows = {"Original": self.original, f"Renamed ({n_sets} sets)" if n_sets > 1 else "Renamed": self.renamed,
                "Relative drop (%)": self.relative_drop}  # fmt: skip
        lines = [f"**{title}**", ""] if title else []
        lines += ["| Test set | " + " | ".join(name for name, _ in REPORT_COLUMNS) + " |",
                  "|---|" + "---:|" * len(REPORT_COLUMNS)]  # fmt: skip
        for label, scores in rows.items():
            cells = ("-" if scores.get(attr) is None else f"{100 * scores[attr]:.2f}" for _, attr in REPORT_COLUMNS)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def _mean(rows: list[Scores]) -> Scores:
    """Per score, the mean over ``rows``; ``None`` when a row lacks it."""
    columns = {attr: [row.get(attr) for row in rows] for attr in REPORT_FIELDS}
    return {attr: sum(v) / len(v) if v and None not in v else None for attr, v in columns.items()}


def relative_drop(original: Scores, renamed: Scores) -> Scores:
    """``(original - renamed) / original`` per score (``None`` when undefined)."""
    pairs = {attr: (original.get(attr), renamed.get(attr)) for attr in REPORT_FIELDS}
    return {attr: None if a is None or b is None or a == 0 else (a - b) / a for attr, (a, b) in pairs.items()}


def group_renamed_sets(renamed: Sequence[Document]) -> dict[str, list[Document]]:
    """Renamed documents grouped by renaming seed (``"seed <n>"``; ``"renamed"`` when unknown)."""
    groups: dict[str, list[Document]] = {}
    for doc in renamed:
        groups.setdefault("renamed" if doc.seed is None else f"seed {doc.seed}", []).append(doc)
    return dict(sorted(groups.items()))


def _predictions_for(predictions: Predictions, docs: Sequence[Document], single_set: bool) -> list[Mapping[str, Any]]:
    if single_set:
        return list(predictions)
    keys = {doc.key for doc in docs}
    return [p for p in predictions if p.get("doc_id") in keys]


def robustness_report(
    original_predictions: Predictions,
    original_gold: Sequence[Document],
    renamed_predictions: Predictions,
    renamed_gold: Sequence[Document],
    train: Sequence[Document] | None = None,
) -> RobustnessReport:
    """Score both prediction sets and compute the relative drops; several renamed sets (seeds) are scored one by
    one and averaged, their predictions carrying ``doc_id`` (renamed copies share titles)."""
    train = list(train) if train is not None else None
    original = score_row(original_predictions, original_gold, train, REPORT_FIELDS)
    groups = group_renamed_sets(renamed_gold)
    if len(groups) > 1 and any("doc_id" not in p for p in renamed_predictions):
        raise ValueError("predictions on several renamed sets need a doc_id on every prediction ('<key>#<seed>')")
    single = len(groups) == 1
    per_set = {name: score_row(_predictions_for(renamed_predictions, docs, single), docs, train, REPORT_FIELDS)
               for name, docs in groups.items()}  # fmt: skip
    renamed = _mean(list(per_set.values()))
    documents = {"original": len(original_gold), "renamed": len(renamed_gold)}
    return RobustnessReport(original, renamed, relative_drop(original, renamed), per_set, documents)


def copies_of(originals: Sequence[Document], renamed: Sequence[Document]) -> list[Document]:
    """The documents of ``renamed`` made from one of ``originals`` (e.g. of the first N originals: both cut alike)."""
    keys = {doc.key for doc in originals}
    return [doc for doc in renamed if original_key(doc) in keys]


def aligned_features(
    originals: Sequence[Document],
    renamed: Sequence[Document],
    tokenizer: Any,
    max_seq_length: int | None = None,
    schema: RelationSchema | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The features of ``originals`` and of ``renamed``; under ``max_seq_length`` each original is featurized together
    with its copies (:func:`~envre_hf.features.featurize_aligned`), so they keep the same mentions. A copy whose
    original is not among ``originals`` cannot be cut alike: :class:`DocumentError`."""
    from ..features.featurize import featurize_aligned, featurize_document  # lazy: scoring needs no tokenizer

    if max_seq_length is None:  # nothing is cut: each document as the one prediction path featurizes it
        return ([featurize_document(doc, tokenizer, schema) for doc in originals],
                [featurize_document(doc, tokenizer, schema) for doc in renamed])  # fmt: skip
    groups: dict[str, list[int]] = {doc.key: [] for doc in originals}
    for j, copy in enumerate(renamed):
        key = original_key(copy)
        if key not in groups:
            raise DocumentError(f"no original document {key!r} among the originals, to cut this renamed copy alike",
                                doc_index=j, title=copy.title, field="doc_id")  # fmt: skip
        groups[key].append(j)
    original_features: list[dict[str, Any]] = []
    renamed_features: list[dict[str, Any]] = [{}] * len(renamed)
    for doc in originals:
        copies = groups[doc.key]
        first, *rest = featurize_aligned([doc, *(renamed[j] for j in copies)], tokenizer, schema, max_seq_length)
        original_features.append(first)
        for j, features in zip(copies, rest):
            renamed_features[j] = features
    return original_features, renamed_features


def predict_sets(
    model: Any,
    tokenizer: Any,
    originals: Sequence[Document],
    renamed: Sequence[Document],
    *,
    max_seq_length: int | None = None,
    batch_size: int = 4,
    top_k: int | None = None,
    threshold: float | None = None,
    schema: RelationSchema | None = None,
    autocast: str | None = None,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Official-format predictions of ``model`` on ``originals`` and on ``renamed`` (as
    :func:`~envre_hf.models.prediction.predict` gives them, options alike), the features of each original and its
    copies cut alike by ``max_seq_length`` (:func:`aligned_features`)."""
    from ..models.prediction import decode_predictions, iter_logits  # lazy: scoring prediction files needs no torch

    pad = tokenizer.pad_token_id if getattr(tokenizer, "pad_token_id", None) is not None else 0
    out = []
    features_of = aligned_features(originals, renamed, tokenizer, max_seq_length, schema)
    for docs, features in zip((originals, renamed), features_of):
        logits = dict(iter_logits(model, features, pad, batch_size, progress, autocast=autocast))
        rows = [decode_predictions(doc, features[i]["hts"], model.decode(logits[i], top_k, threshold), schema)
                for i, doc in enumerate(docs)]  # fmt: skip
        out.append([row for doc_rows in rows for row in doc_rows])
    return out[0], out[1]


def model_robustness_report(
    model: Any,
    tokenizer: Any,
    original_gold: Sequence[Document],
    renamed_gold: Sequence[Document],
    train: Sequence[Document] | None = None,
    **predict_options: Any,
) -> RobustnessReport:
    """Predict both sets with ``model`` (:func:`predict_sets`, which takes ``predict_options``) and report."""
    predictions = predict_sets(model, tokenizer, original_gold, renamed_gold, **predict_options)
    return robustness_report(predictions[0], original_gold, predictions[1], renamed_gold, train)

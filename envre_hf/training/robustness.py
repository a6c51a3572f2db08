"""Robustness report (the paper's Table 7): one model scored on an original test set and on its renamed version(s)
(averaged over renamed seeds), with the relative drop; fractions in ``to_dict``, percentages in the markdown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..documents import Document
from ..metrics import score_predictions

#: (column title, DocREScores attribute) of the report, in table order.
REPORT_COLUMNS = (
    ("P", "precision"),
    ("R", "recall"),
    ("F1", "f1"),
    ("Ign F1", "ign_f1"),
    ("Intra F1", "intra_f1"),
    ("Inter F1", "inter_f1"),
)

Scores = dict[str, float | None]


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
                  "|---|" + "---:|" * len(REPORT_COLUMNS)]
        for label, scores in rows.items():
            cells = ("-" if scores.get(attr) is None else f"{100 * scores[attr]:.2f}" for _, attr in REPORT_COLUMNS)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def _headline(scores: Any) -> Scores:
    return {attr: (None if getattr(scores, attr) is None else float(getattr(scores, attr))) for _, attr in REPORT_COLUMNS}


def _mean(rows: list[Scores]) -> Scores:
    """Per score, the mean over ``rows``; ``None`` when a row lacks it."""
    columns = {attr: [row.get(attr) for row in rows] for _, attr in REPORT_COLUMNS}
    return {attr: sum(v) / len(v) if v and None not in v else None for attr, v in columns.items()}


def relative_drop(original: Scores, renamed: Scores) -> Scores:
    """``(original - renamed) / original`` per score (``None`` when undefined)."""
    pairs = {attr: (original.get(attr), renamed.get(attr)) for _, attr in REPORT_COLUMNS}
    return {attr: None if a is None or b is None or a == 0 else (a - b) / a for attr, (a, b) in pairs.items()}


def group_renamed_sets(renamed: Sequence[Document]) -> dict[str, list[Document]]:
    """Renamed documents grouped by renaming seed (``"seed <n>"``; ``"renamed"`` when unknown)."""
    groups: dict[str, list[Document]] = {}
    for doc in renamed:
        groups.setdefault("renamed" if doc.seed is None else f"seed {doc.seed}", []).append(doc)
    return dict(sorted(groups.items()))


def _predictions_for(predictions: Sequence[dict], docs: Sequence[Document], single_set: bool) -> list[dict]:
    if single_set:
        return list(predictions)
    keys = {doc.key for doc in docs}
    return [p for p in predictions if p.get("doc_id") in keys]


def robustness_report(
    original_predictions: Sequence[dict],
    original_gold: Sequence[Document],
    renamed_predictions: Sequence[dict],
    renamed_gold: Sequence[Document],
    train: Sequence[Document] | None = None,
) -> RobustnessReport:
    """Score both prediction sets and compute the relative drops; several renamed sets (seeds) are scored one by
    one and averaged, their predictions carrying ``doc_id`` (renamed copies share titles)."""
    train = list(train) if train is not None else None
    original = _headline(score_predictions(list(original_predictions), list(original_gold), train))
    groups = group_renamed_sets(renamed_gold)
    if len(groups) > 1 and any("doc_id" not in p for p in renamed_predictions):
        raise ValueError("predictions on several renamed sets need a doc_id on every prediction ('<key>#<seed>')")
    single = len(groups) == 1
    per_set = {name: _headline(score_predictions(_predictions_for(renamed_predictions, docs, single), docs, train))
               for name, docs in groups.items()}  # fmt: skip
    renamed = _mean(list(per_set.values()))
    documents = {"original": len(original_gold), "renamed": len(renamed_gold)}
    return RobustnessReport(original, renamed, relative_drop(original, renamed), per_set, documents)


def model_robustness_report(
    model: Any,
    tokenizer: Any,
    original_gold: Sequence[Document],
    renamed_gold: Sequence[Document],
    train: Sequence[Document] | None = None,
    **predict_kwargs: Any,
) -> RobustnessReport:
    """Predict with ``model`` on both sets (``envre_hf.models.prediction.predict``) and report."""
    from ..models.prediction import predict  # lazy: scoring prediction files needs no torch

    original_predictions = predict(model, list(original_gold), tokenizer, **predict_kwargs)
    renamed_predictions = predict(model, list(renamed_gold), tokenizer, **predict_kwargs)
    return robustness_report(original_predictions, original_gold, renamed_predictions, renamed_gold, train)

"""Tables 2 and 3: precision, recall, F1 and Intra/Inter F1 of one model on the original and renamed sets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..documents import Document
from ..metrics import score_predictions

#: The DocREScores fields the tables show (fractions in [0, 1]).
FIELDS = ("precision", "recall", "f1", "ign_f1", "intra_precision", "intra_recall", "intra_f1", "inter_precision", "inter_recall", "inter_f1")


def performance_table(
    original: Sequence[Document],
    renamed: Sequence[Document],
    pred_original: Sequence[Mapping[str, Any]] | None,
    pred_renamed: Sequence[Mapping[str, Any]] | None,
    train: Sequence[Document] | None = None,
) -> dict[str, dict[str, float | None]]:
    """``{"original": {...}, "renamed": {...}, "change": renamed - original}`` of the sets with predictions
    (``change`` needs both); ``train`` enables Ign F1."""
    rows: dict[str, dict[str, float | None]] = {}
    for name, docs, preds in (("original", original, pred_original), ("renamed", renamed, pred_renamed)):
        if preds is None:
            continue
        scores = score_predictions(list(preds), list(docs), train=list(train) if train else None)
        rows[name] = {f: getattr(scores, f) for f in FIELDS}
    if len(rows) < 2:
        return rows
    rows["change"] = {
        f: (None if rows["original"][f] is None or rows["renamed"][f] is None else rows["renamed"][f] - rows["original"][f])
        for f in FIELDS
    }
    return rows

"""Figure 4: F1 by number of entities per document, with a least-squares line (slope in F1 per entity: the
more negative, the more a model suffers from crowded documents); ``bin_width > 1`` scores bins of documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..documents import Document
from ..metrics import score_predictions


@dataclass
class EntityCountCurve:
    """F1 per entity-count bin and the fitted line ``f1 = slope * n + intercept`` (None with < 2 points)."""

    n_entities: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    documents: list[int] = field(default_factory=list)
    slope: float | None = None
    intercept: float | None = None


def f1_by_entity_count(
    predictions: Sequence[Mapping[str, Any]],
    gold: Sequence[Document],
    bin_width: int = 1,
) -> EntityCountCurve:
    """The curve of one prediction set: the scorer's per-entity-count counts summed over bins of ``bin_width``
    counts, each bin at the mean entity count of its documents."""
    if bin_width < 1:
        raise ValueError(f"bin_width must be >= 1, got {bin_width}")
    bins: dict[int, list[tuple[int, Mapping[str, Any]]]] = {}
    for n, row in sorted(score_predictions(list(predictions), list(gold)).by_entity_count.items()):
        bins.setdefault(n // bin_width, []).append((n, row))
    curve = EntityCountCurve()
    for rows in bins.values():
        documents = sum(row["documents"] for _, row in rows)
        correct, predicted, n_gold = (sum(row[k] for _, row in rows) for k in ("correct", "predicted", "gold"))
        p = correct / predicted if predicted > 0 else 0.0
        r = correct / n_gold if n_gold > 0 else 0.0
        curve.n_entities.append(sum(n * row["documents"] for n, row in rows) / documents)
        curve.f1.append(0.0 if p + r == 0 else 2.0 * p * r / (p + r))  # the scorer's expressions
        curve.documents.append(documents)
    if len(set(curve.n_entities)) >= 2:
        slope, intercept = np.polyfit(np.asarray(curve.n_entities, float), np.asarray(curve.f1, float), 1)
        curve.slope, curve.intercept = float(slope), float(intercept)
    return curve

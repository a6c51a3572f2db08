"""Figure 4: F1 by number of entities per document, with a least-squares line (slope in F1 per entity: the
more negative, the more a model suffers from crowded documents); ``bin_width > 1`` scores bins of documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fit(curve: EntityCountCurve) -> EntityCountCurve:
    if len(set(curve.n_entities)) >= 2:
        slope, intercept = np.polyfit(np.asarray(curve.n_entities, float), np.asarray(curve.f1, float), 1)
        curve.slope, curve.intercept = float(slope), float(intercept)
    return curve


def f1_by_entity_count(
    predictions: Sequence[Mapping[str, Any]],
    gold: Sequence[Document],
    bin_width: int = 1,
    min_documents: int = 1,
) -> EntityCountCurve:
    """The curve of one prediction set, each bin at the mean entity count of its documents (bins with fewer
    than ``min_documents`` left out)."""

    if bin_width < 1:
        raise ValueError(f"bin_width must be >= 1, got {bin_width}")
    curve = EntityCountCurve()
    if bin_width == 1:
        for n, row in sorted(score_predictions(list(predictions), list(gold)).by_entity_count.items()):
            if row["documents"] >= min_documents:
                curve.n_entities.append(float(n))
                curve.f1.append(float(row["f1"]))
                curve.documents.append(int(row["documents"]))
        return _fit(curve)
    bins: dict[int, list[Document]] = {}
    for doc in gold:
        bins.setdefault(doc.num_entities // bin_width, []).append(doc)
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    titles = {doc.title: doc.key for doc in gold}
    for pred in predictions:
        key = pred.get("doc_id")
        by_key.setdefault(key if key is not None else titles.get(pred.get("title"), pred.get("title")), []).append(pred)
    for _, docs in sorted(bins.items()):
        if len(docs) < min_documents:
            continue
        preds = [p for d in docs for p in by_key.get(d.key, [])]
        curve.n_entities.append(float(np.mean([d.num_entities for d in docs])))
        curve.f1.append(float(score_predictions(preds, docs).f1))
        curve.documents.append(len(docs))
    return _fit(curve)

"""DocRED scoring: the official F1 / Ign F1 / evidence / intra-inter rules (core of the ``docre_f1`` metric).

Plain Python, no torch: ``score_predictions(predictions, gold, train)`` -> :class:`DocREScores`.
"""

from .docre import (
    IGN_EPSILON,
    DocREScores,
    GoldIndex,
    PredictionError,
    TrainFacts,
    read_predictions,
    score_predictions,
)

__all__ = [
    "IGN_EPSILON",
    "DocREScores",
    "GoldIndex",
    "PredictionError",
    "TrainFacts",
    "read_predictions",
    "score_predictions",
]

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
from .fast_io import read_gold_index, read_json_records, read_predictions_fast, read_train_facts, score_files

__all__ = [
    "IGN_EPSILON",
    "DocREScores",
    "GoldIndex",
    "PredictionError",
    "TrainFacts",
    "read_gold_index",
    "read_json_records",
    "read_predictions",
    "read_predictions_fast",
    "read_train_facts",
    "score_files",
    "score_predictions",
]

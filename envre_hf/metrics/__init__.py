"""DocRED scoring: the official F1 / Ign F1 / evidence / intra-inter rules (core of the ``docre_f1`` metric).

Plain Python, no torch. :mod:`~.scoring` is the scorer itself (standard library only; the Space carries a
byte-identical copy); :mod:`~.docre` takes typed documents and files: ``score_predictions(predictions, gold,
train)`` and ``score_files(predictions_path, gold_path, train_path)`` -> :class:`DocREScores`.
"""

from .docre import gold_index, read_predictions, score_files, score_predictions, train_facts
from .scoring import IGN_EPSILON, DocREScores, GoldIndex, PredictionError, TrainFacts

__all__ = ["IGN_EPSILON", "DocREScores", "GoldIndex", "PredictionError", "TrainFacts", "gold_index", "read_predictions",
           "score_files", "score_predictions", "train_facts"]  # fmt: skip

"""DocRED scoring with the official rules (the ``docre_f1`` metric), no torch: :mod:`~.scoring` is the scorer
(standard library only, copied byte for byte into the Space); :mod:`~.docre` adapts typed documents and files."""

from .docre import gold_index, read_predictions, score_files, score_predictions, train_facts
from .scoring import IGN_EPSILON, DocREScores, GoldIndex, PredictionError, TrainFacts

__all__ = ["IGN_EPSILON", "DocREScores", "GoldIndex", "PredictionError", "TrainFacts", "gold_index", "read_predictions",
           "score_files", "score_predictions", "train_facts"]  # fmt: skip

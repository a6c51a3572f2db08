"""DocRED-metric evaluation inside Trainer's own loop (docs/training.md): documents as a featurized evaluation set,
and the set being scored: each batch's decoded predictions as rows Trainer gathers across processes, then the
DocRED scores of the gathered rows."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import torch

from ..documents import Document, check_unique_keys
from ..features.featurize import featurize_document
from ..metrics import score_predictions
from ..models.prediction import decode_predictions
from .model_card import EVAL_SCORES
from .pairing import DocumentFeaturesDataset


def document_set(dataset: Any, tokenizer: Any, max_seq_length: int | None) -> Any:
    """Lists of documents (alone or as a dict's values) as :class:`DocumentFeaturesDataset`; else ``dataset``."""
    if isinstance(dataset, dict):
        return {name: document_set(d, tokenizer, max_seq_length) for name, d in dataset.items()}
    if not (isinstance(dataset, (list, tuple)) and dataset and isinstance(dataset[0], Document)):
        return dataset
    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=max_seq_length)
    return DocumentFeaturesDataset(dataset, featurize)


@dataclasses.dataclass
class ScoredSet:
    """The set of documents an ``EVRTTrainer.evaluate`` call is scoring."""

    dataset: DocumentFeaturesDataset
    index: dict[str, int]  # document key -> its position in the set

    @classmethod
    def of(cls, dataset: DocumentFeaturesDataset) -> ScoredSet:
        """The set of ``dataset``'s documents, whose keys must be unique (predictions are matched to them by key)."""
        check_unique_keys(dataset.documents)
        return cls(dataset, {doc.key: i for i, doc in enumerate(dataset.documents)})

    def rows(self, target: torch.nn.Module, logits: torch.Tensor, inputs: dict[str, Any]) -> tuple[Any, Any]:
        """``(predictions, positions)`` of a batch: each document's decoded multi-hot predictions (int8, padded
        with -100) by ``target`` (the unwrapped model), labelled by the document's position in the set."""
        multi_hot = target.decode(logits.float()).to(torch.int8)
        per_document = list(multi_hot.split([len(doc_hts) for doc_hts in inputs["hts"]]))
        predictions = torch.nn.utils.rnn.pad_sequence(per_document, batch_first=True, padding_value=-100)
        return predictions, torch.tensor([self.index[k] for k in inputs["doc_keys"]], device=predictions.device)

    def scores(self, predictions: Any, positions: Any, train: Sequence[Document] | None) -> dict[str, float]:
        """DocRED scores (Ign against ``train``) from the rows Trainer gathered: each document's decoded multi-hot
        predictions and its position in the set."""
        documents = self.dataset.documents
        positions = positions.tolist()
        if sorted(positions) != list(range(len(documents))):
            raise RuntimeError(f"evaluation gathered {len(positions)} document rows for {len(documents)} documents")
        rows = []
        for i, multi_hot in zip(positions, predictions):
            hts = self.dataset[i]["hts"]
            rows += decode_predictions(documents[i], hts, torch.from_numpy(multi_hot[: len(hts)]))
        scores = score_predictions(rows, documents, train=train)
        metrics = {a: round(float(getattr(scores, a)), 6) for a in EVAL_SCORES if getattr(scores, a) is not None}
        if scores.ign_f1 is not None:
            metrics["f1_plus_ign_f1"] = round(float(scores.f1) + float(scores.ign_f1), 6)
        return metrics

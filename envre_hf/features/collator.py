"""Batching featurized documents with different lengths and entity counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class DocRECollator:
    """Pads ``input_ids`` (B x L, with ``attention_mask``; ``tokenizer``: a tokenizer or the pad id) and concatenates
    the pair labels (sum_pairs x num_labels, when every document is labelled); other fields stay per-document lists."""

    tokenizer: Any = None
    #: Width of the label rows, used for documents without pairs (fewer than two entities).
    num_labels: int = 97

    @property
    def pad_token_id(self) -> int:
        if isinstance(self.tokenizer, int):
            return self.tokenizer
        pad = getattr(self.tokenizer, "pad_token_id", None)
        return int(pad) if pad is not None else 0

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        if not features:
            raise ValueError("DocRECollator got an empty batch")
        length = max(len(f["input_ids"]) for f in features)
        input_ids = torch.full((len(features), length), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(features), length), dtype=torch.long)
        for i, f in enumerate(features):
            n = len(f["input_ids"])
            input_ids[i, :n] = torch.as_tensor(f["input_ids"], dtype=torch.long)
            attention_mask[i, :n] = 1
        batch: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "entity_pos": [[[tuple(p) for p in span] for span in f["entity_pos"]] for f in features],
            "hts": [[list(p) for p in f["hts"]] for f in features],
            "doc_keys": [f.get("doc_key") for f in features],
        }
        if all(f.get("labels") is not None for f in features):
            labels = [
                torch.as_tensor(f["labels"], dtype=torch.float32).reshape(len(f["hts"]), self.num_labels)
                for f in features
            ]
            batch["labels"] = torch.cat(labels, dim=0)
        return batch

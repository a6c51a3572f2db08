"""ATLOP (Zhou et al., AAAI 2021) and NCRL (Zhou & Lee, IJCAI 2022): one network (localized context pooling,
``tanh(W [e; c])`` extractors, group bilinear classifier), two losses (adaptive thresholding, none-class ranking)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_docre import DocREConfig
from .losses import adaptive_thresholding_loss, none_class_ranking_loss
from .modeling_docre import (
    DocREPreTrainedModel,
    group_bilinear_classify,
    hts_index,
    localized_context,
    pair_attention,
    pair_chunks,
    pool_entities,
)


class ATLOPModel(DocREPreTrainedModel):
    """ATLOP / NCRL (head types ``atlop`` and ``ncrl``: ``from_encoder_pretrained(path, head_type="ncrl")``)."""

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        hidden = config.hidden_size
        self.head_extractor = nn.Linear(2 * hidden, config.emb_size)
        self.tail_extractor = nn.Linear(2 * hidden, config.emb_size)
        self.bilinear = nn.Linear(config.emb_size * config.block_size, config.num_labels)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        start = self.config.ncrl_none_bias
        if module is getattr(self, "bilinear", None) and self.config.head_type == "ncrl" and start is not None:
            with torch.no_grad():  # a prior on "no relation", as RetinaNet's (loaded weights are not re-initialised)
                module.bias[0] = start

    @staticmethod
    def _extract(linear: nn.Linear, entities: torch.Tensor, index: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """``linear(cat([entities[index], context]))`` with the entity half computed once per entity, not per pair."""
        hidden = entities.size(-1)
        per_entity = F.linear(entities, linear.weight[:, :hidden])
        return per_entity[index] + F.linear(context, linear.weight[:, hidden:], linear.bias)

    def loss_function(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.config.head_type == "ncrl":
            return none_class_ranking_loss(
                logits, labels, margin_shift=self.config.ncrl_margin, none_weight=self.config.ncrl_none_weight
            )
        return adaptive_thresholding_loss(logits, labels)

    def pair_logits(
        self, sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[Any], hts: Sequence[Any],
        keep_features: bool, pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor]]:
        """Context, extractors and classifier ``pair_budget`` pairs at a time."""
        entities, entity_att, per_doc = pool_entities(sequence_output, attention, entity_pos)
        h_idx, t_idx, pair_doc = hts_index(hts, per_doc, sequence_output.device)
        parts = []
        for c in pair_chunks(h_idx.numel(), pair_budget):
            ht = pair_attention(entity_att, h_idx[c], t_idx[c], pair_doc[c], per_doc)
            context = localized_context(sequence_output, ht, pair_doc[c])
            zh = torch.tanh(self._extract(self.head_extractor, entities, h_idx[c], context))
            zt = torch.tanh(self._extract(self.tail_extractor, entities, t_idx[c], context))
            features, logits = group_bilinear_classify(zh, zt, self.config.block_size, self.bilinear, keep_features)
            parts.append((logits, features, zh, zt))
        logits, features, zh, zt = (
            parts[0] if len(parts) == 1 else (None if x[0] is None else torch.cat(x) for x in zip(*parts))
        )
        return logits, features, (zh, zt)

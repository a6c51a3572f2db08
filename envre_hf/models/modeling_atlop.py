"""ATLOP (Zhou et al., AAAI 2021) and NCRL (Zhou & Lee, IJCAI 2022): one network (localized context pooling,
``tanh(W [e; c])`` extractors, group bilinear classifier), two losses (adaptive thresholding, none-class ranking)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_docre import DocREConfig
from .encoder import DocREEncoderOutput
from .losses import adaptive_thresholding_loss, none_class_ranking_loss
from .modeling_docre import (
    DocREPreTrainedModel,
    classify_chunks,
    hts_index,
    localized_context,
    pair_attention,
    pair_chunks,
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
        self, encoded: DocREEncoderOutput, entity_pos: Sequence[Any], hts: Sequence[Any], keep_features: bool,
        pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        """Context, extractors and classifier ``pair_budget`` pairs at a time; without ``keep_features`` (prediction)
        only the logits are kept, not each pair's features or ``(zh, zt)``."""
        sequence_output, per_doc = encoded.last_hidden_state, [len(e) for e in entity_pos]
        entities, entity_att = encoded.entity_embeddings, encoded.entity_attention
        h_idx, t_idx, pair_doc = hts_index(hts, per_doc, sequence_output.device)

        def chunks() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
            for c in pair_chunks(h_idx.numel(), pair_budget):
                ht = pair_attention(entity_att, h_idx[c], t_idx[c], pair_doc[c], per_doc)
                context = localized_context(sequence_output, ht, pair_doc[c])
                del ht  # one chunk's pairs x L weights at a time
                zh = torch.tanh(self._extract(self.head_extractor, entities, h_idx[c], context))
                yield zh, torch.tanh(self._extract(self.tail_extractor, entities, t_idx[c], context))

        return classify_chunks(chunks(), self.config.block_size, self.bilinear, keep_features)

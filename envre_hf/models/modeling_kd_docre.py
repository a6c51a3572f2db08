"""KD-DocRE (Tan et al., Findings of ACL 2022): ATLOP's pair features as the entity-pair matrix, refined by axial
attention; the adaptive focal loss, and with ``use_distillation`` the MSE to ``teacher_logits`` (``hts`` order)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .configuration_docre import DocREConfig
from .losses_kd_docunet import adaptive_focal_loss, distillation_loss
from .modeling_docre import DocREModelOutput, DocREPreTrainedModel, group_bilinear
from .pair_matrix import AxialTransformer, PairIndex
from .registry import KDDocREHeadConfig


class KDDocREModel(DocREPreTrainedModel):
    """ATLOP pair features -> entity-pair matrix -> axial transformer -> classifier; ``pair_representations``:
    the refined pair-matrix cells the classifier reads (``pair_dim``)."""

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        settings = self.family_settings(KDDocREHeadConfig)
        hidden = config.hidden_size
        self.head_extractor = nn.Linear(2 * hidden, config.emb_size)
        self.tail_extractor = nn.Linear(2 * hidden, config.emb_size)
        self.projection = nn.Linear(config.emb_size * config.block_size, settings.pair_dim, bias=False)
        self.axial = AxialTransformer(
            settings.pair_dim, settings.axial_layers, settings.axial_heads, settings.axial_dropout
        )
        self.classifier = nn.Linear(settings.pair_dim, config.num_labels)
        self.post_init()

    def loss_function(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return adaptive_focal_loss(logits, labels, gamma=self.settings.afl_gamma, weight=self.settings.afl_weight)

    def forward(
        self, *args: Any, labels: torch.Tensor | None = None, teacher_logits: torch.Tensor | None = None, **kwargs: Any
    ) -> DocREModelOutput:
        """The base forward; ``teacher_logits`` (only with ``use_distillation``) add the distillation term."""
        if teacher_logits is not None and not self.settings.use_distillation:
            raise ValueError("teacher_logits were given but distillation is off: set head_settings use_distillation=True")
        output = super().forward(*args, labels=labels, **kwargs)
        if teacher_logits is None:
            return output
        kd = self.settings.distillation_weight * distillation_loss(output.logits, teacher_logits)
        loss = kd if output.loss is None else output.loss + kd
        return DocREModelOutput(loss=loss, logits=output.logits, pair_representations=output.pair_representations)

    def pair_logits(
        self, sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[Any], hts: Sequence[Any],
        keep_features: bool, pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        """``pair_budget``: localized contexts that many pairs at a time (the pair matrix of the axial attention is
        whole by design)."""
        hs, ts, rs = self.pair_features(sequence_output, attention, entity_pos, hts, pair_budget)
        zh = torch.tanh(self.head_extractor(torch.cat([hs, rs], dim=-1)))
        zt = torch.tanh(self.tail_extractor(torch.cat([ts, rs], dim=-1)))
        projected = self.projection(group_bilinear(zh, zt, self.config.block_size))  # ATLOP's group bilinear
        index = PairIndex.build(hts, [len(e) for e in entity_pos], device=projected.device)
        matrix = index.scatter(projected)
        features = index.gather(self.axial(matrix, index.cell_mask()) + matrix)
        return self.classifier(features), features, None

"""DocuNet (Zhang et al., IJCAI 2021): relation extraction as semantic segmentation of the entity-pair matrix, whose
cells' channels a U-Net turns into features that see the neighbouring pairs; trained with DocuNet's balanced loss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_docre import DocREConfig
from .losses_kd_docunet import balanced_threshold_loss
from .modeling_docre import DocREPreTrainedModel, group_bilinear_classify
from .pair_matrix import PairIndex, PairUNet
from .registry import DocuNetHeadConfig


class DocuNetModel(DocREPreTrainedModel):
    """Pair channel map -> U-Net -> ``tanh(W [e; unet(h, t)])`` -> group bilinear classifier (as ATLOP's)."""

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        settings = self.family_settings(DocuNetHeadConfig)
        hidden = config.hidden_size
        if settings.channel_type == "context":
            self.channel_projection = nn.Linear(hidden, settings.unet_in_channels)
        else:
            self.channel_bilinear = nn.Bilinear(hidden, hidden, 1)
        self.unet = PairUNet(
            settings.unet_in_channels, settings.unet_out_channels, settings.unet_base_channels, settings.unet_depth
        )
        self.head_extractor = nn.Linear(hidden + settings.unet_out_channels, config.emb_size)
        self.tail_extractor = nn.Linear(hidden + settings.unet_out_channels, config.emb_size)
        self.bilinear = nn.Linear(config.emb_size * config.block_size, config.num_labels)
        self.post_init()

    def loss_function(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return balanced_threshold_loss(logits, labels)

    def pair_channels(self, hs: torch.Tensor, ts: torch.Tensor, rs: torch.Tensor) -> torch.Tensor:
        """The input channels of each pair's cell (sum_pairs x unet_in_channels)."""
        if self.settings.channel_type == "context":
            return self.channel_projection(rs)
        dot = (hs * ts).sum(-1, keepdim=True) / hs.shape[-1] ** 0.5
        cosine = F.cosine_similarity(hs, ts, dim=-1).unsqueeze(-1)
        return torch.cat([dot, cosine, self.channel_bilinear(hs, ts)], dim=-1)

    def pair_logits(
        self, sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[Any], hts: Sequence[Any],
        keep_features: bool, pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor]]:
        """``pair_budget``: localized contexts that many pairs at a time (the U-Net's pair map is whole by design)."""
        hs, ts, rs = self.pair_features(sequence_output, attention, entity_pos, hts, pair_budget)
        index = PairIndex.build(hts, [len(e) for e in entity_pos], device=hs.device)
        image = index.scatter(self.pair_channels(hs, ts, rs)).permute(0, 3, 1, 2)  # B x C x N x N
        segmented = self.unet(image, index.square_mask()).permute(0, 2, 3, 1)  # B x N x N x C_out
        cells = index.gather(segmented)
        zh = torch.tanh(self.head_extractor(torch.cat([hs, cells], dim=-1)))
        zt = torch.tanh(self.tail_extractor(torch.cat([ts, cells], dim=-1)))
        features, logits = group_bilinear_classify(zh, zt, self.config.block_size, self.bilinear, keep_features)
        return logits, features, (zh, zt)

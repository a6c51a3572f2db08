"""DocuNet (Zhang et al., IJCAI 2021) as released (zjunlp/DocuNet ``model_balanceloss.py``, ``attn_unet.py``):
relation extraction as semantic segmentation of the entity-pair map, whose channels (a projection of each pair's
localized context) a U-Net turns into features that see the neighbouring pairs; the balanced loss, a fixed
threshold 0. Every deviation is a setting of :class:`~.registry.DocuNetHeadConfig` (docs/models.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_docre import DocREConfig
from .losses_kd_docunet import balanced_loss
from .encoder import DocREEncoderOutput
from .modeling_docre import (
    DocREPreTrainedModel,
    classify_chunks,
    hts_index,
    localized_context,
    pair_attention,
    pair_chunks,
)
from .pair_matrix import PairGrid
from .registry import DocuNetHeadConfig

#: The U-Net pools twice: a map narrower than this has no second level.
_MIN_SIDE = 4


def _double_conv(in_channels: int, out_channels: int) -> nn.Sequential:
    """(3x3 convolution, BatchNorm, ReLU) twice."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1), nn.BatchNorm2d(out_channels), nn.ReLU(),
        nn.Conv2d(out_channels, out_channels, 3, padding=1), nn.BatchNorm2d(out_channels), nn.ReLU(),
    )  # fmt: skip


def _up(x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
    """``x`` upsampled x2 (bilinear, corners aligned), padded to ``skip``'s size, after ``skip``."""
    x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    dy, dx = skip.size(2) - x.size(2), skip.size(3) - x.size(3)
    x = F.pad(x, (dx // 2, dx - dx // 2, dy // 2, dy - dy // 2))
    return torch.cat([skip, x], dim=1)


class PairUNet(nn.Module):
    """The released U-Net: ``d -> 2d -> 2d`` down (max-pool 2), two bilinear upsamplings with skips
    (``4d -> d``, ``2d -> d / 2``), a 1x1 convolution to ``out_channels``; any map side from 4 up."""

    def __init__(self, in_channels: int, out_channels: int, down_channels: int = 256):
        super().__init__()
        d = down_channels
        self.inc = _double_conv(in_channels, d)
        self.down1 = _double_conv(d, 2 * d)
        self.down2 = _double_conv(2 * d, 2 * d)
        self.up1 = _double_conv(4 * d, d)
        self.up2 = _double_conv(2 * d, d // 2)
        self.out = nn.Conv2d(d // 2, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: B x C_in x S x S -> B x C_out x S x S."""
        x1 = self.inc(x)
        x2 = self.down1(F.max_pool2d(x1, 2))
        x3 = self.down2(F.max_pool2d(x2, 2))
        y = self.up1(_up(x3, x2))
        return self.out(self.up2(_up(y, x1)))


class DocuNetModel(DocREPreTrainedModel):
    """Pair channel map -> U-Net -> ``tanh(W [e; unet(h, t)])`` -> group bilinear classifier (as ATLOP's)."""

    fixed_threshold = True

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        settings = self.family_settings(DocuNetHeadConfig)
        hidden = config.hidden_size
        if settings.channel_type == "context":
            self.channel_projection = nn.Linear(hidden, settings.unet_in_channels)
        else:
            self.channel_bilinear = nn.Bilinear(hidden, hidden, 1)
        self.unet = PairUNet(settings.unet_in_channels, settings.unet_out_channels, settings.unet_down_channels)
        self.head_extractor = nn.Linear(hidden + settings.unet_out_channels, config.emb_size)
        self.tail_extractor = nn.Linear(hidden + settings.unet_out_channels, config.emb_size)
        self.bilinear = nn.Linear(config.emb_size * config.block_size, config.num_labels)
        self.post_init()

    def loss_function(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return balanced_loss(logits, labels)

    def _context_maps(
        self, grid: PairGrid, sequence_output: torch.Tensor, entity_att: torch.Tensor, pair_budget: int | None
    ) -> dict[int, torch.Tensor]:
        """Side -> ``G x S x S x C_in``: the projected localized context of every cell, rows and columns past a
        document's entities repeating its last entity (released)."""
        h, t, doc = grid.cells(sequence_output.device)
        channels = torch.cat([
            self.channel_projection(localized_context(
                sequence_output, pair_attention(entity_att, h[c], t[c], doc[c], grid.entities), doc[c]
            ))
            for c in pair_chunks(h.numel(), pair_budget)
        ])  # fmt: skip
        return {side: grid.stack_repeating(channels, side, docs) for side, docs in grid.groups().items()}

    def _similarity_maps(self, grid: PairGrid, entities: torch.Tensor) -> dict[int, torch.Tensor]:
        """Side -> ``G x S x S x 3``: scaled dot product, cosine and bilinear similarity of the entity embeddings
        (zero past a document's entities; not the released default)."""
        starts = [sum(grid.entities[:d]) for d in range(len(grid.entities))]
        maps = {}
        for side, docs in grid.groups().items():
            emb = entities.new_zeros(len(docs), side, entities.size(-1))
            for p, d in enumerate(docs):
                emb[p, : grid.entities[d]] = entities[starts[d] : starts[d] + grid.entities[d]]
            dot = emb @ emb.transpose(1, 2) / emb.size(-1) ** 0.5
            unit = F.normalize(emb, dim=-1)
            pairs = emb.unsqueeze(2).expand(-1, -1, side, -1), emb.unsqueeze(1).expand(-1, side, -1, -1)
            maps[side] = torch.cat([dot.unsqueeze(-1), (unit @ unit.transpose(1, 2)).unsqueeze(-1),
                                    self.channel_bilinear(pairs[0].contiguous(), pairs[1].contiguous())], dim=-1)
        return maps

    def pair_logits(
        self, encoded: DocREEncoderOutput, entity_pos: Sequence[Any], hts: Sequence[Any], keep_features: bool,
        pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        """``pair_budget``: localized contexts, extractors and classifier that many cells or pairs at a time (the
        U-Net's map is whole by design)."""
        settings = self.settings
        sequence_output, per_doc = encoded.last_hidden_state, [len(e) for e in entity_pos]
        entities, entity_att = encoded.entity_embeddings, encoded.entity_attention
        grid = PairGrid.build(per_doc, settings.matrix_size, _MIN_SIDE)
        if settings.channel_type == "context":
            maps = self._context_maps(grid, sequence_output, entity_att, pair_budget)
        else:
            maps = self._similarity_maps(grid, entities)
        segmented = {side: self.unet(m.permute(0, 3, 1, 2)).permute(0, 2, 3, 1) for side, m in maps.items()}
        cells = grid.gather(segmented, hts, sequence_output.new_zeros((0, settings.unet_out_channels)))
        h_idx, t_idx, _ = hts_index(hts, per_doc, sequence_output.device)

        def chunks() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:  # extractors and classifier per chunk
            for c in pair_chunks(h_idx.numel(), pair_budget):
                zh = torch.tanh(self.head_extractor(torch.cat([entities[h_idx[c]], cells[c]], dim=-1)))
                yield zh, torch.tanh(self.tail_extractor(torch.cat([entities[t_idx[c]], cells[c]], dim=-1)))

        return classify_chunks(chunks(), self.config.block_size, self.bilinear, keep_features)

"""KD-DocRE (Tan et al., Findings of ACL 2022) as released (tonytan48/KD-DocRE ``model.py``): ATLOP's pair features
projected into the entity-pair matrix, refined by six axial-attention layers, classified per cell; the adaptive focal
loss, and with ``use_distillation`` the MSE to ``teacher_logits`` (``hts`` order). Every deviation is a setting of
:class:`~.registry.KDDocREHeadConfig` (docs/models.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_docre import DocREConfig
from .losses_kd_docunet import adaptive_focal_loss, distillation_loss
from .encoder import DocREEncoderOutput
from .modeling_docre import (
    DocREModelOutput,
    DocREPreTrainedModel,
    group_bilinear,
    group_bilinear_classify,
    localized_context,
    pair_attention,
    pair_chunks,
)
from .pair_matrix import PairGrid
from .registry import KDDocREHeadConfig


class AxisAttention(nn.Module):
    """Multi-head self-attention along the cells of each line (the released ``axial_attention.SelfAttention``:
    q and kv projections without bias, an output projection with one)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"axial attention: dim {dim} is not divisible by {heads} heads")
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None, lines: int | None = None) -> torch.Tensor:
        """``x``: lines x cells x D; ``key_mask``: lines x cells (True: may be attended to) or None (every cell);
        ``lines``: at most that many lines at a time (each line attends within itself: the same output)."""
        if lines is None or x.size(0) <= lines:
            return self._attend(x, key_mask)
        out = None
        for i in range(0, x.size(0), lines):
            part = self._attend(x[i : i + lines], None if key_mask is None else key_mask[i : i + lines])
            out = part.new_empty((x.size(0), *part.shape[1:])) if out is None else out
            out[i : i + lines] = part
        return out

    def _attend(self, x: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        lines, cells, dim = x.shape
        split = lambda y: y.reshape(lines, cells, self.heads, dim // self.heads).transpose(1, 2)  # noqa: E731
        k, v = self.to_kv(x).chunk(2, dim=-1)
        mask = None
        if key_mask is not None:  # a line without a valid cell attends everywhere (its cells are never read)
            mask = (key_mask | ~key_mask.any(-1, keepdim=True)).view(lines, 1, 1, cells)
        out = F.scaled_dot_product_attention(split(self.to_q(x)), split(k), split(v), attn_mask=mask)
        return self.to_out(out.transpose(1, 2).reshape(lines, cells, dim))


class AxialLayer(nn.Module):
    """The released block: ``x + attention along the head axis + attention along the tail axis``, then one
    ``Linear(d, d)`` (no activation, no residual), dropout and a LayerNorm. Cell (h, t) attends to (k, t) and (h, k),
    so stacked layers compose h -> k -> t evidence."""

    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.columns = AxisAttention(dim, heads)  # along the head entity (the released first axis)
        self.rows = AxisAttention(dim, heads)  # along the tail entity
        self.ffn = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None, lines: int | None = None) -> torch.Tensor:
        """``x``: G x S x S x D; ``key_mask``: G x S x S (True: a cell others attend to) or None; ``lines``: at most
        that many lines attended at a time (:class:`AxisAttention`)."""
        g, s, _, d = x.shape
        cols = x.transpose(1, 2).reshape(g * s, s, d)
        col_mask = None if key_mask is None else key_mask.transpose(1, 2).reshape(g * s, s)
        attended = self.columns(cols, col_mask, lines).view(g, s, s, d).transpose(1, 2)
        del cols
        row_mask = None if key_mask is None else key_mask.reshape(g * s, s)
        attended = attended + self.rows(x.reshape(g * s, s, d), row_mask, lines).view(g, s, s, d)
        x = x + self.dropout(attended)
        del attended
        return self.norm(self.dropout(self.ffn(x)))


class KDDocREModel(DocREPreTrainedModel):
    """ATLOP pair features -> entity-pair matrix -> axial layers (+ the matrix) -> classifier;
    ``pair_representations``: the refined cells the classifier reads (``pair_dim``)."""

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        settings = self.family_settings(KDDocREHeadConfig)
        hidden = config.hidden_size
        self.head_extractor = nn.Linear(2 * hidden, config.emb_size)
        self.tail_extractor = nn.Linear(2 * hidden, config.emb_size)
        self.projection = nn.Linear(config.emb_size * config.block_size, settings.pair_dim, bias=False)
        self.axial = nn.ModuleList(
            AxialLayer(settings.pair_dim, settings.axial_heads, settings.axial_dropout)
            for _ in range(settings.axial_layers)
        )
        self.classifier = nn.Linear(settings.pair_dim, config.num_labels)
        self.post_init()

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, entity_pos: Sequence[Any], hts: Sequence[Any],
        labels: torch.Tensor | None = None, teacher_logits: torch.Tensor | None = None, **kwargs: Any,
    ) -> DocREModelOutput:
        """The base forward; the loss counts the self pairs' rows as released (``self_pair_rows``);
        ``teacher_logits`` (only with ``use_distillation``) add the distillation term."""
        settings = self.settings
        if teacher_logits is not None and not settings.use_distillation:
            raise ValueError("teacher_logits were given but distillation is off: set head_settings use_distillation=True")
        out = super().forward(input_ids, attention_mask, entity_pos, hts, **kwargs)
        self_pairs = 0
        if settings.afl_self_pairs:  # the diagonal's rows not listed in hts (DocRED lists none)
            self_pairs = sum(len(e) for e in entity_pos) - sum(int(h == t) for pairs in hts for h, t in pairs)
        losses = []
        if labels is not None:
            losses.append(adaptive_focal_loss(
                out.logits, labels.to(out.logits.device), settings.afl_gamma, settings.afl_weight, self_pairs
            ))
        if teacher_logits is not None:
            losses.append(settings.distillation_weight * distillation_loss(out.logits, teacher_logits, self_pairs))
        out.loss = sum(losses[1:], losses[0]) if losses else None
        return out

    def _padding_cell(self, like: torch.Tensor) -> torch.Tensor:
        """The cells past a document's entities: zero in training (the released training loop's negative mask),
        else the projection of the extractors' biases (the released features of its zero padding)."""
        if self.training:
            return like.new_zeros(like.size(-1))
        zh = torch.tanh(self.head_extractor.bias).unsqueeze(0)
        zt = torch.tanh(self.tail_extractor.bias).unsqueeze(0)
        return self.projection(group_bilinear(zh, zt, self.config.block_size))[0].to(like.dtype)

    def _refine(self, x: torch.Tensor, key_mask: torch.Tensor | None, lines: int | None) -> torch.Tensor:
        """The released ``axial_transformer(feature) + feature``."""
        y = x
        for layer in self.axial:
            y = layer(y, key_mask, lines)
        return y + x

    def pair_logits(
        self, encoded: DocREEncoderOutput, entity_pos: Sequence[Any], hts: Sequence[Any], keep_features: bool,
        pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, None]:
        """Every document's ``n x n`` cells (self pairs included, as released), ``pair_budget`` of them at a time up
        to the projection and in each line of axial attention; the matrix of the axial layers is whole by design."""
        settings = self.settings
        sequence_output, per_doc = encoded.last_hidden_state, [len(e) for e in entity_pos]
        entities, entity_att = encoded.entity_embeddings, encoded.entity_attention
        grid = PairGrid.build(per_doc, settings.matrix_size)
        h, t, doc = grid.cells(sequence_output.device)
        # released: heads summed, not averaged, with 1e-10: the same weights as ATLOP's mean with 1e-10 / heads
        eps = 1e-10 / entity_att.size(1)
        cells = sequence_output.new_zeros((0, self.projection.out_features))
        for c in pair_chunks(h.numel(), pair_budget):
            context = localized_context(sequence_output, pair_attention(entity_att, h[c], t[c], doc[c], per_doc), doc[c], eps)
            zh = torch.tanh(self.head_extractor(torch.cat([entities[h[c]], context], dim=-1)))
            zt = torch.tanh(self.tail_extractor(torch.cat([entities[t[c]], context], dim=-1)))
            part = group_bilinear_classify(zh, zt, self.config.block_size, self.projection, torch.is_grad_enabled())[1]
            cells = part.new_empty((h.numel(), part.size(-1))) if c.start == 0 else cells
            cells[c] = part
        fill = self._padding_cell(cells)
        maps = {}
        for side, docs in grid.groups().items():
            key_mask = grid.valid_cells(side, docs, cells.device) if settings.mask_cells else None
            lines = None if pair_budget is None else max(1, pair_budget // side)  # the cells of pair_budget at a time
            maps[side] = self._refine(grid.stack(cells, side, docs, fill), key_mask, lines)
        empty = cells[:0]
        del cells
        features = grid.gather(maps, hts, empty)
        del maps
        self_pair = torch.tensor([h_ == t_ for pairs in hts for h_, t_ in pairs], device=features.device)
        logits = self.classifier(features)
        if bool(self_pair.any()):  # the released diagonal: all-zero logits
            logits = logits.masked_fill(self_pair.unsqueeze(-1), 0.0)
        return logits, features if keep_features else None, None

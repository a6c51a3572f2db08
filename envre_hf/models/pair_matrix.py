"""The entity-pair matrix (row = head entity, column = tail entity) of the KD-DocRE and DocuNet heads, padded to
``B x N x N x C``; every operation keeps the padded cells out of the real ones, so that a document's logits do not
depend on what it is batched with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .modeling_docre import hts_index  # the base's flattening of hts (batch-global entity ids)


@dataclass
class PairIndex:
    """Where each pair of a batch sits in the padded ``B x N x N`` pair matrix: ``batch``, ``head``, ``tail``
    (sum_pairs, in ``hts`` order, the order of the logits); ``entity_mask`` (B x N, bool) marks real entities."""

    batch: torch.Tensor
    head: torch.Tensor
    tail: torch.Tensor
    entity_mask: torch.Tensor

    @classmethod
    def build(
        cls, hts: Sequence[Sequence[Sequence[int]]], num_entities: Sequence[int], device: torch.device | str = "cpu"
    ) -> "PairIndex":
        """Index the pairs ``hts`` (per document a list of ``[h, t]``) of documents with ``num_entities``."""
        if len(hts) != len(num_entities):
            raise ValueError(f"hts has {len(hts)} documents but entity_pos has {len(num_entities)}")
        counts = torch.as_tensor(list(num_entities), dtype=torch.long, device=device)
        head, tail, batch = hts_index(hts, list(num_entities), device)
        offsets = torch.cumsum(counts, 0) - counts
        head, tail = head - offsets[batch], tail - offsets[batch]
        bad = (head < 0) | (tail < 0) | (head >= counts[batch]) | (tail >= counts[batch])
        if bool(bad.any()):
            b = int(batch[bad][0])
            raise ValueError(f"document {b} of the batch: hts refers to an entity outside 0..{int(counts[b]) - 1}")
        n_max = max([1, *num_entities])
        entity_mask = torch.arange(n_max, device=device).unsqueeze(0) < counts.unsqueeze(1)
        return cls(batch=batch, head=head, tail=tail, entity_mask=entity_mask)

    def scatter(self, values: torch.Tensor) -> torch.Tensor:
        """``sum_pairs x C`` values into a zero ``B x N x N x C`` matrix (unlisted cells stay 0)."""
        b, n = self.entity_mask.shape
        out = values.new_zeros(b, n, n, values.shape[-1])
        out[self.batch, self.head, self.tail] = values
        return out

    def gather(self, matrix: torch.Tensor) -> torch.Tensor:
        """The ``B x N x N x C`` matrix's cells of the listed pairs, ``sum_pairs x C`` in ``hts`` order."""
        return matrix[self.batch, self.head, self.tail]

    def square_mask(self) -> torch.Tensor:
        """B x N x N bool: cells whose head and tail are both real entities (the document's square)."""
        return self.entity_mask.unsqueeze(2) & self.entity_mask.unsqueeze(1)

    def cell_mask(self) -> torch.Tensor:
        """B x N x N bool: cells whose head and tail are both real entities and differ (the valid pairs)."""
        n = self.entity_mask.shape[1]
        return self.square_mask() & ~torch.eye(n, dtype=torch.bool, device=self.entity_mask.device)


class _AxisAttention(nn.Module):
    """Multi-head self-attention along one axis of a ``B x N x N x D`` matrix (the last N)."""

    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        if dim % heads:
            raise ValueError(f"axial attention: dim {dim} is not divisible by {heads} heads")
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        # x: B x R x N x D, attention among the N cells of each of the R lines; key_mask: B x R x N.
        b, r, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b * r, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        # A line without any valid cell (a padding line, a one-entity document) would make an all-masked
        # softmax; let it attend everywhere - its outputs are zeroed by the caller and never gathered.
        key_mask = key_mask | ~key_mask.any(dim=-1, keepdim=True)
        mask = key_mask.reshape(b * r, 1, 1, n)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0)
        return self.out(out.transpose(1, 2).reshape(b, r, n, d))


class AxialTransformerLayer(nn.Module):
    """Row attention + column attention (summed, residual, LayerNorm), then an FFN: cell (h, t) attends to (h, k)
    and (k, t), so stacked layers compose h -> k -> t evidence (KD-DocRE's two-hop reasoning)."""

    def __init__(self, dim: int, heads: int, dropout: float = 0.1, ffn_mult: int = 2):
        super().__init__()
        self.rows = _AxisAttention(dim, heads, dropout)
        self.cols = _AxisAttention(dim, heads, dropout)
        self.norm1 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn_mult * dim), nn.GELU(), nn.Linear(ffn_mult * dim, dim))
        self.norm2 = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        # key_mask: B x N x N, True where a cell may be attended to (a valid pair).
        rows = self.rows(x, key_mask)
        cols = self.cols(x.transpose(1, 2), key_mask.transpose(1, 2)).transpose(1, 2)
        x = self.norm1(x + self.drop(rows + cols))
        return self.norm2(x + self.drop(self.ffn(x)))


class AxialTransformer(nn.Module):
    """A stack of :class:`AxialTransformerLayer` over the pair matrix, restricted to valid pairs."""

    def __init__(self, dim: int, num_layers: int = 2, heads: int = 4, dropout: float = 0.1):
        super().__init__()
        self.layers = nn.ModuleList(AxialTransformerLayer(dim, heads, dropout) for _ in range(num_layers))

    def forward(self, x: torch.Tensor, cell_mask: torch.Tensor) -> torch.Tensor:
        """``x``: B x N x N x D; ``cell_mask``: B x N x N (valid pairs). Invalid cells are returned as 0."""
        keep = cell_mask.unsqueeze(-1).to(x.dtype)
        x = x * keep
        for layer in self.layers:
            x = layer(x, cell_mask) * keep
        return x


class _DoubleConv(nn.Module):
    """Two 3x3 convolutions with ReLU; the input is re-masked before each so padding stays zero."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x * mask))
        return F.relu(self.conv2(x * mask)) * mask


class PairUNet(nn.Module):
    """A small U-Net over ``B x C_in x N x N`` maps: ``depth`` times (max-pool 2, double conv, channels x2), then as
    many transposed-convolution upsamplings with skip connections. Any ``N`` works: the map is zero-padded to a
    multiple of ``2 ** depth``, and the entity mask, pooled alongside, zeroes the padding at every level."""

    def __init__(self, in_channels: int, out_channels: int, base_channels: int = 64, depth: int = 2):
        super().__init__()
        if depth < 1:
            raise ValueError("PairUNet depth must be >= 1")
        self.depth = depth
        widths = [base_channels * 2**i for i in range(depth + 1)]
        self.inc = _DoubleConv(in_channels, widths[0])
        self.downs = nn.ModuleList(_DoubleConv(widths[i], widths[i + 1]) for i in range(depth))
        self.ups = nn.ModuleList(nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2) for i in reversed(range(depth)))
        self.up_convs = nn.ModuleList(_DoubleConv(2 * widths[i], widths[i]) for i in reversed(range(depth)))
        self.head = nn.Conv2d(widths[0], out_channels, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``x``: B x C_in x N x N; ``mask``: B x N x N (1 on real cells). Returns B x C_out x N x N."""
        n = x.shape[-1]
        step = 2**self.depth
        padded = -(-n // step) * step
        if padded != n:
            x = F.pad(x, (0, padded - n, 0, padded - n))
            mask = F.pad(mask, (0, padded - n, 0, padded - n))
        masks = [mask.unsqueeze(1).to(x.dtype)]
        for _ in range(self.depth):
            masks.append(F.max_pool2d(masks[-1], 2))
        skips = [self.inc(x, masks[0])]
        for level, down in enumerate(self.downs, start=1):
            skips.append(down(F.max_pool2d(skips[-1], 2), masks[level]))
        y = skips.pop()
        for level, (up, conv) in zip(reversed(range(self.depth)), zip(self.ups, self.up_convs)):
            y = up(y) * masks[level]
            y = conv(torch.cat([skips.pop(), y], dim=1), masks[level])
        return (self.head(y) * masks[0])[..., :n, :n]

"""The mention-row attention function, registered with transformers' ``AttentionInterface`` (docs/speed.md): every
layer runs SDPA, and the layer a :class:`RowRequest` names also computes the attention rows at the mention starts.
Shipped with saved models (remote code): imports only torch and transformers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

#: Name of the attention (and mask) function registered with transformers.
FAST_ATTENTION = "envre_docre_rows"


@dataclass
class RowRequest:
    """Rows ``(doc[i], pos[i])`` of the attention softmax of the module whose ``layer_idx`` is ``layer``,
    filled in by the attention function."""

    layer: int
    doc: torch.Tensor
    pos: torch.Tensor
    rows: torch.Tensor | None = None


def attention_rows(
    query: torch.Tensor,
    key: torch.Tensor,
    attention_mask: torch.Tensor | None,
    doc: torch.Tensor,
    pos: torch.Tensor,
    scaling: float | None = None,
) -> torch.Tensor:
    """Rows ``(doc[i], pos[i])`` (R x heads x L) of eager attention's ``softmax(q k^T * scaling + mask)``,
    computing only R x L scores per head; ``query``/``key``: B x heads x L x d; ``attention_mask``: the layer's
    boolean (True = attend) or additive 4D mask, or None."""
    batch, heads, _, dim = query.shape
    scaling = dim**-0.5 if scaling is None else scaling
    n_rows = doc.numel()
    if n_rows == 0:
        return query.new_zeros((0, heads, key.size(2)))
    counts = torch.bincount(doc, minlength=batch)
    order = torch.argsort(doc, stable=True)  # rank of each row within its sequence, in any input order
    rank = torch.empty_like(doc).index_put_(
        (order,), torch.arange(n_rows, device=doc.device) - (torch.cumsum(counts, 0) - counts)[doc[order]]
    )
    picked = query.transpose(1, 2)[doc, pos]  # R x heads x d
    padded = query.new_zeros((batch, int(counts.max()), heads, dim)).index_put((doc, rank), picked)
    scores = torch.matmul(padded.transpose(1, 2), key.transpose(-1, -2)) * scaling  # B x heads x maxR x L
    scores = scores.transpose(1, 2)[doc, rank]  # R x heads x L
    if attention_mask is not None:
        scores = _masked(scores, attention_mask[doc, :, pos if attention_mask.size(2) > 1 else 0])  # R x (1|heads) x L
    return torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)


def _masked(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Attention scores under a boolean (True = attend) or additive mask."""
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return scores + mask


def _plain_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None,
    dropout: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention with dropout: ``(B, L, heads, d)`` output (the SDPA layout) and the probabilities
    after dropout ``(B, heads, L, L)``; ``attention_mask`` boolean (True = attend), additive, or None."""
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling
    if attention_mask is not None:
        scores = _masked(scores, attention_mask)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    probs = torch.nn.functional.dropout(probs, p=dropout, training=True)
    return torch.matmul(probs, value).transpose(1, 2).contiguous(), probs


def mention_row_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """SDPA; in the layer named by the ``envre_row_request`` keyword (a :class:`RowRequest`), also the requested
    softmax rows, after dropout in training (as eager attention returns its probabilities)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    request = kwargs.get("envre_row_request")
    wanted = request is not None and getattr(module, "layer_idx", None) == request.layer
    if dropout and module.training and query.device.type == "cpu":
        # CPU SDPA has no fused kernel with dropout and its fallback is slower than plain attention, which also
        # hands over the requested rows with the very dropout mask the layer used (docs/speed.md).
        out, probs = _plain_attention(query, key, value, attention_mask, scaling, dropout)
        if wanted:
            request.rows = probs[request.doc, :, request.pos]
        return out, None
    out, _ = sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    if wanted:
        rows = attention_rows(query, key, attention_mask, request.doc, request.pos, scaling)
        request.rows = torch.nn.functional.dropout(rows, p=dropout, training=module.training) if dropout else rows
    return out, None


def register_fast_attention() -> str:
    """Register :data:`FAST_ATTENTION` (attention and mask function) with transformers; returns the name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(FAST_ATTENTION, mention_row_attention)
    AttentionMaskInterface.register(FAST_ATTENTION, sdpa_mask)
    return FAST_ATTENTION


def last_attention_layer(encoder: nn.Module) -> int | None:
    """The ``layer_idx`` of the last attention layer of an encoder on transformers' ``AttentionInterface``; None
    for other encoders, and for those whose attention modules carry no index (e.g. ALBERT's one shared layer)."""
    if not getattr(type(encoder), "_supports_attention_backend", False):
        return None
    return max((m.layer_idx for m in encoder.modules() if isinstance(getattr(m, "layer_idx", None), int)), default=None)

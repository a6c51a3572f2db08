"""EVRT consistency losses between a document's entity pairs and the same pairs in its renamed twin.

Tensors are row-aligned (row ``i`` of the twin is the pair ``hts[i]`` of the original, see
:mod:`envre_hf.training.pairing`). Defaults follow the authors' released code; the paper's Eq. 1/2 forms are
options for ablations (the table in docs/evrt.md). Computed in float32 whatever the autocast dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

#: ``sym_kl`` clamps probabilities to ``[EPS, 1 - EPS]``: saturated predictions give a finite divergence.
EPS = 1e-6
#: ``evrt_rcr_reduction`` values: released mean over pairs x dims, paper's sum over dims.
RCR_REDUCTIONS = ("mean", "sum")
#: ``evrt_pcr_form`` values: released symmetric BCE on threshold margins, paper's symmetric Bernoulli KL.
PCR_FORMS = ("bce_margin", "sym_kl")


def _check_aligned(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    if a.shape != b.shape:
        raise ValueError(
            f"{what}: original and twin tensors must be row-aligned (same pairs in the same order), "
            f"got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )


def _zero(t: torch.Tensor) -> torch.Tensor:
    """A 0 that stays in the autograd graph (batches without pairs)."""
    return t.float().sum() * 0.0


def representation_consistency_loss(
    original: torch.Tensor, twin: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """L_rcr between pair representations (n_pairs x D): ``"mean"`` of ``(z - z')^2`` over pairs x dims
    (released), or ``"sum"``, the mean over pairs of ``||z - z'||^2`` (Eq. 1); 0 without pairs."""
    _check_aligned(original, twin, "representation consistency")
    if reduction not in RCR_REDUCTIONS:
        raise ValueError(f"rcr reduction must be one of {RCR_REDUCTIONS}, got {reduction!r}")
    if original.shape[0] == 0:
        return _zero(original)
    sq = (original.float() - twin.float()).pow(2)
    return sq.mean() if reduction == "mean" else sq.sum(dim=-1).mean()


def group_bilinear_consistency_loss(
    zh: torch.Tensor, zt: torch.Tensor, zh_twin: torch.Tensor, zt_twin: torch.Tensor, block_size: int,
    reduction: str = "mean",
) -> torch.Tensor:
    """L_rcr on ATLOP's group-bilinear features ``z = vec_k(h_k t_k^T)`` without materialising them: per block,
    ``||h t^T - h' t'^T||_F^2 = |h|^2|d_t|^2 + 2 (h.d_h)(d_t.t') + |d_h|^2|t'|^2`` (``d = x - x'``), O(emb) per
    pair. Not ``|h|^2|t|^2 - 2 (h.h')(t.t') + |h'|^2|t'|^2``, which cancels when twins are close (5% off in float32)."""
    _check_aligned(zh, zh_twin, "representation consistency")
    _check_aligned(zt, zt_twin, "representation consistency")
    if reduction not in RCR_REDUCTIONS:
        raise ValueError(f"rcr reduction must be one of {RCR_REDUCTIONS}, got {reduction!r}")
    n, emb = zh.shape
    if n == 0:
        return _zero(zh) + _zero(zt)

    def blocks(x: torch.Tensor) -> torch.Tensor:
        return x.float().view(n, emb // block_size, block_size)

    h, t, t2 = blocks(zh), blocks(zt), blocks(zt_twin)
    dh, dt = h - blocks(zh_twin), t - t2
    per_block = (
        h.pow(2).sum(-1) * dt.pow(2).sum(-1)
        + 2.0 * (h * dh).sum(-1) * (dt * t2).sum(-1)
        + dh.pow(2).sum(-1) * t2.pow(2).sum(-1)
    )
    per_pair = per_block.sum(-1).clamp(min=0.0)
    total = per_pair.mean()
    return total / (emb * block_size) if reduction == "mean" else total


def symmetric_bernoulli_kl(p: torch.Tensor, q: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """Element-wise ``KL(B(p) || B(q)) + KL(B(q) || B(p))``, which simplifies to ``(p - q) * (logit(p) - logit(q))``."""
    p = p.float().clamp(eps, 1.0 - eps)
    q = q.float().clamp(eps, 1.0 - eps)
    return (p - q) * (torch.logit(p) - torch.logit(q))


def prediction_consistency_loss(
    original_margins: torch.Tensor, twin_margins: torch.Tensor, form: str = "bce_margin", eps: float = EPS
) -> torch.Tensor:
    """L_pcr between the relation margins (n_pairs x relations: ``logit_r`` minus the family's threshold,
    :meth:`~envre_hf.models.DocREPreTrainedModel.relation_margins`; ``m = logit_r - logit_TH`` for ATLOP) of the pairs
    and their twins: ``"bce_margin"`` (released) or ``"sym_kl"`` (Eq. 2); 0 without pairs."""
    _check_aligned(original_margins, twin_margins, "prediction consistency")
    if form not in PCR_FORMS:
        raise ValueError(f"pcr form must be one of {PCR_FORMS}, got {form!r}")
    n = original_margins.shape[0]
    if n == 0:
        return _zero(original_margins)
    m, m2 = original_margins.float(), twin_margins.float()
    if form == "sym_kl":
        return symmetric_bernoulli_kl(torch.sigmoid(m), torch.sigmoid(m2), eps).sum(dim=-1).mean()
    one = F.binary_cross_entropy_with_logits(m2, torch.sigmoid(m), reduction="sum")
    two = F.binary_cross_entropy_with_logits(m, torch.sigmoid(m2), reduction="sum")
    return (one + two) / 2.0 / n

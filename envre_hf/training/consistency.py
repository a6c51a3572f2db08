"""EVRT consistency losses between a document's entity pairs and the same pairs in its renamed twin.

Both losses take row-aligned tensors: row ``i`` of the twin tensors is the pair ``hts[i]`` of the
twin document, the same (head, tail) entities as row ``i`` of the originals (renaming keeps the
entity order, see :mod:`envre_hf.training.pairing`).

Defaults follow the authors' released code (THU-BPM/Env-DocRE ``evrt/losses.py``), which produced
every number of the study; the paper's Eq. 1/2 forms are kept as options for ablations:

* L_rcr (:func:`representation_consistency_loss`): ``reduction="mean"`` (default, released) is the
  mean squared difference over pairs x dims (``nn.MSELoss``); ``"sum"`` is the paper's
  ``||z - z'||^2`` summed over the D dims and averaged over pairs, D times larger (12,288 for a
  MiniLM ATLOP head, 49,152 for BERT-base), which drowns the classification gradient.
* L_pcr (:func:`prediction_consistency_loss`): ``form="bce_margin"`` (default, released) is a
  symmetric binary cross-entropy between the threshold margins ``logit_r - logit_TH`` of one side
  and ``sigmoid`` of the other's, summed over pairs x relations, ``/ 2 / n_pairs``, targets not
  detached; ``form="sym_kl"`` is the paper's symmetric KL of the per-relation Bernoulli
  distributions ``[P_r, 1 - P_r]``, summed over relations, averaged over pairs.

Everything is computed in float32 whatever the autocast dtype: squared distances and log
probabilities lose too much precision in bf16/fp16.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..models.losses import threshold_margins

#: Probabilities are clamped to ``[EPS, 1 - EPS]`` before taking logits (``sym_kl``), so saturated
#: predictions (P_r = 0 or 1 in float32) give a large but finite divergence instead of inf/nan.
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
    """L_rcr between pair representations (``original``/``twin``: n_pairs x D); 0 without pairs.

    ``reduction="mean"``: mean of ``(z - z')^2`` over pairs x dims (released code);
    ``"sum"``: mean over pairs of ``||z - z'||^2`` (the paper's Eq. 1).
    """
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
    """L_rcr on ATLOP's group-bilinear features without materialising them.

    The pair feature is ``z = vec_k(h_k t_k^T)`` over ``k`` blocks of size ``b`` (``zh``/``zt``:
    n_pairs x emb). Per block, ``h t^T - h' t'^T = h d_t^T + d_h t'^T`` with ``d_h = h - h'`` and
    ``d_t = t - t'``, so ``||h t^T - h' t'^T||_F^2 = |h|^2|d_t|^2 + 2 (h.d_h)(d_t.t') + |d_h|^2|t'|^2``:
    O(emb) per pair instead of O(emb x b). Written with the differences, not as
    ``|h|^2|t|^2 - 2 (h.h')(t.t') + |h'|^2|t'|^2``, whose terms cancel when twins are close (5% off
    in float32 at distances of 1e-3). Equal to :func:`representation_consistency_loss` on the
    materialised features (tested, close and far twins).
    """
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
    """Element-wise ``KL(B(p) || B(q)) + KL(B(q) || B(p))`` for Bernoulli parameters ``p`` and ``q``.

    The two KL terms share their log ratios, so the sum simplifies to
    ``(p - q) * (logit(p) - logit(q))``: non-negative, symmetric, and zero iff ``p == q``.
    """
    p = p.float().clamp(eps, 1.0 - eps)
    q = q.float().clamp(eps, 1.0 - eps)
    return (p - q) * (torch.logit(p) - torch.logit(q))


def prediction_consistency_loss(
    original_logits: torch.Tensor, twin_logits: torch.Tensor, form: str = "bce_margin", eps: float = EPS
) -> torch.Tensor:
    """L_pcr between the logits (n_pairs x num_labels, class 0 = threshold) of the pairs and their twins.

    ``form="bce_margin"`` (released): with margins ``m = logit_r - logit_TH``,
    ``(BCE_sum(m', sigmoid(m)) + BCE_sum(m, sigmoid(m'))) / 2 / n_pairs``, both sides trained
    (targets not detached). ``"sym_kl"`` (paper): mean over pairs of the sum over relations of the
    symmetric Bernoulli KL of ``P_r = sigmoid(m)``. 0 without pairs.
    """
    _check_aligned(original_logits, twin_logits, "prediction consistency")
    if form not in PCR_FORMS:
        raise ValueError(f"pcr form must be one of {PCR_FORMS}, got {form!r}")
    n = original_logits.shape[0]
    if n == 0:
        return _zero(original_logits)
    m, m2 = threshold_margins(original_logits.float()), threshold_margins(twin_logits.float())
    if form == "sym_kl":
        return symmetric_bernoulli_kl(torch.sigmoid(m), torch.sigmoid(m2), eps).sum(dim=-1).mean()
    one = F.binary_cross_entropy_with_logits(m2, torch.sigmoid(m), reduction="sum")
    two = F.binary_cross_entropy_with_logits(m, torch.sigmoid(m2), reduction="sum")
    return (one + two) / 2.0 / n

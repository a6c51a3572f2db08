"""EVRT consistency losses between a document's entity pairs and the same pairs in its renamed twin.

Both losses take row-aligned tensors: row ``i`` of the twin tensors is the pair ``hts[i]`` of the
twin document, the same (head, tail) entities as row ``i`` of the originals (renaming keeps the
entity order, see :mod:`envre_hf.training.pairing`).

* :func:`representation_consistency_loss` (L_rcr): squared L2 distance between the two pair
  representations, averaged over pairs. It pulls the representation of a pair towards the one of
  its renamed copy, so the encoder's view of a pair depends less on the names.
* :func:`prediction_consistency_loss` (L_pcr): symmetric KL divergence between the per-relation
  Bernoulli distributions ``[P_r, 1 - P_r]`` of the pair and its twin, summed over relations and
  averaged over pairs. It asks for the same prediction whatever the names.

Both are computed in float32 whatever the autocast dtype, because squared distances and log
probabilities lose too much precision in bf16/fp16.
"""

from __future__ import annotations

import torch

#: Probabilities are clamped to ``[EPS, 1 - EPS]`` before taking logits, so saturated predictions
#: (P_r = 0 or 1 in float32) give a large but finite divergence instead of inf/nan.
EPS = 1e-6


def _check_aligned(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    if a.shape != b.shape:
        raise ValueError(
            f"{what}: original and twin tensors must be row-aligned (same pairs in the same order), "
            f"got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )


def representation_consistency_loss(original: torch.Tensor, twin: torch.Tensor) -> torch.Tensor:
    """L_rcr = mean over pairs of ``||z - z'||^2`` (``original``/``twin``: n_pairs x D). 0 when there is no pair."""
    _check_aligned(original, twin, "representation consistency")
    if original.shape[0] == 0:
        return original.float().sum() * 0.0
    diff = original.float() - twin.float()
    return diff.pow(2).sum(dim=-1).mean()


def symmetric_bernoulli_kl(p: torch.Tensor, q: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """Element-wise ``KL(B(p) || B(q)) + KL(B(q) || B(p))`` for Bernoulli parameters ``p`` and ``q``.

    The two KL terms share their log ratios, so the sum simplifies to
    ``(p - q) * (logit(p) - logit(q))``: non-negative, symmetric, and zero iff ``p == q``.
    """
    p = p.float().clamp(eps, 1.0 - eps)
    q = q.float().clamp(eps, 1.0 - eps)
    return (p - q) * (torch.logit(p) - torch.logit(q))


def prediction_consistency_loss(original_probs: torch.Tensor, twin_probs: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """L_pcr = mean over pairs of the sum over relations of the symmetric Bernoulli KL.

    ``original_probs``/``twin_probs``: n_pairs x R per-relation probabilities P_r (the output of the
    model's ``relation_probabilities``). 0 when there is no pair.
    """
    _check_aligned(original_probs, twin_probs, "prediction consistency")
    if original_probs.shape[0] == 0:
        return original_probs.float().sum() * 0.0
    return symmetric_bernoulli_kl(original_probs, twin_probs, eps).sum(dim=-1).mean()

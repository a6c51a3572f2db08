"""Pair classification losses scoring every relation against class 0 (a learned threshold / none class) of the
same pair, so one model decodes with "r holds when logit_r > logit_0" whichever loss trained it."""

from __future__ import annotations

import torch
import torch.nn.functional as F

_NEG = -1e30  # removes a class from a softmax (losses are computed in float32)


def threshold_margins(logits: torch.Tensor) -> torch.Tensor:
    """``logit_r - logit_0`` for every relation ``r >= 1``: positive exactly where ``r`` is predicted."""
    return logits[:, 1:] - logits[:, :1]


def adaptive_thresholding_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """ATLOP's adaptive-thresholding loss (mean over pairs): softmax cross-entropies over {positives, threshold}
    and over {threshold, negatives}; ``labels``: multi-hot (pairs x classes), column 0 ignored."""
    logits = logits.float()
    positives = labels.float().clone()
    positives[:, 0] = 0.0
    threshold = torch.zeros_like(positives)
    threshold[:, 0] = 1.0
    # classes allowed in each softmax: positives + threshold, then negatives + threshold
    pos_logits = logits.masked_fill((positives + threshold) == 0, _NEG)
    loss_pos = -(F.log_softmax(pos_logits, dim=-1) * positives).sum(-1)
    neg_logits = logits.masked_fill(positives == 1, _NEG)
    loss_neg = -F.log_softmax(neg_logits, dim=-1)[:, 0]
    return (loss_pos + loss_neg).sum() / max(logits.size(0), 1)  # 0, not NaN, for a batch without pairs


def _binary_log_terms(margin: torch.Tensor, target: torch.Tensor, shift: float, eps: float) -> torch.Tensor:
    """Per-element -[y log p + (1-y) log(1 - max(p - shift, 0))] with p = sigmoid(margin)."""
    p = torch.sigmoid(margin)
    p_neg = (1.0 - p + shift).clamp(max=1.0) if shift > 0 else 1.0 - p
    return -(target * torch.log(p.clamp(min=eps)) + (1.0 - target) * torch.log(p_neg.clamp(min=eps)))


def none_class_ranking_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    margin_shift: float = 0.05,
    none_weight: float = 1.0,
    eps: float = 1e-8,
) -> torch.Tensor:
    """NCRL (Zhou & Lee, IJCAI 2022), summed over classes and averaged over pairs: a binary log-loss on
    ``sigmoid(logit_r - logit_0)`` per relation, negatives' probabilities shifted down by ``margin_shift``; the none
    class's margin over the mean relation logit gets the same loss (target: no relation; weight ``none_weight``)."""
    logits = logits.float()
    labels = labels.float()
    loss = _binary_log_terms(threshold_margins(logits), labels[:, 1:], margin_shift, eps).sum()
    none_margin = logits[:, 0] - logits[:, 1:].mean(-1)
    none_target = (labels[:, 1:].sum(-1) == 0).float()
    loss = loss + none_weight * _binary_log_terms(none_margin, none_target, margin_shift, eps).sum()
    return loss / max(labels.size(0), 1)

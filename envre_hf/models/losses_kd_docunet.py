"""Losses of the KD-DocRE and DocuNet heads as their released code computes them: KD-DocRE's adaptive focal loss
(class 0 the learned per-pair threshold, ATLOP's decoding rule ``logit_r > logit_0``) and DocuNet's balanced loss
(a fixed threshold 0, class 0 an ordinary target: decoding ``logit_r > 0``)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .losses import _NEG as _NEG_INF
from .losses import threshold_margins
from .registry import AFL_WEIGHTS


def _check(logits: torch.Tensor, labels: torch.Tensor) -> None:
    if logits.dim() != 2 or logits.shape != labels.shape:
        raise ValueError(
            f"logits and labels must both be (pairs x classes); got {tuple(logits.shape)} and {tuple(labels.shape)}"
        )
    if logits.shape[1] < 2:
        raise ValueError("need the threshold class 0 and at least one relation class")


def adaptive_focal_loss(
    logits: torch.Tensor, labels: torch.Tensor, gamma: float = 1.0, weight: str = "released", self_pairs: int = 0
) -> torch.Tensor:
    """KD-DocRE's adaptive focal loss, averaged over pairs (``labels``: multi-hot, class 0 ignored): per positive
    relation ``-w * log p``, ``p = softmax([logit_r, logit_0])[0]``, ``w = 1 + (1 - p) ** gamma`` (``"released"``
    code) or ``(1 - p) ** gamma`` (``"paper"``); plus ``-log softmax(logit_0 over {0} + negative relations)``.
    ``self_pairs``: rows of all-zero logits without a relation (the released pair matrix's diagonal) that count in
    the mean, each adding ``log(num_labels)``."""
    if weight not in AFL_WEIGHTS:
        raise ValueError(f"afl weight must be one of {AFL_WEIGHTS}, got {weight!r}")
    _check(logits, labels)
    logits = logits.float()
    positive = (labels[:, 1:] > 0).float()
    # Two-way softmax of each relation against the threshold = sigmoid of the margin.
    log_p = F.logsigmoid(threshold_margins(logits))
    focal = (1.0 - log_p.exp()).pow(gamma) if gamma != 0 else torch.ones_like(log_p)
    focal = focal + 1.0 if weight == "released" else focal
    loss_pos = -(focal * log_p * positive).sum(dim=1)
    # Threshold above negatives: positives are removed from the softmax.
    mask = torch.cat([torch.zeros_like(positive[:, :1]), positive], dim=1)
    neg_logits = logits.masked_fill(mask.bool(), _NEG_INF)
    loss_neg = -F.log_softmax(neg_logits, dim=1)[:, 0]
    rows = logits.shape[0] + self_pairs
    if rows == 0:
        return logits.sum() * 0.0
    return ((loss_pos + loss_neg).sum() + self_pairs * math.log(logits.shape[1])) / rows


def balanced_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """DocuNet's balanced loss (the multi-label categorical cross-entropy of its released ``losses.py``), averaged
    over pairs: ``log(1 + sum_pos exp(-s)) + log(1 + sum_neg exp(s))`` over every class, class 0 an ordinary target
    (positive for a pair without relation), so that a class is predicted where its logit is above 0."""
    _check(logits, labels)
    logits = logits.float()
    positive = labels > 0
    zeros = logits.new_zeros(logits.shape[0], 1)
    pos_terms = torch.cat([zeros, (-logits).masked_fill(~positive, _NEG_INF)], dim=1)
    neg_terms = torch.cat([zeros, logits.masked_fill(positive, _NEG_INF)], dim=1)
    loss = torch.logsumexp(pos_terms, dim=1) + torch.logsumexp(neg_terms, dim=1)
    return loss.mean() if logits.shape[0] else logits.sum() * 0.0


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, self_pairs: int = 0) -> torch.Tensor:
    """KD-DocRE's distillation term: mean squared error to the (detached) teacher logits; ``self_pairs`` rows where
    both are zero (the released matrix's diagonal) count in the mean."""
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(
            f"teacher_logits must match the student's logits (pairs x classes, in hts order): "
            f"got {tuple(teacher_logits.shape)}, expected {tuple(student_logits.shape)}"
        )
    diff = student_logits.float() - teacher_logits.detach().to(student_logits.device).float()
    cells = (student_logits.shape[0] + self_pairs) * student_logits.shape[1]
    return diff.pow(2).sum() / cells if cells else diff.sum() * 0.0

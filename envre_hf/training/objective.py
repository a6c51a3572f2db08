"""The EVRT objective of one batch, ``L_clo + L_clp + evrt_alpha * L_rcr + evrt_beta * L_pcr`` (docs/evrt.md),
and the tally of its terms for the training logs. :class:`~envre_hf.training.trainer.EVRTTrainer` computes its
loss with :func:`evrt_loss`; the terms come back unweighted and with their graphs, so that a study of one term
(``benchmarks/evrt_gradients.py``) takes them from the same definitions."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import torch

from .arguments import EVRTTrainingArguments
from .consistency import group_bilinear_consistency_loss, prediction_consistency_loss, representation_consistency_loss

#: Batch keys that are bookkeeping, never model inputs.
NON_MODEL_KEYS = ("twin", "doc_keys", "doc_key", "consistency_mask")


@dataclasses.dataclass
class EVRTLoss:
    """One batch's objective: the weighted total, the originals' outputs, each term unweighted (``clo``, ``clp``,
    ``rcr``, ``pcr``: those the batch uses) and the pairs the consistency terms left out (placed in one document only)."""

    loss: torch.Tensor
    outputs: Any
    terms: dict[str, torch.Tensor]
    left_out: int = 0


def forward_inputs(target: torch.nn.Module, batch: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``batch`` that ``target``'s (the unwrapped model's) forward accepts, bookkeeping dropped."""
    params = inspect.signature(target.forward).parameters
    takes_kwargs = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    return {
        k: v
        for k, v in batch.items()
        if k not in NON_MODEL_KEYS and (takes_kwargs or k in params) and not (k == "labels" and v is None)
    }


def evrt_loss(model: torch.nn.Module, target: torch.nn.Module, inputs: dict[str, Any],
              args: EVRTTrainingArguments) -> EVRTLoss:
    """The objective of ``inputs`` (with its ``twin`` batch when paired) through ``model`` (``target``: the model
    unwrapped from its distributed wrapper); the terms ``args`` turns on, the twins in their own forward call as
    the released code does (so a family's loss may take extra inputs)."""
    paired = "twin" in inputs
    use = {term: paired and args.uses(term) for term in ("clp", "rcr", "pcr")}
    outputs = model(**forward_inputs(target, inputs))
    if outputs.loss is None:
        raise ValueError("the model returned no loss: training batches need labels")
    terms = {"clo": outputs.loss.float()}
    loss = terms["clo"]
    if not any(use.values()):
        return EVRTLoss(loss, outputs, terms)
    twin_inputs = forward_inputs(target, inputs["twin"])
    if not use["clp"]:
        twin_inputs.pop("labels", None)
    twin_out = model(**twin_inputs)
    if use["clp"]:
        terms["clp"] = twin_out.loss.float()
        loss = loss + terms["clp"]
    # the consistency terms read only the pairs a document and its twin both place
    rows, left_out, mask = slice(None), 0, inputs.get("consistency_mask")
    if mask is not None and (use["rcr"] or use["pcr"]):
        rows = mask.to(outputs.logits.device)
        left_out = int((~rows).sum()) if model.training else 0
    if use["rcr"]:
        terms["rcr"] = rcr_loss(target, outputs, twin_out, rows, args.evrt_rcr_reduction)
        loss = loss + args.evrt_alpha * terms["rcr"]
    if use["pcr"]:
        margins = target.relation_margins
        terms["pcr"] = prediction_consistency_loss(
            margins(outputs.logits[rows]), margins(twin_out.logits[rows]), form=args.evrt_pcr_form
        )
        loss = loss + args.evrt_beta * terms["pcr"]
    return EVRTLoss(loss, outputs, terms, left_out)


def rcr_loss(target: torch.nn.Module, outputs: Any, twin_out: Any, rows: torch.Tensor | slice = slice(None),
             reduction: str = "mean") -> torch.Tensor:
    """L_rcr over the pairs ``rows``; from the group-bilinear factors in closed form when the family exposes
    them (only those rows are cut: the pair representations are far larger)."""
    factors = getattr(outputs, "bilinear_factors", None), getattr(twin_out, "bilinear_factors", None)
    if all(f is not None for f in factors):
        (zh, zt), (zh2, zt2) = factors
        block = target.config.block_size
        return group_bilinear_consistency_loss(zh[rows], zt[rows], zh2[rows], zt2[rows], block, reduction=reduction)
    return representation_consistency_loss(
        outputs.pair_representations[rows], twin_out.pair_representations[rows], reduction=reduction
    )


@dataclasses.dataclass
class LossTally:
    """The terms' sums since the last training log (on this process) and the pairs left out of the consistency
    terms; :meth:`pop_logs` turns them into ``loss_<term>`` means."""

    sums: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    left_out: int = 0

    def add(self, batch: EVRTLoss) -> None:
        """Counts one training batch's terms (detached: the tally holds no graph)."""
        for name, value in batch.terms.items():
            seen = value.detach().float()
            self.sums[name] = self.sums.get(name, torch.zeros((), device=seen.device)) + seen
            self.counts[name] = self.counts.get(name, 0) + 1
        self.left_out += batch.left_out

    def pop_logs(self, accelerator: Any, device: torch.device, evrt: bool) -> dict[str, float]:
        """``{loss_<term>: mean}`` since the last call (averaged over ``accelerator``'s processes), with EVRT also
        ``consistency_pairs_left_out``; the tally starts again. Nothing when no batch was counted."""
        if not self.sums:
            return {}
        names = sorted(self.sums)
        means = torch.stack([self.sums[n] / self.counts[n] for n in names]).to(device)
        if accelerator.num_processes > 1:
            means = accelerator.reduce(means, reduction="mean")
        logs = {f"loss_{name}": round(value, 6) for name, value in zip(names, means.tolist())}
        self.sums, self.counts = {}, {}
        if evrt:
            logs["consistency_pairs_left_out"], self.left_out = self.left_out, 0
        return logs

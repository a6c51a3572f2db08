"""The optimizer's parameter groups of the released scripts: the head on ``classifier_learning_rate``, named modules
on their ``module_learning_rates``, the encoder on ``learning_rate`` (docs/training.md)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import torch

from .arguments import EVRTTrainingArguments


def has_own_groups(args: EVRTTrainingArguments) -> bool:
    """Whether ``args`` set a learning rate apart from ``learning_rate`` (else Trainer's groups serve)."""
    return args.classifier_learning_rate is not None or bool(args.module_learning_rates)


def parameter_groups(model: torch.nn.Module, args: EVRTTrainingArguments, decay: Collection[str]) -> list[dict[str, Any]]:
    """``model``'s trainable parameters grouped by learning rate and by weight decay (on for the names in ``decay``),
    in a fixed order: a parameter under the longest matching ``module_learning_rates`` prefix takes that rate, the
    encoder ``learning_rate``, the rest ``classifier_learning_rate`` (``learning_rate`` when it is unset)."""
    head_lr, by_module = args.classifier_learning_rate, args.module_learning_rates or {}
    prefixes = sorted(by_module, key=len, reverse=True)
    groups: dict[tuple[float, bool], list[torch.nn.Parameter]] = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            prefix = next((p for p in prefixes if name.startswith(p)), None)
            if prefix is not None:
                lr = by_module[prefix]
            else:
                lr = args.learning_rate if name.startswith("encoder.") or head_lr is None else head_lr
            groups.setdefault((float(lr), name in decay), []).append(param)
    return [
        {"params": params, "lr": lr, "weight_decay": args.weight_decay if decays else 0.0}
        for (lr, decays), params in sorted(groups.items())
    ]

"""The model card of an :class:`~envre_hf.training.trainer.EVRTTrainer` run: the project's card
(:func:`envre_hf.models.hub.model_card`) with the run's EVRT settings and the latest DocRED scores in its logs."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from transformers import TrainingArguments

from ..models.configuration_docre import portable_name
from ..models.hub import model_card

#: DocREScores attributes reported by evaluation, in this order.
EVAL_SCORES = ("precision", "recall", "f1", "ign_f1", "intra_f1", "inter_f1")
#: TrainingArguments the card lists beside the EVRT switches.
CARD_SETTINGS = ("learning_rate", "num_train_epochs", "per_device_train_batch_size", "gradient_accumulation_steps",
                 "warmup_ratio", "max_grad_norm", "seed", "metric_for_best_model")  # fmt: skip


def card_settings(args: TrainingArguments) -> dict[str, Any]:
    """The EVRT switches (the fields ``args`` adds to TrainingArguments) and the main optimisation settings,
    paths by name only, as ``args.to_dict()`` gives them (a ``*_token`` field hidden)."""

    def portable(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [portable(v) for v in value]
        if isinstance(value, str) and (os.sep in value or os.path.exists(value)):
            return portable_name(value)
        return value

    base = {f.name for f in dataclasses.fields(TrainingArguments)} | {"remove_unused_columns"}
    names = [f.name for f in dataclasses.fields(args) if f.name not in base] + list(CARD_SETTINGS)
    values = args.to_dict()
    return {name: portable(values[name]) for name in names if values.get(name) is not None}


def latest_scores(log_history: Sequence[dict[str, Any]], set_names: Sequence[str | None]) -> dict[str, dict]:
    """The latest DocRED scores of each evaluation set (None: an unnamed one) in the logs: ``{name: {score: x}}``."""
    scores: dict[str, dict[str, float]] = {}
    for name in set_names:
        prefix = f"eval_{name}_" if name is not None else "eval_"
        entry = next((e for e in reversed(log_history) if f"{prefix}f1" in e), None)
        if entry is not None:
            scores[name or "eval"] = {a: entry[f"{prefix}{a}"] for a in EVAL_SCORES if f"{prefix}{a}" in entry}
    return scores


def run_card(
    model: Any,
    args: TrainingArguments,
    log_history: Sequence[dict[str, Any]],
    set_names: Sequence[str | None],
    *,
    license: str | None = None,
    tags: str | list[str] | None = None,
    model_name: str | None = None,
    datasets: Sequence[str | list[str] | None] = (),
    eval_datasets: dict[str, str] | None = None,
) -> str:
    """The README.md text: encoder id, training ``datasets`` (Hub ids in the metadata), EVRT settings and the
    latest DocRED scores of every evaluation set as ``model-index`` results (``eval_datasets``: their Hub ids)."""
    names = [d for value in datasets for d in ([value] if isinstance(value, str) else value or [])]
    card = model_card(
        model,
        list(dict.fromkeys(names)),
        latest_scores(log_history, set_names) or None,
        license,
        evrt=card_settings(args),
        eval_datasets=eval_datasets,
        model_name=model_name,
        tags=[tags] if isinstance(tags, str) else list(tags or []),
    )
    return card.replace('"REPO_ID"', f'"{args.hub_model_id}"') if args.hub_model_id else card

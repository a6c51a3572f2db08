"""The released training recipes of EVRT (THU-BPM/Env-DocRE ``scripts/run_*.sh``) as named presets: NCRL with EVRT
as ``evrt/main.py`` trains, differing in margin shift, EVRT weights, learning rate, accumulation (docs/evrt.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Settings every released script shares (``TrainingArguments`` / EVRT field names).
_COMMON_TRAINING: dict[str, Any] = {
    "evrt": True,
    "evrt_losses": ["clp", "rcr", "pcr"],
    "evrt_rcr_reduction": "mean",
    "evrt_pcr_form": "bce_margin",
    "classifier_learning_rate": 1e-4,
    "warmup_steps": 0.06,  # a float < 1 is a ratio of the total steps (transformers 5)
    "max_grad_norm": 1.0,
    "adam_epsilon": 1e-6,
    "weight_decay": 0.0,
    "lr_scheduler_type": "linear",
    "per_device_train_batch_size": 4,
    "per_device_eval_batch_size": 8,
    "num_train_epochs": 8.0,
    "seed": 42,
    "eval_strategy": "epoch",
    "save_strategy": "epoch",
    "load_best_model_at_end": True,
    "metric_for_best_model": "dev_f1_plus_ign_f1",
    "greater_is_better": True,
}


@dataclass(frozen=True)
class EVRTPreset:
    """One released recipe (``script``, run with ``encoder``): what it passes beyond the shared settings."""

    name: str
    script: str
    encoder: str
    weight: float  # evrt_alpha = evrt_beta
    learning_rate: float
    ncrl_margin: float
    accumulation: int

    def training_settings(self) -> dict[str, Any]:
        """``EVRTTrainingArguments`` fields this preset sets."""
        return {**_COMMON_TRAINING, "evrt_alpha": self.weight, "evrt_beta": self.weight,
                "learning_rate": self.learning_rate, "gradient_accumulation_steps": self.accumulation}  # fmt: skip

    def model_settings(self) -> dict[str, Any]:
        """``DocREConfig`` / model-argument fields this preset sets (NCRL, its margin shift, top-4 decoding)."""
        return {"head_type": "ncrl", "ncrl_none_weight": 1.0, "top_k": 4, "ncrl_margin": self.ncrl_margin}


PRESETS: dict[str, EVRTPreset] = {
    p.name: p
    for p in (
        EVRTPreset("redocred-bert", "scripts/run_re-docred_bert.sh", "bert-base-cased", 0.1, 5e-5, 0.04, 1),
        EVRTPreset("redocred-roberta", "scripts/run_re-docred_roberta.sh", "roberta-large", 0.2, 3e-5, 0.04, 2),
        EVRTPreset("docred-bert", "scripts/run_docred_bert.sh", "bert-base-cased", 1.0, 5e-5, 0.05, 1),
        EVRTPreset("docred-roberta", "scripts/run_docred_roberta.sh", "roberta-large", 1.0, 3e-5, 0.05, 2),
    )
}


def get_preset(name: str) -> EVRTPreset:
    """The preset called ``name``; a clear error listing the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown evrt_preset {name!r}; choose from {sorted(PRESETS)}") from None

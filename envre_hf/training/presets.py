"""Released training recipes as named presets (``--evrt_preset``, docs/evrt.md): the EVRT scripts of THU-BPM/Env-DocRE
(``scripts/run_*.sh``: NCRL with EVRT, differing in margin shift, EVRT weights, learning rate, accumulation), and the
BERT-base scripts of the KD-DocRE and DocuNet repositories (their families without EVRT; add ``--evrt`` for it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Settings every released script shares (``TrainingArguments`` / EVRT field names).
_COMMON_TRAINING: dict[str, Any] = {
    "warmup_steps": 0.06,  # a float < 1 is a ratio of the total steps (transformers 5)
    "max_grad_norm": 1.0,
    "adam_epsilon": 1e-6,
    "weight_decay": 0.0,
    "lr_scheduler_type": "linear",
    "eval_strategy": "epoch",
    "save_strategy": "epoch",
    "load_best_model_at_end": True,
    "greater_is_better": True,
}


@dataclass(frozen=True)
class Preset:
    """One released recipe (``script`` of ``repository``, run with ``encoder``): the ``EVRTTrainingArguments`` and the
    ``DocREConfig`` / model-argument fields it sets."""

    name: str
    repository: str
    script: str
    encoder: str
    training: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)

    def training_settings(self) -> dict[str, Any]:
        """``EVRTTrainingArguments`` fields this preset sets."""
        return {**_COMMON_TRAINING, **self.training}

    def model_settings(self) -> dict[str, Any]:
        """``DocREConfig`` / model-argument fields this preset sets."""
        return dict(self.model)


def _evrt(name: str, script: str, encoder: str, weight: float, lr: float, shift: float, accumulation: int) -> Preset:
    """An Env-DocRE script: NCRL trained with EVRT (the released loss forms), best checkpoint by dev F1 + Ign F1."""
    training = {
        "evrt": True, "evrt_losses": ["clp", "rcr", "pcr"], "evrt_rcr_reduction": "mean", "evrt_pcr_form": "bce_margin",
        "evrt_alpha": weight, "evrt_beta": weight, "learning_rate": lr, "classifier_learning_rate": 1e-4,
        "gradient_accumulation_steps": accumulation, "per_device_train_batch_size": 4, "per_device_eval_batch_size": 8,
        "num_train_epochs": 8.0, "seed": 42, "metric_for_best_model": "dev_f1_plus_ign_f1",
    }  # fmt: skip
    model = {"head_type": "ncrl", "ncrl_none_weight": 1.0, "top_k": 4, "ncrl_margin": shift}
    return Preset(name, "THU-BPM/Env-DocRE", script, encoder, training, model)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        _evrt("redocred-bert", "scripts/run_re-docred_bert.sh", "bert-base-cased", 0.1, 5e-5, 0.04, 1),
        _evrt("redocred-roberta", "scripts/run_re-docred_roberta.sh", "roberta-large", 0.2, 3e-5, 0.04, 2),
        _evrt("docred-bert", "scripts/run_docred_bert.sh", "bert-base-cased", 1.0, 5e-5, 0.05, 1),
        _evrt("docred-roberta", "scripts/run_docred_roberta.sh", "roberta-large", 1.0, 3e-5, 0.05, 2),
        # KD-DocRE's parameter groups: extractors, projection and classifier at classifier_lr, everything else
        # (the encoder and the axial layers) at learning_rate; selection by dev F1.
        Preset("kd_docre-bert", "tonytan48/KD-DocRE", "scripts/batch_bert.sh", "bert-base-cased", {
            "learning_rate": 3e-5, "classifier_learning_rate": 1e-4, "module_learning_rates": {"axial.": 3e-5},
            "per_device_train_batch_size": 8, "per_device_eval_batch_size": 8, "num_train_epochs": 50.0,
            "seed": 66, "metric_for_best_model": "dev_f1",
        }, {"head_type": "kd_docre", "top_k": 4}),  # fmt: skip
        # DocuNet's three groups: the encoder at bert_lr 3e-5, extractors and bilinear at 1e-4, the channel
        # projection and U-Net at learning_rate (the script sweeps 3e-4, 4e-4, 5e-4: the middle one).
        Preset("docunet-bert", "zjunlp/DocuNet", "scripts/run_docred.sh", "bert-base-cased", {
            "learning_rate": 3e-5, "classifier_learning_rate": 1e-4,
            "module_learning_rates": {"unet.": 4e-4, "channel_projection.": 4e-4},
            "per_device_train_batch_size": 4, "per_device_eval_batch_size": 4, "num_train_epochs": 30.0,
            "seed": 66, "metric_for_best_model": "dev_f1",
        }, {"head_type": "docunet", "top_k": 3}),  # fmt: skip
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; a clear error listing the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown evrt_preset {name!r}; choose from {sorted(PRESETS)}") from None

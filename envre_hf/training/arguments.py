"""``EVRTTrainingArguments``: ``TrainingArguments`` plus the switches of entity-variation robust training
(``L = L_clo + L_clp + evrt_alpha * L_rcr + evrt_beta * L_pcr``; ``evrt_losses`` picks the EVRT terms)."""

from __future__ import annotations

import copy
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from transformers import TrainingArguments

from ..redaction import remember_secret
from .consistency import PCR_FORMS, RCR_REDUCTIONS
from .presets import get_preset

#: The EVRT loss terms that can be switched on or off.
EVRT_LOSSES = ("clp", "rcr", "pcr")
#: Where the renamed twin of each training document comes from.
TWIN_SOURCES = ("on_the_fly", "prebuilt")
#: ``evrt_twins`` values for on-the-fly renaming: one renaming per document kept for the whole run (released), or a
#: new one every epoch.
EVRT_TWINS = ("fixed", "fresh")


@dataclass
class EVRTTrainingArguments(TrainingArguments):
    """Training arguments for DocRE models with optional EVRT; unlike ``TrainingArguments``,
    ``remove_unused_columns=False`` and ``use_cpu=True`` on machines without an accelerator."""

    evrt: bool = field(
        default=False,
        metadata={"help": "Train with entity-variation robust training (each document paired with a renamed twin)."},
    )
    evrt_alpha: float = field(
        default=0.1,
        metadata={"help": "Weight of the representation consistency loss L_rcr (released code, Re-DocRED: 0.1)."},
    )
    evrt_beta: float = field(
        default=0.1,
        metadata={"help": "Weight of the prediction consistency loss L_pcr (released code, Re-DocRED: 0.1)."},
    )
    evrt_rcr_reduction: str = field(
        default="mean",
        metadata={
            "help": "L_rcr reduction: mean = MSE over pairs x dims (released code); sum = squared L2 over dims, "
            "mean over pairs (the paper's Eq. 1, D times larger).",
            "choices": list(RCR_REDUCTIONS),
        },
    )
    evrt_pcr_form: str = field(
        default="bce_margin",
        metadata={
            "help": "L_pcr form: bce_margin = symmetric BCE on threshold margins (released code); sym_kl = symmetric "
            "KL of per-relation Bernoullis (the paper's Eq. 2).",
            "choices": list(PCR_FORMS),
        },
    )
    evrt_preset: str | None = field(
        default=None,
        metadata={
            "help": "Released training recipe (weights, learning rates, warmup, clipping, AdamW eps, batch, epochs, "
            "checkpoint selection): redocred-bert, redocred-roberta, docred-bert, docred-roberta. Options given "
            "explicitly on the command line win over the preset (see envre_hf.training.presets)."
        },
    )
    evrt_losses: list[str] = field(
        default_factory=lambda: list(EVRT_LOSSES),
        metadata={"help": "EVRT terms to use, any subset of clp rcr pcr (the ablation switches); none: only L_clo."},
    )
    twin_source: str = field(
        default="on_the_fly",
        metadata={
            "help": "on_the_fly: rename each training document through the renaming pipeline with a fresh seed "
            "per epoch (rename_seed + epoch); prebuilt: take twins from --twin_file, matched by doc_id.",
            "choices": list(TWIN_SOURCES),
        },
    )
    evrt_twins: str = field(
        default="fixed",
        metadata={
            "help": "With twin_source=on_the_fly: fixed renames each training document once (seed rename_seed), "
            "before training, saved as <output_dir>/evrt_twins.json and reused on resume, as the released code "
            "trains (its evrt.json); fresh renames anew every epoch (seed rename_seed + epoch).",
            "choices": list(EVRT_TWINS),
        },
    )
    twin_file: str | None = field(
        default=None,
        metadata={"help": "Pre-built renamed training set (DocRED JSON/JSONL or a saved dataset) for twin_source=prebuilt."},
    )
    rename_kb_pool: list[str] = field(
        default_factory=list,
        metadata={
            "help": "DocRED-format files whose entities form the corpus KB used for on-the-fly renaming "
            "(default: the training file itself)."
        },
    )
    exclude_names_from: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Name isolation: names files (one name a line, .txt) or renamed evaluation benchmarks "
            "(JSON/JSONL) whose new names training renames must never use."
        },
    )
    rename_seed: int = field(
        default=0,
        metadata={"help": "Seed of the training renames (evrt_twins=fixed); with fresh twins epoch e uses rename_seed + e."},
    )
    classifier_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "Learning rate of everything outside the encoder (the DocRE head), as ATLOP trains its classifier "
            "faster than the encoder (ATLOP: 1e-4 head, 5e-5 encoder); default: learning_rate for all parameters."
        },
    )
    module_learning_rates: dict[str, float] | str | None = field(
        default=None,
        metadata={
            "help": "Learning rates of named parts of the model, as JSON: parameter-name prefix -> rate (the longest "
            "matching prefix wins), e.g. '{\"unet\": 4e-4}' as DocuNet's released script trains its U-Net; other "
            "parameters keep learning_rate (encoder) / classifier_learning_rate (head)."
        },
    )
    remove_unused_columns: bool = field(
        default=False,
        metadata={"help": "Kept False: EVRT examples are nested {original, twin} dicts."},
    )

    def _apply_preset(self) -> None:
        """Set the preset's values on every field still at its dataclass default (explicit values win)."""
        preset = get_preset(self.evrt_preset)
        defaults = {
            f.name: f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
            for f in fields(self)
            if f.default is not MISSING or f.default_factory is not MISSING
        }
        for name, value in preset.training_settings().items():
            if name not in defaults:
                raise ValueError(f"evrt_preset {preset.name!r} sets unknown field {name!r}")
            if getattr(self, name) == defaults[name]:
                setattr(self, name, value)

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if name.endswith("_token") and isinstance(value, str):
                remember_secret(value)  # redacted from every error line of this process
        if self.evrt_preset:
            self._apply_preset()
        import torch

        if not self.use_cpu and not torch.accelerator.is_available():
            self.use_cpu = True  # bf16 autocast is then legal on CPU, and torchrun's processes join a gloo group
        super().__post_init__()
        # Accept "clp,rcr" (config files) and "none" (no EVRT term: the command line needs one word).
        raw = [self.evrt_losses] if isinstance(self.evrt_losses, str) else list(self.evrt_losses)
        self.evrt_losses = [p for item in raw for p in item.replace(",", " ").split() if p and p != "none"]
        unknown = sorted(set(self.evrt_losses) - set(EVRT_LOSSES))
        if unknown:
            raise ValueError(f"evrt_losses: unknown term(s) {unknown}; choose from {list(EVRT_LOSSES)}")
        self.evrt_losses = [name for name in EVRT_LOSSES if name in self.evrt_losses]
        choices = {"evrt_twins": EVRT_TWINS, "twin_source": TWIN_SOURCES, "evrt_rcr_reduction": RCR_REDUCTIONS,
                   "evrt_pcr_form": PCR_FORMS}  # fmt: skip
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        if self.evrt and self.twin_source == "prebuilt" and not self.twin_file:
            raise ValueError("twin_source=prebuilt needs --twin_file (a renamed copy of the training set)")
        if isinstance(self.module_learning_rates, str):
            import json

            try:
                self.module_learning_rates = json.loads(self.module_learning_rates)
            except json.JSONDecodeError as exc:
                raise ValueError(f"module_learning_rates: not JSON ({exc.msg})") from None
        rates = self.module_learning_rates or {}
        if not isinstance(rates, dict) or not all(isinstance(k, str) and isinstance(v, (int, float)) and v >= 0
                                                  for k, v in rates.items()):  # fmt: skip
            raise ValueError(f"module_learning_rates must map name prefixes to rates >= 0, got {rates!r}")
        if self.evrt_alpha < 0 or self.evrt_beta < 0:
            raise ValueError(f"evrt_alpha and evrt_beta must be >= 0, got {self.evrt_alpha} and {self.evrt_beta}")

    def __getstate__(self) -> dict[str, Any]:
        """What a pickle keeps: every ``*_token`` field cleared (``None``), as ``to_dict`` hides them, since Trainer
        pickles the arguments into ``training_args.bin`` of every checkpoint and of ``output_dir``, which
        ``--push_to_hub`` uploads. The token stays on this object (and on its copies) for the pushes themselves."""
        return {name: None if name.endswith("_token") else value for name, value in self.__dict__.items()}

    def __copy__(self) -> EVRTTrainingArguments:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> EVRTTrainingArguments:
        clone = memo[id(self)] = object.__new__(type(self))
        clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return clone

    def uses(self, term: str) -> bool:
        """True when EVRT is on and the loss term ``term`` (clp, rcr or pcr) is switched on."""
        if term not in EVRT_LOSSES:
            raise ValueError(f"unknown EVRT term {term!r}; choose from {list(EVRT_LOSSES)}")
        return bool(self.evrt) and term in self.evrt_losses

"""Trainer callbacks of EVRT training: the twins' epoch and their substitution rates in the logs."""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback


class TwinEpochCallback(TrainerCallback):
    """Tells the paired training set which epoch starts (``state.epoch``, restored on resume), so it serves that
    epoch's twins."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    @classmethod
    def for_dataset(cls, dataset: Any, persistent_workers: bool) -> TwinEpochCallback | None:
        """The callback of a training set that has epochs (``set_epoch``), else None; persistent data-loader workers
        are refused when its twins are made on the fly (the workers' copy would serve the first epoch's forever)."""
        if dataset is None or not hasattr(dataset, "set_epoch"):
            return None
        twins = getattr(dataset, "twins", None)
        if persistent_workers and twins is not None and not twins.cacheable():
            raise ValueError(
                "dataloader_persistent_workers keeps the workers' copy of the dataset, which would serve the "
                "first epoch's on-the-fly twins forever; turn it off (workers are then re-created each epoch)"
            )
        return cls(dataset)

    def on_epoch_begin(self, args, state, control, **kwargs):  # noqa: D102 - TrainerCallback hook
        self.dataset.set_epoch(state.epoch or 0.0)


class TwinRatesCallback(TrainerCallback):
    """Puts the twins' substitution rates into ``state.log_history`` (and so ``trainer_state.json``)."""

    def __init__(self, rates: dict[str, float]):
        self.rates = rates

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: D102 - TrainerCallback hook
        if not any("twin_substitution_rate_ALL" in entry for entry in state.log_history):
            state.log_history.append({f"twin_substitution_rate_{k}": v for k, v in self.rates.items()} | {"step": 0})

"""``EVRTTrainer``: a ``transformers.Trainer`` for DocRE models with entity-variation robust training: the loss
``L_clo + L_clp + alpha * L_rcr + beta * L_pcr``, each term logged, and DocRED-metric evaluation (docs/training.md)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import torch
from transformers import Trainer
from transformers.trainer_pt_utils import LengthGroupedSampler
from transformers.trainer_utils import EvalLoopOutput

from ..atomic import write_text
from ..documents import Document
from ..features.batching import dataset_lengths
from ..features.collator import DocRECollator
from .arguments import EVRTTrainingArguments
from .callbacks import TwinEpochCallback, TwinRatesCallback
from .checkpoints import GuardedCheckpoints
from .evaluation import ScoredSet, document_set
from .model_card import run_card
from .objective import LossTally, evrt_loss
from .pairing import MIN_TWIN_RATE, DocumentFeaturesDataset, EVRTPairCollator, EVRTPairDataset, starved_twin_types
from .param_groups import has_own_groups, parameter_groups

logger = logging.getLogger(__name__)


class EVRTTrainer(GuardedCheckpoints):
    """Trainer with the EVRT objective, per-component loss logging and DocRED-F1 evaluation (and checkpoints
    safe to resume from: :class:`~envre_hf.training.checkpoints.GuardedCheckpoints`)."""

    # compute_loss returns a per-micro-batch mean: let Trainer divide it by the accumulation steps.
    loss_is_scaled_for_ga = False

    def __init__(
        self,
        *args: Any,
        eval_documents: dict[str, Sequence[Document]] | None = None,
        train_documents_for_ign: Sequence[Document] | None = None,
        max_seq_length: int | None = None,
        **kwargs: Any,
    ):
        self.train_documents_for_ign = list(train_documents_for_ign) if train_documents_for_ign else None
        self.max_seq_length = max_seq_length
        self._scoring: ScoredSet | None = None
        if eval_documents and kwargs.get("eval_dataset") is None:
            kwargs["eval_dataset"] = dict(eval_documents)
        if len(args) < 3 and kwargs.get("data_collator") is None:  # DocRE batches, paired or not
            kwargs["data_collator"] = EVRTPairCollator(DocRECollator(kwargs.get("processing_class")))
        super().__init__(*args, **kwargs)
        self.eval_dataset = self._document_set(self.eval_dataset)  # featurized once, scored at each evaluation
        if not isinstance(self.args, EVRTTrainingArguments):
            raise TypeError("EVRTTrainer needs EVRTTrainingArguments (the EVRT switches live there)")
        epochs = TwinEpochCallback.for_dataset(self.train_dataset, self.args.dataloader_persistent_workers)
        if epochs is not None:
            self.add_callback(epochs)
        # compute_loss normalises per micro-batch itself: no need for Trainer's item counting (a gather per step).
        self.model_accepts_loss_kwargs = False
        self.loss_tally = LossTally()  # the EVRT terms since the last training log
        self._warned_unpaired = False
        self.twin_rates: dict[str, float] | None = None

    def train(self, *args: Any, **kwargs: Any):
        """``Trainer.train``, after reporting how renamed the twins really are (:meth:`report_twins`)."""
        if self.args.evrt and self.twin_rates is None:
            rates = self.report_twins()
            if rates is not None:
                self.add_callback(TwinRatesCallback(rates))
        return super().train(*args, **kwargs)

    def report_twins(self) -> dict[str, float] | None:
        """Logs the twins' substitution rate per coarse type (warns when a checked type is starved); returns and
        keeps ``{type: rate}``, or ``None`` when the training set has no twins."""
        report = getattr(self.train_dataset, "twin_substitution_rates", None)
        if not callable(report):
            return None
        rates = report()
        self.twin_rates = {k: round(v["rate"], 4) for k, v in rates.items()}
        logger.info(
            "twins' substitution rates: %s", ", ".join(f"{k} {100 * v:.1f}%" for k, v in self.twin_rates.items())
        )
        starved = starved_twin_types(rates)
        if starved:
            logger.warning(
                "TWINS ARE STARVED: only %s of the entities are renamed in the training twins (want >= %.0f%%): "
                "EVRT learns little about names from twins that keep them. Give the renaming a larger or "
                "different --rename_kb_pool, or build the evaluation benchmark from a pool that is not the "
                "training split (docs/evrt.md).",
                ", ".join(f"{k} {100 * v:.1f}%" for k, v in starved.items()),
                100 * MIN_TWIN_RATE,
            )
        return self.twin_rates

    def _get_train_sampler(self, train_dataset: Any = None):
        """transformers' ``group_by_length`` sampler for document datasets, given the items' lengths (it cannot
        measure a pair item itself): a document and its twin stay one item."""
        dataset = self.train_dataset if train_dataset is None else train_dataset
        if self.args.train_sampling_strategy == "group_by_length" and isinstance(dataset, DocumentFeaturesDataset):
            batch = self.args.per_device_train_batch_size * self.args.gradient_accumulation_steps
            return LengthGroupedSampler(batch, lengths=dataset_lengths(dataset))
        return super()._get_train_sampler(train_dataset)

    def create_optimizer(self, model: torch.nn.Module | None = None):
        """Trainer's optimizer, with the head on ``classifier_learning_rate`` and named modules on their
        ``module_learning_rates`` when those are set (:func:`~envre_hf.training.param_groups.parameter_groups`)."""
        if not has_own_groups(self.args) or self.optimizer is not None:
            return super().create_optimizer(model)
        model = self.model if model is None else model
        groups = parameter_groups(model, self.args, set(self.get_decay_parameter_names(model)))
        optimizer_cls, optimizer_kwargs = Trainer.get_optimizer_cls_and_kwargs(self.args, model)
        self.optimizer = optimizer_cls(groups, **optimizer_kwargs)
        return self.optimizer

    # ------------------------------------------------------------------ loss

    def compute_loss(
        self,
        model: torch.nn.Module,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ):
        """The EVRT objective (:func:`~envre_hf.training.objective.evrt_loss`); a training batch's terms are tallied
        for the logs."""
        if "twin" not in inputs and self.args.evrt and model.training and not self._warned_unpaired:
            logger.warning("evrt is on but the training batches carry no twins (use EVRTPairDataset): training vanilla")
            self._warned_unpaired = True
        batch = evrt_loss(model, self.accelerator.unwrap_model(model), inputs, self.args)
        if model.training:
            self.loss_tally.add(batch)
        return (batch.loss, batch.outputs) if return_outputs else batch.loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Adds the loss components (``loss_clo``, ``loss_clp``, ...) to the training logs."""
        if "loss" in logs:
            logs.update(self.loss_tally.pop_logs(self.accelerator, self.args.device, self.args.evrt))
        super().log(logs, start_time)

    # ------------------------------------------------------------------ evaluation

    def _document_set(self, dataset: Any) -> Any:
        """Lists of documents (alone or as a dict's values) featurized with this trainer's tokenizer."""
        return document_set(dataset, self.processing_class, self.max_seq_length)

    def evaluate(self, eval_dataset: Any = None, ignore_keys: list[str] | None = None, metric_key_prefix: str = "eval"):
        """``Trainer.evaluate``; documents (a :class:`DocumentFeaturesDataset` or a list) are also scored with the
        DocRED metric: ``<prefix>_f1``, ``_ign_f1``, ..., ``_f1_plus_ign_f1`` (what the released code selects by)."""
        eval_dataset = self._document_set(eval_dataset)
        target = self.eval_dataset if eval_dataset is None else eval_dataset
        target = self.eval_dataset[target] if isinstance(target, str) else target
        if not isinstance(target, DocumentFeaturesDataset) or isinstance(target, EVRTPairDataset):
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)  # a dict comes back here per set
        if self.args.batch_eval_metrics:
            raise ValueError("batch_eval_metrics scores batch by batch; the DocRED scores need whole evaluation sets")
        self._scoring = ScoredSet.of(target)
        try:
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        finally:
            self._scoring = None

    def prediction_step(self, model, inputs: dict[str, Any], prediction_loss_only: bool, ignore_keys=None):
        """Trainer's step; while a set of documents is scored, it returns each document's decoded multi-hot
        predictions (int8, padded with -100) labelled by the document's position, so Trainer gathers whole documents
        across processes for :meth:`evaluation_loop` (and a user's ``compute_metrics``)."""
        if self._scoring is None:
            return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)
        loss, logits, _ = super().prediction_step(model, inputs, False, ignore_keys=ignore_keys)
        logits = logits[0] if isinstance(logits, tuple) else logits
        return loss, *self._scoring.rows(self.accelerator.unwrap_model(model), logits, inputs)

    def evaluation_loop(self, dataloader: Any, description: str, prediction_loss_only: bool | None = None,
                        ignore_keys: list[str] | None = None, metric_key_prefix: str = "eval") -> EvalLoopOutput:
        """Trainer's loop, whose metrics gain the DocRED scores of a scored set (a user's ``compute_metrics`` keeps
        its own names), computed from the predictions Trainer gathered."""
        output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys, metric_key_prefix)
        if self._scoring is not None:
            scores = self._scoring.scores(output.predictions, output.label_ids, self.train_documents_for_ign)
            for name, value in scores.items():
                output.metrics.setdefault(f"{metric_key_prefix}_{name}", value)
        return output

    # ------------------------------------------------------------------ model card

    def create_model_card(
        self, license: str | None = None, tags: str | list[str] | None = None, model_name: str | None = None,
        dataset_tags: str | list[str] | None = None, dataset: str | list[str] | None = None,
        eval_datasets: dict[str, str] | None = None, **unused: Any,
    ) -> None:  # fmt: skip
        """The project's card (:func:`~envre_hf.training.model_card.run_card`) in ``output_dir/README.md``;
        ``Trainer.push_to_hub(dataset=..., eval_datasets={"dev": hub id, ...})`` passes the datasets."""
        if self.is_world_process_zero():
            names = list(self.eval_dataset) if isinstance(self.eval_dataset, dict) else [None]
            card = run_card(
                self.accelerator.unwrap_model(self.model), self.args, self.state.log_history, names, license=license,
                tags=tags, model_name=model_name, datasets=(dataset_tags, dataset), eval_datasets=eval_datasets,
            )  # fmt: skip
            write_text(os.path.join(self.args.output_dir, "README.md"), card)

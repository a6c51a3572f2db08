"""``EVRTTrainer``: a ``transformers.Trainer`` for DocRE models with entity-variation robust training: the loss
``L_clo + L_clp + alpha * L_rcr + beta * L_pcr``, each term logged, and DocRED-metric evaluation (docs/training.md)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import os
from collections.abc import Sequence
from typing import Any

import torch
from transformers import Trainer
from transformers.trainer_pt_utils import LengthGroupedSampler
from transformers.trainer_utils import EvalLoopOutput

from ..atomic import write_text
from ..documents import Document, check_unique_keys
from ..features.batching import dataset_lengths
from ..features.collator import DocRECollator
from ..features.featurize import featurize_document
from ..metrics import score_predictions
from ..models.prediction import decode_predictions
from .arguments import EVRTTrainingArguments
from .callbacks import TwinEpochCallback, TwinRatesCallback
from .checkpoints import GuardedCheckpoints
from .consistency import group_bilinear_consistency_loss, prediction_consistency_loss, representation_consistency_loss
from .model_card import EVAL_SCORES, run_card
from .pairing import MIN_TWIN_RATE, DocumentFeaturesDataset, EVRTPairCollator, EVRTPairDataset, starved_twin_types

#: Batch keys that are bookkeeping, never model inputs.
_NON_MODEL_KEYS = ("twin", "doc_keys", "doc_key", "consistency_mask")

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class _ScoredSet:
    """The set of documents an :meth:`EVRTTrainer.evaluate` call is scoring."""

    dataset: DocumentFeaturesDataset
    index: dict[str, int]  # document key -> its position in the set

    def scores(self, predictions: Any, positions: Any, train: Sequence[Document] | None) -> dict[str, float]:
        """DocRED scores (Ign against ``train``) from the rows Trainer gathered: each document's decoded multi-hot
        predictions and its position in the set."""
        documents = self.dataset.documents
        positions = positions.tolist()
        if sorted(positions) != list(range(len(documents))):
            raise RuntimeError(f"evaluation gathered {len(positions)} document rows for {len(documents)} documents")
        rows = []
        for i, multi_hot in zip(positions, predictions):
            hts = self.dataset[i]["hts"]
            rows += decode_predictions(documents[i], hts, torch.from_numpy(multi_hot[: len(hts)]))
        scores = score_predictions(rows, documents, train=train)
        metrics = {a: round(float(getattr(scores, a)), 6) for a in EVAL_SCORES if getattr(scores, a) is not None}
        if scores.ign_f1 is not None:
            metrics["f1_plus_ign_f1"] = round(float(scores.f1) + float(scores.ign_f1), 6)
        return metrics


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
        self._scoring: _ScoredSet | None = None
        if eval_documents and kwargs.get("eval_dataset") is None:
            kwargs["eval_dataset"] = dict(eval_documents)
        if len(args) < 3 and kwargs.get("data_collator") is None:  # DocRE batches, paired or not
            kwargs["data_collator"] = EVRTPairCollator(DocRECollator(kwargs.get("processing_class")))
        super().__init__(*args, **kwargs)
        self.eval_dataset = self._document_set(self.eval_dataset)  # featurized once, scored at each evaluation
        if not isinstance(self.args, EVRTTrainingArguments):
            raise TypeError("EVRTTrainer needs EVRTTrainingArguments (the EVRT switches live there)")
        if self.train_dataset is not None and hasattr(self.train_dataset, "set_epoch"):
            twins = getattr(self.train_dataset, "twins", None)
            if self.args.dataloader_persistent_workers and twins is not None and not twins.cacheable():
                raise ValueError(
                    "dataloader_persistent_workers keeps the workers' copy of the dataset, which would serve the "
                    "first epoch's on-the-fly twins forever; turn it off (workers are then re-created each epoch)"
                )
            self.add_callback(TwinEpochCallback(self.train_dataset))
        # compute_loss normalises per micro-batch itself: no need for Trainer's item counting (a gather per step).
        self.model_accepts_loss_kwargs = False
        self._loss_sums: dict[str, torch.Tensor] = {}
        self._loss_counts: dict[str, int] = {}
        self._warned_unpaired = False
        self._left_out = 0
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
        ``module_learning_rates`` when those are set (the released scripts' parameter groups)."""
        head_lr, by_module = self.args.classifier_learning_rate, self.args.module_learning_rates or {}
        if (head_lr is None and not by_module) or self.optimizer is not None:
            return super().create_optimizer(model)
        model = self.model if model is None else model
        decay = set(self.get_decay_parameter_names(model))
        prefixes = sorted(by_module, key=len, reverse=True)
        groups: dict[tuple[float, bool], list[torch.nn.Parameter]] = {}
        for name, param in model.named_parameters():
            if param.requires_grad:
                prefix = next((p for p in prefixes if name.startswith(p)), None)
                if prefix is not None:
                    lr = by_module[prefix]
                else:
                    lr = self.args.learning_rate if name.startswith("encoder.") or head_lr is None else head_lr
                groups.setdefault((float(lr), name in decay), []).append(param)
        optimizer_cls, optimizer_kwargs = Trainer.get_optimizer_cls_and_kwargs(self.args, model)
        param_groups = [
            {"params": params, "lr": lr, "weight_decay": self.args.weight_decay if decays else 0.0}
            for (lr, decays), params in sorted(groups.items())
        ]
        self.optimizer = optimizer_cls(param_groups, **optimizer_kwargs)
        return self.optimizer

    # ------------------------------------------------------------------ loss

    def _forward_inputs(self, model: torch.nn.Module, batch: dict[str, Any]) -> dict[str, Any]:
        """The entries of ``batch`` the model's forward accepts (bookkeeping keys dropped)."""
        target = self.accelerator.unwrap_model(model)
        params = inspect.signature(target.forward).parameters
        takes_kwargs = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
        return {
            k: v
            for k, v in batch.items()
            if k not in _NON_MODEL_KEYS and (takes_kwargs or k in params) and not (k == "labels" and v is None)
        }

    def _record(self, name: str, value: torch.Tensor) -> torch.Tensor:
        """Adds a loss term to the training logs' sums; returns it."""
        if self.model.training:
            seen = value.detach().float()
            self._loss_sums[name] = self._loss_sums.get(name, torch.zeros((), device=seen.device)) + seen
            self._loss_counts[name] = self._loss_counts.get(name, 0) + 1
        return value

    def compute_loss(
        self,
        model: torch.nn.Module,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ):
        args: EVRTTrainingArguments = self.args
        mask = inputs.get("consistency_mask")
        paired = "twin" in inputs
        use = {term: paired and args.uses(term) for term in ("clp", "rcr", "pcr")}
        if not paired and args.evrt and model.training and not self._warned_unpaired:
            logger.warning("evrt is on but the training batches carry no twins (use EVRTPairDataset): training vanilla")
            self._warned_unpaired = True
        outputs = model(**self._forward_inputs(model, inputs))
        if outputs.loss is None:
            raise ValueError("the model returned no loss: training batches need labels")
        loss = self._record("clo", outputs.loss.float())
        if not any(use.values()):
            return (loss, outputs) if return_outputs else loss
        # the twins in their own forward call, as the released code does (so a family's loss may take extra inputs)
        twin_inputs = self._forward_inputs(model, inputs["twin"])
        if not use["clp"]:
            twin_inputs.pop("labels", None)
        twin_out = model(**twin_inputs)
        if use["clp"]:
            loss = loss + self._record("clp", twin_out.loss.float())
        # the consistency terms read only the pairs a document and its twin both place
        rows = slice(None)
        if mask is not None and (use["rcr"] or use["pcr"]):
            rows = mask.to(outputs.logits.device)
            self._left_out += int((~rows).sum()) if model.training else 0
        if use["rcr"]:
            loss = loss + args.evrt_alpha * self._record("rcr", self._rcr(model, outputs, twin_out, rows))
        if use["pcr"]:
            margins = self.accelerator.unwrap_model(model).relation_margins
            pcr = prediction_consistency_loss(
                margins(outputs.logits[rows]), margins(twin_out.logits[rows]), form=args.evrt_pcr_form
            )
            loss = loss + args.evrt_beta * self._record("pcr", pcr)
        return (loss, outputs) if return_outputs else loss

    def _rcr(self, model: torch.nn.Module, outputs: Any, twin_out: Any, rows: torch.Tensor | slice) -> torch.Tensor:
        """L_rcr over the pairs ``rows``; from the group-bilinear factors in closed form when the family exposes
        them (only those rows are cut: the pair representations are far larger)."""
        reduction = self.args.evrt_rcr_reduction
        factors = getattr(outputs, "bilinear_factors", None), getattr(twin_out, "bilinear_factors", None)
        if all(f is not None for f in factors):
            block = self.accelerator.unwrap_model(model).config.block_size
            (zh, zt), (zh2, zt2) = factors
            return group_bilinear_consistency_loss(zh[rows], zt[rows], zh2[rows], zt2[rows], block, reduction=reduction)
        return representation_consistency_loss(
            outputs.pair_representations[rows], twin_out.pair_representations[rows], reduction=reduction
        )

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Adds the loss components (``loss_clo``, ``loss_clp``, ...) to the training logs."""
        if "loss" in logs and self._loss_sums:
            names = sorted(self._loss_sums)
            means = torch.stack([self._loss_sums[n] / self._loss_counts[n] for n in names]).to(self.args.device)
            if self.accelerator.num_processes > 1:
                means = self.accelerator.reduce(means, reduction="mean")
            for name, value in zip(names, means.tolist()):
                logs[f"loss_{name}"] = round(value, 6)
            self._loss_sums, self._loss_counts = {}, {}
            if self.args.evrt:
                logs["consistency_pairs_left_out"], self._left_out = self._left_out, 0
        super().log(logs, start_time)

    # ------------------------------------------------------------------ evaluation

    def _document_set(self, dataset: Any) -> Any:
        """Lists of documents (alone or as a dict's values) as :class:`DocumentFeaturesDataset`; else ``dataset``."""
        if isinstance(dataset, dict):
            return {name: self._document_set(d) for name, d in dataset.items()}
        if not (isinstance(dataset, (list, tuple)) and dataset and isinstance(dataset[0], Document)):
            return dataset
        featurize = functools.partial(featurize_document, tokenizer=self.processing_class,
                                      max_seq_length=self.max_seq_length)
        return DocumentFeaturesDataset(dataset, featurize)

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
        check_unique_keys(target.documents)  # predictions are matched to their documents by key
        self._scoring = _ScoredSet(target, {doc.key: i for i, doc in enumerate(target.documents)})
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
        hts, keys = inputs["hts"], inputs["doc_keys"]
        loss, logits, _ = super().prediction_step(model, inputs, False, ignore_keys=ignore_keys)
        logits = logits[0] if isinstance(logits, tuple) else logits
        multi_hot = self.accelerator.unwrap_model(model).decode(logits.float()).to(torch.int8)
        per_document = list(multi_hot.split([len(doc_hts) for doc_hts in hts]))
        predictions = torch.nn.utils.rnn.pad_sequence(per_document, batch_first=True, padding_value=-100)
        return loss, predictions, torch.tensor([self._scoring.index[k] for k in keys], device=predictions.device)

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

"""Training entry point shared by ``examples/run_docre.py`` and ``envre train`` (docs/training.md): evaluates on
the original and renamed dev sets, keeps the best checkpoint and writes ``all_results.json``."""

from __future__ import annotations

import functools
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import transformers
from transformers import AutoConfig, AutoTokenizer, HfArgumentParser, TrainerCallback, set_seed

from ..atomic import write_json
from ..documents import Document, read_documents
from ..documents.io import parse_json, parse_yaml
from ..features import DocRECollator, featurize_document
from ..features.featurize import DROPPED_MENTIONS, check_max_seq_length
from ..kb.corpus import CorpusKB
from ..models import DocREConfig, DocREModel
from ..models.loading import no_checkpoint_code
from ..models.registry import HEAD_TYPES
from ..renaming import RenamingConfig, RenamingPipeline
from ..renaming.driver import RenamingDriver
from ..renaming.isolation import load_excluded_names, used_names
from .arguments import EVRTTrainingArguments
from .checkpoints import disk_full_is_one_line
from .pairing import DocumentFeaturesDataset, EVRTPairCollator, EVRTPairDataset, OnTheFlyTwins, PrebuiltTwins
from .pairing import check_name_isolation, fixed_twins
from .presets import get_preset
from .trainer import EVRTTrainer

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    """Which model to train: an encoder plus a fresh head, or a saved DocRE model to continue."""

    model_name_or_path: str = field(
        metadata={"help": "Encoder (HF hub id or local directory) for a new model, or a saved DocRE model directory."}
    )
    head_type: str = field(
        default="atlop",
        metadata={"help": "Model family for a new model.", "choices": HEAD_TYPES},  # the registry's, read when parsing
    )
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer (default: model_name_or_path)."})
    emb_size: int | None = field(default=None, metadata={"help": "Head embedding size (default: DocREConfig's, 768)."})
    block_size: int | None = field(default=None, metadata={"help": "Group-bilinear block size (default 64)."})
    ncrl_margin: float | None = field(
        default=None, metadata={"help": "NCRL margin shift (default: DocREConfig's 0.05; released Re-DocRED recipe 0.04)."}
    )
    ncrl_none_bias: float | None = field(
        default=None,
        metadata={"help": "NCRL's none-class logit starts this much above every relation (default 0 as released; 3 on CPU)."},
    )
    top_k: int | None = field(default=None, metadata={"help": "Most relations per pair at decoding (default 4)."})
    head_settings: str | None = field(
        default=None,
        metadata={
            "help": 'Family settings as JSON, e.g. \'{"axial_layers": 1}\' (kd_docre) or \'{"matrix_size": null}\' (docunet).'
        },
    )


@dataclass
class DataArguments:
    """Training and evaluation documents (DocRED / Re-DocRED JSON, JSONL, Linked-DocRED)."""

    train_file: str = field(metadata={"help": "Training documents."})
    dev_file: str | None = field(default=None, metadata={"help": "Original dev documents (evaluated as 'dev')."})
    dev_renamed_file: str | None = field(
        default=None, metadata={"help": "Renamed dev documents (evaluated as 'dev_renamed'), e.g. from envre build."}
    )
    rename_dev_seed: int | None = field(
        default=None,
        metadata={
            "help": "Without --dev_renamed_file: build the renamed dev set with the corpus KB at this seed "
            "(its names are then excluded from the training renames)."
        },
    )
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Cap on wordpieces per document (default: no cap; long inputs are windowed)."}
    )
    max_train_docs: int | None = field(default=None, metadata={"help": "Use only the first N training documents."})
    max_eval_docs: int | None = field(default=None, metadata={"help": "Use only the first N dev documents."})


def build_model(model_args: ModelArguments, preset: str | None = None) -> Any:
    """A saved DocRE model, or a new one on top of an encoder with the ``preset``'s head settings wherever
    ``model_args`` leaves them unset. A checkpoint's own code never runs (:mod:`envre_hf.models.loading`)."""
    with no_checkpoint_code(model_args.model_name_or_path):
        return _build_model(model_args, preset)


def _build_model(model_args: ModelArguments, preset: str | None) -> Any:
    config = AutoConfig.from_pretrained(model_args.model_name_or_path, trust_remote_code=False)
    if isinstance(config, DocREConfig):
        return DocREModel.from_pretrained(model_args.model_name_or_path, use_safetensors=True)
    head: dict[str, Any] = dict(get_preset(preset).model_settings()) if preset else {}
    if model_args.head_type != ModelArguments.head_type or not preset:
        head["head_type"] = model_args.head_type
    for name in ("emb_size", "block_size", "ncrl_margin", "ncrl_none_bias", "top_k"):
        if getattr(model_args, name) is not None:
            head[name] = getattr(model_args, name)
    if model_args.head_settings:
        head["head_settings"] = parse_json(model_args.head_settings, "--head_settings")
    return DocREModel.from_encoder_pretrained(model_args.model_name_or_path, **head)


def build_corpus_pipeline(pool: list[Document], exclude_names: frozenset[str] = frozenset()) -> Any:
    """A renaming pipeline over the offline corpus KB of ``pool`` with ``exclude_names`` isolated."""
    return RenamingPipeline(CorpusKB(pool), RenamingConfig(exclude_names=frozenset(exclude_names)))


class MentionDropSummary(logging.Filter, TrainerCallback):
    """Collapses featurization's per-document "dropped N of M mentions" warnings (the records of its logger
    :data:`~envre_hf.features.featurize.DROPPED_MENTIONS`) into one line per dataset pass, logged after each epoch
    and each evaluation."""

    def __init__(self) -> None:
        super().__init__()
        self.documents, self.dropped, self.limit = 0, 0, None

    def filter(self, record: logging.LogRecord) -> bool:
        self.documents += 1
        self.limit, self.dropped = record.max_seq_length, self.dropped + record.dropped_mentions
        return False

    def flush(self, what: str) -> None:
        if self.documents:
            logger.warning(
                "max_seq_length=%s dropped %d mentions in %d documents (%s)", self.limit, self.dropped, self.documents, what
            )
        self.documents, self.dropped = 0, 0

    def on_epoch_end(self, args, state, control, **kwargs):  # noqa: D102 - TrainerCallback hook
        self.flush(f"training, epoch {round(state.epoch or 0)}")

    def on_evaluate(self, args, state, control, **kwargs):  # noqa: D102 - TrainerCallback hook
        self.flush("evaluation")


def configure_logging(training_args: EVRTTrainingArguments) -> MentionDropSummary:
    """Each process at ``get_process_log_level()`` for envre-hf, transformers and datasets (the root logger is left
    alone), and featurization warnings summarised (:class:`MentionDropSummary`)."""
    level = training_args.get_process_log_level()
    transformers.utils.logging.set_verbosity(level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    datasets.utils.logging.set_verbosity(level)
    package = logging.getLogger("envre_hf")
    # passive (the default): the package's own INFO records (the twins' substitution rates) show on the main process
    passive = training_args.log_level == "passive" and training_args.should_log
    package.setLevel(min(level, logging.INFO) if passive else level)
    if not package.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[%(levelname)s|%(name)s] %(message)s"))
        package.addHandler(handler)
    summary = MentionDropSummary()
    for old in [f for f in DROPPED_MENTIONS.filters if isinstance(f, MentionDropSummary)]:
        DROPPED_MENTIONS.removeFilter(old)
    DROPPED_MENTIONS.addFilter(summary)
    return summary


def build_twin_source(
    args: EVRTTrainingArguments,
    train_docs: list[Document],
    extra_excluded: frozenset[str] = frozenset(),
    default_pool: list[Document] | None = None,
) -> Any:
    """The twin source of ``args.twin_source``, with the evaluation names isolated; on-the-fly renaming draws from
    ``args.rename_kb_pool``, else ``default_pool`` (the whole training file), else ``train_docs``."""
    excluded = load_excluded_names(args.exclude_names_from) | extra_excluded
    if not excluded:
        logger.warning("EVRT twins isolated from no benchmark: pass --exclude_names_from BENCHMARK (the folder envre "
                       "build wrote) so that they never use the names it was renamed with (docs/training.md)")
    if args.twin_source == "prebuilt":
        twins = PrebuiltTwins(train_docs, read_documents(args.twin_file), base_seed=args.rename_seed)
        check_name_isolation(twins.all_twins(), excluded)
        return twins
    pool = [doc for path in args.rename_kb_pool for doc in read_documents(path)] or default_pool or train_docs
    pipeline = build_corpus_pipeline(pool, excluded)
    if args.evrt_twins == "fixed":
        path = Path(args.output_dir) / "evrt_twins.json"
        twins = fixed_twins(train_docs, pipeline, args.rename_seed, path, progress=args.process_index == 0)
        check_name_isolation(twins.all_twins(), excluded)  # twins read back from an earlier run too
        return twins
    return OnTheFlyTwins(pipeline, base_seed=args.rename_seed)


def parse_args(
    argv: list[str] | None = None, parser_class: type | None = None
) -> tuple[ModelArguments, DataArguments, EVRTTrainingArguments]:
    """Parse the command line (or a single .json/.yaml config file) into the three dataclasses, with
    ``parser_class`` (an ``HfArgumentParser`` subclass; ``envre train`` makes its errors one line)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = (parser_class or HfArgumentParser)((ModelArguments, DataArguments, EVRTTrainingArguments))
    if len(argv) == 1 and argv[0].endswith((".json", ".yaml", ".yml")):
        text = Path(argv[0]).read_text(encoding="utf-8")
        # one JSON reader (oversized numbers, deep nesting: one line naming the file); YAML without aliases
        settings = parse_json(text, argv[0]) if argv[0].endswith(".json") else parse_yaml(text, argv[0])
        if isinstance(settings, dict) and isinstance(settings.get("head_settings"), dict):
            settings["head_settings"] = json.dumps(settings["head_settings"])
        return parser.parse_dict(settings)
    return parser.parse_args_into_dataclasses(args=argv)


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Train (and evaluate) as configured by ``argv``; returns the final metrics."""
    model_args, data_args, training_args = parse_args(argv)
    return run(model_args, data_args, training_args)


def run(model_args: ModelArguments, data_args: DataArguments, training_args: EVRTTrainingArguments) -> dict[str, float]:
    """The training run of :func:`main`, for callers that already hold the dataclasses."""
    drops = configure_logging(training_args)
    set_seed(training_args.seed)
    tokenizer_source = model_args.tokenizer_name or model_args.model_name_or_path
    with no_checkpoint_code(tokenizer_source):
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_source, trust_remote_code=False)
    check_max_seq_length(data_args.max_seq_length, tokenizer.num_special_tokens_to_add())  # before any work
    model = build_model(model_args, training_args.evrt_preset)

    all_train = read_documents(data_args.train_file)
    train_docs = all_train[: data_args.max_train_docs]
    eval_documents: dict[str, list[Document]] = {}
    renamed_dev_names: frozenset[str] = frozenset()
    if data_args.dev_file:
        dev = read_documents(data_args.dev_file)[: data_args.max_eval_docs]
        eval_documents["dev"] = dev
        if data_args.dev_renamed_file:
            eval_documents["dev_renamed"] = read_documents(data_args.dev_renamed_file)[: data_args.max_eval_docs]
        elif data_args.rename_dev_seed is not None:
            pool = [doc for path in training_args.rename_kb_pool for doc in read_documents(path)] or all_train + dev
            eval_documents["dev_renamed"] = RenamingDriver(build_corpus_pipeline(pool)).rename_documents(
                dev, [data_args.rename_dev_seed], desc="Renaming dev", progress=training_args.local_process_index == 0,
                leave=False,
            )
        if "dev_renamed" in eval_documents:
            renamed_dev_names = frozenset(used_names(eval_documents["dev_renamed"]))
    if not eval_documents and training_args.eval_strategy != "no":
        logger.warning("no --dev_file: evaluation and best-checkpoint selection are off")
        training_args.eval_strategy = "no"
        training_args.load_best_model_at_end = False
    if eval_documents and training_args.metric_for_best_model in (None, "loss", "eval_loss"):
        # the released code keeps the checkpoint with the best dev F1 + dev Ign F1
        training_args.metric_for_best_model = "dev_f1_plus_ign_f1"
        training_args.greater_is_better = True

    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=data_args.max_seq_length)
    if training_args.evrt:
        twins = build_twin_source(training_args, train_docs, renamed_dev_names, default_pool=all_train)
        train_dataset = EVRTPairDataset(train_docs, featurize, twins)
    else:
        train_dataset = DocumentFeaturesDataset(train_docs, featurize)

    trainer = EVRTTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        data_collator=EVRTPairCollator(DocRECollator(tokenizer)),
        processing_class=tokenizer,
        eval_documents=eval_documents or None,
        train_documents_for_ign=train_docs,
        max_seq_length=data_args.max_seq_length,
    )
    trainer.add_callback(drops)
    out = training_args.output_dir
    # a full disk is one line naming the folder (a checkpoint's own: checkpoints.GuardedCheckpoints)
    with disk_full_is_one_line(out, "training", "the checkpoints in it are whole"):
        result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    metrics: dict[str, float] = dict(result.metrics)
    with disk_full_is_one_line(out, "the final model", "its files there may be incomplete, its checkpoints are whole"):
        trainer.save_model()
        trainer.save_state()
        if eval_documents:
            metrics.update(trainer.evaluate())
        if trainer.is_world_process_zero():
            write_json(Path(out) / "all_results.json", metrics, ensure_ascii=True)
    drops.flush("final evaluation")
    DROPPED_MENTIONS.removeFilter(drops)  # leave the caller's logging as it was
    return metrics


if __name__ == "__main__":
    main()

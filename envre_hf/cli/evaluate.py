"""``envre evaluate``: score ``--predictions FILE``, or ``--model DIR`` (predict first), against ``--gold`` with
the official DocRED rules (docs/metric.md), or the robustness report on ``--gold`` and ``--env`` (docs/training.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..atomic import write_json
from ..documents import read_documents
from .common import UsageError, add_option, add_precision_argument, chosen_split, existing_path, model_location
from .common import non_negative_int, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common = parser.add_argument_group("gold data and output (all modes)")
    common.add_argument(
        "--gold", required=True, type=existing_path, help="gold documents (DocRED / Re-DocRED JSON, .jsonl, Linked-DocRED, or an envre build folder)"
    )
    common.add_argument(
        "--train",
        type=existing_path,
        help="training documents for Ign F1 (facts seen in training are ignored); without it Ign scores are null",
    )
    add_option(
        common, "split", old=("--gold-split", "--env-split"),
        help="split of the build folder among --gold and --env (default: its only split; with --predictions, the "
        "split holding the predictions' documents)",
    )  # fmt: skip
    common.add_argument("--train-split", help="split of a --train build folder holding several (required then)")
    common.add_argument(
        "--max-docs",
        type=non_negative_int,
        help="--model: predict and score only the first N --gold documents (with --env: their renamed copies too)",
    )
    add_option(common, "output", "also write the scores, per-relation and per-entity-count tables included, to this "
               "JSON file")  # fmt: skip
    common.add_argument(
        "--details", action="store_true", help="print the per-relation and per-entity-count tables too (default: only in --output)"
    )
    preds = parser.add_argument_group("scoring a prediction file")
    preds.add_argument("--predictions", type=existing_path,
                       help="official-format predictions (JSON list or .jsonl), or envre predict's output")
    preds.add_argument(
        "--allow-unknown-documents",
        action="store_true",
        help="count predictions for documents missing from --gold as wrong (the official scorer's behaviour) "
        "instead of stopping with an error",
    )
    group = parser.add_argument_group("predicting with a saved model, then scoring")
    group.add_argument("--model", help="a DocRE model folder (save_pretrained, tokenizer saved with it) or Hub id")
    add_inference_arguments(group)
    add_option(group, "progress", "no progress bars")
    group.add_argument("--save-predictions", type=Path, help="also write the predictions (official JSON format)")
    group.add_argument(
        "--submission",
        type=Path,
        metavar="DIR",
        help="also write the leaderboard files: result.json + result.zip (one per seed, seed<k>/, for renamed "
        "copies) and a README of what to upload; an unlabelled --gold (DocRED test) is then not scored",
    )
    group = parser.add_argument_group("robustness report: --model DIR --gold ORIGINAL --env RENAMED")
    group.add_argument(
        "--env",
        type=existing_path,
        help="renamed version of --gold (DocRED JSON/JSONL, or an envre build folder); prints P, R, F1, Ign F1, "
        "Intra/Inter F1 on both and the relative drop as a markdown table, --output writes it as JSON",
    )


def add_inference_arguments(group: argparse._ActionsContainer) -> None:
    """How ``--model`` predicts (:func:`load_model` reads them; ``envre probe`` takes them too)."""
    group.add_argument("--batch-size", type=positive_int, default=4, help="documents per inference batch (default 4)")
    group.add_argument(
        "--top-k", type=non_negative_int, default=None, help="most relations per pair (default: the model's top_k; 0: no cap)"
    )
    group.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    group.add_argument(
        "--quantize", choices=["int8"], help="CPU inference with int8 dynamic quantization of the encoder's linear layers"
    )
    add_precision_argument(group)


def load_model(args: argparse.Namespace) -> tuple[Any, Any, dict[str, Any]]:
    """``--model`` loaded for inference, its tokenizer, and the keyword arguments of ``predict`` the options set."""
    from ..models.prediction import load_for_inference  # lazy: start-up time

    model, tokenizer = load_for_inference(model_location(args.model), args.device, quantize=getattr(args, "quantize", None))
    return model, tokenizer, {"batch_size": args.batch_size, "top_k": args.top_k, "autocast": args.precision}


def run_model(args: argparse.Namespace) -> int:
    """Predict the ``--gold`` documents with ``--model`` (batched, progress bar) and score them."""
    gold, train = read_gold_and_train(args)  # bad data is refused before torch is imported
    from ..metrics import score_predictions  # lazy: start-up time
    from ..models.prediction import predict  # lazy: start-up time

    model, tokenizer, options = load_model(args)
    predictions = predict(model, gold, tokenizer, progress=not args.no_progress, **options)
    if args.save_predictions is not None:
        write_json(args.save_predictions, predictions, indent=None)
    if getattr(args, "submission", None) is not None:
        from ..metrics.submission import write_submission  # lazy: start-up time

        files = write_submission(predictions, gold, args.submission, gold_name=args.gold.name)
        if not all(doc.has_labels for doc in gold):  # hidden test labels: the leaderboard scores it
            print(json.dumps({"submission": [str(f.zip) for f in files]}, indent=2))
            return 0
    emit(score_predictions(predictions, gold, train).to_dict(), args)
    return 0


def run_robustness(args: argparse.Namespace) -> int:
    """Predict ``--gold`` and ``--env`` with ``--model``; print the markdown table, write JSON to ``--output``."""
    if getattr(args, "model", None) is None:
        raise UsageError("--env needs --model DIR (the model to evaluate on both sets)")
    gold, train = read_gold_and_train(args)
    renamed = read_documents(args.env, split=env_split(args))
    from ..analysis.robustness import copies_of, model_robustness_report  # lazy: start-up time

    if args.max_docs is not None:  # the renamed copies of the --max-docs documents: both sets cut alike
        renamed = copies_of(gold, renamed)

    model, tokenizer, options = load_model(args)
    report = model_robustness_report(model, tokenizer, gold, renamed, train, progress=not args.no_progress, **options)
    if args.output is not None:
        write_json(args.output, report.to_dict(), ensure_ascii=True)
    print(report.to_markdown())
    return 0


def run(args: argparse.Namespace) -> int:
    if getattr(args, "predictions", None) is not None:
        return run_predictions(args)
    if getattr(args, "env", None) is not None:
        return run_robustness(args)
    if getattr(args, "model", None) is not None:
        return run_model(args)
    raise UsageError("nothing to score; give --predictions FILE --gold FILE (or --model DIR --gold FILE)")


def run_predictions(args: argparse.Namespace) -> int:
    """Score a prediction file (official rows or ``envre predict``'s output) against ``--gold`` (Ign against
    ``--train``); a score of 0 is explained on stderr when the counts tell why."""
    from ..metrics import score_files  # lazy: start-up time
    from ..metrics.predictions import zero_score_reason  # lazy: start-up time
    from ..metrics.scoring import UnknownDocumentError  # lazy: start-up time

    gold, unknown = args.gold, args.allow_unknown_documents
    if args.max_docs is not None:
        raise UsageError("--max-docs limits what --model predicts; a --predictions file is scored whole")
    splits = {"gold_split": gold_split(args, args.predictions), "train_split": train_split(args)}
    try:
        scores = score_files(args.predictions, gold, args.train, allow_unknown_documents=unknown, **splits)
    except UnknownDocumentError as err:  # said with this command's switch
        raise UnknownDocumentError(err.reason, option="--allow-unknown-documents", index=err.index, doc=err.doc,
                                   field=err.field) from None
    emit(scores.to_dict(), args)
    reason = zero_score_reason(scores)
    if reason is not None:
        print(f"envre evaluate: note: F1 is 0: {reason}", file=sys.stderr)
    return 0


def emit(result: dict[str, Any], args: argparse.Namespace) -> None:
    """Write ``result`` to ``--output`` and print it as JSON (the big tables only under ``--details``)."""
    if args.output is not None:
        write_json(args.output, result)
    if not getattr(args, "details", False):
        result = {k: v for k, v in result.items() if k not in ("per_relation", "by_entity_count")}
    print(json.dumps(result, indent=2, ensure_ascii=False))


# --------------------------------------------------------------------------- splits of build folders, --max-docs


def gold_split(args: argparse.Namespace, predictions: Path | None = None) -> str | None:
    """``--split`` of ``--gold`` (:func:`~envre_hf.cli.common.chosen_split`; with ``--env`` and a ``--gold`` file it
    is ``--env``'s), or the one split of ``--gold`` holding every document ``predictions`` names (said on stderr): a
    folder of several splits is never scored as one set."""
    from ..documents.build_folder import build_splits, split_holding  # lazy: start-up time

    if args.split is not None and getattr(args, "env", None) is not None and not build_splits(args.gold):
        return None
    if args.split is not None or predictions is None or len(build_splits(args.gold)) < 2:
        return chosen_split(args.gold, args.split, owner="--gold")
    from ..metrics import read_predictions  # lazy: start-up time

    chosen = split_holding(args.gold, ((p.get("doc_id"), p.get("title")) for p in read_predictions(predictions)))
    if chosen is None:
        raise UsageError(
            f"--gold {args.gold} holds splits {', '.join(build_splits(args.gold))} and none holds every document of "
            f"{predictions}; choose one with --split NAME"
        )
    print(f"envre evaluate: note: scoring against split {chosen!r} of {args.gold}, the one holding the predictions' "
          "documents (--split chooses another)", file=sys.stderr)
    return chosen


def env_split(args: argparse.Namespace) -> str | None:
    """``--split`` of ``--env`` (a ``--gold`` build folder takes it when ``--env`` is a file)."""
    from ..documents.build_folder import build_splits  # lazy: start-up time

    if args.split is not None and not build_splits(args.env) and build_splits(args.gold):
        return None
    return chosen_split(args.env, args.split, owner="--env")


def train_split(args: argparse.Namespace) -> str | None:
    return chosen_split(args.train, args.train_split, "--train-split", "--train")


def read_gold_and_train(args: argparse.Namespace) -> tuple[list[Any], list[Any] | None]:
    """``--gold`` (its first ``--max-docs`` documents) and ``--train``, each one split of a build folder."""
    gold = read_documents(args.gold, split=gold_split(args))
    if args.max_docs is not None:
        gold = gold[: args.max_docs]
    train = read_documents(args.train, split=train_split(args)) if args.train is not None else None
    return gold, train

"""``envre attribute``: which words make a saved DocRE model predict each gold fact, and MAP(K) of those words
against the human rationales of DocRED-HWE (the study's Figure 5)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import UsageError, add_option, add_precision_argument, existing_path, non_negative_int, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..analysis.attribution import BASELINES, METHODS  # lazy: start-up time
    from ..analysis.rationale_map import EXCLUDE, RANK_BY  # lazy: start-up time

    parser.add_argument("--model", required=True, type=Path, help="a saved DocRE model folder (save_pretrained)")
    parser.add_argument("--gold", required=True, type=existing_path, help="documents with keyword rationales (DocRED-HWE dev_keys_new.json)")
    parser.add_argument(
        "--titles-from", type=existing_path, help="keep only gold documents whose title is in this file (e.g. Re-DocRED test_revised.json)"
    )
    parser.add_argument("--max-docs", type=non_negative_int, help="attribute only the first N (selected) documents")
    parser.add_argument("--train", type=existing_path, help="the model's training documents: refuse documents it was trained on")
    parser.add_argument("--allow-train-overlap", action="store_true", help="attribute training documents anyway")
    parser.add_argument("--method", choices=METHODS, default="ig", help="integrated gradients (default) or gradient x input")
    parser.add_argument("--steps", type=positive_int, default=10, help="IG interpolation points (default 10)")
    parser.add_argument("--baseline", choices=BASELINES, default="zero", help="IG baseline embedding (default zero)")
    parser.add_argument("--step-batch", type=positive_int, help="interpolation points per forward pass (default: all)")
    add_precision_argument(parser, old=("--dtype",))
    parser.add_argument("--k-max", type=positive_int, default=30, help="MAP(K) for K = 1..k-max (default 30)")
    parser.add_argument("--exclude", choices=EXCLUDE, default="pair", help="mentions not ranked: head/tail (pair) or all")
    parser.add_argument("--rank-by", choices=RANK_BY, default="signed", help="rank words by attribution or its magnitude")
    parser.add_argument("--label", help="curve label (default: the model folder's name)")
    parser.add_argument("--device", help="cpu / cuda (default: cuda when available)")
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads")
    add_option(parser, "output", "output directory (a rerun continues the run there: finished documents are kept)",
               required=True)  # fmt: skip
    add_option(parser, "overwrite", "start the run in --output over", old=("--resume",))
    add_option(parser, "progress", "no progress bar")


def run(args: argparse.Namespace) -> int:
    from ..analysis.attribution import AttributionConfig  # lazy: start-up time
    from ..analysis.attribution_run import run_attribution  # lazy: start-up time
    from ..analysis.plots import plot_map_curves  # lazy: start-up time
    from ..documents import DocumentError, read_documents  # lazy: start-up time

    if not (args.model / "config.json").is_file():
        raise UsageError(f"{args.model}: no config.json (expected a folder written by save_pretrained)")
    gold = read_documents(args.gold)
    if args.titles_from:
        keep = {d.title for d in read_documents(args.titles_from)}
        gold = [d for d in gold if d.title in keep]
    train_titles = {d.title for d in read_documents(args.train)} if args.train else None
    if not gold:
        raise UsageError(f"{args.gold}: no documents to attribute" + (f" with a title in {args.titles_from}" if args.titles_from else ""))
    if args.max_docs is not None:
        gold = gold[: args.max_docs]
    if train_titles is not None and not args.allow_train_overlap:
        from ..analysis.attribution_run import title_overlap  # lazy: start-up time

        seen = title_overlap(gold, train_titles)
        if seen:  # checked before the model is loaded: the refusal is immediate
            raise UsageError(
                f"{len(seen)} of the {len(gold)} documents to attribute are training documents of the model "
                f"({args.train}; e.g. {seen[0]!r}); use --titles-from to keep only documents it was not trained on "
                "(e.g. Re-DocRED test_revised.json for DocRED-HWE) or pass --allow-train-overlap"
            )
    if train_titles is None:
        print(
            "envre attribute: note: without --train the tool cannot check that the model never saw these documents "
            "(DocRED-HWE = DocRED dev = Re-DocRED dev + test)",
            file=sys.stderr,
        )
    import torch

    from ..models.precision import resolve_autocast  # lazy: start-up time
    from ..models.prediction import load_for_inference  # lazy: start-up time

    if args.threads:
        torch.set_num_threads(args.threads)
    # a wrong kind of model or unreadable weights: one line through envre_hf.cli.main, as every command's errors
    model, tokenizer = load_for_inference(str(args.model), args.device)
    autocast = resolve_autocast(args.precision, model.device)  # --precision means here what it means in predict
    config = AttributionConfig(method=args.method, steps=args.steps, baseline=args.baseline,
                               step_batch=args.step_batch, dtype="bfloat16" if autocast == "bf16" else "float32")
    label = args.label or args.model.resolve().name
    try:
        result = run_attribution(
            model,
            tokenizer,
            gold,
            args.output,
            config,
            label=label,
            model_name=str(args.model),
            k_max=args.k_max,
            exclude=args.exclude,
            rank_by=args.rank_by,
            resume=True,
            overwrite=args.overwrite,
            progress=not args.no_progress,
            train_titles=train_titles,
            allow_train_overlap=args.allow_train_overlap,
        )
    except DocumentError as err:
        raise err.located(None, None, file=args.gold) from None
    plot_map_curves([result.curve], args.output / "map.png")
    curve = result.curve
    shown = ", ".join(f"MAP({k})={curve.map[k - 1]:.3f}" for k in (1, 5, 10, 20, 30) if k <= len(curve.map))
    print(f"{result.documents} documents ({result.skipped} resumed), {curve.facts} facts with rationales "
          f"({curve.facts_without_rationale} without)")
    if result.facts_per_second:
        print(f"{result.facts_per_second:.2f} facts/s")
    print(shown)
    print(f"wrote {args.output}")
    return 0

"""``envre analyze``: robustness analyses of an original vs a renamed benchmark (Tables 1-5, Figure 4)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .build import add_kb_arguments, make_kb  # one way to open a KB from options
from .common import UsageError, add_option, chosen_split, existing_path, non_negative_int, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--original", type=existing_path, help="original documents (DocRED JSON / JSONL)")
    parser.add_argument("--renamed", type=existing_path, help="renamed documents: a file, or a folder written by envre build")
    add_option(parser, "split", "split of a --renamed build folder (default: its only split)")
    parser.add_argument("--pred-original", type=existing_path, help="a model's predictions on the original set (official format)")
    parser.add_argument("--pred-renamed", type=existing_path, help="the same model's predictions on the renamed set")
    parser.add_argument("--train", type=existing_path, help="training split: Ign F1 and the name-overlap table")
    add_kb_arguments(parser, required=False)  # entity popularity
    parser.add_argument(
        "--max-docs", type=non_negative_int, help="analyse only the first N documents of each set (to match envre icl --max-docs)"
    )
    parser.add_argument("--bin-width", type=positive_int, default=1, help="Figure 4: entities per bin (default 1)")
    parser.add_argument(
        "--map-curves",
        nargs="+",
        type=existing_path,
        help="map.json files of envre attribute runs: plot their MAP(K) curves side by side (OUTPUT/map_curves.png)",
    )
    add_option(parser, "output", "output directory", required=True)


def plot_saved_map_curves(paths: list[Path], output: Path) -> Path:
    """Figure 5 from saved runs: every curve of the given ``map.json`` files in one PNG (and their JSON)."""
    from ..analysis.plots import plot_map_curves  # lazy: start-up time
    from ..analysis.rationale_map import read_map_curves  # lazy: start-up time
    from ..atomic import write_json  # lazy: start-up time

    curves = [curve for path in paths for curve in read_map_curves(path)]
    write_json(output / "map_curves.json", {"curves": [c.to_dict() for c in curves]})
    return plot_map_curves(curves, output / "map_curves.png")


def run(args: argparse.Namespace) -> int:
    if args.map_curves:  # a bad map.json: one line through envre_hf.cli.main, as every command's errors
        print(f"wrote {plot_saved_map_curves(args.map_curves, args.output)}")
        if args.original is None and args.renamed is None:
            return 0
    if args.original is None or args.renamed is None:
        raise UsageError("--original and --renamed are required (or --map-curves alone)")
    from ..analysis.report import REPORT, run_analyses, write_report  # lazy: start-up time
    from ..documents import read_documents  # lazy: start-up time
    from ..metrics import read_predictions  # lazy: start-up time

    if args.output.exists() and not args.output.is_dir():
        raise UsageError(f"--output {args.output}: a file, expected a folder")
    original = read_documents(args.original)
    renamed = read_documents(args.renamed, split=chosen_split(args.renamed, args.split, owner="--renamed"))
    if args.max_docs is not None:
        original, renamed = original[: args.max_docs], renamed[: args.max_docs]
    train = read_documents(args.train) if args.train else None
    preds = {
        name: read_predictions(path) if path else None
        for name, path in (("pred_original", args.pred_original), ("pred_renamed", args.pred_renamed))
    }
    if args.max_docs is not None:  # predictions for documents past the limit are not part of this analysis
        for name, docs in (("pred_original", original), ("pred_renamed", renamed)):
            if preds[name] is not None:
                keys, titles = {d.key for d in docs}, {d.title for d in docs}
                preds[name] = [
                    p for p in preds[name] if (p["doc_id"] in keys if p.get("doc_id") is not None else p.get("title") in titles)
                ]
    kb = make_kb(args) if args.kb else None
    try:
        figures = run_analyses(original, renamed, train=train, kb=kb, bin_width=args.bin_width, **preds)
        write_report(figures, args.output)
    finally:
        if kb is not None:
            kb.close()
    for name, why in figures["not_analysed"].items():
        print(f"not analysed: {name}: {why}")
    print(f"wrote {args.output / REPORT}")
    return 0

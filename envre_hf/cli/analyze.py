"""``envre analyze``: robustness analyses of an original vs a renamed benchmark (Tables 1-5, Figure 4)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_WIKIDATA_CACHE = Path(os.environ.get("ENVRE_CACHE", Path.home() / ".cache" / "envre")) / "wikidata"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--original", required=True, type=Path, help="original documents (DocRED JSON / JSONL)")
    parser.add_argument(
        "--renamed", required=True, type=Path, help="renamed documents: a file, or a folder written by envre build"
    )
    parser.add_argument("--split", default="test", help="split to read from a renamed dataset folder (default test)")
    parser.add_argument("--pred-original", type=Path, help="a model's predictions on the original set (official format)")
    parser.add_argument("--pred-renamed", type=Path, help="the same model's predictions on the renamed set")
    parser.add_argument("--train", type=Path, help="training split: Ign F1 and the name-overlap table")
    parser.add_argument(
        "--kb",
        choices=("wikidata", "dump", "corpus"),
        help="knowledge base for entity popularity (as in envre build); omitted: popularity is not analysed",
    )
    parser.add_argument("--kb-pool", type=Path, help="corpus KB: DocRED-format file whose entities are the KB")
    parser.add_argument("--kb-index", type=Path, help="dump KB: the SQLite index of a Wikidata JSON dump")
    parser.add_argument("--kb-cache", type=Path, default=DEFAULT_WIKIDATA_CACHE, help="wikidata KB: reply cache")
    parser.add_argument("--bin-width", type=int, default=1, help="Figure 4: entities per bin (default 1)")
    parser.add_argument("--output", required=True, type=Path, help="output directory")


def load_benchmark(path: Path, split: str):
    """Documents of a DocRED-format file, or of ``data/<split>-*.parquet`` in a dataset folder."""
    from ..documents import dataset_to_documents, read_documents

    if not path.is_dir():
        return read_documents(path)
    files = sorted(str(p) for p in (path / "data").glob(f"{split}-*.parquet"))
    if not files:
        raise SystemExit(f"envre analyze: no {path}/data/{split}-*.parquet files (choose the split with --split)")
    from datasets import Dataset

    return dataset_to_documents(Dataset.from_parquet(files))


def run(args: argparse.Namespace) -> int:
    from ..analysis import analyze
    from ..analysis.report import REPORT
    from ..documents import read_documents
    from ..metrics import read_predictions

    original = read_documents(args.original)
    renamed = load_benchmark(args.renamed, args.split)
    train = read_documents(args.train) if args.train else None
    preds = {
        name: read_predictions(path) if path else None
        for name, path in (("pred_original", args.pred_original), ("pred_renamed", args.pred_renamed))
    }
    kb = None
    if args.kb:
        from .build import make_kb  # one way to open a KB from options, shared with envre build

        kb = make_kb(args)
    try:
        figures = analyze(original, renamed, args.output, train=train, kb=kb, bin_width=args.bin_width, **preds)
    finally:
        if kb is not None:
            kb.close()
    for name, why in figures["not_analysed"].items():
        print(f"not analysed: {name}: {why}")
    print(f"wrote {args.output / REPORT}")
    return 0

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
    parser.add_argument(
        "--max-docs", type=int, help="analyse only the first N documents of each set (to match envre icl --max-docs)"
    )
    parser.add_argument("--bin-width", type=int, default=1, help="Figure 4: entities per bin (default 1)")
    parser.add_argument("--output", required=True, type=Path, help="output directory")


def read_benchmark(path: Path, split: str = "test"):
    """:func:`envre_hf.documents.build_folder.read_benchmark`, with a missing split as a message (``--split``)."""
    from ..documents.build_folder import read_benchmark as read

    path = Path(path)
    try:
        return read(path, split)
    except FileNotFoundError as err:
        if not path.is_dir():
            raise
        raise SystemExit(f"envre: {err} (choose the split with --split)") from None


def run(args: argparse.Namespace) -> int:
    from ..analysis import analyze
    from ..analysis.report import REPORT
    from ..documents import read_documents
    from ..metrics import read_predictions

    original = read_documents(args.original)
    renamed = read_benchmark(args.renamed, args.split)
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

"""``envre probe``: which of a model's predictions change when only the names change (no labels needed).

Example (Re-DocRED test, offline corpus KB, names of the training split kept out of the copies)::

    envre probe --model runs/evrt-minilm --input ../shared/data/redocred/test_revised.json --kb corpus \\
        --kb-pool ../shared/data/redocred/test_revised.json --train ../shared/data/redocred/dev_revised.json \\
        --copies 5 --output runs/probe_evrt

The measures and the output folder: :mod:`envre_hf.analysis.name_reliance`. A rerun of a killed probe with the same
options continues it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .build import add_kb_arguments, make_kb
from ..documents import DocumentError
from ..documents.io import read_raw_documents
from .common import UsageError, existing_path, non_negative_int, positive_int
from .evaluate import add_inference_arguments, load_model
from .predict import add_text_arguments, document_key, is_plain_text
from .predict import read_inputs as read_text_inputs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a DocRE model folder (save_pretrained) or Hub id")
    parser.add_argument(
        "--input",
        required=True,
        type=existing_path,
        help="documents to probe: DocRED / Re-DocRED / Linked-DocRED JSON or .jsonl (labels not needed), an envre build "
        "folder, a save_to_disk dataset folder, or envre predict's text inputs (plain text, .jsonl of {text, entities?})",
    )
    add_text_arguments(parser)
    parser.add_argument("--split", help="split to read from a build or dataset folder (default: every split)")
    parser.add_argument("--max-docs", type=non_negative_int, help="probe only the first N documents")
    add_kb_arguments(parser)
    parser.add_argument(
        "--train",
        type=existing_path,
        help="the model's training documents: their names are never used in a copy (as in the benchmarks), "
        "and with --gold they give Ign F1",
    )
    parser.add_argument("--copies", type=positive_int, default=5, help="renamed copies per document, seeds 0..K-1 (default 5)")
    parser.add_argument(
        "--gold",
        type=existing_path,
        help="labelled versions of the --input documents (same keys): adds the P / R / F1 / Ign F1 / Intra / Inter "
        "table of envre evaluate --env",
    )
    parser.add_argument("--output", required=True, type=Path, help="output folder (probe.json, report.md, the plot)")
    parser.add_argument(
        "--save-predictions",
        action="store_true",
        help="also write OUTPUT/predictions/original.json and seed-<s>.json (official format, copies with doc_id)",
    )
    parser.add_argument("--top-facts", type=non_negative_int, default=20, help="most name-dependent facts listed (default 20)")
    parser.add_argument("--entity-bin", type=positive_int, default=5, help="entities per bin of the entity-count breakdown (default 5)")
    parser.add_argument("--overwrite", action="store_true", help="replace a finished or different probe in --output")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_inference_arguments(parser.add_argument_group("prediction"))


def read_inputs(args: argparse.Namespace) -> list:
    """The documents ``--input`` names, labels or not: DocRED files, build folders and saved datasets
    (:func:`~envre_hf.documents.read_documents`), or the text inputs of ``envre predict`` (plain text, or
    JSON / JSON Lines of ``{"text", "entities"?, "mentions"?}``), made documents as the pipeline makes them."""
    from ..documents import read_documents  # lazy: start-up time

    path: Path = args.input
    if path.is_file() and (is_plain_text(path) or _holds_text(path)):
        return _text_documents(args)
    docs = read_documents(path, split=args.split)
    return docs if args.max_docs is None else docs[: args.max_docs]


def _holds_text(path: Path) -> bool:
    first = next(iter(read_raw_documents(path, keep_errors=True)), None)
    return isinstance(first, dict) and "text" in first and "sents" not in first


def _text_documents(args: argparse.Namespace) -> list:
    """Text inputs through the pipeline's own preparation (entities given, or found by ``--ner``); a document
    without ``doc_id`` or title is named by where it is in the input, as ``envre predict`` names it."""
    import itertools

    from ..models.pipeline_docre import NERTagger, prepare  # lazy: start-up time (torch)

    path: Path = args.input
    if is_plain_text(path) and args.ner is None:
        raise UsageError(f"{path}: plain text needs --ner MODEL to find its entities")
    ner = NERTagger(args.ner, device=args.device) if args.ner else None
    docs = []
    for where, item in itertools.islice(read_text_inputs(path), args.max_docs):
        item = {"text": item} if isinstance(item, str) else item
        if isinstance(item, dict) and "text" in item:
            item = {**item, "doc_id": document_key(item, where)}
        try:
            docs.append(prepare(item, ner, args.cluster).document)
        except DocumentError as err:
            raise DocumentError(f"{path} {where}: {err}") from None
    return docs


def run(args: argparse.Namespace) -> int:
    """Errors propagate to :func:`envre_hf.cli.main.main`, which prints them on one line (exit status 2)."""
    from ..analysis.name_reliance import PROBE_FILE, REPORT_FILE, run_probe, with_gold_labels  # lazy: start-up time
    from ..documents import read_documents  # lazy: start-up time
    from ..renaming import RenamingConfig, RenamingPipeline, document_names  # lazy: start-up time

    docs = read_inputs(args)
    train = read_documents(args.train) if args.train is not None else None
    gold = read_documents(args.gold) if args.gold is not None else None
    if gold is not None:
        with_gold_labels(docs, gold)  # a mismatch stops the run before the model is loaded
    config = RenamingConfig(exclude_names=frozenset(document_names(train or [])))
    model, tokenizer, options = load_model(args)
    settings = {
        "model": str(args.model),
        "input": str(args.input),
        "split": args.split,
        "max_docs": args.max_docs,
        "kb": args.kb,
        "train": None if args.train is None else str(args.train),
        "gold": None if args.gold is None else str(args.gold),
        "excluded_names": len(config.exclude_names),
    }
    with make_kb(args) as kb:
        result = run_probe(
            model, tokenizer, docs, RenamingPipeline(kb, config), args.output, copies=args.copies, gold=gold, train=train,
            top=args.top_facts, entity_bin=args.entity_bin, save_predictions=args.save_predictions,
            overwrite=args.overwrite, progress=not args.no_progress, settings=settings, **options,
        )  # fmt: skip
    s = result.summary
    pct = {key: "-" if s[key] is None else f"{100 * s[key]:.2f}%" for key in ("flip_rate", "name_reliance")}
    print(
        f"{result.documents} documents x {args.copies} copies: {s['facts']} facts predicted on the originals; "
        f"flip rate {pct['flip_rate']}, name reliance {pct['name_reliance']}, {s['new_facts_per_copy']:.2f} new facts per copy"
    )
    if result.gold is not None:
        print(result.gold.to_markdown())
    print(f"wrote {args.output / REPORT_FILE} and {args.output / PROBE_FILE}")
    return 0

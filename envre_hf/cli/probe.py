"""``envre probe``: which of a model's predictions change when only the names change (no labels needed).

Example (Re-DocRED test, offline corpus KB, names of the training split kept out of the copies)::

    envre probe --model runs/evrt-minilm --input ../shared/data/redocred/test_revised.json --kb corpus \\
        --kb-pool ../shared/data/redocred/test_revised.json --train ../shared/data/redocred/dev_revised.json \\
        --copies 5 --output runs/probe_evrt

An LLM is probed with ``--backend openai|local --model NAME`` (the prompts of ``envre icl``), any Python extractor with
``--extractor module:function`` (:mod:`envre_hf.analysis.extractors`), and finished probes are set side by side with
``--compare DIR ...`` (:mod:`envre_hf.analysis.probe_comparison`). The measures and the output folder:
:mod:`envre_hf.analysis.name_reliance`. A rerun of a killed probe with the same options continues it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .build import add_kb_arguments, make_kb
from ..documents import DocumentError
from ..documents.io import read_raw_documents
from .common import UsageError, add_option, chosen_split, existing_path, non_negative_int, positive_int
from .evaluate import add_inference_arguments, load_model
from .icl import add_llm_arguments, llm_from_args
from .predict import add_text_arguments, document_key, is_plain_text
from .predict import read_inputs as read_text_inputs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", help="a DocRE model folder (save_pretrained) or Hub id; with --backend, the LLM (see --backend)"
    )
    parser.add_argument(
        "--extractor", metavar="MODULE:FUNCTION",
        help="probe a Python extractor instead: a function taking a DocRED document dict and returning triples "
        "(dicts with h_idx, t_idx, r, optional score); MODULE may be path/to/file.py",
    )  # fmt: skip
    parser.add_argument(
        "--compare", nargs="+", type=existing_path, metavar="DIR",
        help="instead of probing: set finished probe output folders side by side (table, plot, model-index) in "
        "--output",
    )  # fmt: skip
    parser.add_argument(
        "--input",
        type=existing_path,
        help="documents to probe: DocRED / Re-DocRED / Linked-DocRED JSON or .jsonl (labels not needed), an envre build "
        "folder, a save_to_disk dataset folder, or envre predict's text inputs (plain text, .jsonl of {text, entities?})",
    )
    add_text_arguments(parser)
    add_option(parser, "split", "split of a build folder (default: its only split) or of a saved dataset folder "
               "(default: every split)")  # fmt: skip
    parser.add_argument("--max-docs", type=non_negative_int, help="probe only the first N documents")
    add_kb_arguments(parser, required=False, omitted="only with --compare")
    parser.add_argument(
        "--train",
        type=existing_path,
        help="the model's training documents: their names are never used in a copy (as in the benchmarks), "
        "and with --gold they give Ign F1",
    )
    add_option(parser, "copies", "renamed copies per document, seeds 0..K-1 (default 5)")
    parser.add_argument(
        "--gold",
        type=existing_path,
        help="labelled versions of the --input documents (same keys): adds the P / R / F1 / Ign F1 / Intra / Inter "
        "table of envre evaluate --env",
    )
    add_option(parser, "output", "output folder (probe.json, report.md, the plot); a rerun continues an unfinished "
               "probe there", required=True)  # fmt: skip
    parser.add_argument(
        "--save-predictions",
        action="store_true",
        help="also write OUTPUT/predictions/original.json and seed-<s>.json (official format, copies with doc_id)",
    )
    parser.add_argument("--top-facts", type=non_negative_int, default=20, help="most name-dependent facts listed (default 20)")
    parser.add_argument("--entity-bin", type=positive_int, default=5, help="entities per bin of the entity-count breakdown (default 5)")
    add_option(parser, "overwrite", "replace a finished or different probe in --output")
    add_option(parser, "progress", "no progress bars")
    add_inference_arguments(parser.add_argument_group("prediction"))
    llm = parser.add_argument_group("an LLM as the probed system (the prompts of envre icl)")
    add_llm_arguments(llm, required=False, batch_size=False)  # --batch-size: the prediction group's


def read_inputs(args: argparse.Namespace) -> list:
    """The documents ``--input`` names, labels or not: DocRED files, build folders and saved datasets
    (:func:`~envre_hf.documents.read_documents`), or the text inputs of ``envre predict`` (plain text, or
    JSON / JSON Lines of ``{"text", "entities"?, "mentions"?}``), made documents as the pipeline makes them."""
    from ..documents import read_documents  # lazy: start-up time

    path: Path = args.input
    split = chosen_split(path, args.split)
    if path.is_file() and (is_plain_text(path) or _holds_text(path)):
        return _text_documents(args)
    docs = read_documents(path, split=split)
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


def probed_kind(args: argparse.Namespace) -> str:
    """What the options ask for: ``compare``, or the system probed (``model``, ``llm``, ``extractor``); a
    contradiction is a :class:`UsageError` (one line, exit status 2)."""
    if args.compare:
        given = [flag for flag in ("input", "model", "extractor", "backend", "kb") if getattr(args, flag) is not None]
        if given:
            flags = ", ".join("--" + g for g in given)
            raise UsageError(f"--compare reads finished probe folders: it takes no {flags}")
        return "compare"
    missing = [flag for flag in ("input", "kb") if getattr(args, flag) is None]
    if missing:
        flags = ", ".join("--" + m for m in missing)
        raise UsageError(f"the following arguments are required: {flags} (or --compare DIR ...)")
    if args.extractor is not None:
        if args.model is not None or args.backend is not None:
            raise UsageError("--extractor probes a Python function: give no --model or --backend with it")
        kind = "extractor"
    elif args.backend is not None:
        if args.model is None:
            raise UsageError("--backend needs --model: the LLM's name at the endpoint, or a local model (path, Hub id)")
        kind = "llm"
    elif args.model is not None:
        kind = "model"
    else:
        raise UsageError("one of --model, --extractor or --backend with --model is required (or --compare DIR ...)")
    if args.concurrency is not None and kind != "extractor" and args.backend != "openai":
        raise UsageError("--concurrency applies to --backend openai and --extractor only")
    if kind == "llm" and args.k > 0 and args.train is None:
        raise UsageError(f"--backend with --k {args.k} needs --train: the demonstrations are drawn from it")
    return kind


def make_system(args: argparse.Namespace, kind: str, train: list | None) -> Any:
    """The probed system of :func:`probed_kind` (a DocRE model is loaded here, an extractor imported)."""
    from ..analysis.extractors import ExtractorSystem, load_extractor  # lazy: start-up time
    from ..analysis.name_reliance import ModelSystem  # lazy: start-up time

    if kind == "extractor":
        return ExtractorSystem.from_callable(load_extractor(args.extractor), args.extractor, args.concurrency or 1)
    if kind == "llm":
        from ..icl.probing import llm_system  # lazy: start-up time

        backend, config, renamer = llm_from_args(args, train or [], args.cache or str(args.output / "responses.sqlite"))
        concurrency = (args.concurrency or 8) if args.backend == "openai" else 1
        return llm_system(backend, train or [], config, renamer, concurrency)
    model, tokenizer, options = load_model(args)
    return ModelSystem(model, tokenizer, **options)


def run(args: argparse.Namespace) -> int:
    """Errors propagate to :func:`envre_hf.cli.main.main`, which prints them on one line (exit status 2)."""
    from ..analysis import name_reliance as probe  # lazy: start-up time
    from ..documents import read_documents  # lazy: start-up time
    from ..renaming import RenamingConfig, RenamingPipeline, document_names  # lazy: start-up time

    kind = probed_kind(args)
    if kind == "compare":
        return run_compare(args)
    docs = read_inputs(args)
    train = read_documents(args.train) if args.train is not None else None
    gold = read_documents(args.gold) if args.gold is not None else None
    if gold is not None:
        probe.with_gold_labels(docs, gold)  # a mismatch stops the run before the model is loaded
    probe.claim_output(args.output, args.overwrite)  # before an LLM's reply cache is made in it
    config = RenamingConfig(exclude_names=frozenset(document_names(train or [])))
    system = make_system(args, kind, train)
    settings = {
        "system": {"kind": kind, "name": str(args.model) if kind == "model" else system.name},
        "model": None if args.model is None else str(args.model),
        "input": str(args.input),
        "split": args.split,
        "max_docs": args.max_docs,
        "kb": args.kb,
        "train": None if args.train is None else str(args.train),
        "gold": None if args.gold is None else str(args.gold),
        "excluded_names": len(config.exclude_names),
    }
    with make_kb(args) as kb:
        result = probe.probe_system(
            system, docs, RenamingPipeline(kb, config), args.output, copies=args.copies, gold=gold, train=train,
            top=args.top_facts, entity_bin=args.entity_bin, save_predictions=args.save_predictions,
            overwrite=args.overwrite, progress=not args.no_progress, settings=settings,
        )  # fmt: skip
    s = result.summary
    pct = {key: "-" if s[key] is None else f"{100 * s[key]:.2f}%" for key in ("flip_rate", "name_reliance")}
    print(
        f"{result.documents} documents x {args.copies} copies: {s['facts']} facts predicted on the originals; "
        f"flip rate {pct['flip_rate']}, name reliance {pct['name_reliance']}, {s['new_facts_per_copy']:.2f} new facts per copy"
    )
    if result.gold is not None:
        print(result.gold.to_markdown())
    print(f"wrote {args.output / probe.REPORT_FILE} and {args.output / probe.PROBE_FILE}")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    """``--compare DIR ...``: the side-by-side table, plot and model-index entries in ``--output``."""
    from ..analysis.probe_comparison import COMPARE_JSON, COMPARE_MD, MODEL_INDEX, compare_probes  # lazy: start-up time

    comparison = compare_probes(args.compare, args.output)
    print(comparison.table())
    print(f"wrote {args.output / COMPARE_MD}, {args.output / COMPARE_JSON} and {args.output / MODEL_INDEX}")
    return 0

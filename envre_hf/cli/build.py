"""``envre build``: rename a DocRED-format split with a knowledge base into a dataset folder or Hub repo
(docs/renaming.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .common import UsageError, add_option, existing_path, positive_int

DEFAULT_WIKIDATA_CACHE = Path(os.environ.get("ENVRE_CACHE", Path.home() / ".cache" / "envre")) / "wikidata"
#: File-name parts that name a split, and the split they give (DocRED's "dev" is the Hub's "validation").
_SPLIT_NAMES = {"train": "train", "dev": "validation", "validation": "validation", "test": "test"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", required=True, type=existing_path, help="DocRED / Re-DocRED / Linked-DocRED JSON or .jsonl")
    add_kb_arguments(parser)
    parser.add_argument(
        "--exclude-names-from",
        nargs="+",
        action="extend",
        default=[],
        type=existing_path,
        metavar="FILE",
        help="never use these names: another build's names_used.json (or its folder) or a DocRED file "
        "(e.g. the training split)",
    )
    add_option(parser, "copies", "renamed copies per document, seeds 0..N-1 (default 5)", old=("--seeds",))
    add_option(parser, "output", "dataset folder to write (one split per run)", required=True)
    add_option(parser, "split", "split name in the dataset (default: from the input file name: test_revised.json -> "
               "test, dev_revised.json -> validation)")  # fmt: skip
    add_option(parser, "overwrite", "replace the split even if it was built from another input / copies / KB / "
               "config (a rerun of the same build finishes or repeats it)")  # fmt: skip
    parser.add_argument(
        "--on-error",
        choices=("fail", "skip"),
        default="fail",
        help="fail: stop at the first bad document; skip: list it in errors/<split>.jsonl (default: fail)",
    )
    parser.add_argument("--fix-leaks", action="store_true", help="renaming: also replace leaked original names")
    parser.add_argument("--num-proc", type=positive_int, default=1, help="worker processes (default 1)")
    parser.add_argument("--export-json", action="store_true", help="also write json/<split>.json in DocRED JSON")
    parser.add_argument("--pretty-name", help="dataset card title (default: Env-Re-DocRED or Env-DocRED from the input)")
    parser.add_argument("--license", default="mit", help="dataset card license (default: mit, as DocRED and Re-DocRED)")
    parser.add_argument(
        "--push-to-hub",
        metavar="REPO",
        help="publish the folder as this dataset repo (e.g. envre/env_redocred); HF_ENDPOINT and HF_TOKEN apply",
    )
    parser.add_argument("--private", action="store_true", help="create the Hub repo as private")
    add_option(parser, "progress", "no progress bar")


def add_kb_arguments(
    parser: argparse.ArgumentParser, required: bool = True, omitted: str = "entity popularity is not analysed"
) -> None:
    """The options :func:`make_kb` reads (``envre build``; ``envre analyze`` and ``envre probe``: optional, and
    ``omitted`` says what its absence means)."""
    parser.add_argument(
        "--kb",
        required=required,
        choices=("wikidata", "dump", "corpus"),
        help="wikidata: Wikidata over HTTP (cached); dump: an index made by wikidata_dump.index_dump; "
        "corpus: offline KB drawn from the documents of --kb-pool"
        + ("" if required else f"; omitted: {omitted}"),
    )
    parser.add_argument("--kb-pool", type=existing_path, help="corpus KB: DocRED-format file whose entities are the KB")
    parser.add_argument("--kb-index", type=existing_path, help="dump KB: the SQLite index of a Wikidata JSON dump")
    parser.add_argument(
        "--kb-cache", type=Path, default=DEFAULT_WIKIDATA_CACHE, help="wikidata KB: reply cache (default: %(default)s)"
    )
    parser.add_argument("--wikidata-api-url", help="wikidata KB: action API of a mirror (default: Wikidata's)")
    parser.add_argument("--wikidata-sparql-url", help="wikidata KB: SPARQL endpoint of a mirror (default: Wikidata's)")


def split_name(input_path: Path, explicit: str | None) -> str:
    if explicit:
        return explicit
    for part in input_path.name.lower().replace(".", "_").split("_"):
        if part in _SPLIT_NAMES:
            return _SPLIT_NAMES[part]
    raise UsageError(f"cannot tell the split from {input_path.name!r}; pass --split NAME")


def make_kb(args: argparse.Namespace):
    """The knowledge base the options select."""
    if args.kb == "corpus":
        if args.kb_pool is None:
            raise UsageError("--kb corpus needs --kb-pool FILE (a DocRED-format file)")
        from ..documents import read_documents  # lazy: start-up time
        from ..kb.corpus import CorpusKB  # lazy: start-up time

        return CorpusKB(read_documents(args.kb_pool))
    from ..kb.linked import PrecomputedLinks  # lazy: start-up time

    if args.kb == "dump":
        if args.kb_index is None:
            raise UsageError("--kb dump needs --kb-index FILE (see envre_hf.kb.wikidata_dump.index_dump)")
        from ..kb.wikidata_dump import WikidataDumpKB  # lazy: start-up time

        return PrecomputedLinks(WikidataDumpKB(args.kb_index))
    from ..kb.wikidata_http import WIKIDATA_API_URL, WIKIDATA_SPARQL_URL, WikidataHTTPKB  # lazy: start-up time

    return PrecomputedLinks(
        WikidataHTTPKB(
            args.kb_cache,
            api_url=args.wikidata_api_url or WIKIDATA_API_URL,
            sparql_url=args.wikidata_sparql_url or WIKIDATA_SPARQL_URL,
        )
    )


def run(args: argparse.Namespace) -> int:
    from ..kb.base import KnowledgeBaseError  # lazy: start-up time
    from ..renaming import RenamingConfig, RenamingPipeline  # lazy: start-up time
    from ..renaming.builder import BuildConfig, build_split, check_split_name  # lazy: start-up time
    from ..renaming.hub_upload import push_to_hub  # lazy: start-up time
    from ..renaming.isolation import load_excluded_names  # lazy: start-up time
    from ..renaming.card import default_pretty_name, statistics_markdown  # lazy: start-up time

    if not args.input.is_file():
        raise UsageError(f"--input {args.input}: expected a document file, got a folder")
    split = check_split_name(split_name(args.input, args.split))  # before anything is written
    exclude: set[str] = set()
    for path in args.exclude_names_from:
        exclude |= load_excluded_names(path)
    renaming_config = RenamingConfig(exclude_names=frozenset(exclude), fix_leaks=args.fix_leaks)
    config = BuildConfig(
        output_dir=args.output,
        split=split,
        seeds=tuple(range(args.copies)),
        on_error=args.on_error,
        overwrite=args.overwrite,
        export_json=args.export_json,
        num_proc=args.num_proc,
        progress=not args.no_progress,
    )
    card = {
        "pretty_name": args.pretty_name or default_pretty_name(args.input),
        "license": args.license,
        "repo_id": args.push_to_hub,
    }
    with make_kb(args) as kb:
        pipeline = RenamingPipeline(kb, renaming_config)
        try:
            result = build_split(
                pipeline,
                args.input,
                config,
                kb_name=kb.name,
                kb_snapshot=kb.snapshot_id(),
                renaming_config=renaming_config,
                card=card,
            )
        except KnowledgeBaseError as err:
            raise KnowledgeBaseError(
                f"the knowledge base failed: {err}; run the same build again (Wikidata replies so far are cached)"
            ) from err
    n_done = result.statistics["renamed_documents"]
    rate = n_done / result.seconds if result.seconds else 0.0
    print(f"\nBuilt split {split!r} of {result.output_dir}: {n_done} renamed documents in {result.seconds:.1f}s "
          f"({rate:.0f} docs/s).")
    print("\n".join(statistics_markdown(split, result.statistics)))
    if result.failures:
        print(f"{len(result.failures)} (document, seed) pairs not renamed: see {result.output_dir}/errors/{split}.jsonl")
    if args.push_to_hub:
        info = push_to_hub(result.output_dir, args.push_to_hub, private=args.private)  # HubError unless confirmed
        print(f"Pushed commit {info.oid} to {args.push_to_hub} ({info.commit_url})")
    return 0

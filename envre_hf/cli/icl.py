"""``envre icl``: evaluate a chat LLM on DocRE with in-context learning (optionally DA and CG)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import add_option, chosen_split, existing_path, model_location, non_negative_int, positive_float
from .common import positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--test", required=True, type=existing_path, help="test documents: DocRED JSON / JSONL / Linked-DocRED, or an envre build folder"
    )
    add_option(parser, "split", "split of a --test build folder (default: its only split)")
    parser.add_argument("--train", required=True, type=existing_path, help="training documents: demonstrations, Ign F1, DA's corpus KB")
    parser.add_argument("--model", required=True, help="model name at the endpoint, or a local model path/name")
    add_llm_arguments(parser)
    parser.add_argument("--max-docs", type=non_negative_int, default=None, help="evaluate only the first N test documents")
    add_option(parser, "output", "output directory (a rerun continues the run there: finished documents are kept)",
               required=True)  # fmt: skip
    add_option(parser, "overwrite", "start the run in --output over (its reply cache is kept)", old=("--resume",))
    add_option(parser, "progress", "no progress bar")


def add_llm_arguments(parser: argparse.ArgumentParser, required: bool = True, batch_size: bool = True) -> None:
    """The options of a chat LLM answering the study's ICL prompts, shared by every command that runs one (the caller
    adds ``--model``, ``--train`` and ``--output``; ``batch_size=False``: and its own ``--batch-size``): where it
    answers, how prompts are built, requests at once."""
    parser.add_argument("--backend", choices=("openai", "local"), required=required,
                        help="an OpenAI-compatible endpoint (--base-url) or a local transformers model")
    parser.add_argument(
        "--base-url", default="https://api.openai.com/v1",
        help="OpenAI-compatible API root (vLLM/TGI: http://HOST:PORT/v1; HF: https://router.huggingface.co/v1)",
    )
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    parser.add_argument("--k", type=int, choices=(0, 1, 2, 3), default=1, help="demonstrations per prompt (default 1)")
    parser.add_argument("--da", action="store_true", help="demonstration augmentation: add each demo's renamed copy")
    parser.add_argument("--cg", action="store_true", help="consistency guidance in the instruction")
    parser.add_argument("--seed", type=int, default=0, help="demonstration draw and renaming seed (default 0)")
    parser.add_argument("--max-tokens", type=positive_int, default=512, help="completion length limit (default 512)")
    parser.add_argument("--concurrency", type=positive_int, default=None,
                        help="requests in flight at the endpoint (default 8; the local backend uses --batch-size; "
                        "envre probe --extractor: calls of the function at once, default 1)")
    if batch_size:
        parser.add_argument("--batch-size", type=positive_int, default=8,
                            help="prompts the local backend generates at once (default 8)")
    parser.add_argument("--timeout", type=positive_float, default=None,
                        help="seconds an endpoint may take for one completion (default ENVRE_ICL_TIMEOUT, else 120)")
    parser.add_argument("--cache", default=None, help="response cache (SQLite; default OUTPUT/responses.sqlite)")


def llm_from_args(args: argparse.Namespace, train: list, cache: str) -> tuple[Any, Any, Any]:
    """``(backend, prompt config, DA renamer or None)`` as the options of :func:`add_llm_arguments` and ``--model``
    ask; ``train``: the demonstrations (and DA's corpus KB), ``cache``: the reply cache's file."""
    from ..icl import LocalBackend, OpenAIChatBackend, PromptConfig  # lazy: start-up time

    renamer = None
    if args.da:
        from ..kb.corpus import CorpusKB  # lazy: start-up time
        from ..renaming import RenamingPipeline  # lazy: start-up time

        renamer = RenamingPipeline(CorpusKB(train)).rename
    if args.backend == "openai":
        backend = OpenAIChatBackend(args.model, base_url=args.base_url, api_key_env=args.api_key_env,
                                    max_tokens=args.max_tokens, timeout=args.timeout, cache_path=cache)
    else:
        backend = LocalBackend.from_pretrained(model_location(args.model), max_new_tokens=args.max_tokens,
                                               cache_path=cache, batch_size=args.batch_size)
    return backend, PromptConfig(k=args.k, da=args.da, cg=args.cg, seed=args.seed), renamer


def run(args: argparse.Namespace) -> int:
    from ..documents import read_documents  # lazy: start-up time
    from ..icl import run_icl  # lazy: start-up time
    from ..icl.runner import check_output_dir  # lazy: start-up time

    out: Path = args.output
    check_output_dir(out, resume=True)  # a file, a link: refused before documents and model are loaded
    test = read_documents(args.test, split=chosen_split(args.test, args.split, owner="--test"))
    train = read_documents(args.train)
    backend, config, renamer = llm_from_args(args, train, args.cache or str(out / "responses.sqlite"))
    # ICLRunError / BackendError reach envre_hf.cli.main: one line on stderr, exit status 2
    result = run_icl(test, train, backend, out, config, renamer=renamer, max_docs=args.max_docs, resume=True,
                     overwrite=args.overwrite, concurrency=args.concurrency or 8, progress=not args.no_progress)
    totals = result.parse_summary["totals"]
    print(f"{result.documents} documents ({result.skipped} resumed), {len(result.predictions)} predictions")
    print("parse: " + ", ".join(f"{k}={v}" for k, v in totals.items()))
    if result.scores is not None:
        head = {k: result.scores[k] for k in ("precision", "recall", "f1", "ign_f1", "intra_f1", "inter_f1")}
        print(json.dumps({k: (round(v * 100, 2) if v is not None else None) for k, v in head.items()}))
    print(f"wrote {out}")
    return 0

"""``envre``: one entry point, one module per subcommand.

Each subcommand lives in ``envre_hf/cli/<name>.py`` and exposes ``add_arguments(parser)`` and
``run(args) -> int``. Modules are imported only when their subcommand runs, so ``envre --help``
stays fast and a missing optional dependency of one command never breaks another.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "build": "Build renamed benchmarks (Env-DocRED / Env-Re-DocRED) with a knowledge base.",
    "train": "Train a DocRE model, with or without EVRT (runs trainer/run_docre.py).",
    "evaluate": "Score predictions or a model against gold documents (docre_f1).",
    "icl": "In-context learning evaluation with an LLM (DA / CG prompts).",
    "analyze": "Robustness analyses of original vs renamed benchmarks and predictions.",
    "attribute": "Word attributions of a model's gold facts and their MAP(K) against human rationales (DocRED-HWE).",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envre",
        description="envre-hf: robustness of document-level relation extraction to entity name variations.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if not argv or argv[0] not in SUBCOMMANDS:
        args = parser.parse_args(argv)  # prints help / errors for unknown commands
        parser.print_help()
        return 2
    name = argv[0]
    module = importlib.import_module(f"envre_hf.cli.{name}")
    sub = argparse.ArgumentParser(prog=f"envre {name}", description=SUBCOMMANDS[name])
    module.add_arguments(sub)
    args = sub.parse_args(argv[1:])
    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

"""``envre``: one module per subcommand (``add_arguments(parser)``, ``run(args)``; imported only when it runs) and
one error path: an expected error is one line on stderr (exit 2), a bug one line (exit 1); ``--debug`` or
``ENVRE_DEBUG=1`` shows the traceback."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

SUBCOMMANDS = {
    "build": "Build renamed benchmarks (Env-DocRED / Env-Re-DocRED) with a knowledge base.",
    "train": "Train a DocRE model, with or without EVRT (runs examples/run_docre.py).",
    "evaluate": "Score predictions or a model against gold documents (docre_f1).",
    "predict": "Relations from your own documents (DocRED JSON, text with entities, or raw text and an NER model).",
    "icl": "In-context learning evaluation with an LLM (DA / CG prompts).",
    "analyze": "Robustness analyses of original vs renamed benchmarks and predictions.",
    "probe": "Which of a model's predictions change when only the entity names change (any documents, no labels needed).",
    "attribute": "Word attributions of a model's gold facts and their MAP(K) against human rationales (DocRED-HWE).",
    "push-metric": "Publish the docre_f1 metric as a Hub Space that evaluate.load() reads without envre-hf.",
}
#: Subcommands that forward their arguments untouched (``--debug`` is then only read before the command).
_FORWARDING = {"train"}
EXIT_BAD_INPUT = 2
EXIT_BUG = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envre",
        allow_abbrev=False,
        description="envre-hf: robustness of document-level relation extraction to entity name variations.",
        epilog="Errors are one line on stderr (exit status 2); envre --debug COMMAND ... (or ENVRE_DEBUG=1) "
        "shows the traceback.",
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, add_help=False, allow_abbrev=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("ENVRE_DEBUG", "").strip().lower() not in ("", "0", "false", "no")
    while argv and argv[0] == "--debug":
        debug = True
        argv.pop(0)
    if not argv or argv[0] in ("-h", "--help"):
        build_parser().print_help()
        return 0 if argv else EXIT_BAD_INPUT
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"envre: error: unknown command {name!r} (choose from {', '.join(SUBCOMMANDS)}; see envre --help)",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if name not in _FORWARDING and "--debug" in rest:
        debug = True
    return run_subcommand(name, rest, debug=debug)


def run_subcommand(name: str, argv: list[str], *, debug: bool = False) -> int:
    """Parse ``argv`` for subcommand ``name`` and run it inside the one error handler."""
    from .common import ArgumentParser, error_message  # lazy: start-up time

    prog = f"envre {name}"
    sub = None
    try:
        module = importlib.import_module(f"envre_hf.cli.{name.replace('-', '_')}")
        if name in _FORWARDING:  # its options belong to another parser (train: HfArgumentParser)
            args = argparse.Namespace(forwarded=argv)
        else:
            sub = ArgumentParser(prog=prog, description=SUBCOMMANDS[name])
            module.add_arguments(sub)
            sub.add_argument("--debug", action="store_true", help="show the traceback of an error")
            args = sub.parse_args(argv)
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the one place where errors become messages
        if debug:
            raise
        message = error_message(err, sub)
        if message is None:
            from ..redaction import redact  # lazy: start-up time

            print(f"{prog}: internal error: {type(err).__name__}: {redact(' '.join(str(err).split()))} "
                  f"(a bug; rerun with envre --debug {name} ... for the traceback)", file=sys.stderr)
            return EXIT_BUG
        print(f"{prog}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())

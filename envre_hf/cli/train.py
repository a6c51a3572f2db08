"""``envre train``: runs the training entry point of ``examples/run_docre.py`` with the given arguments.

Every argument after ``train`` is forwarded unchanged to ``HfArgumentParser`` (``envre train --help``
lists them all), e.g. ``envre train --model_name_or_path DIR --train_file train.json --output_dir out --evrt``.
For several processes use ``accelerate launch examples/run_docre.py ...`` with the same arguments.
A bad or unknown option is a one-line usage error (exit status 2), like every other subcommand's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .common import UsageError, model_location


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_docre_args", nargs=argparse.REMAINDER, help="arguments of examples/run_docre.py")

    # The options belong to HfArgumentParser (run_docre's dataclasses), so this parser must not try to
    # interpret them (argparse would reject "--train_file ..." and swallow "--help"): forward them as they are.
    def forward(args: list[str] | None = None, namespace: argparse.Namespace | None = None):
        namespace = namespace if namespace is not None else argparse.Namespace()
        namespace.run_docre_args = list(sys.argv[2:] if args is None else args)
        return namespace, []

    parser.parse_known_args = forward  # type: ignore[method-assign]


@contextmanager
def _usage_errors() -> Iterator[None]:
    """HfArgumentParser's argparse errors as :class:`UsageError` (one line) instead of usage text + exit."""
    from transformers import HfArgumentParser

    def error(self: argparse.ArgumentParser, message: str):
        raise UsageError(f"{message} (see envre train --help)")

    had_own = "error" in HfArgumentParser.__dict__
    previous = HfArgumentParser.__dict__.get("error")
    HfArgumentParser.error = error  # type: ignore[method-assign]
    try:
        yield
    finally:
        if had_own:
            HfArgumentParser.error = previous  # type: ignore[method-assign]
        else:
            del HfArgumentParser.error


def run(args: argparse.Namespace) -> int:
    from ..training.run import parse_args, run as run_training  # lazy: start-up time

    argv = list(args.run_docre_args)
    with _usage_errors():
        try:
            model_args, data_args, training_args = parse_args(argv)
        except ValueError as err:
            if "not used by the HfArgumentParser" in str(err):
                unknown = str(err).split(":", 1)[-1].strip()
                raise UsageError(f"unknown option(s) {unknown} (see envre train --help)") from None
            raise
    model_args.model_name_or_path = model_location(model_args.model_name_or_path)
    run_training(model_args, data_args, training_args)
    return 0

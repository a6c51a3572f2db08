"""``envre train``: runs the training entry point of ``trainer/run_docre.py`` with the given arguments.

Every argument after ``train`` is forwarded unchanged to ``HfArgumentParser`` (``envre train --help``
lists them all), e.g. ``envre train --model_name_or_path DIR --train_file train.json --output_dir out --evrt``.
For several processes use ``accelerate launch trainer/run_docre.py ...`` with the same arguments.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_docre_args", nargs=argparse.REMAINDER, help="arguments of trainer/run_docre.py")

    # The options belong to HfArgumentParser (run_docre's dataclasses), so this parser must not try to
    # interpret them (argparse would reject "--train_file ..." and swallow "--help"): forward them as they are.
    def forward(args: list[str] | None = None, namespace: argparse.Namespace | None = None):
        namespace = namespace if namespace is not None else argparse.Namespace()
        namespace.run_docre_args = list(sys.argv[2:] if args is None else args)
        return namespace, []

    parser.parse_known_args = forward  # type: ignore[method-assign]


def run(args: argparse.Namespace) -> int:
    from ..training.run import main

    main(list(args.run_docre_args))
    return 0

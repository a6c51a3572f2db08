"""``envre train``: ``examples/run_docre.py``'s training, every argument after ``train`` forwarded unchanged to
``HfArgumentParser`` (``envre train --help``; several processes: ``accelerate launch examples/run_docre.py``)."""

from __future__ import annotations

import argparse

from .common import ArgumentParser, UsageError, model_location


def _parser_class() -> type:
    """``HfArgumentParser`` with :class:`ArgumentParser`'s one-line errors and no abbreviations (``--evr``)."""
    from transformers import HfArgumentParser

    class Parser(ArgumentParser, HfArgumentParser):
        def error(self, message: str):  # type: ignore[override]
            raise UsageError(f"{message} (see envre train --help)")

    return Parser


def run(args: argparse.Namespace) -> int:
    """``args.forwarded``: the arguments after ``train``, for run_docre's parser (see :mod:`envre_hf.cli.main`)."""
    from ..training.run import parse_args, run as run_training  # lazy: start-up time

    try:
        model_args, data_args, training_args = parse_args(list(args.forwarded), parser_class=_parser_class())
    except ValueError as err:
        if "not used by the HfArgumentParser" in str(err):
            unknown = str(err).split(":", 1)[-1].strip()
            raise UsageError(f"unknown option(s) {unknown} (see envre train --help)") from None
        raise
    model_args.model_name_or_path = model_location(model_args.model_name_or_path)
    run_training(model_args, data_args, training_args)
    return 0

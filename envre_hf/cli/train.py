"""``envre train``: ``examples/run_docre.py``'s training, every argument after ``train`` forwarded unchanged to
``HfArgumentParser`` (``envre train --help``; several processes: ``accelerate launch examples/run_docre.py``).

Its options are the fields of the run's dataclasses and keep their names (``--output_dir``, ``--bf16``: those of
transformers' ``TrainingArguments``); ``--help`` lists the library's own first (model, data, EVRT), then the
Trainer's."""

from __future__ import annotations

import argparse
import dataclasses

from .common import ArgumentParser, UsageError, model_location

USAGE = ("envre train --model_name_or_path MODEL --train_file FILE --output_dir DIR [OPTION VALUE ...]\n"
         "       envre train CONFIG.json|CONFIG.yaml")
DESCRIPTION = ("Train a DocRE model, with or without EVRT (examples/run_docre.py; docs/training.md). Every option is "
               "also accepted with dashes (--output-dir).")
#: Help groups of the run's own dataclasses, by class name, in the order ``--help`` shows them.
GROUP_TITLES = {
    "ModelArguments": "model (envre-hf)",
    "DataArguments": "data (envre-hf)",
    "EVRTTrainingArguments": "EVRT and per-module learning rates (envre-hf)",
}
TRAINER_TITLE = "transformers Trainer (TrainingArguments; https://huggingface.co/docs/transformers/main_classes/trainer)"


def group_options(parser: argparse.ArgumentParser, dataclass_types: list[type]) -> None:
    """Put every option of ``parser`` (an ``HfArgumentParser`` of ``dataclass_types``) in a help group: each of the
    library's dataclasses its own, in order, and the fields a ``TrainingArguments`` subclass inherits last."""
    from transformers import TrainingArguments

    trainer = {f.name for f in dataclasses.fields(TrainingArguments)}
    groups = []
    for dtype in dataclass_types:
        names = {f.name for f in dataclasses.fields(dtype)}
        own = names - trainer if issubclass(dtype, TrainingArguments) else names
        groups.append((parser.add_argument_group(GROUP_TITLES.get(dtype.__name__, dtype.__name__)), own))
    groups.append((parser.add_argument_group(TRAINER_TITLE), trainer))
    options = parser._optionals._group_actions  # argparse keeps each group's options here
    for action in list(options):
        group = next((group for group, names in groups if action.dest in names), None)
        if group is not None:
            options.remove(action)
            group._group_actions.append(action)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """One spelling per option in ``--help`` (the underscore one; the dashed twin works too) and no
    ``(default: None)``: about half the lines of ``HfArgumentParser``'s."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            return super()._format_action_invocation(action)
        if action.nargs == 0:
            return action.option_strings[0]
        return f"{action.option_strings[0]} {self._format_args(action, self._get_default_metavar_for_optional(action))}"

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, "", []):
            return action.help
        return super()._get_help_string(action)


def _parser_class() -> type:
    """``HfArgumentParser`` named ``envre train``, its help grouped (:func:`group_options`), with
    :class:`ArgumentParser`'s one-line errors and no abbreviations (``--evr``)."""
    from transformers import HfArgumentParser

    class Parser(ArgumentParser, HfArgumentParser):
        def __init__(self, dataclass_types, **kwargs):
            kwargs = {"prog": "envre train", "usage": USAGE, "description": DESCRIPTION,
                      "formatter_class": HelpFormatter, **kwargs}
            super().__init__(dataclass_types, **kwargs)
            group_options(self, list(self.dataclass_types))

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

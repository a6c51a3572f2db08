"""One vocabulary across the ``envre`` subcommands (issue 44): each idea of ``VOCABULARY`` (output, precision,
progress, overwrite, split, copies) is spelt one way in every subcommand that has it, made by ``add_option``; its
old spellings still work for a release, warn once and are hidden; ``envre train`` keeps the Trainer's names and
its ``--help`` names itself and shows the library's groups before the Trainer's."""

from __future__ import annotations

import argparse
import importlib

import pytest

from envre_hf.cli.common import IDEA_ATTRIBUTE, VOCABULARY, ArgumentParser, UsageError, _OldSpellingAction
from envre_hf.cli.main import _FORWARDING, SUBCOMMANDS, main


def _parser(name: str) -> ArgumentParser:
    parser = ArgumentParser(prog=f"envre {name}")
    importlib.import_module(f"envre_hf.cli.{name.replace('-', '_')}").add_arguments(parser)
    return parser


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser but the forwarding ones (``train``: tested through its own parser below)."""
    return {name: _parser(name) for name in SUBCOMMANDS if name not in _FORWARDING}


def _train_parser() -> argparse.ArgumentParser:
    from envre_hf.cli.train import _parser_class
    from envre_hf.training.run import DataArguments, EVRTTrainingArguments, ModelArguments

    return _parser_class()((ModelArguments, DataArguments, EVRTTrainingArguments))


def vocabulary_problems(parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """Every option of ``parsers`` known by a spelling of an idea of :data:`VOCABULARY` that is not the idea's one
    spelling made by ``add_option``, or one of its old spellings as a hidden alias; and every idea spelt two ways
    across the commands."""
    problems, used = [], {idea: set() for idea in VOCABULARY}
    for command, parser in parsers.items():
        for action in parser._actions:
            for idea, spec in VOCABULARY.items():
                if not set(action.option_strings) & spec.spellings():
                    continue
                if isinstance(action, _OldSpellingAction):
                    if action.option_strings[0] not in {o.flag for o in spec.old} or action.help != argparse.SUPPRESS:
                        problems.append(f"envre {command} {action.option_strings}: not a hidden old spelling of {idea}")
                    continue
                used[idea].add(tuple(action.option_strings))
                if action.option_strings != [spec.flag] or getattr(action, IDEA_ATTRIBUTE, None) != idea:
                    problems.append(f"envre {command} spells {idea} {action.option_strings}, not add_option's {spec.flag}")
    problems += [f"{idea} is spelt {sorted(spellings)}" for idea, spellings in used.items() if len(spellings) > 1]
    return problems


def test_every_subcommand_spells_each_shared_idea_the_one_way():
    parsers = _parsers()
    assert vocabulary_problems(parsers) == []
    having = {idea: [c for c, p in parsers.items() if VOCABULARY[idea].flag in p._option_string_actions]
              for idea in VOCABULARY}
    assert all(len(commands) >= 2 for commands in having.values()), having  # each idea is shared, or not one


def test_the_check_catches_a_command_that_drifts():
    """A command adding an idea's option by hand, under another spelling, or with a visible old spelling fails."""
    parsers = _parsers()
    drifted = _parser("analyze")
    drifted.add_argument("--no-tqdm", action="store_true")  # progress, spelt its own way
    by_hand = _parser("push-metric")
    by_hand.add_argument("--output", help="made without add_option")
    old_visible = _parser("push-metric")
    old_visible.add_argument("--seeds", type=int)
    problems = vocabulary_problems({**parsers, "analyze": drifted, "x": by_hand, "y": old_visible})
    assert sorted(problems) == sorted([
        "envre analyze spells progress ['--no-tqdm'], not add_option's --no-progress",
        "envre x spells output ['--output'], not add_option's --output",
        "envre y spells copies ['--seeds'], not add_option's --copies",
        "progress is spelt [('--no-progress',), ('--no-tqdm',)]",
        "copies is spelt [('--copies',), ('--seeds',)]",
    ])


def test_envre_train_keeps_the_trainer_spellings_and_no_other():
    parser = _train_parser()
    for idea, spec in VOCABULARY.items():
        for flag in spec.train:
            assert flag in parser._option_string_actions, (idea, flag)
        spelt = {a.option_strings[0] for a in parser._actions if set(a.option_strings) & spec.spellings()}
        assert spelt <= set(spec.train), (idea, spelt)


@pytest.mark.parametrize("command", [c for c in SUBCOMMANDS if c not in _FORWARDING])
def test_old_spellings_work_warn_once_and_are_hidden(command, capsys):
    parser = _parser(command)
    for action in parser._actions:
        action.required = False  # parse the option alone
    old = [a for a in parser._actions if isinstance(a, _OldSpellingAction)]
    for action in old:
        spelling = action.spelling
        values = list(spelling.values) if spelling.values else [None] if spelling.nargs == 0 else ["2"]
        for value in values:
            given = [action.option_strings[0]] + ([] if value is None else [value])
            got = parser.parse_args(given)
            mapped = getattr(got, action.dest)
            new = [] if spelling.said else action.new_spelling(mapped).split()
            assert vars(got) == vars(parser.parse_args(new)), given
            err = capsys.readouterr().err.splitlines()
            assert err == [f"envre {command}: warning: {action.advice(given[0], mapped)}"], err
            assert "deprecated" in err[0] and (spelling.said or " ".join(new)) in err[0]
        assert action.option_strings[0] not in parser.format_help()


@pytest.mark.parametrize("command, argv", [
    ("evaluate", ["--bf16", "--precision", "fp32"]),
    ("evaluate", ["--precision", "auto", "--bf16", "force"]),
    ("icl", ["--resume", "--overwrite"]),
    ("attribute", ["--overwrite", "--resume"]),
    ("build", ["--copies", "3", "--seeds", "2"]),
])
def test_an_old_spelling_the_new_one_contradicts_is_one_error(command, argv, capsys):
    parser = _parser(command)
    for action in parser._actions:
        action.required = False
    with pytest.raises(UsageError, match=r"^--\S+ and --\S+( \S+)? disagree: give one of them"):
        parser.parse_args(argv)
    assert capsys.readouterr().err == ""  # no warning before the error: one line


def test_envre_train_help_names_itself_and_shows_the_library_groups_first(capsys):
    from envre_hf.cli.train import GROUP_TITLES, TRAINER_TITLE

    with pytest.raises(SystemExit) as done:
        main(["train", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: envre train ")
    assert len(out.split("\n\n")[0].splitlines()) <= 3  # the usage, not every option again
    where = [out.index(f"\n{title}:\n") for title in (*GROUP_TITLES.values(), TRAINER_TITLE)]
    assert where == sorted(where)
    library, trainer = out[: where[-1]], out[where[-1]:]
    for flag in ("--model_name_or_path", "--train_file", "--evrt_alpha", "--classifier_learning_rate"):
        assert f"  {flag} " in library and f"  {flag} " not in trainer
    for flag in ("--output_dir", "--learning_rate", "--bf16", "--resume_from_checkpoint"):
        assert f"  {flag} " in trainer and f"  {flag} " not in library

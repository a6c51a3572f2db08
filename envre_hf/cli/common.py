"""What every subcommand shares: the usage error, argument types that refuse nonsense, and the one-line
message that :func:`envre_hf.cli.main.main` prints for every expected error (exit status 2)."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..failures import Failure, remedy_of


class UsageError(Exception):
    """A bad argument or option combination: one line on stderr, exit status 2."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad argument raises :class:`UsageError` (one line) instead of printing usage and exiting,
    and no abbreviations (``--seed 3`` is an error, never ``--seeds 3``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        """argparse's, then one warning line on stderr per earlier spelling used (:func:`add_option`), or one error
        line when a later option contradicts it."""
        namespace, rest = super().parse_known_args(args, namespace)
        seen = vars(namespace).pop(_OLD_SPELLINGS_SEEN, [])
        for option, value, action in seen:
            if getattr(namespace, action.dest) != value:
                self.error(action.disagreement(option, getattr(namespace, action.dest)))
        for line in dict.fromkeys(action.advice(option, value) for option, value, action in seen):
            print(f"{self.prog}: warning: {line}", file=sys.stderr)
        return namespace, rest


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (``--seeds``, ``--num-proc``, ``--batch-size``...)."""
    return _int(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0 (``--max-docs``: never a Python slice from the end)."""
    return _int(text, 0)


def positive_float(text: str) -> float:
    """An argparse type: a number > 0 (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def _int(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text}")
    return value


def existing_path(text: str) -> Path:
    """An argparse type: a file or folder that exists (the error names it before any work starts)."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder")
    return path


def model_location(value: str | os.PathLike, what: str = "model") -> str:
    """``value`` when it is a local folder or a Hub id the Hub has (or the Hub cache holds: its snapshot folder);
    ``what`` names it in the errors (``--ner``).

    A Hub id is checked with one request of a few seconds rather than transformers' minute of retries; with
    ``HF_HUB_OFFLINE=1`` or no Hub in reach, only what the Hub cache holds is accepted.
    """
    text = str(value)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{what} {text}: expected a model folder (config.json, model.safetensors), got a file")
        if (path / "config.json").is_file():  # transformers' own reading of it names no file
            from ..documents.io import read_json  # lazy: start-up time

            read_json(path / "config.json")
        return str(path)
    if _looks_like_path(text):
        raise UsageError(f"{what} {text}: no such folder")
    from huggingface_hub import try_to_load_from_cache  # lazy: start-up time
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(text)
    except HFValidationError:
        raise UsageError(f"{what} {text}: no such folder, and not a Hub model id (owner/name)") from None
    cached = try_to_load_from_cache(text, "config.json")
    snapshot = os.path.dirname(cached) if isinstance(cached, str) else None
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        if snapshot is None:
            raise UsageError(f"{what} {text}: no such local folder, and HF_HUB_OFFLINE is set (no Hub download)")
        return snapshot
    from ..net.client import configure_hub  # lazy: only a Hub model needs the Hub client

    configure_hub()  # the request below and the download that follows keep the network bounds
    problem = _hub_model_problem(text)
    if problem is None:
        return text
    if snapshot is not None:
        return snapshot  # no Hub answer: the cached copy, without transformers' retries
    raise UsageError(f"{what} {text}: no such local folder, and {problem}")


def _looks_like_path(text: str) -> bool:
    """``text`` can only be a local path, not a Hub id: ``./``, ``/``, ``~``..., two ``/``, or ``runs/typo``."""
    if text.startswith(("./", "../", "/", "~", ".")) or "\\" in text or (os.sep != "/" and os.sep in text):
        return True
    parts = text.split("/")
    return len(parts) > 2 or (len(parts) == 2 and Path(parts[0]).is_dir())


def _hub_model_problem(repo_id: str) -> str | None:
    """Why the Hub does not serve model ``repo_id`` (one request, no retries), or None when it does (or when
    only a token would tell: a gated or private model is left to transformers' own message)."""
    from huggingface_hub import HfApi  # lazy: start-up time
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
    try:
        api.model_info(repo_id, timeout=_HUB_TIMEOUT_S)
    except GatedRepoError:
        return None
    except RepositoryNotFoundError:
        return "the Hub has no model of that name (or it is private: log in with hf auth login)"
    except HfHubHTTPError as err:
        return f"the Hub answered {_one_line(str(err))[:200]}"
    except Exception as err:  # noqa: BLE001 - httpx / OSError: no network, DNS, timeout
        return f"the Hub ({api.endpoint}) cannot be reached ({type(err).__name__}); set HF_HUB_OFFLINE=1 to use only cached models"
    return None


#: Seconds to wait for the Hub's answer about a model id.
_HUB_TIMEOUT_S = 5.0


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _os_message(err: OSError) -> str:
    reasons = {
        errno.ENOENT: "no such file or folder",
        errno.EISDIR: "is a folder, expected a file",
        errno.ENOTDIR: "a file, not a folder",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device (nothing was half-written: free some space and rerun)",
        errno.EDQUOT: "disk quota exceeded (nothing was half-written: free some space and rerun)",
        errno.EEXIST: "already exists",
    }
    reason = reasons.get(err.errno or -1) or err.strerror or _one_line(str(err)) or type(err).__name__
    return f"{err.filename}: {reason}" if err.filename else reason


#: Other libraries' errors that are bad input or a bad environment (exit 2), as ``module.Class``: matched by type
#: once their module is loaded (an error of a class never imported cannot have been raised, so none is imported
#: here, which would cost the command's start-up time). Our own are :class:`~envre_hf.failures.Failure`s,
#: ``ValueError``s or ``OSError``s.
_LIBRARY_ERRORS = ("huggingface_hub.errors.EntryNotFoundError", "huggingface_hub.errors.HfHubHTTPError")
#: Unreadable weights (a damaged ``model.safetensors``).
_WEIGHTS_ERRORS = ("safetensors.SafetensorError",)
#: Network failures that escaped a client's own wrapping (a Hub download inside transformers or datasets).
_NETWORK_ERRORS = ("builtins.ConnectionError", "httpx.TransportError", "httpx2.TransportError",
                   "requests.RequestException")


def _loaded(names: tuple[str, ...]) -> tuple[type, ...]:
    """The classes ``module.Class`` of ``names`` whose module is imported."""
    classes = (getattr(sys.modules.get(name.rpartition(".")[0]), name.rpartition(".")[2], None) for name in names)
    return tuple(cls for cls in classes if isinstance(cls, type) and issubclass(cls, BaseException))


def error_message(err: BaseException, parser: argparse.ArgumentParser | None = None) -> str | None:
    """The one-line message of an expected error (credentials redacted), or ``None`` for a bug; an error raised
    with a :class:`~envre_hf.failures.Remedy` names the flag of ``parser`` that lifts it."""
    from ..redaction import redact  # lazy: start-up time

    message = _message(err, parser)
    return None if message is None else redact(message)


def _said(err: BaseException, parser: argparse.ArgumentParser | None) -> str:
    """``str(err)``, with the keyword of the error's :class:`~envre_hf.failures.Remedy` spelt as the flag of
    ``parser`` that sets it (``--overwrite``, ``--split NAME``) when the command has one, never a deprecated one."""
    remedy = remedy_of(err)
    flag = None if remedy is None else "--" + remedy.keyword.replace("_", "-")
    action = None if flag is None or parser is None else parser._option_string_actions.get(flag)
    if isinstance(action, _OldSpellingAction):  # the new spelling, when it takes the same value
        flag = action.new.option_strings[0]
        action = None if action.spelling.values is not None or action.spelling.said is not None else action
    if action is None:
        return str(err)
    return remedy.said(flag if remedy.value == "True" else f"{flag} {remedy.value}")


def _message(err: BaseException, parser: argparse.ArgumentParser | None = None) -> str | None:
    if isinstance(err, UsageError):
        return _one_line(str(err))
    if isinstance(err, OSError) and err.filename is not None:
        return _os_message(err)
    if isinstance(err, RecursionError):
        return "input nested too deeply to process"
    if isinstance(err, UnicodeError):
        return f"text is not valid UTF-8 ({err})"
    expected = (ValueError, OSError, Failure, *_loaded(_LIBRARY_ERRORS))
    if isinstance(err, _loaded(_NETWORK_ERRORS)) and not isinstance(err, (Failure, *_loaded(_LIBRARY_ERRORS))):
        return f"network failure ({type(err).__name__}: {_one_line(str(err))[:300]}); check the connection and rerun"
    if isinstance(err, _loaded(_WEIGHTS_ERRORS)):
        return f"unreadable model weights (model.safetensors damaged?): {_one_line(str(err))}"
    if isinstance(err, expected):
        return _one_line(_said(err, parser)) or type(err).__name__
    return None


# --------------------------------------------------------------------------- one vocabulary across subcommands


@dataclass(frozen=True)
class OldSpelling:
    """A spelling an idea had in an earlier release: still accepted for one more, hidden from ``--help``, and said
    once on stderr with the new spelling. ``values``: its value -> the new option's (None: the same value);
    ``nargs``/``const``: as argparse's (``nargs=0``: a switch setting ``const``); ``said``: the advice, when the new
    spelling is no option at all (``--resume``: continuing is the default)."""

    flag: str
    values: Mapping[str, Any] | None = None
    nargs: int | str | None = None
    const: Any = None
    said: str | None = None


@dataclass(frozen=True)
class Idea:
    """One idea several subcommands have: spelt ``flag`` in every one of them (argparse keywords ``kwargs``; each
    command says in its help what it means there), with its ``old`` spellings accepted for a release. ``train``:
    how ``envre train`` spells it (its options are ``TrainingArguments`` fields and keep their names);
    ``synonyms``: other spellings no command may give it (tests/cli/test_vocabulary.py reads them all)."""

    flag: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    old: tuple[OldSpelling, ...] = ()
    train: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()

    def spellings(self) -> set[str]:
        """Every spelling this idea is known by."""
        return {self.flag, *(o.flag for o in self.old), *self.train, *self.synonyms}


#: ``--precision`` values, the ``autocast`` of :func:`envre_hf.models.precision.resolve_autocast` (not imported
#: here: torch would cost every command's start-up).
PRECISION_CHOICES = ("auto", "fp32", "bf16", "bf16-force")
_RESUME_SAID = ("drop it: a rerun continues what --output holds by default, and refuses what it cannot continue "
                "(--overwrite starts over)")

#: The ideas the subcommands share, each with its one spelling (:func:`add_option` adds it).
VOCABULARY: dict[str, Idea] = {
    "output": Idea("--output", {"type": Path}, train=("--output_dir",),
                   synonyms=("--output-dir", "--out", "--outdir", "--out-dir", "--output-folder")),
    "precision": Idea(
        "--precision", {"choices": PRECISION_CHOICES, "default": None},
        old=(OldSpelling("--bf16", {"on": "bf16", "force": "bf16-force"}, nargs="?", const="on"),
             OldSpelling("--dtype", {"float32": "fp32", "bfloat16": "bf16-force"})),
        train=("--bf16", "--fp16"), synonyms=("--half", "--amp", "--autocast", "--fp32"),
    ),
    "progress": Idea("--no-progress", {"action": "store_true"}, train=("--disable_tqdm",),
                     synonyms=("--progress", "--quiet", "--no-tqdm", "--disable-tqdm", "--no-progress-bar")),
    "overwrite": Idea("--overwrite", {"action": "store_true"},
                      old=(OldSpelling("--resume", nargs=0, const=False, said=_RESUME_SAID),),
                      train=("--resume_from_checkpoint",),
                      synonyms=("--force", "--restart", "--fresh", "--overwrite-output", "--overwrite_output_dir")),
    "split": Idea("--split", {"metavar": "NAME"}, old=(OldSpelling("--gold-split"), OldSpelling("--env-split")),
                  synonyms=("--test-split", "--eval-split", "--dataset-split")),
    "copies": Idea("--copies", {"type": positive_int, "default": 5}, old=(OldSpelling("--seeds"),),
                   synonyms=("--num-copies", "--n-copies", "--num-seeds")),
}
#: The attribute :func:`add_option` gives an option: the idea it spells.
IDEA_ATTRIBUTE = "envre_idea"
_OLD_SPELLINGS_SEEN = "_envre_old_spellings"


def add_option(parser: argparse._ActionsContainer, idea: str, help: str, old: tuple[str, ...] = (),
               **kwargs: Any) -> argparse.Action:
    """The option of ``idea`` (:data:`VOCABULARY`) spelt its one way, with ``help`` (what it means for this
    command) and ``kwargs`` over the idea's own (``required=True``, another ``default``); ``old``: the earlier
    spellings this command had, hidden aliases for a release."""
    spec = VOCABULARY[idea]
    action = parser.add_argument(spec.flag, help=help, **{**spec.kwargs, **kwargs})
    setattr(action, IDEA_ATTRIBUTE, idea)
    spellings = {o.flag: o for o in spec.old}
    for flag in old:
        parser.add_argument(flag, action=_OldSpellingAction, dest=action.dest, new=action, spelling=spellings[flag])
    return action


class _OldSpellingAction(argparse.Action):
    """An earlier spelling of an idea's option: sets that option's value, and notes the line that says the new
    spelling (printed by :meth:`ArgumentParser.parse_known_args` once the whole command line parsed)."""

    def __init__(self, option_strings: list[str], dest: str, *, new: argparse.Action, spelling: OldSpelling,
                 **kwargs: Any):
        if spelling.values is not None:
            kwargs["choices"] = list(spelling.values)
        elif spelling.nargs != 0:
            kwargs.update(type=new.type, choices=new.choices)
        super().__init__(option_strings, dest, nargs=spelling.nargs, const=spelling.const, default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS, **kwargs)
        self.new, self.spelling = new, spelling

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        raw = self.const if self.nargs == 0 else values
        value = raw if self.spelling.values is None else self.spelling.values[raw]
        current = getattr(namespace, self.dest, self.new.default)
        if current != self.new.default and current != value:
            raise argparse.ArgumentError(None, self.disagreement(option_string, current))
        setattr(namespace, self.dest, value)
        seen = getattr(namespace, _OLD_SPELLINGS_SEEN, [])
        seen.append((option_string, value, self))
        setattr(namespace, _OLD_SPELLINGS_SEEN, seen)

    def new_spelling(self, value: Any) -> str:
        """The new option giving ``value``."""
        return self.new.option_strings[0] + ("" if self.new.nargs == 0 else f" {value}")

    def advice(self, option: str, value: Any) -> str:
        """The warning line: the spelling to use instead."""
        instead = self.spelling.said or f"use {self.new_spelling(value)}"
        return f"{option} is deprecated and will be removed in a later release; {instead}"

    def disagreement(self, option: str, value: Any) -> str:
        """The error line of ``option`` given with the new option set to another ``value``."""
        return f"{option} and {self.new_spelling(value)} disagree: give one of them"


def add_precision_argument(parser: argparse._ActionsContainer, old: tuple[str, ...] = ("--bf16",)) -> None:
    """``--precision``: the float precision a model predicts in (``autocast`` of
    :func:`envre_hf.models.precision.resolve_autocast`)."""
    add_option(
        parser, "precision", old=old,
        help="fp32 (default); auto: bf16 only where the hardware runs it natively (AVX512-BF16/AMX CPU, bf16 GPU), "
        "else fp32; bf16: bf16 autocast, but fp32 with a warning where bf16 would be emulated (slower); "
        "bf16-force: bf16 even there",
    )  # fmt: skip


def chosen_split(path: Path | None, split: str | None, flag: str = "--split", owner: str = "--input") -> str | None:
    """The split to read from input ``path`` (option ``owner``): ``split`` when its build folder has it, else the
    folder's only split; None for a file. A split given for a file, a split the folder lacks, and a folder of
    several splits with none chosen are each one line (:class:`UsageError`) naming ``flag`` and the splits. A
    ``save_to_disk`` dataset folder's split is left to its reader (``split``; None: every split)."""
    from ..documents.build_folder import build_splits  # lazy: start-up time

    if path is not None and any((Path(path) / name).is_file() for name in ("dataset_dict.json", "dataset_info.json")):
        return split
    splits = build_splits(path) if path is not None else []
    if split is not None:
        if not splits:
            raise UsageError(f"{flag} {split}: {owner} {path} is not a build folder with splits")
        if split not in splits:
            raise UsageError(f"{flag} {split}: no such split in {path} (splits: {', '.join(splits)})")
        return split
    if len(splits) > 1:
        raise UsageError(f"{owner} {path} holds splits {', '.join(splits)}; choose one with {flag} NAME")
    return splits[0] if splits else None

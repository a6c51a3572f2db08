"""What every subcommand shares: the usage error, argument types that refuse nonsense, and the one-line
message that :func:`envre_hf.cli.main.main` prints for every expected error (exit status 2)."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

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
    ``parser`` that sets it (``--overwrite``, ``--gold-split NAME``) when the command has one."""
    remedy = remedy_of(err)
    flag = None if remedy is None else "--" + remedy.keyword.replace("_", "-")
    if flag is None or parser is None or flag not in parser._option_string_actions:
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


def add_precision_arguments(group: argparse._ActionsContainer) -> None:
    """``--precision`` and ``--bf16 [force]``: the float precision a model predicts in (:func:`precision_of`)."""
    group.add_argument(
        "--precision", choices=["auto", "fp32", "bf16"], default=None,
        help="auto: bf16 only where the hardware runs it natively (AVX512-BF16/AMX CPU, bf16 GPU), else fp32 "
        "(fast everywhere); bf16 = --bf16 (default fp32)",
    )
    group.add_argument(
        "--bf16", nargs="?", const="on", choices=("on", "force"), default=None, metavar="force",
        help="bf16 autocast; on hardware without native bf16 it warns and runs fp32, unless '--bf16 force'",
    )


def precision_of(args: argparse.Namespace) -> str | None:
    """The ``autocast`` of ``--precision`` / ``--bf16`` (see :func:`envre_hf.models.precision.resolve_autocast`)."""
    bf16, precision = getattr(args, "bf16", None), getattr(args, "precision", None)
    if bf16 is not None and precision not in (None, "bf16"):
        raise UsageError(f"--bf16 and --precision {precision} disagree: give one of them")
    if bf16 == "force":
        return "bf16-force"
    return "bf16" if bf16 is not None else precision

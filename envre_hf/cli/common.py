"""What every subcommand shares: the usage error, argument types that refuse nonsense, and the one-line
message that :func:`envre_hf.cli.main.main` prints for every expected error (exit status 2)."""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path


class UsageError(Exception):
    """A bad argument or option combination: one line on stderr, exit status 2."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad argument raises :class:`UsageError` (one line) instead of printing usage and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (``--seeds``, ``--num-proc``, ``--batch-size``...)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0 (``--max-docs``: never a Python slice from the end)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def existing_path(text: str) -> Path:
    """An argparse type: a file or folder that exists (the error names it before any work starts)."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder")
    return path


def model_location(value: str | os.PathLike) -> str:
    """``value`` when it is a local folder, or explicitly a Hub id (``owner/name``, not on disk, Hub reachable).

    A mistyped local path is an error here rather than 25 s of Hub retries for a repo that does not exist;
    with ``HF_HUB_OFFLINE=1`` only local folders are accepted.
    """
    text = str(value)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"model {text}: expected a model folder (config.json, model.safetensors), got a file")
        return str(path)
    looks_like_hub_id = text.count("/") == 1 and not text.startswith((".", "/", "~")) and "\\" not in text
    if not looks_like_hub_id:
        raise UsageError(f"model {text}: no such folder (a Hub model is named owner/name)")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise UsageError(f"model {text}: no such local folder, and HF_HUB_OFFLINE is set (no Hub download)")
    return text


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _os_message(err: OSError) -> str:
    where = err.filename if err.filename is not None else None
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
    return f"{where}: {reason}" if where else reason


#: Exceptions that are bad input or a bad environment (exit 2), by class name where importing the class
#: would load a heavy or optional module (safetensors, the ICL backends, the metric).
_EXPECTED_NAMES = {
    "SafetensorError",
    "HeaderTooLarge",
    "BackendError",
    "ICLRunError",
    "AttributionRunError",
    "PredictionError",
    "BuildError",
    "KnowledgeBaseError",
    "HTTPRequestError",
    "HFValidationError",
    "RepositoryNotFoundError",
    "EntryNotFoundError",
    "LocalEntryNotFoundError",
    "GatedRepoError",
    "HfHubHTTPError",
}


def error_message(err: BaseException) -> str | None:
    """The one-line message of an expected error, or ``None`` for a bug (an unexpected exception)."""
    if isinstance(err, UsageError):
        return _one_line(str(err))
    if isinstance(err, OSError) and err.filename is not None:
        return _os_message(err)
    if isinstance(err, RecursionError):
        return "input nested too deeply to process"
    if isinstance(err, UnicodeError):
        return f"text is not valid UTF-8 ({err})"
    names = {cls.__name__ for cls in type(err).__mro__}
    if isinstance(err, (ValueError, OSError)) or names & _EXPECTED_NAMES:
        if "SafetensorError" in names or "HeaderTooLarge" in names:
            return f"unreadable model weights (model.safetensors damaged?): {_one_line(str(err))}"
        return _one_line(str(err)) or type(err).__name__
    return None


def add_precision_arguments(group: argparse._ActionsContainer) -> None:
    """``--precision`` and ``--bf16 [force]``: the float precision a model predicts in (:func:`precision_of`)."""
    group.add_argument(
        "--precision", choices=["auto", "fp32", "bf16"], default=None,
        help="auto: bf16 only where the hardware runs it natively (AVX512-BF16/AMX CPU, bf16 GPU), else fp32 "
        "(fast everywhere); bf16 = --bf16 (default fp32)",
    )
    group.add_argument(
        "--bf16", nargs="?", const="on", type=_bf16_choice, default=None, metavar="force",
        help="bf16 autocast; on hardware without native bf16 it warns and runs fp32, unless '--bf16 force'",
    )


def _bf16_choice(text: str) -> str:
    if text not in ("on", "force"):
        raise argparse.ArgumentTypeError(f"expected nothing or 'force', got {text!r}")
    return text


def precision_of(args: argparse.Namespace) -> str | None:
    """The ``autocast`` of ``--precision`` / ``--bf16`` (see :func:`envre_hf.models.precision.resolve_autocast`)."""
    bf16, precision = getattr(args, "bf16", None), getattr(args, "precision", None)
    if bf16 is not None and precision not in (None, "bf16"):
        raise UsageError(f"--bf16 and --precision {precision} disagree: give one of them")
    if bf16 == "force":
        return "bf16-force"
    return "bf16" if bf16 is not None else precision

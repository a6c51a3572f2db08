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
        if (path / "config.json").is_file():  # transformers' own reading of it names no file
            from ..documents.io import read_json  # lazy: start-up time

            read_json(path / "config.json")
        return str(path)
    looks_like_hub_id = text.count("/") == 1 and not text.startswith((".", "/", "~")) and "\\" not in text
    if not looks_like_hub_id:
        raise UsageError(f"model {text}: no such folder (a Hub model is named owner/name)")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise UsageError(f"model {text}: no such local folder, and HF_HUB_OFFLINE is set (no Hub download)")
    from ..hub_client import configure_hub  # lazy: only a Hub model needs the Hub client

    configure_hub()  # the download that follows keeps the network bounds
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
    """The one-line message of an expected error, or ``None`` for a bug (an unexpected exception).

    Credentials are redacted (:func:`envre_hf.http.redact`): a server body echoing a token never reaches stderr.
    """
    from ..http import redact  # lazy: requests only when an error is printed

    message = _message(err)
    return None if message is None else redact(message)


#: Network failures that escaped a client's own wrapping (a Hub download inside transformers or datasets).
_NETWORK_NAMES = {"TransportError", "RequestException", "ConnectionError", "Timeout", "TimeoutException"}


def _message(err: BaseException) -> str | None:
    if isinstance(err, UsageError):
        return _one_line(str(err))
    if isinstance(err, OSError) and err.filename is not None:
        return _os_message(err)
    if isinstance(err, RecursionError):
        return "input nested too deeply to process"
    if isinstance(err, UnicodeError):
        return f"text is not valid UTF-8 ({err})"
    names = {cls.__name__ for cls in type(err).__mro__}
    if names & _NETWORK_NAMES and not names & _EXPECTED_NAMES:
        return f"network failure ({type(err).__name__}: {_one_line(str(err))[:300]}); check the connection and rerun"
    if isinstance(err, (ValueError, OSError)) or names & _EXPECTED_NAMES:
        if "SafetensorError" in names or "HeaderTooLarge" in names:
            return f"unreadable model weights (model.safetensors damaged?): {_one_line(str(err))}"
        return _one_line(str(err)) or type(err).__name__
    return None

"""The package's Hub calls: their failures as one line each (:func:`hub_errors`), and the one push (a benchmark, a model,
the metric's Space), a folder uploaded and confirmed (:func:`push_folder`)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from huggingface_hub import constants
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

from .net.bounds import HTTPRequestError, ReplyTooSlow, RetriesExhausted, server_of
from .net.client import cause_of, configure_hub, httpx
from .redaction import redact

_ADVICE = {401: "check the token (HF_TOKEN, the token option, or `hf auth login`)",
           403: "check that the token may write to this repository", 404: "check the repository id and HF_ENDPOINT"}


class HubError(HTTPRequestError):
    """A Hub request failed for good: one line naming the Hub, the action and what to do."""


@contextlib.contextmanager
def hub_errors(action: str, endpoint: str | None = None) -> Iterator[None]:
    """Run Hub calls for ``action`` (e.g. ``"push of env to owner/name"``; ``endpoint`` default ``HF_ENDPOINT``): what
    they raise becomes :class:`HubError`, one line naming the Hub, the action and what to do (usually: rerun)."""
    try:
        yield
    except HubError:
        raise
    except Exception as raised:  # noqa: BLE001 - a Hub failure becomes one line, anything else stays as it was
        err = cause_of(raised, (HTTPRequestError, OfflineModeIsEnabled, HfHubHTTPError, httpx.TransportError,
                              json.JSONDecodeError))
        if err is None:
            raise
        raise HubError(_message(err, action, f"the Hub at {server_of(endpoint or constants.ENDPOINT)}")) from None


def _message(err: Exception, action: str, where: str) -> str:
    """The one line of a failed Hub call (``where``: the Hub), credentials redacted."""
    text, rerun = redact(" ".join(str(err).split())), "rerun later (nothing local was changed)"
    if isinstance(err, RetriesExhausted):
        return f"{where} failed the {action}: {text}; {rerun}"
    if isinstance(err, ReplyTooSlow):
        return f"{action}: {text}; rerun when the Hub is faster"
    if isinstance(err, HTTPRequestError):  # RetryLater: its text says when to retry
        return f"{action}: {text}"
    if isinstance(err, OfflineModeIsEnabled):
        return f"{action} needs {where}, and HF_HUB_OFFLINE is set; unset it to reach the Hub"
    if isinstance(err, HfHubHTTPError):
        status = getattr(err.response, "status_code", None)
        advice = _ADVICE.get(status, f"the Hub may be down or busy: {rerun}")
        return f"{where} refused the {action} (HTTP {status}): {text[:300]}; {advice}"
    if isinstance(err, httpx.TimeoutException):
        return (f"{where} did not answer the {action} in time ({type(err).__name__}; ENVRE_READ_TIMEOUT / "
                f"ENVRE_CONNECT_TIMEOUT); {rerun}")
    if isinstance(err, httpx.TransportError):
        return (f"{where}: the connection failed during the {action} ({type(err).__name__}: {text[:200]}); check "
                "HF_ENDPOINT and the network, then rerun")
    return (f"{where} answered the {action} with something that is not JSON ({err.msg}; an HTML error page or a "
            "proxy?); check HF_ENDPOINT, then rerun")


def folder_files(folder: str, *, allow_patterns=None, ignore_patterns=None, path_in_repo: str | None = None) -> list[str]:
    """The repository paths ``upload_folder`` sends from ``folder``: its own filter (``filter_repo_objects``) with
    its default ignores (``.git``, ``.cache/huggingface``), so the plan of a push and its check match the upload."""
    root = Path(folder)
    local = sorted(p.relative_to(root).as_posix() for p in root.glob("**/*") if p.is_file())
    prefix = f"{path_in_repo.strip('/')}/" if path_in_repo and path_in_repo not in (".", "./") else ""
    ignore = [ignore_patterns] if isinstance(ignore_patterns, str) else list(ignore_patterns or [])
    chosen = filter_repo_objects(local, allow_patterns=allow_patterns, ignore_patterns=ignore + DEFAULT_IGNORE_PATTERNS)
    return [prefix + path for path in chosen]


def push_folder(api, repo_id: str, repo_type: str, folder: str, *, what: str, private: bool | None = None,
                create_kwargs: dict | None = None, **upload_kwargs):
    """Create ``repo_id`` if needed, upload ``folder`` and confirm it: the one push of the package (datasets, models,
    the metric's Space). The repository's head must be the commit ``upload_folder`` reports, holding every file of
    the folder (:func:`folder_files`; this also confirms an upload that made no commit because the Hub held every
    file unchanged, and catches files the Hub skips: a ``.gitignore``), else :class:`HubError`. The local folder is
    never changed, so a rerun completes a push. Returns the commit info."""
    configure_hub()
    action = f"push of {what} to {repo_type} repo {repo_id}"
    expected = folder_files(folder, allow_patterns=upload_kwargs.get("allow_patterns"),
                            ignore_patterns=upload_kwargs.get("ignore_patterns"),
                            path_in_repo=upload_kwargs.get("path_in_repo"))
    if "ignore_patterns" in upload_kwargs and not isinstance(upload_kwargs["ignore_patterns"], str):
        upload_kwargs["ignore_patterns"] = list(upload_kwargs["ignore_patterns"] or [])  # upload_folder extends it
    with hub_errors(action, getattr(api, "endpoint", None)):
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True, **(create_kwargs or {}))
        info = api.upload_folder(repo_id=repo_id, repo_type=repo_type, folder_path=str(folder), **upload_kwargs)
        if not getattr(info, "oid", None):
            raise HubError(f"{action}: the Hub reported no commit, so nothing is published; rerun the push")
        head = api.repo_info(repo_id, repo_type=repo_type).sha
        held = set(api.list_repo_files(repo_id, repo_type=repo_type, revision=info.oid)) if head == info.oid else set()
    if head != info.oid:
        raise HubError(f"{action}: the Hub reported commit {info.oid} but the repository's head is {head}: the push is "
                       "not confirmed; rerun it (the local folder is unchanged)")
    missing = [path for path in expected if path not in held]
    if missing:
        raise HubError(f"{action}: commit {info.oid} lacks {len(missing)} of the folder's {len(expected)} files "
                       f"({missing[0]!r} first): the Hub did not take them (a .gitignore in the repository?), so the "
                       "push is not confirmed; rerun it once they can be committed (the local folder is unchanged)")
    return info

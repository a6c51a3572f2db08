"""Hub calls: their failures as one line each (:func:`hub_errors`), reads retried when they failed transiently."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from huggingface_hub import constants
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

from ..redaction import redact
from .bounds import (RETRY_STATUSES, HTTPRequestError, ReplyTooSlow, RetriesExhausted, RetryLater, RetryPolicy,
                     Transient, server_of)
from .client import configure_hub, httpx

_ADVICE = {401: "check the token (HF_TOKEN, the token option, or `hf auth login`)",
           403: "check that the token may write to this repository", 404: "check the repository id and HF_ENDPOINT"}


class HubError(HTTPRequestError):
    """A Hub request failed for good: one line naming the Hub, the action and what to do."""


def _cause(err: BaseException, kinds) -> BaseException | None:
    """The first of ``err`` and the errors it was raised from (a library may wrap a Hub error) that is of ``kinds``."""
    while err is not None and not isinstance(err, kinds):
        err = err.__cause__ or err.__context__
    return err


@contextlib.contextmanager
def hub_errors(action: str, endpoint: str | None = None) -> Iterator[None]:
    """Run Hub calls for ``action`` (e.g. ``"push of env to owner/name"``; ``endpoint`` default ``HF_ENDPOINT``): what
    they raise becomes :class:`HubError`, one line naming the Hub, the action and what to do (usually: rerun)."""
    try:
        yield
    except HubError:
        raise
    except Exception as raised:  # noqa: BLE001 - a Hub failure becomes one line, anything else stays as it was
        err = _cause(raised, (HTTPRequestError, OfflineModeIsEnabled, HfHubHTTPError, httpx.TransportError,
                              json.JSONDecodeError))
        if err is None:
            raise
        raise HubError(_message(err, action, f"the Hub at {server_of(endpoint or constants.ENDPOINT)}")) from None


def _message(err: Exception, action: str, where: str) -> str:
    text, rerun = redact(" ".join(str(err).split())), "rerun later (nothing local was changed)"
    if isinstance(err, RetriesExhausted):
        return f"{where} failed the {action}: {text}; {rerun}"
    if isinstance(err, HTTPRequestError):  # RetryLater, ReplyTooSlow
        return f"{action}: {text}" + "; rerun when the Hub is faster" * isinstance(err, ReplyTooSlow)
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


def hub_read(read: Callable[[], Any]) -> Any:
    """``read()`` (a download through ``huggingface_hub`` or ``datasets``) under the Hub's bounds, run again under
    the retry policy when it failed transiently: a 5xx, 408 or 429, a dropped connection, a timeout, a reply too
    slow (``huggingface_hub`` retries some requests itself, not every download)."""

    def attempt(n: int) -> Any:
        try:
            return read()
        except Exception as raised:  # noqa: BLE001 - retried when transient, else raised as it was
            err = _cause(raised, (HfHubHTTPError, httpx.TransportError, ReplyTooSlow, RetryLater))
            if isinstance(err, (httpx.TransportError, ReplyTooSlow)) or (
                    isinstance(err, HfHubHTTPError) and getattr(err.response, "status_code", None) in RETRY_STATUSES):
                raise Transient(f"{type(err).__name__}: {redact(' '.join(str(err).split()))[:200]}") from None
            raise

    return RetryPolicy(configure_hub()).run(attempt)

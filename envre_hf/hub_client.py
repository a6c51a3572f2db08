"""The Hub's HTTP client, bounded like ours, and its failures as one line.

``huggingface_hub`` talks through one shared ``httpx`` client built by a factory it lets us replace
(``huggingface_hub.set_client_factory``); its default has no timeout at all, so a Hub that never answers a
``create_repo`` or a commit kept ``envre build --push-to-hub`` waiting forever, and it sleeps whatever
``Retry-After`` says (a day for ``86400``). :func:`configure_hub` installs a factory with the package's
:class:`~envre_hf.http.NetworkBounds`: connect/read timeouts on every request (also those that pass ``None``), a
reply deadline on the headers and the body (a trickle ends), no wait on a ``Retry-After`` over the cap (one line
says when to retry). The Hub's own retries (``http_backoff``: 5, waits up to 8 s) are kept, within the retry
budget. All of it goes through httpx's own API: a transport, and ``httpcore``'s ``trace`` extension. The same
client carries the ICL endpoint's requests (``InferenceClient``), so they get the same bounds; and
``HF_HUB_OFFLINE`` blocks only requests to the Hub there, not a local OpenAI-compatible server. The Wikidata KB
client opens its own client on the same transport (:func:`bounded_client`).

:func:`hub_errors` turns what a Hub call raises (an HTTP error, a dropped connection, a timeout, an HTML page
where JSON was expected) into :class:`HubError`: one line naming the Hub, the action and what to do, credentials
redacted; the CLI prints it with exit status 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

from .http import (
    RETRY_STATUSES,
    HTTPRequestError,
    NetworkBounds,
    ReplyTooSlow,
    RetriesExhausted,
    RetryLater,
    parse_retry_after,
    redact,
    server_of,
    within_deadline,
)

_LOCK = threading.Lock()
_INSTALLED: NetworkBounds | None = None


class HubError(HTTPRequestError):
    """A Hub request failed for good: one line naming the Hub, the action and what to do."""


def hub_endpoint() -> str:
    """The Hub's address as ``huggingface_hub`` uses it (``HF_ENDPOINT``, else huggingface.co)."""
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


def is_hub_url(url: str) -> bool:
    """Whether ``url`` is the Hub (``HF_ENDPOINT``'s host and port, or a huggingface.co / hf.co host)."""
    parts = urlsplit(str(url))
    host = (parts.hostname or "").lower()
    if host in ("huggingface.co", "hf.co") or host.endswith((".huggingface.co", ".hf.co")):
        return True
    return parts.netloc.rpartition("@")[2].lower() == urlsplit(hub_endpoint()).netloc.lower()


def configure_hub(bounds: NetworkBounds | None = None) -> NetworkBounds:
    """Make ``huggingface_hub``'s shared client keep ``bounds`` (default: :meth:`NetworkBounds.from_env`).

    Idempotent (installed again only when the bounds change); called before every Hub and endpoint call.
    """
    global _INSTALLED
    bounds = bounds or NetworkBounds.from_env()
    with _LOCK:
        if bounds == _INSTALLED:
            return bounds
        from huggingface_hub import set_client_factory

        set_client_factory(lambda: bounded_client(bounds, event_hooks={"request": [_request_hook]}))
        _INSTALLED = bounds
    return bounds


def bounded_client(bounds: NetworkBounds, **kwargs):
    """An ``httpx`` client keeping ``bounds`` on every request: the Hub's (:func:`configure_hub`) and the KB's."""
    from huggingface_hub.utils import httpx

    timeout = httpx.Timeout(connect=bounds.connect_timeout, read=bounds.read_timeout, write=bounds.read_timeout,
                            pool=bounds.connect_timeout)
    return httpx.Client(follow_redirects=True, timeout=timeout, transport=_transport_class(httpx)(bounds), **kwargs)


def _request_hook(request) -> None:
    """``huggingface_hub``'s own hook (offline check, request id), except that ``HF_HUB_OFFLINE`` only
    blocks the Hub: a local endpoint on 127.0.0.1 is no Hub download."""
    from huggingface_hub import constants
    from huggingface_hub.utils._http import hf_request_event_hook

    if constants.is_offline_mode() and not is_hub_url(str(request.url)):
        return None
    hf_request_event_hook(request)
    return None


@functools.lru_cache(maxsize=None)
def _transport_class(httpx):
    """An ``httpx.HTTPTransport`` that keeps the bounds on every request it carries."""

    class _Body(httpx.SyncByteStream):
        def __init__(self, stream, deadline: float, request, on_close, on_failure):
            self._stream, self._deadline, self._request = stream, deadline, request
            self._on_close, self._on_failure = on_close, on_failure

        def __iter__(self):
            try:
                yield from within_deadline(self._stream, self._deadline, _what(self._request))
            except Exception as err:
                self._on_failure(err)
                raise

        def close(self):
            self._stream.close()
            self._on_close()

    class BoundedTransport(httpx.HTTPTransport):
        """Timeouts on every request, a capped ``Retry-After``, and the reply deadline on headers and body.

        The headers are read inside ``httpcore`` before we see a byte, so their deadline is a timer that shuts the
        connection's socket. The socket comes from
        ``httpcore``'s ``trace`` extension for a new connection; a reused one is among the idle connections this
        transport last saw to the same server (each tracked from its reply's ``network_stream``), so the timer shuts
        those: an idle one shut by mistake is only dropped and reopened by the pool. The Hub's own retries are kept
        within the retry budget by :class:`_RetryChains`.
        """

        def __init__(self, bounds: NetworkBounds):
            super().__init__()
            self.bounds = bounds
            self._idle: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # network stream -> server
            self._idle_lock = threading.Lock()
            self._chains = _RetryChains(bounds)

        def handle_request(self, request):
            b = self.bounds
            limits = dict(request.extensions.get("timeout") or {})
            for key, value in (("connect", b.connect_timeout), ("read", b.read_timeout), ("write", b.read_timeout),
                               ("pool", b.connect_timeout)):
                if limits.get(key) is None:  # a caller's timeout=None would mean "wait forever"
                    limits[key] = value
            request.extensions["timeout"] = limits
            started = self._chains.admit(request)
            server = server_of(str(request.url))
            watch = _HeadWatch(b.reply_deadline, lambda: self._idle_streams(server))
            outer = request.extensions.get("trace")
            request.extensions["trace"] = watch.tracer(outer)
            try:
                response = super().handle_request(request)
            except Exception as err:
                if watch.expired.is_set():
                    err = ReplyTooSlow(f"{_what(request)}: the reply's headers did not arrive within "
                                       f"{b.reply_deadline:g} s (ENVRE_REPLY_DEADLINE)")
                    self._chains.failed(request, started, err)
                    raise err from None
                self._chains.failed(request, started, err)
                raise
            finally:
                watch.cancel()
                if outer is None:
                    request.extensions.pop("trace", None)
                else:
                    request.extensions["trace"] = outer
            stream = response.extensions.get("network_stream")
            if stream is not None:
                with self._idle_lock:
                    self._idle.pop(stream, None)
            wait = parse_retry_after(response.headers.get("Retry-After"))
            if response.status_code in (429, 503) and wait is not None and wait > b.retry_after_cap:
                response.close()
                raise RetryLater(wait, b.retry_after_cap,
                                 f"{server} answered {request.method} {request.url.path} with "
                                 f"HTTP {response.status_code}")
            if response.status_code in RETRY_STATUSES:
                self._chains.failed(request, started, f"HTTP {response.status_code}")
            else:
                self._chains.answered()
            response.stream = _Body(response.stream, b.reply_deadline, request, lambda: self._released(stream, server),
                                    lambda err: self._chains.failed(request, started, err))
            return response

        def _released(self, stream, server: str) -> None:
            if stream is not None:
                with self._idle_lock:
                    self._idle[stream] = server

        def _idle_streams(self, server: str) -> list:
            with self._idle_lock:
                return [stream for stream, where in self._idle.items() if where == server]

    return BoundedTransport


def _what(request) -> str:
    """``METHOD server/path`` of an httpx request, how a deadline names it."""
    return f"{request.method} {server_of(str(request.url))}{request.url.path}"


class _RetryChains:
    """``huggingface_hub``'s own retries (``http_backoff``: up to 5, at any time) kept within the retry budget.

    It retries a commit that never answers five times whatever each attempt takes: 6 x the 30 s read timeout, plus
    its waits, was 204 s. A retry is the same request (method and URL) sent again by the same thread after a failed
    attempt (a transport error, a cut reply, a retry status), within a short gap (its waits are at most 8 s, or a
    ``Retry-After`` under the cap). One that would start more than ``retry_budget`` seconds after the first attempt
    is refused: :class:`~envre_hf.http.RetriesExhausted` naming the request and the last problem. Our own retry
    loops (the KB client, the ICL endpoint) never start one that late, so they are not affected.
    """

    def __init__(self, bounds: NetworkBounds):
        self.bounds = bounds
        self._chains: dict[int, dict] = {}  # thread -> {key, first, attempts, last, problem}
        self._lock = threading.Lock()

    def _gap(self) -> float:
        return self.bounds.retry_after_cap + 10.0

    def admit(self, request) -> float:
        """The start time of ``request``; raises once a retry of it would start past the budget."""
        now, me, key = time.monotonic(), threading.get_ident(), (request.method, str(request.url))
        with self._lock:
            chain = self._chains.get(me)
            if chain is not None and (chain["key"] != key or now - chain["last"] > self._gap()):
                del self._chains[me]  # another request: that chain is over
                chain = None
            if chain is not None and now - chain["first"] > self.bounds.retry_budget:
                del self._chains[me]
                raise RetriesExhausted(chain["attempts"], f"{chain['problem']} (no retry past "
                                       f"{self.bounds.retry_budget:g} s, ENVRE_RETRY_BUDGET)")
        return now

    def failed(self, request, started: float, problem) -> None:
        if not isinstance(problem, str):  # an exception: its kind and (short) text
            text = redact(" ".join(str(problem).split()))[:200]
            problem = f"{type(problem).__name__}" + (f" ({text})" if text else "")
        problem = f"{_what(request)}: {problem}"
        key = (request.method, str(request.url))
        with self._lock:
            chain = self._chains.get(threading.get_ident())
            if chain is None or chain["key"] != key:
                chain = self._chains[threading.get_ident()] = {"key": key, "first": started, "attempts": 0}
            chain.update(attempts=chain["attempts"] + 1, last=time.monotonic(), problem=problem)

    def answered(self) -> None:
        with self._lock:
            self._chains.pop(threading.get_ident(), None)


class _HeadWatch:
    """The reply deadline of one request's headers: started by ``httpcore``'s trace when it begins to read them;
    at the deadline, the sockets the request may be reading are shut, so the blocked read ends."""

    def __init__(self, deadline: float, reused: Callable[[], list]):
        self.deadline, self.reused = deadline, reused
        self.expired = threading.Event()
        self._opened: list = []
        self._timer: threading.Timer | None = None

    def tracer(self, outer):
        def trace(name: str, info: dict) -> None:
            if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
                self._opened.append(info.get("return_value"))
            elif name == "http11.receive_response_headers.started":
                self._timer = threading.Timer(self.deadline, self._shut)
                self._timer.daemon = True
                self._timer.start()
            elif name.startswith("http11.receive_response_headers."):
                self.cancel()
            if outer is not None:
                outer(name, info)

        return trace

    def _shut(self) -> None:
        self.expired.set()
        for stream in self._opened[-1:] or self.reused():
            try:
                stream.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):  # already closed
                pass

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


_ADVICE = {
    401: "check the token (HF_TOKEN, the token option, or `hf auth login`)",
    403: "check that the token may write to this repository",
    404: "check the repository id and HF_ENDPOINT",
}


@contextlib.contextmanager
def hub_errors(action: str, endpoint: str | None = None) -> Iterator[None]:
    """Run Hub calls for ``action`` (e.g. ``"push of env to owner/name"``); their failures become :class:`HubError`.

    ``endpoint``: the Hub the calls go to (default ``HF_ENDPOINT`` as ``huggingface_hub`` read it).

    Local data is never touched by a failed Hub call, so every message ends with what to do, usually "rerun".
    """
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
    from huggingface_hub.utils import httpx

    where = f"the Hub at {server_of(endpoint or hub_endpoint())}"
    try:
        yield
    except HubError:
        raise
    except RetryLater as err:
        raise HubError(redact(f"{action}: {err}")) from None
    except RetriesExhausted as err:
        raise HubError(redact(f"{where} failed the {action}: {err}; rerun later (nothing local was changed)")) from None
    except ReplyTooSlow as err:
        raise HubError(redact(f"{action}: {err}; rerun when the Hub is faster")) from None
    except OfflineModeIsEnabled:
        raise HubError(f"{action} needs {where}, and HF_HUB_OFFLINE is set; unset it to reach the Hub") from None
    except HfHubHTTPError as err:
        response = getattr(err, "response", None)
        status = getattr(response, "status_code", None)
        server_says = " ".join(str(err).split())[:300]
        advice = _ADVICE.get(status, "the Hub may be down or busy: rerun later (nothing local was changed)")
        raise HubError(redact(f"{where} refused the {action} (HTTP {status}): {server_says}; {advice}")) from None
    except httpx.TimeoutException as err:
        raise HubError(
            f"{where} did not answer the {action} in time ({type(err).__name__}; ENVRE_READ_TIMEOUT / "
            "ENVRE_CONNECT_TIMEOUT); rerun later (nothing local was changed)"
        ) from None
    except httpx.TransportError as err:
        raise HubError(
            f"{where}: the connection failed during the {action} ({type(err).__name__}: "
            f"{redact(' '.join(str(err).split()))[:200]}); check HF_ENDPOINT and the network, then rerun"
        ) from None
    except json.JSONDecodeError as err:
        raise HubError(
            f"{where} answered the {action} with something that is not JSON ({err.msg}; an HTML error page or a proxy?); "
            "check HF_ENDPOINT, then rerun"
        ) from None


def folder_files(folder: str, *, allow_patterns=None, ignore_patterns=None,
                 path_in_repo: str | None = None) -> list[str]:
    """The repository paths ``upload_folder`` sends from ``folder``: its own filter (``filter_repo_objects``) with
    its default ignores (``.git``, ``.cache/huggingface``), so the plan of a push and its check match the upload."""
    from pathlib import Path

    from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

    root = Path(folder)
    local = sorted(p.relative_to(root).as_posix() for p in root.glob("**/*") if p.is_file())
    prefix = f"{path_in_repo.strip('/')}/" if path_in_repo and path_in_repo not in (".", "./") else ""
    ignore = [ignore_patterns] if isinstance(ignore_patterns, str) else list(ignore_patterns or [])
    chosen = filter_repo_objects(local, allow_patterns=allow_patterns, ignore_patterns=ignore + DEFAULT_IGNORE_PATTERNS)
    return [prefix + path for path in chosen]


def push_folder(api, repo_id: str, repo_type: str, folder: str, *, what: str, private: bool | None = None,
                create_kwargs: dict | None = None, **upload_kwargs):
    """Create ``repo_id`` if needed, upload ``folder``, and confirm that what it holds reached the Hub.

    The one push of the package (datasets, models, the metric's Space). ``upload_folder`` returning is not proof:
    the repository's head must be the commit it reports, and that commit must hold every file of the folder
    (:func:`folder_files`), else :class:`HubError` (exit status 2) says nothing is confirmed and to rerun (the local
    folder is untouched, a rerun completes the push). The file check also covers the upload that makes no commit
    because the Hub already holds every file unchanged (``huggingface_hub`` then reports the head it found), and
    files the Hub skips (a ``.gitignore`` in the repository). Returns the commit info.
    """
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
        oid = getattr(info, "oid", None)
        if not oid:
            raise HubError(f"{action}: the Hub reported no commit, so nothing is published; rerun the push")
        head = api.repo_info(repo_id, repo_type=repo_type).sha
        held = set(api.list_repo_files(repo_id, repo_type=repo_type, revision=oid)) if head == oid else set()
    if head != oid:
        raise HubError(
            f"{action}: the Hub reported commit {oid} but the repository's head is {head}: the push is not "
            "confirmed; rerun it (the local folder is unchanged)"
        )
    missing = [path for path in expected if path not in held]
    if missing:
        raise HubError(
            f"{action}: commit {oid} lacks {len(missing)} of the folder's {len(expected)} files ({missing[0]!r} "
            "first): the Hub did not take them (a .gitignore in the repository?), so the push is not confirmed; "
            "rerun it once they can be committed (the local folder is unchanged)"
        )
    return info

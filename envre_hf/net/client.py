"""One ``httpx`` transport for every request: each of our clients (Wikidata, an ICL endpoint) is a :func:`bounded_client`,
and :func:`configure_hub` makes ``huggingface_hub``'s shared one so (``set_client_factory``; its default has no timeout)."""

from __future__ import annotations

import contextvars
import importlib
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from huggingface_hub import get_session, set_client_factory
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils import httpx  # httpx (huggingface_hub 1.x) or httpx2 (2.x)

from ..redaction import redact
from .bounds import (RETRY_STATUSES, NetworkBounds, ReplyTooSlow, RetryLater, RetryPolicy, Transient,
                     parse_retry_after, server_of)

httpcore = importlib.import_module("httpcore2" if httpx.__name__ == "httpx2" else "httpcore")  # httpx's own core
#: ``httpcore``'s errors as ``httpx`` raises them (what ``huggingface_hub`` retries and our clients catch)
_ERRORS = {
    httpcore.ConnectTimeout: httpx.ConnectTimeout, httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout, httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.ConnectError: httpx.ConnectError, httpcore.ReadError: httpx.ReadError, httpcore.WriteError: httpx.WriteError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError, httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.ProxyError: httpx.ProxyError, httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
}


class _Clock:
    """The deadline of one reply: ``seconds`` from its first read (the request is sent by then: no upload is cut)."""

    def __init__(self, seconds: float):
        self.seconds, self.end = seconds, math.inf

    def left(self) -> float:
        self.end = time.monotonic() + self.seconds if self.end == math.inf else self.end
        return self.end - time.monotonic()


#: The clock of the reply this thread is reading (set by :func:`_within`).
_CLOCK: contextvars.ContextVar[_Clock | None] = contextvars.ContextVar("envre_reply_clock", default=None)


class _Stream:
    """An ``httpcore`` connection whose reads never wait past the deadline of the reply being read."""

    def __init__(self, stream):
        self.stream = stream

    def __getattr__(self, name: str):  # write, close, get_extra_info: the connection's own
        return getattr(self.stream, name)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        left = clock.left() if (clock := _CLOCK.get()) is not None else math.inf
        if left <= 0:
            raise httpcore.ReadTimeout("past the reply deadline")
        return self.stream.read(max_bytes, timeout if left == math.inf else min(timeout or left, left))

    def start_tls(self, *args, **kwargs) -> _Stream:
        return _Stream(self.stream.start_tls(*args, **kwargs))


class _Backend(httpcore.SyncBackend):
    def connect_tcp(self, *args, **kwargs) -> _Stream:
        return _Stream(super().connect_tcp(*args, **kwargs))


class BoundedTransport(httpx.BaseTransport):
    """``httpcore``'s pool on bounded connections: a request gets the bounds' timeouts where it has none, its headers
    then its body each within the reply deadline (or its ``reply_deadline`` extension: an LLM answers only once done),
    and a 429/503 asking for a wait over the cap ends at once."""

    def __init__(self, bounds: NetworkBounds):
        self.bounds = bounds
        self.pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), max_connections=100,
                                            max_keepalive_connections=20, network_backend=_Backend())

    def handle_request(self, request):
        b, what = self.bounds, f"{request.method} {server_of(str(request.url))}{request.url.path}"
        given = request.extensions.get("timeout") or {}
        limits = {key: given.get(key) or value for key, value in (("connect", b.connect_timeout),
                  ("read", b.read_timeout), ("write", b.read_timeout), ("pool", b.connect_timeout))}
        seconds = request.extensions.get("reply_deadline") or b.reply_deadline
        url = httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                           target=request.url.raw_path)
        core = httpcore.Request(request.method, url, headers=request.headers.raw, content=request.stream,
                                extensions={**request.extensions, "timeout": limits})
        reply = _within(_Clock(seconds), f"{what}: the reply's headers did not arrive", self.pool.handle_request, core)
        response = httpx.Response(reply.status, headers=reply.headers, extensions=reply.extensions,
                                  stream=_Body(reply, seconds, f"{what}: the reply did not arrive whole"))
        wait = parse_retry_after(response.headers.get("Retry-After"))
        if response.status_code in (429, 503) and wait is not None and wait > b.retry_after_cap:
            response.close()
            raise RetryLater(wait, b.retry_after_cap, f"{what} answered HTTP {response.status_code}")
        return response

    def close(self) -> None:
        self.pool.close()


class _Body(httpx.SyncByteStream):
    """A reply's body, whole within its deadline from its first read on."""

    def __init__(self, reply, seconds: float, what: str):
        self.reply, self.seconds, self.what = reply, seconds, what

    def __iter__(self):
        chunks, clock = iter(self.reply.stream), _Clock(self.seconds)
        while (chunk := _within(clock, self.what, next, chunks, None)) is not None:
            yield chunk

    def close(self) -> None:
        self.reply.close()


def _within(clock: _Clock, what: str, read, *args):
    """``read(*args)`` with every socket read bounded by ``clock``: past its deadline :class:`ReplyTooSlow` says
    ``what`` did not arrive in time; ``httpcore``'s other errors are raised as ``httpx``'s."""
    token = _CLOCK.set(clock)
    try:
        return read(*args)
    except tuple(_ERRORS) as err:
        if clock.end <= time.monotonic():
            raise ReplyTooSlow(f"{what} within {clock.seconds:g} s") from None
        raise next(mapped for core, mapped in _ERRORS.items() if isinstance(err, core))(str(err)) from err
    finally:
        _CLOCK.reset(token)


def bounded_client(bounds: NetworkBounds, **kwargs) -> httpx.Client:
    """An ``httpx`` client keeping ``bounds`` on every request (:class:`BoundedTransport`)."""
    timeout = httpx.Timeout(connect=bounds.connect_timeout, read=bounds.read_timeout, write=bounds.read_timeout,
                            pool=bounds.connect_timeout)
    return httpx.Client(follow_redirects=True, timeout=timeout, transport=BoundedTransport(bounds), **kwargs)


_LOCK, _INSTALLED = threading.Lock(), {}  # the "bounds" installed, and "hooks": huggingface_hub's own request hooks


def configure_hub(bounds: NetworkBounds | None = None) -> NetworkBounds:
    """Make ``huggingface_hub``'s shared client a :func:`bounded_client` (default bounds: from the environment) with the
    library's own request hooks (offline mode, request ids); called before every Hub call, a no-op once installed."""
    bounds = bounds or NetworkBounds.from_env()
    with _LOCK:
        hooks = _INSTALLED.get("hooks") or list(get_session().event_hooks["request"])
        if _INSTALLED.get("bounds") != bounds:
            set_client_factory(lambda: bounded_client(bounds, event_hooks={"request": hooks}))
            _INSTALLED.update(bounds=bounds, hooks=hooks)
    return bounds


def cause_of(err: BaseException, kinds) -> BaseException | None:
    """The first of ``err`` and the errors it was raised from (a library may wrap a Hub error) that is of ``kinds``."""
    while err is not None and not isinstance(err, kinds):
        err = err.__cause__ or err.__context__
    return err


def hub_read(read: Callable[[], Any]) -> Any:
    """``read()`` (a download through ``huggingface_hub`` or ``datasets``) under the Hub's bounds, run again under
    the retry policy when it failed transiently: a 5xx, 408 or 429, a dropped connection, a timeout, a reply too
    slow (``huggingface_hub`` retries some requests itself, not every download)."""

    def attempt(n: int) -> Any:
        try:
            return read()
        except Exception as raised:  # noqa: BLE001 - retried when transient, else raised as it was
            err = cause_of(raised, (HfHubHTTPError, httpx.TransportError, ReplyTooSlow, RetryLater))
            if isinstance(err, (httpx.TransportError, ReplyTooSlow)) or (
                    isinstance(err, HfHubHTTPError) and getattr(err.response, "status_code", None) in RETRY_STATUSES):
                raise Transient(f"{type(err).__name__}: {redact(' '.join(str(err).split()))[:200]}") from None
            raise

    return RetryPolicy(configure_hub()).run(attempt)

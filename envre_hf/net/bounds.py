"""How long a request may wait, the errors saying it got no usable reply, and the one retry policy of our requests."""

from __future__ import annotations

import email.utils
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..failures import Failure

T = TypeVar("T")
#: HTTP statuses that mean "try again later" rather than "your request is wrong".
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class NetworkBounds:
    """How long any request may wait (seconds; ``max_retries``: after the first attempt), each set by ``ENVRE_<NAME>``;
    the budget exceeds the longest stalled attempt (``reply_deadline``, ``icl_timeout``): a stall is retried once."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    reply_deadline: float = 60.0
    icl_timeout: float = 120.0
    max_retries: int = 5
    backoff: float = 1.0
    retry_after_cap: float = 30.0
    retry_budget: float = 150.0

    @classmethod
    def from_env(cls, **overrides: Any) -> NetworkBounds:
        """The defaults, replaced by the ``ENVRE_<FIELD>`` variables that are set, then by ``overrides`` not ``None``."""
        values = {k: v for k, v in overrides.items() if v is not None}
        for name in (f.name for f in fields(cls) if f.name not in values):
            var = f"ENVRE_{name.upper()}"
            if text := os.environ.get(var, "").strip():
                try:
                    values[name] = value = (int if name == "max_retries" else float)(text)
                except ValueError:
                    raise ValueError(f"{var}={text!r}: expected a number") from None
                if value < 0 or (value == 0 and name not in ("max_retries", "retry_after_cap", "backoff")):
                    raise ValueError(f"{var}={text!r}: expected a number > 0")
        return cls(**values)


class HTTPRequestError(Failure):
    """A request failed for good: retries exhausted, or a reply that retrying cannot fix (4xx, an error payload)."""


class RetriesExhausted(HTTPRequestError):
    """Every attempt of :meth:`RetryPolicy.run` failed transiently; ``problem`` is the last failure."""

    def __init__(self, attempts: int, problem: str):
        super().__init__(f"giving up after {attempts} attempts: last problem: {problem}")
        self.attempts, self.problem = attempts, problem


class RetryLater(HTTPRequestError):
    """The server asks for a longer wait than :attr:`NetworkBounds.retry_after_cap`: we stop and say when to retry."""

    def __init__(self, seconds: float, cap: float, problem: str):
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() + seconds))
        super().__init__(f"{problem}: the server asks to wait {seconds:.0f} s before retrying (more than the {cap:g} s "
                         f"we wait, ENVRE_RETRY_AFTER_CAP); retry after {when}")


class ReplyTooSlow(HTTPRequestError):
    """A reply that did not arrive whole within its deadline (a trickle: every read within the read timeout)."""


class Transient(Exception):
    """Raised by one attempt to ask :meth:`RetryPolicy.run` for another (with the server's ``Retry-After``)."""

    def __init__(self, problem: str, retry_after: float | None = None):
        super().__init__(problem)
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); ``None`` if absent/invalid."""
    try:
        return max(0.0, float(value) if value.strip().replace(".", "", 1).isdigit() else
                   email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (AttributeError, TypeError, ValueError):
        return None


def server_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (no credentials): how error lines name the server."""
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.scheme else str(url).rpartition("@")[2]


@dataclass
class RetryPolicy:
    """Attempts within ``bounds``: after failed attempt ``n`` a wait of ``bounds.backoff * 2**n`` s (+ up to ``jitter``),
    at least the ``Retry-After``, at most ``max_backoff``; none starts past the budget. A ``Retry-After`` pauses every
    thread using the policy (the workers of one ICL backend): no request before it is over, no N-fold retry storm."""

    bounds: NetworkBounds
    max_backoff: float = 120.0
    jitter: float = 0.1
    sleep: Callable[[float], None] = time.sleep
    _rng: random.Random = field(default_factory=lambda: random.Random(0), init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _resume_at: float = field(default=0.0, init=False, repr=False)

    def run(self, attempt: Callable[[int], T], on_retry: Callable[[int, str], None] | None = None) -> T:
        """``attempt(n)`` for n = 0, 1, ... until it returns or raises other than :class:`Transient` (``on_retry(n,
        problem)`` before each wait); :class:`RetriesExhausted` at the end, :class:`RetryLater` for a wait over the cap."""
        b, start, problem, mine = self.bounds, time.monotonic(), "no attempt made", 0.0
        for n in range(b.max_retries + 1):
            with self._lock:
                pause = self._resume_at - time.monotonic() if self._resume_at > mine else 0.0
            if pause > 0:  # another thread's Retry-After
                self.sleep(pause)
            try:
                return attempt(n)
            except Transient as exc:
                problem, after = str(exc), exc.retry_after
            if after is not None and after > b.retry_after_cap:
                raise RetryLater(after, b.retry_after_cap, problem)
            wait = min(max(b.backoff * 2**n * (1.0 + self.jitter * self._rng.random()), after or 0.0), self.max_backoff)
            if n == b.max_retries:
                break
            if time.monotonic() - start + wait > b.retry_budget:
                raise RetriesExhausted(n + 1, f"{problem} (no retry past {b.retry_budget:g} s, ENVRE_RETRY_BUDGET)")
            if after is not None:
                with self._lock:
                    mine = time.monotonic() + wait
                    self._resume_at = max(self._resume_at, mine)
            if on_retry is not None:
                on_retry(n, problem)
            self.sleep(wait)
        raise RetriesExhausted(b.max_retries + 1, problem)

    def __reduce__(self) -> tuple:
        return type(self), (self.bounds, self.max_backoff, self.jitter, self.sleep)  # a copy elsewhere: no pause

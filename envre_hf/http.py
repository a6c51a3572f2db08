"""Shared HTTP plumbing for every client of the package: retries, credential redaction, one reply cache.

Why one module: the knowledge-base client (thousands of Wikidata questions while building a benchmark) and the
ICL chat backend (one completion per test document) need the same things, and two copies drift apart:

* :class:`RetryPolicy` retries a transient failure (connection error, timeout, HTTP 408/425/429/5xx, a broken
  reply) with exponential backoff (``backoff_factor * 2**attempt`` seconds, optional jitter, capped at
  ``max_backoff``), waiting at least as long as the server's ``Retry-After`` says (:func:`parse_retry_after`);
* :func:`request_secrets` / :func:`redact` keep API keys and tokens out of every error text and log line;
* :class:`ResponseCache` is the one SQLite reply cache (table ``responses``: key, method, url, params, body),
  shared by the KB client (key: method + URL + sorted parameters, :func:`cache_key`) and the ICL backends (key:
  model + messages + generation parameters), so a rerun with the same cache file repeats no request;
* :class:`CachedJSONClient` is the polite JSON-over-HTTP client the Wikidata KB runs on: a ``User-Agent`` on every
  request, connect/read timeouts, payload checks for "busy, retry" replies (``maxlag``), and the cache above.

Failures are :class:`HTTPRequestError` naming the request (credentials redacted); the KB turns them into
``KnowledgeBaseError`` and the ICL backend into ``BackendError``.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import requests

from .version import __version__

T = TypeVar("T")

#: Default ``User-Agent`` (Wikimedia's policy: tool/version plus a way to contact the operator).
#: Override it with the ``user_agent`` argument or the ``ENVRE_USER_AGENT`` environment variable,
#: ideally adding your own e-mail address.
DEFAULT_USER_AGENT = (
    f"envre-hf/{__version__} (https://github.com/envre-hf/envre-hf; envre-hf@users.noreply.github.com) "
    f"python-requests/{requests.__version__}"
)

#: HTTP statuses that mean "try again later" rather than "your request is wrong".
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})

#: File name of the reply cache inside a cache folder.
CACHE_FILE = "responses.sqlite"

#: Decides whether a parsed JSON reply is a transient refusal; returns ``None`` for a good reply
#: or a short reason (e.g. ``"maxlag"``) for one to retry.
PayloadCheck = Callable[[Any], "str | None"]


class HTTPRequestError(RuntimeError):
    """A request failed for good: retries exhausted, or a reply that retrying cannot fix (4xx, an error payload)."""


class RetriesExhausted(HTTPRequestError):
    """Every attempt of :meth:`RetryPolicy.run` failed transiently; ``problem`` is the last failure."""

    def __init__(self, attempts: int, problem: str):
        super().__init__(f"giving up after {attempts} attempts: last problem: {problem}")
        self.attempts = attempts
        self.problem = problem


class Transient(Exception):
    """Raised by one attempt to ask :meth:`RetryPolicy.run` for another (with the server's ``Retry-After``)."""

    def __init__(self, problem: str, retry_after: float | None = None):
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after


def user_agent_from_env(user_agent: str | None = None) -> str:
    """The explicit ``user_agent``, else ``$ENVRE_USER_AGENT``, else :data:`DEFAULT_USER_AGENT`."""
    return user_agent or os.environ.get("ENVRE_USER_AGENT") or DEFAULT_USER_AGENT


def cache_key(method: str, url: str, params: Mapping[str, Any]) -> str:
    """Stable key of a request: method, URL and parameters sorted by name (values as strings)."""
    canonical = json.dumps(
        [method.upper(), url, sorted((str(k), str(v)) for k, v in params.items())],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def describe_request(method: str, url: str, params: Mapping[str, Any], limit: int = 300) -> str:
    """A readable ``METHOD url?params`` for error messages (long queries shortened)."""
    text = f"{method.upper()} {url}?{urlencode(sorted((str(k), str(v)) for k, v in params.items()))}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "x-auth-token")
_SECRET_PARAMS = ("key", "api_key", "apikey", "token", "access_token", "password", "secret")
REDACTED = "[REDACTED]"


def request_secrets(headers: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None) -> list[str]:
    """The credentials a request carries: auth header values (and the token after ``Bearer``), key/token params."""
    secrets = []
    for name, value in (headers or {}).items():
        if str(name).lower() in _SECRET_HEADERS and value:
            value = str(value)
            secrets.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in ("bearer", "token", "basic"):
                secrets.append(token.strip())
    for name, value in (params or {}).items():
        if str(name).lower() in _SECRET_PARAMS and value:
            secrets.append(str(value))
    return [s for s in secrets if len(s) >= 4]


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` (e.g. an HTTP error body about to be raised or logged) with every secret replaced by ``[REDACTED]``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); ``None`` if absent/invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class RetryPolicy:
    """How often and how long to wait before trying a request again.

    Attributes:
        max_retries: retries after the first attempt (so ``max_retries + 1`` attempts in all).
        backoff_factor: base of the exponential backoff in seconds (tests use tiny values).
        max_backoff: upper bound of one wait, including a server's ``Retry-After``.
        jitter: up to this fraction is added to each backoff, so parallel workers do not retry in lockstep.
        sleep: the sleeping function (injectable for tests).
    """

    max_retries: int = 5
    backoff_factor: float = 1.0
    max_backoff: float = 120.0
    jitter: float = 0.1
    sleep: Callable[[float], None] = time.sleep
    _rng: random.Random = field(default_factory=lambda: random.Random(0), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based): the backoff, or longer if the server asks."""
        backoff = self.backoff_factor * (2**attempt)
        if self.jitter:
            backoff *= 1.0 + self.jitter * self._rng.random()
        if retry_after is not None:
            backoff = max(backoff, retry_after)
        return min(backoff, self.max_backoff)

    def run(self, attempt: Callable[[int], T], on_retry: Callable[[int, str], None] | None = None) -> T:
        """``attempt(n)`` for n = 0, 1, ... until it returns; it raises :class:`Transient` to be tried again.

        ``on_retry(n, problem)`` is called before waiting after failed attempt ``n``. Raises
        :class:`RetriesExhausted` after the last attempt; any other exception from ``attempt`` ends the loop at once.
        """
        problem = "no attempt made"
        for n in range(self.max_retries + 1):
            try:
                return attempt(n)
            except Transient as exc:
                problem = exc.problem
                if n < self.max_retries:
                    if on_retry is not None:
                        on_retry(n, problem)
                    self.sleep(self.delay(n, exc.retry_after))
        raise RetriesExhausted(self.max_retries + 1, problem)


@dataclass
class RequestStats:
    """What the client did, per URL: requests sent over the network, retries, cache hits."""

    sent: Counter = field(default_factory=Counter)
    retries: Counter = field(default_factory=Counter)
    cache_hits: Counter = field(default_factory=Counter)

    @property
    def total_sent(self) -> int:
        return sum(self.sent.values())


class ResponseCache:
    """The SQLite store of successful replies (one row per request key). Safe across threads and processes.

    ``path`` is the SQLite file; :meth:`in_folder` gives the file of a cache folder. The KB client and the ICL
    backends write rows to the same table, told apart by their keys and by the ``method`` column.
    """

    COLUMNS = ("key", "method", "url", "params", "body", "stored")

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    @classmethod
    def in_folder(cls, folder: str | os.PathLike[str]) -> ResponseCache:
        """The cache of a cache folder: ``<folder>/responses.sqlite``."""
        return cls(Path(folder).expanduser() / CACHE_FILE)

    def _connection(self) -> sqlite3.Connection:
        # Reopen after a fork (datasets.map with num_proc): SQLite handles must not cross processes.
        if self._conn is None or self._pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, method TEXT, url TEXT, "
                    "params TEXT, body TEXT NOT NULL, stored REAL)"
                )
                columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(responses)"))
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise HTTPRequestError(f"{self.path}: not a usable reply cache ({exc}); delete it or choose another") from None
            if columns != self.COLUMNS:
                conn.close()
                raise HTTPRequestError(
                    f"{self.path}: a reply cache in another layout (columns {', '.join(columns)}; an older envre icl "
                    "cache?); delete it or choose another cache path"
                )
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> str | None:
        """The stored reply body of ``key``, or ``None``."""
        with self._lock:
            row = self._connection().execute("SELECT body FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, method: str, url: str, params: Mapping[str, Any], body: str) -> None:
        """Store ``body`` under ``key``; method, URL and parameters are kept for a reader of the file."""
        params_json = json.dumps(sorted((str(k), str(v)) for k, v in params.items()), ensure_ascii=False)
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                (key, method.upper(), url, params_json, body, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"])


class CachedJSONClient:
    """GET/POST JSON requests with retries, backoff, ``Retry-After`` and the on-disk reply cache.

    Args:
        cache_dir: folder of the SQLite cache (``responses.sqlite``); ``None`` disables caching.
        user_agent: sent on every request (see :func:`user_agent_from_env`).
        timeout: seconds to wait for the connection and for each read (a stall beyond it is retried).
        max_retries: retries after the first attempt (so ``max_retries + 1`` attempts in all).
        backoff_factor: base of the exponential backoff in seconds (tests use tiny values).
        max_backoff: upper bound of one wait, including a server's ``Retry-After``.
        sleep: the sleeping function (injectable for tests).
        cache: an open :class:`ResponseCache` to use instead of ``cache_dir``'s.
    """

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None,
        *,
        user_agent: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff_factor: float = 1.0,
        max_backoff: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        cache: ResponseCache | None = None,
    ):
        self.user_agent = user_agent_from_env(user_agent)
        self.timeout = float(timeout)
        self.retry = RetryPolicy(
            max_retries=int(max_retries), backoff_factor=float(backoff_factor), max_backoff=float(max_backoff), sleep=sleep
        )
        if cache is None and cache_dir is not None:
            cache = ResponseCache.in_folder(cache_dir)
        self.cache = cache
        self.stats = RequestStats()
        self._session: requests.Session | None = None

    @property
    def session(self) -> requests.Session:
        if self._session is None:
            session = requests.Session()
            session.headers["User-Agent"] = self.user_agent
            self._session = session
        return self._session

    def get_json(
        self,
        url: str,
        params: Mapping[str, Any],
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        retry_payload: PayloadCheck | None = None,
        error_payload: PayloadCheck | None = None,
    ) -> Any:
        """The parsed JSON reply to ``method url`` with ``params`` (query string for GET, form body for POST).

        ``retry_payload`` flags a transient refusal inside a 200 reply (retried, never cached);
        ``error_payload`` flags a permanent error reply (raised at once, never cached).
        """
        method = method.upper()
        if method not in ("GET", "POST"):
            raise ValueError(f"unsupported HTTP method {method!r}")
        key = cache_key(method, url, params)
        if self.cache is not None:
            body = self.cache.get(key)
            if body is not None:
                self.stats.cache_hits[url] += 1
                return json.loads(body)

        secrets = request_secrets(headers, params)
        what = redact(describe_request(method, url, params), secrets)

        def attempt(n: int) -> Any:
            if n:
                self.stats.retries[url] += 1
            self.stats.sent[url] += 1
            try:
                response = self.session.request(
                    method,
                    url,
                    params=params if method == "GET" else None,
                    data=params if method == "POST" else None,
                    headers=dict(headers or {}),
                    timeout=(self.timeout, self.timeout),
                )
                body = response.text
            except (requests.Timeout, requests.ConnectionError, requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.ContentDecodingError) as exc:  # also a connection dropped mid-body
                raise Transient(redact(f"{type(exc).__name__}: {exc}", secrets)) from None
            except requests.RequestException as exc:  # e.g. invalid URL: retrying will not help
                raise HTTPRequestError(redact(f"request failed: {what}: {exc}", secrets)) from None
            status = response.status_code
            if status in RETRY_STATUSES:
                raise Transient(f"HTTP {status} {response.reason}", parse_retry_after(response.headers.get("Retry-After")))
            if status >= 400:
                raise HTTPRequestError(
                    redact(f"HTTP {status} {response.reason} for {what}: {redact(body, secrets)[:200]!r}", secrets)
                )
            try:
                payload = json.loads(body)
            except ValueError as exc:
                raise Transient(f"broken JSON reply ({len(body)} characters; {exc})") from None
            if error_payload is not None and (reason := error_payload(payload)):
                raise HTTPRequestError(f"error reply for {what}: {reason}")
            if retry_payload is not None and (busy := retry_payload(payload)):
                raise Transient(f"server busy ({busy})")
            if self.cache is not None:
                self.cache.put(key, method, url, params, body)
            return payload

        try:
            return self.retry.run(attempt)
        except RetriesExhausted as exc:
            raise HTTPRequestError(f"giving up after {exc.attempts} attempts: {what}: last problem: {exc.problem}") from None

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        if self.cache is not None:
            self.cache.close()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_session"] = None
        return state

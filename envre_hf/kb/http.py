"""A polite, persistent JSON-over-HTTP client for public knowledge-base endpoints.

Why it exists: building a renamed benchmark asks Wikidata thousands of questions. Public
Wikimedia endpoints ask clients to identify themselves (``User-Agent``), to back off when the
servers are busy (HTTP 429/503 with ``Retry-After``, the action API's ``maxlag`` error), and the
build must be reproducible. :class:`CachedJSONClient` therefore

* sends a configurable ``User-Agent`` and uses connect/read timeouts on every request,
* retries connection errors, timeouts, 429/5xx replies and unparsable (e.g. truncated) JSON with
  exponential backoff (``backoff_factor * 2**attempt`` seconds, capped at ``max_backoff``),
  waiting at least as long as the server's ``Retry-After`` says,
* lets the caller flag a JSON reply as "busy, retry" (``retry_payload``) - used for ``maxlag``,
* stores every successful reply in an SQLite cache keyed by method + URL + sorted parameters,
  so a rebuild with the same cache directory never repeats a request,
* raises :class:`~envre_hf.kb.base.KnowledgeBaseError` naming the request when retries are
  exhausted or the server refuses the request (other 4xx).
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
from typing import Any
from urllib.parse import urlencode

import requests

from .. import __version__
from .base import KnowledgeBaseError

#: Default ``User-Agent`` (Wikimedia's policy: tool/version plus a way to contact the operator).
#: Override it with the ``user_agent`` argument or the ``ENVRE_USER_AGENT`` environment variable,
#: ideally adding your own e-mail address.
DEFAULT_USER_AGENT = (
    f"envre-hf/{__version__} (https://github.com/envre-hf/envre-hf; envre-hf@users.noreply.github.com) "
    f"python-requests/{requests.__version__}"
)

#: HTTP statuses that mean "try again later" rather than "your request is wrong".
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})

#: Decides whether a parsed JSON reply is a transient refusal; returns ``None`` for a good reply
#: or a short reason (e.g. ``"maxlag"``) for one to retry.
PayloadCheck = Callable[[Any], "str | None"]


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
class RequestStats:
    """What the client did, per URL: requests sent over the network, retries, cache hits."""

    sent: Counter = field(default_factory=Counter)
    retries: Counter = field(default_factory=Counter)
    cache_hits: Counter = field(default_factory=Counter)

    @property
    def total_sent(self) -> int:
        return sum(self.sent.values())


class ResponseCache:
    """SQLite store of successful replies; one row per request key. Safe across threads and processes."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    def _connection(self) -> sqlite3.Connection:
        # Reopen after a fork (datasets.map with num_proc): SQLite handles must not cross processes.
        if self._conn is None or self._pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, method TEXT, url TEXT, "
                "params TEXT, body TEXT NOT NULL, stored REAL)"
            )
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._connection().execute("SELECT body FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, method: str, url: str, params: Mapping[str, Any], body: str) -> None:
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
    """GET/POST JSON requests with retries, backoff, ``Retry-After`` and an on-disk cache.

    Args:
        cache_dir: folder of the SQLite cache (``responses.sqlite``); ``None`` disables caching.
        user_agent: sent on every request (see :func:`user_agent_from_env`).
        timeout: seconds to wait for the connection and for each read (a stall beyond it is retried).
        max_retries: retries after the first attempt (so ``max_retries + 1`` attempts in all).
        backoff_factor: base of the exponential backoff in seconds (tests use tiny values).
        max_backoff: upper bound of one wait, including a server's ``Retry-After``.
        sleep: the sleeping function (injectable for tests).
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
    ):
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.user_agent = user_agent_from_env(user_agent)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_factor = float(backoff_factor)
        self.max_backoff = float(max_backoff)
        self.sleep = sleep
        self.cache = ResponseCache(Path(cache_dir).expanduser() / "responses.sqlite") if cache_dir is not None else None
        self.stats = RequestStats()
        self._session: requests.Session | None = None
        self._rng = random.Random(0)  # jitter only; never affects results

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

        what = redact(describe_request(method, url, params), request_secrets(headers, params))
        last_problem = "no attempt made"
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats.retries[url] += 1
            wait_hint: float | None = None
            try:
                self.stats.sent[url] += 1
                response = self.session.request(
                    method,
                    url,
                    params=params if method == "GET" else None,
                    data=params if method == "POST" else None,
                    headers=dict(headers or {}),
                    timeout=(self.timeout, self.timeout),
                )
                body = response.text
            except (requests.Timeout, requests.ConnectionError) as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
            except requests.RequestException as exc:  # e.g. invalid URL: retrying will not help
                raise KnowledgeBaseError(redact(f"request failed: {what}: {exc}", request_secrets(headers, params))) from None
            else:
                wait_hint = parse_retry_after(response.headers.get("Retry-After"))
                status = response.status_code
                if status in RETRY_STATUSES:
                    last_problem = f"HTTP {status} {response.reason}"
                elif status >= 400:
                    secrets = request_secrets(headers, params)
                    raise KnowledgeBaseError(
                        redact(f"HTTP {status} {response.reason} for {what}: {redact(body, secrets)[:200]!r}", secrets)
                    )
                else:
                    try:
                        payload = json.loads(body)
                    except ValueError as exc:
                        last_problem = f"broken JSON reply ({len(body)} characters; {exc})"
                    else:
                        if error_payload is not None and (reason := error_payload(payload)):
                            raise KnowledgeBaseError(f"error reply for {what}: {reason}")
                        busy = retry_payload(payload) if retry_payload is not None else None
                        if busy:
                            last_problem = f"server busy ({busy})"
                        else:
                            if self.cache is not None:
                                self.cache.put(key, method, url, params, body)
                            return payload
            if attempt < self.max_retries:
                self.sleep(self._delay(attempt, wait_hint))
        raise KnowledgeBaseError(
            f"giving up after {self.max_retries + 1} attempts: {what}: last problem: {last_problem}"
        )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = self.backoff_factor * (2**attempt) * (1.0 + 0.1 * self._rng.random())
        if retry_after is not None:
            backoff = max(backoff, retry_after)
        return min(backoff, self.max_backoff)

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

"""HTTP plumbing shared by the Wikidata KB client, the ICL chat backend and the Hub (docs/reliability.md): time
limits, retries, credential redaction and the one SQLite reply cache; failures are :class:`HTTPRequestError`."""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit, urlunsplit

from .atomic import refuse_link
from .failures import Failure

T = TypeVar("T")

#: HTTP statuses that mean "try again later" rather than "your request is wrong".
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class NetworkBounds:
    """How long any request of the package may wait (seconds; ``max_retries``: retries after the first attempt).
    Each has an environment variable ``ENVRE_<NAME>``; the table of docs/reliability.md says what each bounds."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    reply_deadline: float = 60.0
    max_retries: int = 5
    retry_after_cap: float = 30.0
    retry_budget: float = 60.0

    @classmethod
    def from_env(cls, **overrides: Any) -> NetworkBounds:
        """The defaults, replaced by the ``ENVRE_<FIELD>`` variables that are set, then by ``overrides`` not ``None``."""
        values: dict[str, Any] = {}
        for name in (f.name for f in fields(cls)):
            var = f"ENVRE_{name.upper()}"
            text = os.environ.get(var, "").strip()
            if not text:
                continue
            kind = int if name == "max_retries" else float
            try:
                value = kind(text)
            except ValueError:
                raise ValueError(f"{var}={text!r}: expected a {'whole ' if kind is int else ''}number") from None
            if value < 0 or (value == 0 and name not in ("max_retries", "retry_after_cap")):
                raise ValueError(f"{var}={text!r}: expected a number > 0")
            values[name] = value
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


#: File name of the reply cache inside a cache folder.
CACHE_FILE = "responses.sqlite"


class HTTPRequestError(Failure):
    """A request failed for good: retries exhausted, or a reply that retrying cannot fix (4xx, an error payload)."""


class RetriesExhausted(HTTPRequestError):
    """Every attempt of :meth:`RetryPolicy.run` failed transiently; ``problem`` is the last failure."""

    def __init__(self, attempts: int, problem: str):
        super().__init__(f"giving up after {attempts} attempts: last problem: {problem}")
        self.attempts = attempts
        self.problem = problem


class RetryLater(HTTPRequestError):
    """The server asks for a longer wait than :attr:`NetworkBounds.retry_after_cap`: we stop and say when to retry."""

    def __init__(self, seconds: float, cap: float, problem: str):
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() + seconds))
        super().__init__(
            f"{problem}: the server asks to wait {seconds:.0f} s before retrying (more than the {cap:g} s we wait, "
            f"ENVRE_RETRY_AFTER_CAP); retry after {when}"
        )


class Transient(Exception):
    """Raised by one attempt to ask :meth:`RetryPolicy.run` for another (with the server's ``Retry-After``)."""

    def __init__(self, problem: str, retry_after: float | None = None):
        super().__init__(problem)
        self.retry_after = retry_after


def cache_key(method: str, url: str, params: Mapping[str, Any]) -> str:
    """Stable key of a request: method, URL and parameters sorted by name (values as strings)."""
    canonical = json.dumps(
        [method.upper(), redact_url(url), sorted((str(k), str(v)) for k, v in params.items())],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def describe_request(method: str, url: str, params: Mapping[str, Any], limit: int = 300) -> str:
    """A readable ``METHOD url?params`` for error messages (long queries shortened)."""
    text = f"{method.upper()} {redact_url(url)}?{urlencode(sorted((str(k), str(v)) for k, v in params.items()))}"
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


#: What a credential looks like in any text: Hugging Face tokens, ``Authorization:``/``Bearer``/``--token``/
#: ``token=`` values, and the password of ``scheme://user:password@host``.
_SECRET_PATTERNS = (
    (re.compile(r"\bhf_[A-Za-z0-9]{10,}"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{10,}"), REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{4,}"), r"\1\2" + REDACTED),
    (re.compile(r"(?i)((?:proxy-)?authorization|x-api-key|api[-_]?key)(['\"]?\s*[:=]\s*['\"]?)(?!\[REDACTED)[^\s'\",}]+"),
     r"\1\2" + REDACTED),
    (re.compile(r"(?i)(--token|--api-key|[?&](?:token|access_token|api_key|apikey|key|password|secret))([= ])[^\s&'\"]+"),
     r"\1\2" + REDACTED),
    (re.compile(r"([a-z][a-z0-9+.-]*://[^\s/:@]*):[^\s/@]*@"), r"\1:" + REDACTED + "@"),
)


#: Credentials this process was given (``--token``, the API key's variable): redacted wherever they appear.
_KNOWN_SECRETS: set[str] = set()
#: Environment variables that hold credentials; their values are always redacted.
SECRET_ENV_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY")


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from every later message of this process (a ``--token`` given on the command line)."""
    if value and len(value) >= 4:
        _KNOWN_SECRETS.add(str(value))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every credential replaced by ``[REDACTED]``: the ``secrets`` a request carries
    (:func:`request_secrets`), those of this process, and anything that looks like one (:data:`_SECRET_PATTERNS`)."""
    text = str(text)
    known = {*secrets, *_KNOWN_SECRETS, *(os.environ.get(var, "") for var in SECRET_ENV_VARS)}
    for secret in sorted((s for s in known if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_url(url: str) -> str:
    """``url`` without its password (``user:password@`` keeps the user) and secret query parameters: what is
    written wherever a URL is recorded (cards, manifests, the reply cache and its keys)."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return redact(text)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if user else host
    return redact(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))


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
    return max(0.0, when.timestamp() - time.time())


@dataclass
class RetryPolicy:
    """Retries within ``bounds``: the wait after failed attempt ``n`` is ``backoff_factor * 2**n`` s plus up to
    ``jitter`` of it (workers do not retry in lockstep), at least the ``Retry-After``, at most ``max_backoff``."""

    bounds: NetworkBounds
    backoff_factor: float = 1.0
    max_backoff: float = 120.0
    jitter: float = 0.1
    sleep: Callable[[float], None] = time.sleep
    _rng: random.Random = field(default_factory=lambda: random.Random(0), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.bounds.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.bounds.max_retries}")

    def run(self, attempt: Callable[[int], T], on_retry: Callable[[int, str], None] | None = None) -> T:
        """``attempt(n)`` for n = 0, 1, ... until it returns or raises other than :class:`Transient`;
        ``on_retry(n, problem)`` before each wait. :class:`RetriesExhausted` after the last attempt or past the
        budget; :class:`RetryLater` when the server asks for a wait over the cap."""
        b = self.bounds
        problem = "no attempt made"
        start = time.monotonic()
        for n in range(b.max_retries + 1):
            try:
                return attempt(n)
            except Transient as exc:
                problem = str(exc)
                if exc.retry_after is not None and exc.retry_after > b.retry_after_cap:
                    raise RetryLater(exc.retry_after, b.retry_after_cap, problem) from None
                if n < b.max_retries:
                    wait = self.backoff_factor * (2**n) * (1.0 + self.jitter * self._rng.random())
                    wait = min(max(wait, exc.retry_after or 0.0), self.max_backoff)
                    if time.monotonic() - start + wait > b.retry_budget:
                        raise RetriesExhausted(
                            n + 1, f"{problem} (no retry past {b.retry_budget:g} s, ENVRE_RETRY_BUDGET)"
                        ) from None
                    if on_retry is not None:
                        on_retry(n, problem)
                    self.sleep(wait)
        raise RetriesExhausted(b.max_retries + 1, problem)


class ResponseCache:
    """The SQLite store of successful replies at ``path`` (table ``responses``, one row per request key), safe across
    threads and processes; the KB client and the ICL backends write rows told apart by key and ``method`` column."""

    COLUMNS = ("key", "method", "url", "params", "body", "stored")

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for own in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            refuse_link(own)  # SQLite would write the file a link points to
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    @classmethod
    def in_folder(cls, folder: str | os.PathLike[str]) -> ResponseCache:
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
        with self._lock:
            row = self._connection().execute("SELECT body FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, method: str, url: str, params: Mapping[str, Any], body: str) -> None:
        """Store ``body`` under ``key``; method, URL (without its password) and parameters are kept for a reader."""
        params_json = json.dumps(sorted((str(k), str(v)) for k, v in params.items()), ensure_ascii=False)
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                (key, method.upper(), redact_url(url), params_json, body, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __reduce__(self) -> tuple:
        return type(self), (self.path,)  # a copy in another process opens its own connection


class ReplyTooSlow(HTTPRequestError):
    """A reply that did not arrive whole within :attr:`NetworkBounds.reply_deadline` (a trickle)."""


def within_deadline(chunks: Iterable[bytes], deadline: float, what: str) -> Iterator[bytes]:
    """The chunks of a reply body being read, or :class:`ReplyTooSlow` naming the request ``what`` once
    ``deadline`` seconds pass: per-read timeouts never fire on a server sending a byte every two seconds."""
    start, size = time.monotonic(), 0
    for chunk in chunks:
        size += len(chunk)
        if time.monotonic() - start > deadline:
            raise ReplyTooSlow(
                f"{what}: the reply did not arrive whole within {deadline:g} s "
                f"(ENVRE_REPLY_DEADLINE; {size} bytes so far)"
            )
        yield chunk


def server_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (no credentials): how error lines name the server."""
    parts = urlsplit(str(url))
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}" if parts.scheme else redact_url(url)

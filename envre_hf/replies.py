"""The one SQLite store of replies (Wikidata's, an ICL endpoint's, a local model's): a rerun asks nothing twice."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .atomic import refuse_link
from .redaction import redact_url

#: File name of the reply cache inside a cache folder.
CACHE_FILE = "responses.sqlite"


class ReplyCacheError(ValueError):
    """A cache file that cannot be used (damaged, or another layout): one line naming it."""


def cache_key(method: str, url: str, params: Mapping[str, Any]) -> str:
    """Stable key of a request: method, URL (without its password) and parameters sorted by name (as strings)."""
    canonical = [method.upper(), redact_url(url), sorted((str(k), str(v)) for k, v in params.items())]
    return hashlib.sha256(json.dumps(canonical, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


class ResponseCache:
    """The SQLite store of successful replies at ``path`` (table ``responses``, one row per request key), safe across
    threads (one connection behind a lock) and processes (WAL); rows are told apart by key and ``method`` column."""

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
                conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, method TEXT, url TEXT, "
                             "params TEXT, body TEXT NOT NULL, stored REAL)")
                columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(responses)"))
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise ReplyCacheError(f"{self.path}: not a usable reply cache ({exc}); delete it or choose another") from None
            if columns != self.COLUMNS:
                conn.close()
                raise ReplyCacheError(f"{self.path}: a reply cache in another layout (columns {', '.join(columns)}; an "
                                       "older envre icl cache?); delete it or choose another cache path")
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
            self._connection().execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                                       (key, method.upper(), redact_url(url), params_json, body, time.time()))

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

"""A Wikidata JSON dump streamed into an SQLite index, and the knowledge base that reads it.

Each batch commits with the dump offset it reached, so a resumed :func:`index_dump` ends with exactly the index an
uninterrupted one builds (docs/kb.md).
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import gzip
import hashlib
import json
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from tqdm.auto import tqdm

from ..documents import Document
from .base import Candidate, KnowledgeBase, KnowledgeBaseError
from .linked import link_by_name, normalize_item_id
from .wikidata_json import EntityRecord, item_number, parse_entity

#: Bumped when the index layout changes (an index of another version must be rebuilt).
INDEX_FORMAT_VERSION = "2"  # 2: demonyms (P1549)

#: Entities per committed batch: bounds memory and the work lost to an interruption.
DEFAULT_BATCH_SIZE = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,          -- numeric part of the Q-id
    label TEXT,                      -- English label (NULL when none)
    n_names INTEGER NOT NULL,        -- distinct English names (label + aliases)
    statements INTEGER NOT NULL,     -- the item's own statements
    popularity INTEGER               -- statements + incoming statements (set when the index completes)
);
CREATE TABLE IF NOT EXISTS names (
    item INTEGER NOT NULL, ord INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (item, ord)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS types (
    item INTEGER NOT NULL, ord INTEGER NOT NULL, type INTEGER NOT NULL,
    truthy INTEGER NOT NULL,         -- 1 for best-rank values (SPARQL's wdt:P31)
    PRIMARY KEY (item, ord)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS incoming (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS demonyms (       -- English P1549 values, preferred rank first
    item INTEGER NOT NULL, ord INTEGER NOT NULL, demonym TEXT NOT NULL, PRIMARY KEY (item, ord)
) WITHOUT ROWID;
"""

_FINALIZE = (
    "CREATE INDEX IF NOT EXISTS names_by_name ON names (name)",
    "CREATE INDEX IF NOT EXISTS types_by_type ON types (type, truthy, item)",
    "UPDATE items SET popularity = statements + COALESCE((SELECT n FROM incoming WHERE incoming.id = items.id), 0)",
    "INSERT OR REPLACE INTO meta VALUES ('complete', '1')",
)


@dataclass
class IndexStats:
    """The state of an index after :func:`index_dump` (totals are over all runs, timings of this run)."""

    dump_path: str
    index_path: str
    complete: bool
    items: int
    entities: int
    lines: int
    offset: int
    resumed_from_line: int
    items_this_run: int
    seconds: float

    @property
    def items_per_second(self) -> float:
        return self.items_this_run / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "items_per_second": self.items_per_second}


def dump_fingerprint(path: str | os.PathLike[str]) -> str:
    """Size plus a hash of the first MiB: tells one dump file from another without reading it all."""
    path = Path(path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        digest.update(fh.read(1 << 20))
    return f"{path.stat().st_size}-{digest.hexdigest()[:16]}"


def _open_dump(raw: IO[bytes], name: str) -> IO[bytes]:
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if name.endswith(".bz2"):
        return bz2.BZ2File(raw, mode="rb")
    if name.endswith(".json") or name.endswith(".jsonl"):
        return raw
    raise KnowledgeBaseError(f"{name}: unknown dump compression (expected .json, .json.gz or .json.bz2)")


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _is_unset(conn: sqlite3.Connection) -> bool:
    """A database whose set-up was cut short (a kill after the WAL switch): only our tables, all empty."""
    try:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    except sqlite3.DatabaseError:
        return False  # not SQLite at all
    ours = {"meta", "items", "names", "types", "incoming", "demonyms"}
    return set(names) <= ours and not any(conn.execute(f"SELECT 1 FROM {name} LIMIT 1").fetchone() for name in names)


def _read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError:
        return {}


class _Batch:
    """Rows of up to ``batch_size`` entities, written in one transaction with the offset they reach."""

    def __init__(self) -> None:
        self.items: list[tuple] = []
        self.names: list[tuple] = []
        self.types: list[tuple] = []
        self.demonyms: list[tuple] = []
        self.incoming: Counter = Counter()
        self.entities = 0

    def add(self, record: EntityRecord) -> None:
        number = int(record.item_id[1:])
        self.items.append((number, record.label, len(record.names), record.statements))
        self.names.extend((number, i, name) for i, name in enumerate(record.names))
        truthy = record.truthy_types
        self.types.extend((number, i, int(t[1:]), int(t in truthy)) for i, t in enumerate(record.types))
        self.incoming.update(int(v[1:]) for v in record.item_values)
        self.demonyms.extend((number, i, d) for i, d in enumerate(record.demonyms))

    def commit(self, conn: sqlite3.Connection, meta: dict[str, Any]) -> None:
        with _transaction(conn):
            conn.executemany("INSERT INTO items (id, label, n_names, statements) VALUES (?, ?, ?, ?)", self.items)
            conn.executemany("INSERT INTO names VALUES (?, ?, ?)", self.names)
            conn.executemany("INSERT INTO types VALUES (?, ?, ?, ?)", self.types)
            conn.executemany("INSERT INTO demonyms VALUES (?, ?, ?)", self.demonyms)
            conn.executemany(
                "INSERT INTO incoming (id, n) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET n = n + excluded.n",
                sorted(self.incoming.items()),
            )
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in meta.items()])
        self.__init__()


def index_dump(
    dump_path: str | os.PathLike[str],
    index_path: str | os.PathLike[str],
    resume: bool = True,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_items: int | None = None,
    language: str = "en",
    progress: bool = True,
) -> IndexStats:
    """Stream a ``.json[.gz|.bz2]`` Wikidata dump into the SQLite index at ``index_path``.

    ``resume`` continues an interrupted index of the same dump (``False`` starts over); ``max_items`` stops
    (resumably) after that many items of this run. Raises :class:`KnowledgeBaseError` naming the file and line
    of an unreadable dump line, or an index built from another dump, language or format version.
    """
    dump_path, index_path = Path(dump_path).expanduser(), Path(index_path).expanduser()
    if not dump_path.is_file():
        raise KnowledgeBaseError(f"no dump file at {dump_path}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    fingerprint = dump_fingerprint(dump_path)
    expected = {"format_version": INDEX_FORMAT_VERSION, "dump_fingerprint": fingerprint, "language": language}
    if not resume:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(index_path) + suffix).unlink(missing_ok=True)
    index_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(index_path, isolation_level=None)
    started = time.perf_counter()
    try:
        meta = _read_meta(conn)
        if not meta and not _is_unset(conn):  # a new file is an empty database
            raise KnowledgeBaseError(f"{index_path} exists but is not a dump index; remove it or choose another path")
        for key, value in expected.items():
            if meta and meta.get(key) != value:
                raise KnowledgeBaseError(
                    f"{index_path} was built with {key}={meta.get(key)!r}, not {value!r} (dump {dump_path}); "
                    "pass resume=False to rebuild it"
                )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        if not meta:  # tables and meta in one transaction: a kill leaves all of them or none (_is_unset)
            meta = {**expected, "dump_name": dump_path.name, "offset": "0", "line": "0", "entities": "0",
                    "items": "0", "complete": "0"}
            with _transaction(conn):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))
        else:
            conn.executescript(_SCHEMA)  # tables added by a later layout of the same format version
        state = {k: int(meta[k]) for k in ("offset", "line", "entities", "items")}
        resumed_from = state["line"]
        items_this_run = 0
        if meta.get("complete") != "1":
            items_this_run = _stream(conn, dump_path, state, batch_size, max_items, language, progress)
        meta = _read_meta(conn)
        if meta.get("complete") == "1":
            # one self-contained file, readable read-only (redone by every run: a kill before this leaves WAL
            # mode); WAL stays if a reader holds it
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()
    return IndexStats(
        dump_path=str(dump_path),
        index_path=str(index_path),
        complete=meta.get("complete") == "1",
        items=int(meta["items"]),
        entities=int(meta["entities"]),
        lines=int(meta["line"]),
        offset=int(meta["offset"]),
        resumed_from_line=resumed_from,
        items_this_run=items_this_run,
        seconds=time.perf_counter() - started,
    )


def _stream(
    conn: sqlite3.Connection,
    dump_path: Path,
    state: dict[str, int],
    batch_size: int,
    max_items: int | None,
    language: str,
    progress: bool,
) -> int:
    """Read entity lines from ``state['offset']`` on and commit them batch by batch; returns items read."""
    items_this_run = 0
    with open(dump_path, "rb") as raw:
        stream = _open_dump(raw, dump_path.name)
        offset, line_no = state["offset"], state["line"]
        if offset:
            stream.seek(offset)  # gzip/bz2 streams seek forward by decompressing
        batch = _Batch()
        bar = tqdm(total=dump_path.stat().st_size, initial=raw.tell(), unit="B", unit_scale=True, unit_divisor=1024,
                   desc=f"indexing {dump_path.name}", disable=not progress)

        def commit() -> None:
            state["offset"], state["line"] = offset, line_no
            batch.commit(conn, state)
            bar.update(raw.tell() - bar.n)

        stopped = False
        with bar:
            for line in stream:
                offset += len(line)
                line_no += 1
                text = line.strip()
                if text in (b"[", b"]", b""):
                    continue
                if text.endswith(b","):
                    text = text[:-1]
                try:
                    entity = json.loads(text)
                except ValueError as exc:
                    raise KnowledgeBaseError(
                        f"{dump_path}: line {line_no}: not an entity JSON object ({exc}): {text[:80]!r}"
                    ) from exc
                if not isinstance(entity, dict):
                    raise KnowledgeBaseError(f"{dump_path}: line {line_no}: expected a JSON object")
                try:
                    record = parse_entity(entity, language)
                except (AttributeError, KeyError, TypeError, ValueError) as exc:
                    raise KnowledgeBaseError(
                        f"{dump_path}: line {line_no}: malformed entity {entity.get('id')!r} ({exc!r})"
                    ) from exc
                state["entities"] += 1
                batch.entities += 1
                if record is not None:
                    batch.add(record)
                    state["items"] += 1
                    items_this_run += 1
                if max_items is not None and items_this_run >= max_items:
                    stopped = True
                    break
                if batch.entities >= batch_size:
                    commit()
            commit()
            if not stopped:  # lookup indexes and popularity, then complete: one transaction, safe to redo
                with _transaction(conn):
                    for statement in _FINALIZE:
                        conn.execute(statement)
    return items_this_run


class WikidataDumpKB(KnowledgeBase):
    """The :class:`KnowledgeBase` over an index built by :func:`index_dump` (read-only, offline): links by exact
    English label/alias (most popular, then smallest id); candidates have the type among their best-rank P31
    values (``wdt:P31``), ordered by id."""

    name = "wikidata-dump"

    def __init__(self, index_path: str | os.PathLike[str]):
        self.index_path = Path(index_path).expanduser()
        if not self.index_path.is_file():
            raise KnowledgeBaseError(f"no dump index at {self.index_path}; build it with index_dump(dump, index)")
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._candidates: dict[tuple[int, int], list[Candidate]] = {}
        self.meta = meta = _read_meta(self._connection())
        if meta.get("format_version") != INDEX_FORMAT_VERSION:
            self.close()
            raise KnowledgeBaseError(
                f"{self.index_path} is not a dump index of format {INDEX_FORMAT_VERSION} "
                f"(found {meta.get('format_version')!r}); rebuild it with index_dump(..., resume=False)"
            )
        if meta.get("complete") != "1":
            self.close()
            raise KnowledgeBaseError(
                f"{self.index_path} is incomplete (stopped at line {meta.get('line')}); "
                "finish it with index_dump(dump, index, resume=True)"
            )

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # never share a handle across a fork
            uri = self.index_path.resolve().as_uri() + "?mode=ro"
            self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._pid = os.getpid()
        return self._conn

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            return self._connection().execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise KnowledgeBaseError(f"{self.index_path}: {exc} (query {sql.split()[0]}... {params!r:.80})") from exc

    def item_for_name(self, name: str) -> str | None:
        """The item with English label/alias ``name`` (most popular, then smallest id), or ``None``."""
        rows = self._query(
            "SELECT n.item FROM names n JOIN items i ON i.id = n.item WHERE n.name = ? "
            "ORDER BY i.popularity DESC, n.item ASC LIMIT 1",
            (name.strip(),),
        )
        return f"Q{rows[0][0]}" if rows else None

    def link(self, doc: Document, entity_index: int) -> str | None:
        return link_by_name(doc, entity_index, self.item_for_name)

    @staticmethod
    def _number(item_id: str) -> int | None:
        item = normalize_item_id(item_id)
        return item_number(item) if item else None

    def _values(self, column: str, table: str, item_id: str) -> list:
        """``column`` of the item's rows of ``table`` in their order (none for an id that is not an item)."""
        number = self._number(item_id)
        if number is None:
            return []
        return [v for (v,) in self._query(f"SELECT {column} FROM {table} WHERE item = ? ORDER BY ord", (number,))]

    def types(self, item_id: str) -> list[str]:
        return [f"Q{t}" for t in self._values("type", "types", item_id)]

    def names(self, item_id: str) -> list[str]:
        return self._values("name", "names", item_id)

    def demonyms(self, item_id: str) -> list[str]:
        """English P1549 demonyms of the item (indexed from the dump), preferred rank first."""
        return self._values("demonym", "demonyms", item_id)

    def candidates(self, type_id: str, min_names: int, exclude: frozenset[str] = frozenset()) -> list[Candidate]:
        number = self._number(type_id)
        if number is None:
            return []
        key = (number, int(min_names))
        if key not in self._candidates:
            rows = self._query(
                "SELECT t.item FROM types t JOIN items i ON i.id = t.item "
                "WHERE t.type = ? AND t.truthy = 1 AND i.n_names >= ? ORDER BY t.item",
                key,
            )
            self._candidates[key] = [Candidate(f"Q{item}") for (item,) in rows]
        return [c for c in self._candidates[key] if c.item_id not in exclude]

    def popularity(self, item_id: str) -> int | None:
        number = self._number(item_id)
        if number is None:
            return None
        rows = self._query("SELECT popularity FROM items WHERE id = ?", (number,))
        return rows[0][0] if rows else None

    def __len__(self) -> int:
        return int(self.meta["items"])

    def snapshot_id(self) -> str:
        return f"{self.name}:{self.meta.get('dump_name')}:{self.meta.get('dump_fingerprint')}"

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_conn": None, "_pid": None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m envre_hf.kb", description=__doc__.splitlines()[0], allow_abbrev=False
    )
    parser.add_argument("dump", help="Wikidata JSON dump (.json, .json.gz, .json.bz2)")
    parser.add_argument("index", help="SQLite index to create or resume")
    parser.add_argument("--no-resume", action="store_true", help="delete the index and start over")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--max-items", type=int, default=None, help="stop (resumably) after this many items")
    parser.add_argument("--language", default="en")
    args = parser.parse_args(argv)
    stats = index_dump(args.dump, args.index, resume=not args.no_resume, batch_size=args.batch_size,
                       max_items=args.max_items, language=args.language)
    print(json.dumps(stats.to_dict(), indent=2))
    return 0


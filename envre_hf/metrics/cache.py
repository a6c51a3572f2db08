"""A cache of scoring indexes, for evaluating many prediction files against the same gold file.

Scoring from files spends most of its time reading the gold file (parsing, validating, indexing) and
the training file (Ign), which are the same for every checkpoint of a run. :class:`ScoringCache` keeps,
under ``$ENVRE_SCORING_CACHE``, else ``$ENVRE_CACHE/scoring`` (default ``~/.cache/envre/scoring``):

* ``gold-<digest>.json``: the :class:`~.docre.GoldIndex` of a gold file (:meth:`GoldIndex.to_columns`);
* ``names-<digest>.json``: its mention names, read only when Ign needs them (a training file not seen with it);
* ``train-<digest>.json``: the :class:`~.docre.TrainFacts` of a training file;
* ``in-train-<gold digest>-<train digest>.json``: which gold labels are "in train" (:meth:`GoldIndex.labels_in_train`).

``<digest>`` is the BLAKE2b hash of the file's bytes (for JSON Lines, ``.jsonl`` / ``.jsonl.gz``, the hash of
``"jsonl "`` and that hash: the same bytes read as a JSON list are another file), so an edited file gets
a new entry and a stale one is never read. Entries are JSON (no pickle): a header line (format, kind,
source digest, BLAKE2b of the payload) then the payload. An entry whose header or payload digest does not match,
or whose columns fail :meth:`GoldIndex.from_columns`' checks, is ignored and rebuilt; entries are written
atomically (temporary file + ``os.replace``), and a cache that cannot be written is skipped silently.
Entries are only written from files that passed the full validation, so a hit skips it safely.
Deleting the folder is always safe.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson


#: Bumped whenever what an entry holds, or the rules that built it (validation, index fields), change:
#: entries of another format are ignored.
FORMAT = "envre-scoring-cache/1"

PathLike = str | os.PathLike


def default_cache_dir() -> Path:
    """``$ENVRE_SCORING_CACHE`` if set, else ``$ENVRE_CACHE/scoring`` (default ``~/.cache/envre/scoring``)."""
    if os.environ.get("ENVRE_SCORING_CACHE"):
        return Path(os.environ["ENVRE_SCORING_CACHE"])
    return Path(os.environ.get("ENVRE_CACHE", Path.home() / ".cache" / "envre")) / "scoring"


def digest(data: bytes) -> str:
    """The content hash of ``data`` (names a file's entries; checks an entry's payload)."""
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def file_digest(path: PathLike) -> str:
    """:func:`digest` of a file's bytes, read in chunks (never the whole file in memory)."""
    state = hashlib.blake2b(digest_size=20)
    buffer = bytearray(1 << 18)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as fh:
        while size := fh.readinto(buffer):
            state.update(view[:size])
    return state.hexdigest()


class ScoringCache:
    """Entries of one cache folder (see the module docstring)."""

    def __init__(self, folder: PathLike | None = None):
        self.folder = Path(folder) if folder is not None else default_cache_dir()

    def path(self, kind: str, source: str) -> Path:
        return self.folder / f"{kind}-{source}.json"

    def load(self, kind: str, source: str) -> Any:
        """The payload stored for ``(kind, source)``, or None when absent, damaged or foreign."""
        try:
            data = self.path(kind, source).read_bytes()
            head, _, payload = data.partition(b"\n")
            header = orjson.loads(head)
            expected = {"format": FORMAT, "kind": kind, "source": source, "payload": digest(payload)}
            if header != expected:
                return None
            return orjson.loads(payload)
        except (OSError, ValueError):  # orjson.JSONDecodeError is a ValueError
            return None

    def store(self, kind: str, source: str, payload: Any) -> bool:
        """Write the entry atomically; False (and nothing written) when the folder is not writable."""
        from ..atomic import atomic_open  # lazy: only a miss writes

        try:
            body = orjson.dumps(payload)
            header = {"format": FORMAT, "kind": kind, "source": source, "payload": digest(body)}
            with atomic_open(self.path(kind, source), "wb", durable=False) as fh:
                fh.write(orjson.dumps(header) + b"\n" + body)
        except (OSError, TypeError):  # an unwritable folder; a value JSON cannot hold (orjson: TypeError)
            return False
        return True


def resolve_cache(cache: bool | PathLike | ScoringCache | None) -> ScoringCache | None:
    """``cache`` argument of the readers: None / False (no cache), True (the default folder), a folder or a cache."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return ScoringCache()
    if isinstance(cache, ScoringCache):
        return cache
    return ScoringCache(cache)

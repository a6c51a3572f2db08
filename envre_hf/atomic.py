"""Atomic file writes, the one way every writer of the package puts a file in place (docs/reliability.md): a hidden
temporary file in the same folder, fsynced, renamed over the final name; errors name the final path."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .failures import Remedy

PathLike = str | os.PathLike

#: Suffix of every temporary file: upload and cleaning skip it.
TMP_SUFFIX = ".tmp"


def _located(err: OSError, path: Path) -> OSError:
    """``err`` re-raised against the final path (same errno and class, e.g. PermissionError)."""
    return type(err)(err.errno, err.strerror or str(err), str(path))


class LinkedPathError(OSError):
    """A symbolic link where a writer expects a file or folder of its own: refused, never written through (a link
    would carry the write, or a deletion, out of the output folder)."""


def refuse_link(path: PathLike) -> Path:
    """``path``, unless it is a symbolic link (dangling or not): then a :class:`LinkedPathError` naming it."""
    if os.path.islink(path):
        raise LinkedPathError(
            errno.ELOOP,
            "a symbolic link where envre writes a file or folder of its own; envre never writes through a link "
            "(remove the link, or name the real path)",
            str(path),
        )
    return Path(path)


def refuse_links_below(folder: PathLike) -> None:
    """Refuse (:func:`refuse_link`) a symbolic link anywhere inside ``folder``, a folder whose whole tree is the
    writer's (a build folder, a training ``output_dir``); ``folder`` itself may be a link: the user named it."""
    for root, dirs, files in os.walk(folder):  # a linked folder is listed in ``dirs``, never entered
        for name in dirs + files:
            refuse_link(os.path.join(root, name))


def fsync_dir(folder: PathLike) -> None:
    """Make renames in ``folder`` durable (best effort: not every platform can open a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` (parents created) for writers that want a file name, not a handle;
    when the block ends without error, fsync it and move it onto ``path``."""
    path = Path(path)
    parent = next((p for p in path.parents if p.exists()), path.parent)  # the nearest existing ancestor: a folder
    if not parent.is_dir():
        raise NotADirectoryError(20, f"cannot write {path}: {parent} is a file, not a folder", str(parent))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(21, "is a folder, not a file", str(path))
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}{TMP_SUFFIX}"
        # created like open() would (0666 less the umask; mkstemp's 0600 would stay on the final file)
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as err:
        raise _located(err, path) from None
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(err, OSError) and err.filename in (None, str(tmp)):
            raise _located(err, path) from None  # the write failed (disk full, ...): name the file asked for
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_open(path: PathLike, mode: str = "w", *, encoding: str | None = "utf-8") -> Iterator[IO]:
    """``open(path, mode)`` for writing, atomically (``mode`` is ``"w"`` or ``"wb"``)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', got {mode!r}")
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh


def write_text(path: PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def write_json(path: PathLike, obj: Any, *, indent: int | None = 2, ensure_ascii: bool = False, **kwargs: Any) -> Path:
    """``json.dump`` to ``path`` atomically (a trailing newline when indented)."""
    text = json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii, **kwargs)
    return write_text(path, text + "\n" if indent is not None else text)


def clean_temporary_files(folder: PathLike) -> int:
    """Remove the temporary files a killed writer left in ``folder`` (not recursive); returns how many."""
    leftovers = [tmp for tmp in Path(folder).glob(f".*{TMP_SUFFIX}") if tmp.is_file()]
    for tmp in leftovers:
        tmp.unlink(missing_ok=True)
    return len(leftovers)


def load_jsonl_records(path: PathLike, is_record: Any = None) -> list[dict[str, Any]]:
    """Finished records; a torn last line (crash mid-write), or one ``is_record`` refuses, is cut off with
    everything after it, so appending stays valid JSONL and those units are simply done again. A link at ``path``
    is refused (:func:`refuse_link`): the cut, and the appends that follow, would change the file it points to."""
    path = refuse_link(path)
    if not path.exists():
        return []
    records, good_bytes = [], 0
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                record = json.loads(raw) if raw.endswith(b"\n") else None
            except ValueError:  # not JSON, or not text (zeros a machine crash left)
                break
            if not isinstance(record, dict) or (is_record is not None and not is_record(record)):
                break
            records.append(record)
            good_bytes += len(raw)
    if good_bytes != path.stat().st_size:
        with open(path, "r+b") as fh:
            fh.truncate(good_bytes)
    return records


class RecordLog:
    """Append-only JSON Lines of a long job's finished units (``key`` maps a record to its unit), so that a
    killed job rerun skips them; each record is flushed at once, fsynced every ``fsync_every``."""

    def __init__(self, path: PathLike, key: Any, is_record: Any = None, fsync_every: int = 64):
        self.path = Path(path)
        self.key = key
        self.is_record = is_record
        self.fsync_every = fsync_every
        self.records: dict[Any, dict[str, Any]] = {}
        self._fh: Any = None
        self._since_sync = 0

    def read(self) -> dict[Any, dict[str, Any]]:
        """The finished records (unit -> record); see :func:`load_jsonl_records`."""
        for record in load_jsonl_records(self.path, self.is_record):
            self.records[self.key(record)] = record
        return self.records

    def append(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(refuse_link(self.path), "a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()  # a killed process loses nothing written so far
        self.records[self.key(record)] = record
        self._since_sync += 1
        if self._since_sync >= self.fsync_every:
            os.fsync(self._fh.fileno())
            self._since_sync = 0

    def close(self) -> None:
        if self._fh is not None:
            if self._since_sync:
                os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh, self._since_sync = None, 0


def refuse_used_records(path: Path, resume: bool, error: type[Exception]) -> None:
    """A run never appends to another run's records unless resuming (nor to a link: :func:`refuse_link`)."""
    if refuse_link(path).exists() and path.stat().st_size and not resume:
        raise error(Remedy(f"{path} already holds results: pass ", "resume", after=" or use a new directory"))


def open_run_log(
    folder: Path, records: str, config_file: str, run_config: dict[str, Any], resume: bool, error: type[Exception],
    overwrite: bool = False, derived: tuple[str, ...] = (), **json_kwargs: Any,
) -> RecordLog:
    """The record log (one record per ``"doc"``) of a resumable run folder, whose settings are written to
    ``config_file``: a folder holding records is refused unless ``resume``, and a resume with other settings;
    ``overwrite`` starts afresh (the records, the settings and the files ``derived`` from them go first)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in (records, config_file):
        refuse_link(folder / name)  # before anything is read or written
    if overwrite:  # unlink removes a link itself, never what it points to
        for name in (records, config_file, *derived):
            (folder / name).unlink(missing_ok=True)
    log = RecordLog(folder / records, key=lambda record: record["doc"])
    refuse_used_records(log.path, resume, error)
    config_path = folder / config_file
    if resume and config_path.exists():
        old = json.loads(config_path.read_text("utf-8"))
        for key, value in run_config.items():
            if old.get(key) != value:
                raise error(Remedy(f"cannot resume {folder}: {key} was {old.get(key)!r}, now {value!r}; pass ",
                                   "overwrite", after=" to start over, or use a new directory"))
    write_json(config_path, run_config, **json_kwargs)
    if resume:
        log.read()
    return log

"""The output folder of ``envre build``: ours (marker), one build at a time (``flock``, dropped by the kernel for a
killed build), a split rewritten whole under its ``.build/<split>`` mark (docs/reliability.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..atomic import PathLike, fsync_dir, refuse_link, refuse_links_below, write_text
from ..documents import DocumentError
from ..documents.build_folder import STATISTICS_FILE, WORK_DIR
from ..documents.io import parse_json, read_text
from ..failures import Failure
from .isolation import NAMES_FILE, NAMES_FORMAT, names_file_problem

#: The marker of a folder written by envre build (created once, never replaced: builds lock it).
MARKER_FILE = ".envre-build"
MARKER_FORMAT = "envre-build/1"


class BuildError(Failure):
    """The build cannot start (output folder not ours, locked, a different build of the split, ...)."""


def _read_json(path: Path, default: Any) -> Any:
    """The JSON of ``path`` (``default`` when it does not exist); a damaged file is a :class:`BuildError`."""
    if not path.exists():
        return default
    try:
        return parse_json(read_text(path), path)
    except DocumentError as err:
        raise BuildError(f"{path} is damaged ({err}); restore it or build into a new folder") from None


def read_statistics(folder: Path) -> dict[str, dict[str, Any]]:
    """``folder/statistics.json`` (``{}`` when absent); one of another shape (people edit it) is a
    :class:`BuildError` naming what is wrong."""
    path = folder / STATISTICS_FILE
    stats = _read_json(path, {})
    problem = None
    if not isinstance(stats, dict):
        problem = f"expected a JSON object of split name -> statistics, got {type(stats).__name__}"
    else:
        for split, entry in stats.items():
            if not isinstance(entry, dict):
                problem = f"split {split!r}: expected an object, got {type(entry).__name__}"
            elif not isinstance(entry.get("data_files"), list):  # (items not file names are never touched)
                problem = f"split {split!r} field 'data_files' must be a list of file names"
            if problem:
                break
    if problem:
        raise BuildError(f"{path}: {problem}; restore it or build into a new folder")
    return stats


def read_names(folder: Path) -> dict[str, Any]:
    """``folder/names_used.json`` (an empty one when absent); a file of the wrong shape is a :class:`BuildError`."""
    path = folder / NAMES_FILE
    if not path.exists():
        return {"format": NAMES_FORMAT, "splits": {}}
    names = _read_json(path, None)
    problem = names_file_problem(names)
    if problem:
        raise BuildError(f"{path}: {problem}; restore it or build into a new folder")
    return names


def claim_output_folder(folder: PathLike) -> Path:
    """Make ``folder`` an envre build folder, or refuse it: a file, a non-empty folder not written by envre, or
    one holding a symbolic link (a rebuild would write, and delete stale shards, in the folder a link points to)."""
    folder = Path(folder)
    marker = folder / MARKER_FILE
    if folder.exists() and not folder.is_dir():
        raise BuildError(f"--output {folder} is a file, not a folder")
    if refuse_link(marker).is_file():
        refuse_links_below(folder)  # every file and folder of a build folder is the build's own
        return folder
    if folder.is_dir() and any(folder.iterdir()):
        raise BuildError(
            f"{folder} is not empty and was not written by envre build (no {MARKER_FILE} marker); "
            f"choose a new or empty --output folder"
        )
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return folder
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"format": MARKER_FORMAT, "note": "folder written by envre build; do not delete"}) + "\n")
    return folder


#: Build locks this process holds: forked renaming workers close their copies at once, so a ``kill -9`` of the
#: build releases the lock then, not when the last orphaned worker has finished its chunk.
_HELD_LOCKS: set[int] = set()


def _close_inherited_locks() -> None:
    for fd in _HELD_LOCKS:
        with suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


@contextmanager
def locked_output_folder(folder: PathLike) -> Iterator[None]:
    """Hold the build lock of ``folder`` (``flock`` on its marker: released by the kernel even on ``kill -9``)."""
    marker = Path(folder) / MARKER_FILE
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    fd = os.open(marker, os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildError(
                f"another envre build is writing {folder} (it holds the lock on {marker}); wait for it to finish"
            ) from None
        _HELD_LOCKS.add(fd)
        try:
            yield
        finally:
            _HELD_LOCKS.discard(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def unfinished_split(folder: Path, split: str) -> Iterator[None]:
    """Mark ``split`` of ``folder`` unfinished while its files are replaced; the mark stays if the block fails."""
    mark = folder / WORK_DIR / split
    write_text(mark, f"envre build is writing split {split!r}; if it was stopped, run the same build again\n")
    yield
    mark.unlink()
    fsync_dir(mark.parent)
    if not any(mark.parent.iterdir()):
        mark.parent.rmdir()

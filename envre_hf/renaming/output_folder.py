"""The output folder of ``envre build``: owned (marker), locked while written, replaced split by split atomically.

A folder carries a marker (``.envre-build``) and is locked (``flock`` on it) while a build writes it; a non-empty
folder without the marker is refused. The new files of a split are staged in ``.build/<split>/stage/``; a journal
(``.build/<split>/commit.json``) is then written atomically and its renames applied, shards first and the card
last. A kill before the journal leaves the old output untouched; a kill after it leaves a pending commit that
every later build finishes first (:func:`finish_pending_commits`) and that readers refuse
(:func:`envre_hf.documents.build_folder.pending_commits`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..atomic import fsync_dir, write_json
from ..documents import DocumentError
from ..documents.build_folder import COMMIT_FILE, STATISTICS_FILE, WORK_DIR, pending_commits
from ..documents.io import parse_json, read_text
from .isolation import NAMES_FILE, NAMES_FORMAT, names_file_problem

PathLike = str | os.PathLike

#: The marker of a folder written by envre build (created once, never replaced: builds lock it).
MARKER_FILE = ".envre-build"
MARKER_FORMAT = "envre-build/1"
#: In ``.build/<split>/``: the new files of the split (the journal, ``COMMIT_FILE``, moves them into place).
STAGE_DIR = "stage"


class BuildError(RuntimeError):
    """The build cannot start or continue (inconsistent resume, output folder not ours, ...)."""




def write_json_file(path: Path, obj: Any) -> None:
    """``obj`` as JSON, keys in the given order, written atomically."""
    write_json(path, obj, sort_keys=False)


def read_json_file(path: Path, default: Any) -> Any:
    """The JSON of ``path`` (``default`` when it does not exist); a damaged file is a :class:`BuildError`."""
    if not path.exists():
        return default
    try:
        return parse_json(read_text(path), path)
    except DocumentError as err:
        raise BuildError(f"{path} is damaged ({err}); restore it or build into a new folder") from None


def read_statistics(folder: Path) -> dict[str, dict[str, Any]]:
    """``folder/statistics.json`` (``{}`` when absent); a file of another shape than a build writes (people edit
    it) is a :class:`BuildError` naming it and what is wrong."""
    path = folder / STATISTICS_FILE
    stats = read_json_file(path, {})
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
    names = read_json_file(path, None)
    problem = names_file_problem(names)
    if problem:
        raise BuildError(f"{path}: {problem}; restore it or build into a new folder")
    return names


def _is_legacy_build(folder: Path) -> bool:
    """A folder written by envre build before the marker existed: statistics.json of fingerprinted splits."""
    try:
        stats = json.loads((folder / STATISTICS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(stats, dict) and bool(stats) and all(
        isinstance(v, dict) and "fingerprint" in v and "data_files" in v for v in stats.values()
    )


def claim_output_folder(folder: PathLike) -> Path:
    """Make ``folder`` an envre build folder, or refuse it: a file, or a non-empty folder not written by envre."""
    folder = Path(folder)
    marker = folder / MARKER_FILE
    if folder.exists() and not folder.is_dir():
        raise BuildError(f"--output {folder} is a file, not a folder")
    if marker.is_file():
        return folder
    if folder.is_dir() and any(folder.iterdir()) and not _is_legacy_build(folder):
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


#: File descriptors of the build locks this process holds. A flock belongs to the open file, which forked
#: children (the renaming workers) share: they close their copies at once, so that a ``kill -9`` of the build
#: releases the lock then, not when the last orphaned worker has finished its chunk.
_HELD_LOCKS: set[int] = set()


def _close_inherited_locks() -> None:
    for fd in _HELD_LOCKS:
        try:
            os.close(fd)
        except OSError:
            pass
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


def apply_commit(folder: Path, work: Path) -> None:
    """Apply (or finish applying) the journal of ``work``: idempotent, so a kill during it is repaired by rerunning."""
    journal = read_json_file(work / COMMIT_FILE, None)
    if journal is None:
        return
    touched: set[Path] = set()
    for src, dst in journal["moves"]:
        source, target = work / STAGE_DIR / src, folder / dst
        if source.exists():  # not moved yet
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            touched.add(target.parent)
    for rel in journal["deletes"]:
        target = folder / rel
        target.unlink(missing_ok=True)
        touched.add(target.parent)
    for parent in touched:
        fsync_dir(parent)
    # The journal goes last: a kill while the work folder is removed leaves it (replayed by the next build), not
    # a work folder without journal or manifest that no resume would accept.
    for child in work.iterdir():
        if child.name == COMMIT_FILE:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    fsync_dir(work)
    (work / COMMIT_FILE).unlink(missing_ok=True)
    work.rmdir()
    _remove_empty_work_root(folder)


def _remove_empty_work_root(folder: Path) -> None:
    work_root = folder / WORK_DIR
    if work_root.exists() and not any(work_root.iterdir()):
        work_root.rmdir()


def finish_pending_commits(folder: PathLike) -> list[str]:
    """Finish every pending commit of ``folder`` (the caller holds the lock); returns the splits repaired."""
    folder = Path(folder)
    splits = pending_commits(folder)
    for split in splits:
        apply_commit(folder, folder / WORK_DIR / split)
    return splits

"""The resumable work log of one split's build: kills are cheap.

Each finished (document, seed) is appended to ``.build/<split>/records.jsonl`` (flushed at once, fsynced every
``chunk_size`` records) next to a manifest fingerprinting input, seeds, KB snapshot and renaming config
(:class:`~envre_hf.renaming.inputs.SourceInfo`). ``resume=True`` skips the recorded pairs; the parquet is always
assembled from the records in input order, so a resumed build is byte-identical to an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..documents.build_folder import WORK_DIR
from .driver import RenamedUnit
from .output_folder import STAGE_DIR, BuildError, read_json_file, write_json_file


class WorkLog:
    """The append-only records of one split's build: one JSON line per finished (document, seed).

    ``is_record`` tells a whole record from a damaged line (default: a build's records); ``envre probe`` keeps
    its predictions per (document, seed) in a log of its own records.
    """

    def __init__(self, folder: Path, fsync_every: int, is_record: Callable[[Any], bool] | None = None):
        self.path = folder / "records.jsonl"
        self.fsync_every = fsync_every
        self.is_record = is_record if is_record is not None else _is_record
        self._since_sync = 0
        self._fh: Any = None
        #: Every finished record, (document index, seed) -> record: read from disk, then appended.
        self.records: dict[tuple[int, int], dict[str, Any]] = {}

    def read(self) -> None:
        """Load the finished records; a line cut short by a kill is dropped (and truncated away)."""
        if not self.path.exists():
            return
        good_bytes = 0
        with open(self.path, "rb") as fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # only the last line can lack its newline: cut short by a kill
                try:
                    record = json.loads(line)
                except ValueError:  # not JSON (or not text: zeros a machine crash left)
                    break
                if not self.is_record(record):
                    break  # damaged: this line and what follows are renamed again
                self.records[(record["doc"], record["seed"])] = record
                good_bytes += len(line)
        if good_bytes != self.path.stat().st_size:
            with open(self.path, "r+b") as fh:
                fh.truncate(good_bytes)

    def append(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()  # a killed process loses nothing written so far
        self.records[(record["doc"], record["seed"])] = record
        self._since_sync += 1
        if self._since_sync >= self.fsync_every:
            self.sync()

    def sync(self) -> None:
        if self._fh is not None and self._since_sync:
            os.fsync(self._fh.fileno())
        self._since_sync = 0

    def close(self) -> None:
        if self._fh is not None:
            self.sync()
            self._fh.close()
            self._fh = None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_record(record: Any) -> bool:
    """``record`` has the shape :func:`unit_record` writes (what the split is assembled from)."""
    if not isinstance(record, dict) or not _is_int(record.get("doc")) or not _is_int(record.get("seed")):
        return False
    if "row" in record:
        return isinstance(record["row"], dict) and _is_int(record.get("leaks"))
    error = record.get("error")
    return isinstance(error, dict) and all(key in error for key in ("title", "type", "message"))


def unit_record(result: RenamedUnit) -> dict[str, Any]:
    """The log record of one renamed (or failed) unit: what the split is assembled from."""
    if result.failure is not None:
        failure = result.failure
        return {
            "doc": result.doc_index,
            "seed": result.seed,
            "error": {"title": failure.title, "type": failure.error_type, "message": failure.error},
        }
    return {"doc": result.doc_index, "seed": result.seed, "leaks": result.leaks, "row": result.row}


def prepare_work_folder(
    output_dir: Path, split: str, manifest: dict[str, Any], *, resume: bool, overwrite: bool
) -> Path:
    """The work folder of ``split``: new (with ``manifest``), or the unfinished one when ``resume`` may continue it."""
    work = output_dir / WORK_DIR / split
    manifest_path = work / "manifest.json"
    if work.exists() and not manifest_path.exists():
        # A kill between creating the folder and placing its manifest: nothing in it can be trusted to belong to
        # this build (records are only a cache of renamings), so it is started again.
        shutil.rmtree(work)
    if work.exists():
        try:
            previous = read_json_file(manifest_path, {})
        except BuildError:
            previous = None  # damaged: it matches no build
        if not isinstance(previous, dict):
            if not overwrite:
                raise BuildError(
                    f"cannot resume {work}: its manifest {manifest_path} is damaged, so its records cannot be tied "
                    f"to this build; pass --overwrite to start the split again"
                )
            previous = {}
        same = previous.get("fingerprint") == manifest["fingerprint"]
        if overwrite and not same:
            shutil.rmtree(work)  # an unfinished build of something else, replaced as asked
        elif not resume:
            raise BuildError(
                f"{work} holds an unfinished build of split {split!r}; pass --resume to continue it "
                f"or delete that folder to start again"
            )
        elif not same:
            raise BuildError(
                f"cannot resume {work}: it was started with a different input, seeds, KB snapshot or renaming "
                f"config (manifest {manifest_path}); pass --overwrite to start again"
            )
        else:
            shutil.rmtree(work / STAGE_DIR, ignore_errors=True)  # files of an assembly cut short: made again
            return work
    work.mkdir(parents=True)
    write_json_file(manifest_path, manifest)
    return work

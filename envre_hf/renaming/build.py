"""Building a renamed benchmark split (Env-DocRED / Env-Re-DocRED) into a complete dataset repository.

``build_split`` renames every input document once per seed and writes one split of a dataset folder
that ``datasets.load_dataset(folder)`` loads and ``push_to_hub`` publishes:

* ``data/<split>-00000-of-0000N.parquet``: rows in input order (document, then seed), schema
  :data:`envre_hf.documents.DOCUMENT_FEATURES`;
* ``README.md``: the dataset card (see :mod:`envre_hf.renaming.card`), rewritten after every split;
* ``statistics.json``: construction statistics per split (also what the card and the CLI print);
* ``names_used.json``: the new names each split introduced, for ``--exclude-names-from`` isolation;
* ``errors/<split>.jsonl``: every (document, seed) that was not renamed, with its reason
  (``on_error="skip"``); nothing is dropped silently;
* ``json/<split>.json`` with ``export_json``: the split in DocRED JSON with provenance fields.

Nothing lost, nothing half-written: the folder carries a marker (``.envre-build``) and is locked while a
build writes it; a non-empty folder without the marker is refused, and so is replacing a split built from
another input, seeds, KB snapshot or renaming config unless ``overwrite=True``. The new files of a split are
written into ``.build/<split>/stage/`` first; a journal (``.build/<split>/commit.json``) is then written
atomically and its renames applied, shards first and the card last. A kill before the journal leaves the
old output untouched; a kill after it leaves a pending commit that every later build (and ``resume``)
finishes first, and that :func:`pending_commits` reports to readers.

Kills are cheap: each finished (document, seed) is appended to ``.build/<split>/records.jsonl``
(flushed at once, fsynced every ``chunk_size`` records) next to a manifest fingerprinting input, seeds,
KB snapshot and renaming config. ``resume=True`` skips the recorded pairs; the parquet is always
assembled from the records in input order, so a resumed build is byte-identical to an uninterrupted one.
"""

from __future__ import annotations

import gc
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from ..documents import (
    DOCUMENT_FEATURES,
    Document,
    DocumentError,
    document_from_row,
    document_to_row,
    write_documents,
)
from ..atomic import atomic_path, fsync_dir, write_json
from ..documents.io import check_unique_keys, located_in_file, parse_document, read_raw_documents
from ..kb.base import KnowledgeBaseError
from .isolation import NAMES_FILE, NAMES_FORMAT
from .leaks import find_leaks

PathLike = str | os.PathLike

#: Rows per parquet shard (Env-Re-DocRED test, 2,500 rows, fits one shard).
MAX_ROWS_PER_SHARD = 10_000
WORK_DIR = ".build"
STATISTICS_FILE = "statistics.json"
ON_ERROR = ("fail", "skip")
#: The marker of a folder written by envre build (created once, never replaced: builds lock it).
MARKER_FILE = ".envre-build"
MARKER_FORMAT = "envre-build/1"
#: In ``.build/<split>/``: the new files of the split, and the journal that moves them into place.
STAGE_DIR = "stage"
COMMIT_FILE = "commit.json"
try:  # what ``datasets`` accepts as a split name (``test-hard`` is not: its files would match ``test-*``)
    from datasets.naming import _split_re as _DATASETS_SPLIT_RE
except ImportError:  # pragma: no cover - older/newer datasets
    _DATASETS_SPLIT_RE = r"^\w+(\.\w+)*$"


def check_split_name(split: str) -> str:
    """``split`` when ``datasets`` accepts it as a split name; ``ValueError`` (before anything is written) if not."""
    if not isinstance(split, str) or not re.match(_DATASETS_SPLIT_RE, split):
        raise ValueError(
            f"split name {split!r} is not accepted by datasets (letters, digits and _, optionally dot-separated; "
            f"e.g. test_hard instead of test-hard)"
        )
    return split


class Renamer(Protocol):
    """What the build needs from :class:`envre_hf.renaming.RenamingPipeline`."""

    def rename(self, doc: Document, seed: int) -> Document: ...


class BuildError(RuntimeError):
    """The build cannot start or continue (inconsistent resume, output folder not ours, ...)."""


@dataclass(frozen=True)
class BuildConfig:
    """Where and how to build one split. Defaults follow the Env-DocRED protocol (five seeds)."""

    output_dir: Path
    split: str = "test"
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: ``"fail"`` stops at the first bad document; ``"skip"`` lists it in ``errors/<split>.jsonl``.
    on_error: str = "fail"
    #: Continue an interrupted build of this split instead of refusing to touch it.
    resume: bool = False
    export_json: bool = False
    #: Worker processes (fork); each takes ``chunk_size`` (document, seed) pairs at a time.
    num_proc: int = 1
    #: Records between two fsyncs, and the work unit of a worker process.
    chunk_size: int = 64
    progress: bool = True
    #: Replace a split built from another input / seeds / KB snapshot / renaming config.
    overwrite: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {self.on_error!r}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and non-empty, got {self.seeds}")
        check_split_name(self.split)
        if self.num_proc < 1 or self.chunk_size < 1:
            raise ValueError("num_proc and chunk_size must be >= 1")


@dataclass(frozen=True)
class SourceInfo:
    """What is being renamed with what: recorded in the manifest, the statistics and the card."""

    input_path: str
    input_sha256: str
    kb_name: str
    kb_snapshot: str
    #: The renaming configuration as plain JSON (see :func:`describe_config`), for people.
    renaming_config: dict[str, Any] = field(default_factory=dict)
    #: ``RenamingConfig.fingerprint()``: decides, with input, KB snapshot and seeds, whether a build can resume.
    config_fingerprint: str = ""

    def fingerprint(self, seeds: Sequence[int]) -> str:
        payload = json.dumps(
            {
                "input_sha256": self.input_sha256,
                "kb_snapshot": self.kb_snapshot,
                "renaming_config": self.config_fingerprint,
                "seeds": list(seeds),
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class DocumentFailure:
    """A (document, seed) that was not renamed. ``seed`` is None when the document could not even be parsed."""

    doc_index: int
    title: str | None
    seed: int | None
    error: str
    error_type: str = "DocumentError"


@dataclass
class BuildResult:
    split: str
    output_dir: Path
    data_files: list[Path]
    statistics: dict[str, Any]
    failures: list[DocumentFailure]
    #: Pairs found already finished in the work folder (``resume=True``).
    resumed: int = 0
    seconds: float = 0.0


# --------------------------------------------------------------------------- inputs


def file_sha256(path: PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _in_file(err: DocumentError, path: PathLike) -> DocumentError:
    """``err`` naming the input file too (once)."""
    return err if str(path) in str(err) or Path(path).name in str(err) else located_in_file(err, Path(path))


def load_raw_documents(path: PathLike) -> list[Any]:
    """The raw JSON objects of a document file (:func:`envre_hf.documents.io.read_raw_documents`), not parsed yet.

    Parsing happens per document in :func:`parse_documents`, so one malformed document does not stop
    the others from being renamed with ``on_error="skip"``.
    """
    return read_raw_documents(path, keep_errors=True)


def parse_documents(raw: Sequence[Any], skip: bool = True) -> tuple[list[Document | None], list[DocumentFailure]]:
    """Parse each raw document. With ``skip`` failures are returned (``None`` in the document list), otherwise
    the first one is raised. Validation is the pipeline's job (``RenamingConfig.validate``)."""
    docs: list[Document | None] = []
    failures: list[DocumentFailure] = []
    for i, obj in enumerate(raw):
        try:
            if isinstance(obj, DocumentError):
                raise obj
            docs.append(parse_document(obj, i, validate=False))  # validated by the pipeline, per seed
        except DocumentError as err:
            if not skip:
                raise
            title = obj.get("title") if isinstance(obj, dict) else None
            docs.append(None)
            failures.append(DocumentFailure(i, title if isinstance(title, str) else None, None, str(err)))
    return docs, failures


def describe_config(config: Any) -> dict[str, Any]:
    """A JSON-able, order-independent description of a renaming config (sets are sorted, big ones hashed)."""
    if config is None:
        return {}
    items = asdict(config) if is_dataclass(config) else dict(vars(config))
    out: dict[str, Any] = {}
    for key, value in sorted(items.items()):
        if isinstance(value, (set, frozenset)):
            names = sorted(map(str, value))
            digest = hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:16]
            out[key] = {"count": len(names), "sha256": digest}
        elif isinstance(value, (str, int, float, bool)) or value is None:
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = [v if isinstance(v, (str, int, float, bool)) or v is None else repr(v) for v in value]
        elif isinstance(value, dict):
            out[key] = {str(k): v if isinstance(v, (str, int, float, bool)) else repr(v) for k, v in value.items()}
        else:
            out[key] = repr(value)
    return out


# --------------------------------------------------------------------------- work folder


class _WorkLog:
    """The append-only records of one split's build: one JSON line per finished (document, seed)."""

    def __init__(self, folder: Path, fsync_every: int):
        self.folder = folder
        self.path = folder / "records.jsonl"
        self.fsync_every = fsync_every
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
                    break
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    break
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


def _write_json(path: Path, obj: Any) -> None:
    write_json(path, obj, sort_keys=False)


def _read_json(path: Path, default: Any) -> Any:
    if not path.exists():
        return default
    from ..documents.io import parse_json, read_text

    try:
        return parse_json(read_text(path), path)
    except DocumentError as err:
        raise BuildError(f"{path} is damaged ({err}); restore it or build into a new folder") from None


def _prepare_work_folder(config: BuildConfig, manifest: dict[str, Any]) -> Path:
    work = config.output_dir / WORK_DIR / config.split
    manifest_path = work / "manifest.json"
    if work.exists():
        previous = _read_json(manifest_path, {})
        same = previous.get("fingerprint") == manifest["fingerprint"]
        if config.overwrite and not same:
            shutil.rmtree(work)  # an unfinished build of something else, replaced as asked
        elif not config.resume:
            raise BuildError(
                f"{work} holds an unfinished build of split {config.split!r}; pass --resume to continue it "
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
    _write_json(manifest_path, manifest)
    return work


# --------------------------------------------------------------------------- owned, locked output folder


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


@contextmanager
def locked_output_folder(folder: PathLike) -> Iterator[None]:
    """Hold the build lock of ``folder`` (``flock`` on its marker: released by the kernel even on ``kill -9``)."""
    marker = Path(folder) / MARKER_FILE
    with open(marker, "a+", encoding="utf-8") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            yield
            return
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildError(
                f"another envre build is writing {folder} (it holds the lock on {marker}); wait for it to finish"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def pending_commits(folder: PathLike) -> list[str]:
    """Splits of ``folder`` whose replacement was cut short after its commit point (finish: build ``--resume``)."""
    root = Path(folder) / WORK_DIR
    return sorted(p.parent.name for p in root.glob(f"*/{COMMIT_FILE}")) if root.is_dir() else []


def _apply_commit(folder: Path, work: Path) -> None:
    """Apply (or finish applying) the journal of ``work``: idempotent, so a kill during it is repaired by rerunning."""
    journal = _read_json(work / COMMIT_FILE, None)
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
    shutil.rmtree(work)
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
        _apply_commit(folder, folder / WORK_DIR / split)
    return splits


def _difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between two builds' statistics, for the refusal message."""
    parts = []
    if old.get("input", {}).get("sha256") != new["input"]["sha256"]:
        parts.append(f"input {old.get('input', {}).get('path')!r} -> {new['input']['path']!r}")
    if old.get("seeds") != new["seeds"]:
        parts.append(f"seeds {old.get('seeds')} -> {new['seeds']}")
    if old.get("kb") != new["kb"]:
        parts.append(f"KB {old.get('kb')} -> {new['kb']}")
    if old.get("renaming_config") != new["renaming_config"]:
        parts.append("renaming config")
    return ", ".join(parts) or "renaming config"


def _check_replacement(config: BuildConfig, source: SourceInfo) -> None:
    """Refuse to replace a split built from something else, unless ``overwrite``."""
    old = _read_json(config.output_dir / STATISTICS_FILE, {}).get(config.split)
    if not old or config.overwrite or old.get("fingerprint") == source.fingerprint(config.seeds):
        return
    new = {
        "input": {"path": Path(source.input_path).name, "sha256": source.input_sha256},
        "seeds": list(config.seeds),
        "kb": {"name": source.kb_name, "snapshot": source.kb_snapshot},
        "renaming_config": source.renaming_config,
    }
    raise BuildError(
        f"{config.output_dir} already holds split {config.split!r} built differently ({_difference(old, new)}); "
        f"pass --overwrite to replace it, or choose another --output"
    )


# --------------------------------------------------------------------------- renaming


def _failure_record(doc_index: int, seed: int, doc: Document, err: BaseException) -> dict[str, Any]:
    return {
        "doc": doc_index,
        "seed": seed,
        "error": {"title": doc.title, "type": type(err).__name__, "message": str(err)},
    }


def _rename_one(
    pipeline: Renamer, docs: Sequence[Document | None], unit: tuple[int, int], skip: bool
) -> tuple[dict, Document | None]:
    """The log record of one (document, seed) and the renamed copy (``None`` for a failure)."""
    doc_index, seed = unit
    doc = docs[doc_index]
    assert doc is not None
    try:
        with_report = getattr(pipeline, "rename_with_report", None)
        if with_report is not None:  # the pipeline already ran the leak check: reuse its count
            renamed, report = with_report(doc, seed)
            leaks = report.leaks_found - report.leaks_fixed
        else:
            renamed = pipeline.rename(doc, seed)
            leaks = len(find_leaks(renamed))
    except KnowledgeBaseError:
        raise  # the KB, not the document, failed: stop; --resume retries later
    except DocumentError as err:
        if not skip:
            raise err.located(doc_index, doc.title) from None
        return _failure_record(doc_index, seed, doc, err.located(doc_index, doc.title)), None
    except Exception as err:  # a pipeline bug on this document: report it instead of losing the whole build
        if not skip:
            raise
        return _failure_record(doc_index, seed, doc, err), None
    return {"doc": doc_index, "seed": seed, "leaks": leaks, "row": document_to_row(renamed)}, renamed


#: (pipeline, documents, skip) inherited by forked workers.
_WORKER_STATE: tuple[Renamer, Sequence[Document | None], bool] | None = None


def _rename_chunk(units: list[tuple[int, int]]) -> list[tuple[dict, Document | None]]:
    assert _WORKER_STATE is not None
    pipeline, docs, skip = _WORKER_STATE
    return [_rename_one(pipeline, docs, unit, skip) for unit in units]


def _chunks(units: list[tuple[int, int]], size: int) -> Iterable[list[tuple[int, int]]]:
    for start in range(0, len(units), size):
        yield units[start : start + size]


@contextmanager
def _settled_results() -> Iterator[None]:
    """Keep the cyclic garbage collector from re-scanning the build's results again and again.

    Renamed copies and their rows stay alive for the whole build; every full collection would walk all
    of them (the whole Env-Re-DocRED test build took ~1.7x longer). :func:`gc.freeze` after each chunk
    moves what is alive into the permanent generation; new garbage is still collected as usual.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _run_units(
    pipeline: Renamer,
    docs: Sequence[Document | None],
    units: list[tuple[int, int]],
    log: _WorkLog,
    config: BuildConfig,
    bar: tqdm,
) -> dict[tuple[int, int], Document]:
    """Rename ``units``, appending each record to ``log``; returns the renamed copies made here."""
    skip = config.on_error == "skip"
    renamed: dict[tuple[int, int], Document] = {}

    def keep(record: dict, doc: Document | None) -> None:
        log.append(record)
        if doc is not None:
            renamed[(record["doc"], record["seed"])] = doc
        if len(log.records) % config.chunk_size == 0:
            gc.freeze()  # see _settled_results

    if config.num_proc == 1 or len(units) <= config.chunk_size:
        for unit in units:
            keep(*_rename_one(pipeline, docs, unit, skip))
            bar.update(1)
        return renamed
    global _WORKER_STATE
    _WORKER_STATE = (pipeline, docs, skip)
    try:
        with multiprocessing.get_context("fork").Pool(config.num_proc) as pool:
            for results in pool.imap(_rename_chunk, _chunks(units, config.chunk_size)):
                for record, doc in results:
                    keep(record, doc)
                bar.update(len(results))
    finally:
        _WORKER_STATE = None
    return renamed


# --------------------------------------------------------------------------- statistics


def construction_statistics(
    renamed: Sequence[Document],
    leaks: Sequence[int],
    names_used: set[str],
    source_docs: int,
    failures: Sequence[DocumentFailure],
    source: SourceInfo,
    seeds: Sequence[int],
) -> dict[str, Any]:
    """The numbers a dataset card reports: substitution rate per coarse type, type-match kinds (exact /
    relaxed / rule / unchanged:<reason>), leaks left in the text (``leaks[i]`` for ``renamed[i]``), names
    used, KB snapshot, seeds, and the text coherence figures (``envre_hf.renaming.coherence``)."""
    from .coherence import coherence_statistics
    from .stats import match_counts, substitution_rates

    return {
        "source_documents": source_docs,
        "seeds": list(seeds),
        "renamed_documents": len(renamed),
        "failed": len(failures),
        "failed_documents": len({f.doc_index for f in failures}),
        "substitution_rates": substitution_rates(renamed),
        "type_matches": match_counts(renamed),
        "coherence": coherence_statistics(renamed),
        "leaks": {"documents": sum(1 for n in leaks if n), "occurrences": sum(leaks)},
        "names_used": len(names_used),
        "kb": {"name": source.kb_name, "snapshot": source.kb_snapshot},
        "renaming_config": source.renaming_config,
        "input": {"path": Path(source.input_path).name, "sha256": source.input_sha256},
    }


# --------------------------------------------------------------------------- output folder


def _shard_names(split: str, n_rows: int) -> list[str]:
    n_shards = max(1, -(-n_rows // MAX_ROWS_PER_SHARD))
    return [f"{split}-{i:05d}-of-{n_shards:05d}.parquet" for i in range(n_shards)]


def is_shard_of(name: str, split: str) -> bool:
    """``name`` is a shard of ``split`` exactly (``test-hard-00000-of-00001.parquet`` is not one of ``test``)."""
    return re.fullmatch(rf"{re.escape(split)}-\d{{5}}-of-\d{{5}}\.parquet", name) is not None


def _write_parquet(rows: list[dict[str, Any]], data_dir: Path, split: str) -> list[Path]:
    """Parquet shards with the datasets schema metadata. Rows go to Arrow in one C++ call (what
    ``Dataset.from_list`` writes too, byte for byte, at twice the cost)."""
    import pyarrow as pa
    from datasets import Dataset
    from datasets.table import InMemoryTable

    data_dir.mkdir(parents=True, exist_ok=True)
    paths = [data_dir / name for name in _shard_names(split, len(rows))]
    for i, path in enumerate(paths):
        shard = rows[i * MAX_ROWS_PER_SHARD : (i + 1) * MAX_ROWS_PER_SHARD]
        table = pa.Table.from_pylist(shard, schema=DOCUMENT_FEATURES.arrow_schema)
        with atomic_path(path) as tmp:
            Dataset(InMemoryTable(table)).to_parquet(str(tmp))
    return paths


def _write_failures(path: Path, failures: Sequence[DocumentFailure]) -> None:
    from ..atomic import atomic_open

    with atomic_open(path, "w") as fh:
        for failure in failures:
            fh.write(json.dumps(asdict(failure), ensure_ascii=False) + "\n")


def _assemble(
    config: BuildConfig,
    source: SourceInfo,
    records: dict[tuple[int, int], dict[str, Any]],
    fresh: dict[tuple[int, int], Document],
    n_docs: int,
    parse_failures: list[DocumentFailure],
    work: Path,
    card: dict[str, Any],
) -> tuple[list[Path], dict[str, Any], list[DocumentFailure]]:
    """Stage the split's new files from the records in input order, then commit them (see the module doc).

    ``fresh`` holds the copies renamed by this process (records resumed from disk are turned back into documents).
    """
    from .card import dataset_card_text
    from .isolation import used_names

    rows: list[dict[str, Any]] = []
    renamed: list[Document] = []
    leaks: list[int] = []
    failures = list(parse_failures)
    unparsed = {f.doc_index for f in parse_failures}
    for doc_index in range(n_docs):
        if doc_index in unparsed:
            continue
        for seed in config.seeds:
            record = records[(doc_index, seed)]
            if "row" in record:
                rows.append(record["row"])
                renamed.append(fresh.get((doc_index, seed)) or document_from_row(record["row"]))
                leaks.append(record["leaks"])
            else:
                err = record["error"]
                failures.append(DocumentFailure(doc_index, err["title"], seed, err["message"], err["type"]))
    failures.sort(key=lambda f: (f.doc_index, -1 if f.seed is None else f.seed))
    out, split = config.output_dir, config.split
    stage = work / STAGE_DIR
    shutil.rmtree(stage, ignore_errors=True)
    staged = _write_parquet(rows, stage / "data", split)
    names_used = used_names(renamed)
    stats = construction_statistics(renamed, leaks, names_used, n_docs, failures, source, config.seeds)
    stats["data_files"] = [f"data/{p.name}" for p in staged]
    stats["fingerprint"] = source.fingerprint(config.seeds)
    moves = [(f"data/{p.name}", f"data/{p.name}") for p in staged]
    errors_rel = f"errors/{split}.jsonl"
    deletes: list[str] = []
    if failures:
        _write_failures(stage / errors_rel, failures)
        moves.append((errors_rel, errors_rel))
    else:
        deletes.append(errors_rel)
    if config.export_json:
        write_documents(renamed, stage / "json" / f"{split}.json")
        moves.append((f"json/{split}.json", f"json/{split}.json"))
    all_stats = _read_json(out / STATISTICS_FILE, {})
    old = all_stats.get(split) or {}
    all_stats[split] = stats
    all_stats = dict(sorted(all_stats.items()))
    names = _read_json(out / NAMES_FILE, {"format": NAMES_FORMAT, "splits": {}})
    names["splits"][split] = sorted(names_used)
    names["splits"] = dict(sorted(names["splits"].items()))
    _write_json(stage / NAMES_FILE, names)
    _write_json(stage / STATISTICS_FILE, all_stats)
    sizes = {}
    for name, split_stats in all_stats.items():
        base = stage if name == split else out
        sizes[name] = sum((base / f).stat().st_size for f in split_stats["data_files"] if (base / f).exists())
    from ..atomic import write_text

    write_text(stage / "README.md", dataset_card_text(all_stats, sizes=sizes, **card))
    moves += [(NAMES_FILE, NAMES_FILE), (STATISTICS_FILE, STATISTICS_FILE), ("README.md", "README.md")]
    new_files = {dst for _, dst in moves}
    old_shards = set(old.get("data_files", []))
    if (out / "data").is_dir():
        old_shards |= {f"data/{p.name}" for p in (out / "data").iterdir() if is_shard_of(p.name, split)}
    deletes += sorted(old_shards - new_files)
    _write_json(work / COMMIT_FILE, {"split": split, "moves": moves, "deletes": deletes})  # the commit point
    _apply_commit(out, work)
    return [out / "data" / p.name for p in staged], stats, failures


def _result_of_existing(config: BuildConfig, n_units: int, start: float) -> BuildResult:
    """The result of a split that is already built as asked (``resume`` after the commit finished)."""
    stats = _read_json(config.output_dir / STATISTICS_FILE, {})[config.split]
    failures = []
    errors = config.output_dir / "errors" / f"{config.split}.jsonl"
    if errors.exists():
        failures = [DocumentFailure(**json.loads(line)) for line in errors.read_text(encoding="utf-8").splitlines()]
    return BuildResult(
        split=config.split,
        output_dir=config.output_dir,
        data_files=[config.output_dir / f for f in stats["data_files"]],
        statistics=stats,
        failures=failures,
        resumed=n_units,
        seconds=time.perf_counter() - start,
    )


def build_split(
    pipeline: Renamer,
    input_path: PathLike,
    config: BuildConfig,
    *,
    kb_name: str = "kb",
    kb_snapshot: str = "kb",
    renaming_config: Any = None,
    card: dict[str, Any] | None = None,
) -> BuildResult:
    """Rename every document of ``input_path`` with every seed into ``config.output_dir`` (see module doc).

    ``kb_name``/``kb_snapshot`` and ``renaming_config`` are recorded (they decide the output together with
    the input and the seeds); ``card`` holds :func:`envre_hf.renaming.card.write_dataset_card` options.
    Raises :class:`DocumentError` on the first bad document when ``config.on_error == "fail"``, and
    :class:`BuildError` for a folder that is not ours, a locked folder or a different build of the split.
    """
    start = time.perf_counter()
    try:
        raw = load_raw_documents(input_path)
        docs, parse_failures = parse_documents(raw, skip=config.on_error == "skip")
        check_unique_keys((d for d in docs if d is not None), input_path)
    except DocumentError as err:
        raise _in_file(err, input_path) from None
    source = SourceInfo(
        input_path=str(input_path),
        input_sha256=file_sha256(input_path),
        kb_name=kb_name,
        kb_snapshot=kb_snapshot,
        renaming_config=describe_config(renaming_config),
        config_fingerprint=renaming_config.fingerprint() if hasattr(renaming_config, "fingerprint") else "",
    )
    manifest = {
        "fingerprint": source.fingerprint(config.seeds),
        "split": config.split,
        "documents": len(docs),
        "seeds": list(config.seeds),
        "source": asdict(source),
    }
    units = [(i, seed) for i, doc in enumerate(docs) if doc is not None for seed in config.seeds]
    claim_output_folder(config.output_dir)
    with locked_output_folder(config.output_dir):
        repaired = finish_pending_commits(config.output_dir)
        work = config.output_dir / WORK_DIR / config.split
        built = _read_json(config.output_dir / STATISTICS_FILE, {}).get(config.split, {})
        if config.resume and not work.exists() and built.get("fingerprint") == manifest["fingerprint"] and (
            config.split in repaired
        ):
            return _result_of_existing(config, len(units), start)
        _check_replacement(config, source)
        work = _prepare_work_folder(config, manifest)
        log = _WorkLog(work, config.chunk_size)
        log.read()
        todo = [unit for unit in units if unit not in log.records]
        bar = tqdm(
            total=len(units),
            initial=len(units) - len(todo),
            desc=f"renaming {config.split}",
            unit="doc",
            disable=not config.progress,
        )
        with _settled_results():
            try:
                fresh = _run_units(pipeline, docs, todo, log, config, bar)
            except DocumentError as err:
                raise _in_file(err, input_path) from None
            finally:
                log.close()
                bar.close()
            gc.freeze()
            paths, stats, failures = _assemble(
                config, source, log.records, fresh, len(docs), parse_failures, work, card or {}
            )
    return BuildResult(
        split=config.split,
        output_dir=config.output_dir,
        data_files=paths,
        statistics=stats,
        failures=failures,
        resumed=len(units) - len(todo),
        seconds=time.perf_counter() - start,
    )


# --------------------------------------------------------------------------- publishing


@dataclass(frozen=True)
class UploadPlan:
    """Exactly what :func:`push_to_hub` sends: the files (relative paths) of the folder, to which repo."""

    repo_id: str
    repo_type: str
    folder: Path
    files: list[str]


#: Never uploaded: the resume work folder and temporary files.
IGNORE_PATTERNS = [f"{WORK_DIR}/**", "**/*.tmp", "*.tmp", MARKER_FILE]


def upload_plan(output_dir: PathLike, repo_id: str) -> UploadPlan:
    """The dry run of :func:`push_to_hub`."""
    import fnmatch

    folder = Path(output_dir)
    files = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not any(fnmatch.fnmatch(p.relative_to(folder).as_posix(), pat) for pat in IGNORE_PATTERNS)
    )
    return UploadPlan(repo_id=repo_id, repo_type="dataset", folder=folder, files=files)


def push_to_hub(
    output_dir: PathLike,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    endpoint: str | None = None,
    commit_message: str | None = None,
) -> Any:
    """Create the dataset repo ``repo_id`` (if needed) and upload the built folder in one commit.

    ``endpoint`` defaults to ``HF_ENDPOINT`` (else the Hub) and ``token`` to ``HF_TOKEN`` / the saved login.
    """
    from huggingface_hub import HfApi

    folder = Path(output_dir)
    if not (folder / "README.md").exists() or not (folder / "data").is_dir():
        raise BuildError(f"{folder} is not a built dataset folder (README.md and data/ missing)")
    if pending_commits(folder):
        raise BuildError(f"{folder} has an unfinished split replacement; run envre build --resume first")
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    return api.upload_folder(
        repo_id=repo_id,
        repo_type="dataset",
        folder_path=str(folder),
        ignore_patterns=IGNORE_PATTERNS,
        commit_message=commit_message or "Upload dataset built with envre build",
    )

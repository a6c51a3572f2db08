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
    from_dict,
    write_documents,
)
from ..kb.base import KnowledgeBaseError
from .isolation import NAMES_FILE, NAMES_FORMAT
from .leaks import find_leaks

PathLike = str | os.PathLike

#: Rows per parquet shard (Env-Re-DocRED test, 2,500 rows, fits one shard).
MAX_ROWS_PER_SHARD = 10_000
WORK_DIR = ".build"
STATISTICS_FILE = "statistics.json"
ON_ERROR = ("fail", "skip")


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {self.on_error!r}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and non-empty, got {self.seeds}")
        if not self.split or not self.split.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"split must be a plain name (letters, digits, _ and -), got {self.split!r}")
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


def load_raw_documents(path: PathLike) -> list[Any]:
    """The raw JSON objects of a DocRED JSON list or JSON Lines file, not parsed yet.

    Parsing happens per document in :func:`parse_documents`, so one malformed document does not stop
    the others from being renamed with ``on_error="skip"``.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".jsonl"):
        out = []
        for i, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as err:
                out.append(DocumentError(f"line {i + 1} is not valid JSON ({err.msg})", doc_index=len(out)))
        return out
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DocumentError(f"{path} is not valid JSON: {err}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise DocumentError(f"{path}: expected a JSON list of documents, got {type(data).__name__}")
    return data


def parse_documents(raw: Sequence[Any], skip: bool = True) -> tuple[list[Document | None], list[DocumentFailure]]:
    """Parse each raw document. With ``skip`` failures are returned (``None`` in the document list), otherwise
    the first one is raised. Validation is the pipeline's job (``RenamingConfig.validate``)."""
    docs: list[Document | None] = []
    failures: list[DocumentFailure] = []
    for i, obj in enumerate(raw):
        try:
            if isinstance(obj, DocumentError):
                raise obj
            docs.append(from_dict(obj, i))
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
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path, default: Any) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else default


def _prepare_work_folder(config: BuildConfig, manifest: dict[str, Any]) -> Path:
    work = config.output_dir / WORK_DIR / config.split
    manifest_path = work / "manifest.json"
    if work.exists():
        if not config.resume:
            raise BuildError(
                f"{work} holds an unfinished build of split {config.split!r}; pass --resume to continue it "
                f"or delete that folder to start again"
            )
        previous = _read_json(manifest_path, {})
        if previous.get("fingerprint") != manifest["fingerprint"]:
            raise BuildError(
                f"cannot resume {work}: it was started with a different input, seeds, KB snapshot or renaming "
                f"config (manifest {manifest_path}); delete that folder to start again"
            )
        return work
    work.mkdir(parents=True)
    _write_json(manifest_path, manifest)
    return work


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
    used, KB snapshot, seeds."""
    from .stats import match_counts, substitution_rates

    return {
        "source_documents": source_docs,
        "seeds": list(seeds),
        "renamed_documents": len(renamed),
        "failed": len(failures),
        "failed_documents": len({f.doc_index for f in failures}),
        "substitution_rates": substitution_rates(renamed),
        "type_matches": match_counts(renamed),
        "leaks": {"documents": sum(1 for n in leaks if n), "occurrences": sum(leaks)},
        "names_used": len(names_used),
        "kb": {"name": source.kb_name, "snapshot": source.kb_snapshot},
        "renaming_config": source.renaming_config,
        "input": {"path": Path(source.input_path).name, "sha256": source.input_sha256},
    }


# --------------------------------------------------------------------------- output folder


def _shard_paths(data_dir: Path, split: str, n_rows: int) -> list[Path]:
    n_shards = max(1, -(-n_rows // MAX_ROWS_PER_SHARD))
    return [data_dir / f"{split}-{i:05d}-of-{n_shards:05d}.parquet" for i in range(n_shards)]


def _write_parquet(rows: list[dict[str, Any]], data_dir: Path, split: str) -> list[Path]:
    """Parquet shards with the datasets schema metadata. Rows go to Arrow in one C++ call (what
    ``Dataset.from_list`` writes too, byte for byte, at twice the cost)."""
    import pyarrow as pa
    from datasets import Dataset
    from datasets.table import InMemoryTable

    data_dir.mkdir(parents=True, exist_ok=True)
    for stale in data_dir.glob(f"{split}-*.parquet"):
        stale.unlink()
    paths = _shard_paths(data_dir, split, len(rows))
    for i, path in enumerate(paths):
        shard = rows[i * MAX_ROWS_PER_SHARD : (i + 1) * MAX_ROWS_PER_SHARD]
        table = pa.Table.from_pylist(shard, schema=DOCUMENT_FEATURES.arrow_schema)
        Dataset(InMemoryTable(table)).to_parquet(str(path))
    return paths


def _write_failures(output_dir: Path, split: str, failures: Sequence[DocumentFailure]) -> None:
    path = output_dir / "errors" / f"{split}.jsonl"
    if not failures:
        if path.exists():
            path.unlink()
        return
    path.parent.mkdir(exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for failure in failures:
            fh.write(json.dumps(asdict(failure), ensure_ascii=False) + "\n")


def _assemble(
    config: BuildConfig,
    source: SourceInfo,
    records: dict[tuple[int, int], dict[str, Any]],
    fresh: dict[tuple[int, int], Document],
    n_docs: int,
    parse_failures: list[DocumentFailure],
) -> tuple[list[Path], dict[str, Any], list[DocumentFailure]]:
    """Write the split from the records in input order; ``fresh`` holds the copies renamed by this process
    (records resumed from disk are turned back into documents)."""
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
    out = config.output_dir
    paths = _write_parquet(rows, out / "data", config.split)
    names_used = used_names(renamed)
    stats = construction_statistics(renamed, leaks, names_used, n_docs, failures, source, config.seeds)
    stats["data_files"] = [p.relative_to(out).as_posix() for p in paths]
    stats["fingerprint"] = source.fingerprint(config.seeds)
    _write_failures(out, config.split, failures)
    all_stats = _read_json(out / STATISTICS_FILE, {})
    all_stats[config.split] = stats
    _write_json(out / STATISTICS_FILE, dict(sorted(all_stats.items())))
    names = _read_json(out / NAMES_FILE, {"format": NAMES_FORMAT, "splits": {}})
    names["splits"][config.split] = sorted(names_used)
    names["splits"] = dict(sorted(names["splits"].items()))
    _write_json(out / NAMES_FILE, names)
    if config.export_json:
        write_documents(renamed, out / "json" / f"{config.split}.json")
    return paths, stats, failures


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
    Raises :class:`DocumentError` on the first bad document when ``config.on_error == "fail"``.
    """
    from .card import write_dataset_card

    start = time.perf_counter()
    raw = load_raw_documents(input_path)
    docs, parse_failures = parse_documents(raw, skip=config.on_error == "skip")
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
    config.output_dir.mkdir(parents=True, exist_ok=True)
    work = _prepare_work_folder(config, manifest)
    log = _WorkLog(work, config.chunk_size)
    log.read()
    units = [(i, seed) for i, doc in enumerate(docs) if doc is not None for seed in config.seeds]
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
        finally:
            log.close()
            bar.close()
        gc.freeze()
        paths, stats, failures = _assemble(config, source, log.records, fresh, len(docs), parse_failures)
    write_dataset_card(config.output_dir, **(card or {}))
    shutil.rmtree(work)
    work_root = config.output_dir / WORK_DIR
    if work_root.exists() and not any(work_root.iterdir()):
        work_root.rmdir()
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
IGNORE_PATTERNS = [f"{WORK_DIR}/**", "**/*.tmp", "*.tmp"]


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
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    return api.upload_folder(
        repo_id=repo_id,
        repo_type="dataset",
        folder_path=str(folder),
        ignore_patterns=IGNORE_PATTERNS,
        commit_message=commit_message or "Upload dataset built with envre build",
    )

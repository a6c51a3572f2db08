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

This module only puts the jobs together, each owned by one module of :mod:`envre_hf.renaming`:

* :mod:`~envre_hf.renaming.inputs`: reading the input (bad documents listed, not fatal) and its fingerprints;
* :mod:`~envre_hf.renaming.output_folder`: the owned, locked folder and the atomic split commit (journal);
* :mod:`~envre_hf.renaming.worklog`: the resumable record of finished (document, seed) pairs;
* :mod:`~envre_hf.renaming.driver`: the renaming itself (process pool, progress bar, failures);
* :mod:`~envre_hf.renaming.stats`, :mod:`~envre_hf.renaming.split_writer`, :mod:`~envre_hf.renaming.card`:
  statistics, parquet shards and failure file, dataset card;
* :mod:`~envre_hf.renaming.hub_upload`: publishing the folder.

Nothing lost, nothing half-written: a non-empty folder not written by envre build is refused, and so is
replacing a split built from another input, seeds, KB snapshot or renaming config unless ``overwrite=True``;
a kill leaves the old output or a pending commit that every later build (and ``resume``) finishes first.
A killed build resumes from its work log, and a resumed build is byte-identical to an uninterrupted one.
"""

from __future__ import annotations

import gc
import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..documents import Document, DocumentError
from ..documents.build_folder import STATISTICS_FILE, WORK_DIR, is_shard_of, pending_commits
from .driver import ON_ERROR, DocumentFailure, Renamer, RenamingDriver, settled_results
from .hub_upload import IGNORE_PATTERNS, UploadPlan, push_to_hub, upload_plan
from .inputs import PathLike, SourceInfo, describe_config, file_sha256, in_file, read_input_documents, source_info
from .output_folder import (
    MARKER_FILE,
    MARKER_FORMAT,
    BuildError,
    claim_output_folder,
    finish_pending_commits,
    locked_output_folder,
    read_names,
    read_statistics,
)
from .split_writer import MAX_ROWS_PER_SHARD, assemble_split
from .worklog import WorkLog, prepare_work_folder, unit_record

try:  # what ``datasets`` accepts as a split name (``test-hard`` is not: its files would match ``test-*``)
    from datasets.naming import _split_re as _DATASETS_SPLIT_RE
except ImportError:  # pragma: no cover - older/newer datasets
    _DATASETS_SPLIT_RE = r"^\w+(\.\w+)*$"

#: Names of the build's parts, importable from here as before the split into modules.
__all__ = [
    "IGNORE_PATTERNS",
    "MARKER_FILE",
    "MARKER_FORMAT",
    "MAX_ROWS_PER_SHARD",
    "ON_ERROR",
    "STATISTICS_FILE",
    "WORK_DIR",
    "BuildConfig",
    "BuildError",
    "BuildResult",
    "DocumentFailure",
    "Renamer",
    "SourceInfo",
    "UploadPlan",
    "build_split",
    "check_split_name",
    "claim_output_folder",
    "describe_config",
    "file_sha256",
    "finish_pending_commits",
    "is_shard_of",
    "locked_output_folder",
    "pending_commits",
    "push_to_hub",
    "upload_plan",
]


def check_split_name(split: str) -> str:
    """``split`` when ``datasets`` accepts it as a split name; ``ValueError`` (before anything is written) if not."""
    if not isinstance(split, str) or not re.match(_DATASETS_SPLIT_RE, split):
        raise ValueError(
            f"split name {split!r} is not accepted by datasets (letters, digits and _, optionally dot-separated; "
            f"e.g. test_hard instead of test-hard)"
        )
    return split


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
    old = read_statistics(config.output_dir).get(config.split)
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


def _result_of_existing(config: BuildConfig, n_units: int, start: float) -> BuildResult:
    """The result of a split that is already built as asked (``resume`` after the commit finished)."""
    stats = read_statistics(config.output_dir)[config.split]
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
    docs, parse_failures = read_input_documents(input_path, skip=config.on_error == "skip")
    source = source_info(input_path, kb_name, kb_snapshot, renaming_config)
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
        built = read_statistics(config.output_dir).get(config.split, {})
        read_names(config.output_dir)  # checked before anything is written (the split's commit rewrites both)
        if config.resume and not work.exists() and built.get("fingerprint") == manifest["fingerprint"] and (
            config.split in repaired
        ):
            return _result_of_existing(config, len(units), start)
        _check_replacement(config, source)
        work = prepare_work_folder(
            config.output_dir, config.split, manifest, resume=config.resume, overwrite=config.overwrite
        )
        log = WorkLog(work, config.chunk_size)
        log.read()
        # With on_error="fail", a failure recorded by an earlier run with "skip" is renamed again (and stops this
        # build, as an uninterrupted "fail" build would), never listed as skipped.
        retry = config.on_error == "fail"
        todo = [unit for unit in units if unit not in log.records or (retry and "error" in log.records[unit])]
        driver = RenamingDriver(
            pipeline,
            on_error=config.on_error,
            num_proc=config.num_proc,
            chunk_size=config.chunk_size,
            count_leaks=True,
            with_rows=True,
        )
        fresh: dict[tuple[int, int], Document] = {}  # the copies renamed here (resumed ones come from their rows)
        with settled_results():
            try:
                for result in driver.run(
                    docs, todo, desc=f"renaming {config.split}", progress=config.progress, total=len(units)
                ):
                    log.append(unit_record(result))
                    if result.document is not None:
                        fresh[(result.doc_index, result.seed)] = result.document
            except DocumentError as err:
                raise in_file(err, input_path) from None
            finally:
                log.close()
            gc.freeze()
            paths, stats, failures = assemble_split(
                config.output_dir, config.split, config.seeds, source, log.records, fresh, len(docs),
                parse_failures, work, card or {}, export_json=config.export_json,
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

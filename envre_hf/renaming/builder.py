"""Building a renamed benchmark split into a dataset folder (layout and guarantees: docs/benchmarks.md).

Only puts the jobs together, each owned by one module (``inputs``, ``output_folder``, ``driver``, ``stats``,
``split_writer``, ``card``); every document is renamed before the first file is replaced.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..documents import DocumentError
from ..failures import Remedy
from .driver import ON_ERROR, DocumentFailure, Renamer, RenamingDriver
from .inputs import PathLike, SourceInfo, in_file, read_input_documents, source_info
from .output_folder import BuildError, claim_output_folder, locked_output_folder, read_names, read_statistics
from .split_writer import write_split

#: What ``datasets`` accepts as a split name (its ``naming._split_re``): ``test-hard``'s files would match ``test-*``.
_DATASETS_SPLIT_RE = r"^\w+(\.\w+)*$"


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
    export_json: bool = False
    #: Worker processes (fork); each takes ``chunk_size`` (document, seed) pairs at a time.
    num_proc: int = 1
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
    seconds: float = 0.0


def _difference(old: dict[str, Any], source: SourceInfo, seeds: list[int]) -> str:
    """What differs between the split's statistics and this build, for the refusal message."""
    kb = {"name": source.kb_name, "snapshot": source.kb_snapshot}
    parts = []
    if old.get("input", {}).get("sha256") != source.input_sha256:
        parts.append(f"input {old.get('input', {}).get('path')!r} -> {Path(source.input_path).name!r}")
    if old.get("seeds") != seeds:
        parts.append(f"seeds {old.get('seeds')} -> {seeds}")
    if old.get("kb") != kb:
        parts.append(f"KB {old.get('kb')} -> {kb}")
    if old.get("renaming_config") != source.renaming_config:
        parts.append("renaming config")
    return ", ".join(parts) or "renaming config"


def _check_replacement(config: BuildConfig, source: SourceInfo) -> None:
    """Refuse to replace a split built from something else, unless ``overwrite``."""
    old = read_statistics(config.output_dir).get(config.split)
    if not old or config.overwrite or old.get("fingerprint") == source.fingerprint(config.seeds):
        return
    changed = _difference(old, source, list(config.seeds))
    raise BuildError(Remedy(
        f"{config.output_dir} already holds split {config.split!r} built differently ({changed}); pass ", "overwrite",
        after=" to replace it, or build into another folder",
    ))


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
    """Rename every document of ``input_path`` with every seed into ``config.output_dir``.

    ``kb_name``/``kb_snapshot`` and ``renaming_config`` are recorded (with the input and seeds they decide the
    output); ``card`` holds :func:`~envre_hf.renaming.card.write_dataset_card` options. Raises
    :class:`DocumentError` (``on_error="fail"``) or :class:`BuildError` (a folder not ours, locked, or holding
    a different build of the split).
    """
    start = time.perf_counter()
    docs, parse_failures = read_input_documents(input_path, skip=config.on_error == "skip")
    source = source_info(input_path, kb_name, kb_snapshot, renaming_config)
    units = [(i, seed) for i, doc in enumerate(docs) if doc is not None for seed in config.seeds]
    claim_output_folder(config.output_dir)
    with locked_output_folder(config.output_dir):
        read_names(config.output_dir)  # checked before anything is written (the split's write rewrites it)
        _check_replacement(config, source)
        driver = RenamingDriver(
            pipeline,
            on_error=config.on_error,
            num_proc=config.num_proc,
            chunk_size=config.chunk_size,
            count_leaks=True,
            with_rows=True,
        )
        try:
            results = list(driver.run(docs, units, desc=f"renaming {config.split}", progress=config.progress))
        except DocumentError as err:
            raise in_file(err, input_path) from None
        paths, stats, failures = write_split(
            config.output_dir, config.split, config.seeds, source, results, len(docs), parse_failures,
            card or {}, docs, export_json=config.export_json,
        )
    return BuildResult(
        split=config.split,
        output_dir=config.output_dir,
        data_files=paths,
        statistics=stats,
        failures=failures,
        seconds=time.perf_counter() - start,
    )

"""Building a renamed benchmark split (Env-DocRED / Env-Re-DocRED) into a complete dataset repository.

``build_split`` renames every input document once per seed and writes one split of a dataset folder
that ``datasets.load_dataset(folder)`` loads and ``push_to_hub`` publishes:

* ``data/<split>-00000-of-0000N.parquet``: rows in input order (document, then seed), schema
  :data:`envre_hf.documents.DOCUMENT_FEATURES` (config ``default``); ``data/seed<k>/<split>-*.parquet`` the rows
  of one seed (config ``seed<k>``) and ``data/original/<split>-*.parquet`` the unrenamed input (config
  ``original``), so ``load_dataset(folder, "seed0")`` / ``load_dataset(folder, "original")`` work; every row has
  ``original_doc_id``, the original's title, to join a copy to its original;
* ``README.md``: the dataset card (see :mod:`envre_hf.renaming.card`), rewritten after every split;
* ``statistics.json``: construction statistics per split (also what the card and the CLI print);
* ``names_used.json``: the new names each split introduced, for ``--exclude-names-from`` isolation;
* ``errors/<split>.jsonl``: every (document, seed) that was not renamed, with its reason
  (``on_error="skip"``); nothing is dropped silently;
* ``json/<split>.json`` with ``export_json``: the split in DocRED JSON with provenance fields.

This module only puts the jobs together, each owned by one module of :mod:`envre_hf.renaming`:

* :mod:`~envre_hf.renaming.inputs`: reading the input (bad documents listed, not fatal) and its fingerprints;
* :mod:`~envre_hf.renaming.output_folder`: the owned, locked folder and the mark of an unfinished split;
* :mod:`~envre_hf.renaming.driver`: the renaming itself (process pool, progress bar, failures);
* :mod:`~envre_hf.renaming.stats`, :mod:`~envre_hf.renaming.split_writer`, :mod:`~envre_hf.renaming.card`:
  statistics, parquet shards and failure file, dataset card;
* :mod:`~envre_hf.renaming.hub_upload`: publishing the folder.

Nothing lost, nothing half-written: a non-empty folder not written by envre build is refused, and so is
replacing a split built from another input, seeds, KB snapshot or renaming config unless ``overwrite=True``.
Every document is renamed before the first file is replaced; a build stopped while it writes leaves its split
marked unfinished (readers refuse it), and the same build run again writes the bytes of an uninterrupted one.
The slow build, on Wikidata over HTTP, reruns from its reply cache.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..documents import DocumentError
from .driver import ON_ERROR, DocumentFailure, Renamer, RenamingDriver
from .inputs import PathLike, SourceInfo, in_file, read_input_documents, source_info
from .output_folder import BuildError, claim_output_folder, locked_output_folder, read_names, read_statistics
from .split_writer import write_split

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
    #: The work unit of a worker process.
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
        f"pass overwrite=True to replace it, or build into another folder"
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

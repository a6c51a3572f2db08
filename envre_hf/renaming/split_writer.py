"""Writing one split of a build folder: parquet shards (``default``, one config per seed, ``original``), failure
file, JSON export, names, statistics, card; rows in input order, each file replaced atomically, card last.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..atomic import atomic_open, atomic_path, clean_temporary_files, write_json
from ..documents import Document, document_to_row, write_documents
from ..documents.hf import rows_to_dataset
from ..documents.build_folder import STATISTICS_FILE, WORK_DIR, is_shard_of
from .card import write_dataset_card
from .driver import DocumentFailure, RenamedUnit
from .inputs import SourceInfo
from .isolation import NAMES_FILE, used_names
from .output_folder import read_names, read_statistics, unfinished_split
from .stats import construction_statistics

#: Rows per parquet shard (Env-Re-DocRED test, 2,500 rows, fits one shard).
MAX_ROWS_PER_SHARD = 10_000


def shard_names(split: str, n_rows: int) -> list[str]:
    n_shards = max(1, -(-n_rows // MAX_ROWS_PER_SHARD))
    return [f"{split}-{i:05d}-of-{n_shards:05d}.parquet" for i in range(n_shards)]


def write_parquet(rows: list[dict[str, Any]], data_dir: Path, split: str) -> list[Path]:
    """Parquet shards with the datasets schema metadata."""
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = [data_dir / name for name in shard_names(split, len(rows))]
    for i, path in enumerate(paths):
        with atomic_path(path) as tmp:
            rows_to_dataset(rows[i * MAX_ROWS_PER_SHARD : (i + 1) * MAX_ROWS_PER_SHARD]).to_parquet(str(tmp))
    return paths


#: The config of the unrenamed input documents.
ORIGINAL_CONFIG = "original"


def seed_config(seed: int) -> str:
    """The config name of one seed's renamed copies (``seed0``)."""
    return f"seed{seed}"


def _is_config_dir(name: str) -> bool:
    return name == ORIGINAL_CONFIG or re.fullmatch(r"seed\d+", name) is not None


def config_data_files(split: str, seeds: Sequence[int], n_rows: dict[str, int]) -> dict[str, list[str]]:
    """The shards of each per-seed config and of ``original`` for ``split`` (``n_rows`` rows per config)."""
    names = [seed_config(s) for s in seeds] + [ORIGINAL_CONFIG]
    return {name: [f"data/{name}/{f}" for f in shard_names(split, n_rows.get(name, 0))] for name in names}


def write_split(
    out: Path,
    split: str,
    seeds: Sequence[int],
    source: SourceInfo,
    results: Sequence[RenamedUnit],
    n_docs: int,
    parse_failures: list[DocumentFailure],
    card: dict[str, Any],
    originals: Sequence[Document | None],
    *,
    export_json: bool = False,
) -> tuple[list[Path], dict[str, Any], list[DocumentFailure]]:
    """Write the split of ``results`` (in input order) into ``out``; ``originals`` (``None`` where unreadable)
    make the ``original`` config. Returns the ``default`` shards, the statistics and the units not renamed."""
    done = [r for r in results if r.failure is None]
    rows = [r.row for r in done]
    config_rows = {seed_config(s): [r.row for r in done if r.seed == s] for s in seeds}
    config_rows[ORIGINAL_CONFIG] = [document_to_row(doc) for doc in originals if doc is not None]
    renamed = [r.document for r in done]
    failures = sorted(
        [*parse_failures, *(r.failure for r in results if r.failure is not None)],
        key=lambda f: (f.doc_index, -1 if f.seed is None else f.seed),
    )
    names_used = used_names(renamed)
    stats = construction_statistics(renamed, [r.leaks for r in done], names_used, n_docs, failures, source, seeds)
    stats["data_files"] = [f"data/{name}" for name in shard_names(split, len(rows))]
    stats["config_rows"] = {name: len(part) for name, part in config_rows.items()}
    stats["config_data_files"] = config_data_files(split, seeds, stats["config_rows"])
    stats["fingerprint"] = source.fingerprint(seeds)
    all_stats = read_statistics(out)
    old = all_stats.get(split) or {}
    all_stats[split] = stats
    names = read_names(out)
    names["splits"][split] = sorted(names_used)
    names["splits"] = dict(sorted(names["splits"].items()))
    # statistics.json is a file people can edit: only shards of this split in data/ are ever deleted
    stale = {
        out / f for f in old.get("data_files", [])
        if isinstance(f, str) and f.startswith("data/") and is_shard_of(f[len("data/"):], split)
    }
    if (out / "data").is_dir():
        stale |= {p for p in (out / "data").iterdir() if is_shard_of(p.name, split)}
        configs = [d for d in (out / "data").iterdir() if d.is_dir() and _is_config_dir(d.name)]
        stale |= {p for d in configs for p in d.iterdir() if is_shard_of(p.name, split)}  # e.g. a seed dropped
    with unfinished_split(out, split):
        for folder in (out, out / "data", out / "errors", out / "json", out / WORK_DIR):
            clean_temporary_files(folder)  # what a killed write left
        shards = write_parquet(rows, out / "data", split)
        written = set(shards)
        for name, part in config_rows.items():
            clean_temporary_files(out / "data" / name)
            written.update(write_parquet(part, out / "data" / name, split))
        errors = out / "errors" / f"{split}.jsonl"
        if failures:
            with atomic_open(errors, "w") as fh:
                fh.writelines(json.dumps(asdict(failure), ensure_ascii=False) + "\n" for failure in failures)
        else:
            errors.unlink(missing_ok=True)
        if export_json:
            write_documents(renamed, out / "json" / f"{split}.json")
        write_json(out / NAMES_FILE, names, sort_keys=False)
        write_json(out / STATISTICS_FILE, dict(sorted(all_stats.items())), sort_keys=False)
        write_dataset_card(out, **card)
        for path in stale - written:
            path.unlink(missing_ok=True)
    return shards, stats, failures

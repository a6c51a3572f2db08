"""Writing one split of a build folder: parquet shards, failure file, statistics, names, card, in one commit.

The split is assembled from the work log's records in input order (document, then seed), whatever order they
were renamed in, so a resumed or parallel build writes the same bytes as a plain one. Its files are staged and
committed through the journal of :mod:`envre_hf.renaming.output_folder`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..atomic import atomic_open, atomic_path, write_text
from ..documents import DOCUMENT_FEATURES, Document, document_from_row, write_documents
from ..documents.build_folder import COMMIT_FILE, STATISTICS_FILE, is_shard_of
from .card import dataset_card_text
from .driver import DocumentFailure
from .inputs import SourceInfo
from .isolation import NAMES_FILE, used_names
from .output_folder import STAGE_DIR, apply_commit, read_names, read_statistics, write_json_file
from .stats import construction_statistics

#: Rows per parquet shard (Env-Re-DocRED test, 2,500 rows, fits one shard).
MAX_ROWS_PER_SHARD = 10_000


def shard_names(split: str, n_rows: int) -> list[str]:
    n_shards = max(1, -(-n_rows // MAX_ROWS_PER_SHARD))
    return [f"{split}-{i:05d}-of-{n_shards:05d}.parquet" for i in range(n_shards)]


def write_parquet(rows: list[dict[str, Any]], data_dir: Path, split: str) -> list[Path]:
    """Parquet shards with the datasets schema metadata. Rows go to Arrow in one C++ call (what
    ``Dataset.from_list`` writes too, byte for byte, at twice the cost)."""
    import pyarrow as pa
    from datasets import Dataset
    from datasets.table import InMemoryTable

    data_dir.mkdir(parents=True, exist_ok=True)
    paths = [data_dir / name for name in shard_names(split, len(rows))]
    for i, path in enumerate(paths):
        shard = rows[i * MAX_ROWS_PER_SHARD : (i + 1) * MAX_ROWS_PER_SHARD]
        table = pa.Table.from_pylist(shard, schema=DOCUMENT_FEATURES.arrow_schema)
        with atomic_path(path) as tmp:
            Dataset(InMemoryTable(table)).to_parquet(str(tmp))
    return paths


def write_failures(path: Path, failures: Sequence[DocumentFailure]) -> None:
    with atomic_open(path, "w") as fh:
        for failure in failures:
            fh.write(json.dumps(asdict(failure), ensure_ascii=False) + "\n")


def assemble_split(
    output_dir: Path,
    split: str,
    seeds: Sequence[int],
    source: SourceInfo,
    records: dict[tuple[int, int], dict[str, Any]],
    fresh: dict[tuple[int, int], Document],
    n_docs: int,
    parse_failures: list[DocumentFailure],
    work: Path,
    card: dict[str, Any],
    *,
    export_json: bool = False,
) -> tuple[list[Path], dict[str, Any], list[DocumentFailure]]:
    """Stage the split's new files from the records in input order, then commit them (see the module doc).

    ``records`` maps (document index, seed) to its work-log record; ``card`` holds
    :func:`~envre_hf.renaming.card.dataset_card_text` options. ``fresh`` holds the copies renamed by this process (records resumed from disk are turned back into documents).
    """
    rows: list[dict[str, Any]] = []
    renamed: list[Document] = []
    leaks: list[int] = []
    failures = list(parse_failures)
    unparsed = {f.doc_index for f in parse_failures}
    for doc_index in range(n_docs):
        if doc_index in unparsed:
            continue
        for seed in seeds:
            record = records[(doc_index, seed)]
            if "row" in record:
                rows.append(record["row"])
                renamed.append(fresh.get((doc_index, seed)) or document_from_row(record["row"]))
                leaks.append(record["leaks"])
            else:
                err = record["error"]
                failures.append(DocumentFailure(doc_index, err["title"], seed, err["message"], err["type"]))
    failures.sort(key=lambda f: (f.doc_index, -1 if f.seed is None else f.seed))
    out = output_dir
    stage = work / STAGE_DIR
    shutil.rmtree(stage, ignore_errors=True)
    staged = write_parquet(rows, stage / "data", split)
    names_used = used_names(renamed)
    stats = construction_statistics(renamed, leaks, names_used, n_docs, failures, source, seeds)
    stats["data_files"] = [f"data/{p.name}" for p in staged]
    stats["fingerprint"] = source.fingerprint(seeds)
    moves = [(f"data/{p.name}", f"data/{p.name}") for p in staged]
    errors_rel = f"errors/{split}.jsonl"
    deletes: list[str] = []
    if failures:
        write_failures(stage / errors_rel, failures)
        moves.append((errors_rel, errors_rel))
    else:
        deletes.append(errors_rel)
    if export_json:
        write_documents(renamed, stage / "json" / f"{split}.json")
        moves.append((f"json/{split}.json", f"json/{split}.json"))
    all_stats = read_statistics(out)
    old = all_stats.get(split) or {}
    all_stats[split] = stats
    all_stats = dict(sorted(all_stats.items()))
    names = read_names(out)
    names["splits"][split] = sorted(names_used)
    names["splits"] = dict(sorted(names["splits"].items()))
    write_json_file(stage / NAMES_FILE, names)
    write_json_file(stage / STATISTICS_FILE, all_stats)
    sizes = {}
    for name, split_stats in all_stats.items():
        base = stage if name == split else out
        sizes[name] = sum(
            (base / f).stat().st_size for f in split_stats["data_files"] if isinstance(f, str) and (base / f).exists()
        )
    write_text(stage / "README.md", dataset_card_text(all_stats, sizes=sizes, **card))
    moves += [(NAMES_FILE, NAMES_FILE), (STATISTICS_FILE, STATISTICS_FILE), ("README.md", "README.md")]
    new_files = {dst for _, dst in moves}
    # statistics.json is a file people can edit: only shards of this split in data/ are ever deleted
    old_shards = {
        f for f in old.get("data_files", [])
        if isinstance(f, str) and f.startswith("data/") and is_shard_of(f[len("data/"):], split)
    }
    if (out / "data").is_dir():
        old_shards |= {f"data/{p.name}" for p in (out / "data").iterdir() if is_shard_of(p.name, split)}
    deletes += sorted(old_shards - new_files)
    write_json_file(work / COMMIT_FILE, {"split": split, "moves": moves, "deletes": deletes})  # the commit point
    apply_commit(out, work)
    return [out / "data" / p.name for p in staged], stats, failures


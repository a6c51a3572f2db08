"""Speed of ``envre build``: renamed documents per second for Env-Re-DocRED test (500 documents x 5 seeds)
with the offline corpus KB (pool = Re-DocRED dev) on one core (target: >= 500 docs/s), and the Wikidata dump
indexing rate (``bench_dump_indexing`` of benchmarks/bench_kb_dump.py).

Figures: the pipeline alone (``RenamingPipeline.rename_with_report`` over all pairs) and the whole build
(``build_split``: renaming, parquet, statistics with the coherence figures, card), each as
wall-clock and CPU docs/s; CPU figures are the fair ones on a machine shared with other jobs. The process is
pinned to one core. The build's text-coherence line (docs/coherence.md) is printed too.

    python3 benchmarks/bench_build.py [--input PATH] [--pool PATH] [--seeds 5] [--dump-items 50000 | 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from envre_hf.documents import read_documents
from envre_hf.kb.corpus import CorpusKB
from envre_hf.renaming import RenamingPipeline
from envre_hf.renaming.builder import BuildConfig, build_split
from envre_hf.renaming.card import coherence_markdown

SHARED = Path(os.environ.get("ENVRE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


class Timer:
    """Wall-clock and CPU seconds of a block."""

    def __enter__(self) -> "Timer":
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        core = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
        return f"core {core}"
    return "not pinned (no sched_setaffinity)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=SHARED / "redocred" / "test_revised.json")
    parser.add_argument("--pool", type=Path, default=SHARED / "redocred" / "dev_revised.json")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--dump-items", type=int, default=50_000, help="synthetic dump size; 0 skips it")
    args = parser.parse_args(argv)

    print(f"pinned to {pin_to_one_core()}")
    docs = read_documents(args.input)
    with Timer() as t:
        kb = CorpusKB(read_documents(args.pool))
    print(f"corpus KB from {args.pool.name}: {len(kb)} items in {t.wall:.2f} s")
    seeds = range(args.seeds)
    n = len(docs) * args.seeds

    pipeline = RenamingPipeline(kb)
    with Timer() as t:
        for doc in docs:
            for seed in seeds:
                pipeline.rename_with_report(doc, seed)
    print(f"pipeline only: {n} renamed documents, {n / t.wall:.0f} docs/s wall, {n / t.cpu:.0f} docs/s CPU")

    with tempfile.TemporaryDirectory() as tmp:
        config = BuildConfig(Path(tmp) / "env_redocred", seeds=tuple(seeds), progress=False)
        pipeline = RenamingPipeline(kb)  # fresh caches, like a new envre build
        with Timer() as t:
            result = build_split(pipeline, args.input, config, kb_name=kb.name, kb_snapshot=kb.snapshot_id())
    print(" ".join(coherence_markdown(result.statistics.get("coherence"))))
    print(
        f"whole build (Env-Re-DocRED {args.input.name}, {len(docs)} x {args.seeds}): "
        f"{n / t.wall:.0f} docs/s wall, {n / t.cpu:.0f} docs/s CPU (target >= 500), {t.wall:.2f} s"
    )

    if args.dump_items:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        try:
            from bench_kb_dump import bench_dump_indexing
        except ImportError as err:
            print(f"dump indexing: skipped (benchmarks/bench_kb_dump.py not available: {err})")
            return 0
        result = bench_dump_indexing(args.dump_items)
        print(
            f"dump indexing: {result['items_indexed']} items, {result['items_per_second']:.0f} items/s, "
            f"peak RSS {result['peak_rss_mib']} MiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

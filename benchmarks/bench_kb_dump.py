"""Speed and memory of Wikidata dump indexing (``envre_hf.kb.wikidata_dump.index_dump``).

Writes a synthetic dump of N items in the real format (``[``, one entity per line with ``,``, ``]``;
humans, cities, countries, companies, bands, universities with claims, qualifiers, references),
indexes it into SQLite and prints items/second and the resident memory (RSS) sampled during
indexing. Constant memory means the peak does not grow with N: compare ``--items`` sizes.

    python3 benchmarks/bench_kb_dump.py [--items 200000] [--compression json.gz] [--batch-size 5000]

``bench_dump_indexing(n_items)`` returns the figures as a dict (used by benchmarks/bench_build.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from envre_hf.kb.wikidata_dump import DEFAULT_BATCH_SIZE, index_dump

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the synthetic dump is a test fixture
from kb_fixtures.synthetic import write_synthetic_dump  # noqa: E402

MIB = 1024 * 1024


def current_rss() -> int:
    """Resident memory of this process in bytes (psutil when installed, else /proc)."""
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except ImportError:  # pragma: no cover - psutil is in the [bench] extra
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRSS:
    """Samples RSS in a background thread; ``peak`` is the highest value seen while active."""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.peak = current_rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, current_rss())
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, current_rss())


def bench_dump_indexing(
    n_items: int = 200_000,
    *,
    compression: str = "json.gz",
    batch_size: int = DEFAULT_BATCH_SIZE,
    seed: int = 0,
    workdir: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Generate a synthetic dump of ``n_items`` items, index it, and return the figures."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        dump = Path(tmp) / f"synthetic-{n_items}.{compression}"
        started = time.perf_counter()
        write_synthetic_dump(dump, n_items, seed=seed)
        generate_seconds = time.perf_counter() - started
        index = Path(tmp) / "index.sqlite"
        rss_before = current_rss()
        with PeakRSS() as peak:
            stats = index_dump(dump, index, resume=False, batch_size=batch_size, progress=progress)
        return {
            "n_items": n_items,
            "items_indexed": stats.items,
            "compression": compression,
            "batch_size": batch_size,
            "dump_mib": round(dump.stat().st_size / MIB, 2),
            "index_mib": round(index.stat().st_size / MIB, 2),
            "generate_seconds": round(generate_seconds, 2),
            "index_seconds": round(stats.seconds, 2),
            "items_per_second": round(stats.items / stats.seconds, 1),
            "rss_before_mib": round(rss_before / MIB, 1),
            "peak_rss_mib": round(peak.peak / MIB, 1),
            "peak_rss_increase_mib": round((peak.peak - rss_before) / MIB, 1),
            "max_rss_process_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[200_000], help="dump sizes to benchmark")
    parser.add_argument("--compression", default="json.gz", choices=["json", "json.gz", "json.bz2"])
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--workdir", default=None, help="folder for the temporary dump and index")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    for n in args.items:
        result = bench_dump_indexing(n, compression=args.compression, batch_size=args.batch_size,
                                     workdir=args.workdir, progress=args.progress)
        print(json.dumps(result))
        print(
            f"{n} items ({args.compression}, {result['dump_mib']} MiB): {result['items_per_second']:.0f} items/s, "
            f"{result['index_seconds']} s; peak RSS {result['peak_rss_mib']} MiB "
            f"(+{result['peak_rss_increase_mib']} MiB while indexing)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

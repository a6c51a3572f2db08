#!/usr/bin/env python3
"""``envre probe`` on several saved models with the same documents, copies and KB; one results file.

Runs ``envre probe --model DIR --output OUTPUT_DIR/<name> --save-predictions`` plus the options after ``--`` for each
``--models NAME=DIR``, checks each flip rate against ``probe_flip_rate.py``'s recomputation from the saved
predictions, and writes every model's summary (flip rate, name reliance, new facts, survival, by sentence and by
renamed entities, the gold table with ``--gold``) with the command to ``--results``; the side-by-side table is
``envre probe --compare``'s (also in ``OUTPUT_DIR/compare``).

The vanilla and EVRT models ``benchmarks/replicate.py --save-models`` keeps, on Re-DocRED test with the corpus KB
the replication renames test with (names of its training documents excluded):

    python benchmarks/probe_models.py --models vanilla=replicate_out/models/atlop evrt=replicate_out/models/atlop+evrt \\
        --output-dir probe_out --results benchmarks/results/probe-cpu.json -- \\
        --input ../shared/data/redocred/test_revised.json --gold ../shared/data/redocred/test_revised.json \\
        --kb corpus --kb-pool ../shared/data/redocred/test_revised.json --train ../shared/data/redocred/dev_revised.json \\
        --copies 5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _bench_common import machine
from probe_flip_rate import check

from envre_hf.analysis.probe_comparison import compare_probes
from envre_hf.atomic import write_json
from envre_hf.cli.main import main as envre

#: The parts of probe.json kept in the results (the rest stays in OUTPUT_DIR/<name>/probe.json).
KEPT = ("documents", "copies", "summary", "by_sentence", "renamed_arguments", "substitution_rates", "gold")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    forwarded = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", required=True, metavar="NAME=DIR", help="saved models to probe")
    parser.add_argument("--output-dir", type=Path, default=Path("probe_out"), help="one envre probe folder per model")
    parser.add_argument("--results", type=Path, help="write the summary here (e.g. benchmarks/results/probe-cpu.json)")
    args = parser.parse_args(own)
    models = dict(item.split("=", 1) for item in args.models)
    runs = {}
    started = time.perf_counter()
    for name, folder in models.items():
        out = args.output_dir / name
        t0 = time.perf_counter()
        command = ["probe", "--model", folder, "--output", str(out), "--save-predictions", *forwarded]
        print(f"\n=== envre {' '.join(command)}", flush=True)
        status = envre(command)
        if status != 0:
            return status
        probe = json.loads((out / "probe.json").read_text(encoding="utf-8"))
        checked = check(out)
        runs[name] = {
            "model": folder,
            **{key: probe[key] for key in KEPT},
            "recomputed_from_saved_predictions": {**checked["recomputed"], "equal": checked["equal"]},
            "seconds": round(time.perf_counter() - t0, 1),
        }
        if not checked["equal"]:
            print(f"{name}: the recomputed flip rate differs from the reported one: {checked}", file=sys.stderr)
            return 1
    summary = {
        "command": "python benchmarks/probe_models.py " + " ".join(argv),
        "runs": runs,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    comparison = compare_probes([args.output_dir / name for name in runs], args.output_dir / "compare")
    print("\n" + comparison.table())
    if args.results is not None:
        write_json(args.results, {**summary, "machine": machine()})
        print(f"\nwrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

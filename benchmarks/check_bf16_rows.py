#!/usr/bin/env python3
"""Which row counts of a bf16 ``nn.Linear`` (CPU autocast) kill the process on this machine: each (rows, features)
runs in its own process, and a crash (a signal) is recorded with it. On the Xeon with AMX of the 2026-12 runs, torch
2.13 died of SIGFPE on exactly 32 rows of 49,152 features (ATLOP's and DocuNet's released emb 768 x block 64), which
``envre_hf.models.modeling_docre._rows_linear`` works around.

    python3 benchmarks/check_bf16_rows.py --json benchmarks/results/bf16_rows_crash.json
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from _bench_common import machine, write_json

CHILD = """
import sys, torch
rows, features = int(sys.argv[1]), int(sys.argv[2])
linear = torch.nn.Linear(features, 97)
with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
    linear(torch.randn(rows, features))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[*range(1, 41), 64, 96, 128, 256, 257, 512, 1024])
    parser.add_argument("--features", type=int, nargs="+", default=[12288, 24576, 49152, 65536])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    crashes = []
    for features in args.features:
        for rows in args.rows:
            proc = subprocess.run([sys.executable, "-c", CHILD, str(rows), str(features)], capture_output=True,
                                  env={"OMP_NUM_THREADS": "1", "PATH": ""})
            if proc.returncode:
                crashes.append({"rows": rows, "features": features, "returncode": proc.returncode})
                print(f"{rows} rows x {features} features: exit {proc.returncode}", flush=True)
    print(f"{len(crashes)} crash(es) in {len(args.rows) * len(args.features)} shapes")
    if args.json:
        write_json(args.json, {"command": "python3 benchmarks/check_bf16_rows.py " + " ".join(sys.argv[1:]),
                               "machine": machine(), "rows": args.rows, "features": args.features, "crashes": crashes})
    return 0


if __name__ == "__main__":
    sys.exit(main())

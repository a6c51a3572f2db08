#!/usr/bin/env python3
"""``envre evaluate --model`` in fp32, ``--precision bf16`` and ``--precision bf16-force``, on this CPU and on this CPU capped to AVX2.

Issue 29: on a CPU without native bf16 (an AVX2-only EPYC), bf16 autocast ran ``nn.Linear`` ten times slower than
fp32, so ``--precision bf16`` must warn and run fp32 there. Where no such CPU is at hand, capping this one reproduces it:
``ONEDNN_MAX_CPU_ISA=AVX2`` (oneDNN, which runs bf16 matmuls), ``MKL_ENABLE_INSTRUCTIONS=AVX2`` (MKL, fp32 matmuls)
and ``ATEN_CPU_CAPABILITY=avx2`` (torch's own kernels). Each variant is the whole ``envre evaluate`` process (one
thread, CPU seconds, best of ``--repeats``, interleaved); it prints each time and the ratio to fp32 of the same CPU.

    python benchmarks/bench_precision.py --model runs/replicate/models/atlop-s42 \\
        --output benchmarks/results/precision-cpu.json
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import TEST, machine, write_json  # noqa: E402

AVX2 = {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
VARIANTS = {"fp32": ["--precision", "fp32"], "bf16": ["--precision", "bf16"], "bf16-force": ["--precision", "bf16-force"]}
WARNING = "has no native bf16"


def run(model: str, docs: int, extra: list[str], env: dict[str, str]) -> tuple[float, bool]:
    """CPU seconds (user + system: steadier than wall clock on a shared machine) of one ``envre evaluate``
    process, and whether it printed the emulated-bf16 warning."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "envre_hf.cli.main", "evaluate", "--model", model, "--gold", str(TEST),
               "--max-docs", str(docs), "--device", "cpu", "--output", f"{tmp}/scores.json", *extra]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(cmd, env={**os.environ, "OMP_NUM_THREADS": "1", **env}, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return seconds, WARNING in proc.stderr


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a trained DocRE model folder")
    p.add_argument("--docs", type=int, default=10, help="Re-DocRED test documents (default 10)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--output", type=Path, default=None)
    cli = p.parse_args()
    cpus = {"native": {}, "capped to AVX2": AVX2}
    best: dict[str, dict[str, float]] = {cpu: {} for cpu in cpus}
    warned: dict[str, dict[str, bool]] = {cpu: {} for cpu in cpus}
    for _ in range(cli.repeats):
        for cpu, env in cpus.items():
            for name, extra in VARIANTS.items():
                seconds, warning = run(cli.model, cli.docs, extra, env)
                best[cpu][name] = min(seconds, best[cpu].get(name, float("inf")))
                warned[cpu][name] = warning
    rows = []
    for cpu in cpus:
        for name in VARIANTS:
            ratio = best[cpu][name] / best[cpu]["fp32"]
            rows.append({"cpu": cpu, "variant": name, "cpu_seconds": round(best[cpu][name], 2),
                         "vs_fp32": round(ratio, 3), "warned": warned[cpu][name]})
            print(f"{cpu:15s} {name:12s} {best[cpu][name]:7.2f} CPU s  x{ratio:.2f} of fp32"
                  f"{'  (warned, ran fp32)' if warned[cpu][name] else ''}")
    if cli.output:
        write_json(cli.output, {
            "command": shlex.join([sys.executable, *sys.argv]), "machine": machine(), "capped_env": AVX2,
            "model": cli.model, "documents": cli.docs, "repeats": cli.repeats, "rows": rows,
        })


if __name__ == "__main__":
    main()

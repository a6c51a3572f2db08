"""A killed benchmark run takes its pool workers with it (benchmarks/_bench_common.py ``die_with_parent``):
``replicate.py``'s workers otherwise train on and write the checkpoints that the resumed run reads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

PARENT = textwrap.dedent(
    """
    import multiprocessing, os, sys, time
    from concurrent.futures import ProcessPoolExecutor
    sys.path.insert(0, sys.argv[1])
    from _bench_common import die_with_parent

    def job(path):
        with open(path, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)

    if __name__ == "__main__":
        init = die_with_parent if sys.argv[3] == "guarded" else None
        args = (os.getpid(),) if init else ()
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=init, initargs=args)
        pool.submit(job, sys.argv[2])
        time.sleep(120)
    """
)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's new parent may reap it late)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _worker_after_parent_killed(tmp_path: Path, mode: str) -> bool:
    """Start a parent with one pool worker, SIGKILL the parent once the worker runs; is the worker alive 2 s later?"""
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    marker = tmp_path / f"worker-{mode}.pid"
    parent = subprocess.Popen([sys.executable, str(script), str(BENCHMARKS), str(marker), mode])
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        worker = int(marker.read_text())
        parent.kill()
        parent.wait()
        for _ in range(20):
            time.sleep(0.1)
            if not _running(worker):
                return False
        os.kill(worker, signal.SIGKILL)
        return True
    finally:
        parent.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_pool_worker_dies_with_killed_parent(tmp_path):
    assert _worker_after_parent_killed(tmp_path, "plain"), "without the initializer the orphan lives on"
    assert not _worker_after_parent_killed(tmp_path, "guarded")

"""Kills at the edges of a build that the other kill tests do not reach: as the split is marked unfinished, as a
shard is put in place, as the mark is removed; hand-edited statistics; the lock of a killed parallel build."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _renaming_fakes import FakePipeline, build_with
from malformed_inputs import SAMPLE_DOCS

from envre_hf.documents.build_folder import read_benchmark, unfinished_splits
from envre_hf.renaming.output_folder import MARKER_FILE

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MARKER_FILE
    }


# SIGKILL at one point of a first build of SAMPLE_DOCS (seeds 0 and 1):
#   mark:   every unit renamed, the mark .build/test is about to be put in place;
#   shard:  the mark is in place, the shard is written and about to be put in place (data/);
#   unmark: every file of the split is in place, the mark is about to be removed;
#   rmdir:  the mark is removed, the emptied .build/ is about to be removed.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from _renaming_fakes import FakePipeline, build_with

    out, point = Path(sys.argv[1]), sys.argv[2]
    mark = out / ".build" / "test"
    real_replace, real_unlink, real_rmdir = os.replace, os.unlink, os.rmdir

    def replace(src, dst, *args, **kwargs):
        if (point == "mark" and Path(dst) == mark) or (point == "shard" and Path(dst).parent == out / "data"):
            os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst, *args, **kwargs)

    def unlink(path, *args, **kwargs):
        if point == "unmark" and Path(path) == mark:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_unlink(path, *args, **kwargs)

    def rmdir(path, *args, **kwargs):
        if point == "rmdir" and Path(path) == mark.parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_rmdir(path, *args, **kwargs)

    os.replace, os.unlink, os.rmdir = replace, unlink, rmdir
    build_with(FakePipeline(), {docs!r}, out)
    """
)


@pytest.mark.parametrize("point", ["mark", "shard", "unmark", "rmdir"])
def test_a_kill_while_a_split_is_written_is_finished_by_the_same_build(point, tmp_path):
    out = tmp_path / "env"
    script = KILLER.format(tests=str(TESTS), docs=str(SAMPLE_DOCS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    assert subprocess.run([sys.executable, "-c", script, str(out), point], env=env, timeout=120).returncode == -9
    if point == "shard":  # not in place: no split yet, its temporary shard hidden, the split marked unfinished
        assert not list((out / "data").glob("*.parquet")) and list((out / "data").glob(".*.tmp"))
    if point in ("shard", "unmark"):  # readers refuse the folder until the build is run again
        assert unfinished_splits(out) == ["test"]
        with pytest.raises(ValueError, match="run the same envre build again"):
            read_benchmark(out)
    if point == "rmdir":  # the split is whole: only an empty .build/ is left
        assert not unfinished_splits(out) and len(read_benchmark(out)) == 6
    build_with(FakePipeline(), SAMPLE_DOCS, out)  # the promised repair
    clean = tmp_path / "clean"
    build_with(FakePipeline(), SAMPLE_DOCS, clean)
    assert _snapshot(out) == _snapshot(clean) and not (out / ".build").exists()


def test_a_rebuild_deletes_only_old_shards_of_its_split_whatever_statistics_json_lists(tmp_path):
    """The old shards to delete came from statistics.json's data_files as written there: a hand-edited entry
    ('../notes.txt', another split's shard, the card) was deleted, inside the folder or outside it."""
    victim = tmp_path / "notes.txt"
    victim.write_text("mine", encoding="utf-8")
    out = tmp_path / "env"
    build_with(FakePipeline(), SAMPLE_DOCS, out, split="validation")
    build_with(FakePipeline(), SAMPLE_DOCS, out)
    stats_path = out / "statistics.json"
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    stats["test"]["data_files"] += ["../notes.txt", "data/validation-00000-of-00001.parquet", "README.md", 7]
    stats["validation"]["data_files"] += [7]  # another split's: not a file name, so not a file to size either
    stats_path.write_text(json.dumps(stats), encoding="utf-8")
    build_with(FakePipeline(), SAMPLE_DOCS, out, seeds=(0,), overwrite=True)
    assert victim.read_text(encoding="utf-8") == "mine"
    assert (out / "data" / "validation-00000-of-00001.parquet").exists() and (out / "README.md").exists()
    assert len(read_benchmark(out)) == 3 and len(read_benchmark(out, "validation")) == 6


_PARALLEL_BUILD = """
import sys
sys.path.insert(0, {tests!r})
from _renaming_fakes import FakePipeline, build_with
build_with(FakePipeline(delay=0.2), {input!r}, {out!r}, num_proc=2, chunk_size=8)
"""


def test_a_killed_parallel_build_leaves_no_lock_behind(redocred_test, tmp_path):
    """Worker processes inherit the lock's file; when kill -9 ends the parent they finish their chunk first, and
    the lock must not wait for them (docs/reliability.md: a killed build never leaves a stale lock)."""
    import psutil

    from envre_hf.documents import write_documents

    source = write_documents(redocred_test[:25], tmp_path / "test_revised.json")
    out = tmp_path / "env"
    script = _PARALLEL_BUILD.format(tests=str(TESTS), input=str(source), out=str(out))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    log = open(tmp_path / "killed.log", "wb")  # the orphaned workers' broken-pipe tracebacks go there, not to the run
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=log, stderr=log)
    log.close()
    deadline = time.time() + 60
    while time.time() < deadline and len(psutil.Process(proc.pid).children()) < 2:
        time.sleep(0.02)
    time.sleep(0.5)  # the workers are renaming their first chunks (8 units of 0.2 s each)
    workers = psutil.Process(proc.pid).children()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert any(w.is_running() for w in workers)  # still renaming: they hold copies of the lock's file
    result = build_with(FakePipeline(), source, out)  # at once
    assert result.statistics["renamed_documents"] == 50

"""Kills and damage at the edges of a build that the other kill tests do not reach: between the work folder and
its manifest, while the finished work folder is being removed, and a resume with another ``on_error``."""

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

from envre_hf.documents import DocumentError
from envre_hf.documents.build_folder import pending_commits, read_benchmark
from envre_hf.kb.base import KnowledgeBaseError
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
#   manifest: the work folder exists, its manifest is about to be put in place;
#   parquet:  every unit renamed, the staged shard written and about to be put in place (stage/data/);
#   stage:    the split is committed, and removing the work folder reached its first sub-folder;
#   work:     the split is committed, and removing the work folder reached the (emptied) folder itself.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from _renaming_fakes import FakePipeline, build_with

    out, point = Path(sys.argv[1]), sys.argv[2]
    work = out / ".build" / "test"
    real_replace, real_rmdir = os.replace, os.rmdir

    def replace(src, dst, *args, **kwargs):
        if point == "manifest" and Path(dst) == work / "manifest.json":
            os.kill(os.getpid(), signal.SIGKILL)
        if point == "parquet" and Path(dst).parent == work / "stage" / "data":
            os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst, *args, **kwargs)

    def rmdir(path, *args, **kwargs):
        if point == "stage" and "dir_fd" in kwargs:  # inside shutil.rmtree: a sub-folder of the work folder
            os.kill(os.getpid(), signal.SIGKILL)
        if point == "work" and Path(path) == work:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_rmdir(path, *args, **kwargs)

    os.replace, os.rmdir = replace, rmdir
    build_with(FakePipeline(), {docs!r}, out)
    """
)


@pytest.mark.parametrize("point", ["manifest", "parquet", "stage", "work"])
def test_a_kill_around_the_work_folder_is_finished_by_resume(point, tmp_path):
    out = tmp_path / "env"
    script = KILLER.format(tests=str(TESTS), docs=str(SAMPLE_DOCS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    assert subprocess.run([sys.executable, "-c", script, str(out), point], env=env, timeout=120).returncode == -9
    if point == "parquet":  # not committed: no split yet, and its temporary shard is hidden
        assert not (out / "data").exists() and list((out / ".build" / "test" / "stage" / "data").glob(".*.tmp"))
    if point in ("stage", "work"):  # committed: what the folder holds is the whole split, or a pending commit readers refuse
        assert pending_commits(out) or len(read_benchmark(out)) == 6
    build_with(FakePipeline(), SAMPLE_DOCS, out, resume=True)  # the promised repair
    clean = tmp_path / "clean"
    build_with(FakePipeline(), SAMPLE_DOCS, clean)
    assert _snapshot(out) == _snapshot(clean)
    build_with(FakePipeline(), SAMPLE_DOCS, out)  # and the same build again is allowed, as after any build
    assert _snapshot(out) == _snapshot(clean)


class _KBFailsAfter(FakePipeline):
    """Renames ``n`` units, then its knowledge base fails (which stops a build whatever ``on_error``)."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def rename(self, doc, seed):
        if self.calls >= self.n:
            raise KnowledgeBaseError("the KB went away")
        return super().rename(doc, seed)


def test_a_resume_with_on_error_fail_does_not_keep_failures_of_a_skip_run(tmp_path):
    raw = json.loads(SAMPLE_DOCS.read_text(encoding="utf-8"))
    raw[1]["vertexSet"][0][0]["sent_id"] = 999  # parses; the renamer rejects it
    bad = tmp_path / "test_bad.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(DocumentError, match="document 1"):  # what an uninterrupted fail build does
        build_with(FakePipeline(), bad, tmp_path / "plain")
    out = tmp_path / "env"
    with pytest.raises(KnowledgeBaseError):  # a skip build records doc 1's failures, then stops
        build_with(_KBFailsAfter(4), bad, out, on_error="skip")
    records = (out / ".build" / "test" / "records.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum("error" in json.loads(line) for line in records) == 2
    with pytest.raises(DocumentError, match=r"document 1 \('Tomas Berglund'\).*sent_id"):
        build_with(FakePipeline(), bad, out, resume=True)  # on_error="fail": stop at the bad document
    assert not (out / "data").exists() and not (out / "errors").exists()
    result = build_with(FakePipeline(), bad, out, resume=True, on_error="skip")  # skip keeps going, as asked
    assert [(f.doc_index, f.seed) for f in result.failures] == [(1, 0), (1, 1)]


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
    from envre_hf.documents import write_documents

    source = write_documents(redocred_test[:25], tmp_path / "test_revised.json")
    out = tmp_path / "env"
    script = _PARALLEL_BUILD.format(tests=str(TESTS), input=str(source), out=str(out))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    log = open(tmp_path / "killed.log", "wb")  # the orphaned workers' broken-pipe tracebacks go there, not to the run
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=log, stderr=log)
    log.close()
    records = out / ".build" / "test" / "records.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not records.exists() or len(records.read_bytes().splitlines()) < 8):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    result = build_with(FakePipeline(), source, out, resume=True)  # at once: the workers are still renaming
    assert result.resumed >= 8 and result.statistics["renamed_documents"] == 50

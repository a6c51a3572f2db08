"""Kills and damage at the edges of a build that the other kill tests do not reach: between the work folder and
its manifest, while the finished work folder is being removed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _renaming_fakes import FakePipeline, build_with
from malformed_inputs import SAMPLE_DOCS

from envre_hf.documents.build_folder import pending_commits, read_benchmark
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


@pytest.mark.parametrize("point", ["manifest", "stage", "work"])
def test_a_kill_around_the_work_folder_is_finished_by_resume(point, tmp_path):
    out = tmp_path / "env"
    script = KILLER.format(tests=str(TESTS), docs=str(SAMPLE_DOCS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    assert subprocess.run([sys.executable, "-c", script, str(out), point], env=env, timeout=120).returncode == -9
    if point != "manifest":  # committed: what the folder holds is the whole split, or a pending commit readers refuse
        assert pending_commits(out) or len(read_benchmark(out)) == 6
    build_with(FakePipeline(), SAMPLE_DOCS, out, resume=True)  # the promised repair
    clean = tmp_path / "clean"
    build_with(FakePipeline(), SAMPLE_DOCS, clean)
    assert _snapshot(out) == _snapshot(clean)
    build_with(FakePipeline(), SAMPLE_DOCS, out)  # and the same build again is allowed, as after any build
    assert _snapshot(out) == _snapshot(clean)

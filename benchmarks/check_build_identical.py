"""Is ``envre build`` byte-identical between a git revision and the working tree?

A refactoring of the build (driver, work log, writer, card, ...) must not change one byte of what it writes.
This script checks out ``--rev`` into a temporary ``git worktree``, runs the same ``envre build`` commands
once with that code and once with the working tree (each in a fresh subprocess with its own ``PYTHONPATH``),
and compares every file of the two output folders byte for byte. Nothing in a build folder is a timestamp
by design, so no field is ignored: the marker, README.md card, statistics.json, names_used.json, parquet
shards, errors/<split>.jsonl and the json/ export are all compared whole.

The commands cover both paths of the driver: split ``test`` (one bad document among the first ``--docs``
documents of Re-DocRED test, ``--on-error skip``, JSON export, one process) and split ``validation``
(Re-DocRED dev documents, two worker processes, names of ``test`` excluded), written into the same folder,
so the card and statistics of a two-split folder are compared too. KB: the offline corpus KB.

    python3 benchmarks/check_build_identical.py --rev 486812d [--docs 40] [--seeds 3] [--json OUT.json]

With ``--kill-after S`` the working tree's first build is killed (SIGKILL) S seconds after it starts and then
run again, as a user would after a kill: the folder must still be byte-identical to the revision's
uninterrupted build.

Exit status 0 when every file is identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ENVRE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def make_inputs(folder: Path, n_docs: int) -> dict[str, Path]:
    """Small inputs cut from the real data: ``n_docs`` test documents plus one malformed one, dev documents
    for the second split, and a pool of dev documents for the corpus KB."""
    test = json.loads((SHARED / "redocred" / "test_revised.json").read_text(encoding="utf-8"))[:n_docs]
    dev = json.loads((SHARED / "redocred" / "dev_revised.json").read_text(encoding="utf-8"))
    bad = {"title": "Broken document", "sents": [["No", "entities", "."]], "vertexSet": [[{"name": "X"}]]}
    paths = {"test": folder / "test_in.json", "validation": folder / "dev_in.json", "pool": folder / "pool.json"}
    paths["test"].write_text(json.dumps(test[: n_docs // 2] + [bad] + test[n_docs // 2 :]), encoding="utf-8")
    paths["validation"].write_text(json.dumps(dev[:n_docs]), encoding="utf-8")
    pool = dev[n_docs : n_docs + 200] if n_docs + 200 <= len(dev) else dev[:200]  # --docs 500: the whole split
    paths["pool"].write_text(json.dumps(pool), encoding="utf-8")
    return paths


def build_commands(inputs: dict[str, Path], output: Path, seeds: int) -> list[list[str]]:
    common = ["--kb", "corpus", "--kb-pool", str(inputs["pool"]), "--seeds", str(seeds), "--no-progress"]
    return [
        ["build", "--input", str(inputs["test"]), "--split", "test", *common, "--on-error", "skip",
         "--export-json", "--output", str(output)],
        ["build", "--input", str(inputs["validation"]), "--split", "validation", *common, "--num-proc", "2",
         "--exclude-names-from", str(output), "--output", str(output)],
    ]


def run_build(code_root: Path, commands: list[list[str]], kill_after: float | None = None) -> dict[str, Any]:
    """Run the commands with the package under ``code_root``; wall-clock and CPU (user + system) seconds taken.
    With ``kill_after``, the first command is killed that many seconds after it starts (it must still be
    running; the files it left are reported), then all of them run."""
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    entry = [sys.executable, "-c", "import sys; from envre_hf.cli.main import main; sys.exit(main(sys.argv[1:]))"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    if kill_after is not None:
        victim = subprocess.Popen([*entry, *commands[0]], env=env, cwd=code_root, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            victim.wait(kill_after)
            raise SystemExit(f"the build ended within --kill-after {kill_after}s: nothing was killed")
        except subprocess.TimeoutExpired:
            victim.kill()
            victim.wait()
        output = Path(commands[0][commands[0].index("--output") + 1])
        left = sorted(p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file())
    for argv in commands:
        done = subprocess.run([*entry, *argv], env=env, cwd=code_root, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"build with {code_root} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    report: dict[str, Any] = {"wall": round(time.perf_counter() - start, 2), "cpu": round(cpu, 2)}
    if kill_after is not None:
        report["files_left_by_the_kill"] = left
    return report


def folder_files(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", required=True, help="git revision to compare the working tree with")
    parser.add_argument("--docs", type=int, default=40, help="documents per split (default 40)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the comparison here")
    parser.add_argument("--kill-after", type=float, help="kill the working tree's first build after S seconds, rerun it")
    args = parser.parse_args(argv)

    rev = subprocess.run(["git", "rev-parse", args.rev], cwd=ROOT, capture_output=True, text=True, check=True)
    commit = rev.stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="envre-identical-"))
    old_code = tmp / "old_code"
    try:
        subprocess.run(["git", "worktree", "add", "--detach", str(old_code), commit], cwd=ROOT,
                       capture_output=True, check=True)
        inputs = make_inputs(tmp, args.docs)
        old_out, new_out = tmp / "old_build", tmp / "new_build"
        seconds = {
            "old": run_build(old_code, build_commands(inputs, old_out, args.seeds)),
            "new": run_build(ROOT, build_commands(inputs, new_out, args.seeds), args.kill_after),
        }
        old_files, new_files = folder_files(old_out), folder_files(new_out)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_code)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    names = sorted(set(old_files) | set(new_files))
    different = [n for n in names if old_files.get(n) != new_files.get(n)]
    report = {
        "command": "python3 benchmarks/check_build_identical.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "revision": commit,
        "working_tree_head": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                            text=True).stdout.strip(),
        "build_commands": [" ".join(["envre", *c]).replace(str(tmp), "$TMP") for c in
                           build_commands(make_inputs_names(), Path("$TMP/build"), args.seeds)],
        "ignored_fields": [],
        "files": {n: {"revision": old_files.get(n), "working_tree": new_files.get(n)} for n in names},
        "killed_after_seconds": args.kill_after,
        "identical": not different,
        "different": different,
        "seconds": seconds,
    }
    for name in names:
        print(f"{'same' if name not in different else 'DIFFERENT'}  {name}  {new_files.get(name, '-')[:16]}")
    print(f"{len(names)} files, {len(different)} different: "
          f"{'byte-identical' if not different else 'NOT identical'} ({commit[:10]} vs working tree); "
          f"build seconds {report['seconds']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if not different else 1


def make_inputs_names() -> dict[str, Path]:
    """The input paths as the report shows them (relative to the temporary folder)."""
    return {"test": Path("$TMP/test_in.json"), "validation": Path("$TMP/dev_in.json"), "pool": Path("$TMP/pool.json")}


if __name__ == "__main__":
    sys.exit(main())

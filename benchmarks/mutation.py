"""Mutation testing of the core modules with mutmut (https://github.com/boxed/mutmut); not part of CI.

mutmut makes every mutant of a module (operators, comparisons, constants, arguments, return values, ...),
runs the tests that cover the mutated function (it records which do in a first, clean run) and reports each
mutant killed, survived, timed out or not covered. This script only holds the campaign's configuration: the
module of each target, the tests that should catch its bugs, and optionally which of its functions to mutate
(mutmut name patterns). It runs mutmut in a scratch copy of the repository's tracked files, so ``mutants/``
never lands in the work tree, and writes the counts, the score and the survivors (with their diffs) as JSON::

    pip install 'envre-hf[mutation]'
    nice -n 19 python3 benchmarks/mutation.py tokenize --out benchmarks/results/mutation/mutmut-tokenize.json
    python3 benchmarks/mutation.py --list

The score is (killed + timeout) / (mutants - not checked): a timeout is a mutant that made the tests loop, and
a mutant that no test runs (``no tests``) counts as a survivor; ``--timeout S`` stops mutmut after S seconds (the
mutants left are ``not checked``). ``benchmarks/results/mutation.json`` is the score of the last
full campaign (576 mutants, run with the home-grown runner this script replaced, commit 14e4626).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ENVRE_SHARED_DATA", REPO.parent / "shared" / "data"))


@dataclass(frozen=True)
class Target:
    path: str
    tests: tuple[str, ...]  # pytest selection (paths, --deselect): the tests that should kill the module's mutants
    #: mutmut mutant-name patterns (``x_<function>__mutmut_*``, ``xǁ<class>ǁ<method>__mutmut_*``); empty: all
    names: tuple[str, ...] = ()


P = "tests/properties/"
TARGETS: dict[str, Target] = {
    # (mutmut's time limit is on CPU seconds: a test that waits on a process pool would hang on a mutant)
    "substitution": Target("envre_hf/renaming/substitution.py",
                           ("tests/renaming/test_substitution.py", "tests/renaming/test_renaming.py", "--deselect",
                            "tests/renaming/test_renaming.py::test_rename_dataset_matches_single_documents")),
    "tokenize": Target("envre_hf/documents/tokenize.py", ("tests/documents/test_tokenize.py",)),
    "values": Target("envre_hf/renaming/values.py",
                     ("tests/renaming/test_values_rules.py", "tests/renaming/test_renaming_values.py", P + "test_prop_values.py")),
    "leaks": Target("envre_hf/renaming/leaks.py", ("tests/renaming/test_renaming.py", P + "test_prop_renaming.py")),
    "pipeline": Target("envre_hf/renaming/pipeline.py",
                       ("tests/renaming/test_renaming.py", P + "test_prop_renaming.py", P + "test_prop_values.py")),
    "metric": Target("envre_hf/metrics/docre.py", ("tests/metrics", P + "test_prop_metric.py")),
    "decode": Target("envre_hf/models/modeling_docre.py", ("tests/models/test_models.py", P + "test_prop_models.py"),
                     ("*.x_threshold_decode__mutmut_*", "*ǁdecode__mutmut_*", "*ǁrelation_probabilities__mutmut_*")),
    "prediction": Target("envre_hf/models/prediction.py",
                         ("tests/models/test_models.py", "tests/features/test_batching.py", P + "test_prop_models.py"),
                         ("*.x_iter_logits__mutmut_*", "*.x_decode_predictions__mutmut_*", "*.x_predict__mutmut_*")),
    "losses": Target("envre_hf/training/consistency.py", ("tests/training/test_training_losses.py",)),
    "pairing": Target("envre_hf/training/pairing.py",
                      ("tests/training/test_pairing_units.py", "tests/training/test_training_pairing.py",
                       "tests/training/test_training_losses.py")),
}


def scratch_copy(folder: Path, target: Target) -> None:
    """The repository's tracked files in ``folder``, with the target's mutmut configuration in pyproject.toml."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (REPO / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, folder / name)
    config = {
        "source_paths": ["envre_hf"],
        "only_mutate": [target.path],
        "pytest_add_cli_args_test_selection": list(target.tests),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        # each mutant's worker is forked from a server that never ran a test: forked from mutmut's own process, it
        # would inherit what the clean run left (an lru_cache full of right answers hides a mutant) and torch's
        # thread pools, which are not fork-safe
        "process_isolation": "forkserver",
    }
    with open(folder / "pyproject.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items()))


def mutmut(folder: Path, *args: str, timeout: float | None = None) -> str:
    """``mutmut ARGS`` in ``folder``; after ``timeout`` seconds it is stopped (its workers too) and the mutants
    it has not tested yet stay ``not checked``."""
    env = {**os.environ, "ENVRE_SHARED_DATA": str(SHARED_DATA), "PYTHONPATH": "", "ENVRE_HYPOTHESIS_PROFILE": "mutation"}
    proc = subprocess.Popen([sys.executable, "-m", "mutmut", *args], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return ""
    if proc.returncode != 0:
        raise SystemExit(f"mutmut {' '.join(args)} failed ({proc.returncode}):\n{err[-3000:]}")
    return out


def run(name: str, timeout: float | None) -> dict:
    target = TARGETS[name]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="envre-mutmut-") as tmp:
        folder = Path(tmp)
        scratch_copy(folder, target)
        mutmut(folder, "run", *target.names, timeout=timeout)
        lines = mutmut(folder, "results", "--all", "true").splitlines()
        statuses = dict(line.strip().rsplit(": ", 1) for line in lines if ": " in line)
        survivors = {m: mutmut(folder, "show", m) for m, status in statuses.items() if status == "survived"}
    counts = Counter(statuses.values())
    tested = len(statuses) - counts["not checked"]
    return {
        "command": "python3 benchmarks/mutation.py " + " ".join(sys.argv[1:]),
        "tool": f"mutmut {importlib.metadata.version('mutmut')}",
        "module": target.path,
        "tests": list(target.tests),
        "names": list(target.names),
        "mutants": len(statuses),
        "counts": dict(sorted(counts.items())),
        "score": round(100 * (counts["killed"] + counts["timeout"]) / tested, 1) if tested else None,
        "seconds": round(time.perf_counter() - start, 1),
        "survivors": survivors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", nargs="?", choices=sorted(TARGETS), help="the target to mutate")
    parser.add_argument("--out", type=Path, help="write the result here (JSON)")
    parser.add_argument("--timeout", type=float, help="stop mutmut after this many seconds")
    parser.add_argument("--list", action="store_true", help="list the targets")
    args = parser.parse_args(argv)
    if args.list or not args.module:
        for name, target in TARGETS.items():
            print(f"{name:13} {target.path}  <- {' '.join(target.tests)}")
        return 0
    result = run(args.module, args.timeout)
    print(json.dumps({k: v for k, v in result.items() if k != "survivors"}, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

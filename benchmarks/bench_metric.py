"""Speed of scoring from files: the whole ``envre evaluate --predictions`` process against the released code's
scoring job (``tests/_released_scorer.py``: a clean-room restatement of Env-DocRE's ``official_evaluate_benchmark``
as ``evrt/main.py`` calls it, the issue's baseline and the tests' reference scorer), in the same run, with the
ratio; plus an in-process breakdown of envre's job.

Gold: the Re-DocRED test split five times under distinct doc_ids ``<title>#<k>`` (2,500 documents,
~87k facts), like the five renamed copies of Env-Re-DocRED. Predictions: the gold facts with 10% dropped,
10% given a wrong relation, 5% duplicated, and one spurious pair per document; evidence kept. Ign uses the
dev split as training documents. Both jobs must print the same scores to the last digit (checked).

Times are CPU seconds of the child process (user + system; robust to other load on a shared machine) and
wall-clock seconds; best and median of ``--repeats`` runs, the two jobs alternating. The released job reads
its training facts from the ``.fact`` file it caches beside them (written by one untimed run first, as the
released code's first evaluation does).

    python3 benchmarks/bench_metric.py [--gold PATH] [--train PATH] [--copies 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import DEV, REPO, TEST, machine, write_json  # noqa: E402

from envre_hf.documents import Document, docred_schema, read_documents, to_docred, write_documents  # noqa: E402

#: How each job is named in the printout.
LABELS = {"released": "released scorer job (json)", "new": "envre evaluate --predictions"}

#: The released job's scores that equal envre's to the last digit (its evidence recall divides by gold + 1).
RELEASED_SAME = ("precision", "recall", "f1", "ign_precision", "ign_f1", "evidence_precision", "intra_precision",
                 "intra_recall", "intra_f1", "inter_precision", "inter_recall", "inter_f1")

#: envre's job step by step (as score_files runs it), in a process of its own: prints ``[{step: CPU seconds}, headline scores]``.
BREAKDOWN = """
import json, sys, time
from envre_hf.metrics import read_predictions, score_predictions
from envre_hf.metrics.docre import _documents, gold_index, train_facts
pred, gold, train = sys.argv[1:4]
steps = {}
def step(name, fn):
    start = time.process_time()
    value = fn()
    steps[name] = time.process_time() - start
    return value
index = step("read + index gold", lambda: gold_index(_documents(gold, None, "gold_split")))
facts = step("read train + facts", lambda: train_facts(_documents(train, None, "train_split")))
preds = step("read predictions", lambda: read_predictions(pred))
scores = step("score", lambda: score_predictions(preds, index, facts))
print(json.dumps([steps, {k: getattr(scores, k) for k in ("f1", "ign_f1", "evidence_f1")}]))
"""


def title_keyed(gold: list[Document], preds: list[dict]) -> tuple[list[dict], list[dict]]:
    """Gold and predictions for the released scorer: each document's key becomes its title."""
    raw = []
    for doc in gold:
        rec = to_docred(doc)
        rec["title"] = doc.key
        raw.append(rec)
    return raw, [{"title": p["doc_id"], **{k: v for k, v in p.items() if k != "doc_id"}} for p in preds]


def replicate(docs: list[Document], copies: int) -> list[Document]:
    """``copies`` copies of every document, keyed ``<title>#<k>`` (shallow: scoring never mutates documents)."""
    out = []
    for k in range(copies):
        for doc in docs:
            twin = copy.copy(doc)
            twin.doc_id = f"{doc.title}#{k}"
            out.append(twin)
    return out


def perturbed_predictions(gold: list[Document], seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rels = docred_schema().ids()
    preds = []
    for doc in gold:
        for rel in doc.relations:
            u = rng.random()
            if u < 0.10:
                continue
            r = rng.choice(rels) if u < 0.20 else rel.r
            pred = {"doc_id": doc.key, "h_idx": rel.h, "t_idx": rel.t, "r": r, "evidence": list(rel.evidence)}
            preds.append(pred)
            if rng.random() < 0.05:
                preds.append(dict(pred))
        n = len(doc.entities)
        if n > 1:
            h, t = rng.sample(range(n), 2)
            preds.append({"doc_id": doc.key, "h_idx": h, "t_idx": t, "r": rng.choice(rels), "evidence": []})
    rng.shuffle(preds)
    return preds


def run_process(cmd: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", type=Path, default=TEST)
    parser.add_argument("--train", type=Path, default=DEV)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each process; best and median printed")
    parser.add_argument("--json-out", type=Path, help="write the figures (and this command) to this JSON file")
    args = parser.parse_args()

    gold = replicate(read_documents(args.gold), args.copies)
    preds = perturbed_predictions(gold)
    tmp = Path(tempfile.mkdtemp(prefix="bench_metric_"))
    gold_path, pred_path, train_path = tmp / "gold.json", tmp / "predictions.json", tmp / "train.json"
    write_documents(gold, gold_path)
    write_documents(read_documents(args.train), train_path)
    pred_path.write_text(json.dumps(preds), encoding="utf-8")
    titled_gold, titled_preds = title_keyed(gold, preds)
    titled_gold_path, titled_pred_path = tmp / "gold_titles.json", tmp / "predictions_titles.json"
    titled_gold_path.write_text(json.dumps(titled_gold), encoding="utf-8")
    titled_pred_path.write_text(json.dumps(titled_preds), encoding="utf-8")
    n_facts = sum(len(d.relations) for d in gold)
    print(f"gold: {len(gold)} documents, {n_facts} facts; predictions: {len(preds)}; train: {args.train.name}")

    names = ("released", "new")
    outputs = {name: tmp / f"{name}.json" for name in names}
    commands = {
        "new": [sys.executable, "-m", "envre_hf.cli.main", "evaluate", "--predictions", str(pred_path), "--gold",
                str(gold_path), "--train", str(train_path), "--output", str(outputs["new"])],
        "released": [sys.executable, str(REPO / "tests" / "_released_scorer.py"), str(titled_pred_path),
                     str(titled_gold_path), str(train_path), str(tmp), str(outputs["released"])],
    }  # fmt: skip
    run_process(commands["released"])  # writes the released job's .fact file of the training facts (not timed)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for _ in range(args.repeats):
        for name in names:
            runs[name].append(run_process(commands[name]))
    new_scores = json.loads(outputs["new"].read_text())
    released = json.loads(outputs["released"].read_text())
    same = all(new_scores[k] == released[k] for k in RELEASED_SAME) and (
        # the released function starts its evidence total at 1
        released["evidence_recall"] == new_scores["num_correct_evidence"] / (new_scores["num_gold_evidence"] + 1)
    )
    print(f"same scores from the two jobs, to the last digit: {same}")
    figures: dict = {"same_scores": same, "documents": len(gold), "facts": n_facts, "predictions": len(preds)}
    for name in names:
        cpu_s = sorted(c for c, _ in runs[name])
        wall_s = sorted(w for _, w in runs[name])
        figures[name] = {"cpu_best_s": round(cpu_s[0], 3), "cpu_median_s": round(cpu_s[len(cpu_s) // 2], 3),
                         "wall_best_s": round(wall_s[0], 3), "wall_median_s": round(wall_s[len(wall_s) // 2], 3)}  # fmt: skip
        f = figures[name]
        print(
            f"whole process, {LABELS[name]:28s}: CPU best {f['cpu_best_s']:.3f} s, median {f['cpu_median_s']:.3f} s; "
            f"wall best {f['wall_best_s']:.3f} s, median {f['wall_median_s']:.3f} s"
        )
    ratio = figures["released"]["cpu_best_s"] / figures["new"]["cpu_best_s"]
    figures["speedup_vs_released_cpu_best"] = round(ratio, 2)
    print(f"{LABELS['new']} vs {LABELS['released']} (whole process, CPU time, best): x{ratio:.2f} (goal >= 1.0)")

    # breakdown: CPU seconds of each step of envre's job, in a child process (a fresh heap, as in the jobs above)
    out = subprocess.run([sys.executable, "-c", BREAKDOWN, str(pred_path), str(gold_path), str(train_path)],
                         check=True, capture_output=True, text=True)  # fmt: skip
    steps, f1 = json.loads(out.stdout)
    print("breakdown (CPU s): " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items()))
    figures["breakdown_cpu_s"] = {k: round(v, 3) for k, v in steps.items()}
    print(f"F1 {100 * f1['f1']:.2f}  Ign F1 {100 * f1['ign_f1']:.2f}  evidence F1 {100 * f1['evidence_f1']:.2f}")
    shutil.rmtree(tmp)
    if args.json_out:
        command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
        write_json(args.json_out, {"command": command, "machine": machine(), **figures})
        print(f"wrote {args.json_out}")
    if not same:
        sys.exit("the two jobs printed different scores")


if __name__ == "__main__":
    main()

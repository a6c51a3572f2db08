"""Speed of scoring from files: the whole ``envre evaluate --predictions`` process on the fast path
(orjson, indexes from raw dicts, column-wise tally), cold (``--no-cache``: gold and training files read in
full) and warm (their indexes read from the scoring cache, as when scoring the next checkpoint against the
same gold file), against the path it replaces (typed documents from ``read_documents``, ``json``) and
against the released code's scoring job (``_released_scorer.py``: a clean-room restatement of Env-DocRE's
``official_evaluate_benchmark`` as ``evrt/main.py`` calls it, the issue's baseline) and against the official
scorer's algorithm in one fused pass (``envre_hf.metrics.reference``, the tests' oracle: ``json.load`` of the
three files, then its loops), in the same run, with the ratios; plus an in-process breakdown.

Gold: the Re-DocRED test split five times under distinct doc_ids ``<title>#<k>`` (2,500 documents,
~87k facts), like the five renamed copies of Env-Re-DocRED. Predictions: the gold facts with 10% dropped,
10% given a wrong relation, 5% duplicated, and one spurious pair per document; evidence kept. Ign uses the
dev split as training documents. All processes must print the same scores (checked).

Times are CPU seconds of the child process (user + system; robust to other load on a shared machine) and
wall-clock seconds; best and median of ``--repeats`` runs, the two paths alternating.

The released job reads its training facts from the ``.fact`` file it caches beside them (written by one
untimed run first, as the released code's first evaluation does). The warm process finds the gold index, the training facts and the gold labels in train in a scoring cache
(``envre_hf.metrics.cache``) filled by one untimed run first, in a temporary folder.

    python3 benchmarks/bench_metric.py [--gold PATH] [--train PATH] [--copies 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
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
from _bench_common import DEV, TEST, machine, write_json  # noqa: E402

from envre_hf.documents import Document, docred_schema, read_documents, to_docred, write_documents  # noqa: E402

#: How each process is named in the printout.
LABELS = {
    "released": "released scorer job (json)",
    "official": "official algorithm (json)",
    "replaced": "replaced path (typed documents)",
    "new_cold": "new (cold: --no-cache)",
    "new_warm": "new (warm cache)",
}

#: The released job's scores that equal envre's to the last digit (its evidence recall divides by gold + 1).
RELEASED_SAME = ("precision", "recall", "f1", "ign_precision", "ign_f1", "evidence_precision", "intra_precision",
                 "intra_recall", "intra_f1", "inter_precision", "inter_recall", "inter_f1")

#: The replaced path, as ``envre evaluate --predictions`` ran it: typed documents, json, then scoring.
REPLACED = """
import json, sys
from envre_hf.documents import read_documents
from envre_hf.metrics import read_predictions, score_predictions
pred, gold, train, out = sys.argv[1:5]
scores = score_predictions(read_predictions(pred), read_documents(gold), read_documents(train))
open(out, "w", encoding="utf-8").write(json.dumps(scores.to_dict(), indent=2, ensure_ascii=False) + "\\n")
"""

#: The official algorithm as a whole job (titles made unique, since the official scorer keys by title).
OFFICIAL = """
import json, sys
from envre_hf.metrics.reference import official_scores
pred, gold, train, out = sys.argv[1:5]
with open(pred) as p, open(gold) as g, open(train) as t:
    scores = official_scores(json.load(p), json.load(g), json.load(t))
open(out, "w", encoding="utf-8").write(json.dumps(scores, indent=2) + "\\n")
"""


#: One path's steps, timed in a process of its own: prints ``[{step: CPU seconds}, headline scores]``.
BREAKDOWN = """
import gc, json, sys, time
from envre_hf.documents import read_documents
from envre_hf.metrics import GoldIndex, TrainFacts, read_gold_index, read_predictions, read_train_facts, score_predictions
from envre_hf.metrics.fast_io import _cached_labels_in_train
from envre_hf.metrics.cache import ScoringCache, file_digest
mode, pred, gold, train, cache = sys.argv[1:6]
steps = {}
def step(name, fn):
    start = time.process_time()
    value = fn()
    steps[name] = time.process_time() - start
    return value
if mode == "replaced":
    gold_docs = step("read gold", lambda: read_documents(gold))
    train_docs = step("read train", lambda: read_documents(train))
    preds = step("read predictions", lambda: read_predictions(pred))
    index = step("gold index", lambda: GoldIndex(gold_docs))
    facts = step("train facts", lambda: TrainFacts.from_documents(train_docs))
else:
    gc.disable()  # as score_files does
    store = ScoringCache(cache) if mode == "new_warm" else None
    index = step("gold index" + (" from cache" if store else " from file"), lambda: read_gold_index(gold, cache=store))
    facts = step("train facts" + (" from cache" if store else " from file"), lambda: read_train_facts(train, cache=store))
    if store:
        key = file_digest(gold) + "-" + file_digest(train)
        step("labels in train from cache", lambda: _cached_labels_in_train(index, facts, store, key))
if mode == "replaced":
    scores = step("score", lambda: score_predictions(preds, index, facts))
else:  # as score_files does: the predictions decoded straight into typed columns, then counted
    from pathlib import Path
    from envre_hf.metrics.fast_io import _score_decoded
    data = step("read predictions (bytes)", lambda: Path(pred).read_bytes())
    scores = step("decode predictions + score", lambda: _score_decoded(Path(pred), data, index, facts))
print(json.dumps([steps, {k: getattr(scores, k) for k in ("f1", "ign_f1", "evidence_f1")}]))
"""


def title_keyed(gold: list[Document], preds: list[dict]) -> tuple[list[dict], list[dict]]:
    """Gold and predictions for the official scorer: each document's key becomes its title."""
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


def run_process(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
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
    official_gold, official_preds = title_keyed(gold, preds)
    official_gold_path, official_pred_path = tmp / "gold_titles.json", tmp / "predictions_titles.json"
    official_gold_path.write_text(json.dumps(official_gold), encoding="utf-8")
    official_pred_path.write_text(json.dumps(official_preds), encoding="utf-8")
    n_facts = sum(len(d.relations) for d in gold)
    print(f"gold: {len(gold)} documents, {n_facts} facts; predictions: {len(preds)}; train: {args.train.name}")

    names = ("released", "official", "replaced", "new_cold", "new_warm")
    outputs = {name: tmp / f"{name}.json" for name in names}
    evaluate = [sys.executable, "-m", "envre_hf.cli.main", "evaluate", "--predictions", str(pred_path),
                "--gold", str(gold_path), "--train", str(train_path), "--output"]  # fmt: skip
    commands = {
        "new_cold": evaluate + [str(outputs["new_cold"]), "--no-cache"],
        "new_warm": evaluate + [str(outputs["new_warm"])],
        "replaced": [sys.executable, "-c", REPLACED, str(pred_path), str(gold_path), str(train_path), str(outputs["replaced"])],
        "official": [sys.executable, "-c", OFFICIAL, str(official_pred_path), str(official_gold_path), str(train_path),
                     str(outputs["official"])],
        "released": [sys.executable, str(Path(__file__).resolve().parent / "_released_scorer.py"), str(official_pred_path),
                     str(official_gold_path), str(train_path), str(tmp), str(outputs["released"])],
    }  # fmt: skip
    cache_dir = tmp / "scoring-cache"
    env = {**os.environ, "ENVRE_SCORING_CACHE": str(cache_dir)}
    run_process(commands["new_warm"], env)  # fills the cache (not timed): later runs are warm
    run_process(commands["released"], env)  # writes the released job's .fact file of the training facts (not timed)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for _ in range(args.repeats):
        for name in names:
            runs[name].append(run_process(commands[name], env))
    new_scores = json.loads(outputs["new_cold"].read_text())
    official_scores = json.loads(outputs["official"].read_text())
    released = json.loads(outputs["released"].read_text())
    same = (
        new_scores == json.loads(outputs["replaced"].read_text()) == json.loads(outputs["new_warm"].read_text())
        and all(new_scores[k] == v for k, v in official_scores.items())
        and all(new_scores[k] == released[k] for k in RELEASED_SAME)
        # the released function starts its evidence total at 1
        and released["evidence_recall"] == new_scores["num_correct_evidence"] / (new_scores["num_gold_evidence"] + 1)
    )
    print(f"same scores from the five processes: {same}")
    figures: dict = {"same_scores": same, "documents": len(gold), "facts": n_facts, "predictions": len(preds)}
    for name in names:
        cpu_s = sorted(c for c, _ in runs[name])
        wall_s = sorted(w for _, w in runs[name])
        figures[name] = {"cpu_best_s": round(cpu_s[0], 3), "cpu_median_s": round(cpu_s[len(cpu_s) // 2], 3),
                         "wall_best_s": round(wall_s[0], 3), "wall_median_s": round(wall_s[len(wall_s) // 2], 3)}  # fmt: skip
        f = figures[name]
        print(
            f"whole process, {LABELS[name]:31s}: CPU best {f['cpu_best_s']:.3f} s, median {f['cpu_median_s']:.3f} s; "
            f"wall best {f['wall_best_s']:.3f} s, median {f['wall_median_s']:.3f} s"
        )
    for new in ("new_cold", "new_warm"):
        for old in ("replaced", "official", "released"):
            ratio = figures[old]["cpu_best_s"] / figures[new]["cpu_best_s"]
            figures[f"speedup_{new}_vs_{old}_cpu_best"] = round(ratio, 2)
            goal = " (goal x3)" if old == "released" else ""
            print(f"{LABELS[new]} vs {LABELS[old]} (whole process, CPU time, best): x{ratio:.2f} faster{goal}")

    # breakdown: CPU seconds of each step, one child process per path (a fresh heap, as in the jobs above)
    paths = [str(pred_path), str(gold_path), str(train_path), str(cache_dir)]
    steps = {}
    for name in ("replaced", "new_cold", "new_warm"):
        out = subprocess.run([sys.executable, "-c", BREAKDOWN, name, *paths], check=True, capture_output=True, text=True)
        steps[name], f1 = json.loads(out.stdout)
        print(f"breakdown (CPU s), {LABELS[name]}: " + ", ".join(f"{k} {v:.3f}" for k, v in steps[name].items()))
        figures[f"breakdown_{name}_cpu_s"] = {k: round(v, 3) for k, v in steps[name].items()}
    print(f"F1 {100 * f1['f1']:.2f}  Ign F1 {100 * f1['ign_f1']:.2f}  evidence F1 {100 * f1['evidence_f1']:.2f}")
    shutil.rmtree(tmp)
    if args.json_out:
        command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
        write_json(args.json_out, {"command": command, "machine": machine(), **figures})
        print(f"wrote {args.json_out}")
    if not same:
        sys.exit("the two paths printed different scores")


if __name__ == "__main__":
    main()

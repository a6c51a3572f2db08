"""Speed of docre_f1 scoring at benchmark scale (target: < 1 s on one core, Ign included).

Gold: the Re-DocRED test split five times under distinct doc_ids ``<title>#<k>`` (2,500 documents,
~87k facts), like the five renamed copies of Env-Re-DocRED. Predictions: the gold facts with 10% dropped,
10% given a wrong relation, 5% duplicated, and one spurious pair per document; evidence kept. Ign uses the
dev split as training documents. File reading is not timed (it is JSON parsing, not scoring). Scoring is
single-threaded pure Python, so it runs on one core; the CPU time line is the figure to trust on a busy machine.

    python3 benchmarks/bench_metric.py [--gold PATH] [--train PATH] [--copies 5] [--repeats 5]
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import time
from pathlib import Path

from envre_hf.documents import Document, read_documents, docred_schema
from envre_hf.metrics import GoldIndex, TrainFacts, score_predictions

SHARED = Path(os.environ.get("ENVRE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", default=SHARED / "redocred" / "test_revised.json")
    parser.add_argument("--train", default=SHARED / "redocred" / "dev_revised.json")
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs; the best and the median are printed")
    args = parser.parse_args()

    gold = replicate(read_documents(args.gold), args.copies)
    train = read_documents(args.train)
    preds = perturbed_predictions(gold)
    n_facts = sum(len(d.relations) for d in gold)
    print(f"gold: {len(gold)} documents, {n_facts} facts; predictions: {len(preds)}; train: {len(train)} documents")

    times, cpu, parts = [], [], []
    for _ in range(args.repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        scores = score_predictions(preds, gold, train)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        t1 = time.perf_counter()
        index = GoldIndex(gold)
        t2 = time.perf_counter()
        facts = TrainFacts.from_documents(train)
        t3 = time.perf_counter()
        score_predictions(preds, index, facts)
        t4 = time.perf_counter()
        parts.append((t2 - t1, t3 - t2, t4 - t3))
    best, median = min(times), sorted(times)[len(times) // 2]
    print(f"F1 {100 * scores.f1:.2f}  Ign F1 {100 * scores.ign_f1:.2f}  evidence F1 {100 * scores.evidence_f1:.2f}")
    print(f"whole scoring incl. Ign: best {best:.3f} s, median {median:.3f} s over {args.repeats} runs")
    print(f"CPU time of this process (robust to other load on the machine): best {min(cpu):.3f} s")
    print(f"documents/second: {len(gold) / best:,.0f} (best), {len(gold) / median:,.0f} (median)")
    b = min(parts, key=sum)
    print(f"breakdown (best run): gold index {b[0]:.3f} s, train facts {b[1]:.3f} s, predictions {b[2]:.3f} s")


if __name__ == "__main__":
    main()

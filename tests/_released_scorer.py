"""The released code's scoring job, restated (clean room): the tests' reference scorer and the baseline of
``benchmarks/bench_metric.py``.

Env-DocRE's ``evrt/main.py`` scores dev and test with ``official_evaluate_benchmark`` of
``evrt/evaluation.py``: one function that reports F1, evidence F1, Ign F1 (against the annotated and the
distant training facts), F1 of the ten most frequent relations and of the long tail, and intra / inter F1.
This module performs the same steps, written from reading it (nothing copied), so that its cost is the
released job's cost:

* the training facts ``(head name, tail name, r)`` come from a ``.fact`` JSON list cached beside the
  training file the first time (``gen_train_facts``; a later job reads the list back);
* the gold file is read with the standard ``json``; each gold label records its evidence set and, three
  times over, the smallest sentence distance between its entities (sort both sentence lists, walk them
  together: ``== 0`` intra, ``>= 1`` inter, ``> 5`` long inter) and its frequent / long-tail class;
* the submission is sorted by (title, h, t, r) and adjacent repeats dropped (a submission of one fact
  counts as empty, as there); frequent / long-tail sublists; the three distances again per fact;
* one loop for correct facts, evidence and Ign (every mention-name pair checked against both fact sets, no
  early exit), then one loop per sublist (frequent, long tail, intra, inter, long inter);
* P / R / F1 of each; the evidence total starts at 1 in that function (a quirk kept here, so its evidence
  recall is ``correct / (gold + 1)``).

Differences, all making this baseline cheaper than the released job: the distant training facts
(``train_distant.json``, 101k documents, not available here) are an empty set unless ``distant`` is given,
so only their membership tests remain; nothing is printed. ``tests/metrics/test_metric_reference.py`` checks that
F1, Ign F1, evidence and intra / inter scores equal ``envre_hf``'s on the real splits.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

#: DocRED's ten most frequent relations, as the released function lists them.
FREQUENT = frozenset({"P17", "P131", "P27", "P150", "P175", "P577", "P463", "P527", "P495", "P361"})


def closest(a: list[int], b: list[int]) -> int:
    """Smallest ``|x - y|`` for x in a, y in b: both sorted in place, then walked together."""
    a.sort()
    b.sort()
    i = j = 0
    best = sys.maxsize
    while i < len(a) and j < len(b):
        gap = abs(a[i] - b[j])
        if gap < best:
            best = gap
        if a[i] < b[j]:
            i += 1
        else:
            j += 1
    return best


def train_facts(path: str | os.PathLike, fact_dir: str | os.PathLike) -> set[tuple[str, str, str]]:
    """The (head mention name, tail mention name, r) facts of a training file, cached as ``<stem>.fact``."""
    path = Path(path)
    fact_file = Path(fact_dir) / (path.stem + ".fact")
    if fact_file.exists():
        with open(fact_file) as fh:
            return {tuple(x) for x in json.load(fh)}
    facts: set[tuple[str, str, str]] = set()
    with open(path) as fh:
        docs = json.load(fh)
    for doc in docs:
        entities = doc["vertexSet"]
        for label in doc["labels"]:
            for m1 in entities[label["h"]]:
                for m2 in entities[label["t"]]:
                    facts.add((m1["name"], m2["name"], label["r"]))
    with open(fact_file, "w") as fh:
        json.dump(list(facts), fh)
    return facts


def _prf(correct: int, predicted: int, gold: int) -> tuple[float, float, float]:
    p = 1.0 * correct / predicted if predicted > 0 else 0
    r = 1.0 * correct / gold
    return p, r, (0 if p + r == 0 else 2.0 * p * r / (p + r))


def released_scores(
    submission: list[dict], gold_path: str | os.PathLike, train_path: str | os.PathLike,
    fact_dir: str | os.PathLike, relations: list[str], distant: str | os.PathLike | None = None,
) -> dict[str, float]:
    """The released function's numbers for ``submission`` (dicts title / h_idx / t_idx / r [/ evidence])."""
    long_tail = set(relations) - FREQUENT
    annotated = train_facts(train_path, fact_dir)
    distant_facts = train_facts(distant, fact_dir) if distant is not None else set()
    with open(gold_path) as fh:
        truth = json.load(fh)

    std, std_freq, std_tail, std_intra, std_inter, std_long = {}, {}, {}, {}, {}, {}
    gold_evidence = 1
    vertex_sets = {}
    for doc in truth:
        title = doc["title"]
        entities = vertex_sets[title] = doc["vertexSet"]
        for label in doc["labels"]:
            r, h, t = label["r"], label["h"], label["t"]
            key = (title, r, h, t)
            h_sents = [m["sent_id"] for m in entities[h]]
            t_sents = [m["sent_id"] for m in entities[t]]
            std[key] = set(label["evidence"])
            gold_evidence += len(set(label["evidence"]))
            if closest(h_sents, t_sents) == 0:
                std_intra[key] = set(label["evidence"])
            if closest(h_sents, t_sents) >= 1:
                std_inter[key] = set(label["evidence"])
            if closest(h_sents, t_sents) > 5:
                std_long[key] = set(label["evidence"])
            if r in FREQUENT:
                std_freq[key] = set(label["evidence"])
            if r in long_tail:
                std_tail[key] = set(label["evidence"])

    submission.sort(key=lambda x: (x["title"], x["h_idx"], x["t_idx"], x["r"]))
    answer = []
    if len(submission) > 1:
        answer.append(submission[0])
        for prev, x in zip(submission, submission[1:]):
            if (x["title"], x["h_idx"], x["t_idx"], x["r"]) != (prev["title"], prev["h_idx"], prev["t_idx"], prev["r"]):
                answer.append(x)
    answer_freq = [x for x in answer if x["r"] in FREQUENT]
    answer_tail = [x for x in answer if x["r"] in long_tail]
    answer_intra, answer_inter, answer_long = [], [], []
    for x in answer:
        entities = vertex_sets[x["title"]]
        h_sents = [m["sent_id"] for m in entities[x["h_idx"]]]
        t_sents = [m["sent_id"] for m in entities[x["t_idx"]]]
        if closest(h_sents, t_sents) == 0:
            answer_intra.append(x)
        if closest(h_sents, t_sents) >= 1:
            answer_inter.append(x)
        if closest(h_sents, t_sents) > 5:
            answer_long.append(x)

    correct = correct_evidence = predicted_evidence = in_annotated = in_distant = 0
    for x in answer:
        title, h, t, r = x["title"], x["h_idx"], x["t_idx"], x["r"]
        if title not in vertex_sets:
            continue
        entities = vertex_sets[title]
        evidence = set(x["evidence"]) if "evidence" in x else set()
        predicted_evidence += len(evidence)
        if (title, r, h, t) in std:
            correct += 1
            correct_evidence += len(std[(title, r, h, t)] & evidence)
            found_annotated = found_distant = False
            for m1 in entities[h]:
                for m2 in entities[t]:
                    if (m1["name"], m2["name"], r) in annotated:
                        found_annotated = True
                    if (m1["name"], m2["name"], r) in distant_facts:
                        found_distant = True
            in_annotated += found_annotated
            in_distant += found_distant

    def count(sub: list[dict], gold: dict) -> int:
        hits = 0
        for x in sub:
            title = x["title"]
            if title not in vertex_sets:
                continue
            if (title, x["r"], x["h_idx"], x["t_idx"]) in gold:
                hits += 1
        return hits

    correct_freq, correct_tail = count(answer_freq, std_freq), count(answer_tail, std_tail)
    correct_intra, correct_inter = count(answer_intra, std_intra), count(answer_inter, std_inter)
    correct_long = count(answer_long, std_long)

    p, r, f1 = _prf(correct, len(answer), len(std))
    evi_p, evi_r, evi_f1 = _prf(correct_evidence, predicted_evidence, gold_evidence)
    ign_p = 1.0 * (correct - in_annotated) / (len(answer) - in_annotated + 1e-5)
    ign_f1 = 0 if ign_p + r == 0 else 2.0 * ign_p * r / (ign_p + r)
    ign_distant_p = 1.0 * (correct - in_distant) / (len(answer) - in_distant + 1e-5)
    ign_distant_f1 = 0 if ign_distant_p + r == 0 else 2.0 * ign_distant_p * r / (ign_distant_p + r)
    scores = {"precision": p, "recall": r, "f1": f1, "ign_precision": ign_p, "ign_f1": ign_f1,
              "ign_distant_f1": ign_distant_f1, "evidence_precision": evi_p, "evidence_recall": evi_r,
              "evidence_f1": evi_f1}  # fmt: skip
    for name, c, n, g in (("frequent", correct_freq, len(answer_freq), len(std_freq)),
                          ("long_tail", correct_tail, len(answer_tail), len(std_tail)),
                          ("intra", correct_intra, len(answer_intra), len(std_intra)),
                          ("inter", correct_inter, len(answer_inter), len(std_inter)),
                          ("long_inter", correct_long, len(answer_long), len(std_long))):  # fmt: skip
        scores[f"{name}_precision"], scores[f"{name}_recall"], scores[f"{name}_f1"] = _prf(c, n, g) if g else (0, 0, 0)
    return scores


def main(argv: list[str]) -> None:
    """``python _released_scorer.py PREDICTIONS GOLD TRAIN FACT_DIR OUT``: the whole job, from files."""
    pred, gold, train, fact_dir, out = argv
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from envre_hf.documents import docred_schema

    with open(pred) as fh:
        submission = json.load(fh)
    scores = released_scores(submission, gold, train, fact_dir, list(docred_schema().rel2index))
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(scores, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])

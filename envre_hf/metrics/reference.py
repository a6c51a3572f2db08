"""A clean-room, loop-style restatement of the official DocRED scorer: the reference ``docre_f1`` is held to.

It follows the official algorithm (ATLOP's ``official_evaluate``, with Re-DocRED's intra/inter split) on the
raw JSON dicts: it sorts the submission and drops adjacent repeats, and uses the official expressions, so
its floats are the official ones. It is slow on purpose (nested loops, no index); the tests compare
:func:`~envre_hf.metrics.score_predictions` with it (``==``, not approx) and ``benchmarks/bench_metric.py``
times a whole job through it as the stand-in for the released scorer.
"""

from __future__ import annotations


def _min_sentence_distance(vertex_set, h, t):
    return min(abs(a["sent_id"] - b["sent_id"]) for a in vertex_set[h] for b in vertex_set[t])


def official_scores(submission: list[dict], truth: list[dict], train: list[dict]) -> dict[str, float]:
    """The official scorer's numbers for ``submission`` (dicts with title/h_idx/t_idx/r[/evidence]),
    ``truth`` and ``train`` being raw DocRED dicts (``json.load`` of the files)."""
    fact_in_train = set()
    for doc in train:
        for label in doc["labels"]:
            for m1 in doc["vertexSet"][label["h"]]:
                for m2 in doc["vertexSet"][label["t"]]:
                    fact_in_train.add((m1["name"], m2["name"], label["r"]))

    std, std_intra, std_inter = {}, {}, {}
    tot_evidences = 0
    vertex_sets = {}
    for doc in truth:
        title = doc["title"]
        vertex_sets[title] = doc["vertexSet"]
        for label in doc["labels"]:
            key = (title, label["r"], label["h"], label["t"])
            std[key] = set(label["evidence"])
            tot_evidences += len(label["evidence"])
            if _min_sentence_distance(doc["vertexSet"], label["h"], label["t"]) == 0:
                std_intra[key] = std[key]
            else:
                std_inter[key] = std[key]

    ordered = sorted(submission, key=lambda x: (x["title"], x["h_idx"], x["t_idx"], x["r"]))
    answer = []
    for i, x in enumerate(ordered):
        if i > 0:
            y = ordered[i - 1]
            if (x["title"], x["h_idx"], x["t_idx"], x["r"]) == (y["title"], y["h_idx"], y["t_idx"], y["r"]):
                continue
        answer.append(x)

    correct = correct_evidence = pred_evi = in_train = 0
    n_intra = n_inter = correct_intra = correct_inter = 0
    for x in answer:
        title, h, t, r = x["title"], x["h_idx"], x["t_idx"], x["r"]
        if title not in vertex_sets:
            continue
        vertex_set = vertex_sets[title]
        evi = set(x["evidence"]) if "evidence" in x else set()
        pred_evi += len(evi)
        key = (title, r, h, t)
        if _min_sentence_distance(vertex_set, h, t) == 0:
            n_intra += 1
            correct_intra += key in std_intra
        else:
            n_inter += 1
            correct_inter += key in std_inter
        if key in std:
            correct += 1
            correct_evidence += len(std[key] & evi)
            found = False
            for n1 in vertex_set[h]:
                for n2 in vertex_set[t]:
                    if (n1["name"], n2["name"], r) in fact_in_train:
                        found = True
            if found:
                in_train += 1

    def prf(c, n, g):
        p = 1.0 * c / n if n > 0 else 0
        rr = 1.0 * c / g if g > 0 else 0
        return p, rr, (0 if p + rr == 0 else 2.0 * p * rr / (p + rr))

    re_p, re_r, re_f1 = prf(correct, len(answer), len(std))
    evi_p, evi_r, evi_f1 = prf(correct_evidence, pred_evi, tot_evidences)
    ign_p = 1.0 * (correct - in_train) / (len(answer) - in_train + 1e-5)
    ign_f1 = 0 if ign_p + re_r == 0 else 2.0 * ign_p * re_r / (ign_p + re_r)
    intra = prf(correct_intra, n_intra, len(std_intra))
    inter = prf(correct_inter, n_inter, len(std_inter))
    return {
        "precision": re_p,
        "recall": re_r,
        "f1": re_f1,
        "ign_precision": ign_p,
        "ign_f1": ign_f1,
        "evidence_precision": evi_p,
        "evidence_recall": evi_r,
        "evidence_f1": evi_f1,
        "intra_precision": intra[0],
        "intra_recall": intra[1],
        "intra_f1": intra[2],
        "inter_precision": inter[0],
        "inter_recall": inter[1],
        "inter_f1": inter[2],
    }

"""docre_f1 equals the official DocRED scorer on randomized submissions over real Re-DocRED documents.

``official_reference`` below is a clean-room, loop-style restatement of the official algorithm (ATLOP's
``official_evaluate``, with Re-DocRED's intra/inter split): it works on the raw JSON dicts, sorts the
submission and drops adjacent repeats, and uses the official expressions. The fast implementation must give
the very same floats (``==``, not approx).
"""

from __future__ import annotations

import copy
import random

import pytest

from envre_hf.documents import docred_schema, to_docred
from envre_hf.metrics import TrainFacts, score_predictions


def _min_sentence_distance(vertex_set, h, t):
    return min(abs(a["sent_id"] - b["sent_id"]) for a in vertex_set[h] for b in vertex_set[t])


def official_reference(submission, truth, train):
    """The official scorer's numbers for ``submission`` (dicts with title/h_idx/t_idx/r[/evidence])."""
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


def random_submission(docs, rng, unknown_titles=0):
    """Perturbed gold: dropped, relabelled, duplicated (with other evidence), cross-document and random facts."""
    rels = docred_schema().ids() + ["P_unknown"]
    out = []
    for doc in docs:
        n_ent = len(doc.entities)
        for rel in doc.relations:
            u = rng.random()
            if u < 0.15:
                continue
            pred = {"title": doc.key, "h_idx": rel.h, "t_idx": rel.t, "r": rng.choice(rels) if u < 0.3 else rel.r}
            if rng.random() < 0.8:
                pred["evidence"] = [s for s in rel.evidence if rng.random() < 0.7] + rng.sample(
                    range(len(doc.sents)), min(2, len(doc.sents))
                )[: rng.randint(0, 2)]
            out.append(pred)
            if rng.random() < 0.1:  # a repeat, with different evidence: the first one counts
                out.append({**pred, "evidence": [rng.randrange(len(doc.sents))]})
        for _ in range(rng.randint(0, 4)):
            h, t = rng.randrange(n_ent), rng.randrange(n_ent)
            out.append({"title": doc.key, "h_idx": h, "t_idx": t, "r": rng.choice(rels), "evidence": []})
        other = docs[rng.randrange(len(docs))]  # a fact attributed to the wrong document
        for rel in other.relations[:3]:
            if rel.h < n_ent and rel.t < n_ent:
                out.append({"title": doc.key, "h_idx": rel.h, "t_idx": rel.t, "r": rel.r})
    for k in range(unknown_titles):
        out.append({"title": f"no such document {k}", "h_idx": 0, "t_idx": 1, "r": "P17", "evidence": [0]})
    rng.shuffle(out)
    return out


def _truth(docs):
    """Raw dicts keyed by the documents' keys (the reference only knows titles)."""
    out = []
    for doc in docs:
        raw = to_docred(doc)
        raw["title"] = doc.key
        out.append(raw)
    return out


def _assert_equal(ours, ref, keys=None):
    got = ours.to_dict()
    for key in keys or ref:
        assert got[key] == ref[key], (key, got[key], ref[key])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_official_on_real_documents(redocred_test, redocred_dev, seed):
    rng = random.Random(seed)
    docs = redocred_test
    submission = random_submission(docs, rng)
    ref = official_reference(submission, _truth(docs), [to_docred(d) for d in redocred_dev])
    ours = score_predictions(submission, docs, redocred_dev)
    _assert_equal(ours, ref)
    assert ours.num_duplicates > 0 and ours.num_correct_in_train > 0  # the cases under test really occur
    assert 0 < ours.f1 < 1 and ours.ign_f1 < ours.f1


def test_equals_official_with_renamed_copies_and_unknown_documents(redocred_test, redocred_dev):
    rng = random.Random(7)
    copies = []
    for k in range(2):
        for doc in redocred_test[:150]:
            twin = copy.copy(doc)
            twin.doc_id = f"{doc.title}#{k}"
            copies.append(twin)
    submission = random_submission(copies, rng, unknown_titles=25)
    facts = TrainFacts.from_documents(redocred_dev)
    ref = official_reference(submission, _truth(copies), [to_docred(d) for d in redocred_dev])
    ours = score_predictions(submission, copies, facts, allow_unknown_documents=True)
    # Re-DocRED's intra/inter code cannot take unknown documents; the official numbers can
    _assert_equal(ours, ref, [k for k in ref if not k.startswith(("intra", "inter"))])
    assert ours.num_unknown_document_predictions == 25


def test_equals_official_on_exact_gold(redocred_test, redocred_dev):
    submission = [
        {"title": d.title, "h_idx": r.h, "t_idx": r.t, "r": r.r, "evidence": r.evidence}
        for d in redocred_test
        for r in d.relations
    ]
    ref = official_reference(submission, _truth(redocred_test), [to_docred(d) for d in redocred_dev])
    ours = score_predictions(submission, redocred_test, redocred_dev)
    _assert_equal(ours, ref)
    assert ours.f1 == 1.0 and ours.evidence_f1 == 1.0

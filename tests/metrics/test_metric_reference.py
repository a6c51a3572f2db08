"""docre_f1 equals the official DocRED scorer on randomized submissions over real Re-DocRED documents.

``official_scores`` (envre_hf/metrics/reference.py) is a clean-room, loop-style restatement of the official
algorithm on the raw JSON dicts. The fast implementation must give the very same floats (``==``, not approx).
"""

from __future__ import annotations

import copy
import random

import pytest

from envre_hf.documents import docred_schema, to_docred
from envre_hf.metrics import TrainFacts, score_predictions
from envre_hf.metrics.reference import official_scores as official_reference


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

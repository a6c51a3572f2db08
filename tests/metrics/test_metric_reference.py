"""docre_f1 equals the released scoring code on randomized submissions over real Re-DocRED documents.

``tests/_released_scorer.py`` is a clean-room, loop-style restatement of Env-DocRE's ``official_evaluate_benchmark``
on the raw JSON files (the one reference scorer, also the baseline of ``benchmarks/bench_metric.py``). Its floats
must be ours (``==``, not approx); its evidence recall divides by the gold evidence total + 1, a quirk of that code.
"""

from __future__ import annotations

import copy
import json
import random

import pytest

from envre_hf.documents import docred_schema, to_docred
from envre_hf.metrics import score_predictions, train_facts

from _metric_helpers import perturbed
from _released_scorer import closest, released_scores

SAME = ("precision", "recall", "f1", "ign_precision", "ign_f1", "evidence_precision", "intra_precision",
        "intra_recall", "intra_f1", "inter_precision", "inter_recall", "inter_f1")  # fmt: skip


def random_submission(docs, rng):
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
    rng.shuffle(out)
    return out


def released(submission, gold, train, tmp_path):
    """The released job's scores: the gold documents written with their keys as titles (it keys by title)."""
    truth = []
    for doc in gold:
        raw = to_docred(doc)
        raw["title"] = doc.key
        truth.append(raw)
    (tmp_path / "gold.json").write_text(json.dumps(truth))
    (tmp_path / "train.json").write_text(json.dumps([to_docred(d) for d in train]))
    relations = list(docred_schema().rel2index)
    return released_scores(copy.deepcopy(submission), tmp_path / "gold.json", tmp_path / "train.json", tmp_path, relations)


def assert_equal(ours, theirs):
    assert {k: getattr(ours, k) for k in SAME} == {k: theirs[k] for k in SAME}
    assert theirs["evidence_recall"] == ours.num_correct_evidence / (ours.num_gold_evidence + 1)


def test_closest_is_the_smallest_gap_between_two_sentence_lists():
    rng = random.Random(0)
    for _ in range(300):
        a = [rng.randrange(25) for _ in range(rng.randint(1, 5))]
        b = [rng.randrange(25) for _ in range(rng.randint(1, 5))]
        assert closest(list(a), list(b)) == min(abs(x - y) for x in a for y in b)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_the_released_scorer_on_real_documents(redocred_test, redocred_dev, tmp_path, seed):
    submission = random_submission(redocred_test, random.Random(seed))
    ours = score_predictions(submission, redocred_test, redocred_dev)
    assert_equal(ours, released(submission, redocred_test, redocred_dev, tmp_path))
    assert ours.num_duplicates > 0 and ours.num_correct_in_train > 0  # the cases under test really occur
    assert 0 < ours.f1 < 1 and ours.ign_f1 < ours.f1


def test_equals_the_released_scorer_with_renamed_copies(redocred_test, redocred_dev, tmp_path):
    copies = [copy.copy(doc) for k in range(2) for doc in redocred_test[:150]]
    for i, twin in enumerate(copies):
        twin.doc_id = f"{twin.title}#{i // 150}"
    submission = random_submission(copies, random.Random(7))
    facts = train_facts(redocred_dev)
    ours = score_predictions(submission, copies, facts)
    assert_equal(ours, released(submission, copies, redocred_dev, tmp_path))
    # the official behaviour for documents outside the gold set: their predictions are wrong, nothing else changes
    extra = [{"title": f"no such document {k}", "h_idx": 0, "t_idx": 1, "r": "P17", "evidence": [0]} for k in range(25)]
    more = score_predictions(submission + extra, copies, facts, allow_unknown_documents=True)
    assert more.num_unknown_document_predictions == 25 and more.num_predictions == ours.num_predictions + 25
    assert more.precision == ours.num_correct / (ours.num_predictions + 25) and more.recall == ours.recall
    assert more.num_predicted_evidence == ours.num_predicted_evidence and more.intra_f1 == ours.intra_f1


def test_equals_the_released_scorer_on_exact_gold(redocred_test, redocred_dev, tmp_path):
    submission = [
        {"title": d.title, "h_idx": r.h, "t_idx": r.t, "r": r.r, "evidence": r.evidence}
        for d in redocred_test
        for r in d.relations
    ]
    ours = score_predictions(submission, redocred_test, redocred_dev)
    assert_equal(ours, released(submission, redocred_test, redocred_dev, tmp_path))
    assert ours.f1 == 1.0 and ours.evidence_f1 == 1.0


@pytest.mark.parametrize("seed", [0, 1])
def test_the_released_job_caches_its_training_facts_and_reads_them_back(redocred_test, redocred_dev, tmp_path, seed):
    preds = perturbed(redocred_test, seed, by_title=True)
    for p in preds:  # the released job reads evidence as a list when the key is there
        if "evidence" in p and p["evidence"] is None:
            del p["evidence"]
    ours = score_predictions(preds, redocred_test, redocred_dev)
    theirs = released(preds, redocred_test, redocred_dev, tmp_path)
    assert ours.num_correct > 0 and ours.num_correct_in_train > 0 and ours.num_correct_evidence > 0
    assert_equal(ours, theirs)
    assert (tmp_path / "train.fact").is_file()
    assert released(preds, redocred_test, redocred_dev, tmp_path) == theirs

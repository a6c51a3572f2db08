"""Properties of the DocRED scorer on generated gold documents and predictions.

Invariance to prediction order and to exact duplicates, scores within [0, 1], perfect
predictions scoring 1.0, counts that agree with a set computation, and Ign F1 <= F1 whenever
training facts overlap the gold labels.
"""

from __future__ import annotations

import math

from _strategies import RELATIONS, documents
from hypothesis import assume, given
from hypothesis import strategies as st

from envre_hf.metrics.docre import score_predictions

_FRACTIONS = (
    "precision", "recall", "f1", "ign_precision", "ign_f1", "evidence_precision", "evidence_recall", "evidence_f1",
    "intra_precision", "intra_recall", "intra_f1", "inter_precision", "inter_recall", "inter_f1",
)  # fmt: skip


@st.composite
def gold_sets(draw):
    plans = draw(st.lists(documents(values=False, leaks=False, max_entities=4), min_size=1, max_size=4))
    docs = []
    for i, plan in enumerate(plans):
        plan.doc.doc_id = f"d{i}"
        docs.append(plan.doc)
    return docs


def _gold_rows(docs):
    return [
        {"doc_id": d.key, "h_idx": r.h, "t_idx": r.t, "r": r.r, "evidence": list(r.evidence)}
        for d in docs
        for r in d.relations
    ]


@st.composite
def submissions(draw):
    gold = draw(gold_sets())
    rows = _gold_rows(gold)
    kept = [row for row in rows if draw(st.booleans())]
    wrong = []
    for _ in range(draw(st.integers(0, 6))):
        doc = draw(st.sampled_from(gold))
        n = len(doc.entities)
        wrong.append(
            {
                "doc_id": doc.key,
                "h_idx": draw(st.integers(0, n - 1)),
                "t_idx": draw(st.integers(0, n - 1)),
                "r": draw(st.sampled_from(RELATIONS)),
                "evidence": sorted(draw(st.sets(st.integers(0, len(doc.sents) - 1), max_size=2))),
            }
        )
    # one prediction per (doc, h, t, r): a wrong guess that hits a gold label is that label
    preds, seen = [], set()
    for row in draw(st.permutations(kept + wrong)):
        key = (row["doc_id"], row["h_idx"], row["t_idx"], row["r"])
        if key not in seen:
            seen.add(key)
            preds.append(row)
    return gold, preds


def _scores(preds, gold, train=None):
    d = score_predictions(preds, gold, train).to_dict()
    d.pop("num_duplicates")
    return d


def _same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], float):
            assert math.isclose(a[key], b[key], rel_tol=1e-12, abs_tol=1e-15), key
        else:
            assert a[key] == b[key], key


@given(submissions(), st.randoms(use_true_random=False))
def test_order_and_duplicates_do_not_change_the_scores(case, rnd):
    gold, preds = case
    base = score_predictions(preds, gold)
    shuffled = list(preds)
    rnd.shuffle(shuffled)
    dup = [dict(p) for p in preds for _ in range(rnd.randint(1, 3))]
    rnd.shuffle(dup)
    _same(_scores(shuffled, gold), _scores(preds, gold))
    _same(_scores(dup, gold), _scores(preds, gold))
    assert score_predictions(dup, gold).num_duplicates == len(dup) - len(preds)
    assert base.num_duplicates == 0


@given(submissions())
def test_scores_are_fractions_and_counts_agree_with_sets(case):
    gold, preds = case
    s = score_predictions(preds, gold, gold[:1])
    for key in _FRACTIONS:
        value = getattr(s, key)
        assert value is None or 0.0 <= value <= 1.0, (key, value)
    gold_keys = {(d.key, r.h, r.t, r.r) for d in gold for r in d.relations}
    pred_keys = {(p["doc_id"], p["h_idx"], p["t_idx"], p["r"]) for p in preds}
    correct = len(gold_keys & pred_keys)
    assert (s.num_gold, s.num_predictions, s.num_correct) == (len(gold_keys), len(pred_keys), correct)
    assert s.precision == (correct / len(pred_keys) if pred_keys else 0.0)
    assert s.recall == (correct / len(gold_keys) if gold_keys else 0.0)


@given(gold_sets())
def test_perfect_predictions_score_one(gold):
    rows = _gold_rows(gold)
    assume(rows)
    s = score_predictions(rows, gold)
    assert s.precision == s.recall == s.f1 == 1.0
    if s.num_gold_evidence:
        assert s.evidence_precision == s.evidence_recall == s.evidence_f1 == 1.0
    intra = sum(d.is_intra(r.h, r.t) for d in gold for r in d.relations)
    if intra:
        assert s.intra_f1 == 1.0
    if intra < len(rows):
        assert s.inter_f1 == 1.0


@given(submissions(), st.integers(1, 4))
def test_ign_never_exceeds_the_plain_scores(case, n_train):
    gold, preds = case
    s = score_predictions(preds, gold, gold[:n_train])  # training facts overlapping the gold labels
    assert s.ign_precision <= s.precision + 1e-12
    assert s.ign_f1 <= s.f1 + 1e-12
    if s.num_correct:
        # every correct prediction of a training document is "in train"
        in_train = {(d.key, r.h, r.t, r.r) for d in gold[:n_train] for r in d.relations}
        hits = {(p["doc_id"], p["h_idx"], p["t_idx"], p["r"]) for p in preds} & in_train
        assert s.num_correct_in_train >= len(hits)

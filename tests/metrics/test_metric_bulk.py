"""The column-wise (bulk) tally of ``score_predictions`` counts exactly what the per-prediction loop counts,
and irregular submissions still go through the loop, which names the bad prediction."""

from __future__ import annotations

from collections import UserDict
from dataclasses import replace

import pytest

from envre_hf.metrics import GoldIndex, PredictionError, TrainFacts, score_predictions
from envre_hf.metrics import docre

from _metric_helpers import perturbed


@pytest.fixture(scope="module")
def gold(redocred_test):
    """The test split twice, under distinct doc_ids (titles then name two documents each)."""
    return [replace(d, doc_id=f"{d.title}#{k}") for k in range(2) for d in redocred_test]


@pytest.fixture(scope="module")
def facts(redocred_dev):
    return TrainFacts.from_documents(redocred_dev)


def loop_only(monkeypatch):
    """Make score_predictions take the per-prediction loop."""
    monkeypatch.setattr(docre, "_tally_bulk", lambda *args: None)


def bulk_only(monkeypatch):
    """Fail the test if score_predictions falls back to the loop."""

    def no_loop(*args):
        raise AssertionError("the per-prediction loop ran")

    monkeypatch.setattr(docre, "_tally_loop", no_loop)


@pytest.mark.parametrize("with_train", [True, False])
def test_bulk_and_loop_give_identical_scores_on_the_test_split(gold, facts, monkeypatch, with_train):
    preds = perturbed(gold)
    index = GoldIndex(gold)
    train = facts if with_train else None
    with monkeypatch.context() as m:
        bulk_only(m)
        bulk = score_predictions(preds, index, train)
    with monkeypatch.context() as m:
        loop_only(m)
        loop = score_predictions(preds, GoldIndex(gold), train)
    assert bulk.num_duplicates > 0 and bulk.evidence_f1 is not None and 0 < bulk.num_correct < bulk.num_predictions
    assert not with_train or bulk.num_correct_in_train > 0
    assert bulk.to_dict() == loop.to_dict()  # every float, per relation and per entity count included


def test_bulk_and_loop_agree_on_titles_without_evidence_and_on_tiny_submissions(redocred_test, facts, monkeypatch):
    gold = redocred_test[:200]  # titles are unique here: predictions may name documents by title alone
    preds = [{k: v for k, v in p.items() if k not in ("doc_id", "evidence")} | {"title": p["doc_id"]} for p in perturbed(gold, 1)]
    mixed = [p if i % 2 else {**p, "doc_id": p["title"]} for i, p in enumerate(preds)]
    for submission in (preds, mixed, preds[:1], preds[:2] + preds[:1]):
        with monkeypatch.context() as m:
            bulk_only(m)
            bulk = score_predictions(submission, gold, facts)
        with monkeypatch.context() as m:
            loop_only(m)
            loop = score_predictions(submission, gold, facts)
        assert bulk.evidence_f1 is None and bulk.to_dict() == loop.to_dict()


class Index:
    """An integer-like index that is not an int (numpy integers are such)."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


@pytest.mark.parametrize(
    "change, by_loop",
    [
        (lambda p: p.update(h_idx=Index(p["h_idx"])), True),
        (lambda p: p.update(evidence=tuple(p.get("evidence") or [])), True),
        (lambda p: p.update(title=p.pop("doc_id")), False),  # a title that is a gold key names that document
    ],
)
def test_irregular_but_valid_predictions_give_the_same_scores(gold, facts, change, by_loop, monkeypatch):
    preds = perturbed(gold[:300], 2)
    odd = [dict(p) for p in preds]
    change(odd[7])
    calls = []
    real = docre._tally_loop
    monkeypatch.setattr(docre, "_tally_loop", lambda *a: calls.append(1) or real(*a))
    regular = score_predictions(preds, gold[:300], facts)
    assert calls == []  # the regular submission took the bulk path
    irregular = score_predictions(odd, gold[:300], facts)
    assert calls == ([1] if by_loop else [])
    assert irregular.to_dict() == regular.to_dict()


def test_mappings_that_are_not_dicts_and_unknown_documents_are_counted_by_the_loop(gold, monkeypatch):
    preds = perturbed(gold[:50], 3)
    as_mappings = [UserDict(p) for p in preds]
    assert score_predictions(as_mappings, gold[:50]).to_dict() == score_predictions(preds, gold[:50]).to_dict()
    unknown = preds + [{"doc_id": "nowhere", "h_idx": 0, "t_idx": 1, "r": "P17"}]
    scores = score_predictions(unknown, gold[:50], allow_unknown_documents=True)
    assert scores.num_unknown_document_predictions == 1
    assert scores.num_predictions == score_predictions(preds, gold[:50]).num_predictions + 1


@pytest.mark.parametrize(
    "change, field, message",
    [
        (lambda p: p.update(h_idx=True), "h_idx", "expected an integer"),
        (lambda p: p.update(t_idx="3"), "t_idx", "expected an integer"),
        (lambda p: p.update(t_idx=10_000), "t_idx", "out of range"),
        (lambda p: p.update(h_idx=-1), "h_idx", "out of range"),
        (lambda p: p.pop("r"), "r", "missing"),
        (lambda p: p.update(r=17), "r", "relation id"),
        (lambda p: p.update(doc_id="nowhere"), "doc_id", "no gold document"),
        (lambda p: p.update(evidence="0 1"), "evidence", "sentence ids"),
        (lambda p: p.update(evidence=[0, "1"]), "evidence", "sentence ids"),
        (lambda p: p.update(evidence=[0, 1.0]), "evidence", "sentence ids"),
        (lambda p: p.update(title=p["doc_id"].split("#")[0], doc_id=None), "title", "names 2 gold documents"),
    ],
)
def test_irregular_predictions_raise_the_loops_named_errors(gold, change, field, message):
    preds = perturbed(gold, 4)
    bad = dict(preds[1234])
    change(bad)
    preds[1234] = bad
    with pytest.raises(PredictionError, match=message) as info:
        score_predictions(preds, gold)
    assert info.value.index == 1234 and info.value.field == field
    assert info.value.doc in (bad.get("doc_id"), bad.get("title"))


@pytest.mark.parametrize("field", ["doc_id", "title"])
def test_unhashable_document_references_are_named_errors(gold, field):
    preds = perturbed(gold, 6)
    preds[321] = {k: v for k, v in preds[321].items() if k != "doc_id"} | {field: ["not", "a", "string"]}
    with pytest.raises(PredictionError, match="expected a string, got list") as info:
        score_predictions(preds, gold, allow_unknown_documents=True)
    assert info.value.index == 321 and info.value.field == field


def test_a_prediction_that_is_not_an_object_is_named_in_a_large_submission(gold):
    preds = perturbed(gold, 5)
    preds[999] = ["doc", 0, 1, "P17"]
    with pytest.raises(PredictionError, match="expected an object") as info:
        score_predictions(preds, gold)
    assert info.value.index == 999


def test_labels_in_train_are_computed_once_per_facts_object(gold, facts, redocred_dev):
    index = GoldIndex(gold[:100])
    found = index.labels_in_train(facts)
    assert index.labels_in_train(facts) is found
    names = index.names
    assert found == {k for k in index.labels if facts.any_in_train(names(k[0])[k[1]], names(k[0])[k[2]], k[3])}
    assert found and found < index.labels.keys()
    other = TrainFacts.from_documents(redocred_dev[:10])
    assert index.labels_in_train(other) == {
        k for k in index.labels if other.any_in_train(names(k[0])[k[1]], names(k[0])[k[2]], k[3])
    }


def _outcome(preds, index, facts, allow, monkeypatch, *, bulk, taken=None):
    """Scores, or the error's (type, index, field, message), of one path (``taken``: counts bulk tallies)."""
    with monkeypatch.context() as m:
        if not bulk:
            loop_only(m)
        elif taken is not None:
            real = docre._tally_bulk

            def counted(*args):
                tally = real(*args)
                if tally is not None:
                    taken.append(1)
                return tally

            m.setattr(docre, "_tally_bulk", counted)
        try:
            return score_predictions(preds, index, facts, allow_unknown_documents=allow).to_dict()
        except PredictionError as err:
            return ("PredictionError", err.index, err.field, str(err))


def test_bulk_and_loop_agree_on_random_submissions_good_and_bad(redocred_dev, redocred_test, monkeypatch):
    """Random small submissions (doc_id / title / both, repeats, evidence or not, one field broken now and
    then) against gold whose titles are partly ambiguous: same scores, or the same named error."""
    import random

    docs = redocred_dev[:20]
    gold = [replace(d, doc_id=f"{d.title}#1") for d in docs[:8]] + docs
    index, facts = GoldIndex(gold), TrainFacts.from_documents(redocred_test[:100])
    rng = random.Random(3)
    rels = ["P17", "P131", "P27", "P150", "P569", "Pxx"]
    broken = [None, True, -1, 1000, "x", 1.0, [0], (1,), 5, "P17", []]
    outcomes, taken = set(), []
    for _ in range(400):
        preds = []
        for _ in range(rng.randrange(1, 30)):
            doc = rng.choice(gold)
            pred = {"h_idx": rng.randrange(doc.num_entities), "t_idx": rng.randrange(doc.num_entities), "r": rng.choice(rels)}
            if rng.random() < 0.5:
                rel = rng.choice(doc.relations)
                pred.update(h_idx=rel.h, t_idx=rel.t, r=rel.r)
            u = rng.random()
            pred.update({"doc_id": doc.key} if u < 0.6 else {"title": doc.title} if u < 0.8 else {"doc_id": doc.key, "title": doc.title})
            if rng.random() < 0.5:
                pred["evidence"] = [rng.randrange(len(doc.sents)) for _ in range(rng.randrange(4))]
            preds.append(pred)
        preds += [dict(rng.choice(preds)) for _ in range(rng.randrange(3))]
        if rng.random() < 0.3:
            rng.choice(preds)[rng.choice(["h_idx", "t_idx", "r", "doc_id", "title", "evidence"])] = rng.choice(broken)
        allow, train = rng.random() < 0.3, facts if rng.random() < 0.5 else None
        bulk = _outcome(preds, index, train, allow, monkeypatch, bulk=True, taken=taken)
        assert bulk == _outcome(preds, index, train, allow, monkeypatch, bulk=False)
        outcomes.add(type(bulk).__name__)
    assert outcomes == {"dict", "tuple"}  # both scores and errors were compared
    assert 50 < len(taken) < 350  # regular submissions were counted column-wise, irregular ones by the loop

"""Large submissions on the real test split: valid but irregular predictions score as regular ones, and every kind
of bad prediction is refused with an error naming its index, document and field."""

from __future__ import annotations

from collections import UserDict
from dataclasses import replace

import pytest

from envre_hf.metrics import PredictionError, gold_index, score_predictions, train_facts

from _metric_helpers import perturbed


@pytest.fixture(scope="module")
def gold(redocred_test):
    """The test split twice, under distinct doc_ids (titles then name two documents each)."""
    return [replace(d, doc_id=f"{d.title}#{k}") for k in range(2) for d in redocred_test]


@pytest.fixture(scope="module")
def facts(redocred_dev):
    return train_facts(redocred_dev)


class Index:
    """An integer-like index that is not an int (numpy integers are such)."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.update(h_idx=Index(p["h_idx"])),
        lambda p: p.update(evidence=tuple(p.get("evidence") or [])),
        lambda p: p.update(title=p.pop("doc_id")),  # a title that is a gold key names that document
    ],
)
def test_irregular_but_valid_predictions_give_the_same_scores(gold, facts, change):
    preds = perturbed(gold[:300], 2)
    odd = [dict(p) for p in preds]
    change(odd[7])
    assert score_predictions(odd, gold[:300], facts).to_dict() == score_predictions(preds, gold[:300], facts).to_dict()


def test_mappings_that_are_not_dicts_and_unknown_documents(gold):
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
        (lambda p: p.update(evidence=[[0]]), "evidence", "sentence ids"),
        (lambda p: p.update(title=p["doc_id"].split("#")[0], doc_id=None), "title", "names 2 gold documents"),
    ],
)
def test_bad_predictions_in_a_large_submission_are_named(gold, change, field, message):
    preds = perturbed(gold, 4)
    bad = dict(preds[1234])
    change(bad)
    preds[1234] = bad
    with pytest.raises(PredictionError, match=message) as info:
        score_predictions(preds, gold)
    assert info.value.index == 1234 and info.value.field == field
    assert info.value.doc in (bad.get("doc_id"), bad.get("title"))


@pytest.mark.parametrize("field", ["doc_id", "title"])
@pytest.mark.parametrize("value", [["not", "a", "string"], 5])
def test_document_references_that_are_not_strings_are_named(gold, field, value):
    preds = perturbed(gold, 6)
    preds[321] = {k: v for k, v in preds[321].items() if k != "doc_id"} | {field: value}
    with pytest.raises(PredictionError, match=f"expected a string, got {type(value).__name__}") as info:
        score_predictions(preds, gold, allow_unknown_documents=True)
    assert info.value.index == 321 and info.value.field == field


def test_a_prediction_that_is_not_an_object_is_named_in_a_large_submission(gold):
    preds = perturbed(gold, 5)
    preds[999] = ["doc", 0, 1, "P17"]
    with pytest.raises(PredictionError, match="expected an object") as info:
        score_predictions(preds, gold)
    assert info.value.index == 999


def test_a_gold_index_and_training_facts_serve_several_submissions(gold, facts):
    index = gold_index(gold[:100])
    for seed in (7, 8):
        preds = perturbed(gold[:100], seed)
        assert score_predictions(preds, index, facts) == score_predictions(preds, gold[:100], facts)

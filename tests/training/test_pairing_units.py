"""Pairing on tiny hand-made documents: label alignment, twin choice and caching, and the paired batch.

The real-data tests (test_training_pairing.py) cover renaming-made twins; these pin the smaller
promises those never reach: unlabelled sides, single twins, unseeded twins, the twin feature cache
across epochs, plain batches through the pair collator, and each side of a paired batch being what
the base collator makes of that side alone.
"""

from __future__ import annotations

import functools

import pytest
import torch

from envre_hf.documents import Document, Entity, Mention, Relation
from envre_hf.features import DocRECollator, featurize_document
from envre_hf.training import (
    EVRTPairCollator,
    EVRTPairDataset,
    OnTheFlyTwins,
    PrebuiltTwins,
    TwinSource,
)
from envre_hf.training.pairing import assert_aligned, starved_twin_types

LONG = (["Bartholomew", "Wolfeschlegelstein"], ["Maximilian", "Oberhauser"], ["Constantinople"])
SHORT = (["Al"], ["Bo"], ["Rome"])


def _doc(title: str, names=LONG, doc_id: str | None = None, seed: int | None = None, orig_title=None) -> Document:
    """``<A> met <B> in <C> .``: two PER entities and a LOC, one relation (A, C)."""
    words: list[str] = []
    entities = []
    for name, glue, type_ in zip(names, (["met"], ["in"], ["."]), ("PER", "PER", "LOC")):
        start = len(words)
        words += name
        entities.append(Entity([Mention(" ".join(name), 0, (start, start + len(name)), type_)]))
        words += glue
    return Document(
        title=title,
        sents=[words],
        entities=entities,
        relations=[Relation(0, 2, "P17")],
        doc_id=doc_id,
        seed=seed,
        orig_title=orig_title,
    )


def _twin(doc: Document, seed: int | None, names=SHORT) -> Document:
    doc_id = None if seed is None else f"{doc.key}#{seed}"
    return _doc(doc.title, names, doc_id=doc_id, seed=seed, orig_title=doc.key)


class _Counting:
    """featurize_document that counts its calls (the dataset's caches are what is tested)."""

    def __init__(self, tokenizer):
        self.calls: list[str] = []
        self.featurize = functools.partial(featurize_document, tokenizer=tokenizer)

    def __call__(self, doc: Document, **kwargs):
        self.calls.append(doc.key)
        return self.featurize(doc, **kwargs)


class _FreshEachEpoch(TwinSource):
    """A twin source like on-the-fly renaming (a new twin per epoch), without a knowledge base."""

    def twin(self, doc: Document, epoch: int) -> Document:
        return _twin(doc, epoch)


def _features(labels) -> dict:
    return {"doc_key": "d", "entity_pos": [[(1, 2)], [(4, 5)]], "hts": [[0, 1], [1, 0]], "labels": labels}


# --------------------------------------------------------------------------- assert_aligned


def test_twin_pair_labels_must_equal_the_originals():
    original = _features([[0.0, 1.0], [1.0, 0.0]])
    assert_aligned(original, _features(torch.tensor([[0.0, 1.0], [1.0, 0.0]])))  # a tensor and a list of rows agree
    with pytest.raises(ValueError, match="pair labels differ"):
        assert_aligned(original, _features([[0.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="pair labels differ"):
        assert_aligned(_features(torch.eye(2)), _features(torch.eye(2).flip(0)))


def test_labels_are_compared_only_when_both_sides_carry_them():
    labelled = _features([[0.0, 1.0], [1.0, 0.0]])
    unlabelled = {k: v for k, v in labelled.items() if k != "labels"}
    assert_aligned(labelled, unlabelled)
    assert_aligned(unlabelled, labelled)
    assert_aligned(labelled, _features(None))
    assert_aligned(_features(None), labelled)


# --------------------------------------------------------------------------- twin sources


def test_a_single_prebuilt_twin_serves_every_epoch():
    doc = _doc("Doc A")
    twin = _twin(doc, 4)
    twins = PrebuiltTwins([doc], [twin])
    assert all(twins.twin(doc, epoch) is twin for epoch in range(5))


def test_prebuilt_twins_are_ordered_by_seed_with_an_unseeded_twin_first():
    doc = _doc("Doc A")
    renamed = [_twin(doc, 1), _twin(doc, -1), _twin(doc, None), _twin(doc, 0)]
    twins = PrebuiltTwins([doc], renamed)
    assert [t.seed for t in twins.all_twins()] == [None, -1, 0, 1]  # a negative seed still sorts as a seed
    # the file's order does not matter: every epoch draws the same twin
    reordered = PrebuiltTwins([doc], renamed[::-1])
    assert [twins.twin(doc, e).seed for e in range(10)] == [reordered.twin(doc, e).seed for e in range(10)]


def test_two_prebuilt_twins_are_both_drawn_across_epochs():
    doc = _doc("Doc A")
    twins = PrebuiltTwins([doc], [_twin(doc, 0), _twin(doc, 1)])
    assert {twins.twin(doc, epoch).seed for epoch in range(20)} == {0, 1}


def test_starved_twin_types_are_the_checked_types_below_the_minimum():
    rates = {"PER": {"rate": 0.5}, "LOC": {"rate": 0.95}, "NUM": {"rate": 0.2}, "MISC": {"rate": 0.1}}
    assert starved_twin_types(rates) == {"PER": 0.5, "NUM": 0.2}  # MISC is not checked
    assert starved_twin_types(rates, minimum=0.3) == {"NUM": 0.2}


def test_a_low_rate_of_a_few_entities_is_not_starved_a_low_rate_of_many_is():
    """docs/training.md's pre-built recipe: 20 of 23 ORG entities of 8 documents (87%) is no evidence."""
    def rate(done, total):
        return {"entities": total, "substituted": done, "rate": done / total}

    assert starved_twin_types({"ORG": rate(20, 23), "PER": rate(23, 23)}) == {}
    assert starved_twin_types({"ORG": rate(2000, 2300)}) == {"ORG": 2000 / 2300}
    assert starved_twin_types({"PER": rate(6, 23)}) == {"PER": 6 / 23}
    assert starved_twin_types({"LOC": rate(899, 1000)}) == {}  # 89.9% of 1,000: the bound reaches 91.4%
    assert starved_twin_types({"LOC": rate(8900, 10000)}) == {"LOC": 0.89}


def test_only_prebuilt_twins_are_cacheable():
    doc = _doc("Doc A")
    assert PrebuiltTwins([doc], [_twin(doc, 0)]).cacheable() is True
    assert OnTheFlyTwins(pipeline=None).cacheable() is False
    assert _FreshEachEpoch().cacheable() is False  # the default of a twin source


# --------------------------------------------------------------------------- the dataset's twin cache


def test_prebuilt_twin_features_are_computed_once_across_epochs(tokenizer):
    docs = [_doc("Doc A"), _doc("Doc B")]
    featurize = _Counting(tokenizer)
    dataset = EVRTPairDataset(docs, featurize, PrebuiltTwins(docs, [_twin(d, 0) for d in docs]))
    first = dataset[1]
    for epoch in (1, 2, 3):
        dataset.set_epoch(epoch)
        assert dataset[1]["twin"] is first["twin"]
    assert featurize.calls == ["Doc B", "Doc B#0"]


def test_fresh_twins_are_featurized_once_per_epoch(tokenizer):
    docs = [_doc("Doc A"), _doc("Doc B")]
    featurize = _Counting(tokenizer)
    dataset = EVRTPairDataset(docs, featurize, _FreshEachEpoch())
    first = dataset[0]
    dataset.set_epoch(0.0)  # the trainer calls set_epoch at every epoch start, also for the epoch already set
    assert dataset[0]["twin"] is first["twin"]
    dataset.set_epoch(1)
    assert dataset[0]["twin"]["doc_key"] == "Doc A#1"
    assert dataset[0]["original"] == first["original"]  # aligned anew with the new twin (no cap: the same)
    assert featurize.calls == ["Doc A", "Doc A#0", "Doc A", "Doc A#1"]


# --------------------------------------------------------------------------- collator


def _pairs(tokenizer) -> list[dict]:
    featurize = functools.partial(featurize_document, tokenizer=tokenizer)
    docs = [_doc("Doc A"), _doc("Doc B", names=(["Cy"], ["Di"], ["Oslo"]))]
    return [{"original": featurize(d), "twin": featurize(_twin(d, 0))} for d in docs]


def _assert_same_batch(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], torch.Tensor):
            assert a[key].shape == b[key].shape and torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def test_plain_examples_pass_through_the_pair_collator(tokenizer):
    base = DocRECollator(tokenizer)
    plain = [pair["original"] for pair in _pairs(tokenizer)]
    _assert_same_batch(EVRTPairCollator(base)(plain), base(plain))


def test_each_side_of_a_paired_batch_is_the_base_batch_of_that_side(tokenizer):
    base = DocRECollator(tokenizer)
    pairs = _pairs(tokenizer)
    originals, twins = [p["original"] for p in pairs], [p["twin"] for p in pairs]
    assert max(len(t["input_ids"]) for t in twins) < max(len(o["input_ids"]) for o in originals)
    batch = EVRTPairCollator(base)(pairs)
    _assert_same_batch({k: v for k, v in batch.items() if k != "twin"}, base(originals))
    _assert_same_batch(batch["twin"], base(twins))  # padded to the twins' own length


def test_a_twin_source_that_breaks_entity_alignment_is_refused(tokenizer):
    """A twin source (here a buggy one that drops an entity) never reaches training: the item is refused."""

    class DropsAnEntity(TwinSource):
        def twin(self, doc, epoch):
            twin = _twin(doc, epoch)
            twin.entities = twin.entities[:2]
            twin.relations = []
            return twin

    featurize = functools.partial(featurize_document, tokenizer=tokenizer)
    dataset = EVRTPairDataset([_doc("Doc A")], featurize, DropsAnEntity())
    with pytest.raises(ValueError, match="cannot align with .Doc A#0.: its entities do not have the same mentions"):
        dataset[0]

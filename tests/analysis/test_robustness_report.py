"""The robustness report (original vs renamed sets, relative drop) on real Re-DocRED test documents, and a length cap
that cuts an original and its renamed copies alike."""

from __future__ import annotations

import pytest

from envre_hf.kb.corpus import CorpusKB
from envre_hf.renaming import RenamingPipeline
from envre_hf.analysis.robustness import REPORT_COLUMNS, robustness_report


def _gold_predictions(docs, skip=()):
    return [
        {"doc_id": d.key, "title": d.title, "h_idx": r.h, "t_idx": r.t, "r": r.r}
        for d in docs
        if d.key not in skip
        for r in d.relations
    ]


@pytest.fixture(scope="module")
def sets(redocred_test):
    docs = redocred_test[:10]
    pipeline = RenamingPipeline(CorpusKB(redocred_test))
    renamed = [pipeline.rename(d, seed=s) for s in (1, 2) for d in docs]
    return docs, renamed


def test_report_scores_each_renamed_set_and_the_relative_drop(sets, redocred_dev):
    docs, renamed = sets
    dropped = renamed[10]  # the first document of seed 2 loses all its predictions
    report = robustness_report(
        _gold_predictions(docs), docs, _gold_predictions(renamed, skip={dropped.key}), renamed, train=redocred_dev
    )
    assert report.original["f1"] == pytest.approx(1.0) and report.original["precision"] == pytest.approx(1.0)
    assert set(report.renamed_sets) == {"seed 1", "seed 2"}
    assert report.renamed_sets["seed 1"]["f1"] == pytest.approx(1.0)
    n_gold = sum(len(d.relations) for d in renamed[10:])
    recall_2 = (n_gold - len(dropped.relations)) / n_gold
    assert report.renamed_sets["seed 2"]["recall"] == pytest.approx(recall_2)
    assert report.renamed["recall"] == pytest.approx((1 + recall_2) / 2)
    assert report.relative_drop["recall"] == pytest.approx(1 - (1 + recall_2) / 2)
    assert report.relative_drop["precision"] == pytest.approx(0.0)
    assert report.original["ign_f1"] is not None and report.documents == {"original": 10, "renamed": 20}

    table = report.to_markdown()
    lines = table.splitlines()
    assert lines[0] == "| Test set | " + " | ".join(name for name, _ in REPORT_COLUMNS) + " |"
    assert lines[2].startswith("| Original | 100.00 | 100.00 | 100.00 |")
    assert lines[3].startswith("| Renamed (2 sets) |")
    assert f"{100 * (1 - (1 + recall_2) / 2):.2f}" in lines[4]


def test_several_renamed_sets_need_doc_ids(sets):
    docs, renamed = sets
    preds = _gold_predictions(renamed)
    for p in preds:
        del p["doc_id"]
    with pytest.raises(ValueError, match="doc_id"):
        robustness_report(_gold_predictions(docs), docs, preds, renamed)


# --------------------------------------------------------------------------- a length cap, originals and copies alike

CAP = 128  # MiniLM pieces: cuts most of these documents, and a renamed copy (longer names) elsewhere than its original


def _kept(capped, full):
    """Per entity, per mention: whether ``capped`` (features under a cap) kept it; ``full``: the uncapped features
    (the cap only cuts the end, so a kept mention keeps its position)."""
    return [[pos in kept for pos in every] for kept, every in zip(capped["entity_pos"], full["entity_pos"])]


def _reachable(kept, doc):
    """Gold facts whose head and tail both keep a mention."""
    return sum(any(kept[r.h]) and any(kept[r.t]) for r in doc.relations)


def test_a_cap_cuts_an_original_and_its_copies_alike(sets, tokenizer):
    from envre_hf.analysis.robustness import aligned_features
    from envre_hf.features import featurize_document

    docs, renamed = sets
    full = {d.key: featurize_document(d, tokenizer) for d in [*docs, *renamed]}
    alone = {d.key: _kept(featurize_document(d, tokenizer, max_seq_length=CAP), full[d.key]) for d in [*docs, *renamed]}
    original_of = {copy.key: docs[i % len(docs)] for i, copy in enumerate(renamed)}
    cut_differently = [c.key for c in renamed if alone[c.key] != alone[original_of[c.key].key]]
    assert cut_differently  # cut one by one, some copies keep other mentions than their originals
    assert sum(map(_reachable, (alone[d.key] for d in docs), docs)) != sum(
        _reachable(alone[c.key], c) for c in renamed[: len(docs)]
    )  # ... and other gold facts

    original_features, renamed_features = aligned_features(docs, renamed, tokenizer, CAP)
    kept = {d.key: _kept(f, full[d.key]) for d, f in zip([*docs, *renamed], [*original_features, *renamed_features])}
    for copy, features in zip(renamed, renamed_features):
        original = original_of[copy.key]
        assert features["doc_key"] == copy.key and len(features["input_ids"]) <= CAP
        assert kept[copy.key] == kept[original.key]  # the same mentions, so the same pairs and reachable facts
        everywhere = alone[original.key]  # nothing dropped that fits in the original and in each of its copies
        for other in (c for c in renamed if original_of[c.key] is original):
            everywhere = [[a and b for a, b in zip(x, y)] for x, y in zip(everywhere, alone[other.key])]
        assert kept[original.key] == everywhere


def test_a_copy_without_its_original_cannot_be_cut_alike(sets, tokenizer):
    from envre_hf.analysis.robustness import aligned_features
    from envre_hf.documents import DocumentError

    docs, renamed = sets
    with pytest.raises(DocumentError, match="no original document"):
        aligned_features(docs[1:], renamed, tokenizer, CAP)
    assert len(aligned_features(docs[1:], renamed, tokenizer)[1]) == len(renamed)  # without a cap: nothing to align


def test_the_model_predicts_the_aligned_features_and_without_a_cap_as_predict(sets, tokenizer, monkeypatch):
    import torch

    import envre_hf.models.prediction as prediction
    from _training_helpers import tiny_model
    from envre_hf.analysis.robustness import model_robustness_report, predict_sets

    docs, renamed = sets
    docs, renamed = docs[:3], [c for c in renamed if any(c.orig_title == d.title for d in docs[:3])]
    model = tiny_model(tokenizer)
    with torch.no_grad():
        model.bilinear.bias[0] = -2.0  # the threshold class pushed down: the model predicts relations
    options = {"batch_size": 2, "progress": False}
    rows = predict_sets(model, tokenizer, docs, renamed, **options)
    assert rows[0] and rows == (prediction.predict(model, docs, tokenizer, **options),
                                prediction.predict(model, renamed, tokenizer, **options))  # fmt: skip

    seen = []
    real = prediction.iter_logits

    def spy(model, features, *args, **kwargs):
        seen.append(features)
        return real(model, features, *args, **kwargs)

    monkeypatch.setattr(prediction, "iter_logits", spy)
    report = model_robustness_report(model, tokenizer, docs, renamed, max_seq_length=CAP, **options)
    mentions = [[len(span) for span in f["entity_pos"]] for f in [*seen[0], *seen[1]]]
    originals = {d.title: m for d, m in zip(docs, mentions)}
    assert all(m == originals[c.orig_title] for c, m in zip(renamed, mentions[len(docs) :]))
    assert sum(map(sum, mentions)) < sum(len(e.mentions) for d in [*docs, *renamed] for e in d.entities)  # the cap cut
    assert report.documents == {"original": 3, "renamed": 6} and set(report.renamed_sets) == {"seed 1", "seed 2"}

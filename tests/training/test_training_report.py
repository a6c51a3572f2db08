"""The robustness report (original vs renamed sets, relative drop) on real Re-DocRED test documents."""

from __future__ import annotations

import pytest

from envre_hf.kb.corpus import CorpusKB
from envre_hf.renaming import RenamingPipeline
from envre_hf.training.robustness import REPORT_COLUMNS, robustness_report


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

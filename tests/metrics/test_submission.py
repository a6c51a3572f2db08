"""Leaderboard submission files (``envre evaluate --submission``): the released scorer scores each file exactly as
envre-hf scores the same predictions, per seed for renamed copies."""

from __future__ import annotations

import copy
import json
import zipfile

import pytest
from _metric_helpers import perturbed
from _released_scorer import released_scores

from envre_hf.documents import docred_schema, to_docred
from envre_hf.metrics import score_predictions, train_facts
from envre_hf.metrics.scoring import PredictionError
from envre_hf.metrics.submission import write_submission

SAME = ("precision", "recall", "f1", "ign_precision", "ign_f1", "evidence_precision", "intra_f1", "inter_f1")
SEEDS = (0, 1)


def _copies(originals):
    """Renamed copies as an Env-* build holds them: ``<title>#<seed>``, the original title in ``orig_title``
    (the title itself may be renamed), entity order kept."""
    out = []
    for seed in SEEDS:
        for doc in originals:
            twin = copy.copy(doc)
            twin.doc_id, twin.seed, twin.orig_title, twin.title = f"{doc.title}#{seed}", seed, doc.title, f"X {doc.title}"
            out.append(twin)
    return out


def test_each_seed_file_scores_on_the_leaderboard_as_envre_scores_it(redocred_test, redocred_dev, tmp_path):
    originals, train = redocred_test[:80], redocred_dev[:200]
    copies = _copies(originals)
    predictions = perturbed(copies, seed=3)
    files = write_submission(predictions, copies, tmp_path / "sub", gold_name="env_test.json")
    assert [f.seed for f in files] == list(SEEDS)
    # the leaderboard's gold: the original documents under their titles
    (tmp_path / "gold.json").write_text(json.dumps([to_docred(d) for d in originals]))
    (tmp_path / "train.json").write_text(json.dumps([to_docred(d) for d in train]))
    relations = list(docred_schema().rel2index)
    facts = train_facts(train)
    for f in files:
        assert f.result == tmp_path / "sub" / f"seed{f.seed}" / "result.json"
        rows = json.loads(f.result.read_text())
        assert rows and all(list(row) == ["title", "h_idx", "t_idx", "r", "evidence"] for row in rows)
        with zipfile.ZipFile(f.zip) as archive:
            assert archive.namelist() == ["result.json"] and archive.read("result.json") == f.result.read_bytes()
            info = archive.getinfo("result.json")
        assert info.compress_type == zipfile.ZIP_DEFLATED and f.zip.stat().st_size < f.result.stat().st_size / 5
        theirs = released_scores(rows, tmp_path / "gold.json", tmp_path / "train.json", tmp_path, relations)
        mine = [p for p in predictions if p["doc_id"].endswith(f"#{f.seed}")]
        ours = score_predictions(mine, [d for d in copies if d.seed == f.seed], facts)
        assert 0 < ours.f1 < 1 and {k: getattr(ours, k) for k in SAME} == {k: theirs[k] for k in SAME}
    readme = (tmp_path / "sub" / "README.md").read_text()
    assert "`seed0/result.zip`" in readme and "`seed1/result.zip`" in readme and "average" in readme


def test_an_original_test_file_gives_one_file_and_unknown_documents_are_refused(redocred_test, tmp_path):
    docs = redocred_test[:5]
    preds = [{"title": d.title, "h_idx": r.h, "t_idx": r.t, "r": r.r, "evidence": r.evidence} for d in docs
             for r in d.relations]  # fmt: skip
    [only] = write_submission(preds, docs, tmp_path / "sub", gold_name="test.json")
    assert only.seed is None and only.result == tmp_path / "sub" / "result.json" and only.rows == len(preds)
    assert json.loads(only.result.read_text()) == preds
    first = only.zip.read_bytes()
    write_submission(preds, docs, tmp_path / "sub", gold_name="test.json")
    assert only.zip.read_bytes() == first  # the same predictions, the same bytes
    with pytest.raises(PredictionError, match="prediction 1 .*no such document"):
        write_submission([preds[0], {**preds[0], "title": "no such document"}], docs, tmp_path / "x", gold_name="t")

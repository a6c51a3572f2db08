"""The released scoring job restated for ``bench_metric.py`` (benchmarks/_released_scorer.py) gives
envre's numbers on the real test split, so the benchmark times two jobs that compute the same scores."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from envre_hf.documents import docred_schema, to_docred
from envre_hf.metrics import score_predictions

from _metric_helpers import perturbed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _released_scorer import closest, released_scores  # noqa: E402

SAME = ("precision", "recall", "f1", "ign_precision", "ign_f1", "evidence_precision", "intra_precision",
        "intra_recall", "intra_f1", "inter_precision", "inter_recall", "inter_f1")  # fmt: skip


def test_closest_is_the_smallest_gap_between_two_sentence_lists():
    rng = random.Random(0)
    for _ in range(300):
        a = [rng.randrange(25) for _ in range(rng.randint(1, 5))]
        b = [rng.randrange(25) for _ in range(rng.randint(1, 5))]
        assert closest(list(a), list(b)) == min(abs(x - y) for x in a for y in b)


@pytest.mark.parametrize("seed", [0, 1])
def test_released_job_scores_equal_envre_scores_on_the_test_split(redocred_test, redocred_dev, tmp_path, seed):
    gold_path, train_path = tmp_path / "gold.json", tmp_path / "train.json"
    gold_path.write_text(json.dumps([to_docred(d) for d in redocred_test]))  # titles are unique in the split
    train_path.write_text(json.dumps([to_docred(d) for d in redocred_dev]))
    preds = perturbed(redocred_test, seed, by_title=True)
    for p in preds:  # the released job reads evidence as a list when the key is there
        if "evidence" in p and p["evidence"] is None:
            del p["evidence"]
    ours = score_predictions(preds, redocred_test, redocred_dev)
    relations = list(docred_schema().rel2index)
    theirs = released_scores([dict(p) for p in preds], gold_path, train_path, tmp_path, relations)
    assert ours.num_correct > 0 and ours.num_correct_in_train > 0 and ours.num_correct_evidence > 0
    assert {k: theirs[k] for k in SAME} == {k: getattr(ours, k) for k in SAME}
    # the released function starts its evidence total at 1
    assert theirs["evidence_recall"] == ours.num_correct_evidence / (ours.num_gold_evidence + 1)
    # the training facts were cached as the released code caches them, and read back give the same scores
    assert (tmp_path / "train.fact").is_file()
    assert released_scores([dict(p) for p in preds], gold_path, train_path, tmp_path, relations) == theirs

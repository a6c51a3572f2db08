"""docre_f1: hand-computed cases, errors, the ``envre evaluate`` CLI and the ``evaluate`` module."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from envre_hf.cli.main import main
from envre_hf.documents import (
    Document,
    DocumentError,
    Entity,
    Mention,
    Relation,
    document_to_row,
    read_documents,
    to_docred,
)
from envre_hf.metrics import PredictionError, TrainFacts, gold_index, read_predictions, score_predictions, train_facts

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "envre_hf" / "samples"
SAMPLE_DOCS = SAMPLES / "sample_docs.json"
SAMPLE_TRAIN = SAMPLES / "sample_train.json"
SAMPLE_PREDICTIONS = SAMPLES / "sample_predictions.json"


def _mention(name, sent):
    return Mention(name=name, sent_id=sent, pos=(0, 1), type="LOC")


def alpha(doc_id=None) -> Document:
    """4 entities over 3 sentences: e0 in sentences 0 and 2, e1 in 0, e2 in 1, e3 in 2."""
    return Document(
        title="Alpha",
        doc_id=doc_id,
        sents=[["a", "b"], ["c"], ["d", "a"]],
        entities=[
            Entity([_mention("A", 0), _mention("Ay", 2)]),
            Entity([_mention("B", 0)]),
            Entity([_mention("C", 1)]),
            Entity([_mention("D", 2)]),
        ],
        relations=[
            Relation(0, 1, "P17", [0]),  # intra (sentence 0)
            Relation(0, 2, "P131", [0, 1]),  # inter
            Relation(2, 3, "P150", [1, 2]),  # inter
            Relation(0, 3, "P27", [2]),  # intra (sentence 2)
        ],
    )


def beta() -> Document:
    """2 entities, one label."""
    return Document(
        title="Beta",
        sents=[["x", "y"]],
        entities=[Entity([_mention("X", 0)]), Entity([_mention("Y", 0)])],
        relations=[Relation(1, 0, "P17", [0])],
    )


def train_doc() -> Document:
    """Holds the fact (Ay, B, P17) and (C, D, P131): the first matches Alpha's (0, 1, P17) by mention names."""
    return Document(
        title="Train",
        sents=[["p", "q"]],
        entities=[Entity([_mention("Ay", 0)]), Entity([_mention("B", 0)]), Entity([_mention("C", 0)]), Entity([_mention("D", 0)])],
        relations=[Relation(0, 1, "P17", []), Relation(2, 3, "P131", [])],
    )


def pred(title, h, t, r, evidence=None):
    p = {"title": title, "h_idx": h, "t_idx": t, "r": r}
    if evidence is not None:
        p["evidence"] = evidence
    return p


GOLD_PREDS = [pred("Alpha", 0, 1, "P17"), pred("Alpha", 0, 2, "P131"), pred("Alpha", 2, 3, "P150"), pred("Alpha", 0, 3, "P27"), pred("Beta", 1, 0, "P17")]


# --------------------------------------------------------------------------- hand-computed cases


def test_perfect_predictions():
    scores = score_predictions(GOLD_PREDS, [alpha(), beta()])
    assert (scores.precision, scores.recall, scores.f1) == (1.0, 1.0, 1.0)
    assert scores.intra_f1 == scores.inter_f1 == 1.0
    assert scores.headline()["f1"] == 100.0
    assert scores.ign_f1 is None and scores.evidence_f1 is None  # no train documents, no evidence predicted
    assert scores.num_gold == scores.num_predictions == scores.num_correct == 5


def test_empty_predictions_score_zero():
    scores = score_predictions([], [alpha(), beta()], [train_doc()])
    assert scores.precision == scores.recall == scores.f1 == 0
    assert scores.ign_precision == scores.ign_f1 == 0
    assert scores.intra_f1 == scores.inter_f1 == 0
    assert scores.evidence_f1 is None
    assert scores.num_gold == 5


def test_precision_recall_f1_by_hand():
    preds = [pred("Alpha", 0, 1, "P17"), pred("Alpha", 0, 2, "P17"), pred("Beta", 1, 0, "P17")]  # 2 of 3 right
    scores = score_predictions(preds, [alpha(), beta()])
    assert scores.precision == 2 / 3 and scores.recall == 2 / 5
    assert scores.f1 == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))
    assert scores.per_relation["P17"] == {"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "gold": 2, "predicted": 3, "correct": 2}
    assert scores.per_relation["P131"]["recall"] == 0 and scores.per_relation["P131"]["gold"] == 1
    assert scores.by_entity_count[4] == {
        "precision": 0.5, "recall": 0.25, "f1": pytest.approx(1 / 3), "documents": 1, "gold": 4, "predicted": 2, "correct": 1
    }
    assert scores.by_entity_count[2]["f1"] == 1.0 and scores.by_entity_count[2]["documents"] == 1


def test_duplicates_count_once_and_first_evidence_wins():
    preds = [pred("Alpha", 0, 2, "P131", [0]), pred("Alpha", 0, 2, "P131", [0, 1]), pred("Alpha", 0, 2, "P131", [])]
    scores = score_predictions(preds, [alpha()])
    assert scores.num_predictions == 1 and scores.num_duplicates == 2
    assert scores.precision == 1.0 and scores.recall == 0.25
    assert scores.num_predicted_evidence == 1 and scores.num_correct_evidence == 1  # [0] from the first copy


def test_ign_ignores_correct_facts_seen_in_training():
    preds = [pred("Alpha", 0, 1, "P17"), pred("Alpha", 2, 3, "P150"), pred("Alpha", 1, 2, "P17")]
    scores = score_predictions(preds, [alpha()], [train_doc()])
    # (Ay, B, P17) is a training fact: Ay is a mention of entity 0 -> 1 correct prediction in train.
    # (C, D, P131) is in train too, but P150 is predicted, so it does not count.
    assert scores.num_correct == 2 and scores.num_correct_in_train == 1
    assert scores.ign_precision == 1.0 * (2 - 1) / (3 - 1 + 1e-5)
    assert scores.ign_f1 == 2.0 * scores.ign_precision * scores.recall / (scores.ign_precision + scores.recall)
    assert scores.ign_f1 < scores.f1
    # the same with prebuilt facts, and the facts hold every mention-name pair
    facts = train_facts([train_doc()])
    assert ("Ay", "B", "P17") in facts and len(facts) == 2
    assert score_predictions(preds, gold_index([alpha()]), facts) == scores
    # facts given as a plain set (e.g. a cached official .fact file) are indexed the same way
    from_set = TrainFacts(frozenset({("Ay", "B", "P17")}))
    assert from_set.any_in_train(["A", "Ay"], ["B"], "P17") and not from_set.any_in_train(["A"], ["B"], "P17")
    assert score_predictions(preds, [alpha()], from_set).ign_f1 == scores.ign_f1


def test_train_facts_keep_a_prebuilt_relation_index():
    """from_documents hands over the index it built, so the (large) fact set is not grouped twice."""
    facts = frozenset({("Ay", "B", "P17"), ("C", "D", "P131")})
    by_relation = {"P17": frozenset({("Ay", "B")}), "P131": frozenset({("C", "D")})}
    assert TrainFacts(facts, 1, by_relation).by_relation is by_relation
    assert TrainFacts(facts).by_relation == by_relation  # built from the facts when not given
    assert TrainFacts(frozenset()).by_relation == {}


def test_intra_and_inter_by_hand():
    preds = [pred("Alpha", 0, 1, "P17"), pred("Alpha", 1, 3, "P17"), pred("Alpha", 0, 2, "P131"), pred("Alpha", 1, 2, "P6")]
    scores = score_predictions(preds, [alpha()])
    # intra pairs: (0,1) correct; (1,3) is inter (B only in sentence 0, D in 2). inter: (0,2) correct, (1,2), (1,3) wrong.
    assert (scores.intra_precision, scores.intra_recall) == (1.0, 0.5)
    assert (scores.inter_precision, scores.inter_recall) == (1 / 3, 0.5)
    assert alpha().is_intra(0, 3) and not alpha().is_intra(1, 3)


def test_evidence_by_hand():
    preds = [pred("Alpha", 0, 2, "P131", [0, 1, 1]), pred("Alpha", 2, 3, "P150", [2, 0]), pred("Alpha", 1, 2, "P6", [1])]
    scores = score_predictions(preds, [alpha()])
    # predicted sentences: {0,1} + {0,2} + {1} = 5; correct: 2 + 1; gold evidence total: 1+2+2+1 = 6
    assert scores.num_predicted_evidence == 5 and scores.num_correct_evidence == 3 and scores.num_gold_evidence == 6
    assert (scores.evidence_precision, scores.evidence_recall) == (3 / 5, 3 / 6)
    assert scores.evidence_f1 == 2.0 * 0.6 * 0.5 / 1.1


def test_doc_id_keys_for_renamed_copies():
    gold = [alpha("Alpha#0"), alpha("Alpha#1")]
    preds = [{"doc_id": "Alpha#1", "h_idx": 0, "t_idx": 1, "r": "P17"}]
    scores = score_predictions(preds, gold)
    assert scores.num_correct == 1 and scores.recall == 1 / 8
    with pytest.raises(PredictionError, match="names 2 gold documents"):
        score_predictions([pred("Alpha", 0, 1, "P17")], gold)
    # a title that is unique still resolves when the document has a doc_id
    assert score_predictions([pred("Alpha", 0, 1, "P17")], [alpha("Alpha#0")]).num_correct == 1


def test_unknown_relation_ids_just_never_match():
    scores = score_predictions([pred("Alpha", 0, 1, "P17"), pred("Alpha", 0, 1, "NOT-A-RELATION")], [alpha()])
    assert scores.num_correct == 1 and scores.precision == 0.5
    assert scores.per_relation["NOT-A-RELATION"]["predicted"] == 1


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "bad, field, message",
    [
        (pred("Gamma", 0, 1, "P17"), "title", "no gold document"),
        ({"doc_id": "Alpha#9", "h_idx": 0, "t_idx": 1, "r": "P17"}, "doc_id", "no gold document"),
        (pred("Alpha", 4, 1, "P17"), "h_idx", "out of range"),
        (pred("Alpha", 0, -1, "P17"), "t_idx", "out of range"),
        (pred("Alpha", 0, 4, "P17"), "t_idx", "out of range"),  # Alpha has 4 entities: 4 is the first bad index
        (pred("Alpha", 0, 1, 17), "r", "relation id string"),
        (pred("Alpha", True, 1, "P17"), "h_idx", "integer"),
        (pred("Alpha", "0", 1, "P17"), "h_idx", "integer"),
        ({"title": "Alpha", "h_idx": 0, "r": "P17"}, "t_idx", "missing"),
        (pred("Alpha", 0, 1, "P17", "0"), "evidence", "sentence ids"),
        (pred("Alpha", 0, 1, "P17", [0, "1"]), "evidence", "sentence ids"),
        (pred("Alpha", 0, 2, "P131", [[0], [1]]), "evidence", "sentence ids"),
        (pred("Alpha", 0, 2, "P131", 1.5), "evidence", "sentence ids"),
        ({"h_idx": 0, "t_idx": 1, "r": "P17"}, "doc_id", "doc_id or a title"),
    ],
)
def test_bad_predictions_name_index_document_and_field(bad, field, message):
    with pytest.raises(PredictionError, match=message) as info:
        score_predictions([pred("Alpha", 0, 1, "P17"), bad], [alpha()])
    assert info.value.index == 1 and info.value.field == field
    assert info.value.doc == (bad.get("doc_id") or bad.get("title"))  # the document as the prediction names it
    message = str(info.value)
    assert message.startswith("prediction 1") and f"field {field!r}" in message and isinstance(info.value, ValueError)


@pytest.mark.parametrize("bad", [3, "Alpha", [0, 1, "P17"], None])
def test_a_prediction_that_is_not_an_object_is_named_by_its_index(bad):
    with pytest.raises(PredictionError, match="expected an object") as info:
        score_predictions([pred("Alpha", 0, 1, "P17"), bad], [alpha()])
    assert info.value.index == 1 and info.value.doc is None and info.value.field is None
    assert str(info.value).startswith("prediction 1: ") and "field" not in str(info.value)  # no field to name


def test_bad_evidence_items_name_the_document_by_doc_id_first():
    """Evidence lists are type-checked in bulk after the loop; the culprit is then named as in the loop."""
    preds = [
        {"doc_id": "Alpha#0", "title": "Alpha", "h_idx": 0, "t_idx": 1, "r": "P17", "evidence": [0]},
        {"doc_id": "Alpha#1", "title": "Alpha", "h_idx": 0, "t_idx": 2, "r": "P131", "evidence": [0, 1.0]},
    ]
    with pytest.raises(PredictionError, match="sentence ids") as info:
        score_predictions(preds, [alpha("Alpha#0"), alpha("Alpha#1")])
    assert (info.value.index, info.value.doc, info.value.field) == (1, "Alpha#1", "evidence")
    assert "(document 'Alpha#1')" in str(info.value)


def test_unknown_documents_can_count_as_wrong():
    scores = score_predictions([pred("Alpha", 0, 1, "P17"), pred("Gamma", 0, 1, "P17")], [alpha()], allow_unknown_documents=True)
    assert scores.num_unknown_document_predictions == 1 and scores.precision == 0.5


def test_bad_gold_sets():
    with pytest.raises(DocumentError, match="duplicate document key"):
        score_predictions([], [alpha(), alpha()])
    unlabelled = beta()
    unlabelled.has_labels = False
    with pytest.raises(DocumentError, match="no labels"):
        score_predictions([], [unlabelled])


def test_read_predictions_rejects_non_lists(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"title": "Alpha"}')
    with pytest.raises(PredictionError, match="expected a JSON list"):
        read_predictions(path)
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(json.dumps(GOLD_PREDS[0]) + "\n\n" + json.dumps(GOLD_PREDS[1]) + "\n")
    assert read_predictions(jsonl) == GOLD_PREDS[:2]


# --------------------------------------------------------------------------- bundled sample and CLI


def _sample_scores():
    return score_predictions(read_predictions(SAMPLE_PREDICTIONS), read_documents(SAMPLE_DOCS), read_documents(SAMPLE_TRAIN))


def test_bundled_sample_is_consistent():
    scores = _sample_scores()
    assert scores.num_documents == 3 and scores.num_duplicates == 1
    assert 0 < scores.f1 < 1 and 0 < scores.num_correct_in_train < scores.num_correct
    assert scores.evidence_f1 is not None and scores.intra_f1 > 0 and scores.inter_f1 > 0


def test_cli_main_on_the_sample(tmp_path, capsys):
    out = tmp_path / "scores.json"
    argv = ["evaluate", "--predictions", str(SAMPLE_PREDICTIONS), "--gold", str(SAMPLE_DOCS), "--train", str(SAMPLE_TRAIN)]
    assert main(argv + ["--output", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(json.dumps(_sample_scores().to_dict()))
    assert json.loads(out.read_text()) == expected  # the file has everything
    assert printed == {k: v for k, v in expected.items() if k not in ("per_relation", "by_entity_count")}
    assert main(argv + ["--details"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert main(argv[:5]) == 0
    assert json.loads(capsys.readouterr().out)["ign_f1"] is None  # no --train, no Ign


def test_cli_errors_exit_2_with_a_message(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([pred("Harwick Valley Orchestra", 0, 99, "P17")]))
    assert main(["evaluate", "--predictions", str(bad), "--gold", str(SAMPLE_DOCS)]) == 2
    err = capsys.readouterr().err
    assert "prediction 0" in err and "t_idx" in err
    assert main(["evaluate", "--predictions", str(SAMPLE_PREDICTIONS)]) == 2
    assert "--gold" in capsys.readouterr().err
    assert main(["evaluate"]) == 2


def test_envre_evaluate_subprocess_on_the_sample():
    proc = subprocess.run(
        ["envre", "evaluate", "--predictions", "envre_hf/samples/sample_predictions.json", "--gold", "envre_hf/samples/sample_docs.json"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["f1"] == _sample_scores().f1


# --------------------------------------------------------------------------- evaluate module


@pytest.fixture(scope="module")
def docre_f1():
    """The Space as ``envre push-metric`` publishes it (the package's scorer beside ``docre_f1.py``), loaded with
    ``evaluate.load`` from a staged copy (``envre_hf.metrics.space.load_metric``, as docs/metric.md shows)."""
    from envre_hf.metrics.space import load_metric

    return load_metric(REPO / "spaces" / "docre_f1")


def _space_scorer(metric):
    """The scoring module the loaded Space imports (its own copy: its classes are not envre-hf's)."""
    import sys

    return sys.modules[type(metric).__module__.rpartition(".")[0] + ".scoring"]


def _per_document(preds, docs, keep=("h_idx", "t_idx", "r", "evidence")):
    by = {d.key: [] for d in docs}
    for p in preds:
        by[p["title"]].append({k: p[k] for k in keep if k in p})
    return [by[d.key] for d in docs]


def test_evaluate_module_matches_the_core(docre_f1):
    docs, preds = read_documents(SAMPLE_DOCS), read_predictions(SAMPLE_PREDICTIONS)
    result = docre_f1.compute(predictions=_per_document(preds, docs), references=docs, train_documents=str(SAMPLE_TRAIN))
    assert result == _sample_scores().to_dict()


def test_evaluate_module_reference_kinds_and_missing_evidence(docre_f1):
    docs, preds = read_documents(SAMPLE_DOCS), read_predictions(SAMPLE_PREDICTIONS)
    no_evidence = _per_document(preds, docs, keep=("h_idx", "t_idx", "r"))
    expected = score_predictions([{k: v for k, v in p.items() if k != "evidence"} for p in preds], docs).to_dict()
    for refs in ([json.dumps(to_docred(d)) for d in docs], [to_docred(d) for d in docs], [document_to_row(d) for d in docs]):
        assert docre_f1.compute(predictions=no_evidence, references=refs) == expected
    assert expected["evidence_f1"] is None
    for doc, doc_preds in zip(docs, _per_document(preds, docs)):  # incremental use
        docre_f1.add(prediction=doc_preds, reference=doc)
    assert docre_f1.compute(train_documents=read_documents(SAMPLE_TRAIN))["ign_f1"] == _sample_scores().ign_f1
    for doc, doc_preds in zip(docs, _per_document(preds, docs)):  # envre-hf's TrainFacts (its scorer's class)
        docre_f1.add(prediction=doc_preds, reference=doc)
    assert docre_f1.compute(train_documents=train_facts(read_documents(SAMPLE_TRAIN)))["ign_f1"] == _sample_scores().ign_f1


def test_evaluate_module_errors(docre_f1):
    docs = read_documents(SAMPLE_DOCS)
    assert _space_scorer(docre_f1).PredictionError is not PredictionError  # the Space's scorer, never envre-hf's
    with pytest.raises(_space_scorer(docre_f1).PredictionError, match="h_idx"):
        docre_f1.compute(predictions=[[{"h_idx": 50, "t_idx": 0, "r": "P17"}], [], []], references=docs)


def test_evaluate_module_takes_official_dicts_and_checks_their_documents(docre_f1):
    docs, flat = read_documents(SAMPLE_DOCS), read_predictions(SAMPLE_PREDICTIONS)
    per_doc = [[p for p in flat if p["title"] == d.title] for d in docs]
    assert docre_f1.compute(predictions=per_doc, references=docs)["f1"] == _sample_scores().f1
    with pytest.raises(_space_scorer(docre_f1).PredictionError, match=r"predictions\[0\] names document 'Port Aldren'"):
        docre_f1.compute(predictions=per_doc[::-1], references=docs)


def test_read_predictions_names_the_bad_line_of_a_jsonl_file(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"title": "Alpha", "h_idx": 0, "t_idx": 1, "r": "P17"}\n{oops\n', encoding="utf-8")
    with pytest.raises(PredictionError, match="line 2"):
        read_predictions(path)


def test_scores_built_from_the_fractions_alone_count_nothing():
    """DocREScores' counts default to zero (a report built by hand, or from an older score file's fractions)."""
    from dataclasses import fields

    from envre_hf.metrics import DocREScores

    required = [f.name for f in fields(DocREScores) if f.default is f.default_factory]  # both MISSING
    scores = DocREScores(**dict.fromkeys(required, 0.5))
    counts = {f.name: getattr(scores, f.name) for f in fields(DocREScores) if f.name.startswith("num_")}
    assert len(counts) == 10 and set(counts.values()) == {0}
    assert scores.per_relation == {} and scores.by_entity_count == {}

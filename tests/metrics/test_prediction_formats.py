"""One prediction format family (issue 44): ``envre predict``'s lines are scored as official rows, relations named
by name or by a wrong-case id are mapped or refused naming the first bad prediction, and a zero score says why."""

from __future__ import annotations

import json
import logging

import pytest

from envre_hf.cli.main import main
from envre_hf.documents import docred_schema, write_documents
from envre_hf.documents.relations import RelationSchema, RelationType
from envre_hf.metrics import PredictionError, read_predictions, score_files, score_predictions
from envre_hf.metrics.predictions import from_predict_lines, with_relation_ids

from _metric_helpers import perturbed


def _as_predict_lines(preds, gold):
    """Official rows as ``envre predict`` writes them: one line per document, in gold order, keyed by ``id``."""
    lines = [{"index": k, "id": doc.key, "relations": []} for k, doc in enumerate(gold)]
    where = {doc.key: line for doc, line in zip(gold, lines)}
    for p in preds:
        rel = {"head": {"name": "?"}, "tail": {"name": "?"}, "h_idx": p["h_idx"], "t_idx": p["t_idx"],
               "relation": p["r"], "relation_name": docred_schema().id2name[p["r"]], "score": 0.9,
               **({"evidence": p["evidence"]} if "evidence" in p else {})}
        where[p["doc_id"]]["relations"].append(rel)
    return lines


def test_envre_predict_lines_score_as_the_official_rows_they_hold(redocred_test, tmp_path, capsys):
    gold = redocred_test[:40]
    write_documents(gold, tmp_path / "gold.json")
    preds = perturbed(gold, seed=3)
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in _as_predict_lines(preds, gold)))
    expected = score_predictions(preds, gold, gold)
    assert expected.num_correct > 0
    assert score_files(path, tmp_path / "gold.json", tmp_path / "gold.json") == expected
    assert main(["evaluate", "--predictions", str(path), "--gold", str(tmp_path / "gold.json"), "--train",
                 str(tmp_path / "gold.json"), "--output", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text()) == json.loads(json.dumps(expected.to_dict()))
    assert capsys.readouterr().err == ""  # nothing to explain


def test_a_mixed_or_malformed_predict_file_names_the_line(tmp_path):
    good = {"index": 0, "id": "A", "relations": [{"h_idx": 0, "t_idx": 1, "relation": "P17", "evidence": []}]}
    assert from_predict_lines([good]) == [{"title": "A", "h_idx": 0, "t_idx": 1, "r": "P17", "evidence": []}]
    cases = [
        ({"title": "A", "h_idx": 0, "t_idx": 1, "r": "P17"}, None, "expected a line of envre predict's output"),
        ({"index": 1, "id": 5, "relations": []}, "id", "expected the document's id"),
        ({"index": 1, "id": "B", "relations": {}}, "relations", "expected a list, got dict"),
        ({"index": 1, "id": "B", "relations": [{"h_idx": 0}]}, "relations", "relation 0: expected an object with"),
    ]
    for bad, field, message in cases:
        (tmp_path / "p.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(PredictionError, match=message) as err:
            read_predictions(tmp_path / "p.jsonl")
        assert (err.value.index, err.value.field) == (1, field) and "p.jsonl" in str(err.value)


def test_relation_names_and_wrong_case_ids_are_mapped_and_said(redocred_test, tmp_path, caplog):
    gold = redocred_test[:30]
    preds = perturbed(gold, seed=4)
    names = docred_schema().id2name
    variants = [{**p, "r": (names[p["r"]], p["r"].lower(), names[p["r"]].upper().replace(" ", "_"))[i % 3]}
                for i, p in enumerate(preds)]  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="envre_hf.metrics.predictions"):
        mapped = score_predictions(variants, gold)
    assert mapped == score_predictions(preds, gold) and mapped.num_correct > 0
    assert "by name or in another case" in caplog.text and "-> P" in caplog.text
    assert [p["r"] for p in variants[:3]] == [names[preds[0]["r"]], preds[1]["r"].lower(),
                                              names[preds[2]["r"]].upper().replace(" ", "_")]  # the input is kept


def test_an_unknown_or_ambiguous_relation_is_refused_naming_the_first_bad_prediction(redocred_test, tmp_path, capsys,
                                                                                     caplog):
    gold = redocred_test[:5]
    write_documents(gold, tmp_path / "gold.json")
    preds = perturbed(gold, seed=5)
    bad = [*preds[:3], {**preds[3], "r": "place of brith"}, {**preds[4], "r": "P999"}]
    (tmp_path / "p.json").write_text(json.dumps(bad))
    doc = preds[3].get("doc_id") or preds[3]["title"]
    assert main(["evaluate", "--predictions", str(tmp_path / "p.json"), "--gold", str(tmp_path / "gold.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"envre evaluate: error: prediction 3 (document {doc!r}) field 'r': relation 'place of brith': neither a "
        "relation id nor a relation name")
    assert str(tmp_path / "p.json") in err
    (tmp_path / "p.json").write_text(json.dumps(bad[:3] + bad[4:]))
    with pytest.raises(PredictionError, match=r"prediction 3 .*relation 'P999': neither") as exc:
        score_files(tmp_path / "p.json", tmp_path / "gold.json")
    assert exc.value.index == 3
    with caplog.at_level(logging.WARNING, logger="envre_hf.metrics.predictions"):  # in Python: wrong, as officially
        scores = score_predictions(bad[:3] + bad[4:], gold)
    other = score_predictions(bad[:3] + [{**bad[4], "r": "P_unknown"}], gold)
    assert (scores.num_correct, scores.num_predictions) == (other.num_correct, other.num_predictions)
    assert scores.f1 == other.f1
    assert scores.per_relation["P999"]["predicted"] == 1 and "'P999'); scored as wrong" in caplog.text
    twins = RelationSchema([RelationType("R1", "member of"), RelationType("R2", "Member_of")])
    with pytest.raises(PredictionError, match="relation 'MEMBER OF': could be R1 or R2"):
        with_relation_ids([{"title": "A", "h_idx": 0, "t_idx": 1, "r": "MEMBER OF"}], twins)


@pytest.mark.parametrize(
    "change, flags, reason",
    [
        (lambda p, d: [], [], "there are no predictions"),
        (lambda p, d: [{**x, "doc_id": x["doc_id"] + "?"} for x in p], ["--allow-unknown-documents"],
         "none of the .* predictions names a gold document"),
        (lambda p, d: [{**x, "r": "P1336"} for x in p], [], r"no predicted relation \(P1336\) is a relation of the "
                                                            r"gold labels \(P"),
        (lambda p, d: [{**x, "h_idx": x["t_idx"], "t_idx": x["h_idx"]} for x in p], [],
         r"do h_idx / t_idx index the gold documents' entities"),
    ],
)
def test_a_zero_score_says_why(redocred_test, tmp_path, capsys, change, flags, reason):
    import re

    gold = redocred_test[:1]
    write_documents(gold, tmp_path / "gold.json")
    labels = {(r.h, r.t) for r in gold[0].relations}
    exact = [{"doc_id": gold[0].key, "h_idx": r.h, "t_idx": r.t, "r": r.r} for r in gold[0].relations
             if (r.t, r.h) not in labels]  # swapping head and tail then meets no gold pair
    (tmp_path / "p.json").write_text(json.dumps(change(exact, gold)))
    argv = ["evaluate", "--predictions", str(tmp_path / "p.json"), "--gold", str(tmp_path / "gold.json"), *flags]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["f1"] == 0.0
    assert err.startswith("envre evaluate: note: F1 is 0: ") and err.count("\n") == 1 and re.search(reason, err), err

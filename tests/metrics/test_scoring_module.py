"""The scoring module on its own (``envre_hf/metrics/scoring.py``): standard library only, uploaded with the docre_f1
Space (no copy of it in the repository), DocRED dicts scored as the typed documents they are, and gold documents it cannot score
refused with errors naming the document, entity, mention, label and field."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from envre_hf.documents import DocumentError, Relation, to_docred
from envre_hf.metrics import gold_index, score_predictions, scoring

from _metric_helpers import perturbed

REPO = Path(__file__).resolve().parents[2]
SPACE = REPO / "spaces" / "docre_f1"


def test_the_pushed_space_carries_the_package_scorer_and_the_repository_no_copy(tmp_path):
    from envre_hf.metrics.space import space_folder

    staged = space_folder(SPACE, tmp_path / "docre_f1")
    assert (staged / "scoring.py").read_bytes() == Path(scoring.__file__).read_bytes()
    long = {p.name: n for p in staged.iterdir() if (n := len(p.read_text("utf-8").splitlines())) > 600}
    assert not long, f"files of the Space over 600 lines: {long}"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if listed.returncode:
        pytest.skip("not a git checkout: the repository's files are not known")
    files = [REPO / name for name in filter(None, listed.stdout.decode().split("\0")) if (REPO / name).is_file()]
    package = {p.read_bytes(): p for p in files if p.parts[len(REPO.parts)] == "envre_hf" and p.suffix == ".py"}
    copies = [f"{p.relative_to(REPO)} = {package[p.read_bytes()].relative_to(REPO)}" for p in files
              if p.parts[len(REPO.parts)] != "envre_hf" and p.stat().st_size and p.read_bytes() in package]
    assert copies == [], "files kept twice: a package module copied elsewhere in the repository"


def test_the_scoring_module_imports_only_the_standard_library():
    tree = ast.parse(Path(scoring.__file__).read_text("utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    relative = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level > 0]
    assert not relative and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_docred_dicts_score_as_their_typed_documents(redocred_test, redocred_dev):
    gold = [replace(d, doc_id=f"{d.title}#{k}") for k in range(2) for d in redocred_test[:200]]
    preds = perturbed(gold, 9)
    typed = score_predictions(preds, gold, redocred_dev)
    assert scoring.score(preds, [to_docred(d) for d in gold], [to_docred(d) for d in redocred_dev]) == typed
    assert typed.num_correct_in_train > 0 and typed.evidence_f1 is not None


def _record():
    return {
        "title": "A",
        "sents": [["x", "y"], ["z"]],
        "vertexSet": [[{"name": "a", "sent_id": 0, "pos": [0, 1], "type": "PER"}],
                      [{"name": "b", "sent_id": 1, "pos": [0, 1], "type": "ORG"}]],
        "labels": [{"h": 0, "t": 1, "r": "P17", "evidence": [0, 1]}],
    }  # fmt: skip


@pytest.mark.parametrize(
    "change, where, message",
    [
        (lambda d: d.pop("title"), {"field": "title"}, "expected a string, got nothing"),
        (lambda d: d.update(doc_id=3), {"field": "doc_id"}, "expected a string, got int"),
        (lambda d: d.update(vertexSet={}), {"field": "vertexSet"}, "expected a list of entities"),
        (lambda d: d["vertexSet"][1].append("b"), {"entity": 1, "mention": 1}, "expected an object"),
        (lambda d: d["vertexSet"][1][0].update(sent_id="1"), {"entity": 1, "mention": 0, "field": "sent_id"}, "integer"),
        (lambda d: d["vertexSet"][1][0].update(sent_id=True), {"entity": 1, "mention": 0, "field": "sent_id"}, "integer"),
        (lambda d: d["vertexSet"][0][0].update(sent_id=-1), {"entity": 0, "mention": 0, "field": "sent_id"}, "sent_id -1"),
        (lambda d: d["vertexSet"][0][0].pop("name"), {"entity": 0, "mention": 0, "field": "name"}, "expected a string"),
        (lambda d: d.update(labels=[{"h": 0, "t": 2, "r": "P17"}]), {"label": 0, "field": "h/t"}, "outside the 2 entities"),
        (lambda d: d["labels"][0].update(h="0"), {"label": 0, "field": "h"}, "expected an integer, got str"),
        (lambda d: d["labels"][0].update(r=None), {"label": 0, "field": "r"}, "expected a string"),
        (lambda d: d["labels"][0].update(evidence=[0, "1"]), {"label": 0, "field": "evidence"}, "sentence ids"),
        (lambda d: d.update(labels=3), {"field": "labels"}, "expected a list"),
        (lambda d: d.pop("labels"), {"field": "labels"}, "no labels"),
    ],
)
def test_gold_dicts_it_cannot_score_are_named(change, where, message):
    good, bad = _record(), _record()
    good["title"] = "B"
    change(bad)
    with pytest.raises(scoring.GoldError, match=message) as err:
        scoring.GoldIndex([good, bad])
    assert err.value.where["doc_index"] == 1 and {k: err.value.where.get(k) for k in where} == where
    assert str(err.value).startswith("document 1")


def test_gold_documents_it_cannot_score_are_document_errors(redocred_test):
    doc = redocred_test[0]
    mention = replace(doc.entities[0].mentions[0], sent_id=-2)
    odd = replace(doc, doc_id="odd", entities=[replace(doc.entities[0], mentions=[mention])] + doc.entities[1:])
    with pytest.raises(DocumentError, match="sent_id -2") as err:
        gold_index([doc, odd])
    assert (err.value.doc_index, err.value.entity, err.value.mention, err.value.field) == (1, 0, 0, "sent_id")
    far = replace(doc, doc_id="far", relations=[Relation(0, doc.num_entities, "P17", [])])
    with pytest.raises(DocumentError, match="points outside") as err:
        gold_index([doc, far])
    assert str(err.value).startswith(f"document 1 ({doc.title!r}) label 0 field 'h/t': ")

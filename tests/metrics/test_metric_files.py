"""Scoring from files (``score_files``, ``envre evaluate --predictions``): documents read by the document reader,
predictions by ``read_predictions``, the scores of ``score_predictions``, and errors that name the file."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from envre_hf.cli.main import main
from envre_hf.documents import DocumentError, read_documents, to_docred, write_documents
from envre_hf.metrics import PredictionError, read_predictions, score_files, score_predictions

from _metric_helpers import perturbed

REPO = Path(__file__).resolve().parents[2]


def test_files_score_as_the_documents_they_hold(redocred_test_path, redocred_dev_path, tmp_path):
    gold, train = read_documents(redocred_test_path), read_documents(redocred_dev_path)
    preds = perturbed(gold, by_title=True)
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(preds), encoding="utf-8")
    scores = score_files(path, redocred_test_path, redocred_dev_path)
    assert scores.num_correct_in_train > 0 and scores.evidence_f1 is not None and scores.num_duplicates > 0
    assert scores.to_dict() == score_predictions(preds, gold, train).to_dict()  # every float, to the last digit
    assert score_files(str(path), str(redocred_test_path)).to_dict() == score_predictions(preds, gold).to_dict()


@pytest.mark.parametrize("name", ["p.jsonl", "p.json.gz", "p.jsonl.gz", "bom.json"])
def test_renamed_copies_as_json_lines_and_gzipped_predictions(redocred_test, tmp_path, name):
    copies = [replace(d, doc_id=f"{d.title}#{k}") for k in range(2) for d in redocred_test[:60]]
    write_documents(copies, tmp_path / "gold.jsonl.gz")
    preds = perturbed(copies, seed=1)
    text = "\n".join(map(json.dumps, preds)) + "\n" if ".jsonl" in name else json.dumps(preds)
    data = ("\ufeff" + text).encode() if name.startswith("bom") else text.encode()
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    scores = score_files(tmp_path / name, tmp_path / "gold.jsonl.gz", tmp_path / "gold.jsonl.gz")
    assert scores.to_dict() == score_predictions(preds, copies, copies).to_dict()


def test_bad_files_raise_errors_naming_the_file(tmp_path, redocred_test):
    write_documents(redocred_test[:3], tmp_path / "gold.json")
    (tmp_path / "bad.json").write_text("[{")
    (tmp_path / "bad.jsonl").write_text(json.dumps(to_docred(redocred_test[0])) + "\n{oops\n")
    (tmp_path / "obj.json").write_text('{"title": "a"}')
    good = {"title": redocred_test[0].title, "h_idx": 0, "t_idx": 1, "r": "P17"}
    (tmp_path / "p.json").write_text(json.dumps([good, 3]))
    with pytest.raises(DocumentError, match="bad.json is not valid JSON"):
        score_files(tmp_path / "obj.json", tmp_path / "bad.json")
    with pytest.raises(DocumentError, match="line 2"):
        score_files(tmp_path / "obj.json", tmp_path / "gold.json", tmp_path / "bad.jsonl")
    with pytest.raises(PredictionError, match="expected a JSON list of predictions"):
        score_files(tmp_path / "obj.json", tmp_path / "gold.json")
    for read in (read_predictions, lambda p: score_files(p, tmp_path / "gold.json")):
        with pytest.raises(PredictionError, match="expected an object, got int") as err:
            read(tmp_path / "p.json")
        assert err.value.index == 1 and str(err.value).startswith("prediction 1: ") and str(tmp_path / "p.json") in str(err.value)
    title = redocred_test[1].title
    (tmp_path / "far.json").write_text(json.dumps([{"title": title, "h_idx": 0, "t_idx": 2**70, "r": "P17"}]))
    with pytest.raises(PredictionError, match=r"t_idx 1180591620717411303424 is out of range") as err:
        score_files(tmp_path / "far.json", tmp_path / "gold.json")
    assert (err.value.index, err.value.doc, err.value.field) == (0, title, "t_idx") and "far.json" in str(err.value)


def test_an_unlabelled_gold_file_is_refused_naming_the_document(redocred_test, tmp_path):
    write_documents([replace(d, has_labels=False) for d in redocred_test[:2]], tmp_path / "gold.json")
    (tmp_path / "p.json").write_text("[]")
    with pytest.raises(DocumentError, match="no labels") as err:
        score_files(tmp_path / "p.json", tmp_path / "gold.json")
    assert (err.value.doc_index, err.value.title, err.value.field) == (0, redocred_test[0].title, "labels")


def test_envre_evaluate_writes_the_scores_of_score_predictions(redocred_test, tmp_path, capsys):
    gold = redocred_test[:80]
    write_documents(gold, tmp_path / "gold.json")
    preds = perturbed(gold, seed=2, by_title=True)
    (tmp_path / "p.json").write_text(json.dumps(preds))
    argv = ["evaluate", "--predictions", str(tmp_path / "p.json"), "--gold", str(tmp_path / "gold.json")]
    assert main(argv + ["--train", str(tmp_path / "gold.json"), "--output", str(tmp_path / "s.json")]) == 0
    capsys.readouterr()
    written = json.loads((tmp_path / "s.json").read_text())
    assert written == json.loads(json.dumps(score_predictions(preds, gold, gold).to_dict()))


def test_envre_evaluate_on_json_files_imports_neither_datasets_nor_torch(redocred_test, tmp_path):
    """Scoring JSON files stays a light job: ``datasets`` (pandas, pyarrow), torch and transformers, most of a
    second to import, are not loaded (docs/speed.md; a build folder's reader once pulled ``datasets`` in)."""
    gold = redocred_test[:5]
    write_documents(gold, tmp_path / "gold.json")
    (tmp_path / "p.json").write_text(json.dumps(perturbed(gold, seed=3)), encoding="utf-8")
    code = (
        "import sys\nfrom envre_hf.cli.main import main\nassert main(sys.argv[1:]) == 0\n"
        "print([m for m in ('datasets', 'pyarrow', 'pandas', 'torch', 'transformers') if m in sys.modules])"
    )
    argv = ["evaluate", "--predictions", str(tmp_path / "p.json"), "--gold", str(tmp_path / "gold.json"), "--train",
            str(tmp_path / "gold.json"), "--output", str(tmp_path / "s.json")]  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, *argv], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert json.loads((tmp_path / "s.json").read_text())["num_predictions"] > 0


def test_gold_and_training_folders_are_sources_like_files(redocred_test, tmp_path, capsys):
    """An envre build folder or a saved dataset is read by the document reader like a file."""
    from envre_hf.documents.hf import documents_to_dataset

    gold, train = redocred_test[:30], redocred_test[30:60]
    documents_to_dataset(gold).save_to_disk(str(tmp_path / "gold"))
    documents_to_dataset(train).save_to_disk(str(tmp_path / "train"))
    preds = perturbed(gold, 5)
    (tmp_path / "p.json").write_text(json.dumps(preds), encoding="utf-8")
    expected = score_predictions(preds, gold, train).to_dict()
    assert score_files(tmp_path / "p.json", tmp_path / "gold", tmp_path / "train").to_dict() == expected
    argv = ["evaluate", "--predictions", str(tmp_path / "p.json"), "--gold", str(tmp_path / "gold"), "--train",
            str(tmp_path / "train"), "--output", str(tmp_path / "s.json")]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "s.json").read_text()) == json.loads(json.dumps(expected))

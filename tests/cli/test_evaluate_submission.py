"""``envre evaluate --model M --gold FILE --submission DIR``: leaderboard files from a saved model, on a labelled
file (scored as well, exactly as the written file scores) and on an unlabelled test file (files only)."""

from __future__ import annotations

import json
import zipfile

import pytest
from _pipeline_helpers import save_docre_model

from envre_hf.cli.main import main
from envre_hf.metrics import score_files


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return str(save_docre_model(tmp_path_factory.mktemp("submission") / "model"))


def test_a_labelled_gold_is_scored_as_its_submission_file_scores(model_dir, redocred_test_path, tmp_path, capsys):
    raw = json.loads(redocred_test_path.read_text())[:3]
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(raw))
    argv = ["evaluate", "--model", model_dir, "--gold", str(gold), "--submission", str(tmp_path / "sub"),
            "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    result = tmp_path / "sub" / "result.json"
    rows = json.loads(result.read_text())
    assert {row["title"] for row in rows} <= {doc["title"] for doc in raw}
    assert printed["f1"] == score_files(result, gold).f1 and printed["num_predictions"] == len(rows)
    assert zipfile.ZipFile(tmp_path / "sub" / "result.zip").namelist() == ["result.json"]
    assert "result.zip" in (tmp_path / "sub" / "README.md").read_text()


def test_an_unlabelled_test_file_gives_the_files_only(model_dir, redocred_test_path, tmp_path, capsys):
    raw = [{k: v for k, v in doc.items() if k != "labels"} for doc in json.loads(redocred_test_path.read_text())[:2]]
    gold = tmp_path / "test.json"
    gold.write_text(json.dumps(raw))
    argv = ["evaluate", "--model", model_dir, "--gold", str(gold), "--submission", str(tmp_path / "sub"),
            "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == {"submission": [str(tmp_path / "sub" / "result.zip")]}
    assert isinstance(json.loads((tmp_path / "sub" / "result.json").read_text()), list)

"""What a new user hits (issue 30): several splits in one gold folder, typo'd model paths, models of the wrong
kind, --max-docs, abbreviations and the one error path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envre_hf.cli.main import main
from envre_hf.documents import read_documents, write_documents
from envre_hf.renaming.builder import BuildConfig, build_split
from malformed_inputs import SAMPLE_DOCS
from _renaming_fakes import FakePipeline


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --------------------------------------------------------------------------- a gold folder of several splits


@pytest.fixture(scope="module")
def two_splits(tmp_path_factory) -> Path:
    """A build folder with a ``test`` split (2 documents) and a ``validation`` split (1 other document)."""
    root = tmp_path_factory.mktemp("two_splits")
    docs = read_documents(SAMPLE_DOCS)
    for split, part in (("test", docs[:2]), ("validation", docs[2:])):
        source = root / f"{split}.json"
        write_documents(part, source)
        build_split(FakePipeline(), source, BuildConfig(root / "env", split=split, seeds=(0,), progress=False))
    return root / "env"


def _perfect_predictions(folder: Path, split: str, path: Path) -> Path:
    preds = [{"doc_id": d.key, "h_idx": r.h, "t_idx": r.t, "r": r.r, "evidence": list(r.evidence)}
             for d in read_documents(folder, split=split) for r in d.relations]
    path.write_text(json.dumps(preds))
    return path


def test_predictions_are_scored_against_the_split_holding_their_documents(two_splits, tmp_path, capsys):
    preds = _perfect_predictions(two_splits, "test", tmp_path / "p.json")
    capsys.readouterr()
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(two_splits)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["recall"] == 1.0  # not 2/3 of the folder's facts
    assert "split 'test'" in err and len(err.strip().splitlines()) == 1
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(two_splits), "--gold-split", "test"]) == 0
    assert json.loads(capsys.readouterr().out)["recall"] == 1.0


def test_an_unresolvable_split_is_one_line_listing_the_splits(two_splits, tmp_path, capsys):
    preds = _perfect_predictions(two_splits, "test", tmp_path / "p.json")
    other = json.loads(preds.read_text())[:1] + [{"doc_id": "Port Aldren#0", "h_idx": 0, "t_idx": 1, "r": "P17"}]
    (tmp_path / "both.json").write_text(json.dumps(other))
    capsys.readouterr()
    assert main(["evaluate", "--predictions", str(tmp_path / "both.json"), "--gold", str(two_splits)]) == 2
    assert "test, validation" in (line := _one_line(capsys)) and "--gold-split" in line
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(two_splits), "--gold-split", "dev"]) == 2
    assert "no such split" in _one_line(capsys)
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(SAMPLE_DOCS), "--gold-split", "test"]) == 2
    assert "not a build folder" in _one_line(capsys)
    # predicting: no predictions to choose by, so the split must be named (before any model is loaded)
    assert main(["evaluate", "--model", str(tmp_path), "--gold", str(two_splits)]) == 2
    assert "--gold-split" in (line := _one_line(capsys)) and "test, validation" in line
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(SAMPLE_DOCS), "--train", str(two_splits)]) == 2
    assert "--train-split" in _one_line(capsys)


def test_python_callers_name_the_keyword(two_splits, tmp_path):
    from envre_hf.metrics import score_files

    preds = _perfect_predictions(two_splits, "validation", tmp_path / "p.json")
    with pytest.raises(ValueError, match=r"splits test, validation; pass gold_split=") as caught:
        score_files(preds, two_splits)
    assert "--" not in str(caught.value)
    assert score_files(preds, two_splits, gold_split="validation").recall == 1.0

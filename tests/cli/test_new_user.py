"""What a new user hits (issue 30): several splits in one gold folder, typo'd model paths, models of the wrong
kind, --max-docs, abbreviations and the one error path."""

from __future__ import annotations

import importlib
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
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(two_splits), "--split", "test"]) == 0
    assert json.loads(capsys.readouterr().out)["recall"] == 1.0
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(two_splits), "--gold-split", "test"]) == 0
    out, err = capsys.readouterr()  # the old spelling still works, said once
    assert json.loads(out)["recall"] == 1.0 and err.strip().splitlines() == [
        "envre evaluate: warning: --gold-split is deprecated and will be removed in a later release; use --split test"]


def test_an_unresolvable_split_is_one_line_listing_the_splits(two_splits, tmp_path, capsys):
    preds = _perfect_predictions(two_splits, "test", tmp_path / "p.json")
    other = json.loads(preds.read_text())[:1] + [{"doc_id": "Port Aldren#0", "h_idx": 0, "t_idx": 1, "r": "P17"}]
    (tmp_path / "both.json").write_text(json.dumps(other))
    capsys.readouterr()
    assert main(["evaluate", "--predictions", str(tmp_path / "both.json"), "--gold", str(two_splits)]) == 2
    assert "test, validation" in (line := _one_line(capsys)) and "--split NAME" in line
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(two_splits), "--split", "dev"]) == 2
    assert "no such split" in _one_line(capsys)
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(SAMPLE_DOCS), "--split", "test"]) == 2
    assert "not a build folder" in _one_line(capsys)
    # predicting: no predictions to choose by, so the split must be named (before any model is loaded)
    assert main(["evaluate", "--model", str(tmp_path), "--gold", str(two_splits)]) == 2
    assert "--split NAME" in (line := _one_line(capsys)) and "test, validation" in line
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(SAMPLE_DOCS), "--train", str(two_splits)]) == 2
    assert "--train-split" in _one_line(capsys)


def test_python_callers_name_the_keyword(two_splits, tmp_path):
    from envre_hf.metrics import score_files

    preds = _perfect_predictions(two_splits, "validation", tmp_path / "p.json")
    with pytest.raises(ValueError, match=r"splits test, validation; pass gold_split=") as caught:
        score_files(preds, two_splits)
    assert "--" not in str(caught.value)
    assert score_files(preds, two_splits, gold_split="validation").recall == 1.0


def test_library_keywords_are_named_as_flags_on_the_cli(tmp_path, capsys):
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"title": "Nowhere", "h_idx": 0, "t_idx": 1, "r": "P17"}]))
    capsys.readouterr()
    assert main(["evaluate", "--predictions", str(preds), "--gold", str(SAMPLE_DOCS)]) == 2
    line = _one_line(capsys)
    assert "--allow-unknown-documents" in line and "allow_unknown_documents=True" not in line


def test_abbreviated_options_are_refused(tmp_path, capsys):
    preds = tmp_path / "p.json"
    preds.write_text("[]")
    capsys.readouterr()
    assert main(["evaluate", "--pred", str(preds), "--gold", str(SAMPLE_DOCS)]) == 2  # not --predictions
    assert "unrecognized arguments: --pred" in _one_line(capsys)
    assert main(["build", "--input", str(SAMPLE_DOCS), "--kb", "corpus", "--seed", "3", "--output", str(tmp_path)]) == 2
    assert "--seed" in _one_line(capsys)  # never read as --seeds 3


# --------------------------------------------------------------------------- models of the wrong kind


@pytest.fixture(scope="module")
def plain_encoder(tmp_path_factory) -> Path:
    from _training_helpers import save_tiny_encoder

    return save_tiny_encoder(tmp_path_factory.mktemp("encoder") / "bert")


def test_a_plain_encoder_is_refused_as_a_docre_model(plain_encoder, tmp_path, capsys):
    capsys.readouterr()
    assert main(["evaluate", "--model", str(plain_encoder), "--gold", str(SAMPLE_DOCS)]) == 2
    line = _one_line(capsys)
    assert "'bert' model, expected a DocRE model" in line and line.startswith("envre evaluate: error:")
    code = main(["attribute", "--model", str(plain_encoder), "--gold", str(SAMPLE_DOCS), "--allow-train-overlap",
                 "--train", str(SAMPLE_DOCS), "--output", str(tmp_path / "attr")])
    assert code == 2
    line = _one_line(capsys)
    assert line.startswith("envre attribute: error:") and "expected a DocRE model" in line


def test_attribute_errors_take_the_one_error_path(tmp_path, capsys):
    capsys.readouterr()
    code = main(["attribute", "--model", str(tmp_path), "--gold", str(tmp_path / "missing.json"),
                 "--output", str(tmp_path / "attr")])
    line = _one_line(capsys)
    assert code == 2 and line.startswith("envre attribute: error:") and "no such file or folder" in line
    assert "Errno" not in line


def test_icl_refuses_a_model_without_chat_template_and_an_output_file_first(plain_encoder, tmp_path, capsys):
    base = ["icl", "--test", str(SAMPLE_DOCS), "--train", str(SAMPLE_DOCS), "--backend", "local"]
    capsys.readouterr()
    assert main([*base, "--model", str(plain_encoder), "--output", str(tmp_path / "run")]) == 2
    line = _one_line(capsys)
    assert "no chat template" in line and "expected a chat" in line
    (tmp_path / "a-file").write_text("notes\n")
    # refused before the (here absent) model is looked for
    assert main([*base, "--model", str(tmp_path / "no-model"), "--output", str(tmp_path / "a-file")]) == 2
    assert "a-file: a file, expected a folder" in _one_line(capsys)


def test_a_typo_in_a_model_path_is_no_such_folder_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    capsys.readouterr()
    assert main(["evaluate", "--model", "runs/does-not-exist", "--gold", str(SAMPLE_DOCS)]) == 2
    assert _one_line(capsys).endswith("model runs/does-not-exist: no such folder")
    assert main(["evaluate", "--model", "./typo", "--gold", str(SAMPLE_DOCS)]) == 2
    assert _one_line(capsys).endswith("model ./typo: no such folder")


# --------------------------------------------------------------------------- --max-docs


def test_max_docs_cuts_the_original_and_renamed_sets_alike(tmp_path, capsys):
    from _pipeline_helpers import save_docre_model

    model = save_docre_model(tmp_path / "model")
    build_split(FakePipeline(), SAMPLE_DOCS, BuildConfig(tmp_path / "env", split="test", seeds=(0, 1), progress=False))
    capsys.readouterr()
    code = main(["evaluate", "--model", str(model), "--gold", str(SAMPLE_DOCS), "--env", str(tmp_path / "env"),
                 "--max-docs", "2", "--output", str(tmp_path / "report.json"), "--device", "cpu"])
    assert code == 0, capsys.readouterr().err
    documents = json.loads((tmp_path / "report.json").read_text())["documents"]
    assert documents == {"original": 2, "renamed": 4}  # the first 2 documents and their 2 copies each
    capsys.readouterr()
    assert main(["evaluate", "--predictions", str(tmp_path / "report.json"), "--gold", str(SAMPLE_DOCS),
                 "--max-docs", "1"]) == 2
    assert "--max-docs" in _one_line(capsys)


def test_errors_are_classified_by_type_not_by_class_name():
    import httpx
    from safetensors import SafetensorError

    from envre_hf.cli.common import error_message
    from envre_hf.kb.base import KnowledgeBaseError

    assert error_message(httpx.ConnectError("refused")).startswith("network failure (ConnectError: refused)")
    assert error_message(KnowledgeBaseError("the KB is down")) == "the KB is down"
    assert error_message(SafetensorError("header too large")).startswith("unreadable model weights")

    class TransportError(Exception):  # a namesake of httpx's
        pass

    class BuildError(RuntimeError):  # a namesake of envre-hf's
        pass

    assert error_message(TransportError("x")) is None and error_message(BuildError("x")) is None  # bugs


def test_keywords_become_flags_only_where_the_command_has_them():
    from envre_hf.cli import build
    from envre_hf.cli.common import ArgumentParser, error_message
    from envre_hf.failures import Remedy
    from envre_hf.icl.runner import ICLRunError
    from envre_hf.renaming.builder import BuildError

    parser = ArgumentParser(prog="envre build")
    build.add_arguments(parser)
    refused = BuildError(Remedy("out already holds split 'test' built differently (seeds); pass ", "overwrite",
                                after=" to replace it"))
    assert str(refused).endswith("; pass overwrite=True to replace it")  # Python callers read the keyword
    assert error_message(refused, parser).endswith("; pass --overwrite to replace it")
    assert error_message(ICLRunError(Remedy("out: pass ", "resume")), parser) == "out: pass resume=True"  # no --resume
    assert error_message(ValueError(Remedy("pass ", "gold_split", "NAME")), None) == "pass gold_split=NAME"
    icl, evaluate = ArgumentParser(prog="envre icl"), ArgumentParser(prog="envre evaluate")
    importlib.import_module("envre_hf.cli.icl").add_arguments(icl)
    importlib.import_module("envre_hf.cli.evaluate").add_arguments(evaluate)
    # an old spelling is never advised: its new one when it takes the same value, else the keyword
    assert error_message(ValueError(Remedy("pass ", "gold_split", "NAME")), evaluate) == "pass --split NAME"
    assert error_message(ICLRunError(Remedy("out: pass ", "resume")), icl) == "out: pass resume=True"
    assert error_message(ValueError("pass overwrite=True"), parser) == "pass overwrite=True"  # text is never rewritten

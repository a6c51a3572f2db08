"""``envre predict``: the three input files, resumable output, and one-line errors that keep what was written."""

from __future__ import annotations

import json

import pytest
from _pipeline_helpers import docred_as_text, save_docre_model, save_tiny_ner

from envre_hf.cli.main import main

pytest.importorskip("spacy")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return str(save_docre_model(tmp_path_factory.mktemp("predict") / "model"))


@pytest.fixture(scope="module")
def ner_dir(tmp_path_factory):
    return str(save_tiny_ner(tmp_path_factory.mktemp("predict") / "ner"))


@pytest.fixture(scope="module")
def raw_test(redocred_test_path):
    return json.loads(redocred_test_path.read_text())[:4]


def _predict(capsys, *args: str) -> tuple[int, str]:
    code = main(["predict", "--no-progress", *map(str, args)])
    return code, capsys.readouterr().err


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_docred_json_gives_the_pipelines_output(model_dir, raw_test, tmp_path, capsys):
    from transformers import pipeline

    (tmp_path / "docs.json").write_text(json.dumps(raw_test))
    code, err = _predict(capsys, "--model", model_dir, "--input", tmp_path / "docs.json", "--output", tmp_path / "p.jsonl",
                         "--batch-size", "2", "--top-k", "2")
    assert code == 0, err
    records = _lines(tmp_path / "p.jsonl")
    assert [r["index"] for r in records] == [0, 1, 2, 3] and [r["id"] for r in records] == [d["title"] for d in raw_test]
    expected = pipeline("document-relation-extraction", model=model_dir)(raw_test, batch_size=2, top_k=2)
    assert [r["relations"] for r in records] == json.loads(json.dumps(expected))


def test_text_inputs_and_a_resumed_run(model_dir, ner_dir, raw_test, tmp_path, capsys):
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps(docred_as_text(d)) + "\n" for d in raw_test[:3]))
    out = tmp_path / "t.jsonl"
    run = ("--model", model_dir, "--input", texts, "--output", out, "--batch-size", "1")  # the same batches each run
    assert _predict(capsys, *run)[0] == 0
    first = out.read_bytes()
    assert len(_lines(out)) == 3 and _lines(out)[0]["relations"]
    out.write_bytes(first[: first.rindex(b"\n", 0, len(first) - 1) + 20])  # a crash tore the last line
    code, _ = _predict(capsys, *run)
    assert code == 0 and out.read_bytes() == first
    main(["predict", "--no-progress", *map(str, run)])
    assert "(0 predicted now)" in capsys.readouterr().out and out.read_bytes() == first

    plain = tmp_path / "plain.txt"
    plain.write_text("Obama visited Paris in 2010.\nClinton stayed in France.\n\n\n  Obama and Clinton met.\n")
    code, err = _predict(capsys, "--model", model_dir, "--input", plain, "--output", tmp_path / "n.jsonl", "--ner", ner_dir,
                         "--threshold", "0.3")
    assert code == 0, err
    records = _lines(tmp_path / "n.jsonl")
    assert [r["id"] for r in records] == ["line 1", "line 5"]
    names = {r["head"]["name"] for rec in records for r in rec["relations"]}
    assert names and names <= {"Obama", "Paris", "2010", "Clinton", "France"}
    code, err = _predict(capsys, "--model", model_dir, "--input", plain, "--output", tmp_path / "m.jsonl")
    assert code == 2 and "plain text needs --ner" in err


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("{not json", r"bad\.jsonl: line 3 is not valid JSON"),
        ('{"text": "Obama met Clinton.", "entities": [{"mentions": [[10, 99]], "type": "PER"}]}',
         r"bad\.jsonl document 2: entity 0 mention 0 field 'mentions': span \[10, 99\] is outside the text \(18 "),
        ('{"text": "Obama met Clinton.", "entities": [{"mentions": [[0, 5]], "type": "POLITICIAN"}]}',
         r"bad\.jsonl document 2: entity 0 field 'type': unknown entity type 'POLITICIAN'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_keeps_what_was_written(model_dir, raw_test, tmp_path, capsys, bad_line, message):
    import re

    good = [json.dumps(docred_as_text(d)) for d in raw_test[:2]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*good, bad_line, good[0]]) + "\n")
    out = tmp_path / "bad-out.jsonl"
    code, err = _predict(capsys, "--model", model_dir, "--input", bad, "--output", out, "--batch-size", "1")
    errors = [line for line in err.splitlines() if "error" in line]  # transformers' loading bar is on stderr too
    assert code == 2 and len(errors) == 1 and errors[0].startswith("envre predict: error: ") and "Traceback" not in err
    assert re.search(message, errors[0]), err
    assert [r["index"] for r in _lines(out)] == [0, 1]  # the documents before the bad line are written


def test_an_output_of_another_input_is_refused(model_dir, raw_test, tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps(raw_test[:1]))
    (tmp_path / "b.json").write_text(json.dumps(raw_test[1:2]))
    out = tmp_path / "o.jsonl"
    assert _predict(capsys, "--model", model_dir, "--input", tmp_path / "a.json", "--output", out)[0] == 0
    code, err = _predict(capsys, "--model", model_dir, "--input", tmp_path / "b.json", "--output", out)
    assert code == 2 and "holds predictions of another input" in err and "pass --overwrite" in err
    kept = out.read_bytes()
    code, err = _predict(capsys, "--model", model_dir, "--input", tmp_path / "b.json", "--output", out, "--overwrite",
                         "--max-docs", "0")  # fmt: skip
    assert code == 2 and out.read_bytes() == kept  # nothing to predict: the old predictions are kept
    assert _predict(capsys, "--model", model_dir, "--input", tmp_path / "b.json", "--output", out, "--overwrite")[0] == 0
    assert [r["id"] for r in _lines(out)] == [raw_test[1]["title"]]  # started over: b's only


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_an_output_that_is_a_link_is_refused_and_the_file_it_names_kept(model_dir, raw_test, tmp_path, capsys,
                                                                       overwrite):  # fmt: skip
    """--output is appended to (and a torn last line cut), or with --overwrite started over: through a link that
    would change another file."""
    (tmp_path / "docs.json").write_text(json.dumps(raw_test[:1]))
    elsewhere, out = tmp_path / "notes.txt", tmp_path / "p.jsonl"
    elsewhere.write_text("someone's notes, no newline at the end")
    out.symlink_to(elsewhere)
    code, err = _predict(capsys, "--model", model_dir, "--input", tmp_path / "docs.json", "--output", out, *overwrite)
    assert code == 2 and err.count("\n") == 1 and f"{out}: a symbolic link where envre writes" in err
    assert elsewhere.read_text() == "someone's notes, no newline at the end"


def test_envre_predict_output_scores_with_envre_evaluate_as_the_model_does(model_dir, raw_test, tmp_path, capsys):
    """One format family: ``envre evaluate --predictions`` reads ``envre predict``'s lines; the scores are those of
    ``envre evaluate --model`` on the same documents (the same prediction path)."""
    (tmp_path / "docs.json").write_text(json.dumps(raw_test))
    code, err = _predict(capsys, "--model", model_dir, "--input", tmp_path / "docs.json", "--output",
                         tmp_path / "p.jsonl")
    assert code == 0, err
    gold = ["--gold", str(tmp_path / "docs.json"), "--train", str(tmp_path / "docs.json")]
    assert main(["evaluate", "--predictions", str(tmp_path / "p.jsonl"), *gold, "--output",
                 str(tmp_path / "a.json")]) == 0
    assert main(["evaluate", "--model", model_dir, *gold, "--output", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    from_file, from_model = (json.loads((tmp_path / name).read_text()) for name in ("a.json", "b.json"))
    assert from_file["num_predictions"] > 0, from_file
    assert from_file == from_model


def _one_error(err: str) -> str:
    errors = [line for line in err.splitlines() if line.strip() and not line.startswith("Loading weights")]
    assert len(errors) == 1 and errors[0].startswith("envre predict: error: ") and "Traceback" not in err, err
    return errors[0]


def test_the_wrong_kind_of_input_or_an_empty_one_is_named_and_nothing_is_written(model_dir, tmp_path, capsys):
    build = tmp_path / "bench"
    (build / "data").mkdir(parents=True)
    (build / "data" / "test-00000-of-00001.parquet").write_bytes(b"PAR1")
    (tmp_path / "empty.json").write_text("[]")
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "empty.txt").write_text("\n  \n")
    out = tmp_path / "out.jsonl"
    cases = {
        build: "an envre build folder (splits: test); envre predict reads one file",
        build / "data" / "test-00000-of-00001.parquet": "a parquet data file",
        model_dir: "a model folder (give it as --model)",
        tmp_path / "empty.json": "no documents to predict",
        tmp_path / "empty.jsonl": "no documents to predict",
        tmp_path / "empty.txt": "no documents to predict",
    }
    for given, message in cases.items():
        code, err = _predict(capsys, "--model", model_dir, "--input", given, "--output", out)
        assert code == 2 and f"error: {given}: {message}" in _one_error(err)
        assert not out.exists()
    code, err = _predict(capsys, "--model", model_dir, "--input", tmp_path / "empty.json", "--output",
                         tmp_path / "none" / "p.jsonl")
    missing = tmp_path / "none"
    assert code == 2 and _one_error(err).endswith(f"--output {missing / 'p.jsonl'}: no such folder {missing}")


def test_a_bad_first_document_leaves_no_output(model_dir, tmp_path, capsys):
    bad = {"text": "Obama met Clinton.", "entities": [{"mentions": [[0, 99]], "type": "PER"}]}
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad) + "\n")
    out = tmp_path / "out.jsonl"
    code, err = _predict(capsys, "--model", model_dir, "--input", tmp_path / "bad.jsonl", "--output", out)
    assert code == 2 and "document 0: entity 0 mention 0 field 'mentions'" in _one_error(err) and not out.exists()


def test_a_missing_ner_folder_and_an_unreachable_hub_ner_model_are_one_line_naming_it(model_dir, tmp_path, monkeypatch,
                                                                                      capsys):
    import socket
    import time

    import huggingface_hub.constants

    (tmp_path / "notes.txt").write_text("Obama visited Paris.\n")
    run = ("--model", model_dir, "--input", tmp_path / "notes.txt", "--output", tmp_path / "out.jsonl")
    code, err = _predict(capsys, *run, "--ner", tmp_path / "ner-model")
    assert code == 2 and _one_error(err).endswith(f"--ner {tmp_path / 'ner-model'}: no such folder")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{free.getsockname()[1]}"  # nothing listens there
    monkeypatch.setenv("HF_ENDPOINT", closed)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # nothing cached
    started = time.monotonic()
    code, err = _predict(capsys, *run, "--ner", "someone/bert-ner")
    elapsed = time.monotonic() - started
    line = _one_error(err)  # one attempt: no retry lines
    assert code == 2 and f"--ner someone/bert-ner: no such local folder, and the Hub ({closed}) cannot be reached" \
        in line
    assert elapsed < 15 and not (tmp_path / "out.jsonl").exists()


def test_max_docs_predicts_the_first_documents_and_a_rerun_without_it_continues(model_dir, raw_test, tmp_path, capsys):
    (tmp_path / "docs.json").write_text(json.dumps(raw_test))
    out = tmp_path / "p.jsonl"
    run = ("--model", model_dir, "--input", tmp_path / "docs.json", "--output", out)
    assert _predict(capsys, *run, "--max-docs", "2")[0] == 0
    assert [r["id"] for r in _lines(out)] == [d["title"] for d in raw_test[:2]]
    assert _predict(capsys, *run)[0] == 0 and [r["index"] for r in _lines(out)] == [0, 1, 2, 3]
    code, err = _predict(capsys, *run, "--max-docs", "3")
    assert code == 2 and "already holds 4 documents, more than --max-docs 3" in _one_error(err)
    code, err = _predict(capsys, *run[:4], "--output", tmp_path / "q.jsonl", "--max-docs", "0")
    assert code == 2 and "no documents to predict (--max-docs 0)" in _one_error(err)

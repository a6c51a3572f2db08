"""EVRTTrainer's evaluation inside Trainer.evaluate (eval_loss, speed metrics, compute_metrics, F1 + Ign F1)
and the project's model card on ``create_model_card`` / ``push_to_hub``."""

from __future__ import annotations

import numpy as np
import transformers.utils.hub
import pytest
import yaml
from _training_helpers import small_docs, tiny_model, tiny_training_args
from hub_standin import LocalHub

from envre_hf.features import DocRECollator
from envre_hf.metrics import score_predictions
from envre_hf.models.prediction import predict
from envre_hf.training import EVRTTrainer


@pytest.fixture(scope="module")
def dev(redocred_dev):
    return small_docs(redocred_dev[50:], 3)


@pytest.fixture(scope="module")
def train_docs(redocred_dev):
    return small_docs(redocred_dev, 4)


def _trainer(tmp_path, encoder_dir, tokenizer, dev, train_docs, **kwargs):
    model = tiny_model(encoder_dir, "atlop")
    model.config.top_k = None  # every relation above the threshold: plenty of predictions from a random head
    args = tiny_training_args(tmp_path / "out", per_device_eval_batch_size=2, **kwargs.pop("args", {}))
    return EVRTTrainer(
        model=model,
        args=args,
        data_collator=DocRECollator(tokenizer),
        processing_class=tokenizer,
        eval_documents={"dev": dev},
        train_documents_for_ign=train_docs,
        max_seq_length=256,
        **kwargs,
    )


@pytest.mark.parametrize("sampling", ["sequential", "group_by_length"])
def test_evaluate_on_documents_follows_trainer_conventions(tmp_path, encoder_dir, tokenizer, dev, train_docs, sampling):
    """Trainer's evaluate, prediction_step and compute_metrics, whatever the order Trainer's eval sampler takes."""
    seen = {}

    def compute_metrics(eval_pred):
        seen["shape"] = np.asarray(eval_pred.predictions).shape
        seen["positions"] = np.asarray(eval_pred.label_ids).tolist()
        seen["unswapped"] = trainer.compute_metrics is compute_metrics  # set once, never replaced while evaluating
        return {"documents": float(seen["shape"][0])}

    args = {"train_sampling_strategy": sampling} if sampling != "sequential" else {}
    trainer = _trainer(tmp_path, encoder_dir, tokenizer, dev, train_docs, compute_metrics=compute_metrics, args=args)
    metrics = trainer.evaluate()
    max_pairs = max(d.num_entities * (d.num_entities - 1) for d in dev)
    # the user's compute_metrics saw each document's decoded predictions and its position in the set
    assert seen["shape"] == (len(dev), max_pairs, trainer.model.config.num_labels)
    assert sorted(seen["positions"]) == list(range(len(dev)))
    assert seen["unswapped"]
    assert (seen["positions"] == list(range(len(dev)))) == (sampling == "sequential")  # longest first otherwise
    assert metrics["eval_dev_documents"] == len(dev)
    assert metrics["eval_dev_loss"] > 0 and metrics["eval_dev_samples_per_second"] > 0 and "eval_dev_runtime" in metrics
    # the DocRED scores equal those of the standalone predictor on the same model
    expected = score_predictions(predict(trainer.model, dev, tokenizer, max_seq_length=256, progress=False), dev, train=train_docs)
    assert expected.f1 > 0
    assert metrics["eval_dev_f1"] == round(expected.f1, 6) and metrics["eval_dev_ign_f1"] == round(expected.ign_f1, 6)
    assert metrics["eval_dev_f1_plus_ign_f1"] == round(expected.f1 + expected.ign_f1, 6)
    # per-pair feature tensors (pair representations, group-bilinear factors) are never gathered at inference
    assert trainer.model.config.keys_to_ignore_at_inference == ["pair_representations", "bilinear_factors"]
    logged = [e for e in trainer.state.log_history if "eval_dev_f1" in e]
    assert len(logged) == 1 and logged[0]["eval_dev_loss"] == metrics["eval_dev_loss"]
    # a list of documents given to evaluate is scored too
    assert trainer.compute_metrics is compute_metrics
    again = trainer.evaluate(eval_dataset=dev[:2], metric_key_prefix="part")
    part = score_predictions(predict(trainer.model, dev[:2], tokenizer, max_seq_length=256, progress=False), dev[:2])
    assert again["part_f1"] == round(part.f1, 6) and "part_ign_f1" in again and again["part_documents"] == 2


def test_model_card_names_encoder_datasets_evrt_and_scores(tmp_path, encoder_dir, tokenizer, dev, train_docs):
    trainer = _trainer(tmp_path, encoder_dir, tokenizer, dev, train_docs)
    metrics = trainer.evaluate()
    trainer.create_model_card(
        dataset=["envre/redocred_train_twins", str(tmp_path / "local" / "train.json")],
        eval_datasets={"dev": "thunlp/docred"},
        model_name="atlop-evrt-tiny",
    )
    text = (tmp_path / "out" / "README.md").read_text()
    assert str(tmp_path) not in text and str(encoder_dir) not in text
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["datasets"] == ["envre/redocred_train_twins"] and "base_model" not in meta  # a local encoder folder
    assert f"`{encoder_dir.name}`" in text and "train.json" in text
    [index] = meta["model-index"]
    assert index["name"] == "atlop-evrt-tiny"
    results = {(r["dataset"]["type"], m["type"]): m["value"] for r in index["results"] for m in r["metrics"]}
    assert results[("thunlp/docred", "f1")] == round(100 * metrics["eval_dev_f1"], 2)
    assert results[("thunlp/docred", "ign_f1")] == round(100 * metrics["eval_dev_ign_f1"], 2)
    assert "`evrt`: True" in text and "`evrt_alpha`" in text and "evrt" in meta["tags"]
    assert "trust_remote_code=True" in text


def test_push_to_hub_uploads_the_project_card(tmp_path, encoder_dir, tokenizer, dev, train_docs, monkeypatch):
    import huggingface_hub.constants as hub_constants

    with LocalHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setattr(hub_constants, "ENDPOINT", hub.endpoint)
        # transformers keeps one HfApi, made with the endpoint of its first use (maybe an earlier test's)
        monkeypatch.setattr(transformers.utils.hub, "_hf_api", None)
        trainer = _trainer(tmp_path, encoder_dir, tokenizer, dev, train_docs, args={
            "push_to_hub": True, "hub_model_id": "envre/atlop-evrt-tiny", "hub_token": "hf_trainer_token",
            "hub_strategy": "end"})
        trainer.evaluate()
        trainer.push_to_hub(dataset="envre/redocred_train_twins", eval_datasets={"dev": "thunlp/docred"})
        files = hub.files[("model", "envre/atlop-evrt-tiny")]
    card = files["README.md"].decode()
    assert "fine-tuned version of" not in card and "model-index" in card and 'from_pretrained("envre/atlop-evrt-tiny"' in card
    assert {"config.json", "model.safetensors", "configuration_docre.py", "modeling_atlop.py"} <= set(files)
    # Trainer pickles the arguments into the upload: the token is in none of its files (nor in the card)
    assert "training_args.bin" in files and b"hub_model_id" in files["training_args.bin"]
    assert not [name for name, data in files.items() if b"hf_trainer_token" in data]

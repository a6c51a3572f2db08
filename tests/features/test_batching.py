"""Length-aware batching (training sampler, sorted prediction batches) and the CPU inference options."""

from __future__ import annotations

import json
import random

import pytest
import torch
from _training_helpers import tiny_model

from envre_hf.features import feature_length, featurize_document, length_sorted_batches
from envre_hf.models.prediction import iter_logits, predict, quantize_int8


@pytest.fixture(scope="module")
def docs(redocred_dev):
    """Seven dev documents in file order (their lengths are not sorted)."""
    return [d for d in redocred_dev[:60] if 4 <= d.num_entities <= 12][:7]


def _model(tokenizer):
    model = tiny_model(tokenizer, max_positions=128, dropout=0.1)
    with torch.no_grad():  # make some relations fire, so that the rows to order are many
        model.bilinear.bias[0] = -0.05
    return model.eval()


def test_length_sorted_batches_cover_every_index_once_and_group_lengths():
    rng = random.Random(0)
    lengths = [rng.randint(50, 900) for _ in range(23)]
    batches = length_sorted_batches(lengths, 4)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(23)) and all(len(b) == 4 for b in batches[:-1])
    seen = [lengths[i] for i in flat]
    assert seen == sorted(lengths, reverse=True)  # longest first, no batch mixes far-apart lengths
    with pytest.raises(ValueError):
        length_sorted_batches(lengths, 0)


def test_pairs_are_sampled_as_one_item_at_the_longer_length():
    original = {"input_ids": [1] * 300}
    assert feature_length({"original": original, "twin": {"input_ids": [1] * 320}}) == 320
    assert feature_length(original) == 300
    with pytest.raises(KeyError):
        feature_length({"text": "x"})


def test_sorted_batches_give_the_unsorted_logits_in_input_order(tokenizer, docs):
    model = _model(tokenizer)
    features = [featurize_document(d, tokenizer) for d in docs]
    lengths = [len(f["input_ids"]) for f in features]
    assert lengths != sorted(lengths) and lengths != sorted(lengths, reverse=True)
    pad = tokenizer.pad_token_id
    fast = list(iter_logits(model, features, pad, batch_size=3, progress=False))
    assert [i for i, _ in fast] != list(range(len(docs)))  # really reordered
    plain = dict(iter_logits(model, features, pad, batch_size=3, progress=False, sort_by_length=False))
    for i, logits in fast:
        assert torch.allclose(logits, plain[i], atol=1e-5)
    rows = predict(model, docs, tokenizer, batch_size=3, progress=False)
    one_by_one = [row for d in docs for row in predict(model, [d], tokenizer, batch_size=1, progress=False)]
    assert len(rows) > len(docs) and rows == one_by_one


def test_bf16_autocast_and_int8_stay_close_to_float(tokenizer, docs):
    model = _model(tokenizer)
    features = [featurize_document(d, tokenizer) for d in docs[:3]]
    pad = tokenizer.pad_token_id
    reference = dict(iter_logits(model, features, pad, progress=False))
    bf16 = dict(iter_logits(model, features, pad, progress=False, autocast="bf16-force"))  # bf16 on any CPU
    with pytest.raises(ValueError):
        list(iter_logits(model, features, pad, progress=False, autocast="int4"))
    quantize_int8(model)
    assert type(model.encoder.transformer.encoder.layer[0].attention.self.query).__module__.startswith("torch.ao.nn.quantized")
    int8 = dict(iter_logits(model, features, pad, progress=False))
    for i in reference:
        scale = reference[i].abs().max()
        assert bf16[i].dtype == torch.float32 and (bf16[i] - reference[i]).abs().max() < 0.05 * scale
        assert (int8[i] - reference[i]).abs().max() < 0.05 * scale
        assert not torch.equal(int8[i], reference[i])


def test_envre_evaluate_model_quantized(tokenizer, docs, tmp_path, capsys):
    from envre_hf.cli.main import main
    from envre_hf.documents import write_documents

    model = _model(tokenizer)
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    write_documents(docs[:3], tmp_path / "gold.json")
    argv = ["evaluate", "--model", str(tmp_path / "model"), "--gold", str(tmp_path / "gold.json"), "--quantize", "int8"]
    assert main(argv + ["--save-predictions", str(tmp_path / "p.json")]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert 0 <= scores["f1"] <= 1 and (tmp_path / "p.json").exists()
    assert main(argv[:-2] + ["--bf16"]) == 0
    assert "f1" in json.loads(capsys.readouterr().out)


def test_envre_evaluate_env_runs_both_sets_under_bf16(tokenizer, docs, tmp_path, capsys, monkeypatch):
    """``--bf16`` reaches the predictions of the original and the renamed set of an ``--env`` report."""
    import envre_hf.models.prediction as prediction_module
    from envre_hf.cli.main import main
    from envre_hf.documents import write_documents

    model = _model(tokenizer)
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    write_documents(docs[:2], tmp_path / "gold.json")
    seen = []
    real = prediction_module.iter_logits  # under predict and under the robustness report's predict_sets

    def spy(*args, **kwargs):
        seen.append(kwargs.get("autocast"))
        return real(*args, **kwargs)

    monkeypatch.setattr(prediction_module, "iter_logits", spy)
    gold = str(tmp_path / "gold.json")
    argv = ["evaluate", "--model", str(tmp_path / "model"), "--gold", gold, "--env", gold]
    assert main(argv + ["--bf16"]) == 0
    assert seen == ["bf16", "bf16"]
    assert main(argv) == 0
    assert seen[2:] == [None, None]
    assert "|" in capsys.readouterr().out


def test_prediction_runs_a_training_model_in_eval_mode_and_gives_it_back_in_training_mode(tokenizer, docs):
    """Dropout must be off while predicting (same logits as in eval mode), and the caller's mode restored."""
    model = _model(tokenizer)  # BERT dropout 0.1
    features = [featurize_document(d, tokenizer) for d in docs[:2]]
    pad = tokenizer.pad_token_id
    reference = dict(iter_logits(model, features, pad, progress=False))
    model.train()
    again = dict(iter_logits(model, features, pad, progress=False))
    assert model.training
    for i in reference:
        assert torch.equal(reference[i], again[i])


def test_predict_shows_progress_bars_only_when_asked(tokenizer, docs, capfd):
    from envre_hf.models.prediction import predict

    model = _model(tokenizer)
    predict(model, docs[:2], tokenizer, progress=False)
    assert "Featurizing" not in capfd.readouterr().err
    predict(model, docs[:2], tokenizer, progress=True)
    err = capfd.readouterr().err
    assert "Featurizing" in err and "Predicting" in err

"""The pair budget: pairs scored in chunks and batches cut by pairs give the logits (and, for ATLOP, the
gradients) of scoring every pair at once, and no model call holds more pairs than the budget."""

from __future__ import annotations

import pytest
import torch
from _training_helpers import tiny_model

from envre_hf.features import DocRECollator, featurize_document, length_sorted_batches
from envre_hf.features.batching import budget_batches
from envre_hf.models.modeling_docre import pair_chunks
from envre_hf.models.prediction import iter_logits


@pytest.fixture(scope="module")
def docs(redocred_dev):
    return [d for d in redocred_dev[:60] if 6 <= d.num_entities <= 12][:3]


def _batch(tokenizer, docs):
    feats = [featurize_document(d, tokenizer) for d in docs]
    return DocRECollator(tokenizer.pad_token_id)(feats)


def _forward(model, batch, **kw):
    return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], entity_pos=batch["entity_pos"],
                 hts=batch["hts"], **kw)


@pytest.mark.parametrize("family", ["atlop", "docunet", "kd_docre"])
def test_chunked_pairs_give_the_logits_of_all_pairs_at_once(tokenizer, docs, family):
    model = tiny_model(tokenizer, family, max_positions=128).eval()
    batch = _batch(tokenizer, docs)
    n_pairs = sum(len(h) for h in batch["hts"])
    with torch.inference_mode():
        whole = _forward(model, batch, output_pair_representations=False).logits
        for budget in (7, 50, n_pairs - 1):  # chunks cut inside documents and across them
            chunked = _forward(model, batch, output_pair_representations=False, pair_budget=budget).logits
            assert chunked.shape == whole.shape and torch.allclose(chunked, whole, atol=1e-5)


def test_atlop_chunks_keep_features_and_gradients(tokenizer, docs):
    model = tiny_model(tokenizer, max_positions=128)
    batch = _batch(tokenizer, docs[:2])
    labels = batch["labels"]
    outs, grads = [], []
    for budget in (None, 13):
        model.zero_grad()
        out = _forward(model, batch, labels=labels, pair_budget=budget)
        out.loss.backward()
        outs.append(out)
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert torch.allclose(outs[0].pair_representations, outs[1].pair_representations, atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(outs[0].bilinear_factors, outs[1].bilinear_factors))
    assert grads[0].keys() == grads[1].keys() and "encoder.transformer.embeddings.word_embeddings.weight" in grads[0]
    for name, g in grads[0].items():
        assert torch.allclose(g, grads[1][name], atol=1e-6, rtol=1e-4), name


def test_batches_are_cut_by_pairs_as_well_as_by_documents():
    lengths, pairs = [100, 400, 300, 200, 250], [10, 900, 30, 20, 40]
    assert length_sorted_batches(lengths, 4) == [[1, 2, 4, 3], [0]]
    # 900 pairs exceed the budget of 60: that document is alone; the others fill batches up to 60 pairs
    assert length_sorted_batches(lengths, 4, pairs, 60) == [[1], [2], [4, 3], [0]]
    assert budget_batches(range(5), 2, pairs, 1000) == [[0, 1], [2, 3], [4]]
    for bad in (0, -3):
        with pytest.raises(ValueError, match="pair_budget"):
            budget_batches(range(5), 2, pairs, bad)
        with pytest.raises(ValueError, match="pair_budget"):
            pair_chunks(10, bad)
    assert pair_chunks(10, 4) == [slice(0, 4), slice(4, 8), slice(8, 10)] and pair_chunks(10, None) == [slice(0, 10)]


def test_prediction_under_a_budget_scores_as_without_and_never_holds_more_pairs(tokenizer, docs, monkeypatch):
    model = tiny_model(tokenizer, max_positions=128).eval()
    features = [featurize_document(d, tokenizer) for d in docs]
    pad = tokenizer.pad_token_id
    free = dict(iter_logits(model, features, pad, batch_size=3, progress=False, pair_budget=None))
    calls = []
    real = model.forward

    def spy(*args, **kwargs):
        calls.append((sum(len(h) for h in kwargs["hts"]), len(kwargs["hts"]), kwargs["pair_budget"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "forward", spy)
    budget = max(len(f["hts"]) for f in features) - 1  # the largest document is over it, alone and chunked
    bounded = dict(iter_logits(model, features, pad, batch_size=3, progress=False, pair_budget=budget))
    assert all(torch.allclose(bounded[i], free[i], atol=1e-5) for i in free)
    assert len(calls) > 1 and all(budget_ == budget for _, _, budget_ in calls)
    assert all(pairs <= budget or docs_ == 1 for pairs, docs_, _ in calls)

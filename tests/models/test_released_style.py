"""Our ATLOP/NCRL model against the benchmark's restatement of the released code's computation
(benchmarks/_released_style.py): same logits and loss on the same batch, one-pass and windowed.

This keeps the "vs the released code" benchmark honest (it times the same computation our model does)
and checks our model against the released algorithm, k-window merge included (equal while k = 2).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
import torch
from transformers import BertConfig

from _encoder_reference import eager

from envre_hf.features import DocRECollator
from envre_hf.models import DocREConfig, DocREModel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _released_style import ReleasedStyleATLOP, released_batches, released_collate  # noqa: E402

CLS, SEP, VOCAB, LABELS = 2, 3, 50, 97


def _feature(rng: random.Random, length: int, n_entities: int) -> dict:
    """A random document: ids between [CLS] and [SEP], entities with one to three mentions, multi-hot labels."""
    ids = [CLS] + [rng.randrange(5, VOCAB) for _ in range(length - 2)] + [SEP]
    starts = rng.sample(range(1, length - 2), 2 * n_entities)
    entity_pos = []
    for e in range(n_entities):
        mentions = starts[e :: n_entities][: 1 + e % 3]
        entity_pos.append([[s, s + 2] for s in sorted(mentions)])
    hts = [[h, t] for h in range(n_entities) for t in range(n_entities) if h != t]
    labels = []
    for _ in hts:
        row = [0] * LABELS
        if rng.random() < 0.3:
            for r in rng.sample(range(1, LABELS), rng.randint(1, 2)):
                row[r] = 1
        else:
            row[0] = 1
        labels.append(row)
    return {"input_ids": ids, "entity_pos": entity_pos, "hts": hts, "labels": labels}


def _model(head_type: str, window: int) -> DocREModel:
    torch.manual_seed(0)
    encoder = BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=window, pad_token_id=0,
    )
    return DocREModel(DocREConfig(encoder=encoder, head_type=head_type, emb_size=32, block_size=8)).eval()


@pytest.mark.parametrize("head_type", ["atlop", "ncrl"])
@pytest.mark.parametrize("window", [48, 128], ids=["windowed", "one-pass"])
def test_released_restatement_equals_our_model(head_type, window):
    rng = random.Random(window)
    # with a 48-token window: 70 and 60 tokens -> two windows each (our k = 2), 30 -> one, padded past the window
    feats = [_feature(rng, n, k) for n, k in ((70, 5), (30, 3), (60, 4))]
    model = _model(head_type, window)
    released = ReleasedStyleATLOP(model, CLS, SEP)
    batch = DocRECollator(0)(feats)
    with torch.no_grad():
        loss, decoded, logits, features = released(released_collate(feats))
        ours = model(**batch)
        with eager(model):
            eager_out = model(**batch)
    assert logits.shape == ours.logits.shape == (sum(len(f["hts"]) for f in feats), LABELS)
    torch.testing.assert_close(logits, ours.logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(logits, eager_out.logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(features, ours.pair_representations, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(loss, ours.loss, rtol=1e-4, atol=1e-5)
    assert torch.equal(decoded, model.decode(logits))


def test_released_restatement_trains_the_same_gradients():
    feats = [_feature(random.Random(1), n, k) for n, k in ((70, 4), (40, 3))]
    model = _model("ncrl", 48).train()
    for p in model.modules():  # dropout off, so both passes see the same network
        if isinstance(p, torch.nn.Dropout):
            p.p = 0.0
    released = ReleasedStyleATLOP(model, CLS, SEP)
    released(released_collate(feats))[0].backward()
    theirs = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    model(**DocRECollator(0)(feats)).loss.backward()
    assert theirs.keys() == {n for n, p in model.named_parameters() if p.grad is not None}
    for name, grad in theirs.items():
        torch.testing.assert_close(grad, dict(model.named_parameters())[name].grad, rtol=1e-3, atol=1e-6, msg=name)


def test_released_batches_keep_input_order_and_pad_with_zero():
    feats = [_feature(random.Random(2), n, 3) for n in (20, 40, 30)]
    first, second = released_batches(feats, 2)
    assert first.input_ids.shape == (2, 40) and second.input_ids.shape == (1, 30)
    assert first.input_ids[0, :20].tolist() == feats[0]["input_ids"] and not first.input_ids[0, 20:].any()
    assert first.input_mask.dtype == torch.float and first.input_mask.sum(1).tolist() == [20.0, 40.0]


def test_released_restatement_refuses_other_families():
    torch.manual_seed(0)
    encoder = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64)
    model = DocREModel(DocREConfig(encoder=encoder, head_type="docunet", emb_size=32, block_size=8))
    with pytest.raises(ValueError, match="docunet"):
        ReleasedStyleATLOP(model, CLS, SEP)

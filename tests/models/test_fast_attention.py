"""The fast encoder path (SDPA + last-layer attention rows at mention starts) against the eager reference.

Same real Re-DocRED documents for every encoder style; with a 64-token window they are windowed long
documents, with a 512 window one pass each.
"""

from __future__ import annotations

import os

import pytest
import torch
from transformers import BertConfig, DebertaV2Config, RobertaConfig

from envre_hf.features import DocRECollator, featurize_document
from envre_hf.models import DocREConfig, DocREModel
from envre_hf.models.modeling_docre import FAST_ATTENTION, attention_rows, mention_index


@pytest.fixture(scope="module")
def batch(redocred_dev, tokenizer):
    """Three dev documents of different lengths (padding in the batch), all shorter than 500 word pieces."""
    docs = [d for d in redocred_dev[:40] if len(d.relations) >= 3]
    feats = [featurize_document(d, tokenizer) for d in docs]
    feats = sorted((f for f in feats if len(f["input_ids"]) <= 500), key=lambda f: len(f["input_ids"]))
    return DocRECollator(tokenizer)([feats[0], feats[len(feats) // 2], feats[-1]])


def _encoder(style: str, vocab: int, positions: int):
    common = dict(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    if style == "bert":
        return BertConfig(max_position_embeddings=positions, **common)
    if style == "roberta":  # positions start after the padding index: window = positions - 2
        return RobertaConfig(max_position_embeddings=positions + 2, pad_token_id=1, **common)
    return DebertaV2Config(
        max_position_embeddings=positions,
        relative_attention=True,
        pos_att_type=["p2c", "c2p"],
        position_buckets=32,
        position_biased_input=False,
        **common,
    )


def _model(style: str, vocab: int, positions: int, head_type: str = "atlop") -> torch.nn.Module:
    torch.manual_seed(0)
    config = DocREConfig(encoder=_encoder(style, vocab, positions), head_type=head_type, emb_size=32, block_size=8)
    return DocREModel(config)


STYLES = ["bert", "roberta", "deberta"]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("positions", [64, 512], ids=["windowed", "one-pass"])
@pytest.mark.parametrize("unpadded", [True, False], ids=["unpadded", "padded"])
def test_fast_logits_equal_eager(tokenizer, batch, style, positions, unpadded):
    model = _model(style, tokenizer.vocab_size, positions).eval()
    model.unpadded = unpadded
    windowed = batch["input_ids"].shape[1] > model.config.window
    assert windowed == (positions == 64)
    with torch.no_grad():
        seq, rows = model.encode(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
        fast = model(**batch).logits
        with model.eager_attention():
            eager_seq, full = model.encode(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
            eager = model(**batch).logits
    if style != "deberta":  # AttentionInterface encoders never fall back to running eager
        def no_eager(self):
            raise AssertionError("the fast path fell back to eager attention")

        with pytest.MonkeyPatch.context() as patch, torch.no_grad():
            patch.setattr(type(model), "_eager_encoder", no_eager)
            assert torch.equal(model.encode(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])[1], rows)
    idx = mention_index(batch["entity_pos"])
    assert rows.dim() == 3 and rows.shape[0] == idx.pos.numel()  # only the mention rows, never L x L
    assert full.dim() == 4
    real = batch["attention_mask"].bool()  # the hidden states of padding are never read
    assert torch.allclose(seq[real], eager_seq[real], atol=1e-5)
    if unpadded:
        assert seq[~real].abs().max() == 0 and (~real).any()
    assert torch.allclose(rows, full[idx.doc, :, idx.pos], atol=1e-6)
    assert torch.allclose(fast, eager, atol=1e-5, rtol=1e-4)
    assert fast.abs().max() > 0  # a meaningful comparison


@pytest.mark.parametrize("head_type", ["kd_docre", "docunet"])
def test_fast_path_other_families(tokenizer, batch, head_type):
    model = _model("bert", tokenizer.vocab_size, 64, head_type).eval()
    with torch.no_grad():
        fast = model(**batch).logits
        model.unpadded = False
        padded = model(**batch).logits
        with model.eager_attention():
            eager = model(**batch).logits
    assert torch.allclose(fast, eager, atol=1e-5, rtol=1e-4)
    assert torch.allclose(padded, eager, atol=1e-5, rtol=1e-4)


def test_unpadded_only_for_right_padded_cpu_batches(tokenizer, batch):
    model = _model("bert", tokenizer.vocab_size, 512)
    mask = batch["attention_mask"]
    assert model._padded_lengths(mask) == mask.sum(1).tolist()
    assert model._padded_lengths(mask[:1]) is None  # one document
    assert model._padded_lengths(torch.ones_like(mask)) is None  # no padding
    assert model._padded_lengths(mask.flip(1)) is None  # left padding: encoded as a padded batch
    model.unpadded = None  # the default: training on CPU only
    model.eval()
    assert model._padded_lengths(mask) is None
    model.train()
    assert model._padded_lengths(mask) == mask.sum(1).tolist()
    model.unpadded = False
    assert model._padded_lengths(mask) is None


@pytest.mark.parametrize("head_type", ["atlop", "docunet"])
def test_prediction_logits_without_pair_representations(tokenizer, batch, head_type):
    """Prediction's forward computes the group-bilinear logits chunk by chunk, never holding the features."""
    model = _model("bert", tokenizer.vocab_size, 512, head_type).eval()
    with torch.no_grad():
        full = model(**batch)
        chunked = model(**batch, output_pair_representations=False)
    assert full.logits.shape[0] > 256  # more pairs than one chunk
    assert full.pair_representations is not None and chunked.pair_representations is None
    assert torch.allclose(chunked.logits, full.logits, atol=1e-6)


def test_training_attention_dropout_is_eager_attention(tokenizer, batch):
    """With attention dropout in training, each document's hidden states and last-layer rows are those of
    transformers' own eager attention under the same random draws (dropout masks included)."""
    torch.manual_seed(0)
    encoder = _encoder("bert", tokenizer.vocab_size, 512)
    encoder.attention_probs_dropout_prob = encoder.hidden_dropout_prob = 0.3
    model = DocREModel(DocREConfig(encoder=encoder, head_type="atlop", emb_size=32, block_size=8)).train()
    lengths = batch["attention_mask"].sum(1).tolist()
    torch.manual_seed(7)
    seq, rows = model.encode(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
    torch.manual_seed(7)
    offset = 0
    with model._eager_encoder():
        for b, n in enumerate(lengths):
            out = model.encoder(input_ids=batch["input_ids"][b : b + 1, :n], output_attentions=True)
            idx = mention_index(batch["entity_pos"][b : b + 1])
            assert torch.allclose(seq[b, :n], out.last_hidden_state[0], atol=1e-5)
            expected = out.attentions[-1][idx.doc, :, idx.pos]
            assert torch.allclose(rows[offset : offset + len(idx.pos), :, :n], expected, atol=1e-6)
            assert (expected == 0).any()  # dropout was applied to the rows too
            offset += len(idx.pos)
    assert offset == rows.shape[0]


@pytest.mark.parametrize("style", ["bert", "deberta"])
def test_fast_gradients_equal_eager(tokenizer, batch, style):
    """Training: same loss and same gradients for every parameter (dropout off)."""
    model = _model(style, tokenizer.vocab_size, 64).train()
    grads = []
    for path in ("fast", "eager"):
        model.attention_path = path
        model.zero_grad()
        loss = model(**batch).loss
        loss.backward()
        grads.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (loss_fast, g_fast), (loss_eager, g_eager) = grads
    assert torch.allclose(loss_fast, loss_eager, atol=1e-6)
    assert g_fast.keys() == g_eager.keys() and len(g_fast) > 10
    for name in g_fast:
        assert torch.allclose(g_fast[name], g_eager[name], atol=1e-5, rtol=1e-3), name


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradient_checkpointing_keeps_the_rows_gradients(tokenizer, batch, reentrant):
    model = _model("bert", tokenizer.vocab_size, 64).train()
    model.attention_path = "eager"
    model(**batch).loss.backward()
    reference = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    model.attention_path = "fast"
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": reentrant})
    model(**batch).loss.backward()
    for name, grad in reference.items():
        assert torch.allclose(model.get_parameter(name).grad, grad, atol=1e-5, rtol=1e-3), name


def test_encoder_runs_sdpa_and_eager_block_restores(tokenizer, tmp_path):
    model = _model("bert", tokenizer.vocab_size, 64)
    assert model.encoder.config._attn_implementation == FAST_ATTENTION
    model.save_pretrained(tmp_path)
    assert FAST_ATTENTION not in (tmp_path / "config.json").read_text()  # a runtime choice, never saved
    assert DocREModel.from_pretrained(tmp_path).encoder.config._attn_implementation == FAST_ATTENTION
    with model.eager_attention():
        assert model.encoder.config._attn_implementation == "eager" and model.attention_path == "eager"
    assert model.encoder.config._attn_implementation == FAST_ATTENTION and model.attention_path == "fast"


def test_attention_rows_by_hand():
    """Rows requested in any order, with a boolean and an additive mask, equal eager softmax rows."""
    torch.manual_seed(1)
    q, k = torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 4)
    keep = torch.ones(2, 1, 7, 7, dtype=torch.bool)
    keep[1, :, :, 5:] = False
    additive = torch.zeros(2, 1, 7, 7).masked_fill(~keep, torch.finfo(torch.float32).min)
    full = torch.softmax(q @ k.transpose(-1, -2) * 0.5 + additive, -1)
    doc, pos = torch.tensor([1, 0, 1, 0, 0]), torch.tensor([3, 6, 0, 0, 6])
    for mask in (keep, additive, None):
        rows = attention_rows(q, k, mask, doc, pos, 0.5)
        expected = full if mask is not None else torch.softmax(q @ k.transpose(-1, -2) * 0.5, -1)
        assert torch.allclose(rows, expected[doc, :, pos], atol=1e-6)
    assert attention_rows(q, k, keep, doc[:0], pos[:0]).shape == (0, 3, 7)


def test_pair_attention_equals_the_gathered_product():
    """Per-document products over tokens give the gathered ``(att[h] * att[t]).mean(heads)`` for pairs in
    any order, documents without pairs or entities included, with gradients."""
    from envre_hf.models.modeling_docre import pair_attention

    torch.manual_seed(3)
    per_doc = [3, 0, 4, 2]
    att = torch.rand(sum(per_doc), 5, 11, dtype=torch.float64, requires_grad=True)
    pairs = [(2, 0), (0, 1), (1, 2), (6, 3), (3, 6), (5, 4), (4, 4)]  # global indices; doc 3 has no pair
    h_idx, t_idx = torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs])
    pair_doc = torch.tensor([0, 0, 0, 2, 2, 2, 2])
    fast = pair_attention(att, h_idx, t_idx, pair_doc, per_doc)
    gathered = (att[h_idx] * att[t_idx]).mean(1)
    assert torch.allclose(fast, gathered, atol=1e-12)
    assert not torch.allclose(fast[0], fast[1])  # distinct pairs, distinct rows
    weights = torch.rand_like(gathered)
    (grad_fast,) = torch.autograd.grad((fast * weights).sum(), att)
    (grad_gathered,) = torch.autograd.grad((gathered * weights).sum(), att)
    assert torch.allclose(grad_fast, grad_gathered, atol=1e-12)
    assert pair_attention(att, h_idx[:0], t_idx[:0], pair_doc[:0], per_doc).shape == (0, 11)


def test_unpadded_training_without_token_zero_and_with_embedding_hooks(tokenizer, batch):
    """Per-document training looks word embeddings up in the batch's rows: a first step whose batch lacks
    token 0 (the attention dry run's) works, and so does an embedding with a forward hook (NEFTune-style
    noise), which then sees only real lookups; losses and gradients equal the padded batch's."""
    torch.manual_seed(0)
    config = DocREConfig(encoder=_encoder("bert", tokenizer.vocab_size, 512), head_type="atlop", emb_size=32, block_size=8)
    config.encoder.pad_token_id = 1
    ids = batch["input_ids"].clone()
    ids[ids == 0] = 2  # no token 0 anywhere
    ids[~batch["attention_mask"].bool()] = 1  # padded with 1
    inputs = {**batch, "input_ids": ids}
    results = {}
    for unpadded in (True, False):
        torch.manual_seed(0)
        model = DocREModel(config).train()  # fresh: its first call makes the dry run
        model.unpadded = unpadded
        loss = model(**inputs).loss
        loss.backward()
        results[unpadded] = (loss.detach(), model.encoder.get_input_embeddings().weight.grad.clone())
    assert torch.allclose(results[True][0], results[False][0], atol=1e-6)
    assert torch.allclose(results[True][1], results[False][1], atol=1e-6)

    model = DocREModel(config).train()
    seen = []
    model.encoder.get_input_embeddings().register_forward_hook(lambda _m, _a, out: seen.append(out.dim()))
    model(**inputs).loss.backward()
    assert seen and set(seen) == {3}  # per-document (1 x n x hidden) lookups only

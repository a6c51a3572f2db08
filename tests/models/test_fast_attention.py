"""The encoder's two routes against the eager reference of ``tests/_encoder_reference.py``: the fast one
(SDPA + the last layer's attention rows at mention starts, for BERT and RoBERTa style encoders) and the
``output_attentions`` one (DeBERTa style encoders, or any encoder set to eager attention).

Same real Re-DocRED documents for every encoder style; with a 64-token window they are windowed long
documents, with a 512 window one pass each.
"""

from __future__ import annotations

import os

import pytest
import torch
from transformers import BertConfig, DebertaV2Config, RobertaConfig

from _encoder_reference import eager, pool_by_loops, reference_encode, reference_encoding

from envre_hf.features import DocRECollator, featurize_document
from envre_hf.models import DocREConfig, DocREModel
from envre_hf.models import attention as attention_module
from envre_hf.models.attention import FAST_ATTENTION, attention_rows
from envre_hf.models.encoder import mention_index


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
def test_encoding_and_logits_equal_the_eager_reference(tokenizer, batch, style, positions, unpadded):
    model = _model(style, tokenizer.vocab_size, positions).eval()
    model.encoder.unpadded = unpadded
    windowed = batch["input_ids"].shape[1] > model.config.window
    assert windowed == (positions == 64)
    fast = style != "deberta"  # DeBERTa's attention is not on transformers' AttentionInterface
    assert model.encoder.transformer.config._attn_implementation == (FAST_ATTENTION if fast else "eager")
    inputs = batch["input_ids"], batch["attention_mask"], batch["entity_pos"]
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return attention_rows(*args, **kwargs)

    with torch.no_grad():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(attention_module, "attention_rows", counted)
            encoded = model.encoder(*inputs)
        logits = model(**batch).logits
        reference = reference_encode(model, *inputs)
        with reference_encoding(model):
            reference_logits = model(**batch).logits
        with eager(model):  # the output_attentions route, for any encoder
            eager_encoded = model.encoder(*inputs)
    # the rows are computed in the last layer only, once per encoder call (per document when unpadded)
    assert len(calls) == ((len(batch["hts"]) if unpadded else 1) if fast else 0)
    n_entities = sum(len(e) for e in batch["entity_pos"])
    assert encoded.entity_attention.shape == (n_entities, 4, batch["input_ids"].shape[1])  # never L x L
    real = batch["attention_mask"].bool()  # the hidden states of padding are never read
    for out in (encoded, eager_encoded):
        assert torch.allclose(out.last_hidden_state[real], reference.last_hidden_state[real], atol=1e-5)
        assert torch.allclose(out.entity_embeddings, reference.entity_embeddings, atol=1e-5)
        assert torch.allclose(out.entity_attention, reference.entity_attention, atol=1e-6)
    if unpadded:
        assert encoded.last_hidden_state[~real].abs().max() == 0 and (~real).any()
    assert torch.allclose(logits, reference_logits, atol=1e-5, rtol=1e-4)
    assert logits.abs().max() > 0  # a meaningful comparison


@pytest.mark.parametrize("head_type", ["kd_docre", "docunet"])
def test_fast_path_other_families(tokenizer, batch, head_type):
    model = _model("bert", tokenizer.vocab_size, 64, head_type).eval()
    with torch.no_grad():
        fast = model(**batch).logits
        model.encoder.unpadded = False
        padded = model(**batch).logits
        with reference_encoding(model):
            reference = model(**batch).logits
    assert torch.allclose(fast, reference, atol=1e-5, rtol=1e-4)
    assert torch.allclose(padded, reference, atol=1e-5, rtol=1e-4)


def test_unpadded_only_for_right_padded_cpu_batches(tokenizer, batch):
    encoder = _model("bert", tokenizer.vocab_size, 512).encoder
    mask = batch["attention_mask"]
    encoder.unpadded = True
    assert encoder.unpadded_lengths(mask) == mask.sum(1).tolist()
    assert encoder.unpadded_lengths(mask[:1]) is None  # one document
    assert encoder.unpadded_lengths(torch.ones_like(mask)) is None  # no padding
    assert encoder.unpadded_lengths(mask.flip(1)) is None  # left padding: encoded as a padded batch
    encoder.unpadded = None  # the default: training on CPU only
    encoder.eval()
    assert encoder.unpadded_lengths(mask) is None
    encoder.train()
    assert encoder.unpadded_lengths(mask) == mask.sum(1).tolist()
    encoder.unpadded = False
    assert encoder.unpadded_lengths(mask) is None


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
    """With attention dropout in training, each document's hidden states and its entities' attention (the mean of
    their last-layer rows) are those of transformers' own eager attention under the same random draws (dropout
    masks included)."""
    torch.manual_seed(0)
    encoder = _encoder("bert", tokenizer.vocab_size, 512)
    encoder.attention_probs_dropout_prob = encoder.hidden_dropout_prob = 0.3
    model = DocREModel(DocREConfig(encoder=encoder, head_type="atlop", emb_size=32, block_size=8)).train()
    lengths = batch["attention_mask"].sum(1).tolist()
    torch.manual_seed(7)
    encoded = model.encoder(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
    torch.manual_seed(7)
    offset = 0
    with eager(model):
        for b, n in enumerate(lengths):
            out = model.encoder.transformer(input_ids=batch["input_ids"][b : b + 1, :n], output_attentions=True)
            assert torch.allclose(encoded.last_hidden_state[b, :n], out.last_hidden_state[0], atol=1e-5)
            _, expected = pool_by_loops(out.last_hidden_state, out.attentions[-1], batch["entity_pos"][b : b + 1])
            entities = len(batch["entity_pos"][b])
            assert torch.allclose(encoded.entity_attention[offset : offset + entities, :, :n], expected, atol=1e-6)
            idx = mention_index(batch["entity_pos"][b : b + 1])
            assert (out.attentions[-1][idx.doc, :, idx.pos] == 0).any()  # dropout was applied to the rows too
            offset += entities
    assert offset == encoded.entity_attention.shape[0]


def _loss_and_gradients(model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad()
    loss = model(**batch).loss
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("checkpointing", [False, True], ids=["plain", "checkpointed"])
def test_training_gradients_equal_the_eager_reference(tokenizer, batch, style, checkpointing):
    """Training on windowed documents: same loss and same gradients for every parameter (dropout off),
    with and without (non-reentrant, transformers' default) gradient checkpointing."""
    model = _model(style, tokenizer.vocab_size, 64).train()
    with reference_encoding(model):
        loss_ref, grads_ref = _loss_and_gradients(model, batch)
    if checkpointing:
        model.activation_checkpointing_enable()
    loss, grads = _loss_and_gradients(model, batch)
    layers = model.encoder.transformer.encoder.layer
    assert all(layer.gradient_checkpointing == checkpointing for layer in layers)  # none left out
    assert torch.allclose(loss, loss_ref, atol=1e-6)
    assert grads.keys() == grads_ref.keys() and len(grads) > 10
    for name in grads:
        assert torch.allclose(grads[name], grads_ref[name], atol=1e-5, rtol=1e-3), name


def test_reentrant_gradient_checkpointing_is_refused(tokenizer, batch):
    """Reentrant checkpointing runs a layer without autograd, which would cut the attention rows from the graph."""
    model = _model("bert", tokenizer.vocab_size, 64).train()
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True})
    with pytest.raises(RuntimeError, match="reentrant gradient checkpointing is not supported"):
        model(**batch)
    with torch.no_grad():  # prediction needs no graph
        assert model(**batch).logits.shape[0] == sum(len(h) for h in batch["hts"])


@pytest.mark.parametrize("style", STYLES)
def test_attention_implementation_is_a_runtime_choice(tokenizer, batch, tmp_path, style):
    """The fast attention is chosen from the encoder's structure (the layer index of its attention modules),
    never saved; ``set_attn_implementation`` switches the encoder to eager attention and back."""
    model = _model(style, tokenizer.vocab_size, 64).eval()
    fast = style != "deberta"
    assert model.encoder.rows_layer == (2 if fast else None)  # the last of the 3 layers
    assert model.encoder.transformer.config._attn_implementation == (FAST_ATTENTION if fast else "eager")
    model.save_pretrained(tmp_path)
    assert FAST_ATTENTION not in (tmp_path / "config.json").read_text()
    loaded = DocREModel.from_pretrained(tmp_path).eval()
    assert loaded.encoder.transformer.config._attn_implementation == model.encoder.transformer.config._attn_implementation
    with torch.no_grad():
        logits = loaded(**batch).logits
        loaded.set_attn_implementation("eager")
        assert loaded.encoder.transformer.config._attn_implementation == "eager"
        assert torch.allclose(loaded(**batch).logits, logits, atol=1e-5, rtol=1e-4)
    if fast:
        loaded.set_attn_implementation(FAST_ATTENTION)
        assert loaded.encoder.transformer.config._attn_implementation == FAST_ATTENTION


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


def test_unpadded_training_looks_word_embeddings_up_once_per_batch(tokenizer, batch):
    """Per-document training looks the word embeddings up once for the whole batch (one dense table gradient
    per batch): losses and gradients equal the padded batch's, and a forward hook on the embedding
    (NEFTune-style noise) sees that one lookup of the padded batch."""
    torch.manual_seed(0)
    encoder = _encoder("roberta", tokenizer.vocab_size, 512)
    config = DocREConfig(encoder=encoder, head_type="atlop", emb_size=32, block_size=8)
    ids = batch["input_ids"].clone()
    ids[~batch["attention_mask"].bool()] = config.encoder.pad_token_id  # RoBERTa numbers positions after padding
    inputs = {**batch, "input_ids": ids}
    results = {}
    for unpadded in (True, False):
        torch.manual_seed(0)
        model = DocREModel(config).train()
        model.encoder.unpadded = unpadded
        seen = []
        model.get_input_embeddings().register_forward_hook(lambda _m, _a, out: seen.append(tuple(out.shape)))
        loss = model(**inputs).loss
        loss.backward()
        results[unpadded] = (loss.detach(), model.get_input_embeddings().weight.grad.clone())
        assert seen == [(*ids.shape, 32)]  # one lookup, of the padded batch
    assert torch.allclose(results[True][0], results[False][0], atol=1e-6)
    assert torch.allclose(results[True][1], results[False][1], atol=1e-6)

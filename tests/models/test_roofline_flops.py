"""The roofline benchmark's FLOP count (benchmarks/bench_roofline.py) against a hand count on a tiny config:
our prediction (every document at its own length, a long one in two windows) and the released computation
(input-order batches padded to the longest, padded windows past the encoder window)."""

from __future__ import annotations

import sys
from pathlib import Path

from transformers import BertConfig

from envre_hf.models import DocREConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_roofline import Dims, input_order_batches, prediction_flops  # noqa: E402

# hidden 4, FFN 8, 2 layers, 2 heads, emb 4, block 2, 3 labels, window 8
DIMS = Dims(hidden=4, intermediate=8, layers=2, heads=2, emb=4, block=2, labels=3, window=8)


def _doc(length: int, entities: int) -> dict:
    hts = [[h, t] for h in range(entities) for t in range(entities) if h != t]
    return {"input_ids": [0] * length, "entity_pos": [[[1 + e, 2 + e]] for e in range(entities)], "hts": hts}


# lengths 5, 7, 10 (past the window of 8); 2, 3, 2 entities -> 2, 6, 2 pairs
DOCS = [_doc(5, 2), _doc(7, 3), _doc(10, 2)]


def _encoder(n: int) -> tuple[int, int]:
    """(linear, attention) FLOPs of one pass: 2 layers x 2 n (4 h^2 + 2 h f) = 512 n; 2 layers x 4 n^2 h = 32 n^2."""
    return 2 * 2 * n * (4 * 16 + 2 * 4 * 8), 2 * 4 * n * n * 4


def test_our_unavoidable_flops_match_a_hand_count():
    flops = prediction_flops(DOCS, DIMS)
    # 10 tokens > window 8: two windows of 8 (content 8, 6 per window, overlap of at least half)
    passes = [5, 7, 8, 8]
    assert flops["encoder_linear"] == sum(_encoder(n)[0] for n in passes) == 2560 + 3584 + 2 * 4096
    assert flops["attention"] == sum(_encoder(n)[1] for n in passes) == 800 + 1568 + 2 * 2048
    # per document at its own length n: pair attention 2 P heads n, context 2 P n h
    assert flops["pair_attention"] == 2 * 2 * 2 * 5 + 2 * 6 * 2 * 7 + 2 * 2 * 2 * 10
    assert flops["context"] == 2 * 2 * 5 * 4 + 2 * 6 * 7 * 4 + 2 * 2 * 10 * 4
    # head and tail extractor: entity half per entity, context half per pair: 2 x 2 (P + E) h emb
    assert flops["extractors"] == 2 * 2 * (4 + 9 + 4) * 4 * 4
    # group bilinear: P emb block products + 2 P (emb block) labels
    assert flops["bilinear"] == 10 * 4 * 2 + 2 * 10 * 8 * 3
    assert flops["total"] == 23312


def test_released_flops_pad_batches_in_input_order():
    assert input_order_batches(3, 2) == [[0, 1], [2]]
    two = prediction_flops(DOCS, DIMS, input_order_batches(3, 2), released=True)
    # batch [5, 7] padded to 7; batch [10] in two windows of 8
    assert two["encoder_linear"] == 2 * _encoder(7)[0] + 2 * _encoder(8)[0]
    assert two["attention"] == 2 * _encoder(7)[1] + 2 * _encoder(8)[1]
    assert two["context"] == 2 * (2 + 6) * 7 * 4 + 2 * 2 * 10 * 4
    assert two["extractors"] == 2 * 2 * 10 * (2 * 4) * 4  # cat([e, c]) per pair
    three = prediction_flops(DOCS, DIMS, input_order_batches(3, 3), released=True)
    # one batch padded to 10 > 8: the two short documents one padded window each, the long one two
    assert three["encoder_linear"] == 4 * _encoder(8)[0]
    assert three["pair_attention"] == 2 * 10 * 2 * 10
    assert three["bilinear"] == prediction_flops(DOCS, DIMS)["bilinear"]
    assert three["total"] > two["total"] > prediction_flops(DOCS, DIMS)["total"]


def test_our_padded_batches_use_the_model_window_plan():
    # a 16-token document needs four windows of 8 (content 14, 6 per window, window starts spread over 14 - 6 = 8
    # positions in steps of at most 3, half a window): ours pads the batch's 5-token document to one window and
    # runs four for the long one; the released code two
    docs = [DOCS[0], _doc(16, 2)]
    ours = prediction_flops(docs, DIMS, [[1, 0]])
    assert ours["encoder_linear"] == 5 * _encoder(8)[0]
    assert ours["extractors"] == 2 * 2 * (4 + 4) * 4 * 4  # our extractor form, padded or not
    assert ours["context"] == 2 * 4 * 16 * 4  # over the padded length
    assert prediction_flops(docs, DIMS, [[1, 0]], released=True)["encoder_linear"] == 3 * _encoder(8)[0]
    # batches of one are the unavoidable count
    assert prediction_flops(DOCS, DIMS, [[0], [1], [2]]) == prediction_flops(DOCS, DIMS)


def test_dims_read_from_a_docre_config():
    encoder = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                         max_position_embeddings=128, pad_token_id=0)
    dims = Dims.of(DocREConfig(encoder=encoder, emb_size=16, block_size=8))
    assert dims == Dims(hidden=32, intermediate=64, layers=2, heads=4, emb=16, block=8, labels=97, window=128)

"""Featurization (markers, spans, pairs, labels) and the collator, on real Re-DocRED."""

from __future__ import annotations

import logging

import pytest
import torch
from _training_helpers import build_roberta_style_tokenizer

from envre_hf.documents import docred_schema, document_quirks, documents_to_dataset
from envre_hf.features import DocRECollator, entity_pairs, featurize_document, pair_index


@pytest.fixture(scope="module")
def bert_tokenizer(tokenizer):
    """The MiniLM (BERT wordpiece) tokenizer, named apart from the RoBERTa-style one below."""
    return tokenizer


@pytest.fixture(scope="module")
def roberta_tokenizer(redocred_dev):
    return build_roberta_style_tokenizer(redocred_dev[:30])


@pytest.mark.parametrize("tok_name", ["bert_tokenizer", "roberta_tokenizer"])
def test_markers_spans_and_special_tokens(request, redocred_dev, tok_name):
    tokenizer = request.getfixturevalue(tok_name)
    for doc in redocred_dev[:20]:
        feat = featurize_document(doc, tokenizer)
        ids = feat["input_ids"]
        assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
        assert len(feat["entity_pos"]) == doc.num_entities
        for entity, spans in zip(doc.entities, feat["entity_pos"]):
            assert len(spans) == len(entity.mentions)
            for mention, (start, end) in zip(entity.mentions, spans):
                assert 0 < start < end < len(ids)
                assert tokenizer.decode([ids[start]]).strip() == "*"
                assert tokenizer.decode([ids[end - 1]]).strip() == "*"
                inner = ids[start + 1 : end - 1]
                if all(tokenizer.decode([i]).strip() != "*" for i in inner):  # no nested mention inside
                    alone = tokenizer(mention.tokens(doc.sents), is_split_into_words=True, add_special_tokens=False)
                    assert inner == alone["input_ids"]


def test_overlapping_mentions_keep_their_own_spans(redocred_dev, redocred_test, bert_tokenizer):
    docs = [d for d in redocred_dev + redocred_test if document_quirks(d).overlapping_mentions]
    assert docs, "real data has overlapping mentions"
    for doc in docs[:10]:
        feat = featurize_document(doc, bert_tokenizer)
        ids = feat["input_ids"]
        for (e1, m1), (e2, m2) in document_quirks(doc).overlapping_mentions:
            a, b = feat["entity_pos"][e1][m1], feat["entity_pos"][e2][m2]
            ma, mb = doc.entities[e1].mentions[m1], doc.entities[e2].mentions[m2]
            # wordpiece spans overlap exactly when token spans do, and nest the same way
            assert a[0] < b[1] and b[0] < a[1]
            assert (a[0] == b[0]) == (ma.start == mb.start)
            assert (a[1] == b[1]) == (ma.end == mb.end)
            for start, end in (a, b):
                assert bert_tokenizer.decode([ids[start]]) == "*"


def test_pairs_and_labels(redocred_dev, bert_tokenizer):
    schema = docred_schema()
    doc = next(d for d in redocred_dev if len(d.relations) > 10)
    feat = featurize_document(doc, bert_tokenizer)
    n = doc.num_entities
    assert feat["hts"] == entity_pairs(n) and len(feat["hts"]) == n * (n - 1)
    labels = torch.tensor(feat["labels"])
    assert labels.shape == (n * (n - 1), schema.num_labels)
    for rel in doc.relations:
        row = pair_index(rel.h, rel.t, n)
        assert feat["hts"][row] == [rel.h, rel.t]
        assert labels[row, schema.rel2index[rel.r]] == 1 and labels[row, 0] == 0
    assert int(labels[:, 1:].sum()) == len(doc.relations)
    assert int(labels[:, 0].sum()) == len(labels) - len({(r.h, r.t) for r in doc.relations})


def test_unlabelled_document_has_no_labels(redocred_dev, bert_tokenizer):
    from dataclasses import replace

    doc = replace(redocred_dev[0], relations=[], has_labels=False)
    feat = featurize_document(doc, bert_tokenizer)
    assert feat["labels"] is None
    batch = DocRECollator(bert_tokenizer)([feat])
    assert "labels" not in batch


def _tiny(sents, mentions, labels=True):
    from envre_hf.documents import from_docred

    raw = {"title": "T", "sents": sents, "vertexSet": [[{"name": n, "pos": [a, b], "sent_id": s, "type": "PER"}]
                                                      for n, s, a, b in mentions]}
    if labels:
        raw["labels"] = []
    return from_docred(raw)


def test_one_entity_no_entities_and_empty_sentences_featurize_and_batch(bert_tokenizer):
    one = _tiny([["Ann", "runs"]], [("Ann", 0, 0, 1)])
    none = _tiny([["Rain", "."]], [])
    gap = _tiny([["Ann"], [], ["Bob"]], [("Ann", 0, 0, 1), ("Bob", 2, 0, 1)])  # an empty middle sentence
    feats = [featurize_document(d, bert_tokenizer) for d in (one, none, gap)]
    assert [f["hts"] for f in feats] == [[], [], [[0, 1], [1, 0]]]
    assert [len(f["labels"]) for f in feats] == [0, 0, 2]
    tokens = bert_tokenizer.convert_ids_to_tokens(feats[2]["input_ids"])
    assert [tokens[s:e] for span in feats[2]["entity_pos"] for s, e in span] == [["*", "ann", "*"], ["*", "bob", "*"]]
    batch = DocRECollator(bert_tokenizer)(feats)
    assert batch["labels"].shape == (2, 97) and batch["labels"][:, 0].tolist() == [1.0, 1.0]  # no relation


def test_no_documents_make_an_empty_dataset():
    from envre_hf.documents import DOCUMENT_FEATURES

    empty = documents_to_dataset([])
    assert len(empty) == 0 and empty.features == DOCUMENT_FEATURES


def test_max_seq_length_drops_and_warns_with_counts(redocred_dev, bert_tokenizer, caplog):
    doc = max(redocred_dev[:100], key=lambda d: sum(len(s) for s in d.sents))
    full = featurize_document(doc, bert_tokenizer)
    assert len(full["input_ids"]) > 256
    with caplog.at_level(logging.WARNING, logger="envre_hf.features.featurize"):
        cut = featurize_document(doc, bert_tokenizer, max_seq_length=256)
    assert len(cut["input_ids"]) == 256 and cut["input_ids"][-1] == bert_tokenizer.sep_token_id
    lost = sum(1 for spans in full["entity_pos"] for s in spans if s[1] > 255)
    assert cut["dropped_mentions"] == lost > 0
    assert all(end <= 255 for spans in cut["entity_pos"] for _, end in spans)
    assert f"dropped {lost} of" in caplog.text and doc.key in caplog.text
    # without a cap nothing is dropped, however long the document
    assert full["dropped_mentions"] == 0


@pytest.mark.parametrize("tok_name", ["bert_tokenizer", "roberta_tokenizer"])
def test_a_max_seq_length_without_room_for_the_document_is_refused(request, tok_name):
    """A cap at or below the special tokens gave [CLS][SEP] or [SEP] alone (1, 2), or the whole document (0)."""
    tokenizer = request.getfixturevalue(tok_name)
    doc = _tiny([["Ann", "runs"]], [("Ann", 0, 0, 1)])
    n_special = tokenizer.num_special_tokens_to_add()
    assert n_special == 2
    for cap in (-1, 0, 1, n_special):
        with pytest.raises(ValueError, match=rf"max_seq_length={cap}\b.*minimum is {n_special + 1}"):
            featurize_document(doc, tokenizer, max_seq_length=cap)
    smallest = featurize_document(doc, tokenizer, max_seq_length=n_special + 1)
    full = featurize_document(doc, tokenizer)["input_ids"]
    assert smallest["input_ids"] == full[:2] + full[-1:]  # [CLS], the start marker, [SEP]
    assert smallest["dropped_mentions"] == 1


def test_collator_pads_documents_with_different_entity_counts(redocred_dev, bert_tokenizer, roberta_tokenizer):
    for tokenizer in (bert_tokenizer, roberta_tokenizer):
        feats = [featurize_document(d, tokenizer) for d in redocred_dev[:3]]
        assert len({len(f["entity_pos"]) for f in feats}) > 1
        batch = DocRECollator(tokenizer)(feats)
        lengths = [len(f["input_ids"]) for f in feats]
        assert batch["input_ids"].shape == (3, max(lengths))
        assert batch["attention_mask"].sum(1).tolist() == lengths
        for i, f in enumerate(feats):
            assert batch["input_ids"][i, : lengths[i]].tolist() == f["input_ids"]
            assert set(batch["input_ids"][i, lengths[i] :].tolist()) <= {tokenizer.pad_token_id}
        assert batch["labels"].shape == (sum(len(f["hts"]) for f in feats), 97)
        assert batch["labels"].dtype == torch.float32
        assert batch["doc_keys"] == [d.key for d in redocred_dev[:3]]

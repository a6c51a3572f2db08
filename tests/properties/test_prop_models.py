"""Properties of featurization, models, decoding and EVRT twins (tiny random models, generated documents).

* a document's logits are the same alone and inside any batch, in any position (padding, windows
  over long inputs and pair bookkeeping must not leak between documents);
* ``decode`` and ``predict`` honour ``config.top_k`` when no ``top_k`` is passed;
* an on-the-fly twin is always aligned with its original (or refused when a renamer breaks it).
"""

from __future__ import annotations


import pytest
import torch
from _strategies import documents, knowledge_bases
from _training_helpers import tiny_model
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import BertConfig

from envre_hf.documents import DocumentError, Relation
from envre_hf.features import DocRECollator, featurize_document
from envre_hf.models import ATLOPModel, DocREConfig
from envre_hf.models.prediction import iter_logits, predict
from envre_hf.renaming import RenamingPipeline
from envre_hf.training import OnTheFlyTwins

FEW = settings(max_examples=max(5, settings.default.max_examples // 4))


@pytest.fixture(scope="module")
def model(tokenizer):
    return tiny_model(tokenizer, max_positions=48).eval()  # 48 positions: most generated documents need several windows


@FEW
@given(st.lists(documents(max_entities=4), min_size=1, max_size=4), st.data())
def test_logits_are_the_same_alone_and_in_any_batch(model, tokenizer, plans, data):
    feats = [featurize_document(p.doc, tokenizer) for p in plans]
    collate = DocRECollator(tokenizer.pad_token_id)
    with torch.no_grad():
        alone = [
            model(**{k: v for k, v in collate([f]).items() if k in ("input_ids", "attention_mask", "entity_pos", "hts")}).logits
            for f in feats
        ]
        order = data.draw(st.permutations(range(len(feats))))
        batch = collate([feats[i] for i in order])
        logits = model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], entity_pos=batch["entity_pos"], hts=batch["hts"]
        ).logits
    chunks = logits.split([len(feats[i]["hts"]) for i in order])
    for i, chunk in zip(order, chunks):
        assert chunk.shape == alone[i].shape
        assert torch.allclose(chunk, alone[i], atol=1e-4), (i, (chunk - alone[i]).abs().max())
    # the batched inference loop gives every document its own logits too
    batch_size = data.draw(st.integers(1, 4))
    for i, chunk in iter_logits(model, feats, tokenizer.pad_token_id, batch_size=batch_size, progress=False):
        assert torch.allclose(chunk, alone[i], atol=1e-4)


@given(
    st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(st.floats(-5, 5, allow_nan=False, width=32), min_size=n + 1, max_size=n + 1, unique=True),
            min_size=1,
            max_size=5,
        )
    ),
    st.sampled_from([None, 0, 1, 2, 3]),
)
def test_decode_honours_config_top_k(rows, top_k):
    logits = torch.tensor(rows)
    model = _DecodeOnly(top_k)
    assert model.config.top_k == (4 if top_k is None else top_k)  # None in a config: the family's value (ATLOP: 4)
    top_k = model.config.top_k
    out = model.decode(logits)
    for row, pred in zip(logits, out):
        chosen = [r for r in range(1, len(row)) if pred[r] == 1]
        assert all(row[r] > row[0] for r in chosen)  # only above the threshold class
        above = [r for r in range(1, len(row)) if row[r] > row[0]]
        # all of them without a cap, else the best top_k of them (the logits of a row are distinct)
        assert len(chosen) == (len(above) if not top_k else min(top_k, len(above)))
        assert all(row[c] > row[a] for c in chosen for a in above if a not in chosen)
        assert pred[0] == (1.0 if not chosen else 0.0)
    # an explicit top_k overrides the config
    explicit = model.decode(logits, top_k=0)
    assert explicit[:, 1:].sum(1).tolist() == (logits[:, 1:] > logits[:, :1]).sum(1).tolist()


class _DecodeOnly:
    """The decode method of a real model class on a config holding only ``top_k``."""

    def __init__(self, top_k):
        self.config = DocREConfig(
            encoder=BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=1), block_size=8, top_k=top_k
        )

    fixed_threshold = ATLOPModel.fixed_threshold
    decode = ATLOPModel.decode


@FEW
@given(st.lists(documents(max_entities=4, values=False), min_size=1, max_size=2), st.sampled_from([1, 2]))
def test_predict_uses_config_top_k_by_default(tokenizer, plans, top_k):
    model = tiny_model(tokenizer, max_positions=48, top_k=top_k).eval()
    with torch.no_grad():
        model.bilinear.bias.data[1:] += 10.0  # every relation above the threshold: the cap decides
    docs = [p.doc for p in plans]
    for i, doc in enumerate(docs):
        doc.doc_id = f"d{i}"
    rows = predict(model, docs, tokenizer, progress=False)
    per_pair: dict[tuple, int] = {}
    for row in rows:
        key = (row["doc_id"], row["h_idx"], row["t_idx"])
        per_pair[key] = per_pair.get(key, 0) + 1
    if any(len(d.entities) > 1 for d in docs):
        assert per_pair and max(per_pair.values()) == top_k
    else:
        assert rows == []


class _Corrupting:
    """A renamer that breaks the twin in one of several ways (or not at all)."""

    def __init__(self, pipeline, how):
        self.pipeline, self.how = pipeline, how

    def rename(self, doc, seed):
        twin = self.pipeline.rename(doc, seed)
        if self.how == "drop-entity" and len(twin.entities) > 1:
            n = len(twin.entities) - 1
            twin.entities = twin.entities[:n]
            twin.relations = [r for r in twin.relations if r.h < n and r.t < n]
        elif self.how == "reverse-entities":
            n = len(twin.entities)
            twin.entities = twin.entities[::-1]
            twin.relations = [Relation(n - 1 - r.h, n - 1 - r.t, r.r, r.evidence) for r in twin.relations]
        elif self.how == "drop-label" and twin.relations:
            twin.relations = twin.relations[1:]
        elif self.how == "drop-mention":
            for entity in twin.entities:
                if len(entity.mentions) > 1:
                    entity.mentions = entity.mentions[1:]
                    break
        return twin


def _aligned(a, b) -> bool:
    return (
        len(a.entities) == len(b.entities)
        and all(len(x.mentions) == len(y.mentions) and x.type == y.type for x, y in zip(a.entities, b.entities))
        and sorted((r.h, r.t, r.r) for r in a.relations) == sorted((r.h, r.t, r.r) for r in b.relations)
    )


@given(
    documents().flatmap(lambda p: st.tuples(st.just(p), knowledge_bases(p.doc))),
    st.sampled_from(["none", "drop-entity", "reverse-entities", "drop-label", "drop-mention"]),
    st.integers(0, 5),
)
def test_on_the_fly_twins_are_always_aligned(case, how, epoch):
    plan, kb = case
    source = OnTheFlyTwins(_Corrupting(RenamingPipeline(kb), how), base_seed=3)
    try:
        twin = source.twin(plan.doc, epoch)
    except DocumentError:
        assert how != "none"
        return
    assert _aligned(plan.doc, twin), how
    assert twin.seed == 3 + epoch

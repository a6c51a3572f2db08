"""Fixed twins and aligned pairs: a length cap that cuts a document and its twin at different places must not
make EVRT compare different pairs, and fixed twins are renamed once and reused (also after a restart)."""

from __future__ import annotations

import functools

import pytest
import torch

from envre_hf.documents import Document, Entity, Mention, Relation, read_documents
from envre_hf.features import DocRECollator, featurize_document
from envre_hf.training import EVRTPairCollator, EVRTPairDataset, PrebuiltTwins, fixed_twins
from envre_hf.training.pairing import aligned_pairs

from test_training_losses import _trainer  # noqa: E402  (the tiny pair model and its trainer)

LONG = ["Bartholomew", "Wolfeschlegelsteinhausenberger", "Oberhauser"]


def _doc(names: list[list[str]], title="Doc A", doc_id=None) -> Document:
    """``<A> met <B> . <C> was in <B> .``: the second mention of B comes last, so a cap cuts it first."""
    words: list[str] = []
    mentions: list[list[Mention]] = [[], [], []]
    for e, glue in ((0, ["met"]), (1, ["."]), (2, ["was", "in"]), (1, ["."])):
        start = len(words)
        words += names[e]
        mentions[e].append(Mention(" ".join(names[e]), 0, (start, start + len(names[e])), "PER"))
        words += glue
    return Document(
        title=title, sents=[words], entities=[Entity(m) for m in mentions], relations=[Relation(0, 1, "P26")],
        doc_id=doc_id, orig_title=title if doc_id else None,
    )


SHORT_DOC = _doc([["Al"], ["Bo"], ["Cy"]])
LONG_TWIN = _doc([["Al"], LONG, ["Cy"]], doc_id="Doc A#0")


def test_a_cap_that_cuts_a_document_and_its_twin_differently_keeps_the_same_mentions(tokenizer):
    cap = len(featurize_document(SHORT_DOC, tokenizer)["input_ids"])  # the original fits, the long twin does not
    alone = featurize_document(LONG_TWIN, tokenizer, max_seq_length=cap)
    assert featurize_document(SHORT_DOC, tokenizer, max_seq_length=cap)["dropped_mentions"] == 0
    assert alone["dropped_mentions"] > 0  # featurized independently the two sides would keep different mentions
    original = featurize_document(SHORT_DOC, tokenizer, max_seq_length=cap, align_with=LONG_TWIN)
    twin = featurize_document(LONG_TWIN, tokenizer, max_seq_length=cap, align_with=SHORT_DOC)
    assert [len(s) for s in original["entity_pos"]] == [len(s) for s in twin["entity_pos"]]
    assert original["dropped_mentions"] == twin["dropped_mentions"] == alone["dropped_mentions"]
    assert len(twin["input_ids"]) == cap and all(t <= cap for span in twin["entity_pos"] for _, t in span)


def test_pairs_whose_entity_lost_every_mention_are_left_out_of_the_consistency_losses(tokenizer):
    cap = 12  # [CLS] * Al * met ... : far too short for the long twin to keep entities 1 and 2
    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=cap)
    item = EVRTPairDataset([SHORT_DOC], featurize, PrebuiltTwins([SHORT_DOC], [LONG_TWIN]))[0]
    placed = [bool(s) for s in item["original"]["entity_pos"]]
    assert placed == [bool(s) for s in item["twin"]["entity_pos"]] and not all(placed)
    expected = [placed[h] and placed[t] for h, t in item["original"]["hts"]]
    assert item["aligned"] == aligned_pairs(item["twin"]) == expected and not all(expected)
    batch = EVRTPairCollator(DocRECollator(tokenizer))([item])
    assert batch["consistency_mask"].tolist() == expected


def test_the_consistency_losses_compare_only_the_masked_pairs(tmp_path):
    from test_training_losses import _paired_batch
    from envre_hf.training import prediction_consistency_loss, representation_consistency_loss

    trainer = _trainer(tmp_path, evrt=True, evrt_alpha=0.5, evrt_beta=2.0, evrt_losses=["rcr", "pcr"])
    batch = _paired_batch()
    n_pairs = sum(len(h) for h in batch["hts"])
    mask = torch.ones(n_pairs, dtype=torch.bool)
    mask[[1, 4]] = False
    loss = trainer.compute_loss(trainer.model, dict(batch, consistency_mask=mask))
    original, twin = batch, batch["twin"]
    keep = ("input_ids", "attention_mask", "entity_pos", "hts", "labels")
    out_o, out_t = (trainer.model(**{k: half[k] for k in keep}) for half in (original, twin))
    rcr = representation_consistency_loss(out_o.pair_representations[mask], out_t.pair_representations[mask])
    margins = trainer.model.relation_margins
    pcr = prediction_consistency_loss(margins(out_o.logits[mask]), margins(out_t.logits[mask]))
    assert loss.item() == pytest.approx((out_o.loss + 0.5 * rcr + 2.0 * pcr).item(), rel=1e-5)
    unmasked = trainer.compute_loss(trainer.model, dict(batch))
    assert unmasked.item() != pytest.approx(loss.item(), rel=1e-6)  # the two left-out pairs did count before
    logs = {"loss": loss.item()}
    trainer.log(logs)
    assert logs["consistency_pairs_left_out"] == 2


class _CountingPipeline:
    """A renamer that appends '#<seed>' semantics through a real renaming of one name (no KB needed)."""

    def __init__(self):
        self.calls = 0

    def rename(self, doc: Document, seed: int) -> Document:
        self.calls += 1
        twin = _doc([["Al"], ["Zed"], ["Cy"]], title=doc.title, doc_id=f"{doc.key}#{seed}")
        twin.seed = seed
        return twin


def test_fixed_twins_are_renamed_once_saved_and_reused(tmp_path):
    path = tmp_path / "evrt_twins.json"
    pipeline = _CountingPipeline()
    twins = fixed_twins([SHORT_DOC], pipeline, seed=7, path=path, progress=False)
    assert pipeline.calls == 1 and path.exists()
    assert [twins.twin(SHORT_DOC, epoch).key for epoch in range(4)] == ["Doc A#7"] * 4 and twins.cacheable()
    again = fixed_twins([SHORT_DOC], pipeline, seed=7, path=path, progress=False)  # a resumed run
    assert pipeline.calls == 1
    assert again.twin(SHORT_DOC, 0).sents == twins.twin(SHORT_DOC, 0).sents == read_documents(path)[0].sents

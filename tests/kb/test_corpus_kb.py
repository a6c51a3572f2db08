"""CorpusKB: an offline KB whose items are the entities of a DocRED-format pool."""

from __future__ import annotations

import pickle

import pytest

from envre_hf.documents import from_docred, to_docred
from envre_hf.kb.corpus import CorpusKB, describe_type, role_signature
from envre_hf.documents.tokenize import tokenize_name

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dev_kb(redocred_dev):
    return CorpusKB(redocred_dev)


def _roles(type_id: str) -> tuple[str, set[str]]:
    coarse, *roles = type_id.split("|")
    return coarse, set(roles)


def test_items_names_and_types(dev_kb, redocred_dev):
    assert len(dev_kb) == sum(doc.num_entities for doc in redocred_dev)
    doc = redocred_dev[0]
    for e, entity in enumerate(doc.entities):
        item = f"corpus:{doc.key}#{e}"
        assert dev_kb.link(doc, e) == item
        names = dev_kb.names(item)
        assert names and len(set(names)) == len(names)
        for name in names:  # token forms of real mentions that re-tokenize to themselves
            assert tokenize_name(name) == name.split(" ")
            assert any(" ".join(m.tokens(doc.sents)) == name for m in entity.mentions)
        counts = [sum(" ".join(m.tokens(doc.sents)) == n for m in entity.mentions) for n in names]
        assert counts == sorted(counts, reverse=True)  # most frequent first
        type_id, *fallback = dev_kb.types(item)
        coarse, roles = _roles(type_id)
        assert fallback == ([f"{coarse}|*"] if roles else [])
        assert coarse == entity.type
        assert roles == {f"h:{r.r}" for r in doc.relations if r.h == e} | {f"t:{r.r}" for r in doc.relations if r.t == e}
    assert dev_kb.popularity(f"corpus:{doc.key}#0") == sum(r.h == 0 or r.t == 0 for r in doc.relations)


def test_exact_candidates_have_a_superset_signature(dev_kb, redocred_test):
    checked = 0
    for doc in redocred_test[:40]:
        for e in range(doc.num_entities):
            type_id = role_signature(doc, e)
            coarse, roles = _roles(type_id)
            candidates = dev_kb.candidates(type_id, 1)
            assert candidates == dev_kb.candidates(type_id, 1)  # deterministic
            for cand in candidates:
                cand_coarse, cand_roles = _roles(dev_kb.types(cand.item_id)[0])
                assert cand_coarse == coarse
                if cand.match == "exact":
                    assert cand_roles >= roles
                else:
                    how = cand.match.removeprefix("relaxed:")
                    if how != "coarse type only":
                        assert cand_roles >= roles - set(how.removeprefix("dropped ").split(","))
                checked += 1
    assert checked > 1000


def test_relaxation_is_reported(dev_kb):
    exact = dev_kb.candidates("PER|h:P19", 1)
    assert exact and {c.match for c in exact} == {"exact"}
    relaxed = dev_kb.candidates("PER|h:P19|h:P9999", 1)
    assert relaxed and {c.match for c in relaxed} == {"relaxed:dropped h:P9999"}
    assert [c.item_id for c in relaxed] == [c.item_id for c in exact]
    coarse = dev_kb.candidates("PER|h:P8888|t:P9999", 1)
    assert {c.match for c in coarse} == {"relaxed:coarse type only"}
    assert len(coarse) >= len(exact)
    assert dev_kb.candidates("NOTATYPE", 1) == []


def test_min_names_and_exclude(dev_kb):
    many = dev_kb.candidates("PER", 3)
    assert many and all(len(dev_kb.names(c.item_id)) >= 3 for c in many)
    assert len(many) < len(dev_kb.candidates("PER", 1))
    assert dev_kb.candidates("PER", 1000) == []
    first = many[0].item_id
    assert first not in {c.item_id for c in dev_kb.candidates("PER", 3, frozenset({first}))}


def test_outside_documents_are_linked_from_their_labels(dev_kb, redocred_test):
    doc = redocred_test[3]
    item = dev_kb.link(doc, 0)
    assert item == f"corpus:{doc.key}#0"
    assert dev_kb.types(item)[0] == role_signature(doc, 0)
    assert set(dev_kb.names(item)) <= {" ".join(m.tokens(doc.sents)) for m in doc.entities[0].mentions}
    assert dev_kb.popularity(item) is None



def test_a_document_reusing_a_pool_key_is_not_the_pool_entity(dev_kb, redocred_dev, redocred_test):
    clash = from_docred(to_docred(redocred_test[5]))
    clash.doc_id = redocred_dev[0].key
    item = dev_kb.link(clash, 0)
    assert item == f"corpus:{redocred_dev[0].key}#0~external"
    assert dev_kb.types(item)[0] == role_signature(clash, 0)
    assert dev_kb.link(from_docred(to_docred(redocred_dev[0])), 0) == f"corpus:{redocred_dev[0].key}#0"


def test_snapshot_and_pickle(dev_kb, redocred_dev, redocred_test):
    assert CorpusKB(redocred_dev).snapshot_id() == dev_kb.snapshot_id()
    assert CorpusKB(redocred_dev[:-1]).snapshot_id() != dev_kb.snapshot_id()
    clone = pickle.loads(pickle.dumps(dev_kb))
    assert clone.snapshot_id() == dev_kb.snapshot_id()
    assert clone.candidates("LOC|t:P17", 2) == dev_kb.candidates("LOC|t:P17", 2)


def test_describe_type():
    assert describe_type("PER|h:P569|t:P50") == "PER; head of P569 date of birth; tail of P50 author"


def test_coarse_fallback_renames_entities_whose_only_compatible_item_is_their_own(redocred_dev):
    """A pool document renamed from its own pool: an entity with a unique role signature finds only
    itself among the exact candidates; the coarse-type fallback still renames it, reported as such."""
    from envre_hf.renaming import RenamingConfig, RenamingPipeline

    kb = CorpusKB(redocred_dev)
    pipeline = RenamingPipeline(kb, RenamingConfig())
    fallback = unchanged = 0
    for doc in redocred_dev[:60]:
        for sub in pipeline.rename(doc, seed=0).substitutions:
            item = f"corpus:{doc.key}#{sub.entity}"
            exact_others = [c for c in kb.candidates(kb.types(item)[0], 1) if c.item_id != item]
            if sub.match == "relaxed:coarse type fallback":
                fallback += 1
                assert sub.fine_type.endswith("|*") and sub.item_id != item
                assert kb.types(sub.item_id)[0].split("|")[0] == doc.entities[sub.entity].type
            elif sub.match == "unchanged:no-candidate":
                unchanged += 1
            if not exact_others and doc.entities[sub.entity].type not in ("NUM", "TIME"):
                assert sub.match != "unchanged:no-candidate"  # never unchanged for want of another item
    assert fallback > 0 and unchanged <= fallback // 10

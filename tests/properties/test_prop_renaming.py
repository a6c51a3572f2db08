"""Properties of the renaming pipeline on generated documents and knowledge bases.

Each property is a promise of ``envre_hf.renaming.pipeline`` stated independently of the code:
labels and entity order untouched, mention spans covering exactly their new names, no name
shared between entities or between an entity's names, excluded names (with and without "The")
never used, determinism, and a leak check that finds exactly the planted unannotated names.
"""

from __future__ import annotations

import json

import pytest
from _strategies import documents, excluded_names, knowledge_bases
from hypothesis import given
from hypothesis import strategies as st

from envre_hf.documents import DocumentError, to_docred, validate_document
from envre_hf.documents.tokenize import name_key
from envre_hf.renaming import RenamingConfig, RenamingPipeline, find_leaks, is_substituted
from envre_hf.documents.tokenize import tokenize_name


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


def _bare(key: str) -> str:
    return key[4:] if key.startswith("the ") else key


@st.composite
def renamed(draw, fix_leaks: bool = False, exclude: bool = False):
    plan = draw(documents())
    kb = draw(knowledge_bases(plan.doc))
    excluded = draw(excluded_names(kb)) if exclude else frozenset()
    seed = draw(st.integers(0, 2**16))
    config = RenamingConfig(exclude_names=excluded, fix_leaks=fix_leaks)
    out, report = RenamingPipeline(kb, config).rename_with_report(plan.doc, seed)
    return plan, kb, config, seed, out, report


def _new_names(out):
    """entity -> {original name: new name} of the renamed (substituted) entities."""
    table: dict[int, dict[str, str]] = {}
    for sub in out.substitutions:
        if is_substituted(sub):
            table.setdefault(sub.entity, {})[sub.original_name] = sub.new_name
    return table


@given(renamed())
def test_labels_evidence_and_entity_order_are_untouched(case):
    plan, _, _, seed, out, _ = case
    doc = plan.doc
    validate_document(out)
    assert out.doc_id == f"{doc.key}#{seed}" and out.orig_title == doc.title and out.seed == seed
    assert len(out.sents) == len(doc.sents)
    assert [(r.h, r.t, r.r, r.evidence) for r in out.relations] == [(r.h, r.t, r.r, r.evidence) for r in doc.relations]
    assert len(out.entities) == len(doc.entities)
    for old, new in zip(doc.entities, out.entities):
        assert [(m.sent_id, m.type) for m in new.mentions] == [(m.sent_id, m.type) for m in old.mentions]
    assert sorted({s.entity for s in out.substitutions}) == list(range(len(doc.entities)))


@given(renamed())
def test_every_mention_covers_exactly_its_new_name(case):
    plan, _, _, _, out, _ = case
    table = _new_names(out)
    for e, (old, new) in enumerate(zip(plan.doc.entities, out.entities)):
        for om, nm in zip(old.mentions, new.mentions):
            tokens = nm.tokens(out.sents)
            if e in table:
                assert om.name in table[e], (e, om.name)
                assert nm.name == table[e][om.name]
                assert tokens == tokenize_name(nm.name) and " ".join(tokens) == nm.name
            else:
                assert nm.name == om.name and tokens == om.tokens(plan.doc.sents)


@given(renamed())
def test_entities_never_share_a_name_and_names_map_one_to_one(case):
    plan, _, _, _, out, _ = case
    table = _new_names(out)
    originals = {_key(n) for entity in plan.doc.entities for n in entity.names}
    owner: dict[str, int] = {}
    for e, mapping in table.items():
        new_keys = [_key(n) for n in mapping.values()]
        # distinct original names -> distinct new names, case-insensitively
        assert len(set(new_keys)) == len(new_keys) == len(mapping), (e, mapping)
        for key in new_keys:
            assert key not in originals, (e, key)  # never an original name of the document
            assert owner.setdefault(key, e) == e, (e, owner[key], key)  # never another entity's new name
    # equal original names -> equal new names (one name per original name, every mention)
    for e, mapping in table.items():
        for om, nm in zip(plan.doc.entities[e].mentions, out.entities[e].mentions):
            assert nm.name == mapping[om.name]


@given(renamed(exclude=True))
def test_excluded_names_never_appear_with_or_without_article(case):
    _, _, config, _, out, _ = case
    banned = {_bare(name_key(n)) for n in config.exclude_names}
    for sub in out.substitutions:
        if is_substituted(sub) and sub.match != "rule":
            assert _bare(_key(sub.new_name)) not in banned, (sub.new_name, sorted(config.exclude_names))


@given(renamed())
def test_same_seed_same_output_whatever_came_before(case):
    plan, kb, config, seed, out, _ = case
    pipeline = RenamingPipeline(kb, config)
    pipeline.rename(plan.doc, seed + 1)  # another renaming first must not change anything
    again = pipeline.rename(plan.doc, seed)
    assert json.dumps(to_docred(again)) == json.dumps(to_docred(out))


@given(renamed())
def test_overlapping_entities_are_left_unchanged(case):
    plan, _, _, _, out, _ = case
    table = _new_names(out)
    assert not (plan.overlapping & set(table))


@given(renamed())
def test_leak_check_finds_exactly_the_planted_names(case):
    plan, _, _, _, out, report = case
    table = _new_names(out)
    expected = {e: n for e, n in plan.planted.items() if e in table}
    leaks = find_leaks(out)
    found: dict[int, int] = {}
    for leak in leaks:
        found[leak.entity] = found.get(leak.entity, 0) + 1
        assert out.sents[leak.sent_id][leak.start : leak.end] == tokenize_name(leak.original_name)
    assert found == expected
    assert report.leaks_found == len(leaks)


@given(renamed(fix_leaks=True))
def test_fixing_leaks_leaves_none_and_keeps_the_document_valid(case):
    plan, _, _, _, out, report = case
    table = _new_names(out)
    assert report.leaks_found == report.leaks_fixed == sum(n for e, n in plan.planted.items() if e in table)
    # what is left can only be an original name inside an inserted new name ("Kato Brandt" holding
    # another entity's "Brandt"): the planted occurrences themselves are gone
    new_tokens = [tokenize_name(n) for mapping in table.values() for n in mapping.values()]
    for leak in find_leaks(out):
        sent = out.sents[leak.sent_id]
        assert any(
            sent[a : a + len(t)] == t and a <= leak.start and leak.end <= a + len(t)
            for t in new_tokens
            for a in range(max(0, leak.end - len(t)), leak.start + 1)
        ), leak
    validate_document(out)
    for e, mapping in table.items():
        for om, nm in zip(plan.doc.entities[e].mentions, out.entities[e].mentions):
            assert nm.tokens(out.sents) == tokenize_name(mapping[om.name])


@given(documents())
def test_malformed_documents_are_refused_naming_the_entity(plan):
    doc = plan.doc
    doc.entities[-1].mentions[0].pos = (0, len(doc.sents[doc.entities[-1].mentions[0].sent_id]) + 1)
    with pytest.raises(DocumentError, match=f"entity {len(doc.entities) - 1} mention 0"):
        RenamingPipeline(_EmptyKB()).rename(doc, 0)


class _EmptyKB:
    """A KB that links nothing (the malformed-input check must come first anyway)."""

    def link(self, doc, e):
        return None

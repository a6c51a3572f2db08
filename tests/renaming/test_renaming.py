"""The four-step renaming pipeline: a fake in-memory KB on handmade documents."""

from __future__ import annotations

import json
import os

import pytest

from envre_hf.documents import (
    Document,
    DocumentError,
    Entity,
    Mention,
    Relation,
    documents_to_dataset,
    dataset_to_documents,
    to_docred,
    validate_document,
)
from envre_hf.documents.tokenize import name_key
from envre_hf.kb.base import Candidate, KnowledgeBase
from envre_hf.renaming import (
    RenamingConfig,
    RenamingPipeline,
    find_leaks,
    is_substituted,
    rename_dataset,
    substitution_rates,
    used_names,
)


class FakeKB(KnowledgeBase):
    """Items, their types and names in dicts; links by the entity's most frequent name."""

    name = "fake"

    def __init__(self, items: dict[str, tuple[list[str], list[str]]], links: dict[str, str]):
        self.items = items  # item -> (types, names)
        self.links = links  # surface name -> item
        self.candidate_calls: list[tuple[str, int, frozenset[str]]] = []

    def link(self, doc, entity_index):
        return self.links.get(doc.entities[entity_index].mentions[0].name)

    def types(self, item_id):
        return list(self.items[item_id][0]) if item_id in self.items else []

    def candidates(self, type_id, min_names, exclude=frozenset()):
        self.candidate_calls.append((type_id, min_names, exclude))
        # deliberately ignores `exclude`: the pipeline must never pick the entity's own item anyway
        return [
            Candidate(item, "exact")
            for item, (types, names) in sorted(self.items.items())
            if type_id in types and len(names) >= min_names
        ]

    def names(self, item_id):
        return list(self.items[item_id][1])


def _m(name, sent, start, end, etype, **extra):
    return Mention(name=name, sent_id=sent, pos=(start, end), type=etype, extra=extra)


def _doc() -> Document:
    sents = [
        "Barack Obama was born in Honolulu , Hawaii .".split(),
        "Obama studied at Columbia University in 1983 .".split(),
        "Later Barack Obama visited Atlantis .".split(),
    ]
    entities = [
        Entity([_m("Barack Obama", 0, 0, 2, "PER", global_pos=[0, 0]), _m("Obama", 1, 0, 1, "PER", global_pos=[9, 9]),
                _m("Barack Obama", 2, 1, 3, "PER", global_pos=[18, 18])]),
        Entity([_m("Honolulu", 0, 5, 6, "LOC", global_pos=[5, 5])]),
        Entity([_m("Hawaii", 0, 7, 8, "LOC", global_pos=[7, 7])]),
        Entity([_m("Columbia University", 1, 3, 5, "ORG", global_pos=[12, 12])]),
        Entity([_m("1983", 1, 6, 7, "TIME", global_pos=[15, 15])]),
        Entity([_m("Atlantis", 2, 4, 5, "LOC", global_pos=[21, 21])]),
    ]
    relations = [Relation(0, 1, "P19", [0]), Relation(1, 2, "P131", [0]), Relation(0, 3, "P69", [1])]
    return Document(title="Barack Obama", sents=sents, entities=entities, relations=relations)


def _kb() -> FakeKB:
    return FakeKB(
        items={
            "Q76": (["human"], ["Barack Obama", "Obama"]),
            "Q1": (["human"], ["Joanna Smith-Jones", "Jo Smith", "J. S."]),
            "Q2": (["human"], ["Single Name"]),  # too few names for a two-name entity
            "Q18094": (["city", "place"], ["Honolulu"]),
            "Q60": (["city", "place"], ["New York City", "NYC"]),
            "Q782": (["state"], ["Hawaii"]),
            "Q99": (["state"], ["Ohio", "OH"]),
            "Q49088": (["university"], ["Columbia University"]),
            "Q5": (["university"], ["Honolulu"]),  # collides with another entity's name
            "Q6": (["university"], ["Université de Montréal", "UdeM"]),
        },
        links={"Barack Obama": "Q76", "Honolulu": "Q18094", "Hawaii": "Q782", "Columbia University": "Q49088"},
    )


def test_four_steps_on_a_fake_kb():
    doc = _doc()
    kb = _kb()
    out = RenamingPipeline(kb).rename(doc, seed=3)
    validate_document(out)
    assert out.doc_id == "Barack Obama#3" and out.orig_title == "Barack Obama" and out.seed == 3
    by_entity = {}
    for sub in out.substitutions:
        by_entity.setdefault(sub.entity, []).append(sub)
    # entity 0: two distinct names -> only Q1 has >= 2 names besides its own item Q76
    subs0 = by_entity[0]
    assert [(s.original_name, s.new_name, s.item_id) for s in subs0] == [
        ("Barack Obama", "Joanna Smith - Jones", "Q1"),  # most frequent name -> label
        ("Obama", "Jo Smith", "Q1"),  # the other name -> first alias
    ]
    assert ("human", 2, frozenset({"Q76"})) in kb.candidate_calls
    # entity 1 (a city): the only other city is New York City
    assert by_entity[1][0].new_name == "New York City" and by_entity[1][0].fine_type == "city"
    # entity 3: "Honolulu" collides with entity 1's original name, so Q6 is the only choice
    assert by_entity[3][0].new_name == "Université de Montréal"
    # entity 4 (TIME) by rule, entity 5 unlinked
    assert by_entity[4][0].match == "rule" and by_entity[4][0].item_id is None
    assert by_entity[5][0].match == "unchanged:unlinked" and by_entity[5][0].new_name == "Atlantis"
    assert [s.entity for s in out.substitutions if not is_substituted(s)] == [5]
    # tokens and names agree, positions shifted, labels and order unchanged
    for entity in out.entities:
        for mention in entity.mentions:
            assert " ".join(mention.tokens(out.sents)) == mention.name or mention.name == "Atlantis"
    assert out.sents[0][:5] == ["Joanna", "Smith", "-", "Jones", "was"]
    assert out.entities[1].mentions[0].pos == (7, 10)  # "New York City" after a 4-token name
    assert out.entities[2].mentions[0].name == "Ohio" and out.entities[2].mentions[0].pos == (11, 12)
    assert [(r.h, r.t, r.r, r.evidence) for r in out.relations] == [(r.h, r.t, r.r, r.evidence) for r in doc.relations]
    offsets = out.sentence_offsets()
    for entity in out.entities:
        for mention in entity.mentions:
            assert mention.extra["global_pos"] == [offsets[mention.sent_id] + mention.start] * 2
    assert out.title == "Joanna Smith - Jones"  # the title was the renamed entity's name
    # the input is untouched
    assert doc.sents[0][0] == "Barack" and doc.entities[0].mentions[0].name == "Barack Obama"


def test_each_of_the_four_steps_is_the_pipeline_method_of_its_name():
    """rename_with_report strings link -> type -> candidates per KB entity, then substitute once: a subclass that
    changes one step changes what that step decides, nothing else."""
    calls = []

    class Traced(RenamingPipeline):
        def link(self, doc, e):
            calls.append(("link", e))
            return "Q7" if doc.entities[e].mentions[0].name == "Atlantis" else super().link(doc, e)

        def type(self, item):
            calls.append(("type", item))
            return super().type(item)

        def candidates(self, work, e, item, types, rng):
            calls.append(("candidates", e, tuple(types)))
            return super().candidates(work, e, item, types, rng)

        def substitute(self, work):
            calls.append(("substitute",))
            return super().substitute(work)

    kb = _kb()
    kb.items["Q7"] = (["island"], ["Atlantis"])
    kb.items["Q8"] = (["island"], ["Lemuria"])
    out, report = Traced(kb).rename_with_report(_doc(), seed=3)
    assert calls[:3] == [("link", 0), ("type", "Q76"), ("candidates", 0, ("human",))]
    assert [c[1] for c in calls if c[0] == "link"] == [0, 1, 2, 3, 5]  # entity 4 (TIME) takes the value rules
    assert calls[-1] == ("substitute",) and calls.count(("substitute",)) == 1
    assert report.outcomes[5] == "exact" and out.entities[5].mentions[0].name == "Lemuria"
    plain = RenamingPipeline(kb).rename(_doc(), seed=3)  # the other entities: as without the subclass
    assert [s for s in out.substitutions if s.entity != 5] == [s for s in plain.substitutions if s.entity != 5]


def test_match_counts_per_type_separate_exact_relaxed_and_rule_made_names():
    from dataclasses import replace

    from envre_hf.renaming import match_counts

    out = RenamingPipeline(_kb()).rename(_doc(), seed=3)
    # entity 3 (ORG) as if only a broader type had offered a candidate; both of entity 0's records stay exact
    out.substitutions = [replace(s, match="relaxed:coarse type fallback") if s.entity == 3 else s
                         for s in out.substitutions]  # fmt: skip
    assert match_counts([out, out], by_type=True) == {
        "LOC": {"exact": 4, "relaxed": 0, "rule": 0, "unchanged": 2},  # Honolulu, Hawaii renamed; Atlantis unlinked
        "ORG": {"exact": 0, "relaxed": 2, "rule": 0, "unchanged": 0},
        "PER": {"exact": 2, "relaxed": 0, "rule": 0, "unchanged": 0},  # one entity, two names: counted once
        "TIME": {"exact": 0, "relaxed": 0, "rule": 2, "unchanged": 0},
    }
    assert match_counts([out]) == {"exact": 3, "relaxed": 1, "rule": 1, "unchanged:unlinked": 1}


def test_types_are_tried_most_specific_first():
    kb = _kb()
    kb.items["Q18094"] = (["capital", "city"], ["Honolulu"])  # no other capital exists
    out = RenamingPipeline(kb).rename(_doc(), seed=0)
    sub = next(s for s in out.substitutions if s.entity == 1)
    assert sub.fine_type == "city" and sub.new_name == "New York City"
    assert [c[0] for c in kb.candidate_calls[1:3]] == ["capital", "city"]


def test_untyped_and_no_candidate_are_recorded():
    kb = _kb()
    kb.items["Q18094"] = ([], ["Honolulu"])
    del kb.items["Q99"]
    out = RenamingPipeline(kb).rename(_doc(), seed=0)
    outcome = {s.entity: s.match for s in out.substitutions}
    assert outcome[1] == "unchanged:untyped" and outcome[2] == "unchanged:no-candidate"
    assert out.entities[1].mentions[0].name == "Honolulu"
    rates = substitution_rates([out])
    assert rates["LOC"] == {"entities": 3, "substituted": 0, "rate": 0.0}
    assert rates["ALL"]["substituted"] == 3 and rates["PER"]["rate"] == 1.0


def test_exclusion_is_respected():
    first = RenamingPipeline(_kb()).rename(_doc(), seed=0)
    assert "New York City" in used_names([first])
    config = RenamingConfig(exclude_names=frozenset({"new york  city", "NYC", "Jo Smith"}))
    out = RenamingPipeline(_kb(), config).rename(_doc(), seed=0)
    outcome = {s.entity: s for s in out.substitutions}
    assert outcome[1].match == "unchanged:no-candidate"  # both names of the only other city are excluded
    # Q1's alias "Jo Smith" is excluded; its remaining names still cover both original names
    assert [s.new_name for s in out.substitutions if s.entity == 0] == ["Joanna Smith - Jones", "J. S."]


def _band_doc() -> Document:
    sents = ["The Monkees played in Liverpool .".split()]
    return Document(title="Band", sents=sents, entities=[Entity([_m("The Monkees", 0, 0, 2, "ORG")])], relations=[])


def _bands_kb(variants: list[str]) -> FakeKB:
    """The band of the document (Q0) and one candidate band per name in ``variants``, plus a fallback."""
    items = {"Q0": (["band"], ["The Monkees"]), "Qz": (["band"], ["Zebra Quartet"])}
    items |= {f"Q{i + 1}": (["band"], [name]) for i, name in enumerate(variants)}
    return FakeKB(items, {"The Monkees": "Q0"})


@pytest.mark.parametrize(
    "excluded, variants",
    [
        ("The Beatles", ["Beatles", "The Beatles", "the beatles"]),  # the article-less variant is excluded too
        ("Beatles", ["The Beatles", "Beatles"]),  # and the article-led one, the other way round
    ],
)
def test_name_isolation_holds_for_article_variants(tmp_path, excluded, variants):
    """An excluded name (read as ``envre build --exclude-names-from`` reads it) is never drawn with or
    without its leading article; without the exclusion each variant is drawn for some seed."""
    from envre_hf.renaming import load_excluded_names

    seeds = range(40)
    free = {RenamingPipeline(_bands_kb(variants)).rename(_band_doc(), s).entities[0].mentions[0].name for s in seeds}
    assert {name_key(v) for v in variants} <= {name_key(n) for n in free}  # every variant is drawable
    listed = tmp_path / "excluded.txt"
    listed.write_text(excluded + "\n", encoding="utf-8")
    config = RenamingConfig(exclude_names=load_excluded_names(listed))
    pipeline = RenamingPipeline(_bands_kb(variants), config)
    drawn = {pipeline.rename(_band_doc(), s).entities[0].mentions[0].name for s in seeds}
    assert {name_key(n) for n in drawn}.isdisjoint({name_key(v) for v in variants}), drawn
    assert drawn == {"Zebra Quartet"}


def test_same_seed_same_output_and_seeds_differ():
    kb = _kb()
    kb.items.update({f"Qc{i}": (["city"], [f"Town {i}"]) for i in range(30)})
    a = json.dumps(to_docred(RenamingPipeline(kb).rename(_doc(), 5)))
    b = json.dumps(to_docred(RenamingPipeline(kb).rename(_doc(), 5)))
    assert a == b
    cities = {RenamingPipeline(kb).rename(_doc(), s).entities[1].mentions[0].name for s in range(10)}
    assert len(cities) > 3


def test_overlapping_mentions_are_left_unchanged():
    doc = _doc()
    # "Columbia" (a LOC) nested inside the ORG mention "Columbia University"
    doc.entities.append(Entity([_m("Columbia", 1, 3, 4, "LOC", global_pos=[12, 12])]))
    kb = _kb()
    kb.links["Columbia"] = "Q60"
    out = RenamingPipeline(kb).rename(doc, seed=1)
    outcome = {s.entity: s.match for s in out.substitutions}
    assert outcome[3] == outcome[6] == "unchanged:overlap"
    org, loc = out.entities[3].mentions[0], out.entities[6].mentions[0]
    assert org.tokens(out.sents) == ["Columbia", "University"] and loc.tokens(out.sents) == ["Columbia"]
    assert org.pos[0] == loc.pos[0]
    validate_document(out)


def test_leak_check_and_fix():
    doc = _doc()
    doc.sents[2] = "Later Barack Obama visited Atlantis with Barack Obama .".split()  # last one unannotated
    pipeline = RenamingPipeline(_kb())
    out, report = pipeline.rename_with_report(doc, seed=0)
    leaks = find_leaks(out)
    assert report.leaks_found == len(leaks) == 1 and report.leaks_fixed == 0
    assert out.sents[2][leaks[0].start : leaks[0].end] == ["Barack", "Obama"] and leaks[0].entity == 0
    fixed, report = RenamingPipeline(_kb(), RenamingConfig(fix_leaks=True)).rename_with_report(doc, seed=0)
    assert report.leaks_fixed == 1 and find_leaks(fixed) == []
    assert fixed.sents[2] == "Later Joanna Smith - Jones visited Atlantis with Joanna Smith - Jones .".split()
    assert fixed.entities[5].mentions[0].tokens(fixed.sents) == ["Atlantis"]
    validate_document(fixed)


def test_an_original_name_inside_another_entitys_mention_is_not_a_leak():
    doc = _doc()
    # entity 6 (never linked, so unchanged) is named "Barack Obama Foundation": its mention holds
    # entity 0's original name, which is text of another mention, not a leak
    doc.sents[2] = "Later Barack Obama visited Atlantis and the Barack Obama Foundation .".split()
    doc.entities.append(Entity([_m("Barack Obama Foundation", 2, 7, 10, "ORG")]))
    out, report = RenamingPipeline(_kb()).rename_with_report(doc, seed=0)
    assert {s.entity: s.match for s in out.substitutions}[6] == "unchanged:unlinked"
    assert report.leaks_found == 0 and find_leaks(out) == []
    fixed, report = RenamingPipeline(_kb(), RenamingConfig(fix_leaks=True)).rename_with_report(doc, seed=0)
    assert report.leaks_fixed == 0
    assert fixed.entities[6].mentions[0].tokens(fixed.sents) == ["Barack", "Obama", "Foundation"]


def _leak_doc(sents: list[str]) -> Document:
    """One annotated mention ("Zed" in the last sentence), every other token free for leaks."""
    split = [s.split() for s in sents]
    last = len(split) - 1
    return Document(title="leaks", sents=split, entities=[Entity([_m("Zed", last, 0, 1, "PER")])])


def test_a_leak_at_the_start_of_a_sentence_is_found():
    doc = _leak_doc(["Obama spoke .", "Zed ."])
    leaks = find_leaks(doc, {0: {"Obama": ["Obama"]}})
    assert [(lk.sent_id, lk.start, lk.end) for lk in leaks] == [(0, 0, 1)]


def test_the_longest_original_name_wins_where_two_start_at_one_token():
    # "New York" (entity 0) and "New York City" (entity 1): the unannotated text is the longer name
    doc = _leak_doc(["He left New York City today .", "Zed ."])
    leaks = find_leaks(doc, {0: {"New York": ["New", "York"]}, 1: {"New York City": ["New", "York", "City"]}})
    assert [(lk.start, lk.end, lk.entity, lk.original_name) for lk in leaks] == [(2, 5, 1, "New York City")]


def test_equal_original_names_of_two_entities_go_to_the_lower_entity_index():
    # two entities with the same tokens under different spellings: ties are broken by entity, not by name
    doc = _leak_doc(["Paris again .", "Zed ."])
    leaks = find_leaks(doc, {3: {"Alpha": ["Paris"]}, 1: {"Omega": ["Paris"]}})
    assert [(lk.entity, lk.original_name) for lk in leaks] == [(1, "Omega")]


def test_malformed_input_raises_document_error():
    doc = _doc()
    doc.entities[1].mentions[0].pos = (5, 40)
    with pytest.raises(DocumentError, match="entity 1 mention 0"):
        RenamingPipeline(_kb()).rename(doc, seed=0)


class _PidKB(FakeKB):
    """A FakeKB that appends the id of the process that links an entity to a file."""

    def __init__(self, items, links, log):
        super().__init__(items, links)
        self.log = str(log)

    def link(self, doc, entity_index):
        with open(self.log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        return super().link(doc, entity_index)


def test_rename_dataset_matches_single_documents(tmp_path):
    docs = []
    for i in range(4):
        doc = _doc()
        doc.title = f"doc {i}"
        docs.append(doc)
    kb = _kb()
    pipeline = RenamingPipeline(kb)
    dataset = documents_to_dataset(docs)
    expected = [pipeline.rename(doc, seed) for seed in (0, 1) for doc in docs]
    for num_proc in (1, 2):
        log = tmp_path / f"pids-{num_proc}.txt"
        worker_pipeline = RenamingPipeline(_PidKB(kb.items, kb.links, log))
        got = dataset_to_documents(rename_dataset(dataset, worker_pipeline, seeds=[0, 1], num_proc=num_proc, batch_size=2))
        assert [json.dumps(to_docred(d)) for d in got] == [json.dumps(to_docred(d)) for d in expected]
        pids = {int(line) for line in log.read_text().split()}
        # num_proc=1 renames in this process; num_proc=2 only in worker processes
        assert (pids == {os.getpid()}) if num_proc == 1 else (os.getpid() not in pids)


def test_config_fingerprint():
    a = RenamingConfig(exclude_names=frozenset({"b", "a", "c"}))
    b = RenamingConfig(exclude_names=frozenset({"c", "a", "b"}))
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() != RenamingConfig(exclude_names=frozenset({"a"})).fingerprint()
    assert RenamingConfig().fingerprint() != RenamingConfig(fix_leaks=True).fingerprint()


def test_leading_article_is_not_doubled():
    sents = ["He toured the United States and Mexico .".split(), "United States fans cheered .".split()]
    doc = Document(
        title="Tour",
        sents=sents,
        entities=[
            Entity([_m("United States", 0, 3, 5, "LOC"), _m("United States", 1, 0, 2, "LOC")]),
            Entity([_m("Mexico", 0, 6, 7, "LOC")]),
        ],
        relations=[],
    )
    kb = FakeKB(
        items={
            "Q30": (["country"], ["United States"]),
            "Q96": (["country"], ["Mexico"]),
            "Q77": (["country"], ["The Gambia"]),
        },
        links={"United States": "Q30"},
    )
    out = RenamingPipeline(kb).rename(doc, seed=0)
    # "the United States" -> "the Gambia", not "the The Gambia"; the name stays one name for both mentions
    assert out.sents[0][:5] == ["He", "toured", "the", "Gambia", "and"]
    assert [m.name for m in out.entities[0].mentions] == ["Gambia", "Gambia"]
    assert out.sents[1][0] == "Gambia"
    assert [s.new_name for s in out.substitutions if s.entity == 0] == ["Gambia"]
    # a mention not preceded by "the" keeps the article of the new name
    doc2 = Document(title="T2", sents=[["Mexico", "and", "United", "States"]],
                    entities=[Entity([_m("United States", 0, 2, 4, "LOC")])], relations=[])
    del kb.items["Q96"]
    out2 = RenamingPipeline(kb).rename(doc2, seed=0)
    assert out2.entities[0].mentions[0].name == "The Gambia"


def test_report_records_every_entitys_outcome():
    kb = _kb()
    kb.items["Q18094"] = ([], ["Honolulu"])
    del kb.items["Q99"]
    _, report = RenamingPipeline(kb).rename_with_report(_doc(), seed=0)
    assert report.outcomes == {
        0: "exact", 1: "unchanged:untyped", 2: "unchanged:no-candidate", 3: "exact", 4: "rule", 5: "unchanged:unlinked",
    }  # fmt: skip


def test_articles_agree_and_a_count_of_one_pluralises_the_noun_that_ends_the_sentence():
    # "an Ohio senator" -> "a Kansas senator"; "one year" at the very end of the sentence -> "<n> years"
    sents = ["He was an Ohio senator for one year".split()]
    doc = Document(title="Senator", sents=sents, entities=[Entity([_m("Ohio", 0, 3, 4, "LOC")]),
                                                         Entity([_m("one", 0, 6, 7, "NUM")])])  # fmt: skip
    kb = FakeKB(items={"Q1": (["state"], ["Ohio"]), "Q2": (["state"], ["Kansas"])}, links={"Ohio": "Q1"})
    for seed in range(3):
        out, report = RenamingPipeline(kb).rename_with_report(doc, seed)
        assert out.sents[0][:5] == ["He", "was", "a", "Kansas", "senator"]
        assert out.sents[0][6] not in ("one", "1") and out.sents[0][7] == "years"
        assert (report.articles_fixed, report.nouns_pluralized) == (1, 1)
        validate_document(out)


def test_a_leading_article_and_a_plural_are_preferred_among_names_of_the_same_form():
    # "The Beatles" (article, plural) gets the candidate's "The Monkees" although "Rolling Band" comes first
    sents = ["The Beatles played .".split(), "Fab Four fans cheered .".split(), "The Beatles split .".split()]
    doc = Document(title="Band", sents=sents, entities=[Entity([
        _m("The Beatles", 0, 0, 2, "ORG"), _m("Fab Four", 1, 0, 2, "ORG"), _m("The Beatles", 2, 0, 2, "ORG")])])  # fmt: skip
    kb = FakeKB(
        items={"Q1": (["band"], ["The Beatles", "Fab Four"]), "Q2": (["band"], ["Rolling Band", "The Monkees"])},
        links={"The Beatles": "Q1"},
    )
    out = RenamingPipeline(kb).rename(doc, seed=0)
    assert [(s.original_name, s.new_name) for s in out.substitutions] == [
        ("The Beatles", "The Monkees"), ("Fab Four", "Rolling Band"),
    ]  # fmt: skip


def _agency_doc() -> Document:
    sents = ["The National Aeronautics and Space Administration ( NASA ) launched it ; NASA said so .".split()]
    mentions = [_m("National Aeronautics and Space Administration", 0, 1, 6, "ORG"), _m("NASA", 0, 7, 8, "ORG"),
                _m("NASA", 0, 12, 13, "ORG")]  # fmt: skip
    return Document(title="Launch", sents=sents, entities=[Entity(mentions)])


def test_an_acronym_needs_a_candidate_with_an_acronym_and_one_is_enough():
    items = {
        "Q23548": (["agency"], ["National Aeronautics and Space Administration", "NASA"]),
        "Q1": (["agency"], ["Space Agency Two", "Second Space Agency"]),  # no acronym: cannot serve "NASA"
        "Q2": (["agency"], ["European Space Agency", "ESA"]),  # exactly one acronym, as many as needed
    }
    kb = FakeKB(items=items, links={"National Aeronautics and Space Administration": "Q23548"})
    for seed in range(4):
        out, report = RenamingPipeline(kb).rename_with_report(_agency_doc(), seed)
        assert report.outcomes[0] == "exact"
        assert [m.name for m in out.entities[0].mentions] == ["European Space Agency", "ESA", "ESA"]
    del items["Q2"]  # candidates exist, but none has an acronym: the reason says so
    out, report = RenamingPipeline(kb).rename_with_report(_agency_doc(), 0)
    assert report.outcomes[0] == "unchanged:no-form-match" and out.sents == _agency_doc().sents


def test_a_new_number_never_equals_a_name_already_in_the_document():
    # the bands "Three", "Four" and "Five" stay (unlinked): "two" may become "six".."nine", never one of them
    sents = ["Three , Four and Five played two songs .".split()]
    entities = [Entity([_m(n, 0, i, i + 1, "ORG")]) for n, i in (("Three", 0), ("Four", 2), ("Five", 4))]
    doc = Document(title="Gig", sents=sents, entities=entities + [Entity([_m("two", 0, 6, 7, "NUM")])])
    new = []
    for seed in range(12):
        out, report = RenamingPipeline(_kb()).rename_with_report(doc, seed)
        if report.outcomes[3] == "rule":
            new.append(out.entities[3].mentions[0].name)
    assert len(new) >= 10 and not {n.casefold() for n in new} & {"three", "four", "five", "one", "two"}


def test_rename_dataset_refuses_an_empty_seed_list():
    with pytest.raises(ValueError, match="at least one seed"):
        rename_dataset(documents_to_dataset([_doc()]), RenamingPipeline(_kb()), seeds=[])


def test_rename_dataset_names_the_document_columns_a_dataset_lacks():
    dataset = documents_to_dataset([_doc()]).remove_columns(["vertexSet"])
    with pytest.raises(ValueError, match=r"lacks document columns \['vertexSet'\]"):
        rename_dataset(dataset, RenamingPipeline(_kb()), seeds=[0])


def test_percentages_stay_within_100_whether_the_percent_word_is_inside_the_mention_or_after_it():
    # DocRED often leaves "%" / "percent" out of the mention; a 3-digit share cannot go below 101 in its format,
    # so it may only stay as it is, while "45" (two digits) always has room
    text = "Turnout rose 150 % , then 250 percent , 350 pct and 450 percent ; 45 % voted .".split()
    spans = [(2, 3), (5, 6), (8, 9), (11, 13), (15, 16)]  # "450 percent" is a whole mention
    doc = Document(title="Vote", sents=[text],
                   entities=[Entity([_m(" ".join(text[a:b]), 0, a, b, "NUM")]) for a, b in spans])  # fmt: skip
    renamed_45 = 0
    for seed in range(6):
        out, report = RenamingPipeline(_kb()).rename_with_report(doc, seed)
        for e, entity in enumerate(out.entities):
            if report.outcomes[e] == "rule":
                assert float(entity.mentions[0].name.split()[0]) <= 100, (seed, entity.mentions[0].name)
        renamed_45 += report.outcomes[4] == "rule"
    assert renamed_45 == 6


def test_a_demonym_mention_gets_the_candidates_demonym_past_its_plain_names():
    # entity "United States" named "American" twice and "United States" once: Spain's plain name "Spain" comes first
    # in KB order but cannot serve the demonym, so "American" -> "Spanish" and "United States" -> "Spain"
    sents = ["American troops left United States soil .".split(), "American officials agreed .".split()]
    mentions = [_m("American", 0, 0, 1, "LOC"), _m("United States", 0, 3, 5, "LOC"), _m("American", 1, 0, 1, "LOC")]
    doc = Document(title="Troops", sents=sents, entities=[Entity(mentions)])
    kb = FakeKB(items={"Q30": (["country"], ["United States", "American"]), "Q29": (["country"], ["Spain", "Spanish"])},
                links={"American": "Q30"})  # fmt: skip
    out, report = RenamingPipeline(kb).rename_with_report(doc, seed=0)
    assert report.outcomes[0] == "exact"
    assert [(s.original_name, s.new_name) for s in out.substitutions] == [("American", "Spanish"), ("United States", "Spain")]
    assert out.sents[0][:4] == ["Spanish", "troops", "left", "Spain"]


class _ExcludingKB(FakeKB):
    """A FakeKB that honours ``exclude`` (so an entity's own item is never offered) and has demonyms."""

    def __init__(self, items, links, demonyms=None):
        super().__init__(items, links)
        self.demonym_lists = demonyms or {}

    def candidates(self, type_id, min_names, exclude=frozenset()):
        return [c for c in super().candidates(type_id, min_names, exclude) if c.item_id not in exclude]

    def demonyms(self, item_id):
        return list(self.demonym_lists.get(item_id, []))


def test_a_possessive_names_stem_is_served_first():
    # "Smith 's" is the most frequent name, but the bare "Smith" takes the label and the possessive the next name
    sents = ["Smith 's car broke .".split(), "Smith 's wife drove .".split(), "Smith said so .".split()]
    doc = Document(title="Car", sents=sents, entities=[Entity([
        _m("Smith 's", 0, 0, 2, "PER"), _m("Smith 's", 1, 0, 2, "PER"), _m("Smith", 2, 0, 1, "PER")])])  # fmt: skip
    kb = FakeKB(items={"Q1": (["human"], ["Smith"]), "Q2": (["human"], ["Jones", "Bob Jones"])}, links={"Smith 's": "Q1"})
    out = RenamingPipeline(kb).rename(doc, seed=0)
    assert [m.name for m in out.entities[0].mentions] == ["Bob Jones 's", "Bob Jones 's", "Jones"]


def test_a_new_name_loses_its_article_after_a_the_that_starts_the_sentence():
    doc = Document(title="T", sents=["The United States won .".split()],
                   entities=[Entity([_m("United States", 0, 1, 3, "LOC")])], relations=[])  # fmt: skip
    kb = FakeKB(items={"Q30": (["country"], ["United States"]), "Q77": (["country"], ["The Gambia"])},
                links={"United States": "Q30"})  # fmt: skip
    out = RenamingPipeline(kb).rename(doc, seed=0)
    assert out.sents[0] == ["The", "Gambia", "won", "."]


def test_demonyms_of_the_kb_serve_demonym_mentions_and_no_candidate_is_told_from_no_form():
    doc = Document(title="Band", sents=["An American band played .".split()],
                   entities=[Entity([_m("American", 0, 1, 2, "LOC")])])  # fmt: skip
    items = {"Q30": (["country"], ["United States"]), "Q29": (["country"], ["Spain"])}
    kb = _ExcludingKB(items, {"American": "Q30"}, demonyms={"Q30": ["American"], "Q29": ["Spanish"]})
    out, report = RenamingPipeline(kb).rename_with_report(doc, seed=0)
    assert out.sents[0] == ["A", "Spanish", "band", "played", "."]  # the demonym comes from kb.demonyms
    assert report.outcomes[0] == "exact" and report.articles_fixed == 1
    del items["Q29"]  # no other country at all: no candidate, not a form mismatch
    _, report = RenamingPipeline(kb).rename_with_report(doc, seed=0)
    assert report.outcomes[0] == "unchanged:no-candidate"


def test_a_plain_name_takes_an_acronym_when_no_plain_name_is_left():
    sents = ["Guardian Media Group owns The Guardian .".split(), "Guardian Media Group grew .".split()]
    doc = Document(title="Press", sents=sents, entities=[Entity([
        _m("Guardian Media Group", 0, 0, 3, "ORG"), _m("The Guardian", 0, 4, 6, "ORG"),
        _m("Guardian Media Group", 1, 0, 3, "ORG")])])  # fmt: skip
    kb = FakeKB(items={"Q1": (["company"], ["Guardian Media Group", "The Guardian"]),
                       "Q2": (["company"], ["Daily Mail Trust", "DMGT"])}, links={"Guardian Media Group": "Q1"})  # fmt: skip
    out, report = RenamingPipeline(kb).rename_with_report(doc, seed=0)
    assert report.outcomes[0] == "exact"
    assert [m.name for m in out.entities[0].mentions] == ["Daily Mail Trust", "DMGT", "Daily Mail Trust"]


def test_excluded_names_veto_values_only_with_exclude_values():
    # every word the count "two" could become is excluded: allowed by default (numbers are in any training
    # split), refused with exclude_values (the entity stays, and the reason is a collision, not a missing rule)
    words = frozenset({"three", "four", "five", "six", "seven", "eight", "nine"})
    doc = Document(title="Songs", sents=["They played two songs and dozens of encores .".split()],
                   entities=[Entity([_m("two", 0, 2, 3, "NUM")]), Entity([_m("dozens", 0, 5, 6, "NUM")])])  # fmt: skip
    for seed in range(3):
        out, report = RenamingPipeline(_kb(), RenamingConfig(exclude_names=words)).rename_with_report(doc, seed)
        assert report.outcomes == {0: "rule", 1: "unchanged:no-rule"} and out.entities[0].mentions[0].name in words
        config = RenamingConfig(exclude_names=words, exclude_values=True)
        out, report = RenamingPipeline(_kb(), config).rename_with_report(doc, seed)
        assert report.outcomes == {0: "unchanged:value-collision", 1: "unchanged:no-rule"} and out.sents == doc.sents


def test_a_shifted_year_equal_to_a_name_left_in_the_text_leaves_the_year_unchanged():
    # every year 2007 could move to (1977-2020) is the name of an entity that stays (unlinked)
    years = [str(y) for y in range(1977, 2021) if y != 2007]
    text = ["Lists"] + years + [";", "in", "2007", "."]
    entities = [Entity([_m(y, 0, i + 1, i + 2, "MISC")]) for i, y in enumerate(years)]
    entities.append(Entity([_m("2007", 0, len(years) + 3, len(years) + 4, "TIME")]))
    doc = Document(title="Years", sents=[text], entities=entities)
    for seed in range(3):
        out, report = RenamingPipeline(_kb()).rename_with_report(doc, seed)
        assert report.year_shift is not None and report.outcomes[len(years)] == "unchanged:value-collision"
        assert out.sents == doc.sents


def test_a_count_of_one_is_checked_in_every_mention():
    # the first mention ends its sentence; the second is followed by the noun it counts
    sents = ["Goals : one .".split(), "He scored one goal .".split()]
    doc = Document(title="Goals", sents=sents, entities=[Entity([_m("one", 0, 2, 3, "NUM"), _m("one", 1, 2, 3, "NUM")])])
    for seed in range(3):
        out, report = RenamingPipeline(_kb()).rename_with_report(doc, seed)
        assert out.sents[1][3] == "goals" and report.nouns_pluralized == 1


def test_a_fresh_rename_report_counts_nothing():
    """The public report's counters start at zero (and are dataclass fields, so asdict() carries them)."""
    import dataclasses

    from envre_hf.renaming import RenameReport

    assert dataclasses.asdict(RenameReport()) == {
        "outcomes": {},
        "leaks_found": 0,
        "leaks_fixed": 0,
        "articles_fixed": 0,
        "nouns_pluralized": 0,
        "year_shift": None,
    }

"""Hypothesis strategies: generated DocRED documents, knowledge bases and value names.

A generated document is built from a *plan* so the tests know what was put where:

* entities of the KB types (PER, LOC, ORG, MISC) have 1-2 distinct names made of capitalised
  words, each word used by one entity only (so an unannotated occurrence is unambiguous), some
  with a leading "The"; 1-4 mentions each, every name used at least once;
* NUM and TIME entities carry values in every format the value rules know (years, year ranges,
  full / abbreviated / month-year / day-month dates, decades, centuries, clock times, numbers
  with commas and decimals, percentages, currency amounts, number words, ordinals);
* optional *compound* entities (never linked) whose name contains another entity's name
  ("Loud" and "Loud Tour"), nested mentions (a new entity on the first token of a longer
  mention) and partially overlapping mentions;
* *planted* unannotated occurrences of KB-entity names in the filler text (the leaks the leak
  check must find);
* labels with evidence.

The knowledge base offers a few items per type whose names come from the same small word pool
as the documents, in case variants ("Velocifero" / "velocifero") and with and without "The", so
collisions between entities, between an entity's names and with excluded names are frequent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from envre_hf.documents import Document, Entity, Mention, Relation
from envre_hf.kb.base import Candidate, KnowledgeBase

#: Capitalised words of entity names (documents and KB draw from the same pool).
WORDS = (
    "Velocifero", "Loud", "Gambia", "Mira", "Kato", "Orion", "Sable", "Nova", "Piper", "Tessel",
    "Brandt", "Quill", "Harbor", "Lumen", "Zephyr", "Corvin",
)  # fmt: skip
#: Lowercase filler tokens (never part of a name; "the" exercises the article rule).
FILLER = ("the", "in", "of", "and", "was", "visited", "with", ",", "near", "by")
KB_TYPES = {"PER": ("human",), "LOC": ("city", "place"), "ORG": ("band", "organization"), "MISC": ("work",)}
RELATIONS = ("P17", "P131", "P27", "P19", "P569", "P161", "P175", "P527")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
MONTH_ABBR = ("Jan.", "Feb.", "Aug.", "Sept.", "Oct.", "Dec.")


# --------------------------------------------------------------------------- values


@st.composite
def number_text(draw) -> str:
    """A number in digits: optional thousands commas, optional decimals (trailing zeros included)."""
    groups = draw(st.integers(0, 2))
    head = str(draw(st.integers(1, 999)))
    body = head + "".join("," + f"{draw(st.integers(0, 999)):03d}" for _ in range(groups))
    if draw(st.booleans()):
        body += "." + draw(st.text("0123456789", min_size=1, max_size=3))
    return body


@st.composite
def value_tokens(draw, coarse: str, year: int) -> list[str]:
    """Tokens of one NUM/TIME name in one of the formats the rules know."""
    if coarse == "TIME":
        kind = draw(
            st.sampled_from(
                ["year", "range2", "range4", "date", "abbr", "month-year", "day-month", "decade4", "decade2",
                 "century", "clock"]
            )
        )  # fmt: skip
        month = draw(st.sampled_from(MONTHS))
        day = str(draw(st.integers(1, 28)))
        if kind == "year":
            return [str(year)]
        if kind == "range2":
            return [f"{year}–{(year + draw(st.integers(1, 5))) % 100:02d}"]
        if kind == "range4":
            return [f"{year}-{year + draw(st.integers(1, 5))}"]
        if kind == "date":
            return [month, day, ",", str(year)]
        if kind == "abbr":
            return [draw(st.sampled_from(MONTH_ABBR)), day, ",", str(year)]
        if kind == "month-year":
            return [month, str(year)]
        if kind == "day-month":
            return [day, month]
        if kind == "decade4":
            return [f"{year // 10 * 10}s"]
        if kind == "decade2":
            return [f"{year // 10 % 10}0s"]
        if kind == "century":
            n = draw(st.integers(12, 20))
            return [f"{n}th", "century"]
        return [f"{draw(st.integers(1, 23)):02d}:{draw(st.integers(0, 59)):02d}"]
    kind = draw(st.sampled_from(["number", "percent", "currency", "word", "ordinal-word", "ordinal"]))
    if kind == "number":
        return [draw(number_text())]
    if kind == "percent":
        return [draw(number_text()), "%"]
    if kind == "currency":
        return ["US$", draw(number_text()), draw(st.sampled_from(["million", "billion"]))]
    if kind == "word":
        return [draw(st.sampled_from(["three", "Seven", "twelve", "forty"]))]
    if kind == "ordinal-word":
        return [draw(st.sampled_from(["Second", "third", "fifth"]))]
    n = draw(st.integers(1, 30))
    return [f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"]


@st.composite
def value_names(draw, coarse: str) -> list[list[str]]:
    """1-2 distinct names of one NUM/TIME entity (two TIME names share their year, like "2007" and a date)."""
    year = draw(st.integers(1500, 2030))
    names = [draw(value_tokens(coarse, year)) for _ in range(draw(st.integers(1, 2)))]
    out: list[list[str]] = []
    for tokens in names:
        if tokens not in out:
            out.append(tokens)
    return out


# --------------------------------------------------------------------------- documents


@dataclass
class DocPlan:
    """What was generated, for the tests: the document and where the leaks were planted."""

    doc: Document
    #: entity index -> number of planted unannotated occurrences of its names
    planted: dict[int, int] = field(default_factory=dict)
    #: entities whose name contains another entity's name (never linked)
    compound: set[int] = field(default_factory=set)
    #: entities given a nested or partially overlapping mention
    overlapping: set[int] = field(default_factory=set)


def _name(tokens: list[str]) -> str:
    return " ".join(tokens)


@st.composite
def documents(draw, max_entities: int = 6, values: bool = True, leaks: bool = True, overlaps: bool = True) -> DocPlan:
    """A generated DocRED document (see the module docstring)."""
    n_kb = draw(st.integers(1, max_entities))
    words = draw(st.lists(st.sampled_from(WORDS), min_size=2 * n_kb + 2, max_size=2 * n_kb + 2, unique=True))
    pool = iter(words)
    specs: list[tuple[str, list[list[str]]]] = []  # (coarse type, names as tokens)
    for _ in range(n_kb):
        coarse = draw(st.sampled_from(["PER", "PER", "LOC", "LOC", "ORG", "MISC"]))
        names = []
        for _ in range(draw(st.integers(1, 2))):
            tokens = [next(pool)]
            if draw(st.sampled_from([False, False, False, True])):
                tokens = ["The", *tokens]
            names.append(tokens)
        specs.append((coarse, names))
    kb_entities = list(range(n_kb))
    if values:
        for _ in range(draw(st.integers(0, 3))):
            coarse = draw(st.sampled_from(["TIME", "NUM"]))
            specs.append((coarse, draw(value_names(coarse))))
    compound: set[int] = set()
    if overlaps and draw(st.sampled_from([True, True, False])):
        base = draw(st.sampled_from(kb_entities))
        compound.add(len(specs))
        specs.append(("MISC", [[*specs[base][1][0], "Tour"]]))
    n_sents = draw(st.integers(1, 4))
    # sentence items: ("m", entity, name index) mentions, ("p", entity, name index) planted occurrences
    items: list[list[tuple[str, int, int]]] = [[] for _ in range(n_sents)]
    for e, (_, names) in enumerate(specs):
        k = draw(st.integers(max(1, len(names)), 4))
        for j in range(k):
            which = j if j < len(names) else draw(st.integers(0, len(names) - 1))
            items[draw(st.integers(0, n_sents - 1))].append(("m", e, which))
    planted: dict[int, int] = {}
    if leaks:
        for _ in range(draw(st.integers(0, 3))):
            e = draw(st.sampled_from(kb_entities))
            items[draw(st.integers(0, n_sents - 1))].append(("p", e, draw(st.integers(0, len(specs[e][1]) - 1))))
            planted[e] = planted.get(e, 0) + 1
    sents: list[list[str]] = []
    spans: dict[int, list[tuple[int, int, int, int]]] = {}  # entity -> (sent, start, end, name index)
    for s, sent_items in enumerate(items):
        order = draw(st.permutations(sent_items))
        tokens: list[str] = draw(st.lists(st.sampled_from(FILLER), max_size=1))  # a name may open the sentence
        for kind, e, which in order:
            name = specs[e][1][which]
            start = len(tokens)
            tokens.extend(name)
            if kind == "m":
                spans.setdefault(e, []).append((s, start, len(tokens), which))
            tokens.extend(draw(st.lists(st.sampled_from(FILLER), min_size=1, max_size=2)))
        sents.append(tokens)
    entities = []
    for e, (coarse, names) in enumerate(specs):
        mentions = [
            Mention(name=_name(names[which]), sent_id=s, pos=(a, b), type=coarse) for s, a, b, which in spans[e]
        ]
        entities.append(Entity(mentions))
    overlapping: set[int] = set()
    if overlaps and draw(st.booleans()):
        # a nested mention (a new entity on the first token of a longer mention) or a partial overlap
        # (the last token of a mention and the filler token after it)
        longer = [(e, m) for e in kb_entities for m in entities[e].mentions if m.end - m.start >= 2]
        e0 = draw(st.sampled_from(kb_entities))
        m0 = draw(st.sampled_from(entities[e0].mentions))
        if longer and draw(st.booleans()):
            e0, m0 = draw(st.sampled_from(longer))
            pos = (m0.start, m0.start + 1)
        else:
            pos = (m0.end - 1, m0.end + 1)
        words_at = sents[m0.sent_id][pos[0] : pos[1]]
        overlapping |= {e0, len(entities)}
        entities.append(Entity([Mention(name=_name(words_at), sent_id=m0.sent_id, pos=pos, type="MISC")]))
    n_ent = len(entities)
    triples = draw(
        st.lists(
            st.tuples(st.integers(0, n_ent - 1), st.integers(0, n_ent - 1), st.sampled_from(RELATIONS)),
            max_size=6,
            unique=True,
        )
    )
    relations = [
        Relation(h, t, r, sorted(draw(st.sets(st.integers(0, n_sents - 1), max_size=2))))
        for h, t, r in triples
        if h != t
    ]
    title = draw(st.sampled_from([_name(specs[0][1][0]), "Generated document", "A title"]))
    doc = Document(title=title, sents=sents, entities=entities, relations=relations, doc_id=f"gen-{draw(st.integers(0, 99))}")
    return DocPlan(doc, planted, compound, overlapping)


# --------------------------------------------------------------------------- knowledge bases


class DictKB(KnowledgeBase):
    """Items with types and names in dicts; links an entity by its first mention's name."""

    name = "dict"

    def __init__(self, items: dict[str, tuple[tuple[str, ...], list[str]]], links: dict[str, str]):
        self.items = items
        self.links = links

    def link(self, doc, entity_index):
        return self.links.get(doc.entities[entity_index].mentions[0].name)

    def types(self, item_id):
        return list(self.items[item_id][0]) if item_id in self.items else []

    def candidates(self, type_id, min_names, exclude=frozenset()):
        return [
            Candidate(item, "exact")
            for item, (types, names) in sorted(self.items.items())
            if type_id in types and len(names) >= min_names and item not in exclude
        ]

    def names(self, item_id):
        return list(self.items[item_id][1])


@st.composite
def kb_name(draw) -> str:
    """A KB name from the shared word pool: case variants, "The" and two-word names."""
    word = draw(st.sampled_from(WORDS))
    word = draw(st.sampled_from([word, word.lower(), word.upper()]))
    form = draw(st.integers(0, 3))
    if form == 1:
        return f"The {word}"
    if form == 2:
        return f"{word} {draw(st.sampled_from(WORDS))}"
    return word


@st.composite
def knowledge_bases(draw, doc: Document) -> DictKB:
    """Own items for most KB-type entities of ``doc`` (the rest stay unlinked) and 0-6 candidates per type."""
    items: dict[str, tuple[tuple[str, ...], list[str]]] = {}
    links: dict[str, str] = {}
    for e, entity in enumerate(doc.entities):
        coarse = entity.type
        if coarse not in KB_TYPES or not draw(st.sampled_from([True, True, True, True, True, False])):
            continue
        first = entity.mentions[0].name
        if first in links or " Tour" in f" {first}":
            continue  # compound names are never linked
        item = f"Q{9000 + e}"
        items[item] = (KB_TYPES[coarse], entity.names)
        links[first] = item
    n = 0
    for types in KB_TYPES.values():
        for _ in range(draw(st.sampled_from([3, 4, 6, 2, 0]))):
            n += 1
            base = draw(kb_name())
            # case variants of one name in one item ("Velocifero" and "velocifero")
            variants = [base, base.lower(), base.title()]
            names = draw(st.lists(st.one_of(kb_name(), st.sampled_from(variants)), min_size=1, max_size=4))
            items[f"Q{n}"] = (types, list(dict.fromkeys(n.strip() for n in names)))
    return DictKB(items, links)


def excluded_names(kb: DictKB):
    """A subset of the KB's names to exclude, some with their leading "The" added or removed."""
    pool = sorted({name for _, names in kb.items.values() for name in names})
    if not pool:
        return st.just(frozenset())

    def variant(name: str):
        bare = name[4:] if name.lower().startswith("the ") else name
        return st.sampled_from([name, bare, f"The {bare}", f"the {bare.lower()}"])

    return st.frozensets(st.sampled_from(pool).flatmap(variant), max_size=4)

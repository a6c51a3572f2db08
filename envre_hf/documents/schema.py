"""Typed DocRED documents, shared by every stage: sentences of tokens, entities (coreferent mentions) and labels;
other fields (Re-DocRED's ``global_pos``) are kept in ``extra``, so reading then writing loses nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The coarse entity types of DocRED.
ENTITY_TYPES = ("PER", "ORG", "LOC", "TIME", "NUM", "MISC")


def sentence_offsets(sents: list[list[str]]) -> list[int]:
    """Start of each sentence of ``sents`` in the document-level token sequence."""
    offsets, total = [], 0
    for sent in sents:
        offsets.append(total)
        total += len(sent)
    return offsets


@dataclass
class Mention:
    """One occurrence of an entity: tokens ``sents[sent_id][pos[0]:pos[1]]``."""

    name: str
    sent_id: int
    pos: tuple[int, int]
    type: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def start(self) -> int:
        return self.pos[0]

    @property
    def end(self) -> int:
        return self.pos[1]

    def tokens(self, sents: list[list[str]]) -> list[str]:
        return sents[self.sent_id][self.pos[0] : self.pos[1]]


@dataclass
class Entity:
    """A coreference cluster. ``wikidata_id`` is set when the entity is linked (e.g. Linked-DocRED)."""

    mentions: list[Mention]
    wikidata_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        """The entity's coarse type: the most frequent mention type (first seen wins ties)."""
        counts: dict[str, int] = {}
        for m in self.mentions:
            counts[m.type] = counts.get(m.type, 0) + 1
        return max(counts, key=counts.__getitem__) if counts else ""

    @property
    def names(self) -> list[str]:
        """Distinct mention names in order of first appearance in the mention list."""
        return list(dict.fromkeys(m.name for m in self.mentions))


@dataclass
class Relation:
    """A relation label: entity ``h`` (index into ``entities``) has relation ``r`` (a P-id) to ``t``."""

    h: int
    t: int
    r: str
    evidence: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Substitution:
    """Provenance of one renamed entity in a renamed copy (set by the renaming pipeline)."""

    entity: int
    item_id: str | None
    fine_type: str | None
    original_name: str
    new_name: str
    match: str = "exact"  # "exact", "relaxed:<how>" or "rule" (NUM/TIME)


@dataclass
class Document:
    """A DocRED document. ``key`` (``doc_id`` or, failing that, ``title``) identifies it in every stage."""

    title: str
    sents: list[list[str]]
    entities: list[Entity]
    relations: list[Relation] = field(default_factory=list)
    doc_id: str | None = None
    #: False for unlabelled files (e.g. the DocRED test split): writers then omit ``labels``.
    has_labels: bool = True
    #: Renamed copies: title of the original document, renaming seed, and what was substituted.
    orig_title: str | None = None
    seed: int | None = None
    substitutions: list[Substitution] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.doc_id if self.doc_id is not None else self.title

    @property
    def num_entities(self) -> int:
        return len(self.entities)

    def sentence_offsets(self) -> list[int]:
        """Start of each sentence in the document-level token sequence."""
        return sentence_offsets(self.sents)

    def covered(self) -> dict[int, set[int]]:
        """Per sentence, the token positions inside some mention (what renaming never edits as plain text)."""
        out: dict[int, set[int]] = {}
        for entity in self.entities:
            for m in entity.mentions:
                out.setdefault(m.sent_id, set()).update(range(m.pos[0], m.pos[1]))
        return out

    def is_intra(self, h: int, t: int) -> bool:
        """True when some mention of ``h`` and some mention of ``t`` share a sentence."""
        return bool({m.sent_id for m in self.entities[h].mentions} & {m.sent_id for m in self.entities[t].mentions})

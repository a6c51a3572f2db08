"""Step 1 from links a dataset already carries (Linked-(Re-)DocRED's ``entity_linking``), plus the linking
conventions the KB backends share."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from ..documents import Document, Entity
from .base import Candidate, KnowledgeBase

#: Coarse types whose replacements are rule-based (new numbers/dates), never linked to items.
RULE_BASED_TYPES = frozenset({"NUM", "TIME"})

_QID = re.compile(r"^(?:https?://www\.wikidata\.org/(?:entity|wiki)/)?(Q[1-9][0-9]*)$")


def normalize_item_id(value: str | None) -> str | None:
    """``"Q42"`` from ``"Q42"`` or an entity URI (``http://www.wikidata.org/entity/Q42``); else ``None``."""
    if not isinstance(value, str):
        return None
    match = _QID.match(value.strip())
    return match.group(1) if match else None


def names_by_frequency(entity: Entity) -> list[str]:
    """The entity's distinct mention names, most frequent first (first appearance breaks ties): the names
    backends search for, in this order, when linking by name."""
    return [name for name, _ in Counter(m.name.strip() for m in entity.mentions if m.name.strip()).most_common()]


def link_by_name(doc: Document, entity_index: int, lookup: Callable[[str], str | None]) -> str | None:
    """Step 1 by name, as the Wikidata backends do it: the first item ``lookup`` finds for the entity's names,
    most frequent first; NUM/TIME entities are never linked."""
    entity = doc.entities[entity_index]
    if entity.type in RULE_BASED_TYPES:
        return None
    return next((item for item in map(lookup, names_by_frequency(entity)) if item is not None), None)


class PrecomputedLinks(KnowledgeBase):
    """Use ``Entity.wikidata_id`` for step 1, fall back to ``kb.link`` (``fallback=False``: leave it unlinked);
    delegate everything else."""

    def __init__(self, kb: KnowledgeBase, *, fallback: bool = True):
        self.kb = kb
        self.fallback = fallback
        self.name = f"precomputed+{kb.name}"
        #: How step 1 was answered: ``precomputed``, ``fallback`` (by ``kb.link``) or ``unlinked``.
        self.link_counts: dict[str, int] = {"precomputed": 0, "fallback": 0, "unlinked": 0}

    def link(self, doc: Document, entity_index: int) -> str | None:
        item = normalize_item_id(doc.entities[entity_index].wikidata_id)
        if item is not None:
            self.link_counts["precomputed"] += 1
            return item
        item = self.kb.link(doc, entity_index) if self.fallback else None
        self.link_counts["fallback" if item is not None else "unlinked"] += 1
        return item

    def types(self, item_id: str) -> list[str]:
        return self.kb.types(item_id)

    def candidates(self, type_id: str, min_names: int, exclude: frozenset[str] = frozenset()) -> list[Candidate]:
        return self.kb.candidates(type_id, min_names, exclude)

    def names(self, item_id: str) -> list[str]:
        return self.kb.names(item_id)

    def demonyms(self, item_id: str) -> list[str]:
        return self.kb.demonyms(item_id)

    def popularity(self, item_id: str) -> int | None:
        return self.kb.popularity(item_id)

    def snapshot_id(self) -> str:
        return f"precomputed+{self.kb.snapshot_id()}"

    def close(self) -> None:
        self.kb.close()

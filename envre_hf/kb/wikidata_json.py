"""Reading Wikidata's entity JSON (shared by ``wbgetentities`` and the dumps), so the HTTP and the dump
backends agree on the same item."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .base import distinct_names

#: "instance of": the property whose values are an item's fine-grained types.
INSTANCE_OF = "P31"
#: "demonym": monolingual-text names of the people of a place ("American" for the United States).
DEMONYM = "P1549"

_ITEM_ID = re.compile(r"^Q[1-9][0-9]*$")

_RANK_ORDER = {"preferred": 0, "normal": 1}


def is_item_id(value: object) -> bool:
    """True for an item id such as ``"Q42"``."""
    return isinstance(value, str) and _ITEM_ID.match(value) is not None


def item_number(item_id: str) -> int:
    """``42`` for ``"Q42"`` (the integer key of the SQLite index)."""
    if not is_item_id(item_id):
        raise ValueError(f"not a Wikidata item id: {item_id!r}")
    return int(item_id[1:])


def snak_item_value(snak: Any) -> str | None:
    """The item id a ``wikibase-item`` snak points to, or ``None`` (other datatypes, somevalue/novalue)."""
    if not isinstance(snak, dict) or snak.get("snaktype") != "value":
        return None
    datavalue = snak.get("datavalue")
    if not isinstance(datavalue, dict) or datavalue.get("type") != "wikibase-entityid":
        return None
    value = datavalue.get("value")
    if not isinstance(value, dict) or value.get("entity-type", "item") != "item":
        return None
    item = value.get("id")
    if isinstance(item, str) and item[:1] == "Q":
        return item
    number = value.get("numeric-id")  # old dumps carry only the numeric id
    return f"Q{number}" if isinstance(number, int) and number > 0 else None


@dataclass(frozen=True)
class EntityRecord:
    """What the knowledge bases keep of one item: ``truthy_types`` are the best-rank P31 values (SPARQL's
    ``wdt:P31``); ``item_values`` the items its main values point to (popularity counted on their side)."""

    item_id: str
    names: tuple[str, ...]
    types: tuple[str, ...]
    truthy_types: tuple[str, ...]
    statements: int
    item_values: tuple[str, ...]
    #: English P1549 demonyms, preferred rank first (deprecated dropped), duplicates removed.
    demonyms: tuple[str, ...] = ()

    @property
    def label(self) -> str | None:
        return self.names[0] if self.names else None


def parse_entity(entity: dict, language: str = "en") -> EntityRecord | None:
    """Reduce one entity JSON object to an :class:`EntityRecord`; ``None`` for non-items/missing entities.

    Types are the non-deprecated P31 values, preferred rank first. Raises ``KeyError``/``TypeError``/
    ``AttributeError`` on malformed statements (callers name the dump line or request).
    """
    item_id = entity.get("id")
    if not is_item_id(item_id) or entity.get("type", "item") != "item" or "missing" in entity:
        return None
    labels = entity.get("labels") or {}
    label_obj = labels.get(language) if isinstance(labels, dict) else None
    label = label_obj.get("value") if isinstance(label_obj, dict) else None
    aliases_obj = entity.get("aliases") or {}
    alias_list = aliases_obj.get(language, []) if isinstance(aliases_obj, dict) else []
    aliases = [a["value"] for a in alias_list if isinstance(a, dict) and isinstance(a.get("value"), str)]
    names = distinct_names(label if isinstance(label, str) else None, aliases)

    claims = entity.get("claims") or {}
    if not isinstance(claims, dict):  # empty claims are serialised as [] in dumps
        claims = {}
    statements = 0
    values: list[str] = []
    for statement_list in claims.values():
        statements += len(statement_list)
        for statement in statement_list:
            datavalue = statement["mainsnak"].get("datavalue")
            if datavalue is not None and datavalue.get("type") == "wikibase-entityid":
                target = snak_item_value(statement["mainsnak"])
                if target is not None and target != item_id:
                    values.append(target)

    typed = []
    for statement in claims.get(INSTANCE_OF, []) or []:
        if not isinstance(statement, dict):
            continue
        rank = statement.get("rank", "normal")
        target = snak_item_value(statement.get("mainsnak"))
        if target is not None and rank in _RANK_ORDER:
            typed.append((_RANK_ORDER[rank], len(typed), target))
    typed.sort()
    types = tuple(dict.fromkeys(t for _, _, t in typed))
    best = typed[0][0] if typed else None
    truthy = tuple(dict.fromkeys(t for rank, _, t in typed if rank == best))
    return EntityRecord(
        item_id, tuple(names), types, truthy, statements, tuple(values), parse_demonyms(claims, language)
    )


def parse_demonyms(claims: dict, language: str = "en") -> tuple[str, ...]:
    """The ``language`` texts of an item's P1549 (demonym) statements, preferred rank first."""
    ranked = []
    for statement in claims.get(DEMONYM, []) or []:
        if not isinstance(statement, dict) or statement.get("rank", "normal") not in _RANK_ORDER:
            continue
        snak = statement.get("mainsnak")
        datavalue = snak.get("datavalue") if isinstance(snak, dict) else None
        value = datavalue.get("value") if isinstance(datavalue, dict) else None
        if isinstance(value, dict) and value.get("language") == language and isinstance(value.get("text"), str):
            text = value["text"].strip()
            if text:
                ranked.append((_RANK_ORDER[statement.get("rank", "normal")], len(ranked), text))
    ranked.sort()
    return tuple(dict.fromkeys(text for _, _, text in ranked))

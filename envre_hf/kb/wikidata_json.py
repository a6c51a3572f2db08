"""Reading Wikidata's entity JSON (shared by ``wbgetentities`` and the dumps), so the HTTP and the dump
backends agree on the same item."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import clean_names

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
    names = clean_names([label, *aliases])  # label first (the order is part of the KB snapshot)

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

    typed = _ranked(claims, INSTANCE_OF, snak_item_value)
    best = typed[0][0] if typed else None
    truthy = tuple(dict.fromkeys(t for rank, t in typed if rank == best))
    demonyms = tuple(dict.fromkeys(text for _, text in _ranked(claims, DEMONYM, lambda snak: _text(snak, language))))
    return EntityRecord(
        item_id, tuple(names), tuple(dict.fromkeys(t for _, t in typed)), truthy, statements, tuple(values), demonyms
    )


def _ranked(claims: dict, prop: str, value_of: Callable[[Any], Any]) -> list[tuple[int, Any]]:
    """``(rank, value)`` of the non-deprecated ``prop`` statements with a value, preferred first, else in order."""
    ranked = []
    for statement in claims.get(prop, []) or []:
        if isinstance(statement, dict) and statement.get("rank", "normal") in _RANK_ORDER:
            value = value_of(statement.get("mainsnak"))
            if value is not None:
                ranked.append((_RANK_ORDER[statement.get("rank", "normal")], value))
    return sorted(ranked, key=lambda pair: pair[0])


def _text(snak: Any, language: str) -> str | None:
    """The stripped ``language`` text of a monolingual-text snak (a P1549 demonym), or None."""
    datavalue = snak.get("datavalue") if isinstance(snak, dict) else None
    value = datavalue.get("value") if isinstance(datavalue, dict) else None
    if isinstance(value, dict) and value.get("language") == language and isinstance(value.get("text"), str):
        return value["text"].strip() or None
    return None

"""Synthetic Wikidata entities and dumps in the real JSON format: a fixture of the tests and the dump benchmarks.

The entities look like ``wbgetentities`` / dump entities: ``labels``/``aliases`` per language,
``claims`` of statements with ``mainsnak`` (item, time, quantity, string values, ``somevalue``
snaks), ranks, qualifiers and references. Items belong to a few types (humans Q5, cities Q515,
countries Q6256, businesses Q4830453, musical groups Q215380, universities Q3918); some share a
label (homonyms), some have no English label, names vary in number so ``min_names`` matters.
Deterministic for a given ``(n_items, seed)``.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

#: The types of the synthetic items with their English labels.
SYNTHETIC_TYPES = {
    "Q5": "human",
    "Q515": "city",
    "Q6256": "country",
    "Q4830453": "business",
    "Q215380": "musical group",
    "Q3918": "university",
}

#: Items of secondary types (an item may be an instance of two types).
_SECOND_TYPES = {"Q4830453": "Q43229", "Q215380": "Q2088357"}  # organization, musical ensemble

#: Numeric id of the first generated item (type items and properties use small ids).
FIRST_ITEM = 1_000_000

_SYLLABLES = "ka lo mi ra ne to su vi da re po li ga no be sa ti mo ru ze fa del mar ton".split()
_TYPE_WEIGHTS = [("Q5", 40), ("Q515", 20), ("Q4830453", 15), ("Q215380", 10), ("Q3918", 8), ("Q6256", 7)]


def _word(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()


def _names(rng: random.Random, type_id: str) -> tuple[str, list[str]]:
    """An English label and 0-4 aliases in the style of the type."""
    if type_id == "Q5":
        first, last = _word(rng, 2), _word(rng, rng.randint(2, 3))
        label = f"{first} {last}"
        pool = [f"{first[0]}. {last}", last, f"{first} {_word(rng, 1)} {last}", f"{first[:3]} {last}"]
    elif type_id == "Q515":
        stem = _word(rng, rng.randint(2, 3))
        label = stem + rng.choice(["ton", "burg", "ville", "stad", ""])
        pool = [f"{label} City", f"City of {label}", stem, f"Greater {label}"]
    elif type_id == "Q6256":
        stem = _word(rng, 3)
        label = stem + "ia"
        pool = [f"Republic of {label}", stem, f"{stem}land", f"Kingdom of {label}"]
    elif type_id == "Q4830453":
        stem = _word(rng, 2)
        label = f"{stem} {rng.choice(['Corp', 'Systems', 'Industries', 'Group'])}"
        pool = [f"{stem} Inc.", f"{stem} Corporation", stem.upper(), f"{stem} Ltd"]
    elif type_id == "Q215380":
        stem = _word(rng, 2)
        label = f"The {stem}s"
        pool = [f"{stem}s", f"The {stem} Band", f"{stem}s (band)", stem]
    else:
        stem = _word(rng, 2)
        label = f"University of {stem}"
        pool = [f"{stem} University", f"U{stem[0]}", f"{stem} College", f"UO{stem[:2].upper()}"]
    rng.shuffle(pool)
    return label, pool[: rng.choice([0, 1, 1, 2, 2, 3, 4])]


def _statement(rng: random.Random, subject: str, prop: str, value: dict | None, rank: str = "normal") -> dict:
    """A statement with a main snak (``value`` None -> a ``somevalue`` snak)."""
    if value is None:
        mainsnak = {"snaktype": "somevalue", "property": prop, "hash": f"{rng.getrandbits(64):016x}"}
    else:
        mainsnak = {"snaktype": "value", "property": prop, "hash": f"{rng.getrandbits(64):016x}", **value}
    return {
        "mainsnak": mainsnak,
        "type": "statement",
        "id": f"{subject}${rng.getrandbits(128):032x}",
        "rank": rank,
    }


def _item_value(item_id: str) -> dict:
    return {
        "datavalue": {
            "value": {"entity-type": "item", "numeric-id": int(item_id[1:]), "id": item_id},
            "type": "wikibase-entityid",
        },
        "datatype": "wikibase-item",
    }


def _time_value(rng: random.Random) -> dict:
    year = rng.randint(1800, 2005)
    return {
        "datavalue": {
            "value": {
                "time": f"+{year:04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T00:00:00Z",
                "timezone": 0, "before": 0, "after": 0, "precision": 11,
                "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
            },
            "type": "time",
        },
        "datatype": "time",
    }


def _quantity_value(rng: random.Random) -> dict:
    return {
        "datavalue": {"value": {"amount": f"+{rng.randint(1000, 9_000_000)}", "unit": "1"}, "type": "quantity"},
        "datatype": "quantity",
    }


def _string_value(text: str) -> dict:
    return {"datavalue": {"value": text, "type": "string"}, "datatype": "url"}


def _entity(
    item_id: str, label: str | None, aliases: list[str], claims: dict, extra_labels: dict | None = None
) -> dict:
    labels = {lang: {"language": lang, "value": value} for lang, value in (extra_labels or {}).items()}
    if label is not None:
        labels["en"] = {"language": "en", "value": label}
    return {
        "type": "item",
        "id": item_id,
        "labels": labels,
        "descriptions": {"en": {"language": "en", "value": "synthetic item"}} if label else {},
        "aliases": {"en": [{"language": "en", "value": a} for a in aliases]} if aliases else {},
        "claims": claims if claims else [],  # the dumps serialise empty maps as []
        "sitelinks": {},
        "lastrevid": 1000 + int(item_id[1:]) % 997,
    }


def synthetic_entities(n_items: int, seed: int = 0) -> Iterator[dict]:
    """Two properties, the type items, then ``n_items`` items, as entity JSON objects.

    Memory is proportional to ``n_items`` only through a list of ids per type (for references).
    """
    rng = random.Random(seed)
    yield {"type": "property", "id": "P31", "datatype": "wikibase-item",
           "labels": {"en": {"language": "en", "value": "instance of"}}, "aliases": {}, "claims": {}}
    yield {"type": "property", "id": "P17", "datatype": "wikibase-item",
           "labels": {"en": {"language": "en", "value": "country"}}, "aliases": {}, "claims": {}}
    for type_id, label in {**SYNTHETIC_TYPES, "Q43229": "organization", "Q2088357": "musical ensemble"}.items():
        yield _entity(type_id, label, [], {"P279": [_statement(rng, type_id, "P279", _item_value("Q35120"))]})

    by_type: dict[str, list[str]] = {t: [] for t in SYNTHETIC_TYPES}
    labels_seen: list[str] = []
    types, weights = zip(*_TYPE_WEIGHTS)
    last_id = f"Q{FIRST_ITEM + n_items - 1}"
    for i in range(n_items):
        item = f"Q{FIRST_ITEM + i}"
        type_id = "Q6256" if i < 5 else rng.choices(types, weights)[0]
        label, aliases = _names(rng, type_id)
        if labels_seen and i % 37 == 36:  # homonyms: popularity breaks the tie when linking
            label = rng.choice(labels_seen)
        claims: dict[str, list[dict]] = {"P31": [_statement(rng, item, "P31", _item_value(type_id))]}
        if type_id in _SECOND_TYPES and rng.random() < 0.5:
            claims["P31"].insert(0, _statement(rng, item, "P31", _item_value(_SECOND_TYPES[type_id]), "preferred"))
        if rng.random() < 0.05:  # a deprecated type: ignored by types()
            claims["P31"].append(_statement(rng, item, "P31", _item_value("Q35120"), "deprecated"))
        country = rng.choice(by_type["Q6256"]) if by_type["Q6256"] else None
        if type_id == "Q5":
            if country:
                claims["P27"] = [_statement(rng, item, "P27", _item_value(country))]
            claims["P569"] = [_statement(rng, item, "P569", _time_value(rng))]
            if rng.random() < 0.2:
                claims["P20"] = [_statement(rng, item, "P20", None)]
            if by_type["Q215380"] and rng.random() < 0.3:
                claims["P463"] = [_statement(rng, item, "P463", _item_value(rng.choice(by_type["Q215380"])))]
        elif type_id in ("Q515", "Q4830453", "Q3918") and country:
            claims["P17"] = [_statement(rng, item, "P17", _item_value(country))]
            if type_id == "Q515":
                claims["P1082"] = [_statement(rng, item, "P1082", _quantity_value(rng))]
            elif by_type["Q515"]:
                claims["P159"] = [_statement(rng, item, "P159", _item_value(rng.choice(by_type["Q515"])))]
            if type_id == "Q4830453":
                claims["P856"] = [_statement(rng, item, "P856", _string_value(f"https://example.org/{i}"))]
        elif type_id == "Q215380" and country:
            claims["P495"] = [_statement(rng, item, "P495", _item_value(country))]
        if rng.random() < 0.1:  # a forward or backward reference, possibly to itself
            target = f"Q{FIRST_ITEM + rng.randrange(n_items)}"
            claims["P1889"] = [_statement(rng, item, "P1889", _item_value(target))]
        for statements in claims.values():  # qualifiers and references must not count for popularity
            if rng.random() < 0.3:
                qualifier = {"snaktype": "value", "property": "P642", **_item_value(last_id)}
                reference = {"snaktype": "value", "property": "P143", **_item_value("Q328")}
                statements[0]["qualifiers"] = {"P642": [qualifier]}
                statements[0]["references"] = [{"hash": f"{rng.getrandbits(64):016x}", "snaks": {"P143": [reference]}}]
        if rng.random() < 0.04:  # no English label: such items have fewer or no English names
            entity = _entity(item, None, [], claims, {"de": label})
        else:
            entity = _entity(item, label, aliases, claims, {"fr": label} if rng.random() < 0.3 else None)
            labels_seen.append(label)
        by_type[type_id].append(item)
        yield entity


def _open_for_writing(path: Path) -> IO[bytes]:
    name = path.name
    if name.endswith(".gz"):
        return gzip.open(path, "wb", compresslevel=6)
    if name.endswith(".bz2"):
        return bz2.open(path, "wb", compresslevel=9)
    return open(path, "wb")


def write_dump(entities: Iterable[dict], path: str | os.PathLike[str]) -> Path:
    """Write entities as a Wikidata JSON dump: ``[``, one entity per line followed by ``,``, ``]``.

    Compression follows the suffix (``.json``, ``.json.gz``, ``.json.bz2``). The last entity has no comma.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _open_for_writing(path) as out:
        out.write(b"[\n")
        previous: bytes | None = None
        for entity in entities:
            if previous is not None:
                out.write(previous + b",\n")
            previous = json.dumps(entity, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if previous is not None:
            out.write(previous + b"\n")
        out.write(b"]\n")
    return path


def write_synthetic_dump(path: str | os.PathLike[str], n_items: int, seed: int = 0) -> Path:
    """A synthetic dump of ``n_items`` items (plus types and properties) at ``path``."""
    return write_dump(synthetic_entities(n_items, seed), path)

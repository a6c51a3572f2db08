"""Table 1: how many entities of each coarse type a renaming substituted."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..documents import ENTITY_TYPES, Document
from ..renaming import substitution_rates


def type_order(types: Iterable[str]) -> list[str]:
    """Rows in DocRED's type order, then other types sorted, then ``ALL``."""
    types = set(types)
    return [t for t in ENTITY_TYPES if t in types] + sorted(types - {*ENTITY_TYPES, "ALL"}) + ["ALL"] * ("ALL" in types)


def substitution_table(renamed: Sequence[Document]) -> dict[str, dict[str, Any]]:
    """:func:`envre_hf.renaming.substitution_rates` per coarse type, in DocRED order, then others, then ``ALL``."""
    rates = substitution_rates(list(renamed))
    return {t: dict(rates[t]) for t in type_order(rates)}

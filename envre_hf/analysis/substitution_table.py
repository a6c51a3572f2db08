"""Table 1: how many entities of each coarse type a renaming substituted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..documents import ENTITY_TYPES, Document
from ..renaming import substitution_rates


def substitution_table(renamed: Sequence[Document]) -> dict[str, dict[str, Any]]:
    """Per coarse type (DocRED order, then others, then ``ALL``): entities, substituted, rate.

    The counting is :func:`envre_hf.renaming.substitution_rates`; this only fixes the row order.
    """

    rates = substitution_rates(list(renamed))
    order = [t for t in ENTITY_TYPES if t in rates] + sorted(t for t in rates if t not in ENTITY_TYPES and t != "ALL")
    if "ALL" in rates:
        order.append("ALL")
    return {t: dict(rates[t]) for t in order}

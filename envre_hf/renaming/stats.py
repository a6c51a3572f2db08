"""Build statistics of renamed copies: substitution rate per coarse type, type-match kinds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..documents import Document


def substitution_rates(renamed: Iterable[Document]) -> dict[str, dict[str, float]]:
    """Per coarse entity type (and ``"ALL"``): ``entities``, ``substituted`` and ``rate``.

    An entity counts as substituted when its ``substitutions`` records are not
    ``unchanged:<reason>``. Documents without ``substitutions`` (not renamed) count every
    entity as unchanged.
    """
    totals: Counter[str] = Counter()
    done: Counter[str] = Counter()
    for doc in renamed:
        renamed_entities = {s.entity for s in doc.substitutions or [] if not s.match.startswith("unchanged:")}
        for e, entity in enumerate(doc.entities):
            for key in (entity.type, "ALL"):
                totals[key] += 1
                done[key] += e in renamed_entities
    return {
        key: {"entities": totals[key], "substituted": done[key], "rate": done[key] / totals[key] if totals[key] else 0.0}
        for key in sorted(totals, key=lambda k: (k == "ALL", k))
    }


def match_counts(renamed: Iterable[Document]) -> dict[str, int]:
    """Entities per outcome: ``exact``, ``relaxed``, ``rule`` or ``unchanged:<reason>``."""
    counts: Counter[str] = Counter()
    for doc in renamed:
        seen: set[int] = set()
        for sub in doc.substitutions or []:
            if sub.entity in seen:
                continue
            seen.add(sub.entity)
            counts["relaxed" if sub.match.startswith("relaxed:") else sub.match] += 1
    return dict(sorted(counts.items()))

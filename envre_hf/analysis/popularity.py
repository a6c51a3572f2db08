"""Table 4: how popular the renamed entities were before and after renaming (``kb.popularity``, statements): each
renamed entity's original item (``wikidata_id``, else ``kb.link``) against ``Substitution.item_id``, once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..documents import Document
from ..kb.base import KnowledgeBase
from ..renaming.pipeline import is_substituted

QUARTILES = ("Q1", "Q2", "Q3", "Q4")


@dataclass
class PopularityResult:
    """Quartile shares before/after renaming, or ``available=False`` with the reason in ``note``."""

    available: bool
    note: str = ""
    pairs: int = 0
    cut_points: list[float] = field(default_factory=list)
    original: dict[str, float] = field(default_factory=dict)
    substituted: dict[str, float] = field(default_factory=dict)
    median_original: float | None = None
    median_substituted: float | None = None
    #: substitutions left out, by reason (no item, original not found/linked, popularity unknown)
    skipped: dict[str, int] = field(default_factory=dict)


def popularity_pairs(
    original: Sequence[Document], renamed: Sequence[Document], kb: KnowledgeBase
) -> tuple[list[tuple[int, int]], dict[str, int]]:
    """(original popularity, substituted popularity) per KB substitution, and skip counts by reason."""
    by_name: dict[str, Document] = {}
    for doc in original:
        by_name.setdefault(doc.title, doc)
        by_name[doc.key] = doc

    skipped = {"rule_based": 0, "original_document_missing": 0, "original_unlinked": 0, "popularity_unknown": 0}
    pairs: list[tuple[int, int]] = []
    for doc in renamed:
        source = by_name.get(doc.orig_title or "")
        seen: set[int] = set()
        for sub in doc.substitutions or []:
            # one record per original alias: count each renamed entity once; unchanged entities are not renamed
            if sub.entity in seen or not is_substituted(sub):
                continue
            seen.add(sub.entity)
            if sub.item_id is None:
                skipped["rule_based"] += 1
                continue
            if source is None or not 0 <= sub.entity < source.num_entities:
                skipped["original_document_missing"] += 1
                continue
            item = source.entities[sub.entity].wikidata_id or kb.link(source, sub.entity)
            if item is None:
                skipped["original_unlinked"] += 1
                continue
            before, after = kb.popularity(item), kb.popularity(sub.item_id)
            if before is None or after is None:
                skipped["popularity_unknown"] += 1
                continue
            pairs.append((before, after))
    return pairs, skipped


def _quartile_shares(values: np.ndarray, cuts: np.ndarray) -> dict[str, float]:
    idx = np.searchsorted(cuts, values, side="left")  # a value equal to a cut point stays in the lower quartile
    counts = np.bincount(idx, minlength=4)
    return {q: float(c / len(values)) for q, c in zip(QUARTILES, counts)}


def popularity_quartiles(original: Sequence[Document], renamed: Sequence[Document], kb: KnowledgeBase | None) -> PopularityResult:
    """Table 4; quartile cut points are the original items' 25/50/75th percentiles (Q1 = least popular)."""
    if kb is None:
        return PopularityResult(False, "no knowledge base given (--kb): entity popularity not analysed")
    pairs, skipped = popularity_pairs(original, renamed, kb)
    if not pairs:
        reason = (
            f"the knowledge base ({kb.name}) reports no popularity for these items"
            if skipped["popularity_unknown"]
            else "no renamed entity with a knowledge-base item and a linked original"
        )
        return PopularityResult(False, reason, skipped=skipped)
    before, after = np.asarray(pairs, float).T
    cuts = np.percentile(before, [25, 50, 75])
    return PopularityResult(
        True,
        f"popularity = statements per item in {kb.snapshot_id()}; quartiles of the original items",
        pairs=len(pairs),
        cut_points=[float(c) for c in cuts],
        original=_quartile_shares(before, cuts),
        substituted=_quartile_shares(after, cuts),
        median_original=float(np.median(before)),
        median_substituted=float(np.median(after)),
        skipped=skipped,
    )

"""Table 5: the share of entity mentions whose name (exactly) also names a mention in the training split; a
renaming that works moves the renamed set's shares far below the original's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..documents import Document
from ..renaming.isolation import document_names
from .substitution_table import type_order


def train_name_overlap(docs: Sequence[Document], names: set[str]) -> dict[str, dict[str, Any]]:
    """Per coarse type (DocRED order, then others, then ``ALL``): mentions, in_train, share (None if no mentions)."""
    counts: dict[str, list[int]] = {}
    for doc in docs:
        for entity in doc.entities:
            for m in entity.mentions:
                for key in (m.type, "ALL"):
                    row = counts.setdefault(key, [0, 0])
                    row[0] += 1
                    row[1] += m.name in names
    rows = {t: counts[t] for t in type_order(counts)}
    return {t: {"mentions": n, "in_train": k, "share": k / n} for t, (n, k) in rows.items()}


def overlap_table(
    original: Sequence[Document], renamed: Sequence[Document], train: Iterable[Document]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"original": per type, "renamed": per type}`` against one training split."""
    names = document_names(train)
    return {"original": train_name_overlap(original, names), "renamed": train_name_overlap(renamed, names)}

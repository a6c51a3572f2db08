"""Table 5: the share of entity mentions whose name (exactly) also names a mention in the training split; a
renaming that works moves the renamed set's shares far below the original's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..documents import ENTITY_TYPES, Document


def training_names(train: Iterable[Document]) -> set[str]:
    """Every mention name of the training documents."""
    return {m.name for doc in train for entity in doc.entities for m in entity.mentions}


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
    order = [t for t in ENTITY_TYPES if t in counts] + sorted(t for t in counts if t not in ENTITY_TYPES and t != "ALL")
    order += ["ALL"] if "ALL" in counts else []
    return {t: {"mentions": counts[t][0], "in_train": counts[t][1], "share": counts[t][1] / counts[t][0]} for t in order}


def overlap_table(
    original: Sequence[Document], renamed: Sequence[Document], train: Iterable[Document]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"original": per type, "renamed": per type}`` against one training split."""
    names = training_names(train)
    return {"original": train_name_overlap(original, names), "renamed": train_name_overlap(renamed, names)}

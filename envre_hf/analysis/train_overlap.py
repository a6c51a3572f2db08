"""Table 5: the share of entity mentions whose name (exactly) also names a mention in the training split; a
renaming that works moves the renamed set's shares far below the original's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ..documents import Document
from ..renaming.isolation import document_names
from .substitution_table import type_order


def train_name_overlap(docs: Sequence[Document], names: set[str]) -> dict[str, dict[str, Any]]:
    """Per coarse type (DocRED order, then others, then ``ALL``): mentions, in_train, share."""
    mentions = [m for doc in docs for entity in doc.entities for m in entity.mentions]
    total = Counter(key for m in mentions for key in (m.type, "ALL"))
    known = Counter(key for m in mentions if m.name in names for key in (m.type, "ALL"))
    return {t: {"mentions": total[t], "in_train": known[t], "share": known[t] / total[t]} for t in type_order(total)}


def overlap_table(
    original: Sequence[Document], renamed: Sequence[Document], train: Iterable[Document]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"original": per type, "renamed": per type}`` against one training split."""
    names = document_names(train)
    return {"original": train_name_overlap(original, names), "renamed": train_name_overlap(renamed, names)}

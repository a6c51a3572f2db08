"""Name isolation: keep the names of one benchmark out of another renaming.

A benchmark built with some names must not be evaluated against a model that saw those
names during training-time perturbation, and vice versa. :func:`used_names` collects the new
names a renaming used; :func:`document_names` collects every mention name of a split (e.g.
the training split). Either set goes into ``RenamingConfig(exclude_names=...)``; the
pipeline compares names by :func:`~envre_hf.renaming.tokenize.name_key`, so spacing and case
variants of an excluded name are excluded too.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..documents import Document


def used_names(renamed_docs: Iterable[Document]) -> set[str]:
    """The new names of every renamed entity (``unchanged:`` records excluded)."""
    out: set[str] = set()
    for doc in renamed_docs:
        for sub in doc.substitutions or []:
            if not sub.match.startswith("unchanged:"):
                out.add(sub.new_name)
    return out


def document_names(docs: Iterable[Document], types: Iterable[str] | None = None) -> set[str]:
    """Every mention name of ``docs`` (only entities of the coarse ``types`` when given)."""
    wanted = None if types is None else set(types)
    out: set[str] = set()
    for doc in docs:
        for entity in doc.entities:
            if wanted is None or entity.type in wanted:
                out.update(m.name for m in entity.mentions)
    return out

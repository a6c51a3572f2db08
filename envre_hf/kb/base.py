"""The knowledge-base interface the renaming pipeline's four steps run on.

Step 1 :meth:`KnowledgeBase.link` (entity -> item), step 2 :meth:`KnowledgeBase.types`
(item -> fine-grained types, Wikidata P31), step 3 :meth:`KnowledgeBase.candidates` (type ->
items with at least N names), and :meth:`KnowledgeBase.names` for step 4's alias-wise
substitution. :meth:`KnowledgeBase.popularity` serves the analyses.

Backends: Wikidata over HTTP (``wikidata_http``), a Wikidata JSON dump indexed in SQLite
(``wikidata_dump``), and the offline corpus KB (``envre_hf.kb.corpus``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..documents import Document


class KnowledgeBaseError(RuntimeError):
    """A knowledge base could not answer (network failure after retries, broken reply, corrupt index)."""


@dataclass(frozen=True)
class Candidate:
    """An item offered as a replacement, and how well its type matched the query.

    ``match`` is ``"exact"`` or ``"relaxed:<how>"`` (e.g. ``"relaxed:dropped tail of P17"``).
    """

    item_id: str
    match: str = "exact"


def distinct_names(label: str | None, aliases: list[str] | tuple[str, ...]) -> list[str]:
    """Label first, then aliases, without duplicates or empty strings (the order is part of the KB snapshot)."""
    out = [label] if label else []
    out.extend(aliases)
    return [name for name in dict.fromkeys(n.strip() for n in out) if name]


class KnowledgeBase(ABC):
    """One interface, several backends. Implementations must be deterministic for a fixed snapshot."""

    #: Short backend name used in statistics and dataset cards.
    name: str = "kb"

    @abstractmethod
    def link(self, doc: Document, entity_index: int) -> str | None:
        """Step 1: the item id of ``doc.entities[entity_index]``, or ``None`` when it cannot be linked."""

    @abstractmethod
    def types(self, item_id: str) -> list[str]:
        """Step 2: the item's fine-grained types (most specific first); empty when unknown."""

    @abstractmethod
    def candidates(self, type_id: str, min_names: int, exclude: frozenset[str] = frozenset()) -> list[Candidate]:
        """Step 3: items of ``type_id`` with at least ``min_names`` distinct English names, ``exclude`` removed.

        The order must be deterministic (the pipeline draws from it with a seeded generator).
        """

    @abstractmethod
    def names(self, item_id: str) -> list[str]:
        """The item's distinct English names, label first then aliases (see :func:`distinct_names`)."""

    def demonyms(self, item_id: str) -> list[str]:
        """The item's English demonyms ("American" for the United States; Wikidata P1549), KB order.

        The pipeline gives a demonym mention ("an American politician") a demonym of the new item;
        backends without demonyms return ``[]`` (such mentions then stay unchanged, ``no-form-match``).
        """
        return []

    def popularity(self, item_id: str) -> int | None:
        """Number of statements the item takes part in; ``None`` when the backend does not know."""
        return None

    def snapshot_id(self) -> str:
        """Identifies the KB content, recorded in dataset cards (same snapshot + seed -> same output)."""
        return self.name

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release files or connections."""

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

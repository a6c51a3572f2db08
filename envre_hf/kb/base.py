"""The knowledge-base interface the renaming pipeline's four steps run on: link (entity -> item), types
(item -> fine-grained types), candidates (type -> items with at least N names) and names (alias-wise
substitution). Backends: Wikidata over HTTP, a Wikidata dump indexed in SQLite, the offline corpus KB.
"""

from __future__ import annotations

import functools
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..documents import Document
from ..failures import Failure


class KnowledgeBaseError(Failure):
    """A knowledge base could not answer (network failure after retries, broken reply, corrupt index)."""


@dataclass(frozen=True)
class Candidate:
    """An item offered as a replacement; ``match`` is ``"exact"`` or ``"relaxed:<how>"``."""

    item_id: str
    match: str = "exact"


#: Bidi controls: a name carrying one displays as something else than what it is, so it is refused.
_BIDI = frozenset(chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)))


def clean_name(name: object) -> str | None:
    """A KB name as it may enter a benchmark (NFC, whitespace runs as one space, invisible format characters
    removed), or ``None`` for one with a control, bidi, surrogate or private-use character, or nothing left:
    written into renamed documents, it would display as something else than what it is."""
    if not isinstance(name, str):
        return None
    kept = []
    for ch in unicodedata.normalize("NFC", name):
        category = unicodedata.category(ch)
        if ch.isspace() or category in ("Zl", "Zp"):
            kept.append(" ")
        elif ch in _BIDI or category in ("Cc", "Cs", "Co"):
            return None
        elif category not in ("Cf", "Cn"):
            kept.append(ch)
    return " ".join("".join(kept).split()) or None


def clean_names(names: Iterable[object]) -> list[str]:
    """:func:`clean_name` over ``names``, without duplicates or empty names, order kept."""
    return [name for name in dict.fromkeys(clean_name(n) for n in names) if name]


def _cleaned(names: Callable[..., list[str]]) -> Callable[..., list[str]]:
    @functools.wraps(names)
    def wrapper(self: "KnowledgeBase", item_id: str) -> list[str]:
        return clean_names(names(self, item_id))

    wrapper.__envre_clean_names__ = True  # type: ignore[attr-defined]
    return wrapper


class KnowledgeBase(ABC):
    """One interface, several backends. Implementations must be deterministic for a fixed snapshot."""

    #: Short backend name used in statistics and dataset cards.
    name: str = "kb"

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Every backend's :meth:`names` is the entry point of KB names into renaming: clean them there, once."""
        super().__init_subclass__(**kwargs)
        names = cls.__dict__.get("names")
        if callable(names) and not getattr(names, "__envre_clean_names__", False):
            cls.names = _cleaned(names)  # type: ignore[method-assign]

    @abstractmethod
    def link(self, doc: Document, entity_index: int) -> str | None:
        """Step 1: the item id of ``doc.entities[entity_index]``, or ``None`` when it cannot be linked."""

    @abstractmethod
    def types(self, item_id: str) -> list[str]:
        """Step 2: the item's fine-grained types (most specific first); empty when unknown."""

    @abstractmethod
    def candidates(self, type_id: str, min_names: int, exclude: frozenset[str] = frozenset()) -> list[Candidate]:
        """Step 3: items of ``type_id`` with at least ``min_names`` distinct English names, ``exclude`` removed,
        in a deterministic order (the pipeline draws from it with a seeded generator)."""

    @abstractmethod
    def names(self, item_id: str) -> list[str]:
        """The item's distinct English names, label first then aliases (cleaned by ``__init_subclass__``)."""

    def demonyms(self, item_id: str) -> list[str]:
        """The item's English demonyms ("American" for the United States; P1549), KB order; without them a
        demonym mention stays unchanged (``no-form-match``)."""
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

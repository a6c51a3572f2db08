"""Leak check: unannotated occurrences of an original name left in a renamed document ("... the Loud Tour ..."
outside any mention: DocRED does not annotate every occurrence). ``RenamingConfig(fix_leaks=True)`` replaces
each by the entity's new name for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..documents import Document
from .substitution import SpanReplacement
from ..documents.tokenize import tokenize_name


@dataclass(frozen=True)
class Leak:
    """Tokens ``[start, end)`` of sentence ``sent_id`` spell ``original_name`` of entity ``entity``."""

    sent_id: int
    start: int
    end: int
    entity: int
    original_name: str


def _originals_from_substitutions(doc: Document) -> dict[int, dict[str, list[str]]]:
    out: dict[int, dict[str, list[str]]] = {}
    for sub in doc.substitutions or []:
        if sub.match.startswith("unchanged:"):
            continue
        out.setdefault(sub.entity, {})[sub.original_name] = tokenize_name(sub.original_name)
    return out


def find_leaks(doc: Document, originals: Mapping[int, Mapping[str, Sequence[str]]] | None = None) -> list[Leak]:
    """Unannotated occurrences of original names in ``doc`` (a renamed copy); ``originals[entity][name]``
    gives the tokens to look for (by default from ``doc.substitutions``)."""
    if originals is None:
        originals = _originals_from_substitutions(doc)
    patterns: dict[str, list[tuple[tuple[str, ...], int, str]]] = {}
    for e, names in originals.items():
        for name, tokens in names.items():
            if tokens:
                patterns.setdefault(tokens[0], []).append((tuple(tokens), e, name))
    if not patterns:
        return []
    for group in patterns.values():
        group.sort(key=lambda p: (-len(p[0]), p[1], p[2]))  # longest first, then deterministic
    covered = doc.covered()
    leaks: list[Leak] = []
    for s, sent in enumerate(doc.sents):
        mask = covered.get(s, set())
        i = 0
        while i < len(sent):
            for tokens, e, name in patterns.get(sent[i], ()):
                end = i + len(tokens)
                if tuple(sent[i:end]) == tokens and mask.isdisjoint(range(i, end)):
                    leaks.append(Leak(s, i, end, e, name))
                    i = end
                    break
            else:
                i += 1
    return leaks


def leak_replacements(
    leaks: Sequence[Leak], new_tokens: Mapping[int, Mapping[str, Sequence[str]]]
) -> list[SpanReplacement]:
    """Replacements turning each leak into the new name its entity got for that original name."""
    return [
        SpanReplacement(leak.sent_id, leak.start, leak.end, tuple(new_tokens[leak.entity][leak.original_name]))
        for leak in leaks
    ]

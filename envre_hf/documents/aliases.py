"""Grouping mentions into entities by their names: the alias rules of raw-text input (docs/predict.md).

Without a coreference model, mentions of one type are grouped when their normalised names are equal, one is
the other's acronym, or one is a person's surname/first name or an organisation's first/last words; places,
works and dates keep their full names, as DocRED does. An alias that fits several groups joins the one
mentioned last before it. Pairwise clustering F1 on Re-DocRED test: 0.819, exact match 0.743
(``benchmarks/bench_clustering.py``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

#: Words left out of acronyms and of the first / last words of a short form.
SMALL_WORDS = frozenset("a an and at de del der des di du for in la le les of on the to und van von &".split())
_POSSESSIVE = ("'s", "’s", "'", "’")


def normalised_words(name: str) -> tuple[str, ...]:
    """The words of ``name`` for comparison: case-folded, accents and punctuation dropped, no leading "the"."""
    text = unicodedata.normalize("NFKD", name.strip())
    for suffix in _POSSESSIVE:
        if text.endswith(suffix) and len(text) > len(suffix):
            text = text[: -len(suffix)]
            break
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if category == "Mn":  # combining accents
            continue
        kept.append(" " if category[0] in "PZS" or char.isspace() else char)
    words = "".join(kept).casefold().split()
    return tuple(words[1:] if len(words) > 1 and words[0] == "the" else words)


def _acronym(name: str) -> str | None:
    """The letters of ``name`` when it is written as an acronym ("GATT", "U.S.", "U. S."), else None."""
    letters = "".join(c for c in name if not (c.isspace() or c == "."))
    if 2 <= len(letters) <= 8 and letters.isalpha() and letters.isupper():
        return letters.casefold()
    return None


def _initials(words: tuple[str, ...]) -> set[str]:
    return {"".join(w[0] for w in words), "".join(w[0] for w in words if w not in SMALL_WORDS)} - {""}


def _is_short_form(short: tuple[str, ...], long: tuple[str, ...], etype: str) -> bool:
    if not short or len(short) >= len(long):
        return False
    if etype == "PER":
        return len(short) == 1 and short[0] in (long[0], long[-1])
    if etype != "ORG" or short[0] in SMALL_WORDS or short[-1] in SMALL_WORDS:
        return False
    return long[: len(short)] == short or long[-len(short) :] == short


def cluster_by_exact_name(names: Sequence[str], types: Sequence[str]) -> list[list[int]]:
    """Mentions grouped by identical name and type (the baseline the alias rules are measured against)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(zip(names, types)):
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def cluster_by_aliases(names: Sequence[str], types: Sequence[str]) -> list[list[int]]:
    """Mention indices grouped into entities, in order of first mention; ``names`` and ``types`` are in text
    order (the order breaks ties)."""
    if len(names) != len(types):
        raise ValueError(f"{len(names)} names but {len(types)} types")
    keys = [normalised_words(n) for n in names]
    groups: dict[tuple[tuple[str, ...], str], list[int]] = {}
    for i, key in enumerate(zip(keys, types)):
        groups.setdefault(key if key[0] else ((names[i],), key[1]), []).append(i)
    members = list(groups.values())
    parent = list(range(len(members)))

    def root(g: int) -> int:
        while parent[g] != g:
            g = parent[g]
        return g

    def fits(g: int, h: int) -> bool:
        short, long, first = keys[members[g][0]], keys[members[h][0]], members[g][0]
        if types[members[h][0]] != types[first]:
            return False
        acronym = _acronym(names[first])
        if acronym is not None and len(long) > 1 and acronym in _initials(long):
            return True
        return _is_short_form(short, long, types[first])

    # groups with the fewest words join first: a short form then meets the full names it may stand for
    for g in sorted(range(len(members)), key=lambda g: (len(keys[members[g][0]]), members[g][0])):
        fitting = {root(h) for h in range(len(members)) if h != g and fits(g, h)} - {root(g)}
        if not fitting:
            continue
        first = members[g][0]
        mentions = {r: [i for h, m in enumerate(members) if root(h) == r for i in m] for r in fitting}
        before = {r: max(i for i in m if i < first) for r, m in mentions.items() if min(m) < first}
        parent[root(g)] = max(before, key=before.__getitem__) if before else min(mentions, key=lambda r: min(mentions[r]))
    clusters: dict[int, list[int]] = {}
    for g, indices in enumerate(members):
        clusters.setdefault(root(g), []).extend(indices)
    return sorted((sorted(c) for c in clusters.values()), key=lambda c: c[0])

"""Coherence figures of renamed copies (docs/coherence.md), computed from the copies alone: value rules and form
matching keep a name's token count, so ``substitutions`` give the original token at each position.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable

from ..documents import Document
from .forms import INDEFINITE, indefinite_article, is_demonym, pluralize
from ..documents.tokenize import tokenize_name

_YEAR = re.compile(r"^(1\d{3}|20\d{2})$")
_RANGE_WORDS = frozenset({"to", "–", "-", "—", "until", "till", "through"})
BIRTH, DEATH = "P569", "P570"


def _original_tokens(
    doc: Document,
) -> tuple[dict[tuple[int, int], list[str]], dict[tuple[int, int], str], dict[int, str], set[int]]:
    """(sentence, position) -> original tokens of each renamed mention starting there; the original token at each
    position of a renamed mention of unchanged length; unchanged reasons; renamed entities."""
    by_new: dict[int, dict[str, str]] = {}
    reasons: dict[int, str] = {}
    for sub in doc.substitutions or []:
        if sub.match.startswith("unchanged:"):
            reasons[sub.entity] = sub.match[len("unchanged:") :]
        else:
            by_new.setdefault(sub.entity, {})[sub.new_name] = sub.original_name
    originals: dict[tuple[int, int], list[str]] = {}
    before: dict[tuple[int, int], str] = {}
    for e, names in by_new.items():
        for mention in doc.entities[e].mentions:
            original = names.get(mention.name)
            if original is not None:
                tokens = originals[(mention.sent_id, mention.start)] = tokenize_name(original)
                if len(tokens) == mention.end - mention.start:
                    before.update(((mention.sent_id, mention.start + k), t) for k, t in enumerate(tokens))
    return originals, before, reasons, set(by_new)


def _year(token: str) -> int | None:
    return int(token) if _YEAR.match(token) else None


def _first_year(tokens: Iterable[str]) -> int | None:
    found = (re.search(r"(?<!\d)(1\d{3}|20\d{2})(?!\d)", token) for token in tokens)
    return next((int(m.group(1)) for m in found if m), None)


def coherence_statistics(renamed: Iterable[Document]) -> dict[str, dict]:
    """Year ranges, lifetimes, demonyms and articles of renamed copies (see the module docstring)."""
    ranges = Counter()
    lifetimes = Counter()
    demonyms = Counter()
    demonym_reasons: Counter[str] = Counter()
    articles = Counter()
    for doc in renamed:
        originals, before, reasons, renamed_entities = _original_tokens(doc)
        _count_year_ranges(doc, before, ranges)
        _count_lifetimes(doc, originals, lifetimes)
        _count_demonyms_and_articles(doc, originals, reasons, renamed_entities, demonyms, demonym_reasons, articles)
    return {
        "year_ranges": _with_rate(ranges, ("ranges", "reversed_in_source", "reversed", "newly_reversed"), None),
        "lifetimes": _with_rate(
            lifetimes, ("lifetimes", "inverted_in_source", "inverted", "newly_inverted", "length_changed"), None
        ),
        "demonyms": {
            **_with_rate(demonyms, ("mentions", "demonym", "not_demonym", "unchanged"), ("demonym", "mentions")),
            "unchanged_reasons": dict(sorted(demonym_reasons.items())),
        },
        "articles": _with_rate(articles, ("before_new_names", "agree", "adjusted"), ("agree", "before_new_names")),
    }


def _count_year_ranges(doc: Document, before: dict[tuple[int, int], str], ranges: Counter) -> None:
    """Year ranges ("1990 to 1995", "between 1990 and 1995") of one copy, reversed before and after renaming."""
    for s, sent in enumerate(doc.sents):
        for i in range(len(sent) - 2):
            connector = sent[i + 1]
            if connector not in _RANGE_WORDS and not (connector == "and" and i > 0 and sent[i - 1] == "between"):
                continue
            new1, new2 = _year(sent[i]), _year(sent[i + 2])
            if new1 is None or new2 is None:
                continue
            old1, old2 = _year(before.get((s, i), sent[i])), _year(before.get((s, i + 2), sent[i + 2]))
            if old1 is None or old2 is None:
                continue
            ranges["ranges"] += 1
            ranges["reversed_in_source"] += old1 > old2
            ranges["reversed"] += new1 > new2
            ranges["newly_reversed"] += new1 > new2 and not old1 > old2


def _count_lifetimes(doc: Document, originals: dict[tuple[int, int], list[str]], lifetimes: Counter) -> None:
    """People with a date of birth and of death in one copy: inverted or changed in length by the renaming."""
    dates: dict[str, dict[int, set[int]]] = {BIRTH: {}, DEATH: {}}  # relation -> person -> date entities
    for rel in doc.relations:
        if rel.r in dates:
            dates[rel.r].setdefault(rel.h, set()).add(rel.t)
    births, deaths = dates[BIRTH], dates[DEATH]
    for person in births.keys() & deaths.keys():
        b, d = min(births[person]), min(deaths[person])
        years = []
        for e in (b, d):
            mention = doc.entities[e].mentions[0]
            new_tokens = mention.tokens(doc.sents)
            old_tokens = originals.get((mention.sent_id, mention.start), new_tokens)
            years.append((_first_year(old_tokens), _first_year(new_tokens)))
        (old_b, new_b), (old_d, new_d) = years
        if None in (old_b, new_b, old_d, new_d):
            continue
        lifetimes["lifetimes"] += 1
        lifetimes["inverted_in_source"] += old_b > old_d
        lifetimes["inverted"] += new_b > new_d
        lifetimes["newly_inverted"] += new_b > new_d and not old_b > old_d
        lifetimes["length_changed"] += (new_d - new_b) != (old_d - old_b)


def _count_demonyms_and_articles(
    doc: Document,
    originals: dict[tuple[int, int], list[str]],
    reasons: dict[int, str],
    renamed_entities: set[int],
    demonyms: Counter,
    demonym_reasons: Counter[str],
    articles: Counter,
) -> None:
    """Demonym mentions of one copy (kept a demonym?) and the "a"/"an" before its new names (agreeing?)."""
    covered = doc.covered()
    for e, entity in enumerate(doc.entities):
        for mention in entity.mentions:
            sent = doc.sents[mention.sent_id]
            new_tokens = sent[mention.start : mention.end]
            old_tokens = originals.get((mention.sent_id, mention.start), new_tokens)
            if is_demonym(old_tokens):
                demonyms["mentions"] += 1
                if e not in renamed_entities:
                    demonyms["unchanged"] += 1
                    demonym_reasons[reasons.get(e, "unknown")] += 1
                elif is_demonym(new_tokens):
                    demonyms["demonym"] += 1
                else:
                    demonyms["not_demonym"] += 1
            if e not in renamed_entities or mention.start == 0:
                continue
            article = sent[mention.start - 1]
            if article not in INDEFINITE or mention.start - 1 in covered.get(mention.sent_id, ()):
                continue
            want = indefinite_article(new_tokens)
            articles["before_new_names"] += 1
            articles["agree"] += article.lower() == want
            articles["adjusted"] += indefinite_article(old_tokens) != want


def _with_rate(counts: Counter, keys: tuple[str, ...], rate: tuple[str, str] | None) -> dict:
    out: dict = {key: counts[key] for key in keys}
    if rate is not None:
        num, den = rate
        out["rate"] = counts[num] / counts[den] if counts[den] else None
    return out


def pluralised_words(pairs: Iterable[tuple[Document, Document]]) -> Counter[str]:
    """How often each lowercase word of the originals became its plural in the renamed copy, over
    ``(original, renamed)`` pairs: sentences are aligned token by token, so the words changed inside a
    new value ("one mile" -> "three miles") and after it count alike."""
    words: Counter[str] = Counter()
    for original, renamed in pairs:
        for before, after in zip(original.sents, renamed.sents):
            if before == after:
                continue
            matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
            for op, i1, i2, j1, j2 in matcher.get_opcodes():
                if op != "replace":
                    continue
                for old, new in zip(before[i1:i2], after[j1:j2]):
                    if old.islower() and old.isalpha() and new != old and new == pluralize(old):
                        words[old] += 1
    return words

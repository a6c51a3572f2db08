"""Documents from raw text: words, sentences and mention positions that keep their character spans.

spaCy's blank English pipeline and rule-based sentencizer (no model to download) give words with their
character spans, so character-span mentions become DocRED token positions exactly: a word is cut where a
mention starts or ends inside it, and sentences one mention straddles are merged.
"""

from __future__ import annotations

import calendar
import functools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import DocumentError
from .schema import ENTITY_TYPES, Document, Entity, Mention

Span = tuple[int, int]

#: Month names and abbreviations ("March", "Mar", "Sept"), case-folded, for the date rule.
_MONTHS = frozenset(m.casefold() for m in (*calendar.month_name[1:], *calendar.month_abbr[1:], "Sept"))


@functools.cache
def _spacy() -> Any:
    """spaCy's blank English pipeline with its sentencizer, built once per process."""
    try:
        import spacy
    except ImportError as err:
        raise ImportError("text input needs spaCy for words and sentences: pip install spacy") from err
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


@dataclass(frozen=True)
class Segmentation:
    """Words of a text as character spans, and the sentence of each word."""

    words: list[Span]
    sentence_of: list[int]

    def sentence_spans(self) -> list[Span]:
        """Character span of each sentence, from its first word to its last."""
        spans: dict[int, Span] = {}
        for (start, end), s in zip(self.words, self.sentence_of):
            spans[s] = (spans[s][0], end) if s in spans else (start, end)
        return list(spans.values())


def segment(text: str, cuts: Iterable[int] = ()) -> Segmentation:
    """Words and sentences of ``text`` (spaCy); words are also cut at the character offsets ``cuts``."""
    cuts = sorted(set(cuts))
    words: list[Span] = []
    sentence_of: list[int] = []
    for s, sentence in enumerate(_spacy()(text).sents):
        for token in sentence:
            if token.is_space or not token.text.strip():
                continue
            start, end = token.idx, token.idx + len(token.text)
            inner = cuts[bisect_right(cuts, start) : bisect_left(cuts, end)]
            for a, b in zip([start, *inner], [*inner, end]):
                words.append((a, b))
                sentence_of.append(s)
    return Segmentation(words, sentence_of)


def check_span(span: Any, text: str, **where: Any) -> Span:
    """``span`` as ``(start, end)`` when it is a non-empty ``[start, end]`` of integers inside ``text``."""
    ok = isinstance(span, (list, tuple)) and len(span) == 2
    if not ok or not all(isinstance(x, int) and not isinstance(x, bool) for x in span):
        raise DocumentError(f"expected [start, end] character offsets, got {span!r}", **where)
    start, end = span
    if not 0 <= start < end <= len(text):
        raise DocumentError(f"span {list(span)} is outside the text ({len(text)} characters)", **where)
    if not text[start:end].strip():
        raise DocumentError(f"span {list(span)} holds only whitespace", **where)
    return start, end


def check_type(etype: Any, **where: Any) -> str:
    if etype not in ENTITY_TYPES:
        raise DocumentError(f"unknown entity type {etype!r} (DocRED types: {', '.join(ENTITY_TYPES)})", **where)
    return etype


def text_document(
    text: str,
    entities: Sequence[Sequence[Span]],
    types: Sequence[str],
    *,
    title: str = "",
    doc_id: str | None = None,
) -> Document:
    """A :class:`Document` of ``text`` whose entity ``e`` has the mentions ``entities[e]`` (character spans,
    checked with :func:`check_span`) and the type ``types[e]`` (one of DocRED's)."""
    where = {"title": title} if title else {}
    if not isinstance(text, str):
        raise DocumentError(f"expected a string, got {type(text).__name__}", field="text", **where)
    spans = [
        [check_span(span, text, entity=e, mention=m, field="mentions", **where) for m, span in enumerate(ms)]
        for e, ms in enumerate(entities)
    ]
    for e, etype in enumerate(types):
        check_type(etype, entity=e, field="type", **where)
    seg = segment(text, (x for ms in spans for span in ms for x in span))
    if not seg.words:
        raise DocumentError("the text holds no words", field="text", **where)
    starts = [a for a, _ in seg.words]
    ends = [b for _, b in seg.words]
    # first and last word of every mention; a sentence break inside a mention is removed
    breaks = [k > 0 and seg.sentence_of[k] != seg.sentence_of[k - 1] for k in range(len(seg.words))]
    word_spans = [[(bisect_right(ends, s), bisect_left(starts, e) - 1) for s, e in ms] for ms in spans]
    for ms in word_spans:
        for first, last in ms:
            breaks[first + 1 : last + 1] = [False] * (last - first)
    sentence_of, first_word, sents = [], [], []
    for k, (a, b) in enumerate(seg.words):
        if k == 0 or breaks[k]:
            first_word.append(k)
            sents.append([])
        sentence_of.append(len(sents) - 1)
        sents[-1].append(text[a:b])
    doc_entities = []
    for (ms, etype), wm in zip(zip(spans, types), word_spans):
        mentions = []
        for (s, e), (first, last) in zip(ms, wm):
            sid = sentence_of[first]
            pos = (first - first_word[sid], last + 1 - first_word[sid])
            mentions.append(Mention(name=text[s:e], sent_id=sid, pos=pos, type=etype))
        doc_entities.append(Entity(mentions))
    return Document(title=title, sents=sents, entities=doc_entities, doc_id=doc_id, has_labels=False)


def as_text(doc: Document) -> dict[str, Any]:
    """A DocRED document as text input: ``{"title", "text", "entities": [{"mentions": [[start, end], ...],
    "type"}]}``, its tokens joined by single spaces and every mention a character span of that text (entities in
    the same order). What the pipeline reads back gives the same encoder input (tests/models/test_pipeline.py)."""
    starts, offset = [], 0
    for sent in doc.sents:
        starts.append([])
        for token in sent:
            starts[-1].append(offset)
            offset += len(token) + 1
    entities = []
    for entity in doc.entities:
        spans = []
        for m in entity.mentions:
            last = doc.sents[m.sent_id][m.end - 1]
            spans.append([starts[m.sent_id][m.start], starts[m.sent_id][m.end - 1] + len(last)])
        entities.append({"mentions": spans, "type": entity.type})
    text = " ".join(token for sent in doc.sents for token in sent)
    return {"title": doc.title, "text": text, "entities": entities}


def _date_word(token: Any) -> str | None:
    text = token.text
    if text[:1].isupper() and text.rstrip(".").casefold() in _MONTHS:
        return "month"
    digits = text[:-1] if text.endswith("s") else text
    if digits.isdigit() and len(digits) == 4 and 1000 <= int(digits) <= 2100:
        return "year"
    if text.isdigit() and 1 <= int(text) <= 31:
        return "day"
    return None


def rule_mentions(text: str) -> list[tuple[int, int, str]]:
    """TIME and NUM mentions by rules, for NER models that have no date or number labels.

    A run of month names, day numbers and years (commas between them allowed) is TIME when it holds a
    year or a month with a day ("March 25, 2010", "12 May 2016", "1968", "1990s"); any other token that
    spaCy finds number-like (``like_num``: "10,000", "3.5", "five") is NUM. Returns ``(start, end, type)``.
    """
    out: list[tuple[int, int, str]] = []
    tokens = [t for t in _spacy()(text) if not t.is_space]
    i = 0
    while i < len(tokens):
        kinds, j = [], i
        while j < len(tokens) and (_date_word(tokens[j]) or (tokens[j].text == "," and kinds and j + 1 < len(tokens)
                                                              and _date_word(tokens[j + 1]))):
            kinds.append(_date_word(tokens[j]))
            j += 1
        if "year" in kinds or ("month" in kinds and "day" in kinds):
            out.append((tokens[i].idx, tokens[j - 1].idx + len(tokens[j - 1].text), "TIME"))
            i = j
            continue
        if tokens[i].like_num:
            out.append((tokens[i].idx, tokens[i].idx + len(tokens[i].text), "NUM"))
        i += 1
    return out

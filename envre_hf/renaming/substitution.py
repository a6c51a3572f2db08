"""Span replacement in tokenized sentences, with the position map that keeps every other span valid: a span
that partially overlaps a replaced one has no well-defined new place, so :meth:`SpanMap.remap` refuses it
(the pipeline never asks: see its overlap rule).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..documents import Document, Entity, Mention, Relation
from ..documents.schema import sentence_offsets


@dataclass(frozen=True)
class SpanReplacement:
    """Replace tokens ``[start, end)`` of sentence ``sent_id`` by ``tokens`` (non-empty)."""

    sent_id: int
    start: int
    end: int
    tokens: tuple[str, ...]


class SpanOverlapError(ValueError):
    """Two replacements, or a remapped span and a replacement, overlap without being identical."""


class SpanMap:
    """Old (sentence, start, end) -> new (start, end) after :func:`replace_spans`."""

    def __init__(self, edits: dict[int, list[tuple[int, int, int, int]]]):
        # per sentence: sorted (old_start, old_end, new_start, new_end) of the replaced spans
        self._edits = edits
        self._starts = {s: [e[0] for e in spans] for s, spans in edits.items()}

    def remap(self, sent_id: int, start: int, end: int) -> tuple[int, int]:
        edits = self._edits.get(sent_id)
        if not edits:
            return start, end
        starts = self._starts[sent_id]
        # the last replacement starting at or before `start`
        i = bisect_right(starts, start) - 1
        if i >= 0:
            o_start, o_end, n_start, n_end = edits[i]
            if (o_start, o_end) == (start, end):
                return n_start, n_end
            if start < o_end:
                raise SpanOverlapError(f"span [{start}, {end}) of sentence {sent_id} overlaps [{o_start}, {o_end})")
            shift = n_end - o_end
        else:
            shift = 0
        if i + 1 < len(edits) and edits[i + 1][0] < end:
            o_start, o_end = edits[i + 1][:2]
            raise SpanOverlapError(f"span [{start}, {end}) of sentence {sent_id} overlaps [{o_start}, {o_end})")
        return start + shift, end + shift

    @property
    def changed(self) -> bool:
        """True when some sentence was changed."""
        return bool(self._edits)


def replace_spans(
    sents: Sequence[list[str]], replacements: Iterable[SpanReplacement]
) -> tuple[list[list[str]], SpanMap]:
    """New sentences (unchanged ones shared) and the map of old spans to new ones; identical replacements are
    merged, other overlaps raise :class:`SpanOverlapError`."""
    by_sent: dict[int, dict[tuple[int, int], tuple[str, ...]]] = {}
    for rep in replacements:
        if not rep.tokens:
            raise ValueError(f"empty replacement for span [{rep.start}, {rep.end}) of sentence {rep.sent_id}")
        spans = by_sent.setdefault(rep.sent_id, {})
        key = (rep.start, rep.end)
        if key in spans and spans[key] != rep.tokens:
            raise SpanOverlapError(f"two different replacements for span {list(key)} of sentence {rep.sent_id}")
        spans[key] = rep.tokens
    new_sents = list(sents)
    edits: dict[int, list[tuple[int, int, int, int]]] = {}
    for sent_id, spans in by_sent.items():
        old = sents[sent_id]
        out: list[str] = []
        sent_edits = []
        pos = 0
        for (start, end), tokens in sorted(spans.items()):
            if start < pos:
                raise SpanOverlapError(f"replacements overlap at token {start} of sentence {sent_id}")
            if not 0 <= start < end <= len(old):
                raise ValueError(f"span [{start}, {end}) is out of range for sentence {sent_id} ({len(old)} tokens)")
            out.extend(old[pos:start])
            new_start = len(out)
            out.extend(tokens)
            sent_edits.append((start, end, new_start, len(out)))
            pos = end
        out.extend(old[pos:])
        new_sents[sent_id] = out
        edits[sent_id] = sent_edits
    return new_sents, SpanMap(edits)


def _global_pos(old: object, old_start: int, old_end: int, new_start: int, new_end: int) -> list[int] | None:
    """Re-DocRED's ``global_pos`` moved with its mention; ``None`` when its convention is unknown."""
    if not (isinstance(old, list) and len(old) == 2 and all(isinstance(v, int) for v in old)):
        return None
    # Re-DocRED's (both entries the document-level start token) first, then inclusive and exclusive ends
    for old_second, new_second in ((old_start, new_start), (old_end - 1, new_end - 1), (old_end, new_end)):
        if old == [old_start, old_second]:
            return [new_start, new_second]
    return None


def substitute(
    doc: Document,
    replacements: Iterable[SpanReplacement],
    new_names: dict[tuple[int, int], str] | None = None,
    **fields: object,
) -> Document:
    """A copy of ``doc`` with ``replacements`` applied and every mention moved to its new span; ``new_names``
    sets mentions' new names, ``fields`` override fields of the copy, and Re-DocRED's ``global_pos`` is
    recomputed (dropped if its convention is unknown)."""
    new_names = new_names or {}
    new_sents, span_map = replace_spans(doc.sents, replacements)
    changed = span_map.changed
    old_offsets = doc.sentence_offsets()
    new_offsets = sentence_offsets(new_sents) if changed else old_offsets
    entities = []
    for e, entity in enumerate(doc.entities):
        mentions = []
        for m, mention in enumerate(entity.mentions):
            start, end = span_map.remap(mention.sent_id, mention.start, mention.end)
            extra = dict(mention.extra)
            if "global_pos" in extra and changed:
                base_old, base_new = old_offsets[mention.sent_id], new_offsets[mention.sent_id]
                moved = _global_pos(
                    extra["global_pos"], base_old + mention.start, base_old + mention.end, base_new + start, base_new + end
                )
                if moved is None:
                    del extra["global_pos"]
                else:
                    extra["global_pos"] = moved
            mentions.append(
                Mention(
                    name=new_names.get((e, m), mention.name),
                    sent_id=mention.sent_id,
                    pos=(start, end),
                    type=mention.type,
                    extra=extra,
                )
            )
        entities.append(Entity(mentions=mentions, wikidata_id=entity.wikidata_id, extra=dict(entity.extra)))
    copies = {
        "relations": [Relation(r.h, r.t, r.r, list(r.evidence), dict(r.extra)) for r in doc.relations],
        "substitutions": None if doc.substitutions is None else list(doc.substitutions),
        "extra": dict(doc.extra),
    }
    return replace(doc, sents=new_sents, entities=entities, **{**copies, **fields})  # type: ignore[arg-type]


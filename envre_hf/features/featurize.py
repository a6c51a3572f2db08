"""DocRED documents -> encoder inputs with entity markers (the ATLOP scheme; docs/models.md "Features"): marked
words tokenized in one ``is_split_into_words`` call and mapped back with ``word_ids()``, so any fast tokenizer works."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any

from ..documents.errors import DocumentError
from ..documents.relations import RelationSchema, docred_schema
from ..documents.schema import Document

logger = logging.getLogger(__name__)
#: The per-document warning that ``max_seq_length`` dropped mentions, on a logger of its own whose records carry
#: ``max_seq_length`` and ``dropped_mentions``: a training run summarises them (``MentionDropSummary``).
DROPPED_MENTIONS = logging.getLogger(f"{__name__}.dropped_mentions")

#: The marker word placed before and after every mention (ATLOP uses "*").
DEFAULT_MARKER = "*"

def pair_index(h: int, t: int, n_entities: int) -> int:
    """Row of the ordered pair (h, t) in ``hts`` (all pairs h != t, row-major)."""
    return h * (n_entities - 1) + (t if t < h else t - 1)


def entity_pairs(n_entities: int) -> list[list[int]]:
    """All ordered pairs ``[h, t]`` with h != t, row-major (the order of ``hts`` and ``labels``)."""
    return [[h, t] for h in range(n_entities) for t in range(n_entities) if h != t]


def multi_hot_labels(doc: Document, schema: RelationSchema) -> list[list[int]]:
    """n_pairs x num_labels multi-hot labels; a pair without relation gets class 0."""
    n = doc.num_entities
    rows = [[0] * schema.num_labels for _ in range(n * (n - 1))]
    for i, rel in enumerate(doc.relations):
        if rel.r not in schema.rel2index or rel.r == "Na":
            raise DocumentError(f"unknown relation id {rel.r!r}", title=doc.title, label=i, field="r")
        if not (0 <= rel.h < n and 0 <= rel.t < n) or rel.h == rel.t:
            raise DocumentError(f"bad pair ({rel.h}, {rel.t}) for {n} entities", title=doc.title, label=i, field="h")
        rows[pair_index(rel.h, rel.t, n)][schema.rel2index[rel.r]] = 1
    for row in rows:
        if not any(row):
            row[0] = 1
    return rows


def _marked_words(doc: Document, marker: str) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """Document words with markers, and per mention (start marker word, end marker word)."""
    offsets = doc.sentence_offsets()
    starts: set[int] = set()
    ends: set[int] = set()
    spans: list[list[tuple[int, int]]] = []
    for e, entity in enumerate(doc.entities):
        ent_spans = []
        for m, mention in enumerate(entity.mentions):
            if not 0 <= mention.sent_id < len(doc.sents):
                raise DocumentError("sent_id out of range", title=doc.title, entity=e, mention=m, field="sent_id")
            s, t = mention.pos
            if not 0 <= s < t <= len(doc.sents[mention.sent_id]):
                raise DocumentError(f"bad span {list(mention.pos)}", title=doc.title, entity=e, mention=m, field="pos")
            g = offsets[mention.sent_id]
            ent_spans.append((g + s, g + t - 1))
            starts.add(g + s)
            ends.add(g + t - 1)
        spans.append(ent_spans)
    words: list[str] = []
    start_word: dict[int, int] = {}
    end_word: dict[int, int] = {}
    for i, token in enumerate(itertools.chain.from_iterable(doc.sents)):
        if i in starts:
            start_word[i] = len(words)
            words.append(marker)
        words.append(token)
        if i in ends:
            end_word[i] = len(words)
            words.append(marker)
    return words, [[(start_word[s], end_word[t]) for s, t in ent] for ent in spans]


def check_max_seq_length(max_seq_length: int | None, n_special: int) -> None:
    """Refuse a cap that leaves no room for a token of the document besides the tokenizer's ``n_special``."""
    if max_seq_length is not None and max_seq_length <= n_special:
        raise ValueError(
            f"max_seq_length={max_seq_length} leaves no room for the document: the tokenizer adds {n_special} "
            f"special tokens, so the minimum is {n_special + 1}"
        )


def _encode(doc: Document, tokenizer: Any, marker: str) -> tuple[list[int], list[int | None], list[list[tuple[int, int]]]]:
    """``input_ids``, ``word_ids`` and every mention's ``(start, end)`` piece span of the whole (uncapped) document."""
    words, word_spans = _marked_words(doc, marker)
    # verbose=False: no "longer than the model's maximum" warning; long inputs are windowed by the models
    encoding = tokenizer(words, is_split_into_words=True, add_special_tokens=True, truncation=False, verbose=False)
    word_ids = encoding.word_ids()
    first_piece: dict[int, int] = {}
    last_piece: dict[int, int] = {}
    for pos, w in enumerate(word_ids):
        if w is not None:
            first_piece.setdefault(w, pos)
            last_piece[w] = pos
    if any(w not in first_piece for span in word_spans for pair in span for w in pair):
        raise DocumentError(
            f"the tokenizer produced no pieces for the marker {marker!r}; choose another marker",
            title=doc.title,
            field="sents",
        )
    entity_pos = [[(first_piece[s], last_piece[t] + 1) for s, t in span] for span in word_spans]
    return list(encoding["input_ids"]), word_ids, entity_pos


def _fits(word_ids: list[int | None], entity_pos: list[list[tuple[int, int]]], max_seq_length: int | None):
    """``(keep, n_special_end, fits)``: the pieces kept before the closing special tokens, and per mention whether
    it lies inside them (all True without a cap or when the document fits)."""
    n_special_end = len(word_ids) - 1 - max((i for i, w in enumerate(word_ids) if w is not None), default=len(word_ids) - 1)
    if max_seq_length is None or len(word_ids) <= max_seq_length:
        return len(word_ids) - n_special_end, n_special_end, [[True] * len(span) for span in entity_pos]
    keep = max_seq_length - n_special_end
    return keep, n_special_end, [[t <= keep for _, t in span] for span in entity_pos]


def featurize_document(
    doc: Document,
    tokenizer: Any,
    schema: RelationSchema | None = None,
    max_seq_length: int | None = None,
    marker: str = DEFAULT_MARKER,
    align_with: Document | None = None,
) -> dict[str, Any]:
    """Encoder inputs of one document: ``input_ids``, ``entity_pos`` (per entity its mentions' ``(start marker,
    one past the end marker)`` in ``input_ids``), ``hts`` (all ordered pairs, row-major), ``labels`` (n_pairs x
    num_labels multi-hot, class 0 = none; None unlabelled), ``doc_key`` and ``dropped_mentions`` (lost to the cap).
    ``align_with``: the same document renamed: a mention is kept only when it fits under ``max_seq_length`` in both
    texts, so that twins keep the same mentions (EVRT compares them row by row)."""
    group = [doc] if align_with is None else [doc, align_with]
    return _featurize_group(group, tokenizer, schema, max_seq_length, marker, count=1)[0]


def featurize_aligned(
    docs: Sequence[Document],
    tokenizer: Any,
    schema: RelationSchema | None = None,
    max_seq_length: int | None = None,
    marker: str = DEFAULT_MARKER,
) -> list[dict[str, Any]]:
    """:func:`featurize_document` of a document and its renamed copies (``docs``, same entities and mentions), each
    keeping only the mentions that fit under ``max_seq_length`` in every one of them: an original and its copies
    lose the same mentions and pairs to the cap (the robustness report scores names, not truncation)."""
    return _featurize_group(docs, tokenizer, schema, max_seq_length, marker, count=len(docs))


def _featurize_group(
    docs: Sequence[Document], tokenizer: Any, schema: RelationSchema | None, max_seq_length: int | None, marker: str,
    count: int,
) -> list[dict[str, Any]]:
    """The features of the first ``count`` of ``docs``, a mention kept only where it fits in all of ``docs``."""
    schema = schema if schema is not None else docred_schema()
    doc = docs[0]
    if doc.num_entities < 1:
        logger.warning("document %r has no entities: it yields no entity pairs", doc.key)
    encoded = [_encode(doc, tokenizer, marker)]
    check_max_seq_length(max_seq_length, encoded[0][1].count(None))
    for other in docs[1:]:
        if [len(e.mentions) for e in other.entities] != [len(span) for span in encoded[0][2]]:
            raise DocumentError(
                f"cannot align with {other.key!r}: its entities do not have the same mentions",
                title=doc.title,
                field="vertexSet",
            )
        encoded.append(_encode(other, tokenizer, marker))
    fitted = [_fits(word_ids, entity_pos, max_seq_length) for _, word_ids, entity_pos in encoded]
    fits = fitted[0][2]
    for other_fits in (f[2] for f in fitted[1:]):
        fits = [[a and b for a, b in zip(x, y)] for x, y in zip(fits, other_fits)]
    return [
        _assemble(d, ids, entity_pos, keep, n_special_end, fits, schema, max_seq_length)
        for d, (ids, _, entity_pos), (keep, n_special_end, _) in zip(docs[:count], encoded, fitted)
    ]


def _assemble(
    doc: Document,
    input_ids: list[int],
    entity_pos: list[list[tuple[int, int]]],
    keep: int,
    n_special_end: int,
    fits: list[list[bool]],
    schema: RelationSchema,
    max_seq_length: int | None,
) -> dict[str, Any]:
    """The features of one encoded document: ``input_ids`` cut to the cap, the mentions that ``fits`` keeps."""
    if len(input_ids) > keep + n_special_end:
        input_ids = input_ids[:keep] + input_ids[len(input_ids) - n_special_end :]
    kept = [[p for p, ok in zip(span, ok_span) if ok] for span, ok_span in zip(entity_pos, fits)]
    dropped = sum(len(a) - len(b) for a, b in zip(entity_pos, kept))
    if dropped:
        DROPPED_MENTIONS.warning(
            "document %r: max_seq_length=%d dropped %d of %d mentions (%d entities lost all mentions)",
            doc.key, max_seq_length, dropped, sum(len(span) for span in entity_pos), sum(1 for span in kept if not span),
            extra={"max_seq_length": max_seq_length, "dropped_mentions": dropped},
        )  # fmt: skip
    return {
        "doc_key": doc.key,
        "input_ids": input_ids,
        "entity_pos": [[list(p) for p in span] for span in kept],
        "hts": entity_pairs(doc.num_entities),
        "labels": multi_hot_labels(doc, schema) if doc.has_labels else None,
        "dropped_mentions": dropped,
    }

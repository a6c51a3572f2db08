"""Checks that a document is well formed (a :class:`DocumentError` naming the field), and counts the real-data
quirks that are not errors (a ``name`` unlike its tokens joined, overlapping mentions of different entities)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import DocumentError
from .relations import RelationSchema, docred_schema
from .schema import Document


def validate_document(doc: Document, index: int | None = None, schema: RelationSchema | None = None) -> None:
    """Raise :class:`DocumentError` for the first problem found in ``doc``."""
    schema = schema if schema is not None else docred_schema()
    where = {"doc_index": index, "title": doc.title}
    n_sents = len(doc.sents)
    if doc.doc_id is not None and not isinstance(doc.doc_id, str):
        raise DocumentError(f"expected a string, got {type(doc.doc_id).__name__}", field="doc_id", **where)
    if doc.seed is not None and (not isinstance(doc.seed, int) or isinstance(doc.seed, bool)):
        raise DocumentError(f"expected an integer, got {type(doc.seed).__name__}", field="seed", **where)
    if not doc.sents:
        raise DocumentError("the document has no sentences", field="sents", **where)
    for e, entity in enumerate(doc.entities):
        if not entity.mentions:
            raise DocumentError("the entity has no mentions", entity=e, field="vertexSet", **where)
        for m, mention in enumerate(entity.mentions):
            at = {"entity": e, "mention": m, **where}
            if not 0 <= mention.sent_id < n_sents:
                raise DocumentError(
                    f"sent_id {mention.sent_id} is out of range (the document has {n_sents} sentences)",
                    field="sent_id",
                    **at,
                )
            start, end = mention.pos
            length = len(doc.sents[mention.sent_id])
            if start >= end:
                raise DocumentError(f"empty span {list(mention.pos)}", field="pos", **at)
            if start < 0 or end > length:
                raise DocumentError(
                    f"span {list(mention.pos)} is out of range (sentence {mention.sent_id} has {length} tokens)",
                    field="pos",
                    **at,
                )
            if not mention.type:
                raise DocumentError("the mention has no type", field="type", **at)
    n_ent = len(doc.entities)
    seen: dict[tuple[int, int, str], int] = {}
    for i, rel in enumerate(doc.relations):
        at = {"label": i, **where}
        for key, value in (("h", rel.h), ("t", rel.t)):
            if not 0 <= value < n_ent:
                raise DocumentError(f"{key}={value} is out of range (the document has {n_ent} entities)", field=key, **at)
        if rel.r not in schema:
            raise DocumentError(f"unknown relation id {rel.r!r}", field="r", **at)
        triple = (rel.h, rel.t, rel.r)
        if triple in seen:
            raise DocumentError(f"duplicate of label {seen[triple]} ({rel.h}, {rel.t}, {rel.r})", field="r", **at)
        seen[triple] = i
        for sid in rel.evidence:
            if not 0 <= sid < n_sents:
                raise DocumentError(f"evidence sentence {sid} is out of range", field="evidence", **at)


def validate_documents(docs: Iterable[Document], schema: RelationSchema | None = None) -> None:
    """Validate every document; the error names the first bad one by index and title."""
    for i, doc in enumerate(docs):
        validate_document(doc, i, schema)


@dataclass
class Quirks:
    """Real-data irregularities that every stage must tolerate."""

    #: (entity, mention) whose ``name`` differs from ``" ".join(tokens)``.
    name_mismatches: list[tuple[int, int]] = field(default_factory=list)
    #: ((entity, mention), (entity, mention)) pairs of different entities whose spans overlap.
    overlapping_mentions: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)


def document_quirks(doc: Document) -> Quirks:
    quirks = Quirks()
    by_sentence: dict[int, list[tuple[int, int, int, int]]] = {}
    for e, entity in enumerate(doc.entities):
        for m, mention in enumerate(entity.mentions):
            if " ".join(mention.tokens(doc.sents)) != mention.name:
                quirks.name_mismatches.append((e, m))
            by_sentence.setdefault(mention.sent_id, []).append((e, m, *mention.pos))
    for spans in by_sentence.values():
        for i, (e1, m1, s1, t1) in enumerate(spans):
            for e2, m2, s2, t2 in spans[i + 1 :]:
                if e1 != e2 and s1 < t2 and s2 < t1:
                    quirks.overlapping_mentions.append(((e1, m1), (e2, m2)))
    return quirks


@dataclass
class QuirkCounts:
    mentions: int = 0
    name_mismatches: int = 0
    overlapping_mention_pairs: int = 0


def count_quirks(docs: Iterable[Document]) -> QuirkCounts:
    """Totals of :func:`document_quirks` over a collection."""
    counts = QuirkCounts()
    for doc in docs:
        q = document_quirks(doc)
        counts.mentions += sum(len(e.mentions) for e in doc.entities)
        counts.name_mismatches += len(q.name_mismatches)
        counts.overlapping_mention_pairs += len(q.overlapping_mentions)
    return counts

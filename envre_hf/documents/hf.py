"""Lossless conversion between :class:`Document` lists and ``datasets.Dataset``: the schema
(:data:`DOCUMENT_FEATURES`) keeps DocRED's field names; fields outside the core go as JSON strings in ``extra``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from datasets import Dataset, Features, List, Value

from .schema import Document, Entity, Mention, Relation, Substitution

MENTION_FEATURES = {
    "name": Value("string"),
    "sent_id": Value("int32"),
    "pos": List(Value("int32"), length=2),
    "type": Value("string"),
    "extra": Value("string"),
}
LABEL_FEATURES = {
    "h": Value("int32"),
    "t": Value("int32"),
    "r": Value("string"),
    "evidence": List(Value("int32")),
    "extra": Value("string"),
}
SUBSTITUTION_FEATURES = {
    "entity": Value("int32"),
    "item_id": Value("string"),
    "fine_type": Value("string"),
    "original_name": Value("string"),
    "new_name": Value("string"),
    "match": Value("string"),
}
DOCUMENT_FEATURES = Features(
    {
        "doc_id": Value("string"),
        "title": Value("string"),
        "sents": List(List(Value("string"))),
        "vertexSet": List(List(MENTION_FEATURES)),
        "labels": List(LABEL_FEATURES),
        "has_labels": Value("bool"),
        "entity_wikidata_ids": List(Value("string")),
        "entity_extra": List(Value("string")),
        "orig_title": Value("string"),
        "original_doc_id": Value("string"),
        "seed": Value("int64"),
        "substitutions": List(SUBSTITUTION_FEATURES),
        "extra": Value("string"),
    }
)


def _dump(extra: dict[str, Any]) -> str | None:
    return json.dumps(extra, ensure_ascii=False) if extra else None


def _load_extra(text: str | None) -> dict[str, Any]:
    return json.loads(text) if text else {}


def document_to_row(doc: Document) -> dict[str, Any]:
    """The dataset row of ``doc`` (matches :data:`DOCUMENT_FEATURES`)."""
    return {
        "doc_id": doc.doc_id,
        "title": doc.title,
        "sents": doc.sents,
        "vertexSet": [
            [
                {"name": m.name, "sent_id": m.sent_id, "pos": list(m.pos), "type": m.type, "extra": _dump(m.extra)}
                for m in entity.mentions
            ]
            for entity in doc.entities
        ],
        "labels": [
            {"h": r.h, "t": r.t, "r": r.r, "evidence": list(r.evidence), "extra": _dump(r.extra)}
            for r in doc.relations
        ],
        "has_labels": doc.has_labels,
        "entity_wikidata_ids": [entity.wikidata_id for entity in doc.entities],
        "entity_extra": [_dump(entity.extra) for entity in doc.entities],
        "orig_title": doc.orig_title,
        # the original's title, as the original files name documents: a renamed copy joins its original on it
        "original_doc_id": doc.title if doc.orig_title is None else doc.orig_title,
        "seed": doc.seed,
        "substitutions": None if doc.substitutions is None else [dict(s.__dict__) for s in doc.substitutions],
        "extra": _dump(doc.extra),
    }


def document_from_row(row: dict[str, Any]) -> Document:
    """Inverse of :func:`document_to_row`; also accepts rows without the optional columns."""
    qids = row.get("entity_wikidata_ids") or [None] * len(row["vertexSet"])
    entity_extra = row.get("entity_extra") or [None] * len(row["vertexSet"])
    subs = row.get("substitutions")
    return Document(
        title=row["title"],
        sents=[list(s) for s in row["sents"]],
        entities=[
            Entity(
                mentions=[
                    Mention(
                        name=m["name"],
                        sent_id=m["sent_id"],
                        pos=(m["pos"][0], m["pos"][1]),
                        type=m["type"],
                        extra=_load_extra(m.get("extra")),
                    )
                    for m in cluster
                ],
                wikidata_id=qid,
                extra=_load_extra(ex),
            )
            for cluster, qid, ex in zip(row["vertexSet"], qids, entity_extra)
        ],
        relations=[
            Relation(h=r["h"], t=r["t"], r=r["r"], evidence=list(r["evidence"]), extra=_load_extra(r.get("extra")))
            for r in row["labels"]
        ],
        doc_id=row.get("doc_id"),
        has_labels=row.get("has_labels", True),
        orig_title=row.get("orig_title"),
        seed=row.get("seed"),
        substitutions=None if subs is None else [Substitution(**s) for s in subs],
        extra=_load_extra(row.get("extra")),
    )


def rows_to_dataset(rows: list[dict[str, Any]]) -> Dataset:
    """A ``datasets.Dataset`` of document rows with the explicit :data:`DOCUMENT_FEATURES`."""
    if not rows:  # Dataset.from_list([]) makes a table without columns, which the features then refuse
        return Dataset.from_dict({name: [] for name in DOCUMENT_FEATURES}, features=DOCUMENT_FEATURES)
    return Dataset.from_list(rows, features=DOCUMENT_FEATURES)


def documents_to_dataset(docs: Iterable[Document]) -> Dataset:
    """A ``datasets.Dataset`` with one row per document."""
    return rows_to_dataset([document_to_row(doc) for doc in docs])


def dataset_to_documents(dataset: Dataset) -> list[Document]:
    """The documents of a dataset made by :func:`documents_to_dataset` (or loaded from its parquet)."""
    return [document_from_row(row) for row in dataset]

"""Conversion between :class:`Document` and the dicts of DocRED / Re-DocRED and Linked-(Re-)DocRED files
(docs/documents.md); keys not modelled are kept in the ``extra`` dicts and written back unchanged."""

from __future__ import annotations

import re
from typing import Any

from .errors import DocumentError
from .schema import Document, Entity, Mention, Relation, Substitution

_MENTION_KEYS = ("name", "pos", "sent_id", "type")
_LABEL_KEYS = ("r", "h", "t", "evidence")
_DOC_KEYS = ("title", "doc_id", "orig_title", "seed", "vertexSet", "labels", "sents", "substitutions",
             "entity_wikidata_ids")
_LINKED_DOC_KEYS = ("title", "doc_id", "orig_title", "seed", "entities", "relations", "sents", "substitutions")
_LINKED_ENTITY_KEYS = ("mentions", "type")
_LINKED_MENTION_KEYS = ("name", "sent_id", "pos")
_QID = re.compile(r"^Q[1-9][0-9]*$")


def _require(obj: dict, key: str, kind: type | tuple[type, ...], **where: Any) -> Any:
    if not isinstance(obj, dict):
        raise DocumentError(f"expected a JSON object, got {type(obj).__name__}", **where)
    if key not in obj:
        raise DocumentError("missing", field=key, **where)
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise DocumentError(f"expected {expected}, got {type(value).__name__}", field=key, **where)
    return value


def _pos(value: Any, **where: Any) -> tuple[int, int]:
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise DocumentError(f"expected [start, end] integers, got {value!r}", field="pos", **where)
    return (value[0], value[1])


def _sents(obj: dict) -> list[list[str]]:
    sents = _require(obj, "sents", list)
    for i, sent in enumerate(sents):
        if not isinstance(sent, list) or not all(isinstance(tok, str) for tok in sent):
            raise DocumentError(f"sentence {i} is not a list of token strings", field="sents")
    return sents


def _evidence(value: Any, **where: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise DocumentError(f"expected a list of sentence indices, got {value!r}", field="evidence", **where)
    return list(value)


def _mention(raw: Any, etype: str | None, keys: tuple[str, ...], entity: int, mention: int) -> Mention:
    """One mention dict; ``etype`` is the entity's type in the Linked dialect (mentions carry none there)."""
    name = _require(raw, "name", str, entity=entity, mention=mention)
    sent_id = _require(raw, "sent_id", int, entity=entity, mention=mention)
    pos = _require(raw, "pos", list, entity=entity, mention=mention)
    if etype is None:
        etype = _require(raw, "type", str, entity=entity, mention=mention)
    extra = {k: v for k, v in raw.items() if k not in keys}
    return Mention(name, sent_id, _pos(pos, entity=entity, mention=mention), etype, extra)


def _relation(raw: Any, i: int, h: int, t: int) -> Relation:
    """One label dict whose head and tail were already resolved to entity indices."""
    return Relation(
        h=h,
        t=t,
        r=_require(raw, "r", str, label=i),
        evidence=_evidence(raw.get("evidence", []), label=i),
        extra={k: v for k, v in raw.items() if k not in _LABEL_KEYS},
    )


def _label_list(obj: dict, key: str) -> list:
    value = obj.get(key)
    if value is not None and not isinstance(value, list):
        raise DocumentError(f"expected list, got {type(value).__name__}", field=key)
    return value or []


def _document(obj: dict, keys: tuple[str, ...], labels_key: str, **fields: Any) -> Document:
    """The :class:`Document` of ``obj`` from its parsed ``fields``; keys not modelled go to ``extra``."""
    subs = obj.get("substitutions")
    return Document(
        **fields,
        has_labels=labels_key in obj,
        extra={k: v for k, v in obj.items() if k not in keys},
        doc_id=obj.get("doc_id"),
        orig_title=obj.get("orig_title"),
        seed=obj.get("seed"),
        substitutions=None if subs is None else [Substitution(**s) for s in subs],
    )


def _provenance_dict(doc: Document) -> dict[str, Any]:
    fields = {"doc_id": doc.doc_id, "orig_title": doc.orig_title, "seed": doc.seed}
    return {key: value for key, value in fields.items() if value is not None}


def _substitutions_list(doc: Document) -> list[dict[str, Any]]:
    return [dict(s.__dict__) for s in doc.substitutions or []]


# --------------------------------------------------------------------------- DocRED dialect


def from_docred(obj: dict, index: int | None = None) -> Document:
    """Parse one DocRED / Re-DocRED document dict. Raises :class:`DocumentError` on malformed input."""
    title = obj.get("title") if isinstance(obj, dict) else None
    try:
        title = _require(obj, "title", str)
        sents = _sents(obj)
        vertex_set = _require(obj, "vertexSet", list)
        entities = []
        for e, cluster in enumerate(vertex_set):
            if not isinstance(cluster, list):
                raise DocumentError("expected a list of mentions", entity=e, field="vertexSet")
            mentions = [_mention(raw, None, _MENTION_KEYS, e, m) for m, raw in enumerate(cluster)]
            entities.append(Entity(mentions=mentions))
        qids = obj.get("entity_wikidata_ids")
        if qids is not None:
            if not isinstance(qids, list) or len(qids) != len(entities):
                raise DocumentError("must list one Wikidata id (or null) per entity", field="entity_wikidata_ids")
            for entity, qid in zip(entities, qids):
                entity.wikidata_id = qid
        relations = [
            _relation(raw, i, _require(raw, "h", int, label=i), _require(raw, "t", int, label=i))
            for i, raw in enumerate(_label_list(obj, "labels"))
        ]
        return _document(obj, _DOC_KEYS, "labels", title=title, sents=sents, entities=entities, relations=relations)
    except DocumentError as err:
        raise err.located(index, title if isinstance(title, str) else None) from None
    except (TypeError, KeyError) as err:
        raise DocumentError(f"malformed provenance: {err}", doc_index=index, field="substitutions") from None


def to_docred(doc: Document) -> dict[str, Any]:
    """The DocRED dict of ``doc`` (key order as in the official files)."""
    out: dict[str, Any] = {"title": doc.title, **_provenance_dict(doc)}
    out["vertexSet"] = [
        [
            {"name": m.name, "pos": list(m.pos), "sent_id": m.sent_id, "type": m.type, **m.extra}
            for m in entity.mentions
        ]
        for entity in doc.entities
    ]
    if doc.has_labels:
        out["labels"] = [
            {"r": rel.r, "h": rel.h, "t": rel.t, "evidence": list(rel.evidence), **rel.extra} for rel in doc.relations
        ]
    out["sents"] = doc.sents
    if doc.substitutions is not None:
        out["substitutions"] = _substitutions_list(doc)
    if any(entity.wikidata_id is not None for entity in doc.entities):
        out["entity_wikidata_ids"] = [entity.wikidata_id for entity in doc.entities]
    out.update(doc.extra)
    return out


# --------------------------------------------------------------------------- Linked dialect


def _linked_qid(entity: dict) -> str | None:
    linking = entity.get("entity_linking")
    if isinstance(linking, dict):
        qid = linking.get("wikidata_resource")
        if isinstance(qid, str) and _QID.match(qid):
            return qid
    return None


def from_linked(obj: dict, index: int | None = None) -> Document:
    """Parse one Linked-(Re-)DocRED document dict (``h``/``t`` given as entity ids)."""
    title = obj.get("title") if isinstance(obj, dict) else None
    try:
        title = _require(obj, "title", str)
        sents = _sents(obj)
        raw_entities = _require(obj, "entities", list)
        entities, id2index = [], {}
        for e, raw in enumerate(raw_entities):
            etype = _require(raw, "type", str, entity=e)
            mentions = [
                _mention(rm, etype, _LINKED_MENTION_KEYS, e, m)
                for m, rm in enumerate(_require(raw, "mentions", list, entity=e))
            ]
            ent_id = raw.get("id", e)
            if ent_id in id2index:
                raise DocumentError(f"duplicate entity id {ent_id!r}", entity=e, field="id")
            id2index[ent_id] = e
            extra = {k: v for k, v in raw.items() if k not in _LINKED_ENTITY_KEYS}
            entities.append(Entity(mentions=mentions, wikidata_id=_linked_qid(raw), extra=extra))
        relations = []
        for i, raw in enumerate(_label_list(obj, "relations")):
            h, t = _require(raw, "h", int, label=i), _require(raw, "t", int, label=i)
            for key, ent_id in (("h", h), ("t", t)):
                if ent_id not in id2index:
                    raise DocumentError(f"no entity has id {ent_id}", label=i, field=key)
            relations.append(_relation(raw, i, id2index[h], id2index[t]))
        return _document(obj, _LINKED_DOC_KEYS, "relations", title=title, sents=sents, entities=entities,
                         relations=relations)
    except DocumentError as err:
        raise err.located(index, title if isinstance(title, str) else None) from None


def to_linked(doc: Document) -> dict[str, Any]:
    """The Linked-(Re-)DocRED dict of ``doc``; entities keep their original ids when they had one."""
    entities, ids = [], []
    for e, entity in enumerate(doc.entities):
        extra = dict(entity.extra)
        ent_id = extra.pop("id", e)
        ids.append(ent_id)
        linking = dict(extra.pop("entity_linking", None) or {})
        if entity.wikidata_id is not None:
            linking["wikidata_resource"] = entity.wikidata_id
        raw: dict[str, Any] = {"id": ent_id, "type": entity.type}
        if linking or "entity_linking" in entity.extra:
            raw["entity_linking"] = linking
        raw["mentions"] = [
            {"name": m.name, "sent_id": m.sent_id, "pos": list(m.pos), **m.extra} for m in entity.mentions
        ]
        raw.update(extra)
        entities.append(raw)
    out: dict[str, Any] = {"title": doc.title, **_provenance_dict(doc), "sents": doc.sents, "entities": entities}
    if doc.has_labels:
        out["relations"] = [
            {"r": rel.r, "h": ids[rel.h], "t": ids[rel.t], "evidence": list(rel.evidence), **rel.extra}
            for rel in doc.relations
        ]
    if doc.substitutions is not None:
        out["substitutions"] = _substitutions_list(doc)
    out.update(doc.extra)
    return out


def from_dict(obj: dict, index: int | None = None) -> Document:
    """Parse a document dict of either dialect (Linked: ``entities`` and no ``vertexSet``)."""
    linked = isinstance(obj, dict) and "entities" in obj and "vertexSet" not in obj
    return from_linked(obj, index) if linked else from_docred(obj, index)

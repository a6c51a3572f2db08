"""The DocRED scorer of envre-hf 0.1.0, standalone: GENERATED, do not edit.

Written by ``python -m envre_hf.metrics.space`` from the modules ``envre_hf.documents.schema``, ``envre_hf.documents.errors``, ``envre_hf.documents.relations``, ``envre_hf.documents.formats``, ``envre_hf.atomic``, ``envre_hf.documents.validation``, ``envre_hf.documents.io``, ``envre_hf.metrics.docre``, ``envre_hf.documents.hf``, ``envre_hf.citations``,
so that the docre_f1 Space loads with only ``evaluate`` installed.
"""

from __future__ import annotations

#: Package data the bundled modules read (``importlib.resources`` in envre-hf).
_PACKAGE_DATA = {('envre_hf.documents', 'data/docred_relations.json'): '{\n "description": "The 96 DocRED relation types: Wikidata property id and English name. The order fixes the class index used by models (index 0 is reserved for the no-relation class).",\n "relations": [\n  {\n   "id": "P6",\n   "name": "head of government"\n  },\n  {\n   "id": "P17",\n   "name": "country"\n  },\n  {\n   "id": "P19",\n   "name": "place of birth"\n  },\n  {\n   "id": "P20",\n   "name": "place of death"\n  },\n  {\n   "id": "P22",\n   "name": "father"\n  },\n  {\n   "id": "P25",\n   "name": "mother"\n  },\n  {\n   "id": "P26",\n   "name": "spouse"\n  },\n  {\n   "id": "P27",\n   "name": "country of citizenship"\n  },\n  {\n   "id": "P30",\n   "name": "continent"\n  },\n  {\n   "id": "P31",\n   "name": "instance of"\n  },\n  {\n   "id": "P35",\n   "name": "head of state"\n  },\n  {\n   "id": "P36",\n   "name": "capital"\n  },\n  {\n   "id": "P37",\n   "name": "official language"\n  },\n  {\n   "id": "P39",\n   "name": "position held"\n  },\n  {\n   "id": "P40",\n   "name": "child"\n  },\n  {\n   "id": "P50",\n   "name": "author"\n  },\n  {\n   "id": "P54",\n   "name": "member of sports team"\n  },\n  {\n   "id": "P57",\n   "name": "director"\n  },\n  {\n   "id": "P58",\n   "name": "screenwriter"\n  },\n  {\n   "id": "P69",\n   "name": "educated at"\n  },\n  {\n   "id": "P86",\n   "name": "composer"\n  },\n  {\n   "id": "P102",\n   "name": "member of political party"\n  },\n  {\n   "id": "P108",\n   "name": "employer"\n  },\n  {\n   "id": "P112",\n   "name": "founded by"\n  },\n  {\n   "id": "P118",\n   "name": "league"\n  },\n  {\n   "id": "P123",\n   "name": "publisher"\n  },\n  {\n   "id": "P127",\n   "name": "owned by"\n  },\n  {\n   "id": "P131",\n   "name": "located in the administrative territorial entity"\n  },\n  {\n   "id": "P136",\n   "name": "genre"\n  },\n  {\n   "id": "P137",\n   "name": "operator"\n  },\n  {\n   "id": "P140",\n   "name": "religion"\n  },\n  {\n   "id": "P150",\n   "name": "contains administrative territorial entity"\n  },\n  {\n   "id": "P155",\n   "name": "follows"\n  },\n  {\n   "id": "P156",\n   "name": "followed by"\n  },\n  {\n   "id": "P159",\n   "name": "headquarters location"\n  },\n  {\n   "id": "P161",\n   "name": "cast member"\n  },\n  {\n   "id": "P162",\n   "name": "producer"\n  },\n  {\n   "id": "P166",\n   "name": "award received"\n  },\n  {\n   "id": "P170",\n   "name": "creator"\n  },\n  {\n   "id": "P171",\n   "name": "parent taxon"\n  },\n  {\n   "id": "P172",\n   "name": "ethnic group"\n  },\n  {\n   "id": "P175",\n   "name": "performer"\n  },\n  {\n   "id": "P176",\n   "name": "manufacturer"\n  },\n  {\n   "id": "P178",\n   "name": "developer"\n  },\n  {\n   "id": "P179",\n   "name": "series"\n  },\n  {\n   "id": "P190",\n   "name": "sister city"\n  },\n  {\n   "id": "P194",\n   "name": "legislative body"\n  },\n  {\n   "id": "P205",\n   "name": "basin country"\n  },\n  {\n   "id": "P206",\n   "name": "located in or next to body of water"\n  },\n  {\n   "id": "P241",\n   "name": "military branch"\n  },\n  {\n   "id": "P264",\n   "name": "record label"\n  },\n  {\n   "id": "P272",\n   "name": "production company"\n  },\n  {\n   "id": "P276",\n   "name": "location"\n  },\n  {\n   "id": "P279",\n   "name": "subclass of"\n  },\n  {\n   "id": "P355",\n   "name": "subsidiary"\n  },\n  {\n   "id": "P361",\n   "name": "part of"\n  },\n  {\n   "id": "P364",\n   "name": "original language of work"\n  },\n  {\n   "id": "P400",\n   "name": "platform"\n  },\n  {\n   "id": "P403",\n   "name": "mouth of the watercourse"\n  },\n  {\n   "id": "P449",\n   "name": "original network"\n  },\n  {\n   "id": "P463",\n   "name": "member of"\n  },\n  {\n   "id": "P488",\n   "name": "chairperson"\n  },\n  {\n   "id": "P495",\n   "name": "country of origin"\n  },\n  {\n   "id": "P527",\n   "name": "has part"\n  },\n  {\n   "id": "P551",\n   "name": "residence"\n  },\n  {\n   "id": "P569",\n   "name": "date of birth"\n  },\n  {\n   "id": "P570",\n   "name": "date of death"\n  },\n  {\n   "id": "P571",\n   "name": "inception"\n  },\n  {\n   "id": "P576",\n   "name": "dissolved, abolished or demolished"\n  },\n  {\n   "id": "P577",\n   "name": "publication date"\n  },\n  {\n   "id": "P580",\n   "name": "start time"\n  },\n  {\n   "id": "P582",\n   "name": "end time"\n  },\n  {\n   "id": "P585",\n   "name": "point in time"\n  },\n  {\n   "id": "P607",\n   "name": "conflict"\n  },\n  {\n   "id": "P674",\n   "name": "characters"\n  },\n  {\n   "id": "P676",\n   "name": "lyrics by"\n  },\n  {\n   "id": "P706",\n   "name": "located on terrain feature"\n  },\n  {\n   "id": "P710",\n   "name": "participant"\n  },\n  {\n   "id": "P737",\n   "name": "influenced by"\n  },\n  {\n   "id": "P740",\n   "name": "location of formation"\n  },\n  {\n   "id": "P749",\n   "name": "parent organization"\n  },\n  {\n   "id": "P800",\n   "name": "notable work"\n  },\n  {\n   "id": "P807",\n   "name": "separated from"\n  },\n  {\n   "id": "P840",\n   "name": "narrative location"\n  },\n  {\n   "id": "P937",\n   "name": "work location"\n  },\n  {\n   "id": "P1001",\n   "name": "applies to jurisdiction"\n  },\n  {\n   "id": "P1056",\n   "name": "product or material produced"\n  },\n  {\n   "id": "P1198",\n   "name": "unemployment rate"\n  },\n  {\n   "id": "P1336",\n   "name": "territory claimed by"\n  },\n  {\n   "id": "P1344",\n   "name": "participant of"\n  },\n  {\n   "id": "P1365",\n   "name": "replaces"\n  },\n  {\n   "id": "P1366",\n   "name": "replaced by"\n  },\n  {\n   "id": "P1376",\n   "name": "capital of"\n  },\n  {\n   "id": "P1412",\n   "name": "languages spoken, written or signed"\n  },\n  {\n   "id": "P1441",\n   "name": "present in work"\n  },\n  {\n   "id": "P3373",\n   "name": "sibling"\n  }\n ]\n}'}

# ----------------------------------------------------------------------
# envre_hf/documents/schema.py: Typed model of a DocRED-format document, shared by every stage of envre-hf.

from dataclasses import dataclass, field
from typing import Any

#: The coarse entity types of DocRED.
ENTITY_TYPES = ("PER", "ORG", "LOC", "TIME", "NUM", "MISC")


def sentence_offsets(sents: list[list[str]]) -> list[int]:
    """Start of each sentence of ``sents`` in the document-level token sequence."""
    offsets, total = [], 0
    for sent in sents:
        offsets.append(total)
        total += len(sent)
    return offsets


@dataclass
class Mention:
    """One occurrence of an entity: tokens ``sents[sent_id][pos[0]:pos[1]]``."""

    name: str
    sent_id: int
    pos: tuple[int, int]
    type: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def start(self) -> int:
        return self.pos[0]

    @property
    def end(self) -> int:
        return self.pos[1]

    def tokens(self, sents: list[list[str]]) -> list[str]:
        return sents[self.sent_id][self.pos[0] : self.pos[1]]


@dataclass
class Entity:
    """A coreference cluster. ``wikidata_id`` is set when the entity is linked (e.g. Linked-DocRED)."""

    mentions: list[Mention]
    wikidata_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        """The entity's coarse type: the most frequent mention type (first seen wins ties)."""
        counts: dict[str, int] = {}
        for m in self.mentions:
            counts[m.type] = counts.get(m.type, 0) + 1
        return max(counts, key=counts.__getitem__) if counts else ""

    @property
    def names(self) -> list[str]:
        """Distinct mention names in order of first appearance in the mention list."""
        return list(dict.fromkeys(m.name for m in self.mentions))

    def sentence_ids(self) -> set[int]:
        return {m.sent_id for m in self.mentions}


@dataclass
class Relation:
    """A relation label: entity ``h`` (index into ``entities``) has relation ``r`` (a P-id) to ``t``."""

    h: int
    t: int
    r: str
    evidence: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Substitution:
    """Provenance of one renamed entity in a renamed copy (set by the renaming pipeline)."""

    entity: int
    item_id: str | None
    fine_type: str | None
    original_name: str
    new_name: str
    match: str = "exact"  # "exact", "relaxed:<how>" or "rule" (NUM/TIME)


@dataclass
class Document:
    """A DocRED document. ``key`` (``doc_id`` or, failing that, ``title``) identifies it in every stage."""

    title: str
    sents: list[list[str]]
    entities: list[Entity]
    relations: list[Relation] = field(default_factory=list)
    doc_id: str | None = None
    #: False for unlabelled files (e.g. the DocRED test split): writers then omit ``labels``.
    has_labels: bool = True
    #: Renamed copies: title of the original document, renaming seed, and what was substituted.
    orig_title: str | None = None
    seed: int | None = None
    substitutions: list[Substitution] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.doc_id if self.doc_id is not None else self.title

    @property
    def num_entities(self) -> int:
        return len(self.entities)

    def sentence_offsets(self) -> list[int]:
        """Start of each sentence in the document-level token sequence."""
        return sentence_offsets(self.sents)

    def is_intra(self, h: int, t: int) -> bool:
        """True when some mention of ``h`` and some mention of ``t`` share a sentence."""
        return bool(self.entities[h].sentence_ids() & self.entities[t].sentence_ids())


# ----------------------------------------------------------------------
# envre_hf/documents/errors.py: The one exception type for malformed documents.

class DocumentError(ValueError):
    """A document breaks the DocRED format. The message names the document, entity, mention and field."""

    def __init__(
        self,
        message: str,
        *,
        doc_index: int | None = None,
        title: str | None = None,
        entity: int | None = None,
        mention: int | None = None,
        label: int | None = None,
        field: str | None = None,
    ):
        self.doc_index = doc_index
        self.title = title
        self.entity = entity
        self.mention = mention
        self.label = label
        self.field = field
        self.reason = message
        where = []
        if doc_index is not None:
            where.append(f"document {doc_index}")
        if title is not None:
            where.append(f"({title!r})" if where else f"document {title!r}")
        if entity is not None:
            where.append(f"entity {entity}")
        if mention is not None:
            where.append(f"mention {mention}")
        if label is not None:
            where.append(f"label {label}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{' '.join(where)}: {message}" if where else message)

    def located(self, doc_index: int | None, title: str | None) -> "DocumentError":
        """The same error with the document's position filled in (readers know it, parsers may not)."""
        return DocumentError(
            self.reason,
            doc_index=doc_index if self.doc_index is None else self.doc_index,
            title=title if self.title is None else self.title,
            entity=self.entity,
            mention=self.mention,
            label=self.label,
            field=self.field,
        )


# ----------------------------------------------------------------------
# envre_hf/documents/relations.py: The DocRED relation inventory, shipped as package data.

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

NO_RELATION = "Na"


@dataclass(frozen=True)
class RelationType:
    id: str
    name: str


@lru_cache(maxsize=1)
def _relations_load() -> tuple[RelationType, ...]:
    text = _PACKAGE_DATA[('envre_hf.documents', 'data/docred_relations.json')]
    return tuple(RelationType(row["id"], row["name"]) for row in json.loads(text)["relations"])


class RelationSchema:
    """Maps relation P-ids to class indices and names (class 0 = :data:`NO_RELATION`)."""

    def __init__(self, relations: tuple[RelationType, ...] | list[RelationType]):
        self.relations = tuple(relations)
        self.id2name = {rel.id: rel.name for rel in self.relations}
        self.name2id = {rel.name: rel.id for rel in self.relations}
        self.rel2index = {NO_RELATION: 0, **{rel.id: i + 1 for i, rel in enumerate(self.relations)}}
        self.index2rel = {i: r for r, i in self.rel2index.items()}

    @property
    def num_labels(self) -> int:
        """Number of model classes, the no-relation class included (97 for DocRED)."""
        return len(self.relations) + 1

    def __contains__(self, rel_id: object) -> bool:
        return rel_id in self.id2name

    def __len__(self) -> int:
        return len(self.relations)

    def ids(self) -> list[str]:
        return [rel.id for rel in self.relations]


@lru_cache(maxsize=1)
def docred_schema() -> RelationSchema:
    """The 96 DocRED / Re-DocRED relation types."""
    return RelationSchema(_relations_load())


DOCRED_RELATIONS: tuple[RelationType, ...] = _relations_load()


# ----------------------------------------------------------------------
# envre_hf/documents/formats.py: Conversion between :class:`Document` and the JSON dicts of DocRED-family files.

import re
from typing import Any


_MENTION_KEYS = ("name", "pos", "sent_id", "type")
_LABEL_KEYS = ("r", "h", "t", "evidence")
_DOC_KEYS = (
    "title",
    "doc_id",
    "orig_title",
    "seed",
    "vertexSet",
    "labels",
    "sents",
    "substitutions",
    "entity_wikidata_ids",
)
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


def _formats_evidence(value: Any, **where: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise DocumentError(f"expected a list of sentence indices, got {value!r}", field="evidence", **where)
    return list(value)


def _mention(raw: Any, etype: str | None, keys: tuple[str, ...], **where: Any) -> Mention:
    """One mention dict; ``etype`` is the entity's type in the Linked dialect (mentions carry none there)."""
    return Mention(
        name=_require(raw, "name", str, **where),
        sent_id=_require(raw, "sent_id", int, **where),
        pos=_pos(_require(raw, "pos", list, **where), **where),
        type=_require(raw, "type", str, **where) if etype is None else etype,
        extra={k: v for k, v in raw.items() if k not in keys},
    )


def _relation(raw: Any, i: int, h: int, t: int) -> Relation:
    """One label dict whose head and tail were already resolved to entity indices."""
    return Relation(
        h=h,
        t=t,
        r=_require(raw, "r", str, label=i),
        evidence=_formats_evidence(raw.get("evidence", []), label=i),
        extra={k: v for k, v in raw.items() if k not in _LABEL_KEYS},
    )


def _provenance(obj: dict) -> dict[str, Any]:
    subs = obj.get("substitutions")
    return {
        "doc_id": obj.get("doc_id"),
        "orig_title": obj.get("orig_title"),
        "seed": obj.get("seed"),
        "substitutions": None if subs is None else [Substitution(**s) for s in subs],
    }


def _provenance_dict(doc: Document) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if doc.doc_id is not None:
        out["doc_id"] = doc.doc_id
    if doc.orig_title is not None:
        out["orig_title"] = doc.orig_title
    if doc.seed is not None:
        out["seed"] = doc.seed
    return out


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
            mentions = [_mention(raw, None, _MENTION_KEYS, entity=e, mention=m) for m, raw in enumerate(cluster)]
            entities.append(Entity(mentions=mentions))
        qids = obj.get("entity_wikidata_ids")
        if qids is not None:
            if not isinstance(qids, list) or len(qids) != len(entities):
                raise DocumentError("must list one Wikidata id (or null) per entity", field="entity_wikidata_ids")
            for entity, qid in zip(entities, qids):
                entity.wikidata_id = qid
        relations = []
        has_labels = "labels" in obj
        if obj.get("labels") is not None and not isinstance(obj["labels"], list):
            raise DocumentError(f"expected list, got {type(obj['labels']).__name__}", field="labels")
        for i, raw in enumerate(obj.get("labels") or []):
            relations.append(_relation(raw, i, _require(raw, "h", int, label=i), _require(raw, "t", int, label=i)))
        return Document(
            title=title,
            sents=sents,
            entities=entities,
            relations=relations,
            has_labels=has_labels,
            extra={k: v for k, v in obj.items() if k not in _DOC_KEYS},
            **_provenance(obj),
        )
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


def is_linked(obj: dict) -> bool:
    """True for a Linked-(Re-)DocRED document dict."""
    return isinstance(obj, dict) and "entities" in obj and "vertexSet" not in obj


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
                _mention(rm, etype, _LINKED_MENTION_KEYS, entity=e, mention=m)
                for m, rm in enumerate(_require(raw, "mentions", list, entity=e))
            ]
            ent_id = raw.get("id", e)
            if ent_id in id2index:
                raise DocumentError(f"duplicate entity id {ent_id!r}", entity=e, field="id")
            id2index[ent_id] = e
            extra = {k: v for k, v in raw.items() if k not in _LINKED_ENTITY_KEYS}
            entities.append(Entity(mentions=mentions, wikidata_id=_linked_qid(raw), extra=extra))
        relations = []
        has_labels = "relations" in obj
        if obj.get("relations") is not None and not isinstance(obj["relations"], list):
            raise DocumentError(f"expected list, got {type(obj['relations']).__name__}", field="relations")
        for i, raw in enumerate(obj.get("relations") or []):
            h, t = _require(raw, "h", int, label=i), _require(raw, "t", int, label=i)
            for key, ent_id in (("h", h), ("t", t)):
                if ent_id not in id2index:
                    raise DocumentError(f"no entity has id {ent_id}", label=i, field=key)
            relations.append(_relation(raw, i, id2index[h], id2index[t]))
        return Document(
            title=title,
            sents=sents,
            entities=entities,
            relations=relations,
            has_labels=has_labels,
            extra={k: v for k, v in obj.items() if k not in _LINKED_DOC_KEYS},
            **_provenance(obj),
        )
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
        if entity.wikidata_id is not None or "wikidata_resource" in linking:
            linking["wikidata_resource"] = entity.wikidata_id if entity.wikidata_id is not None else linking.get(
                "wikidata_resource"
            )
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
    """Parse a document dict of either dialect."""
    return from_linked(obj, index) if is_linked(obj) else from_docred(obj, index)


# ----------------------------------------------------------------------
# envre_hf/atomic.py: Atomic file writes: the one way every writer of the package puts a file in place.

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

PathLike = str | os.PathLike

#: Suffix of every temporary file: upload and cleaning skip it.
TMP_SUFFIX = ".tmp"


def _located(err: OSError, path: Path) -> OSError:
    """``err`` re-raised against the final path (same errno and class, e.g. PermissionError)."""
    return type(err)(err.errno, err.strerror or str(err), str(path))


def fsync_dir(folder: PathLike) -> None:
    """Make renames in ``folder`` durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: PathLike, *, durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block ends without error, move it onto ``path``.

    For writers that want a file name rather than a handle (``pyarrow``, ``matplotlib``'s ``savefig``).
    The parent folder is created. With ``durable`` the data is fsynced before the rename.
    """
    path = Path(path)
    for parent in path.parents:  # the nearest existing ancestor must be a folder
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(20, f"cannot write {path}: {parent} is a file, not a folder", str(parent))
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(21, "is a folder, not a file", str(path))
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
        os.close(fd)
    except OSError as err:
        raise _located(err, path) from None
    tmp = Path(tmp_name)
    try:
        yield tmp
        if durable:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        if os.name == "posix":
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException as err:
        try:
            tmp.unlink()
        except OSError:
            pass
        if isinstance(err, OSError) and err.filename in (None, str(tmp), tmp_name):
            raise _located(err, path) from None  # the write failed (disk full, ...): name the file asked for
        raise
    if durable:
        fsync_dir(path.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_open(path: PathLike, mode: str = "w", *, encoding: str | None = "utf-8", durable: bool = True) -> Iterator[IO]:
    """``open(path, mode)`` for writing, atomically (``mode`` is ``"w"`` or ``"wb"``)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', got {mode!r}")
    with atomic_path(path, durable=durable) as tmp:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh


def write_text(path: PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: PathLike, data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_json(path: PathLike, obj: Any, *, indent: int | None = 2, ensure_ascii: bool = False, **kwargs: Any) -> Path:
    """``json.dump`` to ``path`` atomically (a trailing newline when indented)."""
    text = json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii, **kwargs)
    return write_text(path, text + "\n" if indent is not None else text)


def clean_temporary_files(folder: PathLike) -> int:
    """Remove the temporary files a killed writer left in ``folder`` (not recursive); returns how many."""
    removed = 0
    for tmp in Path(folder).glob(f".*{TMP_SUFFIX}"):
        if tmp.is_file():
            tmp.unlink(missing_ok=True)
            removed += 1
    return removed


def load_jsonl_records(path: PathLike) -> list[dict[str, Any]]:
    """Finished records; a torn last line (crash mid-write) is cut off so appending stays valid JSONL."""
    path = Path(path)
    if not path.exists():
        return []
    records, good_bytes = [], 0
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break
            try:
                record = json.loads(raw)
            except ValueError:  # not JSON, or not text (zeros a machine crash left)
                break
            if not isinstance(record, dict):
                break
            records.append(record)
            good_bytes += len(raw)
    if good_bytes != path.stat().st_size:
        with open(path, "r+b") as fh:
            fh.truncate(good_bytes)
    return records


# ----------------------------------------------------------------------
# envre_hf/documents/validation.py: Checks that a document is well formed, and counts the real-data quirks that are not errors.

from collections.abc import Iterable
from dataclasses import dataclass, field



def validate_document(doc: Document, index: int | None = None, schema: RelationSchema | None = None) -> None:
    """Raise :class:`DocumentError` for the first problem found in ``doc``."""
    schema = schema if schema is not None else docred_schema()
    where = {"doc_index": index, "title": doc.title}
    n_sents = len(doc.sents)
    if not isinstance(doc.title, str):
        raise DocumentError(f"expected a string, got {type(doc.title).__name__}", field="title", **where)
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


# ----------------------------------------------------------------------
# envre_hf/documents/io.py: Reading and writing document files: DocRED JSON (a list), JSON Lines, Linked-(Re-)DocRED, gzipped or not.

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any



_WRITERS = {"docred": to_docred, "linked": to_linked}
#: What a reader does with a bad document: ``"fail"`` (raise), or a callable ``(error, raw object)`` that skips it.
OnError = str | Callable[[DocumentError, Any], None]


def _is_jsonl(path: PathLike) -> bool:
    return str(path).endswith((".jsonl", ".jsonl.gz"))


def read_text(path: PathLike) -> str:
    """The text of ``path`` (gunzipped when the name ends in ``.gz``; a UTF-8 byte-order mark is dropped)."""
    path = Path(path)
    data = path.read_bytes()  # OSError (missing, a folder, unreadable) names the path itself
    if path.name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise DocumentError(f"{path}: not a readable gzip file ({err})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DocumentError(
            f"{path}: not UTF-8 text (byte {err.start} is {data[err.start:err.start + 1]!r}); re-encode it as UTF-8"
        ) from None


def parse_json(text: str, path: Path, line: int | None = None) -> Any:
    where = f"{path}: line {line}" if line is not None else str(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DocumentError(f"{where} is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    except RecursionError:
        raise DocumentError(f"{where}: JSON nested too deeply to be a document") from None


#: A JSON escape of a UTF-16 surrogate (``\\ud800``-``\\udfff``): the only way text read as UTF-8 can hold one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where in ``value`` (a raw JSON document) a string holds a lone surrogate (``sents[0][2]``), else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "(document)"
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and _lone_surrogate(key) is not None:
            return f"{where}.{key!r}" if where else repr(key)
        found = _lone_surrogate(item, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else key)
        if found is not None:
            return found
    return None


def _surrogate_error(obj: Any, index: int) -> DocumentError | None:
    """A :class:`DocumentError` for a document holding half of a UTF-16 pair (not Unicode text: it cannot be
    written as UTF-8, so every writer downstream would fail on it), naming the document and the field."""
    where = _lone_surrogate(obj)
    if where is None:
        return None
    title = obj.get("title") if isinstance(obj, dict) else None
    return DocumentError(
        "text with an unpaired UTF-16 surrogate escape (\\ud800-\\udfff): not Unicode text; fix the escape",
        doc_index=index, title=title if isinstance(title, str) and _lone_surrogate(title) is None else None,
        field=where,
    )


def read_raw_documents(path: PathLike, *, keep_errors: bool = False) -> list[Any]:
    """The JSON objects of a document file, not parsed yet (one per JSON list item or JSON Lines line).

    With ``keep_errors`` a JSON Lines line that is not valid JSON becomes a :class:`DocumentError` in the
    list (so ``envre build --on-error skip`` can list it and go on); otherwise it is raised.
    """
    path = Path(path)
    text = read_text(path)
    if _is_jsonl(path):
        out: list[Any] = []
        for i, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            try:
                out.append(parse_json(line, path, i + 1))
            except DocumentError as err:
                if not keep_errors:
                    raise
                out.append(DocumentError(err.reason, doc_index=len(out)))
    else:
        data = parse_json(text, path)
        if isinstance(data, dict):  # a single document
            data = [data]
        if not isinstance(data, list):
            raise DocumentError(f"{path}: expected a JSON list of documents, got {type(data).__name__}")
        out = data
    if _SURROGATE_ESCAPE.search(text):  # rare (a proper pair is also escaped so): look at each document
        for i, obj in enumerate(out):
            err = None if isinstance(obj, DocumentError) else _surrogate_error(obj, i)
            if err is not None:
                if not keep_errors:
                    raise located_in_file(err, path)
                out[i] = err
    return out


def parse_document(obj: Any, index: int, *, validate: bool = True) -> Document:
    """One raw document, parsed (and validated): any malformation is a :class:`DocumentError`."""

    try:
        doc = from_dict(obj, index)
    except DocumentError:
        raise
    except (TypeError, KeyError, AttributeError, ValueError) as err:  # e.g. a malformed provenance record
        title = obj.get("title") if isinstance(obj, dict) else None
        raise DocumentError(f"malformed document ({err})", doc_index=index,
                            title=title if isinstance(title, str) else None) from None
    if validate:
        validate_document(doc, index)
    return doc


class KeyChecker:
    """Refuses a second document with the same key (``doc_id``, else ``title``) in one collection."""

    def __init__(self, source: PathLike | None = None):
        self.source = source
        self.seen: dict[Any, int] = {}

    def check(self, doc: Document, index: int) -> None:
        key = doc.key
        if not isinstance(key, str):
            field = "doc_id" if doc.doc_id is not None else "title"
            raise DocumentError(f"expected a string, got {type(key).__name__}", doc_index=index, field=field)
        if key in self.seen:
            field = "doc_id" if doc.doc_id is not None else "title"
            where = f"{self.source}: " if self.source is not None else ""
            raise DocumentError(
                f"{where}duplicate document key {key!r} (also document {self.seen[key]}); every document needs "
                f"its own {field}",
                doc_index=index,
                field=field,
            )
        self.seen[key] = index


def iter_documents(path: PathLike, *, validate: bool = True, on_error: OnError = "fail") -> Iterator[Document]:
    """Yield the documents of a DocRED / Linked JSON list or a JSON Lines file (see the module doc).

    ``validate=False`` only parses (for tools that repair files); keys are checked for duplicates always.
    ``on_error="fail"`` raises the first bad document (named with the file); a callable is called instead
    with each bad document's error (naming its index, not the file) and its raw JSON object (``None`` for a
    JSON Lines line that is not JSON), and the document is left out: so ``envre build --on-error skip`` lists
    it and goes on. The callable may raise to stop.
    """
    path = Path(path)
    if on_error != "fail" and not callable(on_error):
        raise ValueError(f"on_error must be 'fail' or a callable, got {on_error!r}")
    keys = KeyChecker(path)
    skip = None if on_error == "fail" else on_error
    for i, obj in enumerate(read_raw_documents(path, keep_errors=skip is not None)):
        try:
            if isinstance(obj, DocumentError):  # a JSON Lines line that is not JSON (kept for ``skip``)
                raise obj
            doc = parse_document(obj, i, validate=validate)
        except DocumentError as err:
            if skip is None:
                raise err if str(path) in str(err) else located_in_file(err, path) from None
            skip(err, None if isinstance(obj, DocumentError) else obj)
            continue
        keys.check(doc, i)
        yield doc


def located_in_file(err: DocumentError, path: Path) -> DocumentError:
    return DocumentError(
        f"{err.reason} (in {path})",
        doc_index=err.doc_index,
        title=err.title,
        entity=err.entity,
        mention=err.mention,
        label=err.label,
        field=err.field,
    )


def read_document_file(path: PathLike, *, validate: bool = True, on_error: OnError = "fail") -> list[Document]:
    """Read every document of the file ``path`` (see :func:`iter_documents` for ``on_error``); any other source
    (a build folder, a ``datasets`` dataset, a Hub id) goes through :func:`envre_hf.documents.read_documents`."""
    return list(iter_documents(path, validate=validate, on_error=on_error))


def check_unique_keys(docs: Iterable[Document], source: PathLike | None = None) -> None:
    """Raise :class:`DocumentError` when two documents share a key."""
    keys = KeyChecker(source)
    for i, doc in enumerate(docs):
        keys.check(doc, i)


def write_documents(docs: Iterable[Document], path: PathLike, dialect: str = "docred") -> Path:
    """Write ``docs`` to ``path`` as a JSON list, or JSON Lines when the name ends in ``.jsonl``.

    ``dialect`` is ``"docred"`` (vertexSet/labels) or ``"linked"`` (entities/relations).
    The file is written atomically (:mod:`envre_hf.atomic`), so a crash never leaves half a file.
    """

    if dialect not in _WRITERS:
        raise ValueError(f"unknown dialect {dialect!r}; expected one of {sorted(_WRITERS)}")
    convert = _WRITERS[dialect]
    path = Path(path)
    with atomic_path(path) as tmp:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(tmp, "wt", encoding="utf-8") as fh:
            if _is_jsonl(path):
                for doc in docs:
                    fh.write(json.dumps(convert(doc), ensure_ascii=False))
                    fh.write("\n")
            else:
                json.dump([convert(doc) for doc in docs], fh, ensure_ascii=False)
    return path


# ----------------------------------------------------------------------
# envre_hf/metrics/docre.py: DocRED scoring with the official semantics (the core of the ``docre_f1`` metric).

import gc
import operator
import os
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, compress, product, repeat
from operator import getitem, is_not, itemgetter
from pathlib import Path
from typing import Any


#: Added to the Ign precision denominator by the official scorer (keeps an all-in-train submission finite).
IGN_EPSILON = 1e-5


class PredictionError(ValueError):
    """A prediction is malformed or points at an unknown document / entity. Names index, document and field."""

    def __init__(self, message: str, *, index: int | None = None, doc: str | None = None, field: str | None = None):
        self.index, self.doc, self.field, self.reason = index, doc, field, message
        where = []
        if index is not None:
            where.append(f"prediction {index}")
        if doc is not None:
            where.append(f"(document {doc!r})")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{' '.join(where)}: {message}" if where else message)


# --------------------------------------------------------------------------- training facts


@dataclass(frozen=True)
class TrainFacts:
    """The official "train annotated" fact set: (head mention name, tail mention name, relation).

    Also indexed by relation (``r -> {(head name, tail name)}``) so a correct prediction is checked with
    one C-level ``isdisjoint`` over the product of its entities' names.
    """

    facts: frozenset[tuple[str, str, str]]
    num_documents: int = 0
    by_relation: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.by_relation and self.facts:
            grouped: dict[str, set[tuple[str, str]]] = {}
            for n1, n2, r in self.facts:
                grouped.setdefault(r, set()).add((n1, n2))
            object.__setattr__(self, "by_relation", {r: frozenset(v) for r, v in grouped.items()})

    @classmethod
    def from_documents(cls, docs: Iterable[Document]) -> "TrainFacts":
        """Every (mention name of h, mention name of t, r) of every label of ``docs``."""
        grouped: dict[str, set[tuple[str, str]]] = {}
        n = 0
        for n, doc in enumerate(docs, 1):
            names = [entity.names for entity in doc.entities]
            for rel in doc.relations:
                pairs = grouped.get(rel.r)
                if pairs is None:
                    pairs = grouped[rel.r] = set()
                pairs.update(product(names[rel.h], names[rel.t]))
        facts = frozenset((n1, n2, r) for r, pairs in grouped.items() for n1, n2 in pairs)
        return cls(facts, n, {r: frozenset(v) for r, v in grouped.items()})

    @classmethod
    def from_records(cls, records: Iterable[Any]) -> "TrainFacts":
        """:meth:`from_documents` of DocRED-format dicts (e.g. ``orjson.loads`` of the training file), without
        building typed documents; a record that is not plain DocRED goes through the typed reader."""

        def fields() -> Iterator[tuple[str, list[list[str]], Iterable[tuple]]]:
            for i, obj in enumerate(records):
                fast = _fast_gold_record(obj)
                if fast is None:
                    doc = from_dict(obj, i)
                    yield doc.title, [entity.names for entity in doc.entities], _label_columns(doc)
                else:
                    yield fast[1], [list(dict.fromkeys(map(_NAME, cluster))) for cluster in fast[5]], fast[4]

        return cls.from_fields(fields())

    @classmethod
    def from_fields(cls, documents: Iterable[tuple[str, Sequence[Sequence[str]], Sequence[Sequence]]]) -> "TrainFacts":
        """The facts of documents given as ``(title, distinct mention names per entity, label columns (hs, ts,
        rs, ...))``, as a reader that parsed and checked a file itself has them (:mod:`~.fast_io`)."""
        grouped: dict[str, set[tuple[str, str]]] = {}
        n = 0
        for n, (title, names, (hs, ts, rs, *_)) in enumerate(documents, 1):
            _check_label_range(hs, ts, len(names), n - 1, title)
            for h, t, r in zip(hs, ts, rs):
                pairs = grouped.get(r)
                if pairs is None:
                    pairs = grouped[r] = set()
                pairs.update(product(names[h], names[t]))
        facts = frozenset((n1, n2, r) for r, pairs in grouped.items() for n1, n2 in pairs)
        return cls(facts, n, {r: frozenset(v) for r, v in grouped.items()})

    def to_columns(self) -> dict[str, Any]:
        """The facts as JSON-ready columns, grouped by relation (a scoring cache stores them;
        :meth:`from_columns` reads them back)."""
        by_relation = {r: [list(col) for col in zip(*pairs)] for r, pairs in self.by_relation.items() if pairs}
        return {"num_documents": self.num_documents, "by_relation": by_relation}

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> "TrainFacts":
        """:meth:`to_columns` read back; ValueError when the columns do not fit together."""
        n, grouped = columns["num_documents"], columns["by_relation"]
        if type(n) is not int or type(grouped) is not dict:
            raise ValueError("training facts: unexpected column types")
        columns_of = list(grouped.values())  # per relation: [head names, tail names]
        if set(map(type, columns_of)) - {list} or set(map(len, columns_of)) - {2}:
            raise ValueError("training facts: a relation without its two name columns")
        heads, tails = [h for h, _ in columns_of], [t for _, t in columns_of]
        if list(map(len, heads)) != list(map(len, tails)) or set(map(type, chain(*heads, *tails))) - {str}:
            raise ValueError("training fact columns of different lengths, or names that are not strings")
        by_relation = {r: frozenset(zip(h, t)) for r, (h, t) in grouped.items()}
        facts = frozenset(chain.from_iterable(zip(h, t, repeat(r)) for r, (h, t) in grouped.items()))
        return cls(facts, n, by_relation)

    def __len__(self) -> int:
        return len(self.facts)

    def __contains__(self, fact: object) -> bool:
        return fact in self.facts

    def any_in_train(self, head_names: Iterable[str], tail_names: Iterable[str], r: str) -> bool:
        """True when some (head name, tail name, r) is a training fact (the official Ign test)."""
        pairs = self.by_relation.get(r)
        return pairs is not None and not pairs.isdisjoint(product(head_names, tail_names))


# --------------------------------------------------------------------------- scores


def _prf(correct: int, predicted: int, gold: int) -> tuple[float, float, float]:
    """Precision, recall, F1 with the official expressions (0 for empty denominators)."""
    p = 1.0 * correct / predicted if predicted > 0 else 0.0
    r = 1.0 * correct / gold if gold > 0 else 0.0
    f1 = 0.0 if p + r == 0 else 2.0 * p * r / (p + r)
    return p, r, f1


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2.0 * p * r / (p + r)


@dataclass
class DocREScores:
    """Scores of one submission. Fractions in [0, 1], like the official scorer's return values."""

    precision: float
    recall: float
    f1: float
    #: Ign scores; None when no training documents were given.
    ign_precision: float | None
    ign_f1: float | None
    #: Evidence scores; None when no prediction carries an ``evidence`` field.
    evidence_precision: float | None
    evidence_recall: float | None
    evidence_f1: float | None
    intra_precision: float
    intra_recall: float
    intra_f1: float
    inter_precision: float
    inter_recall: float
    inter_f1: float
    #: relation id -> {precision, recall, f1, gold, predicted, correct}
    per_relation: dict[str, dict[str, float | int]] = field(default_factory=dict)
    #: number of entities of a document -> {precision, recall, f1, documents, gold, predicted, correct}
    by_entity_count: dict[int, dict[str, float | int]] = field(default_factory=dict)
    num_documents: int = 0
    num_gold: int = 0
    #: De-duplicated predictions (the precision denominator) and how many repeats were dropped.
    num_predictions: int = 0
    num_duplicates: int = 0
    num_correct: int = 0
    num_correct_in_train: int = 0
    #: Predictions for documents absent from the gold set (only with ``allow_unknown_documents``).
    num_unknown_document_predictions: int = 0
    num_gold_evidence: int = 0
    num_predicted_evidence: int = 0
    num_correct_evidence: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (entity-count keys stay ints; ``json.dumps`` writes them as strings)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("per_relation", "by_entity_count")}
        out["per_relation"] = {r: dict(v) for r, v in self.per_relation.items()}
        out["by_entity_count"] = {n: dict(v) for n, v in self.by_entity_count.items()}
        return out

    def headline(self) -> dict[str, float | None]:
        """The numbers papers report, in percent rounded to 2 decimals (None stays None)."""
        keys = ("f1", "ign_f1", "precision", "recall", "intra_f1", "inter_f1", "evidence_f1")
        return {k: None if getattr(self, k) is None else round(100 * getattr(self, k), 2) for k in keys}


# --------------------------------------------------------------------------- gold index


def _typed_gold_record(doc: Document, i: int) -> tuple:
    """The fields :meth:`GoldIndex._add` takes, from a typed document (:func:`_fast_gold_record` reads them from a dict)."""
    for e, entity in enumerate(doc.entities):
        for m, mention in enumerate(entity.mentions):
            if mention.sent_id < 0:  # no bit in a sentence mask (validate_document rejects it too)
                raise DocumentError(
                    f"sent_id {mention.sent_id} is out of range", doc_index=i, title=doc.title, entity=e, mention=m, field="sent_id"
                )
    return (
        doc.key,
        doc.title,
        doc.has_labels,
        [sum({1 << m.sent_id for m in e.mentions}) for e in doc.entities],
        _label_columns(doc),
        doc,
    )


def _label_columns(doc: Document) -> tuple[list[int], list[int], list[str], list[list[int]]]:
    """The labels of a typed document as columns: heads, tails, relations, evidence lists."""
    relations = doc.relations
    return [r.h for r in relations], [r.t for r in relations], [r.r for r in relations], [r.evidence for r in relations]


def _check_label_range(hs: Sequence[int], ts: Sequence[int], n_ent: int, i: int, title: str) -> None:
    """DocumentError naming the first label whose head or tail is not an entity of the document."""
    if hs and (min(hs) < 0 or min(ts) < 0 or max(hs) >= n_ent or max(ts) >= n_ent):
        for j, (h, t) in enumerate(zip(hs, ts)):
            if not (0 <= h < n_ent and 0 <= t < n_ent):
                raise DocumentError(f"({h}, {t}) points outside the {n_ent} entities", doc_index=i, title=title, label=j, field="h/t")


def _fitting_columns(
    keys: Sequence[Any],
    titles: Sequence[Any],
    masks: Sequence[Any],
    n_ent: list[int],
    doc: Sequence[Any],
    hs: Sequence[Any],
    ts: Sequence[Any],
    rs: Sequence[Any],
    evidence: Sequence[Any],
) -> Sequence[list[int]]:
    """The sentence masks of :meth:`GoldIndex.from_columns` as integers; ValueError unless the columns
    fit together (lengths, types, ranges)."""
    if not (len(keys) == len(titles) == len(masks) == len(set(keys))):
        raise ValueError("document columns do not fit together")
    if not len(doc) == len(hs) == len(ts) == len(rs) == len(evidence):
        raise ValueError("label columns of different lengths")
    if set(map(type, chain(keys, titles, rs))) - {str}:
        raise ValueError("keys, titles or relations that are not strings")
    if set(map(type, chain(doc, hs, ts, chain.from_iterable(evidence)))) - {int}:
        raise ValueError("indices that are not integers")
    mask_types = set(map(type, chain.from_iterable(masks)))
    if mask_types - {int, str}:
        raise ValueError("sentence masks that are neither integers nor strings")
    if str in mask_types:  # documents of 64 sentences and more (ValueError: not a number)
        masks = [list(map(int, doc_masks)) if doc_masks and type(doc_masks[0]) is str else doc_masks for doc_masks in masks]
    sizes = list(map(n_ent.__getitem__, doc))  # IndexError: a document that is not there
    if min(chain(doc, hs, ts), default=0) < 0 or any(map(operator.ge, hs, sizes)) or any(map(operator.ge, ts, sizes)):
        raise ValueError("label indices out of range")
    return masks


class GoldIndex:
    """Gold documents prepared for scoring (build once to score several submissions against one gold set).

    Built from :class:`Document` objects, or with :meth:`from_records` straight from DocRED dicts as a
    JSON parser returns them (the fast path of ``envre evaluate``: no typed documents are built).
    """

    def __init__(self, gold: Sequence[Document] = ()):
        #: key -> where its mention names are read from: its Document, its raw ``vertexSet`` (from_records), its
        #: names (from_columns with a names column), or None until the names loader runs (from_columns)
        self.docs: dict[str, Any] = {}
        self.num_entities: dict[str, int] = {}
        #: key -> per entity, the sentences its mentions occur in as a bit mask (bit s: sentence s);
        #: a pair is intra when the masks share a bit
        self.sentence_masks: dict[str, list[int]] = {}
        #: title -> keys, to resolve predictions that carry only a title
        self.titles: dict[str, list[str]] = {}
        #: (key, h, t, r) -> gold evidence list; duplicate gold labels: the last one wins, as officially
        self.labels: dict[tuple[str, int, int, str], list[int]] = {}
        self.num_gold_evidence = 0
        self._names: dict[str, list[list[str]]] = {}
        self._in_train: tuple[TrainFacts, frozenset[tuple[str, int, int, str]]] | None = None
        self._names_loader: Callable[[], list[list[list[str]]]] | None = None
        for i, doc in enumerate(gold):
            if not isinstance(doc, Document):
                raise DocumentError(f"expected a Document, got {type(doc).__name__}", doc_index=i)
            self._add(i, *_typed_gold_record(doc, i))
        self._finish()

    @classmethod
    def from_records(cls, records: Iterable[Any]) -> "GoldIndex":
        """The index of DocRED-format document dicts (e.g. ``orjson.loads`` of a gold file), same as
        ``GoldIndex([from_dict(r) for r in records])`` for valid files, without building typed documents.

        Only what scoring reads is checked here (title, doc_id, mention names and sentence ids, labels);
        a record that is not plain DocRED (Linked-DocRED) or fails a check is parsed by the typed reader,
        which raises :class:`DocumentError` naming the document and field.
        """
        return cls.from_fields(
            _fast_gold_record(obj) or _typed_gold_record(from_dict(obj, i), i) for i, obj in enumerate(records)
        )

    @classmethod
    def from_fields(cls, documents: Iterable[tuple]) -> "GoldIndex":
        """The index of documents given as ``(key, title, has labels, sentence mask per entity, label columns
        (hs, ts, rs, evidence lists), names source)``; the names source (a typed document or a raw
        ``vertexSet``) is read only when Ign needs the names."""
        index = cls()
        for i, fields in enumerate(documents):
            index._add(i, *fields)
        index._finish()
        return index

    def to_columns(self) -> dict[str, Any]:
        """The index as JSON-ready columns (a scoring cache stores them; :meth:`from_columns` reads them back)."""
        keys = list(self.docs)
        position = {key: i for i, key in enumerate(keys)}
        title_of = {key: title for title, group in self.titles.items() for key in group}
        labels = list(self.labels)
        return {
            "keys": keys,
            "titles": [title_of[key] for key in keys],
            # JSON numbers hold 64 bits: the masks of documents with more sentences are written as strings
            "sentence_masks": [
                masks if max(masks, default=0) < _MAX_JSON_INT else list(map(str, masks))
                for masks in map(self.sentence_masks.__getitem__, keys)
            ],
            "names": [self.names(key) for key in keys],
            "label_doc": [position[key] for key in map(itemgetter(0), labels)],
            "label_h": list(map(itemgetter(1), labels)),
            "label_t": list(map(itemgetter(2), labels)),
            "label_r": list(map(itemgetter(3), labels)),
            "label_evidence": list(self.labels.values()),
            "num_gold_evidence": self.num_gold_evidence,
            "num_gold_intra": self.num_gold_intra,
        }

    @classmethod
    def from_columns(
        cls,
        columns: Mapping[str, Any],
        names_loader: Callable[[], list[list[list[str]]]] | None = None,
        *,
        checked: bool = False,
    ) -> "GoldIndex":
        """:meth:`to_columns` read back, checked for shape, types and ranges (ValueError when they do not fit).

        Without a ``names`` column the mention names are read on first use (only Ign needs them) from
        ``names_loader()``: per document in key order, checked like the other columns (:meth:`names_fit`).
        ``checked``: the columns come from a reader that checked every type and range itself (the fast path's
        :func:`~.fast_io._plain_columns`, which accepts exactly what ``envre build`` accepts), so only
        repeated labels are looked for here.
        """
        keys, titles, masks, names = columns["keys"], columns["titles"], columns["sentence_masks"], columns.get("names")
        doc, hs, ts, rs, evidence = (columns[f"label_{c}"] for c in ("doc", "h", "t", "r", "evidence"))
        n_ent = list(map(len, masks))
        if not checked:
            masks = _fitting_columns(keys, titles, masks, n_ent, doc, hs, ts, rs, evidence)
        index = cls()
        index.num_entities = dict(zip(keys, n_ent))
        if names is not None:
            if not index.names_fit(names, keys):
                raise ValueError("the names column does not fit the documents")
            index.docs = dict(zip(keys, names))
            index._names = dict(index.docs)
        elif names_loader is not None:
            index.docs = dict.fromkeys(keys)
            index._names_loader = names_loader
        else:
            raise ValueError("no names column and no names loader")
        index.sentence_masks = dict(zip(keys, masks))
        for key, title in zip(keys, titles):
            index.titles.setdefault(title, []).append(key)
        index.labels = dict(zip(zip(map(keys.__getitem__, doc), hs, ts, rs), evidence))
        if len(index.labels) != len(doc):
            raise ValueError("repeated labels")
        index.num_gold_evidence, num_gold_intra = columns["num_gold_evidence"], columns["num_gold_intra"]
        if type(index.num_gold_evidence) is not int or type(num_gold_intra) is not int:
            raise ValueError("counts that are not integers")
        index._finish(num_gold_intra, Counter(rs), Counter(map(n_ent.__getitem__, doc)))
        return index

    def _add(
        self,
        i: int,
        key: str,
        title: str,
        has_labels: bool,
        sentence_masks: list[int],
        labels: tuple[Sequence[int], Sequence[int], Sequence[str], Sequence[list[int]]],
        source: Any,
    ) -> None:
        if key in self.docs:
            raise DocumentError(
                f"duplicate document key {key!r} in the gold set (give copies distinct doc_id values)",
                doc_index=i,
                title=title,
                field="doc_id",
            )
        if not has_labels:
            raise DocumentError(
                "gold document has no labels (an unlabelled split)", doc_index=i, title=title, field="labels"
            )
        self.docs[key] = source
        n_ent = self.num_entities[key] = len(sentence_masks)
        self.sentence_masks[key] = sentence_masks
        self.titles.setdefault(title, []).append(key)
        hs, ts, rs, evidence = labels
        _check_label_range(hs, ts, n_ent, i, title)
        self.labels.update(zip(zip(repeat(key), hs, ts, rs), evidence))  # a repeated label: the last one wins
        self.num_gold_evidence += sum(map(len, evidence))

    def _finish(
        self,
        num_gold_intra: int | None = None,
        gold_by_relation: Counter[str] | None = None,
        gold_by_count: Counter[int] | None = None,
    ) -> None:
        """The totals scoring divides by (those already counted from columns are passed in)."""
        labels = self.labels
        if gold_by_relation is None:
            gold_by_relation = Counter(map(itemgetter(3), labels))
        if gold_by_count is None:
            gold_by_count = Counter(map(self.num_entities.__getitem__, map(itemgetter(0), labels)))
        self.gold_by_relation: Counter[str] = gold_by_relation
        self.gold_by_count: Counter[int] = gold_by_count
        self.docs_by_count: Counter[int] = Counter(self.num_entities.values())
        if num_gold_intra is None:
            keys, hs, ts, _ = zip(*labels) if labels else ((), (), (), ())
            doc_masks = list(map(self.sentence_masks.__getitem__, keys))
            shared = map(operator.and_, map(getitem, doc_masks, hs), map(getitem, doc_masks, ts))
            num_gold_intra = len(labels) - list(shared).count(0)
        self.num_gold_intra = num_gold_intra

    def __len__(self) -> int:
        return len(self.docs)

    def labels_in_train(self, facts: TrainFacts) -> frozenset[tuple[str, int, int, str]]:
        """The gold labels that are "in train" for ``facts`` (:meth:`TrainFacts.any_in_train` of their
        mention names); computed once per ``facts`` object, since a correct prediction is a gold label."""
        if self._in_train is None or self._in_train[0] is not facts:
            self._in_train = (facts, _labels_in_train(self, facts))
        return self._in_train[1]

    def remember_labels_in_train(self, facts: TrainFacts, labels: Iterable[tuple[str, int, int, str]]) -> None:
        """Install :meth:`labels_in_train` for ``facts`` computed earlier (a cache of a gold / train pair)."""
        self._in_train = (facts, frozenset(labels))

    def names_fit(self, names: Any, keys: Sequence[str] | None = None) -> bool:
        """Whether ``names`` (per document in key order, per entity a list of strings) fit the documents."""
        keys = list(self.docs) if keys is None else keys
        return (
            type(names) is list
            and len(names) == len(keys)
            and not set(map(type, names)) - {list}
            and list(map(len, names)) == list(map(self.num_entities.__getitem__, keys))
            and not set(map(type, chain.from_iterable(names))) - {list}
            and not set(map(type, chain.from_iterable(chain.from_iterable(names)))) - {str}
        )

    def names(self, key: str) -> list[list[str]]:
        """Distinct mention names of every entity of a document (computed on first use)."""
        names = self._names.get(key)
        if names is None:
            source = self.docs[key]
            if source is None and self._names_loader is not None:  # from_columns without names: all at once
                loaded = self._names_loader()
                if not self.names_fit(loaded):
                    raise ValueError("the loaded mention names do not fit the documents")
                self._names_loader = None
                self._names = dict(zip(self.docs, loaded))
                return self._names[key]
            if isinstance(source, Document):
                names = [e.names for e in source.entities]
            else:  # a raw vertexSet (from_records): Entity.names' rule, distinct names in mention order
                names = [list(dict.fromkeys(map(_NAME, cluster))) for cluster in source]
            names = self._names[key] = names
        return names

    def resolve(self, doc_id: Any, title: Any) -> str | None:
        """The gold key of a prediction (``doc_id`` first, then ``title``), or None when unknown."""
        if doc_id is not None:
            return doc_id if doc_id in self.docs else None
        if title in self.docs:
            return title
        keys = self.titles.get(title)
        if keys is None:
            return None
        if len(keys) > 1:
            raise PredictionError(
                f"title {title!r} names {len(keys)} gold documents; give the prediction a doc_id", field="title"
            )
        return keys[0]


_BIT = (1).__lshift__  # sentence id -> its bit
_SENT_ID, _NAME = itemgetter("sent_id"), itemgetter("name")
#: Sentence masks from this size on are written as strings in JSON (which holds 64-bit integers).
_MAX_JSON_INT = 1 << 63


def _fast_gold_record(obj: Any) -> tuple[str, str, bool, list[int], tuple[list, list, list, list], list] | None:
    """What :class:`GoldIndex` needs of one plain DocRED dict, or None when the typed reader must look at it."""
    if type(obj) is not dict or "vertexSet" not in obj:
        return None
    title, vertex_set = obj.get("title"), obj["vertexSet"]
    doc_id = obj.get("doc_id")
    if type(title) is not str or type(vertex_set) is not list or (doc_id is not None and type(doc_id) is not str):
        return None
    try:
        if set(map(type, vertex_set)) - {list}:
            return None
        mentions = list(chain.from_iterable(vertex_set))
        if set(map(type, mentions)) - {dict} or set(map(type, map(_NAME, mentions))) - {str}:
            return None
        sent_ids = list(map(_SENT_ID, mentions))
    except KeyError:
        return None
    if set(map(type, sent_ids)) - {int} or min(sent_ids, default=0) < 0:
        return None
    sentence_masks = [sum(set(map(_BIT, map(_SENT_ID, cluster)))) for cluster in vertex_set]
    raw_labels = obj.get("labels")
    hs, ts, rs, evs = [], [], [], []
    if raw_labels is not None:
        if type(raw_labels) is not list:
            return None
        for raw in raw_labels:
            if type(raw) is not dict:
                return None
            h, t, r, evidence = raw.get("h"), raw.get("t"), raw.get("r"), raw.get("evidence", [])
            if type(h) is not int or type(t) is not int or type(r) is not str or type(evidence) is not list:
                return None
            if evidence and set(map(type, evidence)) - {int}:
                return None
            hs.append(h)
            ts.append(t)
            rs.append(r)
            evs.append(evidence)
    key = doc_id if doc_id is not None else title
    return key, title, "labels" in obj, sentence_masks, (hs, ts, rs, evs), vertex_set


# --------------------------------------------------------------------------- scoring


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector (nested uses are fine; the previous state comes back).

    Scoring allocates a tuple, a set or a dict per prediction and never makes a cycle; with the collector
    on, each allocation burst walks the whole heap (gold documents included) for nothing.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _index(value: Any, i: int, doc: Any, name: str) -> int:
    if isinstance(value, bool):
        raise PredictionError(f"expected an integer, got {value!r}", index=i, doc=doc, field=name)
    try:
        return operator.index(value)
    except TypeError:
        raise PredictionError(f"expected an integer, got {value!r}", index=i, doc=doc, field=name) from None


def _docre_evidence(value: Any, i: int, doc: Any) -> list[int]:
    """``value`` as a list of sentence ids."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise PredictionError(f"expected a list of sentence ids, got {value!r}", index=i, doc=doc, field="evidence")
    try:
        return [_index(v, i, doc, "evidence") for v in value]
    except PredictionError:
        raise PredictionError(f"expected a list of sentence ids, got {value!r}", index=i, doc=doc, field="evidence") from None


@dataclass
class _Tally:
    """What one pass over the predictions counts; :func:`_scores` turns it into :class:`DocREScores`."""

    kept: Iterable[tuple[str, int, int, str]]  # de-duplicated predictions of gold documents
    num_kept: int
    correct_keys: Iterable[tuple[str, int, int, str]]
    num_correct: int
    total: int = 0
    num_unknown: int = 0
    any_evidence: bool = False
    correct_in_train: int = 0
    correct_evidence: int = 0
    predicted_evidence: int = 0
    pred_intra: int = 0
    correct_intra: int = 0
    #: the documents and relations of ``kept`` and ``correct_keys`` as columns, when the tally has them
    columns: tuple[Sequence[str], Sequence[str], Iterable[str], Iterable[str]] | None = None


@paused_gc()
def score_predictions(
    predictions: Sequence[Mapping[str, Any]],
    gold: Sequence[Document] | GoldIndex,
    train: Sequence[Document] | TrainFacts | None = None,
    *,
    allow_unknown_documents: bool = False,
) -> DocREScores:
    """Score official-format predictions against gold documents, exactly as the official DocRED scorer.

    ``predictions``: dicts ``{"doc_id" | "title", "h_idx", "t_idx", "r", "evidence"?}``; ``doc_id`` is matched
    to :attr:`Document.key` (preferred), a bare ``title`` to the key or the unique gold document of that title.
    ``gold``: the gold documents, or a prebuilt :class:`GoldIndex` of them.
    ``train``: training documents (or prebuilt :class:`TrainFacts`) for Ign; without them the Ign scores are None.
    ``allow_unknown_documents``: count predictions for documents outside the gold set as wrong (the official
    behaviour) instead of raising :class:`PredictionError` (the default, since it usually means mismatched files).
    Relation ids are not checked against the DocRED inventory: an unknown id simply never matches.
    Raises :class:`PredictionError` naming the prediction index, document and field of a bad prediction.

    Regular submissions (plain dicts, every document known, int indices in range, evidence lists of ints) are
    counted column-wise with C-level operations (:func:`_tally_bulk`); anything else goes through the
    per-prediction loop (:func:`_tally_loop`), which names the first bad prediction. Both count the same.
    """
    index = gold if isinstance(gold, GoldIndex) else GoldIndex(gold)
    facts = train if isinstance(train, TrainFacts) or train is None else TrainFacts.from_documents(train)
    preds = predictions if type(predictions) is list else list(predictions)
    tally = _tally_bulk(preds, index, facts)
    if tally is None:
        tally = _tally_loop(preds, index, facts, allow_unknown_documents)
    return _scores(tally, index, facts)


def _tally_loop(
    predictions: Sequence[Any], index: GoldIndex, facts: TrainFacts | None, allow_unknown_documents: bool
) -> _Tally:
    """One pass: validate, resolve, de-duplicate (the first occurrence wins, as after the official stable sort)
    and count each new fact at once; raises :class:`PredictionError` at the first bad prediction."""
    num_entities = index.num_entities
    labels = index.labels
    sentence_masks = index.sentence_masks
    in_train = index.labels_in_train(facts) if facts is not None and len(facts) > 0 else None
    kept: set[tuple[str, int, int, str]] = set()
    unknown: set[tuple[Any, ...]] = set()
    resolved: dict[tuple[Any, Any], str | None] = {}
    evidence_lists: list[tuple[int, Any, list]] = []
    correct_keys: list[tuple[str, int, int, str]] = []
    any_evidence = False
    correct_in_train = correct_evidence = predicted_evidence = 0
    pred_intra = correct_intra = 0
    i = -1
    for i, pred in enumerate(predictions):
        if type(pred) is not dict and not isinstance(pred, Mapping):
            raise PredictionError(f"expected an object, got {type(pred).__name__}", index=i)
        doc_id = pred.get("doc_id")
        try:
            known = doc_id is not None and doc_id in num_entities
            ref = (doc_id, pred.get("title"))
            seen = not known and ref in resolved
        except TypeError:  # an unhashable doc_id or title (a list, a dict)
            name = "doc_id" if not isinstance(doc_id, Hashable) else "title"
            raise PredictionError(f"expected a string, got {type(pred.get(name)).__name__}", index=i, field=name) from None
        if known:
            key = name = doc_id
        else:
            name = ref[0] if ref[0] is not None else ref[1]
            if seen:
                key = resolved[ref]
            else:
                if name is None:
                    raise PredictionError("a prediction needs a doc_id or a title", index=i, field="doc_id")
                try:
                    key = resolved[ref] = index.resolve(*ref)
                except PredictionError as err:
                    raise PredictionError(err.reason, index=i, doc=name, field=err.field) from None
        try:
            h, t, r = pred["h_idx"], pred["t_idx"], pred["r"]
        except KeyError as err:
            raise PredictionError("missing", index=i, doc=name, field=err.args[0]) from None
        if type(h) is not int:
            h = _index(h, i, name, "h_idx")
        if type(t) is not int:
            t = _index(t, i, name, "t_idx")
        if type(r) is not str:
            raise PredictionError(f"expected a relation id string, got {r!r}", index=i, doc=name, field="r")
        if key is None:
            if not allow_unknown_documents:
                raise PredictionError(
                    "no gold document has this key (pass allow_unknown_documents=True to count it as wrong)",
                    index=i,
                    doc=name,
                    field="doc_id" if doc_id is not None else "title",
                )
            unknown.add((name, h, t, r))
            continue
        n_ent = num_entities[key]
        if not (0 <= h < n_ent and 0 <= t < n_ent):
            field_name, value = ("h_idx", h) if not 0 <= h < n_ent else ("t_idx", t)
            raise PredictionError(
                f"{field_name} {value} is out of range (the document has {n_ent} entities)", index=i, doc=name, field=field_name
            )
        evi = pred.get("evidence")
        if evi is not None:  # checked on repeats too, so that every malformed prediction is reported
            if type(evi) is list:
                evidence_lists.append(evi)
            else:
                evi = _docre_evidence(evi, i, name)
        k = (key, h, t, r)
        if k in kept:
            continue
        kept.add(k)
        masks = sentence_masks[key]
        intra = (masks[h] & masks[t]) != 0
        if intra:
            pred_intra += 1
        if evi is not None:
            any_evidence = True
            if len(evi) > 1:
                try:
                    evi = set(evi)
                except TypeError:  # unhashable items: report them
                    _docre_evidence(evi, i, name)
            predicted_evidence += len(evi)
        gold_evi = labels.get(k)
        if gold_evi is None:
            continue
        correct_keys.append(k)
        if intra:
            correct_intra += 1
        if evi:
            if len(evi) == 1:
                correct_evidence += next(iter(evi)) in gold_evi
            else:
                correct_evidence += len(evi.intersection(gold_evi))
        if in_train is not None and k in in_train:
            correct_in_train += 1
    # plain evidence lists are type-checked in bulk (C-level); the slow path finds and names the culprit
    if evidence_lists and set(map(type, chain.from_iterable(evidence_lists))) - {int}:
        for i, pred in enumerate(predictions):
            if pred.get("evidence") is not None:
                _docre_evidence(pred["evidence"], i, pred.get("doc_id") or pred.get("title"))
    return _Tally(
        kept=kept,
        num_kept=len(kept),
        correct_keys=correct_keys,
        num_correct=len(correct_keys),
        total=i + 1,
        num_unknown=len(unknown),
        any_evidence=any_evidence,
        correct_in_train=correct_in_train,
        correct_evidence=correct_evidence,
        predicted_evidence=predicted_evidence,
        pred_intra=pred_intra,
        correct_intra=correct_intra,
    )


_NONE = type(None)


def _bulk_keys(doc_ids: list[Any], titles: Callable[[], Iterable[Any]], index: GoldIndex) -> list[str] | None:
    """The gold key of every prediction, from its ``doc_id`` (or, without one, its ``title``), or None
    unless each names a gold document unambiguously (the loop then names the first bad prediction)."""
    if set(map(type, doc_ids)) == {str} and index.docs.keys() >= set(doc_ids):
        return doc_ids
    try:  # resolve doc_id / title pairs, once per distinct pair
        refs = list(zip(doc_ids, titles()))
        resolved = {ref: index.resolve(*ref) for ref in set(refs)}
    except (TypeError, PredictionError):  # unhashable or ambiguous titles
        return None
    if None in resolved.values():  # an unknown document
        return None
    return list(map(resolved.__getitem__, refs))


def _tally_bulk(preds: list[Any], index: GoldIndex, facts: TrainFacts | None) -> _Tally | None:
    """:func:`_tally_loop`'s counts column-wise (:func:`_tally_columns`), or None unless every prediction is
    an object with fields of the right types naming a gold document (then the loop validates the
    submission and names the first bad prediction)."""
    if not preds or set(map(type, preds)) != {dict}:  # no predictions, other mappings, or not objects at all
        return None
    try:
        hs, ts, rs = zip(*map(itemgetter("h_idx", "t_idx", "r"), preds))
    except KeyError:  # a missing field
        return None
    keys = _bulk_keys(list(map(dict.get, preds, repeat("doc_id"))), lambda: map(dict.get, preds, repeat("title")), index)
    if keys is None or set(map(type, hs)) != {int} or set(map(type, ts)) != {int} or set(map(type, rs)) != {str}:
        return None
    evs = list(map(dict.get, preds, repeat("evidence")))
    if not set(map(type, evs)) <= {list, _NONE} or set(map(type, chain.from_iterable(filter(None, evs)))) - {int}:
        return None
    return _tally_columns(keys, hs, ts, rs, evs, index, facts)


def _tally_columns(
    keys: Sequence[str],
    hs: Sequence[int],
    ts: Sequence[int],
    rs: Sequence[str],
    evs: Sequence[list[int] | None],
    index: GoldIndex,
    facts: TrainFacts | None,
) -> _Tally | None:
    """:func:`_tally_loop`'s counts of predictions given as columns of the right types (gold keys, ints,
    relation strings, evidence lists of ints or None), with C-level ``map`` / ``zip`` / set operations;
    None when an entity index is out of range (the loop then names the prediction)."""
    n = len(keys)
    sizes = list(map(index.num_entities.__getitem__, keys))
    if min(hs) < 0 or min(ts) < 0 or any(map(operator.ge, hs, sizes)) or any(map(operator.ge, ts, sizes)):
        return None

    # de-duplicate: the first occurrence of each (key, h, t, r) is kept, and with it its evidence
    first = dict(zip(zip(reversed(keys), reversed(hs), reversed(ts), reversed(rs)), range(n - 1, -1, -1)))
    rows = list(first)
    num_kept = len(rows)
    keys, hs, ts, rs = zip(*rows) if rows else ((), (), (), ())
    if num_kept < n:
        evs = list(map(evs.__getitem__, first.values()))
    else:
        evs = evs[::-1]

    doc_masks = list(map(index.sentence_masks.__getitem__, keys))
    shared = list(map(operator.and_, map(getitem, doc_masks, hs), map(getitem, doc_masks, ts)))  # 0: inter
    gold_evs = list(map(index.labels.get, rows))  # None: not a gold label
    correct = list(map(is_not, gold_evs, repeat(None)))
    num_correct = correct.count(True)
    correct_inter = sum(map(operator.and_, correct, map(operator.not_, shared)))
    correct_keys = list(compress(rows, correct))

    # evidence: sentence ids as sets (one per prediction with some); absent evidence (None) and [] count nothing
    with_evidence = list(map(bool, evs))
    evidence_sets = list(map(set, compress(evs, with_evidence)))
    predicted_evidence = sum(map(len, evidence_sets))
    gold_of_those = list(compress(gold_evs, with_evidence))
    scored = list(map(is_not, gold_of_those, repeat(None)))  # correct, with some predicted evidence
    correct_evidence = sum(map(len, map(set.intersection, compress(evidence_sets, scored), compress(gold_of_those, scored))))

    correct_in_train = 0
    if facts is not None and len(facts) > 0:
        correct_in_train = len(index.labels_in_train(facts).intersection(correct_keys))
    return _Tally(
        kept=rows,
        num_kept=num_kept,
        correct_keys=correct_keys,
        num_correct=num_correct,
        total=n,
        any_evidence=evs.count(None) < num_kept,
        correct_in_train=correct_in_train,
        correct_evidence=correct_evidence,
        predicted_evidence=predicted_evidence,
        pred_intra=num_kept - shared.count(0),
        correct_intra=num_correct - correct_inter,
        columns=(keys, rs, compress(keys, correct), compress(rs, correct)),
    )


def _labels_in_train(index: GoldIndex, facts: TrainFacts) -> frozenset[tuple[str, int, int, str]]:
    """The gold labels ``(key, h, t, r)`` of ``index`` that are "in train" (:meth:`TrainFacts.any_in_train`)."""
    by_relation, names = facts.by_relation, {key: index.names(key) for key in index.docs}
    return frozenset(
        k
        for k in index.labels
        if (pairs := by_relation.get(k[3])) is not None and not pairs.isdisjoint(product((n := names[k[0]])[k[1]], n[k[2]]))
    )


def _scores(tally: _Tally, index: GoldIndex, facts: TrainFacts | None) -> DocREScores:
    """The official expressions over the counts of one pass."""
    num_entities = index.num_entities
    correct = tally.num_correct
    correct_in_train = tally.correct_in_train
    n_pred = tally.num_kept + tally.num_unknown
    n_gold = len(index.labels)
    p, rc, f1 = _prf(correct, n_pred, n_gold)
    if facts is not None:
        ign_p: float | None = 1.0 * (correct - correct_in_train) / (n_pred - correct_in_train + IGN_EPSILON)
        ign_f1: float | None = _f1(ign_p, rc)
    else:
        ign_p = ign_f1 = None
    if tally.any_evidence:
        evi_p, evi_r, evi_f1 = _prf(tally.correct_evidence, tally.predicted_evidence, index.num_gold_evidence)
    else:
        evi_p = evi_r = evi_f1 = None
    intra = _prf(tally.correct_intra, tally.pred_intra, index.num_gold_intra)
    inter = _prf(correct - tally.correct_intra, tally.num_kept - tally.pred_intra, n_gold - index.num_gold_intra)

    if tally.columns is None:
        relation_of, doc_of = itemgetter(3), itemgetter(0)
        kept_docs, kept_relations = map(doc_of, tally.kept), map(relation_of, tally.kept)
        correct_docs, correct_relations = map(doc_of, tally.correct_keys), map(relation_of, tally.correct_keys)
    else:
        kept_docs, kept_relations, correct_docs, correct_relations = tally.columns
    pred_by_relation = Counter(kept_relations)
    correct_by_relation = Counter(correct_relations)
    pred_by_count: Counter[int] = Counter()
    for key, count in Counter(kept_docs).items():
        pred_by_count[num_entities[key]] += count
    correct_by_count: Counter[int] = Counter()
    for key, count in Counter(correct_docs).items():
        correct_by_count[num_entities[key]] += count
    order = {rid: i for i, rid in enumerate(docred_schema().ids())}
    per_relation = {}
    for r in sorted(index.gold_by_relation.keys() | pred_by_relation.keys(), key=lambda r: (order.get(r, len(order)), r)):
        g, n, c = index.gold_by_relation[r], pred_by_relation[r], correct_by_relation[r]
        rp, rr, rf = _prf(c, n, g)
        per_relation[r] = {"precision": rp, "recall": rr, "f1": rf, "gold": g, "predicted": n, "correct": c}
    by_count = {}
    for n_ent in sorted(index.docs_by_count):
        g, n, c = index.gold_by_count[n_ent], pred_by_count[n_ent], correct_by_count[n_ent]
        cp, cr, cf = _prf(c, n, g)
        by_count[n_ent] = {
            "precision": cp,
            "recall": cr,
            "f1": cf,
            "documents": index.docs_by_count[n_ent],
            "gold": g,
            "predicted": n,
            "correct": c,
        }
    return DocREScores(
        precision=p,
        recall=rc,
        f1=f1,
        ign_precision=ign_p,
        ign_f1=ign_f1,
        evidence_precision=evi_p,
        evidence_recall=evi_r,
        evidence_f1=evi_f1,
        intra_precision=intra[0],
        intra_recall=intra[1],
        intra_f1=intra[2],
        inter_precision=inter[0],
        inter_recall=inter[1],
        inter_f1=inter[2],
        per_relation=per_relation,
        by_entity_count=by_count,
        num_documents=len(index),
        num_gold=n_gold,
        num_predictions=n_pred,
        num_duplicates=tally.total - n_pred,
        num_correct=correct,
        num_correct_in_train=correct_in_train,
        num_unknown_document_predictions=tally.num_unknown,
        num_gold_evidence=index.num_gold_evidence,
        num_predicted_evidence=tally.predicted_evidence,
        num_correct_evidence=tally.correct_evidence,
    )


# --------------------------------------------------------------------------- files


def read_predictions(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read an official-format prediction file: a JSON list of objects, or JSON Lines (``.jsonl``; ``.gz`` too).

    The container and the document keys are checked here (UTF-8, JSON, objects, ``title``/``doc_id`` strings);
    entity indices and relations when scoring.
    """

    path = Path(path)
    try:
        text = read_text(path)
        if _is_jsonl(path):
            preds = [parse_json(line, path, i + 1) for i, line in enumerate(text.splitlines()) if line.strip()]
        else:
            preds = parse_json(text, path)
    except DocumentError as err:
        raise PredictionError(str(err)) from None
    if not isinstance(preds, list):
        raise PredictionError(f"{path}: expected a JSON list of predictions, got {type(preds).__name__}")
    for i, pred in enumerate(preds):
        if not isinstance(pred, dict):
            raise PredictionError(f"{path}: expected an object, got {type(pred).__name__}", index=i)
        for key in ("title", "doc_id"):
            if pred.get(key) is not None and not isinstance(pred[key], str):
                raise PredictionError(
                    f"{path}: expected a string, got {type(pred[key]).__name__}", index=i, field=key
                )
    return preds


# ----------------------------------------------------------------------
# envre_hf/documents/hf.py: Lossless conversion between :class:`Document` lists and ``datasets.Dataset``.

import json
from collections.abc import Iterable
from typing import Any

from datasets import Dataset, Features, List, Value


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
        "seed": Value("int64"),
        "substitutions": List(SUBSTITUTION_FEATURES),
        "extra": Value("string"),
    }
)


def _dump(extra: dict[str, Any]) -> str | None:
    return json.dumps(extra, ensure_ascii=False) if extra else None


def _hf_load(text: str | None) -> dict[str, Any]:
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
                        extra=_hf_load(m.get("extra")),
                    )
                    for m in cluster
                ],
                wikidata_id=qid,
                extra=_hf_load(ex),
            )
            for cluster, qid, ex in zip(row["vertexSet"], qids, entity_extra)
        ],
        relations=[
            Relation(h=r["h"], t=r["t"], r=r["r"], evidence=list(r["evidence"]), extra=_hf_load(r.get("extra")))
            for r in row["labels"]
        ],
        doc_id=row.get("doc_id"),
        has_labels=row.get("has_labels", True),
        orig_title=row.get("orig_title"),
        seed=row.get("seed"),
        substitutions=None if subs is None else [Substitution(**s) for s in subs],
        extra=_hf_load(row.get("extra")),
    )


def documents_to_dataset(docs: Iterable[Document]) -> Dataset:
    """A ``datasets.Dataset`` with one row per document and the explicit :data:`DOCUMENT_FEATURES`."""
    rows = [document_to_row(doc) for doc in docs]
    if not rows:  # Dataset.from_list([]) makes a table without columns, which the features then refuse
        return Dataset.from_dict({name: [] for name in DOCUMENT_FEATURES}, features=DOCUMENT_FEATURES)
    return Dataset.from_list(rows, features=DOCUMENT_FEATURES)


def dataset_to_documents(dataset: Dataset) -> list[Document]:
    """The documents of a dataset made by :func:`documents_to_dataset` (or loaded from its parquet)."""
    return [document_from_row(row) for row in dataset]


# ----------------------------------------------------------------------
# envre_hf/citations.py: BibTeX of the works envre-hf builds on, for dataset, model and metric cards (one copy each).

ENV_CITATION = """\
@inproceedings{meng-etal-2024-robustness,
    title = "On the Robustness of Document-Level Relation Extraction Models to Entity Name Variations",
    author = "Meng, Shiao and Hu, Xuming and Liu, Aiwei and Ma, Fukun and Yang, Yawen and Li, Shuang and Wen, Lijie",
    booktitle = "Findings of the Association for Computational Linguistics: ACL 2024",
    year = "2024",
}"""
DOCRED_CITATION = """\
@inproceedings{yao-etal-2019-docred,
    title = "{D}oc{RED}: A Large-Scale Document-Level Relation Extraction Dataset",
    author = "Yao, Yuan and Ye, Deming and Li, Peng and Han, Xu and Lin, Yankai and Liu, Zhenghao and Liu, Zhiyuan and Huang, Lixin and Zhou, Jie and Sun, Maosong",
    booktitle = "Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics",
    year = "2019",
}"""
REDOCRED_CITATION = """\
@inproceedings{tan-etal-2022-revisiting,
    title = "Revisiting {D}oc{RED} - Addressing the False Negative Problem in Relation Extraction",
    author = "Tan, Qingyu and Xu, Lu and Bing, Lidong and Ng, Hwee Tou and Aljunied, Sharifah Mahani",
    booktitle = "Proceedings of the 2022 Conference on Empirical Methods in Natural Language Processing",
    year = "2022",
}"""

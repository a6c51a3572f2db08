"""DocRED scoring with the official semantics (the core of the ``docre_f1`` metric).

The rules follow the scorer that DocRED-family papers report (the official DocRED ``evaluation.py``
as adapted by ATLOP and Re-DocRED, ``official_evaluate``):

* predictions are de-duplicated on ``(document, h_idx, t_idx, r)``; the first occurrence in input
  order is kept (the official code sorts stably, then drops repeats), so its ``evidence`` is the one scored;
* a prediction is correct when the gold document has a label ``(h, t, r)``; the recall denominator is the
  number of distinct gold ``(document, h, t, r)`` labels;
* **Ign** ("ignore train annotated"): a correct prediction is *in train* when some (head mention name,
  tail mention name, r) of it is a fact of the training documents, the fact set holding every
  mention-name pair of every training label. ``ign_precision = (correct - in_train) /
  (predictions - in_train + 1e-5)`` and ``ign_f1`` combines it with the ordinary recall;
* **evidence**: predicted sentence ids are taken as a set; precision over all predicted evidence
  sentences of de-duplicated predictions, recall over the total length of the gold evidence lists
  (ATLOP's count, starting at 0; Re-DocRED's copy starts at 1);
* **intra / inter** (Re-DocRED's benchmark scorer): a pair is intra when a mention of the head and a
  mention of the tail share a sentence (:meth:`Document.is_intra`), inter otherwise; each side is
  scored on its own predictions and gold labels.

Divisions whose denominator is zero give 0 (the official code returns zeros for an empty submission).
Every float is computed with the same expression, in the same order, as the official code, so the
numbers agree to the last digit.
"""

from __future__ import annotations

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

from ..documents import Document, DocumentError, docred_schema
from ..documents.formats import from_dict
from ..documents.io import _is_jsonl, parse_json, read_text

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


def _evidence(value: Any, i: int, doc: Any) -> list[int]:
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
                evi = _evidence(evi, i, name)
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
                    _evidence(evi, i, name)
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
                _evidence(pred["evidence"], i, pred.get("doc_id") or pred.get("title"))
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

"""DocRED scoring with the official rules: DocRED-format dicts in, scores out (the core of ``docre_f1``).

Standard library only, and no envre-hf import: the docre_f1 Space carries a byte-identical copy of this file
(``spaces/docre_f1/scoring.py``), so ``evaluate.load("envre/docre_f1")`` needs nothing but ``evaluate``.
envre-hf's ``score_predictions`` / ``score_files`` are a thin adapter over it for typed documents and files.

The rules follow the scorer that DocRED-family papers report (the official DocRED ``evaluation.py`` as
adapted by ATLOP and Re-DocRED, ``official_evaluate``):

* predictions are de-duplicated on ``(document, h_idx, t_idx, r)``; the first occurrence in input order is
  kept (the official code sorts stably, then drops repeats), so its ``evidence`` is the one scored;
* a prediction is correct when the gold document has the label ``(h, t, r)``; the recall denominator is the
  number of distinct gold ``(document, h, t, r)`` labels;
* **Ign**: a correct prediction is *in train* when some (head mention name, tail mention name, r) of it is a
  fact of the training documents (every mention-name pair of every training label).
  ``ign_precision = (correct - in_train) / (predictions - in_train + 1e-5)``, combined with the ordinary recall;
* **evidence**: predicted sentence ids as a set; precision over all predicted evidence sentences of the kept
  predictions, recall over the total length of the gold evidence lists (ATLOP's count, starting at 0);
* **intra / inter** (Re-DocRED): a pair is intra when a mention of the head and a mention of the tail share a
  sentence; each side is scored on its own predictions and gold labels.

A zero denominator gives 0. Every float is computed with the official expression in the official order, so
the numbers agree to the last digit. Only what scoring needs is checked here (the shape of the fields it
reads, distinct keys, labels in range); what makes a valid document is the document reader's business.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, product
from operator import itemgetter
from typing import Any, NamedTuple

#: Added to the Ign precision denominator by the official scorer (keeps an all-in-train submission finite).
IGN_EPSILON = 1e-5


def _located(message: str, where: list[str], field: str | None) -> str:
    """``message`` after where it was found (the layout of envre-hf's ``DocumentError``)."""
    where = where + ([] if field is None else [f"field {field!r}"])
    return f"{' '.join(where)}: {message}" if where else message


class PredictionError(ValueError):
    """A malformed prediction, or one that points at an unknown document or entity. Names index, document, field."""

    def __init__(self, message: str, *, index: int | None = None, doc: Any = None, field: str | None = None):
        self.index, self.doc, self.field, self.reason = index, doc, field, message
        where = [] if index is None else [f"prediction {index}"]
        super().__init__(_located(message, where + ([] if doc is None else [f"(document {doc!r})"]), field))


class UnknownDocumentError(PredictionError):
    """A prediction naming no gold document; ``allow_unknown_documents=True`` counts it as wrong instead (``option``:
    how the caller spells that switch, e.g. a command's flag)."""

    def __init__(self, message: str = "no gold document has this key", *, option: str = "allow_unknown_documents=True",
                 **where: Any):
        super().__init__(f"{message} (pass {option} to count it as wrong)", **where)
        self.reason = message


class GoldError(ValueError):
    """A gold or training document that cannot be scored against. Its keywords (document index, title, entity,
    mention, label, field) and message are those of envre-hf's ``DocumentError``, which its adapter raises."""

    def __init__(self, message: str, **where: Any):
        self.reason, self.where = message, where
        parts = [] if where.get("doc_index") is None else [f"document {where['doc_index']}"]
        if where.get("title") is not None:
            parts.append(f"({where['title']!r})" if parts else f"document {where['title']!r}")
        parts += [f"{k} {where[k]}" for k in ("entity", "mention", "label") if where.get(k) is not None]
        super().__init__(_located(message, parts, where.get("field")))


# --------------------------------------------------------------------------- documents


class DocumentFields(NamedTuple):
    """What scoring reads of one document: its key (``doc_id``, else ``title``), title, whether it is labelled,
    per entity its mentions as ``(name, sent_id)``, and its labels as ``(h, t, r, evidence)``."""

    key: str
    title: str
    has_labels: bool
    entities: list[list[tuple[str, int]]]
    labels: list[tuple[int, int, str, list[int]]]


def _typed(value: Any, kind: type, what: str, **where: Any) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise GoldError(f"expected {what}, got {'nothing' if value is None else type(value).__name__}", **where)
    return value


def document_fields(obj: Any, index: int | None = None) -> DocumentFields:
    """The :class:`DocumentFields` of a DocRED / Re-DocRED dict (only the fields scoring reads are looked at)."""
    at: dict[str, Any] = {"doc_index": index}
    if not isinstance(obj, Mapping):
        raise GoldError(f"expected a DocRED document (a JSON object), got {type(obj).__name__}", **at)
    title = at["title"] = _typed(obj.get("title"), str, "a string", field="title", **at)
    doc_id = obj.get("doc_id")
    if doc_id is not None:
        _typed(doc_id, str, "a string", field="doc_id", **at)
    entities = []
    for e, cluster in enumerate(_typed(obj.get("vertexSet"), list, "a list of entities", field="vertexSet", **at)):
        mentions = []
        for m, mention in enumerate(_typed(cluster, list, "a list of mentions", entity=e, field="vertexSet", **at)):
            mention = _typed(mention, Mapping, "an object", entity=e, mention=m, **at)
            name = _typed(mention.get("name"), str, "a string", entity=e, mention=m, field="name", **at)
            sent_id = _typed(mention.get("sent_id"), int, "an integer", entity=e, mention=m, field="sent_id", **at)
            mentions.append((name, sent_id))
        entities.append(mentions)
    labels = []
    raw_labels = obj.get("labels")
    for i, label in enumerate([] if raw_labels is None else _typed(raw_labels, list, "a list", field="labels", **at)):
        label = _typed(label, Mapping, "an object", label=i, **at)
        h, t = (_typed(label.get(k), int, "an integer", label=i, field=k, **at) for k in ("h", "t"))
        evidence = _typed(label.get("evidence", []), list, "a list of sentence ids", label=i, field="evidence", **at)
        for sent in evidence:
            _typed(sent, int, "a list of sentence ids", label=i, field="evidence", **at)
        labels.append((h, t, _typed(label.get("r"), str, "a string", label=i, field="r", **at), evidence))
    return DocumentFields(title if doc_id is None else doc_id, title, "labels" in obj, entities, labels)


def _fields(documents: Iterable[Any]) -> Iterable[tuple[int, DocumentFields]]:
    for i, doc in enumerate(documents):
        doc = doc if isinstance(doc, DocumentFields) else document_fields(doc, i)
        n = len(doc.entities)
        for j, (h, t, _, _) in enumerate(doc.labels):
            if not (0 <= h < n and 0 <= t < n):
                raise GoldError(f"({h}, {t}) points outside the {n} entities", doc_index=i, title=doc.title, label=j,
                                field="h/t")  # fmt: skip
        yield i, doc


def _names(doc: DocumentFields) -> tuple[tuple[str, ...], ...]:
    """Distinct mention names of every entity, in mention order."""
    return tuple(tuple(dict.fromkeys([name for name, _ in mentions])) for mentions in doc.entities)


class GoldIndex:
    """Gold documents prepared for scoring (build it once to score several submissions against one gold set).

    ``gold``: DocRED-format dicts or :class:`DocumentFields`; keys must be distinct and every document labelled.
    What it keeps is tuples, which the garbage collector stops tracking: a large index does not slow down the
    allocations that follow (reading the predictions, counting them).
    """

    def __init__(self, gold: Iterable[Any] = ()):
        self.num_entities: dict[str, int] = {}
        #: key -> per entity, the sentences of its mentions as a bit mask: a pair is intra when the masks share a bit
        self.sentence_masks: dict[str, tuple[int, ...]] = {}
        #: key -> distinct mention names per entity (for Ign)
        self.names: dict[str, tuple[tuple[str, ...], ...]] = {}
        #: title -> keys, to resolve predictions that carry only a title
        self.titles: dict[str, list[str]] = {}
        #: (key, h, t, r) -> gold evidence; a repeated gold label: the last one wins, as officially
        self.labels: dict[tuple[str, int, int, str], tuple[int, ...]] = {}
        self.num_gold_evidence = 0
        labels, num_entities, sentence_masks = self.labels, self.num_entities, self.sentence_masks
        for i, doc in _fields(gold):
            key, where = doc.key, {"doc_index": i, "title": doc.title}
            if key in num_entities:
                raise GoldError(f"duplicate document key {key!r} in the gold set (give copies distinct doc_id "
                                "values)", field="doc_id", **where)  # fmt: skip
            if not doc.has_labels:
                raise GoldError("gold document has no labels (an unlabelled split)", field="labels", **where)
            try:
                masks = tuple([sum({1 << sent for _, sent in mentions}) for mentions in doc.entities])
            except ValueError:  # a negative shift: a sentence id that has no bit in a mask
                e, m, s = next((e, m, s) for e, ms in enumerate(doc.entities) for m, (_, s) in enumerate(ms) if s < 0)
                raise GoldError(f"sent_id {s} is out of range", entity=e, mention=m, field="sent_id", **where) from None
            num_entities[key], sentence_masks[key], self.names[key] = len(masks), masks, _names(doc)
            self.titles.setdefault(doc.title, []).append(key)
            for h, t, r, evidence in doc.labels:
                labels[key, h, t, r] = tuple(evidence)
                self.num_gold_evidence += len(evidence)
        self.gold_by_relation = Counter(map(itemgetter(3), labels))
        self.gold_by_count = Counter(map(num_entities.__getitem__, map(itemgetter(0), labels)))
        self.docs_by_count = Counter(num_entities.values())
        self.num_gold_intra = sum(1 for key, h, t, _ in labels if sentence_masks[key][h] & sentence_masks[key][t])

    def __len__(self) -> int:
        return len(self.num_entities)

    def resolve(self, doc_id: str | None, title: str | None) -> str | None:
        """The gold key a prediction names (``doc_id`` first, then ``title``), or None when unknown."""
        if doc_id is not None:
            return doc_id if doc_id in self.num_entities else None
        if title in self.num_entities:
            return title
        keys = self.titles.get(title)
        if keys is not None and len(keys) > 1:
            raise PredictionError(f"title {title!r} names {len(keys)} gold documents; give the prediction a doc_id",
                                  field="title")  # fmt: skip
        return None if keys is None else keys[0]


@dataclass(frozen=True)
class TrainFacts:
    """The official "train annotated" fact set: (head mention name, tail mention name, relation), also
    grouped by relation (``r -> {(head name, tail name)}``) so a prediction is checked with one ``isdisjoint``."""

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
    def from_documents(cls, documents: Iterable[Any]) -> "TrainFacts":
        """Every (mention name of h, mention name of t, r) of every label of ``documents`` (DocRED dicts or
        :class:`DocumentFields`)."""
        grouped: dict[str, set[tuple[str, str]]] = {}
        n = 0
        for n, (_, doc) in enumerate(_fields(documents), 1):
            names = _names(doc)
            for h, t, r, _ in doc.labels:
                grouped.setdefault(r, set()).update(product(names[h], names[t]))
        facts = frozenset((n1, n2, r) for r, pairs in grouped.items() for n1, n2 in pairs)
        return cls(facts, n, {r: frozenset(v) for r, v in grouped.items()})

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
    return p, r, _f1(p, r)


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


# --------------------------------------------------------------------------- predictions


def prediction_reference(pred: Any, index: int) -> tuple[str | None, str | None]:
    """``(doc_id, title)`` of one prediction: an object naming its document with strings."""
    if type(pred) is not dict and not isinstance(pred, Mapping):
        raise PredictionError(f"expected an object, got {type(pred).__name__}", index=index)
    doc_id, title = pred.get("doc_id"), pred.get("title")
    if doc_id is not None and type(doc_id) is not str:
        raise PredictionError(f"expected a string, got {type(doc_id).__name__}", index=index, field="doc_id")
    if title is not None and type(title) is not str:
        raise PredictionError(f"expected a string, got {type(title).__name__}", index=index, field="title")
    if doc_id is None and title is None:
        raise PredictionError("a prediction needs a doc_id or a title", index=index, field="doc_id")
    return doc_id, title


def _index(value: Any, i: int, doc: Any, name: str) -> int:
    """An entity or sentence index: an int or an integer-like object (numpy), never a bool."""
    try:
        if not isinstance(value, bool):
            return operator.index(value)
    except TypeError:
        pass
    raise PredictionError(f"expected an integer, got {value!r}", index=i, doc=doc, field=name)


def _evidence(value: Any, i: int, doc: Any) -> list[int]:
    """``value`` as a list of sentence ids."""
    bad = PredictionError(f"expected a list of sentence ids, got {value!r}", index=i, doc=doc, field="evidence")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise bad
    try:
        return [_index(v, i, doc, "evidence") for v in value]
    except PredictionError:
        raise bad from None


class _Tally(NamedTuple):
    """What one pass over the predictions counts; :func:`_scores` turns it into :class:`DocREScores`."""

    kept: set[tuple[str, int, int, str]]  # de-duplicated, of gold documents
    correct: list[tuple[str, int, int, str]]
    unknown: set[tuple[Any, ...]]  # of other documents
    total: int
    any_evidence: bool
    in_train: int
    correct_evidence: int
    predicted_evidence: int
    pred_intra: int
    correct_intra: int


def score(
    predictions: Iterable[Any], gold: GoldIndex | Iterable[Any], train: TrainFacts | Iterable[Any] | None = None,
    *, allow_unknown_documents: bool = False,
) -> DocREScores:
    """Score official-format predictions against gold documents, exactly as the official DocRED scorer.

    ``predictions``: ``{"doc_id" | "title", "h_idx", "t_idx", "r", "evidence"?}`` dicts; a ``doc_id`` is matched
    to a gold key, a bare ``title`` to a key or to the one gold document of that title. ``gold``: a
    :class:`GoldIndex` or what it is built from; ``train``: :class:`TrainFacts` or what they are built from
    (None: no Ign scores). ``allow_unknown_documents``: count predictions for documents outside the gold set
    as wrong (the official behaviour) instead of raising :class:`PredictionError` (the default: it usually
    means mismatched files). Relation ids are not checked: an unknown id simply never matches.
    Raises :class:`PredictionError` naming the first bad prediction's index, document and field.
    """
    index = gold if isinstance(gold, GoldIndex) else GoldIndex(gold)
    facts = train if train is None or isinstance(train, TrainFacts) else TrainFacts.from_documents(train)
    preds = predictions if type(predictions) is list else list(predictions)
    return _scores(_tally(preds, index, facts, allow_unknown_documents), index, facts)


def _tally(preds: list[Any], index: GoldIndex, facts: TrainFacts | None, allow_unknown_documents: bool) -> _Tally:
    """One pass: check, resolve, de-duplicate (the first occurrence wins) and count each new fact. The checks that
    fail or run once per document reference are functions of their own; the per-prediction path stays inline (it
    runs ~10^5 times a job, docs/speed.md)."""
    num_entities, labels, masks, names = index.num_entities, index.labels, index.sentence_masks, index.names
    in_train_of = facts.any_in_train if facts is not None and len(facts) > 0 else None
    kept: set[tuple[str, int, int, str]] = set()
    correct: list[tuple[str, int, int, str]] = []
    unknown: set[tuple[Any, ...]] = set()
    resolved: dict[tuple[str | None, str | None], str | None] = {}
    evidence_lists: list[list[Any]] = []
    any_evidence = False
    in_train = correct_evidence = predicted_evidence = pred_intra = correct_intra = 0
    for i, pred in enumerate(preds):
        ref = doc_id, title = prediction_reference(pred, i)
        name = doc_id if doc_id is not None else title
        if doc_id is not None and doc_id in num_entities:
            key = doc_id
        elif ref in resolved:
            key = resolved[ref]
        else:
            key = resolved[ref] = _resolve(index, doc_id, title, i, name)
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
                raise UnknownDocumentError(index=i, doc=name, field="doc_id" if doc_id is not None else "title")
            unknown.add((name, h, t, r))
            continue
        n_ent = num_entities[key]
        if not (0 <= h < n_ent and 0 <= t < n_ent):
            raise _out_of_range(h, t, n_ent, i, name)
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
        doc_masks = masks[key]
        intra = doc_masks[h] & doc_masks[t]
        if intra:
            pred_intra += 1
        if evi is not None:
            any_evidence = True
            if len(evi) > 1:  # sentence ids as a set
                try:
                    evi = set(evi)
                except TypeError:  # unhashable items
                    _evidence(evi, i, name)
            predicted_evidence += len(evi)
        gold_evi = labels.get(k)
        if gold_evi is None:
            continue
        correct.append(k)
        if intra:
            correct_intra += 1
        if evi:
            correct_evidence += len(evi.intersection(gold_evi)) if type(evi) is set else evi[0] in gold_evi
        if in_train_of is not None and in_train_of(names[key][h], names[key][t], r):
            in_train += 1
    _check_evidence_items(preds, evidence_lists)
    return _Tally(kept, correct, unknown, len(preds), any_evidence, in_train, correct_evidence, predicted_evidence,
                  pred_intra, correct_intra)  # fmt: skip


def _resolve(index: GoldIndex, doc_id: str | None, title: str | None, i: int, name: Any) -> str | None:
    """The gold key prediction ``i`` names (None: no gold document), an error placed at that prediction."""
    try:
        return index.resolve(doc_id, title)
    except PredictionError as err:
        raise PredictionError(err.reason, index=i, doc=name, field=err.field) from None


def _out_of_range(h: int, t: int, n_ent: int, i: int, name: Any) -> PredictionError:
    """The error of prediction ``i`` whose ``h_idx`` (else ``t_idx``) is no entity of its ``n_ent``."""
    field_name, value = ("h_idx", h) if not 0 <= h < n_ent else ("t_idx", t)
    return PredictionError(f"{field_name} {value} is out of range (the document has {n_ent} entities)",
                           index=i, doc=name, field=field_name)  # fmt: skip


def _check_evidence_items(preds: list[Any], evidence_lists: list[list[Any]]) -> None:
    """The items of the evidence lists type-checked at once; only when one is no int is the culprit looked for and
    named."""
    if evidence_lists and set(map(type, chain.from_iterable(evidence_lists))) - {int}:
        for i, pred in enumerate(preds):
            if pred.get("evidence") is not None:
                _evidence(pred["evidence"], i, pred.get("doc_id") or pred.get("title"))


def _relation_order(r: str) -> tuple[int, int, str]:
    """DocRED's relation order (by P-number); other ids after them."""
    return (0, int(r[1:]), r) if r[:1] == "P" and r[1:].isdigit() else (1, 0, r)


def _table(counts: Iterable[tuple[Any, int, int, int]], **extra: dict) -> dict[Any, dict[str, float | int]]:
    """``{row: {precision, recall, f1, [extra columns,] gold, predicted, correct}}`` of ``(row, gold, predicted,
    correct)`` tuples."""
    return {
        row: dict(zip(("precision", "recall", "f1"), _prf(c, n, g)), **{k: v[row] for k, v in extra.items()},
                  gold=g, predicted=n, correct=c)
        for row, g, n, c in counts
    }  # fmt: skip


def _scores(tally: _Tally, index: GoldIndex, facts: TrainFacts | None) -> DocREScores:
    """The official expressions over the counts of one pass."""
    correct, n_pred, n_gold = len(tally.correct), len(tally.kept) + len(tally.unknown), len(index.labels)
    p, rc, f1 = _prf(correct, n_pred, n_gold)
    ign_p = ign_f1 = None
    if facts is not None:
        ign_p = 1.0 * (correct - tally.in_train) / (n_pred - tally.in_train + IGN_EPSILON)
        ign_f1 = _f1(ign_p, rc)
    evi = (None, None, None)
    if tally.any_evidence:
        evi = _prf(tally.correct_evidence, tally.predicted_evidence, index.num_gold_evidence)
    intra = _prf(tally.correct_intra, tally.pred_intra, index.num_gold_intra)
    inter = _prf(correct - tally.correct_intra, len(tally.kept) - tally.pred_intra, n_gold - index.num_gold_intra)
    relation, doc = itemgetter(3), itemgetter(0)
    by_relation = [index.gold_by_relation, Counter(map(relation, tally.kept)), Counter(map(relation, tally.correct))]
    relations = sorted(by_relation[0].keys() | by_relation[1].keys(), key=_relation_order)
    size = index.num_entities.__getitem__
    by_count = [index.gold_by_count, *(Counter(map(size, map(doc, keys))) for keys in (tally.kept, tally.correct))]
    sizes = sorted(index.docs_by_count)
    return DocREScores(
        precision=p, recall=rc, f1=f1, ign_precision=ign_p, ign_f1=ign_f1,
        evidence_precision=evi[0], evidence_recall=evi[1], evidence_f1=evi[2],
        intra_precision=intra[0], intra_recall=intra[1], intra_f1=intra[2],
        inter_precision=inter[0], inter_recall=inter[1], inter_f1=inter[2],
        per_relation=_table((r, *(c[r] for c in by_relation)) for r in relations),
        by_entity_count=_table(((n, *(c[n] for c in by_count)) for n in sizes), documents=index.docs_by_count),
        num_documents=len(index), num_gold=n_gold, num_predictions=n_pred, num_duplicates=tally.total - n_pred,
        num_correct=correct, num_correct_in_train=tally.in_train, num_unknown_document_predictions=len(tally.unknown),
        num_gold_evidence=index.num_gold_evidence, num_predicted_evidence=tally.predicted_evidence,
        num_correct_evidence=tally.correct_evidence,
    )  # fmt: skip

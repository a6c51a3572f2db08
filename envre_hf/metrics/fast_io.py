"""The fast path of scoring from files: typed decoding (msgspec) and indexes built from columns.

``envre evaluate --predictions`` spent most of its time reading the gold file into typed documents
(every mention, sentence and label validated and wrapped), although scoring needs only keys, entity
sentence sets, labels and, for Ign, mention names. :func:`score_files` decodes each file once with
msgspec into small structs whose types (and lower bounds) msgspec checks while it parses, in C; the
ranges that depend on the document are checked column-wise over the whole file (:func:`_plain_columns`),
so the fast path accepts exactly the files ``envre build`` accepts; a file it does not take (JSON Lines
with other fields, Linked-DocRED, a bad record, gzip, text that Python's json reads otherwise than msgspec /
orjson: :func:`_plain_text`) goes through the typed reader, which names the error.
The gold index is built with :meth:`GoldIndex.from_columns`, as from the scoring cache, and the
predictions are counted from typed columns (:func:`~.docre._tally_columns`); the scores equal those of
the typed path to the last digit.

Python's cyclic garbage collector is paused while these functions run (:func:`~.docre.paused_gc`): parsing
a 16 MB gold file creates millions of objects, each allocation burst triggers a collection that walks
the ever larger heap, and none of it can form a cycle. On the 2,500-document benchmark that was a third
of the whole job (``benchmarks/bench_metric.py``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import accumulate, chain, compress, islice, repeat
from operator import add, and_, attrgetter, is_not, le, lt
from pathlib import Path
from typing import Annotated, Any

import msgspec
import orjson
from msgspec import UNSET, Meta, UnsetType

from ..documents import DocumentError, read_documents
from ..documents.io import _is_jsonl  # .jsonl and .jsonl.gz: the typed readers' rule
from .cache import ScoringCache, digest, resolve_cache
from .docre import (
    DocREScores,
    GoldIndex,
    PredictionError,
    TrainFacts,
    read_predictions,
    _bulk_keys,
    _scores,
    _tally_columns,
    paused_gc,
    score_predictions,
)
from ..documents.relations import docred_schema

PathLike = str | os.PathLike
#: The ``cache`` argument: None / False (no cache), True (the default folder), a folder, or a cache.
CacheArg = bool | PathLike | ScoringCache | None


def read_json_records(path: PathLike, *, what: str = "documents", data: bytes | None = None) -> list[Any]:
    """The items of a JSON list file, a single-object JSON file, or a JSON Lines file (orjson).

    ``data``: the file's bytes when the caller has read them already (they are parsed instead of the file).
    Raises :class:`DocumentError` (``what="documents"``) or :class:`PredictionError` (``"predictions"``)
    naming the file, and the line for JSON Lines, when the file is not valid JSON.
    """
    path = Path(path)
    error = PredictionError if what == "predictions" else DocumentError
    data = path.read_bytes() if data is None else data
    if _is_jsonl(path):
        items = []
        for i, line in enumerate(data.splitlines()):
            if not line.strip():
                continue
            try:
                items.append(orjson.loads(line))
            except orjson.JSONDecodeError as err:
                raise error(f"{path}: line {i + 1} is not valid JSON ({err})") from None
        return items
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise error(f"{path} is not valid JSON: {err}") from None
    if isinstance(parsed, dict) and what == "documents":
        return [parsed]
    if not isinstance(parsed, list):
        raise error(f"{path}: expected a JSON list of {what}, got {type(parsed).__name__}")
    return parsed


class _Mention(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A mention as the typed reader accepts it, with the extra keys Re-DocRED's mentions carry (any JSON, as
    the typed reader keeps them). Other keys send the file to the typed reader: msgspec checks the UTF-8
    of every string it decodes, not of values it skips, so a record with nothing skipped needs no separate
    UTF-8 check (:func:`_plain_text`)."""

    name: str
    sent_id: Annotated[int, Meta(ge=0)]
    pos: tuple[Annotated[int, Meta(ge=0)], int]
    type: Annotated[str, Meta(min_length=1)]
    global_pos: Any = None
    index: Any = None


class _Label(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    h: Annotated[int, Meta(ge=0)]
    t: Annotated[int, Meta(ge=0)]
    r: str
    evidence: list[Annotated[int, Meta(ge=0)]] = []


class _Record(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A plain DocRED / Re-DocRED record; any other field (seed, substitutions, Linked-DocRED's) makes the
    decoding fail, and the file goes to the typed reader, which checks those fields."""

    title: str
    #: decoded one document at a time by :data:`_SENTENCES` (only their lengths are kept: the memory of
    #: the tokens is reused from one document to the next instead of growing with the file)
    sents: msgspec.Raw
    vertexSet: list[Annotated[list[_Mention], Meta(min_length=1)]]
    labels: list[_Label] | UnsetType = UNSET
    doc_id: str | None = None


#: msgspec checks every type (and the lower bounds) while it parses, in C; the ranges that depend on
#: the document (sentence ids, token spans, entity indices, evidence), the relation inventory, repeated
#: labels and repeated keys are checked by :func:`_plain_columns`, column-wise over the whole file.
_DECODER, _RECORD_DECODER = msgspec.json.Decoder(list[_Record]), msgspec.json.Decoder(_Record)
_SENTENCES = msgspec.json.Decoder(Annotated[list[list[str]], Meta(min_length=1)])
_SENT_ID, _POS, _NAME = attrgetter("sent_id"), attrgetter("pos"), attrgetter("name")
_H, _T, _R, _EVIDENCE = attrgetter("h"), attrgetter("t"), attrgetter("r"), attrgetter("evidence")
_SENTS, _VERTEX, _LABELS = attrgetter("sents"), attrgetter("vertexSet"), attrgetter("labels")
_BIT = (1).__lshift__


@dataclass
class PlainFile:
    """A document file decoded by msgspec and checked like :func:`~envre_hf.documents.validate_document`
    does, as the columns :meth:`GoldIndex.from_columns` reads (``columns``; mention names apart: only Ign
    needs them, :meth:`names`)."""

    records: list[_Record]
    columns: dict[str, Any]
    #: whether each document has a ``labels`` field (a gold file needs one in every document)
    has_labels: list[bool]

    def names(self) -> list[list[list[str]]]:
        """Distinct mention names per entity per document, in mention order (``Entity.names``' rule)."""
        return [[list(dict.fromkeys(map(_NAME, cluster))) for cluster in rec.vertexSet] for rec in self.records]

    def repeats_a_label(self) -> bool:
        """Whether a document has a label twice (the typed reader refuses it; :meth:`GoldIndex.from_columns`
        raises ValueError)."""
        columns = self.columns
        return len(set(zip(*(columns[f"label_{c}"] for c in ("doc", "h", "t", "r"))))) != len(columns["label_doc"])

    def train_facts(self) -> TrainFacts:
        columns = self.columns
        per_doc = list(map(len, map(_labels_of, self.records)))
        ends = list(accumulate(per_doc))
        split = [columns[f"label_{c}"] for c in ("h", "t", "r")]
        labels = ([col[end - n : end] for col in split] for n, end in zip(per_doc, ends))
        return TrainFacts.from_fields(zip(columns["titles"], self.names(), labels))


def _labels_of(rec: _Record) -> list[_Label]:
    return [] if rec.labels is UNSET else rec.labels


def _plain_columns(records: list[_Record], relations: frozenset[str]) -> PlainFile | None:
    """The checked columns of decoded records, or None when a range check of
    :func:`~envre_hf.documents.validate_document` fails or two documents share a key (the typed reader
    then names the error). Every check runs over the whole file at once (C-level ``map`` / ``zip``);
    repeated labels are left to :meth:`PlainFile.repeats_a_label` and :meth:`GoldIndex.from_columns`."""
    sentence_lengths = [list(map(len, _SENTENCES.decode(raw))) for raw in map(_SENTS, records)]
    n_sents = list(map(len, sentence_lengths))
    lengths = list(chain.from_iterable(sentence_lengths))  # every sentence of the file
    vertex = list(map(_VERTEX, records))
    n_ent = list(map(len, vertex))
    clusters = list(chain.from_iterable(vertex))
    mentions = list(chain.from_iterable(clusters))
    per_doc = list(map(sum, map(map, repeat(len), vertex)))  # mentions per document
    sent_ids = list(map(_SENT_ID, mentions))
    if not all(map(lt, sent_ids, chain.from_iterable(map(repeat, n_sents, per_doc)))):
        return None
    first_sentence = chain.from_iterable(map(repeat, accumulate(n_sents, initial=0), per_doc))
    starts, ends = zip(*map(_POS, mentions)) if mentions else ((), ())
    if not all(map(lt, starts, ends)) or not all(map(le, ends, map(lengths.__getitem__, map(add, sent_ids, first_sentence)))):
        return None

    label_lists = list(map(_labels_of, records))
    n_labels = list(map(len, label_lists))
    labels = list(chain.from_iterable(label_lists))
    hs, ts, rs, evidence = (list(map(getter, labels)) for getter in (_H, _T, _R, _EVIDENCE))
    label_doc = list(chain.from_iterable(map(repeat, range(len(records)), n_labels)))
    sizes = list(map(n_ent.__getitem__, label_doc))
    if not all(map(lt, hs, sizes)) or not all(map(lt, ts, sizes)) or not relations.issuperset(rs):
        return None
    with_evidence = list(map(bool, evidence))
    last_sentences = map(max, compress(evidence, with_evidence))
    if not all(map(lt, last_sentences, map(n_sents.__getitem__, compress(label_doc, with_evidence)))):
        return None

    titles = list(map(attrgetter("title"), records))
    keys = [title if doc_id is None else doc_id for doc_id, title in zip(map(attrgetter("doc_id"), records), titles)]
    if len(set(keys)) != len(keys):
        return None
    masks = list(map(sum, map(set, map(map, repeat(_BIT), map(map, repeat(_SENT_ID), clusters)))))  # per entity
    label_base = list(map(list(accumulate(n_ent, initial=0)).__getitem__, label_doc))  # the document's first entity
    head_masks = map(masks.__getitem__, map(add, label_base, hs))
    tail_masks = map(masks.__getitem__, map(add, label_base, ts))
    columns = {
        "keys": keys,
        "titles": titles,
        "sentence_masks": list(map(list, map(islice, repeat(iter(masks)), n_ent))),
        "label_doc": label_doc,
        "label_h": hs,
        "label_t": ts,
        "label_r": rs,
        "label_evidence": evidence,
        "num_gold_evidence": sum(map(len, evidence)),
        "num_gold_intra": len(labels) - list(map(and_, head_masks, tail_masks)).count(0),
    }
    return PlainFile(records, columns, list(map(is_not, map(_LABELS, records), repeat(UNSET))))


def _relations() -> frozenset[str]:
    global _RELATIONS
    if _RELATIONS is None:
        _RELATIONS = frozenset(docred_schema().id2name)  # what validate_document accepts: rel2index also holds "Na"
    return _RELATIONS


_RELATIONS: frozenset[str] | None = None


#: Where ``str.splitlines`` (the typed readers' JSON Lines split) ends a line and ``bytes.splitlines`` does not.
_UNICODE_LINE_ENDS = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")


def _plain_text(path: Path, data: bytes, *, every_string_decoded: bool = False) -> bool:
    """Whether the typed readers see ``data`` as msgspec and orjson do: UTF-8 text (msgspec does not check the
    strings and keys it skips) and, for JSON Lines, no line boundary that only ``str.splitlines`` sees (a raw
    U+2028 in a string ends the line there). Otherwise the typed reader reads the file.
    ``every_string_decoded``: the caller's structs skip nothing (unknown fields are refused), so msgspec checks
    the UTF-8 of the whole text itself and it is not decoded here a second time (28 ms for a 16 MB gold file)."""
    ascii_only = data.isascii()
    if not ascii_only and not every_string_decoded:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    line_ends = _UNICODE_LINE_ENDS[:5] if ascii_only else _UNICODE_LINE_ENDS  # the first five are ASCII (memchr)
    return not _is_jsonl(path) or not any(map(data.__contains__, line_ends))


#: What msgspec raises for text it does not take: a type or bound (ValidationError), not JSON or not UTF-8
#: (DecodeError), nested too deeply (RecursionError, raised even inside fields it skips).
_NOT_DECODED = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)


def _decode(path: Path, data: bytes, one: msgspec.json.Decoder, many: msgspec.json.Decoder) -> list[Any]:
    """``data`` decoded as a JSON list (``many``) or, for a JSON Lines file, line by line (``one``): the
    typed readers' rule for which is which. Raises one of :data:`_NOT_DECODED`."""
    if _is_jsonl(path):
        return [one.decode(line) for line in data.splitlines() if line.strip()]
    return many.decode(data)


def _plain_file(path: Path, data: bytes) -> PlainFile | None:
    """``data`` (the bytes of ``path``) decoded and checked, when it is a JSON list (or JSON Lines) of valid
    plain DocRED records with distinct keys; None otherwise (the caller then reads the file through the
    typed reader, which accepts the same files and names the first error)."""
    if not _plain_text(path, data, every_string_decoded=True):  # _Record, _Mention, _Label refuse unknown fields
        return None
    try:
        return _plain_columns(_decode(path, data, _RECORD_DECODER, _DECODER), _relations())
    except _NOT_DECODED:  # the sentences' decoder raises them too
        return None


@paused_gc()
def read_gold_index(path: PathLike, *, cache: CacheArg = None) -> GoldIndex:
    """:class:`GoldIndex` of a gold file (DocRED / Re-DocRED JSON or JSONL; Linked-DocRED via the typed reader),
    or of an ``envre build`` folder or saved dataset folder (typed reader, not cached).

    ``cache``: None / False (none), True (``$ENVRE_CACHE/scoring``), a folder or a :class:`ScoringCache`; the
    index of a file read before (same bytes) is read from it instead of the file (:mod:`~.cache`).
    """
    return _read_cached(path, "gold", resolve_cache(cache))[0]


@paused_gc()
def read_train_facts(path: PathLike, *, cache: CacheArg = None) -> TrainFacts:
    """:class:`TrainFacts` (for Ign) of a training file (``cache`` as in :func:`read_gold_index`)."""
    return _read_cached(path, "train", resolve_cache(cache))[0]


def _read_cached(path: PathLike, kind: str, cache: ScoringCache | None) -> tuple[Any, str | None]:
    """The index (``kind`` gold) or facts (train) of a file and the file's digest (None without a cache, and for
    a folder: an ``envre build`` folder or a saved dataset, read by the typed reader and not cached)."""
    if Path(path).is_dir():
        docs = read_documents(path)
        return (GoldIndex(docs) if kind == "gold" else TrainFacts.from_documents(docs)), None
    if cache is None:
        return _build(path, kind), None
    # The bytes that are hashed are the bytes that are parsed: a file rewritten meanwhile cannot end up
    # stored under the digest of its old content.
    data = Path(path).read_bytes()
    source = _source(path, data)
    columns = cache.load(kind, source)
    if columns is not None:
        try:
            if kind == "gold":
                index = GoldIndex.from_columns(columns, names_loader=lambda: _cached_names(path, source, cache, index))
                return index, source
            return TrainFacts.from_columns(columns), source
        except (KeyError, IndexError, TypeError, ValueError):  # a damaged or foreign entry: rebuilt below
            pass
    built = _build(path, kind, data)
    columns = built.to_columns()
    if kind == "gold":  # mention names (only Ign needs them, once per training file) in an entry of their own
        cache.store("names", source, columns.pop("names"))
    cache.store(kind, source, columns)
    return built, source


def _source(path: PathLike, data: bytes) -> str:
    """What names a file's cache entries: the digest of its bytes, and of how its name says to read them (the
    same bytes can be a valid JSON list in ``x.json`` and invalid JSON Lines in ``x.jsonl``, or the reverse)."""
    source = digest(data)
    return digest(b"jsonl " + source.encode()) if _is_jsonl(path) else source


def _cached_names(path: PathLike, source: str, cache: ScoringCache, index: GoldIndex) -> list[list[list[str]]]:
    """The mention names of a gold file whose ``index`` came from the cache: from their entry when they fit
    the index, else from the file (and stored)."""
    names = cache.load("names", source)
    if index.names_fit(names):
        return names
    data = Path(path).read_bytes()
    if _source(path, data) != source:
        raise DocumentError(f"{path} changed while it was being scored: score again")
    built = _build(path, "gold", data)
    names = [built.names(key) for key in built.docs]
    cache.store("names", source, names)
    return names


def _build(path: PathLike, kind: str, hashed: bytes | None = None) -> GoldIndex | TrainFacts:
    """The index or facts of ``path``; ``hashed``: its bytes as the caller read (and hashed) them."""
    path = Path(path)
    data = path.read_bytes() if hashed is None else hashed
    plain = None if path.name.endswith(".gz") else _plain_file(path, data)
    if plain is not None and kind == "train" and not plain.repeats_a_label():
        return plain.train_facts()
    if plain is not None and kind == "gold" and all(plain.has_labels):
        try:
            return GoldIndex.from_columns(plain.columns, names_loader=plain.names, checked=True)
        except ValueError:  # repeated labels
            pass
    # gzip, Linked-DocRED, other fields, unlabelled gold, text that only Python's json reads (a byte-order mark,
    # NaN), or an error that the typed reader names (DocumentError naming the file, document and field)
    docs = read_documents(path)
    if hashed is not None and path.read_bytes() != hashed:  # the index must be that of the bytes the caller hashed
        raise DocumentError(f"{path} changed while it was being scored: score again")
    return GoldIndex(docs) if kind == "gold" else TrainFacts.from_documents(docs)


@paused_gc()
def read_predictions_fast(path: PathLike) -> list[dict[str, Any]]:
    """:func:`~envre_hf.metrics.read_predictions` with orjson: a JSON list of objects or JSON Lines."""
    return _checked_predictions(path)


#: 19 digits in a row: perhaps an integer past 64 bits, which orjson (not Python's json) reads as a float.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def _checked_predictions(path: PathLike, data: bytes | None = None) -> list[dict[str, Any]]:
    path = Path(path)
    if path.name.endswith(".gz"):
        return read_predictions(path)
    data = path.read_bytes() if data is None else data
    if not _plain_text(path, data) or _LONG_DIGITS.search(data):  # orjson reads integers past 64 bits as floats
        return read_predictions(path)
    try:
        preds = read_json_records(path, what="predictions", data=data)
    except PredictionError:  # not JSON to orjson (a byte-order mark, NaN, a bad escape): the typed reader
        return read_predictions(path)  # reads it (Python's json) or names the error in its own words
    if set(map(type, preds)) <= {dict} and all(
        set(map(type, map(dict.get, preds, repeat(key)))) <= {str, type(None)} for key in ("title", "doc_id")
    ):
        return preds  # checked in bulk; otherwise the loop below names the first bad prediction
    for i, pred in enumerate(preds):
        if type(pred) is not dict:
            raise PredictionError(f"{path}: expected an object, got {type(pred).__name__}", index=i)
        for key in ("title", "doc_id"):
            value = pred.get(key)
            if value is not None and type(value) is not str:
                raise PredictionError(f"{path}: expected a string, got {type(value).__name__}", index=i, field=key)
    return preds


class _Prediction(msgspec.Struct, gc=False):
    """An official-format prediction whose fields have the types scoring counts column-wise (other keys ignored)."""

    h_idx: int
    t_idx: int
    r: str
    doc_id: str | None = None
    title: str | None = None
    evidence: list[int] | None = None


_PREDICTIONS, _PREDICTION = msgspec.json.Decoder(list[_Prediction]), msgspec.json.Decoder(_Prediction)
_DOC_ID, _TITLE, _H_IDX, _T_IDX = attrgetter("doc_id"), attrgetter("title"), attrgetter("h_idx"), attrgetter("t_idx")


def _score_decoded(path: Path, data: bytes, index: GoldIndex, facts: TrainFacts | None) -> DocREScores | None:
    """The scores of a prediction file decoded straight into typed columns (msgspec checks the types while
    parsing), or None when a prediction is not regular (a type, a document or an index that the
    per-prediction loop must look at: it names the first bad one)."""
    if not _plain_text(path, data):
        return None
    try:
        preds = _decode(path, data, _PREDICTION, _PREDICTIONS)
    except _NOT_DECODED:
        return None
    if not preds:
        return None
    keys = _bulk_keys(list(map(_DOC_ID, preds)), lambda: map(_TITLE, preds), index)
    if keys is None:
        return None
    columns = (list(map(getter, preds)) for getter in (_H_IDX, _T_IDX, _R, _EVIDENCE))
    tally = _tally_columns(keys, *columns, index, facts)
    return None if tally is None else _scores(tally, index, facts)


@paused_gc()
def score_files(
    predictions: PathLike,
    gold: PathLike,
    train: PathLike | None = None,
    *,
    allow_unknown_documents: bool = False,
    cache: CacheArg = None,
) -> DocREScores:
    """Score a prediction file against a gold file (Ign against ``train``) on the fast path.

    ``cache``: None / False (none), True (``$ENVRE_CACHE/scoring``), a folder or a :class:`ScoringCache`:
    the gold index, the training facts and which gold labels are in train are kept there per file content,
    so scoring more prediction files against the same gold file skips reading it (``envre evaluate`` uses
    the default folder unless ``--no-cache``). The scores are the same either way.
    """
    store = resolve_cache(cache)
    index, gold_digest = _read_cached(gold, "gold", store)
    facts = None
    if train is not None:
        facts, train_digest = _read_cached(train, "train", store)
        if store is not None and gold_digest is not None and train_digest is not None:
            _cached_labels_in_train(index, facts, store, f"{gold_digest}-{train_digest}")
    path = Path(predictions)
    data = path.read_bytes()
    scores = _score_decoded(path, data, index, facts)
    if scores is not None:
        return scores
    preds = _checked_predictions(path, data)
    return score_predictions(preds, index, facts, allow_unknown_documents=allow_unknown_documents)


def _cached_labels_in_train(index: GoldIndex, facts: TrainFacts, cache: ScoringCache, source: str) -> None:
    """:meth:`GoldIndex.labels_in_train` from the cache, or computed and stored (as positions in the label order)."""
    labels = list(index.labels)
    stored = cache.load("in-train", source)
    if type(stored) is dict and stored.get("num_labels") == len(labels) and type(stored.get("positions")) is list:
        positions = stored["positions"]
        if not set(map(type, positions)) - {int} and (not positions or 0 <= min(positions) <= max(positions) < len(labels)):
            index.remember_labels_in_train(facts, map(labels.__getitem__, positions))
            return
    in_train = index.labels_in_train(facts)
    positions = [i for i, label in enumerate(labels) if label in in_train]
    cache.store("in-train", source, {"num_labels": len(labels), "positions": positions})

"""The prediction formats scoring reads, made one: the official ``result.json`` rows, and ``envre predict``'s lines
(``{"index", "id", "relations": [...]}``, flattened to official rows); relations named by name or by an id in
another case (``"place of birth"``, ``"p19"``) mapped to their id when unambiguous, anything else refused naming the
first bad prediction. Also why a score is zero, when the reason is plain (docs/metric.md)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..documents import DocumentError
from ..documents.io import _is_jsonl, parse_json, read_text
from ..documents.relations import RelationSchema, docred_schema
from .scoring import DocREScores, PredictionError

logger = logging.getLogger(__name__)

#: The fields of one line of ``envre predict``'s output.
PREDICT_FIELDS = ("index", "id", "relations")


def prediction_file(path: str | os.PathLike) -> list[Any]:
    """The official-format predictions of a file: a JSON list or JSON Lines (``.gz`` too) of official rows, or
    ``envre predict``'s output (flattened); relation names and wrong-case ids mapped (:func:`with_relation_ids`).
    Errors are :class:`PredictionError` naming the file and the first bad prediction or line."""
    path = Path(path)
    try:
        text = read_text(path)
        if _is_jsonl(path):
            items = [parse_json(line, path, i + 1) for i, line in enumerate(text.splitlines()) if line.strip()]
        else:
            items = parse_json(text, path)
    except DocumentError as err:
        raise PredictionError(str(err)) from None
    if not isinstance(items, list):
        raise PredictionError(f"{path}: expected a JSON list of predictions, got {type(items).__name__}")
    try:
        return with_relation_ids(from_predict_lines(items) if items and is_predict_line(items[0]) else items)
    except PredictionError as err:
        raise in_file(err, path) from None


def in_file(err: PredictionError, path: str | os.PathLike) -> PredictionError:
    """``err`` with the file it was found in."""
    return type(err)(f"{err.reason} (in {path})", index=err.index, doc=err.doc, field=err.field)


def is_predict_line(item: Any) -> bool:
    """``item`` is a line of ``envre predict``'s output, not an official prediction."""
    return isinstance(item, Mapping) and "relations" in item and "h_idx" not in item


def from_predict_lines(lines: Sequence[Any]) -> list[dict[str, Any]]:
    """``envre predict``'s lines as official predictions: one per relation, its document named by the line's ``id``
    (a ``doc_id`` or title, matched as a title is: to a gold key, else to the one gold document of that title)."""
    out = []
    for k, line in enumerate(lines):
        if not is_predict_line(line):
            raise PredictionError(f"expected a line of envre predict's output {{{', '.join(PREDICT_FIELDS)}}}, as the "
                                  "first line is", index=k)  # fmt: skip
        doc, relations = line.get("id"), line["relations"]
        if type(doc) is not str:
            raise PredictionError(f"expected the document's id (a string), got {doc!r}", index=k, field="id")
        if type(relations) is not list:
            raise PredictionError(f"expected a list, got {type(relations).__name__}", index=k, doc=doc,
                                  field="relations")  # fmt: skip
        for j, rel in enumerate(relations):
            if not isinstance(rel, Mapping) or any(f not in rel for f in ("h_idx", "t_idx", "relation")):
                raise PredictionError(f"relation {j}: expected an object with h_idx, t_idx and relation", index=k,
                                      doc=doc, field="relations")  # fmt: skip
            row = {"title": doc, "h_idx": rel["h_idx"], "t_idx": rel["t_idx"], "r": rel["relation"]}
            if rel.get("evidence") is not None:
                row["evidence"] = rel["evidence"]
            out.append(row)
    return out


def _fold(text: str) -> str:
    """A relation id or name for comparison: case-folded, ``_`` as a space, runs of spaces as one."""
    return " ".join(text.replace("_", " ").casefold().split())


@lru_cache(maxsize=4)
def _by_folded_name(schema: RelationSchema) -> dict[str, frozenset[str]]:
    """Folded id or name -> the relation ids it may stand for."""
    found: dict[str, set[str]] = {}
    for rel in schema.relations:
        for text in (rel.id, rel.name):
            found.setdefault(_fold(text), set()).add(rel.id)
    return {k: frozenset(v) for k, v in found.items()}


def with_relation_ids(predictions: Sequence[Any], schema: RelationSchema | None = None, *,
                      refuse_unknown: bool = True) -> list[Any]:
    """``predictions`` with each ``r`` a relation id of ``schema`` (DocRED's by default, the only relations a gold
    document may hold): a relation name or an id in another case (``"place of birth"``, ``"p19"``) becomes its id,
    said once in a warning. A relation that could be several is a :class:`PredictionError` naming the first such
    prediction; so is one that is no relation of ``schema`` unless ``refuse_unknown`` is False (then it stays, a
    wrong prediction as the official scorer counts it, with a warning). A non-string ``r`` is left to the scorer."""
    schema = schema if schema is not None else docred_schema()
    names, known = _by_folded_name(schema), schema.id2name
    out = predictions if type(predictions) is list else list(predictions)
    mapped: dict[str, str | None] = {}
    for i, pred in enumerate(out):
        r = pred.get("r") if type(pred) is dict or isinstance(pred, Mapping) else None
        if type(r) is not str or r in known:
            continue
        if r not in mapped:
            ids = names.get(_fold(r), frozenset())
            if len(ids) > 1 or (not ids and refuse_unknown):
                doc = pred.get("doc_id") or pred.get("title")
                problem = (f"could be {' or '.join(sorted(ids))}" if ids else
                           f"neither a relation id nor a relation name of the {len(schema)} DocRED relations "
                           "(e.g. 'P17' or 'country')")  # fmt: skip
                raise PredictionError(f"relation {r!r}: {problem}", index=i, doc=doc, field="r")
            mapped[r] = next(iter(ids), None)
        if mapped[r] is None:
            continue
        if out is predictions:
            out = list(predictions)  # the caller's list is left as it was
        out[i] = {**pred, "r": mapped[r]}
    known = {r: i for r, i in mapped.items() if i is not None}
    if known:
        shown = ", ".join(f"{r!r} -> {i}" for r, i in list(known.items())[:5])
        logger.warning("predictions name %d relation(s) by name or in another case; scored as ids: %s%s", len(known),
                       shown, ", ..." if len(known) > 5 else "")  # fmt: skip
    if len(known) < len(mapped):
        logger.warning("predictions name %d relation(s) that DocRED does not have (%s); scored as wrong",
                       len(mapped) - len(known), _some([repr(r) for r, i in mapped.items() if i is None]))
    return out


def zero_score_reason(scores: DocREScores) -> str | None:
    """Why no prediction is correct, when the counts tell (no predictions, no gold label, no gold document or no gold
    relation predicted, or entity indices that never meet a gold pair); None when some prediction is correct."""
    n = scores.num_predictions
    if scores.num_correct:
        return None
    if not n:
        return "there are no predictions"
    if not scores.num_gold:
        return "the gold documents hold no relation labels"
    if scores.num_unknown_document_predictions == n:
        return f"none of the {n} predictions names a gold document (compare their doc_id / title with the gold keys)"
    predicted = sorted(r for r, row in scores.per_relation.items() if row["predicted"])
    if not any(scores.per_relation[r]["gold"] for r in predicted):
        gold = sorted(r for r, row in scores.per_relation.items() if row["gold"])
        return f"no predicted relation ({_some(predicted)}) is a relation of the gold labels ({_some(gold)})"
    return (f"none of the {n} predictions is a gold (document, h_idx, t_idx, r) although they name gold documents "
            "and relations: do h_idx / t_idx index the gold documents' entities (their vertexSet order)?")


def _some(items: list[str], k: int = 5) -> str:
    return ", ".join(items[:k]) + (f", ... ({len(items)} in all)" if len(items) > k else "")

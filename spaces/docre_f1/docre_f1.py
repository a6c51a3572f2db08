"""docre_f1: document-level relation extraction scores with the official DocRED rules.

A thin `evaluate` wrapper over envre-hf's scorer (``envre_hf.metrics.score_predictions``); see README.md (the
metric card). ``evaluate.load("envre/docre_f1")`` needs only ``evaluate``: the scorer ships next to this file as
``docre_f1_scorer.py``, generated from envre-hf (``python -m envre_hf.metrics.space``). Where envre-hf is
installed its own classes are used, so its documents, ``TrainFacts`` and exceptions mix with this module's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import datasets
import evaluate

from .docre_f1_scorer import (
    DOCRED_CITATION,
    REDOCRED_CITATION,
    Document,
    DocumentError,
    PredictionError,
    TrainFacts,
    document_from_row,
    from_dict,
    read_document_file,
    score_predictions,
    to_docred,
)

try:  # envre-hf installed: the same code, but its classes (isinstance checks and except clauses agree)
    from envre_hf.documents import Document, DocumentError, document_from_row, from_dict, read_document_file, to_docred
    from envre_hf.metrics import PredictionError, TrainFacts, score_predictions
except ImportError:
    pass

_CITATION = DOCRED_CITATION + "\n\n" + REDOCRED_CITATION

_DESCRIPTION = """\
Micro precision, recall and F1 of document-level relation extraction over (document, head entity, tail entity,
relation) facts, computed exactly like the official DocRED scorer (as used by ATLOP and Re-DocRED): duplicate
predictions count once, Ign F1 ignores correct facts whose mention names appear with the same relation in the
training documents, evidence F1 scores predicted evidence sentences, and intra / inter F1 split pairs by whether
the two entities share a sentence. Also per-relation scores and scores by number of entities per document.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions: one list per document, aligned with `references`: the predicted facts of that document, each
        `{"h_idx": int, "t_idx": int, "r": str, "evidence": list[int] | None}` (entity indices into the
        document's vertexSet, a Wikidata relation id; `evidence` may be left out or None).
    references: one gold document per prediction list: a JSON string of a DocRED-format document; `Document`
        objects, DocRED dicts and `envre_hf` dataset rows are converted to that string for you. A document's key is
        its `doc_id` (renamed copies) or its title; keys must be distinct.
    train_documents: optional training documents for Ign F1: a path to a DocRED file, a list of documents
        (`Document`, DocRED dicts or JSON strings) or an `envre_hf.metrics.TrainFacts`. Without it the Ign scores
        are None.
Returns:
    precision, recall, f1, ign_precision, ign_f1, evidence_precision, evidence_recall, evidence_f1 (None when no
    evidence is predicted), intra_precision, intra_recall, intra_f1, inter_precision, inter_recall, inter_f1 (all
    fractions in [0, 1]), per_relation, by_entity_count, and counts (num_gold, num_predictions, num_correct, ...).
Examples:
    On the samples shipped with envre-hf (run from the repository root; `evaluate.load("spaces/docre_f1")` reads
    this folder instead of the Hub):

    >>> import json, evaluate
    >>> docre_f1 = evaluate.load("envre/docre_f1")
    >>> documents = json.load(open("envre_hf/samples/sample_docs.json"))
    >>> flat = json.load(open("envre_hf/samples/sample_predictions.json"))
    >>> predictions = [[p for p in flat if p["title"] == doc["title"]] for doc in documents]
    >>> results = docre_f1.compute(predictions=predictions, references=documents,
    ...                            train_documents="envre_hf/samples/sample_train.json")
    >>> print({k: round(100 * results[k], 2) for k in ("precision", "recall", "f1", "ign_f1", "intra_f1", "inter_f1")})
    {'precision': 87.5, 'recall': 75.0, 'f1': 80.77, 'ign_f1': 80.0, 'intra_f1': 80.0, 'inter_f1': 82.35}
"""

_PREDICTION = {
    "h_idx": datasets.Value("int32"),
    "t_idx": datasets.Value("int32"),
    "r": datasets.Value("string"),
    "evidence": datasets.List(datasets.Value("int32")),
}


def _reference_json(ref: Any, i: int) -> Any:
    """A reference as the JSON string of its DocRED document (other types are passed on for Features to reject)."""
    if isinstance(ref, Document):
        return json.dumps(to_docred(ref), ensure_ascii=False)
    if isinstance(ref, Mapping):
        doc = document_from_row(dict(ref)) if "has_labels" in ref else from_dict(dict(ref), i)
        return json.dumps(to_docred(doc), ensure_ascii=False)
    return ref


def _names(reference_json: Any) -> tuple[Any, Any]:
    """(key, title) of a reference JSON string; (None, None) when it is not one."""
    try:
        obj = json.loads(reference_json)
    except (TypeError, json.JSONDecodeError):
        return None, None
    if not isinstance(obj, dict):
        return None, None
    title = obj.get("title")
    return (obj.get("doc_id") if obj.get("doc_id") is not None else title), title


def _predictions(preds: Any, reference: Any, position: int = 0) -> Any:
    """Predictions of one document reduced to the Features' fields (``evidence`` None when missing).

    Official-format dicts may be passed as they are: a ``doc_id`` must then equal the reference's key,
    a bare ``title`` its title (predictions are matched to references by position, never by name).
    """
    if not isinstance(preds, (list, tuple)):
        return preds
    out, names = [], None
    for j, p in enumerate(preds):
        if not isinstance(p, Mapping):
            return preds  # the Features report the bad input
        doc_id, title = p.get("doc_id"), p.get("title")
        if doc_id is not None or title is not None:
            names = _names(reference) if names is None else names
            field, given, expected = ("doc_id", doc_id, names[0]) if doc_id is not None else ("title", title, names[1])
            if expected is not None and given != expected:
                raise PredictionError(
                    f"predictions[{position}] names document {given!r} but references[{position}] is {expected!r}", index=j, doc=given, field=field
                )
        out.append({"h_idx": p.get("h_idx"), "t_idx": p.get("t_idx"), "r": p.get("r"), "evidence": p.get("evidence")})
    return out


def _train_facts(train: Any) -> TrainFacts | None:
    if train is None or isinstance(train, TrainFacts):
        return train
    if isinstance(train, (str, os.PathLike)):
        return TrainFacts.from_documents(read_document_file(train))
    docs = []
    for i, doc in enumerate(train):
        if isinstance(doc, str):
            doc = json.loads(doc)
        docs.append(doc if isinstance(doc, Document) else from_dict(doc, i))
    return TrainFacts.from_documents(docs)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class DocreF1(evaluate.Metric):
    """DocRED micro F1, Ign F1, evidence F1 and intra / inter F1 (official semantics)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.List(_PREDICTION), "references": datasets.Value("string")}
            ),
            reference_urls=["https://github.com/thunlp/DocRED", "https://github.com/tonytan48/Re-DocRED"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add documents: one prediction list and one reference document each (see the inputs below)."""
        if references is not None:
            references = [_reference_json(r, i) for i, r in enumerate(references)]
        if predictions is not None:
            refs = references if references is not None and len(references) == len(predictions) else None
            predictions = [_predictions(p, None if refs is None else refs[i], i) for i, p in enumerate(predictions)]
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one document: its prediction list and its reference document."""
        if reference is not None:
            reference = _reference_json(reference, 0)
        if prediction is not None:
            prediction = _predictions(prediction, reference)
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, train_documents=None, allow_unknown_documents=False):
        gold, flat = [], []
        for i, (doc_preds, ref) in enumerate(zip(predictions, references)):
            try:
                doc = from_dict(json.loads(ref), i)
            except json.JSONDecodeError as err:
                raise DocumentError(f"reference is not a JSON document: {err}", doc_index=i) from None
            gold.append(doc)
            key = doc.key
            for p in doc_preds:
                flat.append({"doc_id": key, "h_idx": p["h_idx"], "t_idx": p["t_idx"], "r": p["r"], "evidence": p.get("evidence")})
        scores = score_predictions(
            flat, gold, _train_facts(train_documents), allow_unknown_documents=allow_unknown_documents
        )
        return scores.to_dict()

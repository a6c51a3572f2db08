"""docre_f1: document-level relation extraction scores with the official DocRED rules.

A thin `evaluate` wrapper over ``scoring.py`` (see README.md, the metric card): envre-hf's scorer
``envre_hf/metrics/scoring.py`` (standard library only), which ``envre push-metric`` uploads beside this file, so
``evaluate.load("envre/docre_f1")`` needs only ``evaluate``. Its classes are always this folder's scorer's; envre-hf
``Document`` objects are taken as references and training documents when envre-hf is loaded.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

import datasets
import evaluate

from .scoring import GoldError, GoldIndex, PredictionError, TrainFacts, score

_CITATION = """\
@inproceedings{yao-etal-2019-docred,
    title = "{D}oc{RED}: A Large-Scale Document-Level Relation Extraction Dataset",
    author = "Yao, Yuan and Ye, Deming and Li, Peng and Han, Xu and Lin, Yankai and Liu, Zhenghao and Liu, Zhiyuan and Huang, Lixin and Zhou, Jie and Sun, Maosong",
    booktitle = "Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics",
    year = "2019",
}

@inproceedings{tan-etal-2022-revisiting,
    title = "Revisiting {D}oc{RED} - Addressing the False Negative Problem in Relation Extraction",
    author = "Tan, Qingyu and Xu, Lu and Bing, Lidong and Ng, Hwee Tou and Aljunied, Sharifah Mahani",
    booktitle = "Proceedings of the 2022 Conference on Empirical Methods in Natural Language Processing",
    year = "2022",
}"""

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
    train_documents: optional training documents for Ign F1: a path to a DocRED file (a JSON list, or JSON Lines
        `.jsonl`), a list of documents (`Document`, DocRED dicts or JSON strings) or an `envre_hf.metrics.TrainFacts`.
        Without it the Ign scores are None.
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


def _docred(doc: Any) -> Any:
    """An envre-hf ``Document`` as its DocRED dict; a row of an envre-hf documents dataset as a DocRED dict
    (labels dropped when ``has_labels`` is false); anything else unchanged."""
    documents = sys.modules.get("envre_hf.documents")  # a Document exists only where envre-hf is loaded
    if documents is not None and isinstance(doc, documents.Document):
        return documents.to_docred(doc)
    if isinstance(doc, Mapping) and "has_labels" in doc:
        return {k: v for k, v in doc.items() if k != "has_labels" and (k != "labels" or doc["has_labels"])}
    return doc


def _reference_json(ref: Any) -> Any:
    """A reference as the JSON string of its DocRED document (other types are passed on for Features to reject)."""
    ref = _docred(ref)
    return json.dumps(dict(ref), ensure_ascii=False) if isinstance(ref, Mapping) else ref


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


def _read_documents(path: str | os.PathLike) -> list[Any]:
    """The DocRED dicts of a JSON list file or a JSON Lines file (``.jsonl``), gzipped when the name ends in ``.gz``."""
    name = os.fspath(path)
    with (gzip.open if name.endswith(".gz") else open)(name, "rt", encoding="utf-8-sig") as fh:
        if name.endswith((".jsonl", ".jsonl.gz")):
            return [json.loads(line) for line in fh if line.strip()]
        return json.load(fh)


def _train_facts(train: Any) -> TrainFacts | None:
    if train is None or isinstance(train, TrainFacts):
        return train
    installed = getattr(sys.modules.get("envre_hf.metrics.scoring"), "TrainFacts", None)
    if installed is not None and isinstance(train, installed):  # the same scorer's, as envre-hf loaded it
        return TrainFacts(train.facts, train.num_documents, train.by_relation)
    if isinstance(train, (str, os.PathLike)):
        return TrainFacts.from_documents(_read_documents(train))
    return TrainFacts.from_documents(json.loads(doc) if isinstance(doc, str) else _docred(doc) for doc in train)


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
            references = [_reference_json(r) for r in references]
        if predictions is not None:
            refs = references if references is not None and len(references) == len(predictions) else None
            predictions = [_predictions(p, None if refs is None else refs[i], i) for i, p in enumerate(predictions)]
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one document: its prediction list and its reference document."""
        if reference is not None:
            reference = _reference_json(reference)
        if prediction is not None:
            prediction = _predictions(prediction, reference)
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, train_documents=None, allow_unknown_documents=False):
        gold = []
        for i, ref in enumerate(references):
            try:
                gold.append(json.loads(ref))
            except json.JSONDecodeError as err:
                raise GoldError(f"reference is not a JSON document: {err}", doc_index=i) from None
        index = GoldIndex(gold)
        flat = [
            {"doc_id": key, "h_idx": p["h_idx"], "t_idx": p["t_idx"], "r": p["r"], "evidence": p.get("evidence")}
            for key, doc_preds in zip(index.num_entities, predictions)
            for p in doc_preds
        ]
        scores = score(flat, index, _train_facts(train_documents), allow_unknown_documents=allow_unknown_documents)
        return scores.to_dict()

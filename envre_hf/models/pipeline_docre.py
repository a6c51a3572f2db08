"""``DocREPipeline``: relations from your own documents, as the transformers task ``"document-relation-extraction"``.

``pipeline("document-relation-extraction", model=...)`` reads one document or a list (a generator streams):

* a DocRED document (a dict with ``sents`` and ``vertexSet``, or a :class:`Document`);
* ``{"text": str, "entities": [{"mentions": [[start, end], ...], "type": "PER"}, ...]}``: entities given as
  character spans of the text;
* ``{"text": str, "mentions": [{"span": [start, end], "type": "PER"}, ...]}``: mentions grouped into entities
  by ``cluster`` (the alias rules of :mod:`envre_hf.documents.aliases` by default);
* ``{"text": str}`` or a bare string, with ``ner=`` a token-classification model id, folder or pipeline: its
  mentions (types mapped to DocRED's by :data:`NER_TYPES`; TIME and NUM by
  :func:`~envre_hf.documents.text.rule_mentions` when it has no such labels), grouped by ``cluster``.

Words and sentences of text come from spaCy (:mod:`envre_hf.documents.text`), character offsets exactly kept.
Per document the output is a list of ``{"head": {"name", "type", "mentions"}, "tail": {...}, "h_idx", "t_idx",
"relation", "relation_name", "score", "evidence"}`` by decreasing score, then entity indices; mentions are
``[start, end]`` character spans for text and ``[sent_id, start, end]`` token positions for DocRED input.
Prediction is :func:`~envre_hf.models.prediction.iter_decoded`, the path of ``envre evaluate --model``
(windows for long documents, batches by length). ``import envre_hf`` registers the task (a checkpoint carries
no pipeline code: the pipeline is envre-hf's).
"""

from __future__ import annotations

import collections
import functools
import types
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import Any

from transformers import AutoModel, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY

from ..documents.aliases import cluster_by_aliases, cluster_by_exact_name
from ..documents.errors import DocumentError
from ..documents.io import parse_document
from ..documents.relations import RelationSchema, RelationType
from ..documents.schema import ENTITY_TYPES, Document
from ..documents.text import check_span, check_type, rule_mentions, segment, text_document
from ..features.featurize import pair_index
from .loading import no_checkpoint_code
from .precision import fit_weights
from .prediction import DecodedDocument, decode_predictions, iter_decoded

#: The transformers task name of :class:`DocREPipeline`.
TASK = "document-relation-extraction"
#: NER labels (CoNLL-2003, OntoNotes, WNUT, B-/I- prefixes removed) -> DocRED entity types.
NER_TYPES = {
    **dict.fromkeys(["PER", "PERSON"], "PER"),
    **dict.fromkeys(["ORG", "ORGANIZATION", "ORGANISATION", "CORPORATION", "GROUP"], "ORG"),
    **dict.fromkeys(["LOC", "LOCATION", "GPE", "FAC", "FACILITY"], "LOC"),
    **dict.fromkeys(["DATE", "TIME"], "TIME"),
    **dict.fromkeys(["CARDINAL", "QUANTITY", "MONEY", "PERCENT", "ORDINAL", "NUM"], "NUM"),
    **dict.fromkeys(["MISC", "NORP", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE", "PRODUCT", "CREATIVE-WORK"], "MISC"),
}
#: ``cluster`` names: how mentions found in text become entities.
CLUSTERINGS: dict[str, Callable[[list[str], list[str]], list[list[int]]]] = {
    "alias": cluster_by_aliases,
    "exact": cluster_by_exact_name,
}
Mention3 = tuple[int, int, str]  # (start, end, DocRED type)


@dataclass
class PreparedDocument:
    """A document ready for the model, with each entity's mentions as character spans (None: DocRED input)."""

    document: Document
    spans: list[list[list[int]]] | None = None


class NERTagger:
    """A token-classification pipeline whose labels are mapped to DocRED types, run sentence by sentence."""

    def __init__(self, ner: Any, device: Any = None, ner_types: dict[str, str] | None = None):
        if isinstance(ner, str):
            from transformers import pipeline  # the NER model loads only when asked for

            with no_checkpoint_code(ner):
                ner = pipeline("token-classification", model=ner, aggregation_strategy="simple", device=device,
                               trust_remote_code=False)
        self.pipeline = ner
        mapping = {**NER_TYPES, **(ner_types or {})}
        labels = {_bare(label) for label in ner.model.config.id2label.values()} - {"O"}
        unknown = sorted(label for label in labels if mapping.get(label) not in ENTITY_TYPES)
        if unknown:
            raise ValueError(f"the NER model's labels {unknown} have no DocRED type: pass ner_types={{label: type}}")
        self.types = {label: mapping[label] for label in labels}
        #: TIME / NUM come from rules when the model has no label for them
        self.rules = not {"TIME", "NUM"} & set(self.types.values())

    def __call__(self, text: str) -> list[Mention3]:
        sentences = segment(text).sentence_spans()
        found = []
        for (offset, end), entities in zip(sentences, self.pipeline([text[a:b] for a, b in sentences])):
            for entity in entities:
                start, stop = offset + int(entity["start"]), offset + int(entity["end"])
                if text[start:stop].strip():
                    found.append((start, stop, self.types[_bare(entity.get("entity_group") or entity["entity"])]))
        if self.rules:
            taken = [(s, e) for s, e, _ in found]
            found += [m for m in rule_mentions(text) if not any(m[0] < e and s < m[1] for s, e in taken)]
        return sorted(found)


def _bare(label: str) -> str:
    return label[2:] if label[:2] in ("B-", "I-", "E-", "S-", "L-", "U-") else label


def _spans_of(value: Any, key: str, **where: Any) -> list[Any]:
    if not isinstance(value, list):
        raise DocumentError(f"expected a list, got {type(value).__name__}", field=key, **where)
    return value


def prepare(
    item: Any,
    ner: NERTagger | None = None,
    cluster: str | Callable[[str, list[Mention3]], list[list[int]]] = "alias",
) -> PreparedDocument:
    """One pipeline input (see the module doc) as a :class:`PreparedDocument`; a bad one is a DocumentError."""
    if isinstance(item, Document):
        return PreparedDocument(item)
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict):
        raise DocumentError(f"expected a document (a dict or a string), got {type(item).__name__}")
    if "sents" in item or "vertexSet" in item:
        return PreparedDocument(parse_document(item, None))  # the one document reader's parse and checks
    if "text" not in item:
        raise DocumentError("expected 'text' (raw text) or 'sents' and 'vertexSet' (DocRED)", field="text")
    text, title = item["text"], item.get("title", "")
    if not isinstance(title, str):
        raise DocumentError(f"expected a string, got {type(title).__name__}", field="title")
    where: dict[str, Any] = {"title": title} if title else {}
    if not isinstance(text, str):
        raise DocumentError(f"expected a string, got {type(text).__name__}", field="text", **where)
    if "entities" in item:
        spans, types = [], []
        for e, entity in enumerate(_spans_of(item["entities"], "entities", **where)):
            if not isinstance(entity, dict):
                raise DocumentError(f"expected an object, got {type(entity).__name__}", entity=e, **where)
            mentions = _spans_of(entity.get("mentions"), "mentions", entity=e, **where)
            if not mentions:
                raise DocumentError("an entity needs at least one mention", entity=e, field="mentions", **where)
            spans.append([list(check_span(s, text, entity=e, mention=m, field="mentions", **where))
                          for m, s in enumerate(mentions)])
            types.append(check_type(entity.get("type"), entity=e, field="type", **where))
    else:
        if "mentions" in item:
            found = []
            for m, mention in enumerate(_spans_of(item["mentions"], "mentions", **where)):
                if not isinstance(mention, dict):
                    raise DocumentError(f"expected an object, got {type(mention).__name__}", mention=m, **where)
                start, end = check_span(mention.get("span"), text, mention=m, field="span", **where)
                found.append((start, end, check_type(mention.get("type"), mention=m, field="type", **where)))
            found.sort()  # text order: the alias rules break ties by it
        elif ner is not None:
            found = ner(text)
        else:
            raise DocumentError("text without entities or mentions needs an NER model (ner=...)", field="entities",
                                **where)
        groups = _clusters(text, found, cluster)
        spans = [[[found[i][0], found[i][1]] for i in group] for group in groups]
        types = [found[group[0]][2] for group in groups]
    doc = text_document(text, spans, types, title=title, doc_id=item.get("doc_id"))
    return PreparedDocument(doc, spans)


def _clusters(text: str, found: list[Mention3], cluster: Any) -> list[list[int]]:
    if callable(cluster):
        groups = [list(g) for g in cluster(text, list(found))]
        if sorted(i for g in groups for i in g) != list(range(len(found))) or not all(groups):
            raise ValueError(f"cluster= returned {groups}: expected groups of the mention indices 0..{len(found) - 1}, "
                             "each index once")
        return groups
    return CLUSTERINGS[cluster]([text[s:e] for s, e, _ in found], [t for _, _, t in found])


class DocREPipeline(Pipeline):
    """The ``document-relation-extraction`` pipeline (see the module doc).

    Options, given to ``pipeline(...)`` or to a call: ``ner`` (a token-classification model id, folder or
    pipeline; ``ner_types`` maps extra labels to DocRED types), ``cluster`` (``"alias"``, ``"exact"`` or a
    callable ``(text, [(start, end, type), ...]) -> [[mention index, ...], ...]``), ``threshold`` (predict a
    relation above this probability instead of the model's learned threshold), ``top_k`` (most relations per
    entity pair; the model's ``config.top_k`` by default), ``autocast`` (``"auto"``, ``"bf16"``, ``"bf16-force"``:
    see :func:`~envre_hf.models.precision.resolve_autocast`), ``batch_size``. Weights loaded in bf16
    (``dtype=torch.bfloat16``) on hardware without native bf16 are cast to fp32 with a warning (there bf16 is
    emulated, slower), unless ``autocast="bf16-force"``.
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        fit_weights(self.model, self._forward_params.get("autocast"))

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inputs, list) and not inputs:  # transformers reads inputs[0] of a list
            return []
        if isinstance(inputs, Iterator) and not isinstance(inputs, types.GeneratorType):
            inputs = (item for item in inputs)  # transformers streams generators only
        return super().__call__(inputs, *args, **kwargs)

    @functools.cached_property
    def schema(self) -> RelationSchema:
        """The relations of the model's config: P-ids of ``id2label``, names of ``relation_names``."""
        config = self.model.config
        names = getattr(config, "relation_names", None) or {}
        ids = [config.id2label[i] for i in range(1, config.num_labels)]
        return RelationSchema([RelationType(r, names.get(r, r)) for r in ids])

    def _sanitize_parameters(
        self,
        ner: Any = None,
        ner_types: dict[str, str] | None = None,
        cluster: Any = None,
        threshold: float | None = None,
        top_k: int | None = None,
        autocast: str | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        preprocess: dict[str, Any] = {}
        if ner is not None:
            preprocess["ner"] = ner if isinstance(ner, NERTagger) else NERTagger(ner, self.device, ner_types)
        if cluster is not None:
            if not callable(cluster) and cluster not in CLUSTERINGS:
                raise ValueError(f"cluster must be one of {sorted(CLUSTERINGS)} or a callable, got {cluster!r}")
            preprocess["cluster"] = cluster
        forward = {k: v for k, v in (("threshold", threshold), ("top_k", top_k), ("autocast", autocast)) if v is not None}
        return preprocess, forward, {}

    def preprocess(self, inputs: Any, **params: Any) -> PreparedDocument:
        return prepare(inputs, **params)

    def _forward(self, model_inputs: PreparedDocument, **params: Any) -> tuple[PreparedDocument, DecodedDocument]:
        decoded = iter_decoded(self.model, [model_inputs.document], self.tokenizer, 1, schema=self.schema,
                               progress=False, **params)
        return model_inputs, next(decoded)

    def get_iterator(
        self, inputs: Iterable[Any], num_workers: int, batch_size: int, preprocess_params: dict, forward_params: dict,
        postprocess_params: dict,
    ) -> Iterator[list[dict[str, Any]]]:
        """Lists and generators: documents batched by length, 16 x ``batch_size`` at a time from a generator (it
        streams), all at once from a list; outputs in input order. A bad input stops the stream after the
        outputs of the inputs before it (its error names its position)."""
        pending: collections.deque[PreparedDocument] = collections.deque()
        failed: list[Exception] = []

        def documents() -> Iterator[Document]:
            try:
                for i, item in enumerate(inputs):
                    try:
                        pending.append(self.preprocess(item, **preprocess_params))
                    except DocumentError as err:
                        raise err.located(i, None) from None
                    yield pending[-1].document
            except Exception as err:  # noqa: BLE001 - raised below, once the inputs before it are out
                failed.append(err)

        buffer = None if isinstance(inputs, Sized) else 16 * batch_size
        for decoded in iter_decoded(self.model, documents(), self.tokenizer, batch_size, schema=self.schema,
                                    progress=False, buffer=buffer, **forward_params):
            yield self.postprocess((pending.popleft(), decoded), **postprocess_params)
        if failed:
            raise failed[0]

    def postprocess(self, model_outputs: tuple[PreparedDocument, DecodedDocument], **params: Any) -> list[dict[str, Any]]:
        prepared, decoded = model_outputs
        doc, schema = decoded.document, self.schema
        probabilities = self.model.relation_probabilities(decoded.logits)

        def entity(e: int) -> dict[str, Any]:
            ent = doc.entities[e]
            mentions = (prepared.spans[e] if prepared.spans is not None
                        else [[m.sent_id, m.pos[0], m.pos[1]] for m in ent.mentions])
            return {"name": max(ent.names, key=len), "type": ent.type, "mentions": mentions}

        out = []
        for row in decode_predictions(doc, decoded.hts, decoded.multi_hot, schema):
            h, t, r = row["h_idx"], row["t_idx"], row["r"]
            score = probabilities[pair_index(h, t, doc.num_entities), schema.rel2index[r] - 1]
            out.append({"head": entity(h), "tail": entity(t), "h_idx": h, "t_idx": t, "relation": r,
                        "relation_name": schema.id2name[r], "score": float(score), "evidence": row["evidence"]})
        out.sort(key=lambda x: (-x["score"], x["h_idx"], x["t_idx"], schema.rel2index[x["relation"]]))
        return out

    def save_pretrained(self, save_directory: Any, **kwargs: Any) -> None:
        """The model and tokenizer only: transformers' own save would copy this module, whose package imports do not
        travel, beside them and name it in config.json (the task is registered by ``import envre_hf``)."""
        self.model.save_pretrained(save_directory, **kwargs)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(save_directory, **kwargs)


def register_pipeline() -> None:
    """``pipeline("document-relation-extraction")`` builds :class:`DocREPipeline`."""
    known = PIPELINE_REGISTRY.supported_tasks.get(TASK)
    if known is None or known["impl"] is not DocREPipeline:
        PIPELINE_REGISTRY.register_pipeline(TASK, pipeline_class=DocREPipeline, pt_model=AutoModel)


register_pipeline()  # importing this module registers the task (``import envre_hf`` has transformers import it)

"""Batched inference: documents -> relation predictions in the official DocRED result format."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from ..documents.relations import RelationSchema, docred_schema
from ..documents.schema import Document
from ..features.collator import DocRECollator
from ..features.featurize import featurize_document
from .modeling_docre import DocREPreTrainedModel


def iter_logits(
    model: DocREPreTrainedModel,
    features: Sequence[dict[str, Any]],
    pad_token_id: int,
    batch_size: int = 4,
    progress: bool = True,
) -> Iterator[tuple[int, torch.Tensor]]:
    """Yield (feature index, logits n_pairs x num_labels on CPU) for every featurized document.

    Documents are batched by length (less padding, fewer windows per batch); the order of the
    yielded indices therefore differs from the input order.
    """
    collate = DocRECollator(pad_token_id)
    order = sorted(range(len(features)), key=lambda i: len(features[i]["input_ids"]))
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    bar = tqdm(total=len(order), desc="Predicting", unit="doc", disable=not progress)
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                batch = collate([{**features[i], "labels": None} for i in idx])
                logits = model(
                    input_ids=batch["input_ids"].to(device),
                    attention_mask=batch["attention_mask"].to(device),
                    entity_pos=batch["entity_pos"],
                    hts=batch["hts"],
                ).logits.float().cpu()
                for i, chunk in zip(idx, logits.split([len(features[i]["hts"]) for i in idx])):
                    yield i, chunk
                bar.update(len(idx))
    finally:
        bar.close()
        model.train(was_training)


def decode_predictions(
    doc: Document,
    hts: Sequence[Sequence[int]],
    multi_hot: torch.Tensor,
    schema: RelationSchema | None = None,
) -> list[dict[str, Any]]:
    """Official-format rows ``{"title", "doc_id"?, "h_idx", "t_idx", "r", "evidence"}`` of one document."""
    schema = schema if schema is not None else docred_schema()
    rows = []
    pairs, classes = torch.nonzero(multi_hot[:, 1:], as_tuple=True)
    for p, c in zip(pairs.tolist(), classes.tolist()):
        row: dict[str, Any] = {"title": doc.title}
        if doc.doc_id is not None:
            row["doc_id"] = doc.doc_id
        row.update(h_idx=int(hts[p][0]), t_idx=int(hts[p][1]), r=schema.index2rel[c + 1], evidence=[])
        rows.append(row)
    return rows


def predict(
    model: DocREPreTrainedModel,
    docs: Sequence[Document],
    tokenizer: Any,
    batch_size: int = 4,
    top_k: int | None = None,
    max_seq_length: int | None = None,
    schema: RelationSchema | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Predict every document's relations; rows follow document order, then pair order.

    A relation r is predicted for a pair when logit_r > logit_0 (the threshold class), keeping at
    most ``top_k`` per pair (``model.config.top_k`` by default). Rows carry ``doc_id`` when the
    document has one (renamed copies), so scoring matches them to ``Document.key``.
    """
    schema = schema if schema is not None else docred_schema()
    features = [
        featurize_document(doc, tokenizer, schema, max_seq_length)
        for doc in tqdm(docs, desc="Featurizing", unit="doc", disable=not progress)
    ]
    pad = tokenizer.pad_token_id if getattr(tokenizer, "pad_token_id", None) is not None else 0
    per_doc: dict[int, list[dict[str, Any]]] = {}
    for i, logits in iter_logits(model, features, pad, batch_size, progress):
        per_doc[i] = decode_predictions(docs[i], features[i]["hts"], model.decode(logits, top_k), schema)
    return [row for i in range(len(docs)) for row in per_doc[i]]


def load_for_inference(model_dir: str, device: str | None = None) -> tuple[DocREPreTrainedModel, Any]:
    """A saved model (any family, via ``AutoModel``) in eval mode on ``device`` and its tokenizer.

    The tokenizer is read from ``model_dir`` (save it there with ``tokenizer.save_pretrained``);
    failing that, from the encoder the model was built from (``config.encoder_name_or_path``).
    ``device`` defaults to CUDA when available.
    """
    import logging

    from transformers import AutoModel, AutoTokenizer

    from . import DocREConfig  # noqa: F401  (registers the docre model type)

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = AutoModel.from_pretrained(model_dir, use_safetensors=True).to(device).eval()
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    except (OSError, ValueError, TypeError):
        source = model.config.encoder_name_or_path
        if not source:
            raise ValueError(f"{model_dir} holds no tokenizer and its config names no encoder to take one from")
        logging.getLogger(__name__).warning("%s holds no tokenizer; using the encoder's (%s)", model_dir, source)
        tokenizer = AutoTokenizer.from_pretrained(source)
    return model, tokenizer

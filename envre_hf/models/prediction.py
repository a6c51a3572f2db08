"""Batched inference: documents -> relation predictions in the official DocRED result format."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from ..documents.relations import RelationSchema, docred_schema
from ..documents.schema import Document
from ..features.batching import budget_batches, length_sorted_batches
from ..features.collator import DocRECollator
from ..features.featurize import featurize_document
from .loading import CheckpointCodeRefused, no_checkpoint_code
from .modeling_docre import DocREPreTrainedModel
from .precision import AUTOCAST_DTYPES, resolve_autocast

#: Most entity pairs scored at once in prediction: a document with more is scored in chunks, so that memory stops
#: growing with entities squared (a 300-entity document has 89,700 pairs; Re-DocRED's batches of four ~1,600).
PAIR_BUDGET = 4096


def iter_logits(
    model: DocREPreTrainedModel,
    features: Sequence[dict[str, Any]],
    pad_token_id: int,
    batch_size: int = 4,
    progress: bool = True,
    autocast: str | None = None,
    sort_by_length: bool = True,
    pair_budget: int | None = PAIR_BUDGET,
) -> Iterator[tuple[int, torch.Tensor]]:
    """Yield (feature index, logits n_pairs x num_labels, float32 on CPU) for every featurized document, batched by
    length unless ``sort_by_length=False`` (so indices come out of input order). ``autocast``:
    :func:`~.precision.resolve_autocast`'s choices. ``pair_budget`` (None: none) caps the pairs of a batch and call."""
    collate = DocRECollator(pad_token_id)
    pairs = [len(f["hts"]) for f in features]
    if sort_by_length:
        batches = length_sorted_batches([len(f["input_ids"]) for f in features], batch_size, pairs, pair_budget)
    else:
        batches = budget_batches(range(len(features)), batch_size, pairs, pair_budget)
    device = next(model.parameters()).device
    autocast = resolve_autocast(autocast, device)
    amp = contextlib.nullcontext() if autocast is None else torch.autocast(device.type, dtype=AUTOCAST_DTYPES[autocast])
    was_training = model.training
    model.eval()
    bar = tqdm(total=len(features), desc="Predicting", unit="doc", disable=not progress)
    try:
        # Under autocast, no_grad rather than inference_mode: autocast caches its casts of the weights only
        # outside inference mode; in it every batch (every chunk of pairs) casts every weight again.
        grad_off = torch.no_grad() if autocast is not None else torch.inference_mode()
        with grad_off, amp:
            for idx in batches:
                batch = collate([{**features[i], "labels": None} for i in idx])
                logits = model(
                    input_ids=batch["input_ids"].to(device),
                    attention_mask=batch["attention_mask"].to(device),
                    entity_pos=batch["entity_pos"],
                    hts=batch["hts"],
                    output_pair_representations=False,
                    pair_budget=pair_budget,
                ).logits.float().cpu()
                yield from zip(idx, logits.split([pairs[i] for i in idx]))
                bar.update(len(idx))
    finally:
        bar.close()
        model.train(was_training)


def quantize_int8(model: DocREPreTrainedModel) -> DocREPreTrainedModel:
    """Int8 dynamic quantization of the encoder's linear layers, in place, for CPU inference only (the model can
    no longer be trained or saved); the head stays float, as it reads its extractors' weights directly."""
    import warnings

    if next(model.parameters()).device.type != "cpu":
        raise ValueError("int8 dynamic quantization runs on CPU; load the model with device='cpu'")
    model.eval()
    with warnings.catch_warnings():  # torch marks torch.ao.quantization deprecated in favour of torchao
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            from torch.ao.quantization import quantize_dynamic
        except ImportError as err:  # a torch without it
            raise ValueError(f"this torch has no dynamic quantization ({err})") from None
        quantize_dynamic(model.encoder, {nn.Linear}, dtype=torch.qint8, inplace=True)
    return model


def decode_predictions(
    doc: Document,
    hts: Sequence[Sequence[int]],
    multi_hot: torch.Tensor,
    schema: RelationSchema | None = None,
) -> list[dict[str, Any]]:
    """Official-format rows ``{"title", "doc_id"?, "h_idx", "t_idx", "r", "evidence"}`` of one document."""
    schema = schema if schema is not None else docred_schema()
    key = {"title": doc.title} if doc.doc_id is None else {"title": doc.title, "doc_id": doc.doc_id}
    pairs, classes = torch.nonzero(multi_hot[:, 1:], as_tuple=True)
    return [
        {**key, "h_idx": int(hts[p][0]), "t_idx": int(hts[p][1]), "r": schema.index2rel[c + 1], "evidence": []}
        for p, c in zip(pairs.tolist(), classes.tolist())
    ]


@dataclass
class DecodedDocument:
    """One document's prediction: its entity pairs (``hts``), their logits and multi-hot decisions (class 0 = none)."""

    document: Document
    hts: list[list[int]]
    logits: torch.Tensor
    multi_hot: torch.Tensor


def iter_decoded(
    model: DocREPreTrainedModel,
    docs: Iterable[Document],
    tokenizer: Any,
    batch_size: int = 4,
    top_k: int | None = None,
    max_seq_length: int | None = None,
    schema: RelationSchema | None = None,
    progress: bool = True,
    autocast: str | None = None,
    threshold: float | None = None,
    buffer: int | None = None,
) -> Iterator[DecodedDocument]:
    """Featurize, encode and decode documents, yielding them in input order: the one prediction path (of
    :func:`predict` and of the pipeline); ``buffer`` documents at a time (all by default), so a stream is never read
    whole. ``top_k`` and ``threshold``: :meth:`~envre_hf.models.DocREPreTrainedModel.decode`."""
    pad = tokenizer.pad_token_id if getattr(tokenizer, "pad_token_id", None) is not None else 0
    stream = iter(docs)
    while chunk := list(itertools.islice(stream, buffer)):
        features = [
            featurize_document(doc, tokenizer, schema, max_seq_length)
            for doc in tqdm(chunk, desc="Featurizing", unit="doc", disable=not progress)
        ]
        logits = dict(iter_logits(model, features, pad, batch_size, progress, autocast=autocast))
        for i, doc in enumerate(chunk):
            yield DecodedDocument(doc, features[i]["hts"], logits[i], model.decode(logits[i], top_k, threshold))


def predict(
    model: DocREPreTrainedModel, docs: Sequence[Document], tokenizer: Any, **options: Any
) -> list[dict[str, Any]]:
    """Every document's relations as official-format rows (with ``doc_id`` when the document has one), in document
    order, then pair order; ``options``: those of :func:`iter_decoded` (``batch_size``, ``top_k``, ``schema``, ...)."""
    decoded = iter_decoded(model, docs, tokenizer, **options)
    return [row for d in decoded for row in decode_predictions(d.document, d.hts, d.multi_hot, options.get("schema"))]


def load_for_inference(
    model_dir: str, device: str | None = None, quantize: str | None = None
) -> tuple[DocREPreTrainedModel, Any]:
    """A saved model (any family) in eval mode on ``device`` (CUDA when available) and its tokenizer: from
    ``model_dir``, else from the encoder the model was built from. ``quantize="int8"``: :func:`quantize_int8`."""
    import logging

    from transformers import AutoConfig, AutoModel, AutoTokenizer

    if quantize not in (None, "int8"):
        raise ValueError(f"quantize must be 'int8' or None, got {quantize!r}")
    if quantize is not None:
        if device not in (None, "cpu"):
            raise ValueError(f"quantize={quantize!r} runs on CPU, not on {device}")
        device = "cpu"
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    with no_checkpoint_code(model_dir):
        config = AutoConfig.from_pretrained(model_dir, trust_remote_code=False)
    if getattr(config, "head_type", None) is None:  # a plain encoder would load, then fail deep inside predict
        raise ValueError(
            f"{model_dir}: a {config.model_type!r} model, expected a DocRE model (config.json model_type 'docre' "
            "with a head_type, as envre train saves it); an encoder is trained into one with envre train"
        )
    model = AutoModel.from_pretrained(model_dir, config=config, use_safetensors=True, trust_remote_code=False)
    model = model.to(device).eval()
    if quantize == "int8":
        quantize_int8(model)
    try:
        with no_checkpoint_code(model_dir):
            tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)
    except CheckpointCodeRefused:
        raise
    except (OSError, ValueError, TypeError):
        source = model.config.encoder_name_or_path
        if not source:
            raise ValueError(f"{model_dir} holds no tokenizer and its config names no encoder to take one from")
        logging.getLogger(__name__).warning("%s holds no tokenizer; using the encoder's (%s)", model_dir, source)
        try:
            with no_checkpoint_code(source):
                tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
        except CheckpointCodeRefused:
            raise
        except (OSError, ValueError, TypeError) as err:
            # a local encoder folder is saved under its base name only (portable configs)
            raise ValueError(
                f"{model_dir} holds no tokenizer and the encoder it was built from ({source!r}) has none to lend "
                f"({type(err).__name__}): save the tokenizer into the model folder with tokenizer.save_pretrained"
            ) from None
    return model, tokenizer

"""Which words of a document make a DocRE model predict (h, t, r)? Integrated gradients (one forward of all
interpolation points serves every fact; the backward is per fact) or gradient x input of the threshold margin
``logit_r - logit_0`` over the word-piece embeddings, summed to DocRED tokens (docs/attribution.md)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..documents.relations import RelationSchema, docred_schema
from ..documents.schema import Document
from ..features.featurize import DEFAULT_MARKER, _marked_words, featurize_document

METHODS = ("ig", "grad_x_input")
BASELINES = ("zero", "pad")
DTYPES = ("float32", "bfloat16")


@dataclass
class AttributionConfig:
    """``steps`` Gauss-Legendre points, ``step_batch`` of them per forward (to bound memory), a ``"zero"`` or
    ``"pad"`` baseline; ``dtype="bfloat16"`` runs under autocast (docs/attribution.md)."""

    method: str = "ig"
    steps: int = 10
    baseline: str = "zero"
    step_batch: int | None = None
    dtype: str = "float32"
    marker: str = DEFAULT_MARKER

    def __post_init__(self) -> None:
        for name, allowed in (("method", METHODS), ("baseline", BASELINES), ("dtype", DTYPES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"AttributionConfig.{name}: {getattr(self, name)!r} is not one of {allowed}")
        if self.steps < 1:
            raise ValueError(f"AttributionConfig.steps must be >= 1, got {self.steps}")
        if self.step_batch is not None and self.step_batch < 1:
            raise ValueError(f"AttributionConfig.step_batch must be >= 1, got {self.step_batch}")

    def to_dict(self) -> dict[str, Any]:
        # "backend" as run folders recorded it before the Captum option went: they still resume
        return {**asdict(self), "backend": "shared"}


@dataclass
class FactAttribution:
    """One gold fact's scores at the input and baseline and one attribution per DocRED token; for IG,
    ``sum(tokens) + unmapped`` equals ``score - baseline_score`` up to ``gap``."""

    h: int
    t: int
    r: str
    score: float
    baseline_score: float
    tokens: list[float]
    unmapped: float
    gap: float

    def to_dict(self, digits: int = 6) -> dict[str, Any]:
        out = asdict(self)
        out["tokens"] = [float(f"{x:.{digits}g}") for x in self.tokens]
        return out


@dataclass
class DocumentAttribution:
    key: str
    title: str
    n_tokens: int
    n_pieces: int
    facts: list[FactAttribution] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc": self.key,
            "title": self.title,
            "n_tokens": self.n_tokens,
            "n_pieces": self.n_pieces,
            "seconds": round(self.seconds, 3),
            "facts": [f.to_dict() for f in self.facts],
        }


# --------------------------------------------------------------------------- word pieces -> DocRED tokens


def piece_tokens(doc: Document, tokenizer: Any, marker: str = DEFAULT_MARKER) -> tuple[list[int], list[int]]:
    """The document's encoder ``input_ids`` (as :func:`featurize_document` builds them) and, per word piece, its
    DocRED token, or -1 for special tokens and entity markers."""
    words, spans = _marked_words(doc, marker)
    marker_words = {w for entity in spans for pair in entity for w in pair}
    tokens = itertools.count()
    word_token = [-1 if w in marker_words else next(tokens) for w in range(len(words))]
    encoding = tokenizer(words, is_split_into_words=True, add_special_tokens=True, truncation=False, verbose=False)
    mapping = [word_token[w] if w is not None else -1 for w in encoding.word_ids()]
    return list(encoding["input_ids"]), mapping


def sum_to_tokens(piece_scores: torch.Tensor, mapping: Sequence[int], n_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum word-piece scores (..., L) to DocRED tokens (..., n_tokens); also the sum over unmapped pieces (...,)."""
    index = torch.as_tensor(mapping, dtype=torch.long, device=piece_scores.device)
    keep = index >= 0
    out = piece_scores.new_zeros((*piece_scores.shape[:-1], n_tokens))
    out = out.index_add(-1, index[keep], piece_scores[..., keep])
    return out, piece_scores[..., ~keep].sum(-1)


# --------------------------------------------------------------------------- scoring through embeddings


class _RowEmbedding(nn.Module):
    """Stands in for the word-embedding table (id ``pad + 1 + i`` -> row i of ``rows``, the pad id -> zeros), so
    each of the model's windows gathers, and back-propagates to, the right document-level row."""

    def __init__(self, rows: torch.Tensor, pad_id: int):
        super().__init__()
        self.rows = rows
        self.pad_id = pad_id

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        table = torch.cat([self.rows.new_zeros((self.pad_id + 1, self.rows.size(-1))), self.rows])
        return F.embedding(ids, table)


@contextmanager
def _embeddings_from(model: nn.Module, rows: torch.Tensor, pad_id: int) -> Iterator[None]:
    original = model.get_input_embeddings()
    model.set_input_embeddings(_RowEmbedding(rows, pad_id))
    try:
        yield
    finally:
        model.set_input_embeddings(original)


@contextmanager
def _frozen(model: nn.Module) -> Iterator[None]:
    """Eval mode and no parameter gradients (only input gradients: about half the backward)."""
    flags = [p.requires_grad for p in model.parameters()]
    was_training = model.training
    model.eval().requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in zip(model.parameters(), flags):
            p.requires_grad_(flag)
        model.train(was_training)


@dataclass
class _Prepared:
    """What every fact of one document shares."""

    input_ids: torch.Tensor  # (L,)
    mapping: list[int]
    entity_pos: list[Any]
    hts: list[list[int]]
    fact_rows: torch.Tensor
    fact_classes: torch.Tensor
    facts: list[tuple[int, int, str]]
    n_tokens: int


def _prepare(model: nn.Module, doc: Document, tokenizer: Any, config: AttributionConfig, schema: RelationSchema) -> _Prepared:
    feature = featurize_document(doc, tokenizer, schema, marker=config.marker)
    input_ids, mapping = piece_tokens(doc, tokenizer, config.marker)
    if input_ids != list(feature["input_ids"]):
        raise RuntimeError(f"document {doc.key!r}: word-piece map and featurized inputs disagree")
    facts = list(dict.fromkeys((rel.h, rel.t, rel.r) for rel in doc.relations))  # distinct, in order
    pairs = sorted({(h, t) for h, t, _ in facts})
    row = {p: i for i, p in enumerate(pairs)}
    device = next(model.parameters()).device
    return _Prepared(
        input_ids=torch.as_tensor(input_ids, dtype=torch.long, device=device),
        mapping=mapping,
        entity_pos=feature["entity_pos"],
        hts=[list(p) for p in pairs],
        fact_rows=torch.as_tensor([row[(h, t)] for h, t, _ in facts], dtype=torch.long, device=device),
        fact_classes=torch.as_tensor([schema.rel2index[r] for _, _, r in facts], dtype=torch.long, device=device),
        facts=facts,
        n_tokens=sum(len(s) for s in doc.sents),
    )


def fact_scores(model: nn.Module, prep: _Prepared, embeds: torch.Tensor) -> torch.Tensor:
    """Threshold margins ``logit_r - logit_0`` (S x n_facts) of the document with input embeddings ``embeds`` (S x L x H)."""
    s, length, hidden = embeds.shape
    pad_id = int(getattr(model.config.encoder, "pad_token_id", None) or 0)
    ids = torch.arange(s * length, device=embeds.device).view(s, length) + pad_id + 1
    mask = torch.ones((s, length), dtype=torch.long, device=embeds.device)
    with _embeddings_from(model, embeds.reshape(s * length, hidden), pad_id):
        logits = model(input_ids=ids, attention_mask=mask, entity_pos=[prep.entity_pos] * s, hts=[prep.hts] * s).logits
    logits = logits.view(s, len(prep.hts), -1)
    return logits[:, prep.fact_rows, prep.fact_classes] - logits[:, prep.fact_rows, 0]


# --------------------------------------------------------------------------- attribution


class DocumentAttributor:
    """Attributes the gold facts of documents for one model."""

    def __init__(
        self, model: nn.Module, tokenizer: Any, config: AttributionConfig | None = None, schema: RelationSchema | None = None
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.config = config or AttributionConfig()
        self.schema = schema or docred_schema()

    def _embeddings(self, prep: _Prepared) -> tuple[torch.Tensor, torch.Tensor]:
        """Input embeddings x (L x H) and the baseline b (L x H)."""
        table = self.model.get_input_embeddings()
        x = table(prep.input_ids).detach()
        if self.config.baseline == "zero":
            return x, torch.zeros_like(x)
        pad = int(getattr(self.tokenizer, "pad_token_id", None) or 0)
        return x, table(torch.full_like(prep.input_ids, pad)).detach()

    def attribute(self, doc: Document) -> DocumentAttribution:
        """Attributions of every distinct gold fact (h, t, r) of ``doc``."""
        start = time.perf_counter()
        prep = _prepare(self.model, doc, self.tokenizer, self.config, self.schema)
        out = DocumentAttribution(doc.key, doc.title, prep.n_tokens, int(prep.input_ids.numel()))
        if not prep.facts:
            return out
        device = prep.input_ids.device.type
        autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=self.config.dtype == "bfloat16")
        with _frozen(self.model), autocast:
            x, b = self._embeddings(prep)
            with torch.no_grad():
                ends = fact_scores(self.model, prep, torch.stack([x, b])).double()
            method = self._grad_x_input if self.config.method == "grad_x_input" else self._ig_shared
            pieces = method(prep, x, b).double()
        tokens, unmapped = sum_to_tokens(pieces, prep.mapping, prep.n_tokens)
        gaps = pieces.sum(-1) - (ends[0] - ends[1])
        for f, (h, t, r) in enumerate(prep.facts):
            out.facts.append(
                FactAttribution(
                    h=h,
                    t=t,
                    r=r,
                    score=float(ends[0, f]),
                    baseline_score=float(ends[1, f]),
                    tokens=tokens[f].tolist(),
                    unmapped=float(unmapped[f]),
                    gap=float(gaps[f]),
                )
            )
        out.seconds = time.perf_counter() - start
        return out

    def _grad_x_input(self, prep: _Prepared, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        embeds = x.unsqueeze(0).clone().requires_grad_(True)
        scores = fact_scores(self.model, prep, embeds)[0]
        grads = self._per_fact_grads(scores.unsqueeze(0), embeds)  # F x 1 x L x H
        return (grads[:, 0] * (x - b)).sum(-1)

    def _ig_shared(self, prep: _Prepared, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        nodes, weights = np.polynomial.legendre.leggauss(self.config.steps)  # Gauss-Legendre on (-1, 1)
        alphas, weights = (nodes + 1) / 2, weights / 2
        chunk = self.config.step_batch or self.config.steps
        total = x.new_zeros((len(prep.facts), *x.shape))
        for i in range(0, len(alphas), chunk):
            a = torch.as_tensor(alphas[i : i + chunk], dtype=x.dtype, device=x.device).view(-1, 1, 1)
            w = torch.as_tensor(weights[i : i + chunk], dtype=x.dtype, device=x.device).view(-1, 1)
            embeds = (b + a * (x - b)).requires_grad_(True)
            scores = fact_scores(self.model, prep, embeds) * w  # S x F, weighted by the quadrature
            total += self._per_fact_grads(scores, embeds).sum(1)
        return (total * (x - b)).sum(-1)

    @staticmethod
    def _per_fact_grads(scores: torch.Tensor, embeds: torch.Tensor) -> torch.Tensor:
        """d scores[:, f].sum() / d embeds for every fact f (F x S x L x H): one backward each, one forward graph."""
        n = scores.size(1)
        grads = [torch.autograd.grad(scores[:, f].sum(), embeds, retain_graph=f < n - 1)[0] for f in range(n)]
        return torch.stack(grads)

"""Shared base of the DocRE model families: long-input encoding, mention pooling, pair gathering.

Every family (ATLOP/NCRL, KD-DocRE, DocuNet) is a :class:`DocREPreTrainedModel` with a
transformers encoder (``self.encoder``, built from ``config.encoder``) and its own head. Inputs
come from :mod:`envre_hf.features` (entity markers, ``entity_pos``, ``hts``).

Families register themselves with :func:`register_head` under one or more ``head_type`` values;
``envre_hf.models.DocREModel`` (the class registered with ``AutoModel``) dispatches on ``config.head_type``,
so ``AutoModel.from_pretrained(dir)`` returns the family that was saved. This module is shipped with saved
models (remote code): it imports only torch, transformers and sibling modules.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_docre import FAMILY_MODULES, DocREConfig

#: head_type -> model class; filled by :func:`register_head` (families' modules).
DOCRE_HEADS: dict[str, type[DocREPreTrainedModel]] = {}

EntityPos = Sequence[Sequence[Sequence[int]]]  # per entity, its mentions' (start, end)


def register_head(*head_types: str) -> Callable[[type], type]:
    """Class decorator: make ``DocREModel`` / ``AutoModel`` build this class for these head types.

    The class is also registered for ``AutoModel`` remote code: ``save_pretrained`` then copies its module (and
    the sibling modules it imports) next to the weights and names it in ``config.json``'s ``auto_map``.
    """

    def wrap(cls: type) -> type:
        for head_type in head_types:
            DOCRE_HEADS[head_type] = cls
        cls.register_for_auto_class("AutoModel")
        return cls

    return wrap


def head_class(head_type: str) -> type[DocREPreTrainedModel]:
    """The model class registered for ``head_type`` (the family's sibling module is imported on first use)."""
    if head_type not in DOCRE_HEADS and head_type in FAMILY_MODULES:
        importlib.import_module(f".{FAMILY_MODULES[head_type]}", __package__)
    if head_type not in DOCRE_HEADS:
        raise KeyError(f"no model class is registered for head_type {head_type!r}; known: {sorted(DOCRE_HEADS)}")
    return DOCRE_HEADS[head_type]


@dataclass
class DocREModelOutput(ModelOutput):
    """Output of every DocRE model.

    ``loss`` (when labels are given), ``logits`` (sum_pairs x num_labels; class 0 is the
    no-relation / threshold class) and ``pair_representations`` (sum_pairs x D: the features the
    family's classifier consumes; see each family for what D is).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    pair_representations: torch.FloatTensor | None = None


@dataclass
class MentionIndex:
    """Flat index of all mentions of a batch, for vectorised pooling."""

    doc: torch.Tensor  # (M,) document of each mention
    pos: torch.Tensor  # (M,) start-marker position of each mention
    entity: torch.Tensor  # (M,) batch-global entity index
    slot: torch.Tensor  # (M,) rank of the mention within its entity
    entities_per_doc: list[int]
    max_mentions: int


def mention_index(entity_pos: Sequence[EntityPos], device: torch.device | str = "cpu") -> MentionIndex:
    """Flatten ``entity_pos`` (list per document) into index tensors (one Python pass over mentions)."""
    docs, poss, ents, slots, per_doc = [], [], [], [], []
    offset = 0
    max_m = 1
    for b, entities in enumerate(entity_pos):
        per_doc.append(len(entities))
        for e, mentions in enumerate(entities):
            max_m = max(max_m, len(mentions))
            for k, span in enumerate(mentions):
                docs.append(b)
                poss.append(int(span[0]))
                ents.append(offset + e)
                slots.append(k)
        offset += len(entities)

    def t(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=device)

    return MentionIndex(t(docs), t(poss), t(ents), t(slots), per_doc, max_m)


def pool_entities(
    sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[EntityPos]
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Batch-flat entity embeddings (E x H, logsumexp over mentions) and attentions (E x heads x L, mean).

    Entities without any mention (only possible after ``max_seq_length`` truncation) get zeros.
    """
    idx = mention_index(entity_pos, sequence_output.device)
    n_entities = sum(idx.entities_per_doc)
    hidden = sequence_output.size(-1)
    heads, length = attention.size(1), attention.size(-1)
    mention_emb = sequence_output[idx.doc, idx.pos]  # M x H
    mention_att = attention[idx.doc, :, idx.pos]  # M x heads x L
    padded = sequence_output.new_full((n_entities, idx.max_mentions, hidden), float("-inf"))
    padded = padded.index_put((idx.entity, idx.slot), mention_emb)
    emb = torch.logsumexp(padded, dim=1)
    counts = torch.zeros(n_entities, device=sequence_output.device, dtype=sequence_output.dtype)
    counts = counts.index_add(0, idx.entity, torch.ones_like(idx.entity, dtype=sequence_output.dtype))
    emb = torch.where((counts > 0).unsqueeze(-1), emb, torch.zeros_like(emb))
    att = attention.new_zeros((n_entities, heads, length)).index_add(0, idx.entity, mention_att)
    att = att / counts.clamp(min=1).view(-1, 1, 1)
    return emb, att, idx.entities_per_doc


def hts_index(hts: Sequence[Sequence[Sequence[int]]], entities_per_doc: Sequence[int], device: torch.device | str):
    """Batch-global (head, tail) entity indices and the document of each pair, as tensors."""
    heads, tails, docs = [], [], []
    offset = 0
    for b, (pairs, n_e) in enumerate(zip(hts, entities_per_doc)):
        if len(pairs):
            p = torch.as_tensor(pairs, dtype=torch.long, device=device).view(-1, 2)
            heads.append(p[:, 0] + offset)
            tails.append(p[:, 1] + offset)
            docs.append(torch.full((p.size(0),), b, dtype=torch.long, device=device))
        offset += n_e
    if not heads:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return empty, empty, empty
    return torch.cat(heads), torch.cat(tails), torch.cat(docs)


def localized_context(
    sequence_output: torch.Tensor, h_att: torch.Tensor, t_att: torch.Tensor, pair_doc: torch.Tensor
) -> torch.Tensor:
    """ATLOP's localized context pooling for every pair (sum_pairs x H), batched with one ``bmm``.

    The context of (h, t) weights each token by how much both entities attend to it: the product
    of their attentions averaged over heads, normalised to sum to one.
    """
    batch, length, hidden = sequence_output.shape
    if pair_doc.numel() == 0:
        return sequence_output.new_zeros((0, hidden))
    ht = (h_att * t_att).mean(1)  # P x L
    ht = ht / (ht.sum(1, keepdim=True) + 1e-5)
    counts = torch.bincount(pair_doc, minlength=batch)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(pair_doc.numel(), device=pair_doc.device) - starts[pair_doc]
    padded = ht.new_zeros((batch, int(counts.max()), length))
    padded = padded.index_put((pair_doc, rank), ht)
    context = torch.bmm(padded, sequence_output)  # B x maxP x H
    return context[pair_doc, rank]


class _GroupOuter(torch.autograd.Function):
    """Per-group outer products zh_g zt_g^T, flattened; the backward uses batched mat-vec products
    instead of autograd's broadcast-multiply-then-sum (which materialises two more P x emb x block tensors)."""

    @staticmethod
    def forward(ctx: Any, zh: torch.Tensor, zt: torch.Tensor, groups: int, block: int) -> torch.Tensor:
        ctx.save_for_backward(zh, zt)
        ctx.groups, ctx.block = groups, block
        outer = zh.view(-1, groups, block, 1) * zt.view(-1, groups, 1, block)
        return outer.reshape(zh.size(0), groups * block * block)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None]:
        zh, zt = ctx.saved_tensors
        g, b = ctx.groups, ctx.block
        grad = grad.reshape(-1, g, b, b)
        grad_zh = torch.matmul(grad, zt.reshape(-1, g, b, 1)).reshape(zh.shape) if ctx.needs_input_grad[0] else None
        grad_zt = torch.matmul(zh.reshape(-1, g, 1, b), grad).reshape(zt.shape) if ctx.needs_input_grad[1] else None
        return grad_zh, grad_zt, None, None


def group_bilinear(zh: torch.Tensor, zt: torch.Tensor, block_size: int) -> torch.Tensor:
    """ATLOP's grouped bilinear features: zh and zt (pairs x emb) split into emb / block_size groups;
    within each group the outer product, all flattened to pairs x (emb * block_size)."""
    if zh.shape != zt.shape or zh.size(-1) % block_size:
        raise ValueError(f"group_bilinear: shapes {tuple(zh.shape)}, {tuple(zt.shape)} with block size {block_size}")
    return _GroupOuter.apply(zh.contiguous(), zt.contiguous(), zh.size(-1) // block_size, block_size)


class DocREPreTrainedModel(PreTrainedModel):
    """Base class: a transformers encoder plus the shared DocRE machinery.

    The encoder runs with eager attention because localized context pooling needs the last
    layer's attention probabilities (fused kernels do not return them).
    """

    config_class = DocREConfig
    base_model_prefix = "docre"
    supports_gradient_checkpointing = True
    _supports_sdpa = False
    #: The head_type ``from_encoder_pretrained`` uses when none is given.
    default_head_type = "atlop"

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        config.encoder._attn_implementation = "eager"
        self.encoder = AutoModel.from_config(config.encoder, attn_implementation="eager")
        if config.window is None:
            from .configuration_docre import encoder_window

            config.window = encoder_window(config.encoder)

    def _init_weights(self, module: nn.Module) -> None:
        std = getattr(self.config.encoder, "initializer_range", None) or 0.02
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)

    def get_input_embeddings(self) -> nn.Module:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.encoder.set_input_embeddings(value)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Any, *model_args: Any, **kwargs: Any):
        """transformers' loader, restricted to safetensors weights: a pickled checkpoint is never unpickled."""
        kwargs.setdefault("use_safetensors", True)
        return super().from_pretrained(pretrained_model_name_or_path, *model_args, **kwargs)

    @classmethod
    def from_encoder_pretrained(
        cls, encoder_name_or_path: str, *, encoder_kwargs: dict[str, Any] | None = None, **head: Any
    ) -> DocREPreTrainedModel:
        """A new model whose encoder weights come from ``encoder_name_or_path`` (head randomly initialised).

        ``head`` holds :class:`DocREConfig` settings (``head_type``, ``emb_size``, ``block_size``, ...);
        ``encoder_kwargs`` go to the encoder's ``from_pretrained`` (e.g. ``revision``); weights are read from
        safetensors only, unless ``encoder_kwargs`` says ``use_safetensors=False`` for an encoder you trust.
        """
        encoder_kwargs = {"use_safetensors": True, **(encoder_kwargs or {})}
        encoder = AutoModel.from_pretrained(encoder_name_or_path, attn_implementation="eager", **encoder_kwargs)
        head.setdefault("head_type", cls.default_head_type)
        head.setdefault("encoder_name_or_path", str(encoder_name_or_path))
        config = DocREConfig(encoder=encoder.config.to_dict(), **head)
        if head_class(config.head_type) is not cls:
            raise ValueError(f"{cls.__name__} does not implement head_type {config.head_type!r}")
        model = cls(config)
        missing, unexpected = model.encoder.load_state_dict(encoder.state_dict(), strict=False)
        if missing or unexpected:
            raise ValueError(f"encoder weights do not fit: missing {missing[:5]}, unexpected {unexpected[:5]}")
        return model

    # ------------------------------------------------------------------ encoding

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence output (B x L x H) and last-layer attention (B x heads x L x L) for any length L.

        Documents longer than ``config.window`` are cut into overlapping windows (each with the
        document's own first and last special tokens, e.g. [CLS] ... [SEP]); the windows of the
        whole batch run in one encoder call. Hidden states are averaged where windows overlap;
        attention blocks are summed and each row renormalised to sum to one (ATLOP's merge,
        generalised from two windows of 512 to any number of windows of any size).
        Assumes one leading and one trailing special token, as BERT/RoBERTa/DeBERTa tokenizers add.
        """
        window = int(self.config.window)
        batch, length = input_ids.shape
        if length <= window:
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
            return out.last_hidden_state, out.attentions[-1]
        lengths = [int(n) for n in attention_mask.sum(1).tolist()]  # one device sync for the whole batch
        plans = self._window_plan(lengths, window)
        n_windows = len(plans)
        win_ids = input_ids.new_full((n_windows, window), self.config.encoder.pad_token_id or 0)
        win_mask = attention_mask.new_zeros((n_windows, window))
        for k, (b, s, n_win, _, _, _) in enumerate(plans):
            n = lengths[b]
            if n <= window:
                win_ids[k, :n] = input_ids[b, :n]
            else:
                win_ids[k, 0] = input_ids[b, 0]
                win_ids[k, 1 : n_win - 1] = input_ids[b, 1 + s : s + n_win - 1]
                win_ids[k, n_win - 1] = input_ids[b, n - 1]
            win_mask[k, :n_win] = 1
        out = self.encoder(input_ids=win_ids, attention_mask=win_mask, output_attentions=True)
        hidden, att = out.last_hidden_state, out.attentions[-1]
        heads = att.size(1)
        sequence_output = hidden.new_zeros((batch, length, hidden.size(-1)))
        counts = hidden.new_zeros((batch, length, 1))
        attention = att.new_zeros((batch, heads, length, length))
        for k, (b, s, n_win, j0, j1, p0) in enumerate(plans):
            p1 = p0 + (j1 - j0)
            sequence_output[b, p0:p1] += hidden[k, j0:j1]
            counts[b, p0:p1] += 1
            attention[b, :, p0:p1, p0:p1] += att[k, :, j0:j1, j0:j1]
        sequence_output = sequence_output / counts.clamp(min=1)
        attention = attention / (attention.sum(-1, keepdim=True) + 1e-10)
        return sequence_output, attention

    @staticmethod
    def _window_plan(lengths: Sequence[int], window: int) -> list[tuple[int, int, int, int, int, int]]:
        """Windows as (doc, content start s, window length, kept from j0, kept to j1, document position of j0).

        A document of n <= window tokens is one window. Longer ones keep their first and last
        special tokens around ``window - 2`` content tokens per window; k windows with evenly
        spread starts, k the least number with overlaps of at least half a window.
        """
        plans = []
        inner = window - 2
        if inner < 2:
            raise ValueError(f"encoder window {window} is too small for windowing")
        for b, n in enumerate(int(x) for x in lengths):
            if n <= window:
                plans.append((b, 0, n, 0, n, 0))
                continue
            content = n - 2
            k = math.ceil((content - inner) / (inner // 2)) + 1
            starts = [round(i * (content - inner) / (k - 1)) for i in range(k)]
            for i, s in enumerate(starts):
                j0 = 0 if i == 0 else 1
                j1 = window if i == k - 1 else window - 1
                plans.append((b, s, window, j0, j1, s + j0))
        return plans

    # ------------------------------------------------------------------ entities and pairs

    def entity_embeddings(
        self, sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[EntityPos]
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Per document: entity embeddings (n_e x H, logsumexp over mention start markers) and
        entity attentions (n_e x heads x L, mean over mentions)."""
        emb, att, per_doc = pool_entities(sequence_output, attention, entity_pos)
        return list(emb.split(per_doc)), list(att.split(per_doc))

    def pair_features(
        self,
        sequence_output: torch.Tensor,
        attention: torch.Tensor,
        entity_pos: Sequence[EntityPos],
        hts: Sequence[Sequence[Sequence[int]]],
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Head embeddings, tail embeddings and localized contexts of every pair (each sum_pairs x H)."""
        emb, att, per_doc = pool_entities(sequence_output, attention, entity_pos)
        h_idx, t_idx, pair_doc = hts_index(hts, per_doc, sequence_output.device)
        context = localized_context(sequence_output, att[h_idx], att[t_idx], pair_doc)
        return emb[h_idx], emb[t_idx], context

    # ------------------------------------------------------------------ decoding

    def relation_probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """P_r (sum_pairs x num_labels-1) that relation r holds: ``sigmoid(logit_r - logit_0)``.

        With a learned threshold class, r is predicted exactly when logit_r > logit_0, i.e. when
        this probability exceeds 0.5: it is the two-way softmax between r and the threshold, so the
        EVRT consistency loss compares the quantities that decide predictions.
        """
        return torch.sigmoid(logits[:, 1:] - logits[:, :1])

    def decode(self, logits: torch.Tensor, top_k: int | None = None) -> torch.Tensor:
        """Multi-hot predictions: r where logit_r > logit_0, at most ``top_k`` per pair (``config.top_k``
        by default); class 0 is set for pairs with no relation."""
        top_k = self.config.top_k if top_k is None else top_k
        return threshold_decode(logits, top_k)


def threshold_decode(logits: torch.Tensor, top_k: int | None = None) -> torch.Tensor:
    """See :meth:`DocREPreTrainedModel.decode`."""
    out = torch.zeros_like(logits)
    mask = logits > logits[:, :1]
    if top_k is not None and top_k > 0 and logits.size(1) > top_k:
        kth = torch.topk(logits, top_k, dim=1).values[:, -1:]
        mask = mask & (logits >= kth)
    out[mask] = 1.0
    out[:, 0] = (out[:, 1:].sum(1) == 0).to(logits.dtype)
    return out


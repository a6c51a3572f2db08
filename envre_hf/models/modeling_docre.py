"""Shared base of the DocRE model families: long-input encoding, mention pooling, pair gathering. Shipped with
saved models (remote code): imports only torch, transformers and sibling modules."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .attention import FAST_ATTENTION, RowRequest, last_attention_layer, register_fast_attention
from .configuration_docre import DocREConfig, encoder_window
from .losses import threshold_margins
from .registry import HeadSettings, families, get_family, head_class

EntityPos = Sequence[Sequence[Sequence[int]]]  # per entity, its mentions' (start, end)


@dataclass
class DocREModelOutput(ModelOutput):
    """``logits``: sum_pairs x num_labels (class 0: no relation / threshold). ``pair_representations``: what the
    classifier reads (None under ``output_pair_representations=False``, as in prediction). ``bilinear_factors``
    ``(zh, zt)``: set by the group-bilinear families, so that EVRT's L_rcr is computed in closed form from them."""

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    pair_representations: torch.FloatTensor | None = None
    bilinear_factors: tuple[torch.FloatTensor, torch.FloatTensor] | None = None


@dataclass
class MentionIndex:
    doc: torch.Tensor  # (M,) document of each mention
    pos: torch.Tensor  # (M,) start-marker position of each mention
    entity: torch.Tensor  # (M,) batch-global entity index
    slot: torch.Tensor  # (M,) rank of the mention within its entity
    entities_per_doc: list[int]
    max_mentions: int


def _long(values: list[Any], device: torch.device | str) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=device)


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

    return MentionIndex(*(_long(v, device) for v in (docs, poss, ents, slots)), per_doc, max_m)


def pool_entities(
    sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[EntityPos]
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Batch-flat entity embeddings (E x H, logsumexp over mentions) and attentions (E x heads x L, mean) from
    :meth:`~DocREPreTrainedModel.encode`'s outputs; entities left without mentions (``max_seq_length``) get zeros."""
    idx = mention_index(entity_pos, sequence_output.device)
    n_entities = sum(idx.entities_per_doc)
    hidden = sequence_output.size(-1)
    heads, length = attention.size(1), attention.size(-1)
    if attention.dim() != 3 or attention.size(0) != idx.pos.numel():
        raise ValueError(f"attention of shape {tuple(attention.shape)} for {idx.pos.numel()} mention rows")
    mention_emb, mention_att = sequence_output[idx.doc, idx.pos], attention  # M x H, M x heads x L
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


def pair_attention(
    entity_att: torch.Tensor, h_idx: torch.Tensor, t_idx: torch.Tensor, pair_doc: torch.Tensor, entities_per_doc: Sequence[int]
) -> torch.Tensor:
    """``(entity_att[h_idx] * entity_att[t_idx]).mean(1)`` (sum_pairs x L) as one product per document, its pairs
    then picked: the gathered form materialises two sum_pairs x heads x L tensors, ~20x slower on CPU."""
    length = entity_att.size(-1)
    heads = entity_att.size(1)
    if h_idx.numel() == 0:
        return entity_att.new_zeros((0, length))
    offsets = [0]
    for n in entities_per_doc:
        offsets.append(offsets[-1] + int(n))
    starts = torch.tensor(offsets[:-1], dtype=torch.long, device=h_idx.device)
    h_local, t_local = h_idx - starts[pair_doc], t_idx - starts[pair_doc]
    parts, rows = [], []
    for b, n in enumerate(entities_per_doc):
        if n == 0:
            continue
        sel = (pair_doc == b).nonzero(as_tuple=True)[0]
        if sel.numel() == 0:
            continue
        # L x E x heads, contiguous: bmm on the permuted view copies every one of its L small matrices
        a = entity_att[offsets[b] : offsets[b] + n].permute(2, 0, 1).contiguous()
        used, head_row = torch.unique(h_local[sel], return_inverse=True)
        products = torch.bmm(a[:, used], a.transpose(1, 2))  # L x U x E: sum over heads
        parts.append(products[:, head_row, t_local[sel]].transpose(0, 1))  # pairs x L
        rows.append(sel)
    values = torch.cat(parts)  # bmm's dtype (bf16 under autocast)
    return values.new_empty((h_idx.numel(), length)).index_copy(0, torch.cat(rows), values) / heads


def localized_context(
    sequence_output: torch.Tensor, ht: torch.Tensor, pair_doc: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """ATLOP's localized context of every pair (sum_pairs x H): tokens weighted by ``ht`` (:func:`pair_attention`)
    normalised to sum to one (``ht / (sum + eps)``), one product per document (padding documents to the most pairs
    wasted most FLOPs)."""
    hidden = sequence_output.size(-1)
    if pair_doc.numel() == 0:
        return sequence_output.new_zeros((0, hidden))
    ht = ht / (ht.sum(1, keepdim=True) + eps)
    parts, rows = [], []
    for b in torch.unique(pair_doc).tolist():
        sel = (pair_doc == b).nonzero(as_tuple=True)[0]
        # as a one-matrix bmm: benchmarks/bench_roofline.py counts aten::bmm as pair attention + context
        parts.append(torch.bmm(ht[sel].unsqueeze(0), sequence_output[b : b + 1])[0])  # pairs x H
        rows.append(sel)
    values = torch.cat(parts)
    return values.new_empty((pair_doc.numel(), hidden)).index_copy(0, torch.cat(rows), values)


def pair_chunks(n_pairs: int, pair_budget: int | None) -> list[slice]:
    """Slices of at most ``pair_budget`` pairs (one slice of all when None), so that a batch's pairs x L attention
    weights and pairs x features never exist whole."""
    if pair_budget is not None and pair_budget < 1:
        raise ValueError(f"pair_budget must be >= 1 or None, got {pair_budget}")
    if pair_budget is None or n_pairs <= pair_budget:
        return [slice(0, n_pairs)]
    return [slice(s, min(s + pair_budget, n_pairs)) for s in range(0, n_pairs, pair_budget)]


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


def _groups(zh: torch.Tensor, zt: torch.Tensor, block_size: int) -> int:
    """How many groups of ``block_size`` the pairs' head / tail vectors split into (ValueError if they don't)."""
    if zh.shape != zt.shape or zh.size(-1) % block_size:
        raise ValueError(f"group_bilinear: shapes {tuple(zh.shape)}, {tuple(zt.shape)} with block size {block_size}")
    return zh.size(-1) // block_size


def group_bilinear(zh: torch.Tensor, zt: torch.Tensor, block_size: int) -> torch.Tensor:
    """ATLOP's grouped bilinear features: zh and zt (pairs x emb) split into emb / block_size groups;
    within each group the outer product, all flattened to pairs x (emb * block_size)."""
    return _GroupOuter.apply(zh.contiguous(), zt.contiguous(), _groups(zh, zt, block_size), block_size)


#: torch 2.13's CPU bf16 matmul (oneDNN on AMX) dies of SIGFPE on an input of exactly this many elements when its rows
#: are 49,152 features or more wide: 32 x 49,152 (ATLOP's and DocuNet's released emb 768 x block 64), 24 x 65,536
#: (KD-DocRE's 1024 x 64), 16 x 98,304, ... (``benchmarks/check_bf16_rows.py``, ``results/bf16_rows_crash.json``).
_BF16_CRASH_ELEMENTS = 1_572_864


def _rows_linear(linear: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``linear(x)``, an input of :data:`_BF16_CRASH_ELEMENTS` elements on the CPU in two parts (same result)."""
    if x.device.type != "cpu" or x.numel() != _BF16_CRASH_ELEMENTS or x.size(0) < 2:
        return linear(x)
    return torch.cat([linear(x[:-1]), linear(x[-1:])])


def group_bilinear_classify(
    zh: torch.Tensor, zt: torch.Tensor, block_size: int, linear: nn.Linear, keep_features: bool = True, chunk: int = 256
) -> tuple[torch.Tensor | None, torch.Tensor]:
    """``(features, linear(features))`` for ``features = group_bilinear(zh, zt, block_size)``; ``keep_features=False``
    (prediction): ``(None, logits)`` computed ``chunk`` pairs at a time, each chunk's features staying in cache."""
    if keep_features:
        features = group_bilinear(zh, zt, block_size)
        return features, _rows_linear(linear, features)
    # One features buffer for every chunk: a fresh (chunk x emb * block) tensor per chunk is a fresh mapping
    # of pages the kernel must zero, which cost more than the products written into it (docs/speed.md).
    groups = _groups(zh, zt, block_size)
    buffer = zh.new_empty(min(chunk, zh.size(0)), groups, block_size, block_size)
    logits = []
    for h, t in zip(zh.split(chunk), zt.split(chunk)):
        out = buffer[: h.size(0)]
        torch.mul(h.reshape(-1, groups, block_size, 1), t.reshape(-1, groups, 1, block_size), out=out)
        logits.append(_rows_linear(linear, out.view(h.size(0), groups * block_size * block_size)))
    return None, torch.cat(logits) if len(logits) > 1 else logits[0]


def _pytorch_default(module: nn.Module) -> None:
    """``module.reset_parameters()`` through transformers' guarded init functions (weights already loaded stay)."""
    if isinstance(module, (nn.Linear, nn.Bilinear, nn.Conv2d)):
        fan_in = module.weight[0].numel()  # Linear: in_features; Bilinear: in1 x in2; Conv2d: in x kh x kw
        if isinstance(module, nn.Bilinear):
            bound = 1 / math.sqrt(module.weight.size(1))
            init.uniform_(module.weight, -bound, bound)
        else:
            init.kaiming_uniform_(module.weight, a=math.sqrt(5))
        if module.bias is not None:
            bound = 1 / math.sqrt(module.weight.size(1) if isinstance(module, nn.Bilinear) else fan_in)
            init.uniform_(module.bias, -bound, bound)
    elif isinstance(module, nn.Embedding):
        init.normal_(module.weight)
    elif isinstance(module, (nn.LayerNorm, nn.BatchNorm2d)):
        init.ones_(module.weight)
        init.zeros_(module.bias)
        if isinstance(module, nn.BatchNorm2d):
            init.zeros_(module.running_mean)
            init.ones_(module.running_var)
            init.zeros_(module.num_batches_tracked)


class DocREPreTrainedModel(PreTrainedModel):
    """A transformers encoder (``self.encoder``) plus the shared DocRE machinery; each family adds its head.
    Encoders on transformers' ``AttentionInterface`` run :data:`~.attention.FAST_ATTENTION`; others (DeBERTa), or
    any set to ``"eager"``, return ``output_attentions``."""

    #: Encode padded batches document by document: True, False, or None (default: in training on CPU, where
    #: padding costs time in proportion, and attention with dropout in its square).
    unpadded: bool | None = None

    config_class = DocREConfig
    base_model_prefix = "docre"
    supports_gradient_checkpointing = True
    _supports_sdpa = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every family is registered for ``AutoModel`` remote code: ``save_pretrained`` then copies its module
        # (and the sibling modules it imports) next to the weights and names it in config.json's ``auto_map``.
        super().__init_subclass__(**kwargs)
        cls.register_for_auto_class("AutoModel")

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.encoder, attn_implementation="eager", trust_remote_code=False)
        #: The layer whose attention rows the fast path computes (None: the encoder runs eager).
        self.rows_layer = last_attention_layer(self.encoder)
        if self.rows_layer is not None:
            self.encoder.set_attn_implementation(register_fast_attention())
        if config.window is None:
            config.window = encoder_window(config.encoder)

    def _init_weights(self, module: nn.Module) -> None:
        """The head's layers as ``config.head_initialization`` says: their PyTorch defaults, as every released code
        builds them (``"pytorch"``), or N(0, the encoder's initializer_range) with zero biases (``"normal"``)."""
        if self.config.head_initialization == "pytorch":
            _pytorch_default(module)
            return
        std = getattr(self.config.encoder, "initializer_range", None) or 0.02
        if isinstance(module, (nn.Linear, nn.Bilinear, nn.Conv2d, nn.Embedding)):
            init.normal_(module.weight, mean=0.0, std=std)
            if getattr(module, "bias", None) is not None:
                init.zeros_(module.bias)
        else:
            _pytorch_default(module)  # the norms: ones and zeros either way

    @property
    def settings(self) -> HeadSettings | None:
        """The family's typed settings (``config.head_settings``; None for a family without settings)."""
        return self.config.head_settings

    def family_settings(self, settings_class: type[HeadSettings]) -> Any:
        """``config.head_settings``, checked to be the ``settings_class`` this family's head is built from."""
        settings = self.config.head_settings
        if not isinstance(settings, HeadSettings):  # set after the config was built, e.g. a from_pretrained override
            settings = get_family(self.config.head_type).parse_settings(settings, self.config)
            self.config.head_settings = settings
        if not isinstance(settings, settings_class):
            raise ValueError(
                f"{type(self).__name__} is built from {settings_class.__name__} settings; head_type"
                f" {self.config.head_type!r} has {type(settings).__name__ if settings is not None else 'none'}"
            )
        return settings

    @classmethod
    def default_head_type(cls) -> str:
        """The first registered head_type this class implements (what ``from_encoder_pretrained`` builds by default)."""
        for family in families():
            if family.class_name == cls.__name__:
                return family.head_type
        raise ValueError(f"{cls.__name__} implements no registered head_type: pass head_type=...")

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
        """A new model (head randomly initialised) on the encoder ``encoder_name_or_path``; ``head``: :class:`DocREConfig`
        settings; ``encoder_kwargs``: for the encoder's ``from_pretrained`` (safetensors unless they say otherwise)."""
        encoder_kwargs = {"use_safetensors": True, **(encoder_kwargs or {}), "trust_remote_code": False}
        encoder = AutoModel.from_pretrained(encoder_name_or_path, attn_implementation="eager", **encoder_kwargs)
        if "head_type" not in head:
            head["head_type"] = cls.default_head_type()
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

    def encode(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, entity_pos: Sequence[EntityPos]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence output (B x L x H) and the last layer's attention rows at the mention starts (``M x heads x L``,
        in :func:`mention_index` order), for any length L: longer documents than ``config.window`` are read in
        overlapping windows in one encoder call, hidden states averaged and a mention's rows summed and renormalised
        where windows overlap (ATLOP's merge of two 512-token windows, generalised)."""
        lengths = self._padded_lengths(attention_mask)
        if lengths is None:
            return self._encode(input_ids, attention_mask, entity_pos)
        # One word-embedding lookup for the whole batch: the backward pass then builds one dense
        # vocabulary x hidden gradient per batch, not one per document (47 MB for MiniLM's table).
        embeds = self.encoder.get_input_embeddings()(input_ids)
        length = input_ids.size(1)
        hidden, rows = [], []
        for b, n in enumerate(lengths):
            h, r = self._encode(embeds[b : b + 1, :n], attention_mask[b : b + 1, :n], entity_pos[b : b + 1])
            hidden.append(torch.nn.functional.pad(h, (0, 0, 0, length - n)))
            rows.append(torch.nn.functional.pad(r, (0, length - n)))
        return torch.cat(hidden), torch.cat(rows)

    def _encode(
        self, inputs: torch.Tensor, attention_mask: torch.Tensor, entity_pos: Sequence[EntityPos]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`encode` of a padded batch; ``inputs`` are token ids (B x L) or word embeddings (B x L x E)."""
        idx = mention_index(entity_pos, inputs.device)
        window = int(self.config.window)
        batch, length = inputs.shape[:2]
        if length <= window:
            return self._encoder_rows(inputs, attention_mask, idx.doc, idx.pos)
        plans, win_inputs, win_mask = self._windows(inputs, attention_mask)
        # every (mention, window whose kept part holds it): the row in window coordinates
        by_doc: dict[int, list[int]] = {}
        for k, plan in enumerate(plans):
            by_doc.setdefault(plan[0], []).append(k)
        requests = []  # (window, position in it, mention, kept from j0, kept to j1, shift to document position)
        for m, (b, p) in enumerate(zip(idx.doc.tolist(), idx.pos.tolist())):
            for k in by_doc.get(b, ()):
                _, _, _, j0, j1, p0 = plans[k]
                if p0 <= p < p0 + (j1 - j0):
                    requests.append((k, p - p0 + j0, m, j0, j1, p0 - j0))
        device = inputs.device
        req_win, req_pos, req_mention, j0s, j1s, shifts = _long(requests, device).view(-1, 6).T.contiguous()
        hidden, win_rows = self._encoder_rows(win_inputs, win_mask, req_win, req_pos)
        sequence_output = self._merge_hidden(hidden, plans, batch, length)
        heads, width = win_rows.size(1), win_rows.size(-1)
        col = torch.arange(width, device=device)
        kept = (col >= j0s.unsqueeze(1)) & (col < j1s.unsqueeze(1))  # P x W: the window's kept columns
        target = torch.where(kept, col + shifts.unsqueeze(1), length)  # column in the document; dropped -> L
        placed = win_rows.new_zeros((len(requests), heads, length + 1)).scatter_add(
            2, target.unsqueeze(1).expand(-1, heads, -1), win_rows * kept.unsqueeze(1).to(win_rows.dtype)
        )
        rows = win_rows.new_zeros((idx.pos.numel(), heads, length + 1)).index_add(0, req_mention, placed)
        rows = rows[..., :length]
        return sequence_output, rows / (rows.sum(-1, keepdim=True) + 1e-10)

    def _padded_lengths(self, attention_mask: torch.Tensor) -> list[int] | None:
        """The documents' lengths when the batch should be encoded one document at a time (:attr:`unpadded`):
        more than one document, some padding, and right padding only (a prefix mask); else None."""
        unpadded = self.unpadded
        if unpadded is None:
            unpadded = self.training and attention_mask.device.type == "cpu"
        batch, length = attention_mask.shape
        if not unpadded or batch < 2:
            return None
        counts = attention_mask.sum(1)
        if bool((counts == length).all()):
            return None
        prefix = torch.arange(length, device=attention_mask.device) < counts.unsqueeze(1)
        if not torch.equal(prefix, attention_mask.bool()):
            return None
        return [int(n) for n in counts.tolist()]

    def _encoder_rows(
        self, inputs: torch.Tensor, attention_mask: torch.Tensor, doc: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One encoder call: last hidden state and the last layer's attention rows ``(doc[i], pos[i])``."""
        given = {"inputs_embeds" if inputs.dim() == 3 else "input_ids": inputs, "attention_mask": attention_mask}
        if self.encoder.config._attn_implementation == FAST_ATTENTION:
            # The request travels as a keyword argument down to the attention function, so that a layer
            # recomputed by gradient checkpointing recomputes the same rows.
            request = RowRequest(self.rows_layer, doc, pos)
            hidden = self.encoder(**given, envre_row_request=request).last_hidden_state
            if request.rows is None:
                raise RuntimeError(f"{type(self.encoder).__name__} never ran the attention of layer {self.rows_layer}")
            rows = request.rows
        else:
            out = self.encoder(**given, output_attentions=True)
            hidden, rows = out.last_hidden_state, out.attentions[-1][doc, :, pos]
        if hidden.requires_grad and not rows.requires_grad and rows.numel():
            raise RuntimeError(
                "the encoder's last layer ran without autograd, which cuts its attention rows (read by the DocRE head)"
                " from the graph: reentrant gradient checkpointing is not supported; checkpoint with"
                ' {"use_reentrant": False}, transformers\' default'
            )
        return hidden, rows

    def _windows(
        self, inputs: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[list[tuple[int, int, int, int, int, int]], torch.Tensor, torch.Tensor]:
        """The window plan (:meth:`_window_plan`) and the windows' inputs and mask."""
        window = int(self.config.window)
        lengths = [int(n) for n in attention_mask.sum(1).tolist()]  # one device sync for the whole batch
        plans = self._window_plan(lengths, window)
        n_windows = len(plans)
        win = inputs.new_full((n_windows, window, *inputs.shape[2:]), self.config.encoder.pad_token_id or 0)
        win_mask = attention_mask.new_zeros((n_windows, window))
        for k, (b, s, n_win, _, _, _) in enumerate(plans):
            n = lengths[b]
            if n <= window:
                win[k, :n] = inputs[b, :n]
            else:
                win[k, 0] = inputs[b, 0]
                win[k, 1 : n_win - 1] = inputs[b, 1 + s : s + n_win - 1]
                win[k, n_win - 1] = inputs[b, n - 1]
            win_mask[k, :n_win] = 1
        return plans, win, win_mask

    @staticmethod
    def _merge_hidden(hidden: torch.Tensor, plans: Sequence[tuple[int, ...]], batch: int, length: int) -> torch.Tensor:
        """Windows' hidden states back in document positions, averaged where windows overlap."""
        sequence_output = hidden.new_zeros((batch, length, hidden.size(-1)))
        counts = hidden.new_zeros((batch, length, 1))
        for k, (b, _, _, j0, j1, p0) in enumerate(plans):
            p1 = p0 + (j1 - j0)
            sequence_output[b, p0:p1] += hidden[k, j0:j1]
            counts[b, p0:p1] += 1
        return sequence_output / counts.clamp(min=1)

    @staticmethod
    def _window_plan(lengths: Sequence[int], window: int) -> list[tuple[int, int, int, int, int, int]]:
        """Windows as (doc, content start s, window length, kept from j0, kept to j1, document position of j0): a
        longer document than ``window`` keeps its first and last special tokens around ``window - 2`` content tokens
        per window, in the fewest evenly spread windows that overlap by at least half a window."""
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

    def pair_features(
        self,
        sequence_output: torch.Tensor,
        attention: torch.Tensor,
        entity_pos: Sequence[EntityPos],
        hts: Sequence[Sequence[Sequence[int]]],
        pair_budget: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Head embeddings, tail embeddings and localized contexts of every pair (each sum_pairs x H); the
        contexts ``pair_budget`` pairs at a time."""
        emb, att, per_doc = pool_entities(sequence_output, attention, entity_pos)
        h, t, doc = hts_index(hts, per_doc, sequence_output.device)
        chunks = pair_chunks(h.numel(), pair_budget)
        contexts = [
            localized_context(sequence_output, pair_attention(att, h[c], t[c], doc[c], per_doc), doc[c]) for c in chunks
        ]
        return emb[h], emb[t], contexts[0] if len(contexts) == 1 else torch.cat(contexts)

    # ------------------------------------------------------------------ forward

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        entity_pos: Sequence[EntityPos],
        hts: Sequence[Sequence[Sequence[int]]],
        labels: torch.Tensor | None = None,
        output_pair_representations: bool = True,
        pair_budget: int | None = None,
        **unused: Any,
    ) -> DocREModelOutput:
        """Logits for every pair of ``hts`` (documents concatenated in batch order) by the family's :meth:`pair_logits`,
        its ``loss_function`` given ``labels``; ``pair_budget``: at most that many pairs at a time where it can."""
        sequence_output, attention = self.encode(input_ids, attention_mask, entity_pos)
        logits, features, factors = self.pair_logits(
            sequence_output, attention, entity_pos, hts, output_pair_representations, pair_budget
        )
        loss = None if labels is None else self.loss_function(logits, labels.to(logits.device))
        return DocREModelOutput(loss=loss, logits=logits, pair_representations=features, bilinear_factors=factors)

    def pair_logits(
        self, sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[EntityPos],
        hts: Sequence[Sequence[Sequence[int]]], keep_features: bool, pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        """The family's head over :meth:`encode`'s outputs: ``(logits, pair_representations, bilinear_factors)``
        (:class:`DocREModelOutput`); ``keep_features=False``: no pair representations are needed."""
        raise NotImplementedError(f"{type(self).__name__} defines no pair_logits")

    # ------------------------------------------------------------------ decoding

    #: How the family decides that relation ``r`` holds: ``logit_r > logit_0`` (False: class 0 is a learned
    #: per-pair threshold, ATLOP and the families after it) or ``logit_r > 0`` (True: DocuNet's released balanced
    #: loss, where class 0 is an ordinary target and the none class takes one of the ``top_k`` places).
    fixed_threshold: bool = False

    def relation_margins(self, logits: torch.Tensor) -> torch.Tensor:
        """``logit_r`` minus the family's threshold for every relation ``r >= 1`` (sum_pairs x num_labels-1):
        positive exactly where ``r`` is predicted (what EVRT's L_pcr compares)."""
        return logits[:, 1:] if self.fixed_threshold else threshold_margins(logits)

    def relation_probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """P_r (sum_pairs x num_labels-1) that relation r holds: ``sigmoid`` of :meth:`relation_margins` (for the
        class-0 threshold the two-way softmax against it), > 0.5 exactly where r is predicted."""
        return torch.sigmoid(self.relation_margins(logits))

    def decode(self, logits: torch.Tensor, top_k: int | None = None, threshold: float | None = None) -> torch.Tensor:
        """Multi-hot predictions: r where its margin is positive (``threshold``: where :meth:`relation_probabilities`
        exceeds it), at most ``top_k`` per pair (``config.top_k`` by default); class 0 for pairs with no relation."""
        top_k = self.config.top_k if top_k is None else top_k
        return threshold_decode(logits, top_k, threshold, fixed_threshold=self.fixed_threshold)


def threshold_decode(
    logits: torch.Tensor, top_k: int | None = None, threshold: float | None = None, fixed_threshold: bool = False
) -> torch.Tensor:
    """See :meth:`DocREPreTrainedModel.decode`: the ``top_k`` places go to the relations with the highest logits
    (with ``fixed_threshold``, DocuNet's released rule, to the highest of all classes, class 0 included)."""
    if threshold is not None and not 0 < threshold < 1:
        raise ValueError(f"threshold must be a probability strictly between 0 and 1, got {threshold}")
    # sigmoid(margin) > threshold  <=>  margin > logit(threshold); 0 for the default
    cut = 0.0 if threshold is None else math.log(threshold / (1 - threshold))
    relations = logits[:, 1:]
    mask = relations > (cut if fixed_threshold else logits[:, :1] + cut)
    ranked = logits if fixed_threshold else relations
    if top_k is not None and top_k > 0 and ranked.size(1) > top_k:
        mask = mask & (relations >= torch.topk(ranked, top_k, dim=1).values[:, -1:])
    out = torch.zeros_like(logits)
    out[:, 1:] = mask.to(logits.dtype)
    out[:, 0] = (~mask.any(1)).to(logits.dtype)
    return out

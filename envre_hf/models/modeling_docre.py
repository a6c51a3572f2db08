"""The DocRE model base, laid out as transformers' BERT: a thin ``PreTrainedModel`` (config, initialisation,
save / load, ``forward``) calling the encoder module (:class:`~.encoder.DocREEncoder`: windows, entity embeddings
and attention) and its family's head (``pair_logits`` of each ``modeling_<family>.py``); and the pair operations the
heads share. Shipped with saved models (remote code): imports only torch, transformers and sibling modules."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_docre import DocREConfig, encoder_window
from .encoder import DocREEncoder, DocREEncoderOutput, EntityPos
from .losses import threshold_margins
from .registry import HeadSettings, families, get_family, head_class


@dataclass
class DocREModelOutput(ModelOutput):
    """A DocRE model's output; ``P``: the pairs of ``hts``, the documents' one after another.

    ``loss``: scalar, given ``labels``. ``logits``: P x num_labels (class 0: no relation / threshold).
    ``pair_representations``: P x the family's width, what the classifier reads (None under
    ``output_pair_representations=False``, as in prediction). ``bilinear_factors``: ``(zh, zt)``, each P x
    ``emb_size``, set by the group-bilinear families, so that EVRT's L_rcr is computed in closed form from them."""

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    pair_representations: torch.FloatTensor | None = None
    bilinear_factors: tuple[torch.FloatTensor, torch.FloatTensor] | None = None


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
    then picked into the result: the gathered form materialises two sum_pairs x heads x L tensors, ~20x slower on
    CPU. Transient memory: about two sum_pairs x L tensors (the encoder stores ``entity_att`` length-major, so a
    document's ``L x E x heads`` view needs no copy)."""
    length = entity_att.size(-1)
    heads = entity_att.size(1)
    if h_idx.numel() == 0:
        return entity_att.new_zeros((0, length))
    offsets = [0]
    for n in entities_per_doc:
        offsets.append(offsets[-1] + int(n))
    starts = torch.tensor(offsets[:-1], dtype=torch.long, device=h_idx.device)
    h_local, t_local = h_idx - starts[pair_doc], t_idx - starts[pair_doc]
    out = None
    for b, n in enumerate(entities_per_doc):
        sel = (pair_doc == b).nonzero(as_tuple=True)[0] if n else h_idx[:0]
        if sel.numel() == 0:
            continue
        # L x E x heads, contiguous: bmm on a permuted view copies every one of its L small matrices
        a = entity_att[offsets[b] : offsets[b] + n].permute(2, 0, 1).contiguous()
        used, head_row = torch.unique(h_local[sel], return_inverse=True)
        products = torch.bmm(a[:, used], a.transpose(1, 2))  # L x U x E: sum over heads
        picked = products[:, head_row, t_local[sel]]  # L x pairs
        del products
        if out is None:  # bmm's dtype (bf16 under autocast)
            out = picked.new_empty((h_idx.numel(), length))
        out.index_copy_(0, sel, picked.transpose(0, 1))
    return out.div_(heads)


def localized_context(
    sequence_output: torch.Tensor, ht: torch.Tensor, pair_doc: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """ATLOP's localized context of every pair (sum_pairs x H): tokens weighted by ``ht`` (:func:`pair_attention`)
    normalised to sum to one (``ht / (sum + eps)``), one product per run of pairs of one document (padding
    documents to the most pairs wasted most FLOPs; a run is a view of ``ht``, never a copy)."""
    hidden = sequence_output.size(-1)
    if pair_doc.numel() == 0:
        return sequence_output.new_zeros((0, hidden))
    ht = ht / (ht.sum(1, keepdim=True) + eps)
    docs, counts = torch.unique_consecutive(pair_doc, return_counts=True)
    # as one-matrix bmms: benchmarks/bench_roofline.py counts aten::bmm as pair attention + context
    parts = [
        torch.bmm(weights.unsqueeze(0), sequence_output[b : b + 1])[0]  # pairs x H
        for b, weights in zip(docs.tolist(), ht.split(counts.tolist()))
    ]
    return parts[0] if len(parts) == 1 else torch.cat(parts)


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


def classify_chunks(
    pairs: Iterable[tuple[torch.Tensor, torch.Tensor]], block_size: int, linear: nn.Linear, keep_features: bool
) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
    """``(logits, pair_representations, bilinear_factors)`` of the group-bilinear classifier over chunks of pairs
    ``(zh, zt)``; without ``keep_features`` (prediction) only the logits are kept, so that memory holds one
    chunk's features and factors at a time."""
    parts = []
    for zh, zt in pairs:
        features, logits = group_bilinear_classify(zh, zt, block_size, linear, keep_features)
        parts.append((logits, features, zh, zt) if keep_features else (logits,))
    if len(parts) == 1:
        logits, *kept = parts[0]
    else:
        logits, *kept = (torch.cat(x) for x in zip(*parts))
    return (logits, kept[0], (kept[1], kept[2])) if kept else (logits, None, None)


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
    """A DocRE model: the encoder module (``self.encoder``, :class:`~.encoder.DocREEncoder`) and the family's head,
    which each family adds (its layers, ``pair_logits`` and ``loss_function``)."""

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
        if config.window is None:
            config.window = encoder_window(config.encoder)
        self.encoder = DocREEncoder(config)

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
        return self.encoder.transformer.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.encoder.transformer.set_input_embeddings(value)

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
        missing, unexpected = model.encoder.transformer.load_state_dict(encoder.state_dict(), strict=False)
        if missing or unexpected:
            raise ValueError(f"encoder weights do not fit: missing {missing[:5]}, unexpected {unexpected[:5]}")
        return model

    # ------------------------------------------------------------------ entities and pairs

    def pair_features(
        self, encoded: DocREEncoderOutput, entity_pos: Sequence[EntityPos], hts: Sequence[Sequence[Sequence[int]]],
        pair_budget: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Head embeddings, tail embeddings and localized contexts of every pair (each sum_pairs x H); the
        contexts ``pair_budget`` pairs at a time."""
        emb, att, per_doc = encoded.entity_embeddings, encoded.entity_attention, [len(e) for e in entity_pos]
        sequence_output = encoded.last_hidden_state
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
        encoded = self.encoder(input_ids, attention_mask, entity_pos)
        logits, features, factors = self.pair_logits(encoded, entity_pos, hts, output_pair_representations, pair_budget)
        loss = None if labels is None else self.loss_function(logits, labels.to(logits.device))
        return DocREModelOutput(loss=loss, logits=logits, pair_representations=features, bilinear_factors=factors)

    def pair_logits(
        self, encoded: DocREEncoderOutput, entity_pos: Sequence[EntityPos], hts: Sequence[Sequence[Sequence[int]]],
        keep_features: bool, pair_budget: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        """The family's head over the encoder's output: ``(logits, pair_representations, bilinear_factors)``
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

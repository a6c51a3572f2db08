"""The DocRE encoder module: a transformers encoder read in windows, its hidden states merged back into documents and
the last layer's attention at the mention starts pooled into one row per entity. Memory and time stay linear in the
document's length: no ``length x length`` (or ``mentions x length``) tensor is ever built (docs/speed.md). Shipped
with saved models (remote code): imports only torch, transformers and sibling modules."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import AutoModel
from transformers.utils import ModelOutput

from .attention import FAST_ATTENTION, RowRequest, last_attention_layer, register_fast_attention
from .configuration_docre import DocREConfig

EntityPos = Sequence[Sequence[Sequence[int]]]  # per entity, its mentions' (start, end)
#: Saved checkpoints name the encoder's tensors ``encoder.<name>`` (every DocRE model ever saved); in the model they
#: are ``encoder.transformer.<name>``.
SAVED_ENCODER = r"^encoder\.(?!transformer\.)"
#: A window: (doc, content start s, window length, kept from j0, kept to j1, document position of j0).
Plan = tuple[int, int, int, int, int, int]


@dataclass
class DocREEncoderOutput(ModelOutput):
    """What the family heads read. ``last_hidden_state``: batch x length x hidden, averaged where windows overlap.
    ``entity_embeddings``: entities x hidden, logsumexp over each entity's mention starts (zeros for an entity left
    without mentions). ``entity_attention``: entities x heads x length, the mean over its mentions of the last
    layer's attention row at each mention start (rows of a document read in several windows summed over them and
    renormalised, as ATLOP merges its two windows). Entities are batch-global: each document's, one after another."""

    last_hidden_state: torch.FloatTensor | None = None
    entity_embeddings: torch.FloatTensor | None = None
    entity_attention: torch.FloatTensor | None = None


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


def entity_embeddings(sequence_output: torch.Tensor, idx: MentionIndex) -> torch.Tensor:
    """Batch-flat entity embeddings (E x H): logsumexp over each entity's mention starts; zeros without mentions."""
    n_entities = sum(idx.entities_per_doc)
    hidden = sequence_output.size(-1)
    padded = sequence_output.new_full((n_entities, idx.max_mentions, hidden), float("-inf"))
    padded = padded.index_put((idx.entity, idx.slot), sequence_output[idx.doc, idx.pos])
    emb = torch.logsumexp(padded, dim=1)
    has_mention = torch.zeros(n_entities, dtype=torch.bool, device=emb.device).index_fill(0, idx.entity, True)
    return torch.where(has_mention.unsqueeze(-1), emb, torch.zeros_like(emb))


def window_plan(lengths: Sequence[int], window: int) -> list[Plan]:
    """Windows (:data:`Plan`) of documents of ``lengths``: a longer document than ``window`` keeps its first and last
    special tokens around ``window - 2`` content tokens per window, in the fewest evenly spread windows that overlap
    by at least half a window; a shorter one is one window of its length."""
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


@dataclass
class Windows:
    """The K encoder windows of a batch (W columns): the document position each column reads and the columns the
    document keeps (one contiguous range per window; the kept ranges of a document's windows overlap)."""

    doc: torch.Tensor  # (K,) document of each window
    source: torch.Tensor  # (K, W) document position read at each column (0 past the window's end)
    mask: torch.Tensor  # (K, W) the windows' attention mask
    kept: torch.Tensor  # (K, W) bool: the columns the document takes from this window
    start: torch.Tensor  # (K,) first kept document position
    stop: torch.Tensor  # (K,) one past the last kept document position
    shift: torch.Tensor  # (K,) document position minus column, over the kept columns
    width: list[int]  # each window's length
    several: torch.Tensor  # (B,) bool: documents read in more than one window

    @classmethod
    def build(cls, attention_mask: torch.Tensor, window: int, lengths: list[int] | None = None) -> Windows:
        """Windows of a padded batch: each row as it is when it fits in ``window`` (any padding), else the
        :func:`window_plan` of the documents' lengths (right padding); ``lengths``: of documents read one by one."""
        batch, length = attention_mask.shape
        device = attention_mask.device
        if lengths is None and length <= window:
            lengths = [length] * batch
        elif lengths is None:
            lengths = [int(n) for n in attention_mask.sum(1).tolist()]  # one device sync for the whole batch
        doc, s, width, j0, j1, p0 = _long(window_plan(lengths, window), device).view(-1, 6).T
        several = torch.bincount(doc, minlength=batch) > 1
        col = torch.arange(int(width.max()), device=device)
        inside = col < width.unsqueeze(1)
        source = s.unsqueeze(1) + col
        source[:, 0] = 0  # a window of a long document: the document's [CLS], content from s + 1, its [SEP]
        last = several[doc].unsqueeze(1) & (col == (width - 1).unsqueeze(1))
        source = torch.where(last, _long(lengths, device)[doc].unsqueeze(1) - 1, source)
        source = torch.where(inside, source, 0)
        mask = attention_mask[doc.unsqueeze(1), source] * inside
        kept = (col >= j0.unsqueeze(1)) & (col < j1.unsqueeze(1))
        return cls(doc, source, mask, kept, p0, p0 + j1 - j0, s, width.tolist(), several)

    def groups(self, per_document: bool, tokens: int) -> list[tuple[int, int]]:
        """Windows ``[k0, k1)`` read in one encoder call: at most ``tokens`` window columns a call, and with
        ``per_document`` one document's windows only."""
        bounds, k0 = [], 0
        most = max(1, tokens // max(self.width))
        docs = self.doc.tolist()
        for k in range(1, len(docs) + 1):
            if k == len(docs) or k - k0 == most or (per_document and docs[k] != docs[k0]):
                bounds.append((k0, k))
                k0 = k
        return bounds

    def inputs(self, values: torch.Tensor, k0: int, k1: int, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Windows ``[k0, k1)`` of ``values`` (token ids B x L, or word embeddings B x L x E) and their mask, as wide
        as the widest of them; ids past a window's end are ``pad``, embeddings zero."""
        width = max(self.width[k0:k1])
        source = self.source[k0:k1, :width]
        inside = torch.arange(width, device=source.device) < source.new_tensor(self.width[k0:k1]).unsqueeze(1)
        picked = values[self.doc[k0:k1].unsqueeze(1), source]
        if picked.dim() == 3:
            return picked * inside.unsqueeze(-1).to(picked.dtype), self.mask[k0:k1, :width]
        return torch.where(inside, picked, pad), self.mask[k0:k1, :width]

    def targets(self, window: torch.Tensor, width: int, length: int) -> torch.Tensor:
        """``len(window) x width``: the flat position (``doc * length + position``) of each kept column of each
        ``window``; ``batch * length`` (one past the end) for the columns not kept."""
        flat = self.doc[window].unsqueeze(1) * length + self.source[window, :width]
        return torch.where(self.kept[window, :width], flat, self.doc.new_tensor(int(self.several.numel()) * length))

    def add_hidden(self, total: torch.Tensor | None, states: torch.Tensor, k0: int, length: int) -> torch.Tensor:
        """``total`` (batch * length + 1 rows, the last for the columns no document keeps; made at the first call)
        plus the kept hidden states of windows ``k0, k0 + 1, ...`` (``states``: windows x width x H)."""
        if total is None:
            total = states.new_zeros((int(self.several.numel()) * length + 1, states.size(-1)))
        target = self.targets(torch.arange(k0, k0 + states.size(0), device=states.device), states.size(1), length)
        return total.index_add_(0, target.reshape(-1), states.reshape(-1, states.size(-1)))

    def average(self, total: torch.Tensor, length: int) -> torch.Tensor:
        """:meth:`add_hidden`'s sums over every window as batch x length x H: averaged where windows overlap (zeros
        where none keeps a position: padding)."""
        every = self.targets(torch.arange(len(self.width), device=total.device), max(self.width), length).reshape(-1)
        counts = torch.zeros(total.size(0), dtype=total.dtype, device=total.device)
        counts.index_add_(0, every, torch.ones_like(every, dtype=total.dtype))
        return (total / counts.clamp(min=1).unsqueeze(1))[:-1].view(int(self.several.numel()), length, -1)

    def requests(self, idx: MentionIndex) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(window, column, mention)`` of every mention in every window that keeps its position, ordered by window
        (each window's kept range is found by binary search: no mentions x windows table)."""
        span = int(self.stop.max()) + 1 if self.stop.numel() else 1
        key = idx.doc * span + idx.pos
        first = torch.searchsorted(self.doc * span + self.stop, key, right=True)  # the first window ending past it
        end = torch.searchsorted(self.doc * span + self.start, key, right=True)  # the windows starting at or before
        count = (end - first).clamp(min=0)
        mention = torch.repeat_interleave(torch.arange(key.numel(), device=key.device), count)
        rank = torch.arange(mention.numel(), device=key.device) - torch.repeat_interleave(count.cumsum(0) - count, count)
        window = first[mention] + rank
        order = torch.argsort(window, stable=True)
        window, mention = window[order], mention[order]
        return window, idx.pos[mention] - self.shift[window], mention


def pool_attention(
    parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], windows: Windows, idx: MentionIndex, length: int,
    heads: int,
) -> torch.Tensor:
    """Entity attention (E x heads x ``length``) from the mention rows of the windows, ``parts``: per encoder call
    ``(rows R x heads x W, window, mention)``. Each (window, mention) row is scattered straight into its entity: the
    rows of a mention read in several windows are summed over them and renormalised, then averaged over the
    entity's mentions, without ever holding a mentions x length row."""
    n_entities = sum(idx.entities_per_doc)
    dtype = parts[0][0].dtype if parts else torch.float32
    total = torch.zeros((idx.pos.numel(), heads), dtype=dtype, device=idx.pos.device)
    for rows, window, mention in parts:
        total.index_add_(0, mention, (rows * windows.kept[window, : rows.size(-1)].unsqueeze(1)).sum(-1))
    merged = windows.several[idx.doc].unsqueeze(1)
    norm = torch.where(merged, total + 1e-10, torch.ones_like(total))  # M x heads
    pooled = total.new_zeros(((length + 1) * n_entities, heads))  # length-major (what pair_attention reads)
    for rows, window, mention in parts:
        width = rows.size(-1)
        column = torch.where(windows.kept[window, :width], windows.source[window, :width], length)
        index = column * n_entities + idx.entity[mention].unsqueeze(1)
        values = (rows / norm[mention].unsqueeze(-1)).transpose(1, 2)  # R x W x heads
        pooled.index_add_(0, index.reshape(-1), values.reshape(-1, heads))
    counts = torch.bincount(idx.entity, minlength=n_entities).clamp(min=1).to(dtype).view(1, -1, 1)
    return pooled.view(length + 1, n_entities, heads)[:length].div_(counts).permute(1, 2, 0)


def register_saved_names() -> None:
    """Register the checkpoints' layout with transformers' key renaming: ``from_pretrained`` reads ``encoder.<name>``
    as ``encoder.transformer.<name>`` and ``save_pretrained`` writes it back, so files keep the one layout."""
    from transformers.conversion_mapping import register_checkpoint_conversion_mapping
    from transformers.core_model_loading import WeightRenaming

    renaming = WeightRenaming(SAVED_ENCODER, "encoder.transformer.")
    register_checkpoint_conversion_mapping(DocREConfig.model_type, [renaming], overwrite=True)


def _saved_names_on_load(module: nn.Module, state_dict: dict[str, Any], prefix: str, *_: Any) -> None:
    """The same renaming for ``load_state_dict`` of a checkpoint's tensors (``Trainer``'s resume and best model)."""
    for key in [k for k in state_dict if k.startswith(prefix) and not k.startswith(f"{prefix}transformer.")]:
        state_dict[f"{prefix}transformer.{key[len(prefix):]}"] = state_dict.pop(key)


class DocREEncoder(nn.Module):
    """The transformers encoder (``transformer``) read in :class:`Windows`, one path for every input: a batch that
    fits in the window is one window per row; a longer document is read in overlapping windows, at most
    ``tokens_per_call`` window tokens an encoder call (memory linear in length). Encoders on transformers'
    ``AttentionInterface`` run :data:`~.attention.FAST_ATTENTION` (SDPA, and the last layer's rows at the mention
    starts only); others (DeBERTa), or any set to ``"eager"``, return ``output_attentions``."""

    #: Encode padded batches document by document: True, False, or None (default: in training on CPU, where
    #: padding costs time in proportion, and attention with dropout in its square).
    unpadded: bool | None = None
    #: Most window tokens (windows x width) in one encoder call.
    tokens_per_call: int = 8192

    def __init__(self, config: DocREConfig):
        super().__init__()
        self.config = config
        self.transformer = AutoModel.from_config(config.encoder, attn_implementation="eager", trust_remote_code=False)
        #: The layer whose attention rows the fast path computes (None: the encoder runs eager).
        self.rows_layer = last_attention_layer(self.transformer)
        if self.rows_layer is not None:
            self.transformer.set_attn_implementation(register_fast_attention())
        register_saved_names()
        self.register_load_state_dict_pre_hook(_saved_names_on_load)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, entity_pos: Sequence[EntityPos]
    ) -> DocREEncoderOutput:
        """Hidden states, entity embeddings and entity attention (:class:`DocREEncoderOutput`) of a padded batch."""
        idx = mention_index(entity_pos, input_ids.device)
        lengths = self.unpadded_lengths(attention_mask)
        windows = Windows.build(attention_mask, int(self.config.window), lengths)
        # Documents read one by one share one word-embedding lookup: the backward pass then builds one dense
        # vocabulary x hidden gradient per batch, not one per document (47 MB for MiniLM's table).
        inputs = input_ids if lengths is None else self.transformer.get_input_embeddings()(input_ids)
        length, pad = input_ids.size(1), self.config.encoder.pad_token_id or 0
        window, column, mention = windows.requests(idx)
        hidden, parts = None, []
        for k0, k1 in windows.groups(lengths is not None, self.tokens_per_call):
            lo, hi = torch.searchsorted(window, window.new_tensor([k0, k1])).tolist()
            states, rows = self._encoder_rows(*windows.inputs(inputs, k0, k1, pad), window[lo:hi] - k0, column[lo:hi])
            hidden = windows.add_hidden(hidden, states, k0, length)
            parts.append((rows, window[lo:hi], mention[lo:hi]))
        sequence_output = windows.average(hidden, length)
        heads = int(self.config.num_attention_heads)
        return DocREEncoderOutput(
            last_hidden_state=sequence_output,
            entity_embeddings=entity_embeddings(sequence_output, idx),
            entity_attention=pool_attention(parts, windows, idx, length, heads),
        )

    def unpadded_lengths(self, attention_mask: torch.Tensor) -> list[int] | None:
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
        if self.transformer.config._attn_implementation == FAST_ATTENTION:
            # The request travels as a keyword argument down to the attention function, so that a layer
            # recomputed by gradient checkpointing recomputes the same rows.
            request = RowRequest(self.rows_layer, doc, pos)
            hidden = self.transformer(**given, envre_row_request=request).last_hidden_state
            if request.rows is None:
                raise RuntimeError(f"{type(self.transformer).__name__} never ran the attention of layer {self.rows_layer}")
            rows = request.rows
        else:
            out = self.transformer(**given, output_attentions=True)
            hidden, rows = out.last_hidden_state, out.attentions[-1][doc, :, pos]
        if hidden.requires_grad and not rows.requires_grad and rows.numel():
            raise RuntimeError(
                "the encoder's last layer ran without autograd, which cuts its attention rows (read by the DocRE head)"
                " from the graph: reentrant gradient checkpointing is not supported; checkpoint with"
                ' {"use_reentrant": False}, transformers\' default'
            )
        return hidden, rows

"""The reference the DocRE encoder is tested against: transformers' eager attention returning every layer's
attention, the last layer's full ``B x heads x L x L`` probabilities merged over windows as ATLOP merges its
two 512-token windows (blocks summed, rows renormalised), and only then the mention rows picked."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

from envre_hf.models.modeling_docre import mention_index


@contextlib.contextmanager
def eager(model) -> Iterator[None]:
    """Inside the block the model's encoder runs transformers' eager attention (its ``output_attentions`` route)."""
    previous = model.encoder.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.set_attn_implementation(previous)


def full_attention(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states (B x L x H) and the last layer's full attention (B x heads x L x L) of eager attention."""
    window = int(model.config.window)
    batch, length = input_ids.shape
    with eager(model):
        if length <= window:
            out = model.encoder(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
            return out.last_hidden_state, out.attentions[-1]
        plans, win_ids, win_mask = model._windows(input_ids, attention_mask)
        out = model.encoder(input_ids=win_ids, attention_mask=win_mask, output_attentions=True)
    hidden, att = out.last_hidden_state, out.attentions[-1]
    attention = att.new_zeros((batch, att.size(1), length, length))
    for k, (b, _, _, j0, j1, p0) in enumerate(plans):
        p1 = p0 + (j1 - j0)
        attention[b, :, p0:p1, p0:p1] += att[k, :, j0:j1, j0:j1]
    attention = attention / (attention.sum(-1, keepdim=True) + 1e-10)
    return model._merge_hidden(hidden, plans, batch, length), attention


def reference_encode(model, input_ids, attention_mask, entity_pos) -> tuple[torch.Tensor, torch.Tensor]:
    """What ``model.encode`` must return: the reference's hidden states and its full attention's mention rows."""
    sequence_output, attention = full_attention(model, input_ids, attention_mask)
    idx = mention_index(entity_pos, input_ids.device)
    return sequence_output, attention[idx.doc, :, idx.pos]


@contextlib.contextmanager
def reference_encoding(model) -> Iterator[None]:
    """Inside the block the model's forward encodes with :func:`reference_encode` (its head unchanged)."""
    model.encode = functools.partial(reference_encode, model)
    try:
        yield
    finally:
        del model.encode

"""The reference the DocRE encoder module is tested against: transformers' eager attention returning every layer's
attention, the last layer's full ``B x heads x L x L`` probabilities merged over windows as ATLOP merges its two
512-token windows (blocks summed, rows of a document read in several windows renormalised), and only then, in plain
loops, each entity's embedding (logsumexp of its mention starts) and attention (the mean of its mention rows)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

from envre_hf.models.encoder import DocREEncoderOutput, window_plan


@contextlib.contextmanager
def eager(model) -> Iterator[None]:
    """Inside the block the model's encoder runs transformers' eager attention (its ``output_attentions`` route)."""
    previous = model.encoder.transformer.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.set_attn_implementation(previous)


def _windows(model, input_ids: torch.Tensor, lengths: list[int]) -> tuple[list, torch.Tensor, torch.Tensor]:
    """The window plan and each window's ids and mask, one window at a time: [CLS] + its content + [SEP]."""
    window = int(model.config.window)
    plans = window_plan(lengths, window)
    ids = torch.full((len(plans), window), model.config.encoder.pad_token_id or 0, dtype=torch.long)
    mask = torch.zeros((len(plans), window), dtype=torch.long)
    for k, (b, s, n_win, _, _, _) in enumerate(plans):
        n = lengths[b]
        row = input_ids[b, :n] if n <= window else torch.cat([input_ids[b, :1], input_ids[b, 1 + s : s + n_win - 1],
                                                               input_ids[b, n - 1 : n]])
        ids[k, :n_win], mask[k, :n_win] = row, 1
    return plans, ids, mask


def full_attention(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states (B x L x H) and the last layer's full attention (B x heads x L x L) of eager attention."""
    window = int(model.config.window)
    batch, length = input_ids.shape
    transformer = model.encoder.transformer
    with eager(model):
        if length <= window:
            out = transformer(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
            return out.last_hidden_state, out.attentions[-1]
        lengths = attention_mask.sum(1).tolist()
        plans, win_ids, win_mask = _windows(model, input_ids, lengths)
        out = transformer(input_ids=win_ids, attention_mask=win_mask, output_attentions=True)
    hidden, att = out.last_hidden_state, out.attentions[-1]
    sequence_output = hidden.new_zeros((batch, length, hidden.size(-1)))
    counts = hidden.new_zeros((batch, length, 1))
    attention = att.new_zeros((batch, att.size(1), length, length))
    for k, (b, _, _, j0, j1, p0) in enumerate(plans):
        p1 = p0 + (j1 - j0)
        sequence_output[b, p0:p1] += hidden[k, j0:j1]
        counts[b, p0:p1] += 1
        attention[b, :, p0:p1, p0:p1] += att[k, :, j0:j1, j0:j1]
    several = [sum(p[0] == b for p in plans) > 1 for b in range(batch)]
    attention = torch.stack([a / (a.sum(-1, keepdim=True) + 1e-10) if several[b] else a for b, a in enumerate(attention)])
    return sequence_output / counts.clamp(min=1), attention


def pool_by_loops(sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos) -> tuple[torch.Tensor, torch.Tensor]:
    """Entity embeddings (E x H) and attention (E x heads x L) entity by entity, mention by mention."""
    embeddings, rows = [], []
    for b, entities in enumerate(entity_pos):
        for mentions in entities:
            if not mentions:
                embeddings.append(sequence_output.new_zeros(sequence_output.size(-1)))
                rows.append(attention.new_zeros(attention.shape[1:3]))
                continue
            embeddings.append(torch.logsumexp(torch.stack([sequence_output[b, s] for s, _ in mentions]), 0))
            rows.append(torch.stack([attention[b, :, s] for s, _ in mentions]).mean(0))
    hidden, (heads, length) = sequence_output.size(-1), attention.shape[1:3]
    if not embeddings:
        return sequence_output.new_zeros((0, hidden)), attention.new_zeros((0, heads, length))
    return torch.stack(embeddings), torch.stack(rows)


def reference_encode(model, input_ids, attention_mask, entity_pos) -> DocREEncoderOutput:
    """What ``model.encoder`` must return, from the full attention and plain loops."""
    sequence_output, attention = full_attention(model, input_ids, attention_mask)
    embeddings, entity_attention = pool_by_loops(sequence_output, attention, entity_pos)
    return DocREEncoderOutput(sequence_output, embeddings, entity_attention)


@contextlib.contextmanager
def reference_encoding(model) -> Iterator[None]:
    """Inside the block the model's forward encodes with :func:`reference_encode` (its head unchanged)."""
    model.encoder.forward = functools.partial(reference_encode, model)
    try:
        yield
    finally:
        del model.encoder.forward

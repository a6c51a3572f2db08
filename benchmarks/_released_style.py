"""Benchmark baseline: a clean-room restatement of the forward computation of the authors' released code.

What it restates: THU-BPM/Env-DocRE ``evrt/model.py`` (``DocREModel``: ATLOP architecture trained with
NCRL), ``evrt/long_seq.py`` (long inputs), ``evrt/losses.py`` (``ClsLoss``) and the batch padding of
``evrt/utils.py``. It is written from a reading of that code for what it computes and how (the released
code is not installable here and is not copied); it is NOT a reimplementation of its training script.
It runs on OUR modules and weights (an ``ATLOPModel``, head type ``atlop`` or ``ncrl``), so that the time
it takes is the released computation's and its logits can be checked against ours:

* batches in input order, padded with id 0 to the longest document, float attention mask;
* the encoder in eager attention with ``output_attentions=True`` (every layer's ``B x heads x L x L``
  probabilities), the last layer's kept whole;
* a batch padded past the encoder window: each document over the window is cut into exactly two windows
  (the first ``window - 1`` tokens + [SEP], [CLS] + the last ``window - 1``), hidden states averaged and
  attention blocks summed then renormalised where they overlap (Python loop over documents); our model
  spreads k >= 2 windows instead, so the two agree while k = 2 (n <= window + (window - 2) // 2 + 1);
* entity pooling with Python loops over documents, entities and mentions (logsumexp over the mention-start
  embeddings, mean of their attention rows; zeros for an entity whose mentions all fall past the input),
  then per document: gathered head/tail embeddings and attentions, the localized context
  ``normalise(mean_heads(a_h * a_t)) @ H`` and concatenation over documents;
* extractors on ``cat([e, c])``, the group bilinear as a broadcast outer product left to autograd,
  the bilinear classifier; every forward also decodes (top-k threshold decoding), as the released
  forward does;
* loss: NCRL (``ClsLoss`` with margin shift and the none-class regularisation) for ``ncrl``; for
  ``atlop`` ATLOP's adaptive-thresholding loss, which Env-DocRE's model replaced by ``ClsLoss`` (it costs
  the same: a few ops on the logits). Labels are turned into tensors per document inside the forward.

Positions: the released features store mention starts before [CLS] is prepended and add 1 in the
forward; ours already index ``input_ids``, so no offset is added here. Everything in one place so the
benchmark (``bench_models.py --paths released``) and its test share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


def released_families() -> tuple[str, ...]:
    """The registered head types built on the released architecture (``ATLOPModel``: ATLOP, NCRL)."""
    from envre_hf.models.registry import families

    return tuple(f.head_type for f in families() if f.class_name == "ATLOPModel")


@dataclass
class ReleasedBatch:
    """What the released collate function hands the model: padded ids, float mask, per-document lists."""

    input_ids: torch.Tensor  # B x L, padded with 0
    input_mask: torch.Tensor  # B x L, float 1.0 / 0.0
    entity_pos: list[Any]
    hts: list[Any]
    labels: list[Any] | None  # per document, n_pairs x num_labels lists (None: unlabelled)

    def to(self, device: str | torch.device) -> ReleasedBatch:
        return ReleasedBatch(self.input_ids.to(device), self.input_mask.to(device), self.entity_pos, self.hts, self.labels)


def released_collate(features: Sequence[dict[str, Any]]) -> ReleasedBatch:
    """Pad to the longest document of the batch, in the order given (no sorting)."""
    longest = max(len(f["input_ids"]) for f in features)
    ids = [list(f["input_ids"]) + [0] * (longest - len(f["input_ids"])) for f in features]
    mask = [[1.0] * len(f["input_ids"]) + [0.0] * (longest - len(f["input_ids"])) for f in features]
    labels = [f["labels"] for f in features] if all(f.get("labels") is not None for f in features) else None
    return ReleasedBatch(
        torch.tensor(ids, dtype=torch.long),
        torch.tensor(mask, dtype=torch.float),
        [f["entity_pos"] for f in features],
        [f["hts"] for f in features],
        labels,
    )


def released_batches(features: Sequence[dict[str, Any]], batch_size: int) -> list[ReleasedBatch]:
    """Consecutive batches in input order (the released evaluation loader; training shuffles, unsorted)."""
    return [released_collate(features[k : k + batch_size]) for k in range(0, len(features), batch_size)]


class ReleasedStyleATLOP:
    """The released forward computation over an ``ATLOPModel``'s encoder, extractors and classifier.

    ``cls_id`` / ``sep_id``: the tokenizer's special tokens (the two-window split re-adds them).
    Calling it returns ``(loss or None, decoded, logits, pair_features)`` like the released forward
    (loss first only when labels are given).
    """

    def __init__(self, model: Any, cls_id: int, sep_id: int):
        head_type = model.config.head_type
        if head_type not in released_families():
            raise ValueError(f"the released-code restatement covers {released_families()}, not head_type {head_type!r}")
        self.model = model
        self.window = int(model.config.window)
        self.cls_id, self.sep_id = int(cls_id), int(sep_id)
        self.hidden = int(model.config.hidden_size)
        self.emb = int(model.config.emb_size)
        self.block = int(model.config.block_size)
        self.top_k = model.config.top_k or -1

    # ------------------------------------------------------------------ encoder (long_seq.py)

    def _run_encoder(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        encoder = self.model.encoder.transformer
        previous = encoder.config._attn_implementation
        encoder.set_attn_implementation("eager")  # eager attention in the encoder itself, every layer's probabilities
        try:
            out = encoder(input_ids=ids, attention_mask=mask, output_attentions=True)
        finally:
            encoder.set_attn_implementation(previous)
        return out.last_hidden_state, out.attentions[-1]

    def encode(self, input_ids: torch.Tensor, input_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Hidden states (B x L x H) and the last layer's full attention (B x heads x L x L)."""
        w = self.window
        batch, length = input_ids.shape
        if length <= w:
            return self._run_encoder(input_ids, input_mask)
        lengths = input_mask.sum(1).int().tolist()
        cls = input_ids.new_tensor([self.cls_id])
        sep = input_ids.new_tensor([self.sep_id])
        pieces_ids, pieces_mask, n_pieces = [], [], []
        for b, n in enumerate(lengths):
            if n <= w:
                pieces_ids.append(input_ids[b, :w])
                pieces_mask.append(input_mask[b, :w])
                n_pieces.append(1)
            else:
                pieces_ids += [torch.cat([input_ids[b, : w - 1], sep]), torch.cat([cls, input_ids[b, n - w + 1 : n]])]
                pieces_mask += [input_mask[b, :w], input_mask[b, n - w : n]]
                n_pieces.append(2)
        hidden, att = self._run_encoder(torch.stack(pieces_ids), torch.stack(pieces_mask))
        heads = att.size(1)
        seqs, atts = [], []
        k = 0
        for n, count in zip(lengths, n_pieces):
            seq = hidden.new_zeros((length, hidden.size(-1)))
            full = att.new_zeros((heads, length, length))
            if count == 1:
                seq[:w] = hidden[k]
                full[:, :w, :w] = att[k]
            else:
                # first window: its positions 0 .. w-2 (its own trailing [SEP] dropped)
                # second window: its positions 1 .. w-1 land at document positions n-w+1 .. n-1
                first, last = w - 1, n - w + 1
                cover = hidden.new_zeros((length,))
                seq[:first] += hidden[k, :first]
                cover[:first] += pieces_mask[k][:first]
                seq[last:n] += hidden[k + 1, 1:]
                cover[last:n] += pieces_mask[k + 1][1:]
                seq = seq / (cover + 1e-10).unsqueeze(-1)
                full[:, :first, :first] += att[k, :, :first, :first]
                full[:, last:n, last:n] += att[k + 1, :, 1:, 1:]
                full = full / (full.sum(-1, keepdim=True) + 1e-10)
            seqs.append(seq)
            atts.append(full)
            k += count
        return torch.stack(seqs), torch.stack(atts)

    # ------------------------------------------------------------------ get_hrt

    def pairs(
        self, sequence_output: torch.Tensor, attention: torch.Tensor, entity_pos: Sequence[Any], hts: Sequence[Any]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Head embeddings, localized contexts and tail embeddings of every pair, document after document."""
        heads, length = attention.size(1), attention.size(-1)
        all_h, all_c, all_t = [], [], []
        for b, entities in enumerate(entity_pos):
            embs, atts = [], []
            for mentions in entities:
                starts = [int(m[0]) for m in mentions if int(m[0]) < length]
                if not starts:
                    embs.append(sequence_output.new_zeros(self.hidden))
                    atts.append(attention.new_zeros((heads, length)))
                elif len(mentions) == 1:
                    embs.append(sequence_output[b, starts[0]])
                    atts.append(attention[b, :, starts[0]])
                else:
                    embs.append(torch.logsumexp(torch.stack([sequence_output[b, p] for p in starts]), dim=0))
                    atts.append(torch.stack([attention[b, :, p] for p in starts]).mean(0))
            emb, att = torch.stack(embs), torch.stack(atts)
            pair = torch.tensor(hts[b], dtype=torch.long, device=sequence_output.device).view(-1, 2)
            h_att, t_att = att.index_select(0, pair[:, 0]), att.index_select(0, pair[:, 1])
            weights = (h_att * t_att).mean(1)
            weights = weights / (weights.sum(1, keepdim=True) + 1e-5)
            all_h.append(emb.index_select(0, pair[:, 0]))
            all_t.append(emb.index_select(0, pair[:, 1]))
            all_c.append(torch.einsum("pl,ld->pd", weights, sequence_output[b]))
        return torch.cat(all_h), torch.cat(all_c), torch.cat(all_t)

    # ------------------------------------------------------------------ forward, decoding, losses

    def __call__(self, batch: ReleasedBatch) -> tuple[torch.Tensor, ...]:
        m = self.model
        sequence_output, attention = self.encode(batch.input_ids, batch.input_mask)
        hs, cs, ts = self.pairs(sequence_output, attention, batch.entity_pos, batch.hts)
        zh = torch.tanh(m.head_extractor(torch.cat([hs, cs], dim=1)))
        zt = torch.tanh(m.tail_extractor(torch.cat([ts, cs], dim=1)))
        groups = self.emb // self.block
        outer = zh.view(-1, groups, self.block).unsqueeze(3) * zt.view(-1, groups, self.block).unsqueeze(2)
        features = outer.view(-1, self.emb * self.block)
        logits = m.bilinear(features)
        out: tuple[torch.Tensor, ...] = (self.decode(logits), logits, features)
        if batch.labels is not None:
            labels = torch.cat([torch.tensor(doc_labels) for doc_labels in batch.labels], dim=0).to(logits)
            out = (self.loss(logits.float(), labels.float()).to(sequence_output),) + out
        return out

    def decode(self, logits: torch.Tensor) -> torch.Tensor:
        """Relations above the threshold class, at most top_k per pair; class 0 where none is."""
        keep = logits > logits[:, :1]
        if self.top_k > 0:
            kth = torch.topk(logits, self.top_k, dim=1).values[:, -1:]
            keep = keep & (logits >= kth)
        out = torch.zeros_like(logits)
        out[keep] = 1.0
        out[:, 0] = (out.sum(1) == 0).to(logits)
        return out

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.model.config.head_type == "ncrl":
            return _ncrl_loss(logits, labels, float(self.model.config.ncrl_margin))
        return _atlop_loss(logits, labels)


def _shifted_binary_ce(margin: torch.Tensor, target: torch.Tensor, shift: float, eps: float = 1e-8) -> torch.Tensor:
    p = torch.sigmoid(margin)
    q = 1 - p
    if shift > 0:
        q = (q + shift).clamp(max=1)
    return -(target * torch.log(p.clamp(min=eps)) + (1 - target) * torch.log(q.clamp(min=eps))).sum()


def _ncrl_loss(logits: torch.Tensor, labels: torch.Tensor, shift: float) -> torch.Tensor:
    """Env-DocRE's ClsLoss with the regularisation on: relations vs class 0, class 0 vs the mean relation."""
    total = _shifted_binary_ce(logits[:, 1:] - logits[:, :1], labels[:, 1:], shift)
    total = total + _shifted_binary_ce(logits[:, 0] - logits[:, 1:].mean(-1), labels[:, 0], shift)
    return total / labels.shape[0]


def _atlop_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """ATLOP's adaptive thresholding: positives above class 0 (softmax over them and 0), 0 above the negatives."""
    threshold = torch.zeros_like(labels)
    threshold[:, 0] = 1.0
    positives = labels.clone()
    positives[:, 0] = 0.0
    allowed_pos = positives + threshold
    allowed_neg = 1 - positives
    part_pos = -(F.log_softmax(logits - (1 - allowed_pos) * 1e30, dim=-1) * positives).sum(1)
    part_neg = -(F.log_softmax(logits - (1 - allowed_neg) * 1e30, dim=-1) * threshold).sum(1)
    return (part_pos + part_neg).mean()

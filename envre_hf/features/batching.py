"""Length-aware batching: less padding per batch (and fewer encoder windows) for training and prediction."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch


def feature_length(item: Mapping[str, Any]) -> int:
    """Word pieces of a featurized document, or of the longer of a pair ``{"original", "twin"}``."""
    if "input_ids" in item:
        return len(item["input_ids"])
    if "original" in item:
        return max(feature_length(item["original"]), feature_length(item.get("twin") or item["original"]))
    raise KeyError("expected a featurized document (input_ids) or a pair (original, twin)")


def dataset_lengths(dataset: Any) -> list[int]:
    """:func:`feature_length` of every item of a dataset (featurizes lazily built items once, as training would)."""
    return [feature_length(dataset[i]) for i in range(len(dataset))]


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, pairs: Sequence[int] | None = None, pair_budget: int | None = None
) -> list[list[int]]:
    """:func:`budget_batches` of the documents by decreasing length (stable), so that batches hold documents of
    similar length and an out-of-memory error shows up at once, not at the end of a long run."""
    return budget_batches(sorted(range(len(lengths)), key=lambda i: -lengths[i]), batch_size, pairs, pair_budget)


def budget_batches(
    order: Sequence[int], batch_size: int, pairs: Sequence[int] | None = None, pair_budget: int | None = None
) -> list[list[int]]:
    """``order`` cut into consecutive batches of at most ``batch_size`` documents and, given ``pairs`` and
    ``pair_budget``, at most ``pair_budget`` pairs (a document with more is alone in its batch)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if pair_budget is not None and pair_budget < 1:
        raise ValueError(f"pair_budget must be >= 1 or None, got {pair_budget}")
    budget = float("inf") if pairs is None or pair_budget is None else pair_budget
    batches: list[list[int]] = []
    held = 0
    for i in order:
        n = 0 if pairs is None else pairs[i]
        if not batches or len(batches[-1]) == batch_size or held + n > budget:
            batches.append([])
            held = 0
        batches[-1].append(i)
        held += n
    return batches


class LengthGroupedSampler(torch.utils.data.Sampler[int]):
    """transformers' ``group_by_length`` order (docs/speed.md "Batching") over given ``lengths``, one per item
    (:func:`dataset_lengths`), batches also shuffled; :meth:`set_epoch` (``Trainer`` calls it) reorders."""

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int = 0, mega_batch_mult: int = 50):
        if batch_size < 1 or mega_batch_mult < 1:
            raise ValueError("batch_size and mega_batch_mult must be >= 1")
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.seed = seed
        self.mega_batch_mult = mega_batch_mult
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self) -> Iterator[int]:
        n = len(self.lengths)
        if n == 0:
            return iter([])
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        perm = torch.randperm(n, generator=generator).tolist()
        mega = self.batch_size * self.mega_batch_mult
        groups = [sorted(perm[i : i + mega], key=lambda j: -self.lengths[j]) for i in range(0, n, mega)]
        batches = [g[i : i + self.batch_size] for g in groups for i in range(0, len(g), self.batch_size)]
        longest = max(range(len(batches)), key=lambda b: self.lengths[batches[b][0]])
        batches[0], batches[longest] = batches[longest], batches[0]
        rest = torch.randperm(len(batches) - 1, generator=generator).tolist()
        ordered = [batches[0]] + [batches[1 + b] for b in rest]
        return iter([i for b in ordered for i in b])

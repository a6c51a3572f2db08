"""Length-aware batching: less padding per batch (and fewer encoder windows) for training and prediction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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


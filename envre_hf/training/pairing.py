"""Training documents paired with renamed twins, and the collator that batches them (docs/evrt.md).

Renaming keeps the entity order and labels, so a document and its twin share the pair list (``hts``):
:func:`assert_aligned` checks it for every example. Pairs that lost an entity under a length cap are left out
of the consistency losses.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from ..documents import Document, DocumentError, read_documents, write_documents
from ..renaming.driver import RenamingDriver, rename_unit
from ..renaming.pipeline import original_key
from ..renaming.stats import substitution_rates
from ..documents.tokenize import name_key

Features = dict[str, Any]
Featurizer = Callable[[Document], Features]


# --------------------------------------------------------------------------- keys and checks


def check_document_alignment(original: Document, twin: Document) -> None:
    """Raise :class:`DocumentError` unless ``twin`` keeps ``original``'s entity order and labels."""
    if len(original.entities) != len(twin.entities):
        raise DocumentError(
            f"twin {twin.key!r} has {len(twin.entities)} entities, the original has {len(original.entities)}",
            title=original.key,
            field="vertexSet",
        )
    for e, (a, b) in enumerate(zip(original.entities, twin.entities)):
        if len(a.mentions) != len(b.mentions) or a.type != b.type:
            raise DocumentError(
                f"twin {twin.key!r} changes the entity (mention count or type): entity order must be kept",
                title=original.key,
                entity=e,
                field="vertexSet",
            )
    if sorted((r.h, r.t, r.r) for r in original.relations) != sorted((r.h, r.t, r.r) for r in twin.relations):
        raise DocumentError(f"twin {twin.key!r} has different relation labels", title=original.key, field="labels")


def assert_aligned(original: Features, twin: Features) -> None:
    """Raise ``ValueError`` unless the featurized ``twin`` has the same entity pairs, in the same order (else the
    consistency losses would silently pull unrelated pairs together)."""
    key = original.get("doc_key", "?")
    if len(original["entity_pos"]) != len(twin["entity_pos"]):
        raise ValueError(
            f"document {key!r}: twin {twin.get('doc_key', '?')!r} has {len(twin['entity_pos'])} entities, "
            f"the original {len(original['entity_pos'])}"
        )
    hts_a, hts_b = _rows(original["hts"]), _rows(twin["hts"])
    if hts_a != hts_b:
        raise ValueError(f"document {key!r}: the twin's entity pairs (hts) are not in the original's order")
    if "labels" in original and "labels" in twin and original["labels"] is not None and twin["labels"] is not None:
        if _rows(original["labels"]) != _rows(twin["labels"]):
            raise ValueError(f"document {key!r}: the twin's pair labels differ from the original's")


def _rows(value: Any) -> list[tuple]:
    """Rows (hts pairs, label rows) of a tensor or nested list, as tuples of floats."""
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    return [tuple(float(v) for v in row) for row in value]


# --------------------------------------------------------------------------- name isolation


def check_name_isolation(twins: Iterable[Document], excluded: frozenset[str]) -> None:
    """Raise ``ValueError`` when a twin's KB substitution uses an excluded (evaluation) name, compared by
    ``name_key`` as the pipeline does; rule-made values and ``unchanged:`` records are not KB names."""
    if not excluded:
        return
    keys = frozenset(name_key(name) for name in excluded)
    for twin in twins:
        _check_twin(twin, keys)


def _check_twin(twin: Document, keys: frozenset[str]) -> None:
    """:func:`check_name_isolation` of one twin against the ``name_key`` of the excluded names."""
    for sub in twin.substitutions or []:
        if sub.match == "rule" or sub.match.startswith("unchanged:"):
            continue
        if name_key(sub.new_name) in keys:
            raise ValueError(
                f"name isolation broken: training twin {twin.key!r} (entity {sub.entity}) uses "
                f"{sub.new_name!r}, a name of the evaluation benchmarks"
            )


# --------------------------------------------------------------------------- twin sources


class TwinSource(ABC):
    """Gives the renamed twin of a training document for an epoch (deterministic in (document, epoch))."""

    @abstractmethod
    def twin(self, doc: Document, epoch: int) -> Document:
        """The twin of ``doc`` used during ``epoch``."""

    def cacheable(self) -> bool:
        """True when a twin can be reused across epochs (its features are then cached)."""
        return False


class PrebuiltTwins(TwinSource):
    """Twins read from a pre-built renamed training set, matched to the originals by key; with several per
    original, epoch ``e`` draws one with ``random.Random(f"{base_seed + e}:{key}")`` (the same on every process)."""

    def __init__(self, originals: Sequence[Document], renamed: Iterable[Document], base_seed: int = 0):
        self.base_seed = base_seed
        by_key: dict[str, list[Document]] = {}
        for twin in renamed:
            by_key.setdefault(original_key(twin), []).append(twin)
        for twins in by_key.values():
            twins.sort(key=lambda d: (d.seed is not None, d.seed or 0, d.key))  # unseeded first, then by seed
        missing = [doc.key for doc in originals if doc.key not in by_key]
        if missing:
            raise DocumentError(
                f"{len(missing)} training document(s) have no renamed twin in the pre-built set "
                f"(first: {missing[:3]}); twins are matched by doc_id '<key>#<seed>' or orig_title",
                title=missing[0],
                field="doc_id",
            )
        for doc in originals:
            for twin in by_key[doc.key]:
                check_document_alignment(doc, twin)
        self.by_key = by_key

    def twin(self, doc: Document, epoch: int) -> Document:
        twins = self.by_key[doc.key]
        return twins[random.Random(f"{self.base_seed + epoch}:{doc.key}").randrange(len(twins))]

    def cacheable(self) -> bool:
        return True

    def all_twins(self) -> list[Document]:
        return [twin for twins in self.by_key.values() for twin in twins]


def fixed_twins(
    originals: Sequence[Document], pipeline: Any, seed: int, path: str | Path | None = None, progress: bool = True
) -> PrebuiltTwins:
    """Each of ``originals`` renamed once at ``seed``, as the released code trains; with ``path`` the twins are
    written there and a rerun or resumed run reads them back, so it trains on the same twins."""
    if path is not None and Path(path).exists():
        renamed = read_documents(path)
    else:
        renamed = RenamingDriver(pipeline).rename_documents(
            list(originals), [seed], desc="Renaming training twins", progress=progress, leave=False
        )
        if path is not None:
            write_documents(renamed, path)
    return PrebuiltTwins(originals, renamed, base_seed=seed)


class OnTheFlyTwins(TwinSource):
    """Twins renamed through ``pipeline`` (with the evaluation names excluded) at seed ``base_seed + epoch``; each
    is checked against those names as it is made (isolation by construction, verified: a renaming bug stops
    training instead of teaching the shortcut)."""

    def __init__(self, pipeline: Any, base_seed: int = 0):
        self.pipeline = pipeline
        self.base_seed = base_seed
        excluded = getattr(getattr(pipeline, "config", None), "exclude_names", ())
        self.excluded_keys = frozenset(name_key(name) for name in excluded)

    def twin(self, doc: Document, epoch: int) -> Document:
        twin = rename_unit(self.pipeline, doc, self.base_seed + epoch).document  # the one renaming driver
        check_document_alignment(doc, twin)
        if self.excluded_keys:
            _check_twin(twin, self.excluded_keys)
        return twin


# --------------------------------------------------------------------------- datasets


#: Coarse types whose twin substitution rate should reach :data:`MIN_TWIN_RATE` (MISC is noisy by nature).
CHECKED_TWIN_TYPES = ("PER", "ORG", "LOC", "TIME", "NUM")
#: Below this substitution rate of a checked type, training warns that its twins are starved.
MIN_TWIN_RATE = 0.9


def starved_twin_types(rates: dict[str, dict[str, float]], minimum: float = MIN_TWIN_RATE) -> dict[str, float]:
    """The checked coarse types whose twin substitution rate is clearly below ``minimum`` (type -> rate): the
    one-sided 95% Wilson upper bound is below it, so 3 unrenamable of 23 ORG entities (87%, bound 95%) pass."""
    z = 1.645
    starved = {}
    for t in CHECKED_TWIN_TYPES:
        if t not in rates:
            continue
        p, n = rates[t]["rate"], rates[t].get("entities", 0)
        bound = (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n) if n else p
        if bound < minimum:
            starved[t] = p
    return starved


class DocumentFeaturesDataset(torch.utils.data.Dataset):
    """Featurized documents (no twins): the vanilla training set and any plain evaluation set."""

    def __init__(self, documents: Sequence[Document], featurize: Featurizer):
        self.documents = list(documents)
        self.featurize = featurize
        self._cache: dict[int, Features] = {}

    def __len__(self) -> int:
        return len(self.documents)

    def __getitem__(self, index: int) -> Features:
        if index not in self._cache:
            self._cache[index] = self.featurize(self.documents[index])
        return self._cache[index]


class EVRTPairDataset(DocumentFeaturesDataset):
    """Each item is ``{"original": features, "twin": features, "aligned": [bool per pair]}``; ``set_epoch`` selects
    the epoch's twins. The featurizer must take ``align_with``; only pre-built twins stay cached across epochs."""

    def __init__(self, documents: Sequence[Document], featurize: Featurizer, twins: TwinSource, epoch: int = 0):
        super().__init__(documents, featurize)
        self.twins = twins
        self.epoch = epoch
        self._twin_cache: dict[str, dict[str, Any]] = {}

    def set_epoch(self, epoch: int | float) -> None:
        epoch = int(math.floor(float(epoch) + 1e-6))
        if epoch != self.epoch and not self.twins.cacheable():
            self._twin_cache.clear()
        self.epoch = epoch

    def twin_document(self, index: int) -> Document:
        return self.twins.twin(self.documents[index], self.epoch)

    def twin_substitution_rates(self) -> dict[str, dict[str, float]]:
        """Substitution rate per coarse type of this epoch's twins, reported when training starts."""
        return substitution_rates(self.twin_document(i) for i in range(len(self)))

    def __getitem__(self, index: int) -> dict[str, Any]:
        doc, twin_doc = self.documents[index], self.twin_document(index)
        cache_key = f"{index}\x00{twin_doc.key}"
        if cache_key not in self._twin_cache:
            original = self.featurize(doc, align_with=twin_doc)
            twin = self.featurize(twin_doc, align_with=doc)
            assert_aligned(original, twin)
            self._twin_cache[cache_key] = {"original": original, "twin": twin, "aligned": aligned_pairs(original)}
        return self._twin_cache[cache_key]


def aligned_pairs(features: Features) -> list[bool]:
    """Per entity pair (``hts`` order), whether both entities kept a mention: the pairs EVRT may compare."""
    placed = [bool(span) for span in features["entity_pos"]]
    return [placed[int(h)] and placed[int(t)] for h, t in _rows(features["hts"])]


# --------------------------------------------------------------------------- collator


class EVRTPairCollator:
    """Batches paired examples: the originals' batch, the twins' under ``"twin"`` and ``consistency_mask`` (per pair:
    the losses may compare it). Plain examples go to the base collator unchanged (evaluation sets)."""

    def __init__(self, base_collator: Callable[[list[Features]], dict[str, Any]]):
        self.base_collator = base_collator

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        if not examples or "original" not in examples[0]:
            return self.base_collator(examples)
        for ex in examples:
            assert_aligned(ex["original"], ex["twin"])
        batch = self.base_collator([ex["original"] for ex in examples])
        batch["twin"] = self.base_collator([ex["twin"] for ex in examples])
        if all("aligned" in ex for ex in examples):
            batch["consistency_mask"] = torch.tensor([ok for ex in examples for ok in ex["aligned"]], dtype=torch.bool)
        return batch

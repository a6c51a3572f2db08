"""MAP(K) of attributed words against human rationales (DocRED-HWE), Eq. 5 of the Env-DocRE study
(``MAP(K) = 1/T sum_t 1/K sum_{i<=K} P_t(i) 1_t(i)``; candidates, exclusions and ties: docs/attribution.md)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..documents.errors import DocumentError
from ..documents.io import read_json
from ..documents.schema import Document, Relation

EXCLUDE = ("pair", "all")
RANK_BY = ("signed", "abs")


def span_tokens(doc: Document, sent_id: int, pos: Sequence[int]) -> range:
    """Document-level token indices of ``sents[sent_id][pos[0]:pos[1]]``."""
    offset = doc.sentence_offsets()[sent_id]
    return range(offset + pos[0], offset + pos[1])


def rationale_tokens(doc: Document, rel: Relation, label: int | None = None) -> set[int]:
    """Token indices of the fact's ``keywords`` spans (``extra["keywords"]``: name, sent_id, pos)."""
    out: set[int] = set()
    for k, kw in enumerate(rel.extra.get("keywords") or []):
        try:
            sent_id, (s, t) = int(kw["sent_id"]), kw["pos"]
        except (KeyError, TypeError, ValueError):
            raise DocumentError("keyword needs sent_id and pos [start, end]", title=doc.title, label=label, field="keywords") from None
        if not (0 <= sent_id < len(doc.sents) and 0 <= s < t <= len(doc.sents[sent_id])):
            raise DocumentError(f"keyword {k} span {[s, t]} out of range", title=doc.title, label=label, field="keywords")
        out.update(span_tokens(doc, sent_id, (s, t)))
    return out


def excluded_tokens(doc: Document, h: int, t: int, exclude: str = "pair") -> set[int]:
    """Tokens that are not ranked for fact (h, t): the head's and tail's mentions, or every mention."""
    if exclude not in EXCLUDE:
        raise ValueError(f"exclude must be one of {EXCLUDE}, got {exclude!r}")
    entities = range(doc.num_entities) if exclude == "all" else (h, t)
    return {i for e in entities for m in doc.entities[e].mentions for i in span_tokens(doc, m.sent_id, m.pos)}


def precision_terms(scores: Sequence[float], relevant: Sequence[bool], k_max: int) -> np.ndarray:
    """E[P(i) 1(i)] for ranks i = 1..k_max by descending score (0 past the last word). In a tie of g words holding
    m relevant ones after a words with c relevant, rank a + j is relevant with probability m/g, and then the tie's
    first j hold 1 + (j - 1)(m - 1)/(g - 1) relevant words in expectation."""
    scores = np.asarray(scores, dtype=np.float64)
    relevant = np.asarray(relevant, dtype=bool)
    out = np.zeros(k_max)
    order = np.argsort(-scores, kind="stable")
    a = c = 0
    for _, tie in itertools.groupby(zip(scores[order], relevant[order]), key=lambda pair: pair[0]):
        if a >= k_max:
            break
        flags = [bool(r) for _, r in tie]
        g, m = len(flags), sum(flags)
        if m:
            for j in range(1, min(g, k_max - a) + 1):
                inside = 1 + (j - 1) * (m - 1) / (g - 1) if g > 1 else 1
                out[a + j - 1] = (m / g) * (c + inside) / (a + j)
        a += g
        c += m
    return out


def map_terms(scores: Sequence[float], relevant: Sequence[bool], k_max: int) -> np.ndarray:
    """One fact's ``1/K sum_{i<=K} P(i) 1(i)`` for K = 1..k_max (its contribution to MAP(K) before 1/T)."""
    terms = precision_terms(scores, relevant, k_max)
    return np.cumsum(terms) / np.arange(1, k_max + 1)


@dataclass
class MAPCurve:
    """MAP(K) for K = 1..len(map) of one model, and what it was computed on."""

    label: str
    map: list[float]
    facts: int
    documents: int
    facts_without_rationale: int = 0
    exclude: str = "pair"
    rank_by: str = "signed"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> list[int]:
        return list(range(1, len(self.map) + 1))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "k": self.k}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MAPCurve:
        return cls(**{f: data[f] for f in cls.__dataclass_fields__ if f in data})


def map_curve(
    records: Iterable[Mapping[str, Any]],
    docs: Mapping[str, Document],
    k_max: int = 30,
    exclude: str = "pair",
    rank_by: str = "signed",
    label: str = "",
) -> MAPCurve:
    """MAP(K), K = 1..k_max, over attribution records (``DocumentAttribution.to_dict()`` rows) of the
    documents ``docs`` (by key), whose relations carry the ``keywords``."""
    if rank_by not in RANK_BY:
        raise ValueError(f"rank_by must be one of {RANK_BY}, got {rank_by!r}")
    total = np.zeros(k_max)
    facts = skipped = n_docs = 0
    for n_docs, rec in enumerate(records, 1):
        doc = docs[rec["doc"]]
        rationale = {}
        for i, rel in enumerate(doc.relations):
            rationale.setdefault((rel.h, rel.t, rel.r), set()).update(rationale_tokens(doc, rel, i))
        for fact in rec["facts"]:
            key = (fact["h"], fact["t"], fact["r"])
            dropped = excluded_tokens(doc, fact["h"], fact["t"], exclude)
            candidates = [i for i in range(len(fact["tokens"])) if i not in dropped]
            relevant = [i in rationale.get(key, ()) for i in candidates]
            if not any(relevant):
                skipped += 1
                continue
            values = np.asarray(fact["tokens"], dtype=np.float64)[candidates]
            total += map_terms(np.abs(values) if rank_by == "abs" else values, relevant, k_max)
            facts += 1
    curve = (total / facts).tolist() if facts else [0.0] * k_max
    return MAPCurve(label, curve, facts, n_docs, skipped, exclude, rank_by)


def read_map_curves(path: str | os.PathLike) -> list[MAPCurve]:
    """Curves of a ``map.json`` written by ``envre attribute`` (one curve) or a benchmark (``{"curves": [...]}``)."""
    data = read_json(path)
    rows = data["curves"] if isinstance(data, dict) and "curves" in data else [data]
    try:
        return [MAPCurve.from_dict(row) for row in rows]
    except (TypeError, KeyError) as err:
        raise ValueError(f"{path}: not a MAP curve file ({err})") from None

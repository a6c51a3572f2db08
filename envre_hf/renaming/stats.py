"""Build statistics of renamed copies: substitution rate per coarse type, type-match kinds, and the whole
construction statistics of a split (``statistics.json``, the dataset card, what ``envre build`` prints)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..documents import Document
from .coherence import coherence_statistics
from .driver import DocumentFailure
from .inputs import SourceInfo


def substitution_rates(renamed: Iterable[Document]) -> dict[str, dict[str, float]]:
    """Per coarse entity type (and ``"ALL"``): ``entities``, ``substituted`` (records not ``unchanged:``)
    and ``rate``."""
    totals: Counter[str] = Counter()
    done: Counter[str] = Counter()
    for doc in renamed:
        renamed_entities = {s.entity for s in doc.substitutions or [] if not s.match.startswith("unchanged:")}
        for e, entity in enumerate(doc.entities):
            for key in (entity.type, "ALL"):
                totals[key] += 1
                done[key] += e in renamed_entities
    return {
        key: {"entities": totals[key], "substituted": done[key], "rate": done[key] / totals[key] if totals[key] else 0.0}
        for key in sorted(totals, key=lambda k: (k == "ALL", k))
    }


#: The columns of :func:`match_counts` ``by_type``.
MATCH_KINDS = ("exact", "relaxed", "rule", "unchanged")


def _entity_matches(renamed: Iterable[Document]) -> Iterable[tuple[str, str]]:
    """``(coarse type, kind)`` of every entity: ``exact``, ``relaxed`` (any ``relaxed:<how>``), ``rule`` or
    ``unchanged:<reason>``, from its first ``substitutions`` record (all records of an entity share it)."""
    for doc in renamed:
        seen: set[int] = set()
        for sub in doc.substitutions or []:
            if sub.entity in seen:
                continue
            seen.add(sub.entity)
            yield doc.entities[sub.entity].type, "relaxed" if sub.match.startswith("relaxed:") else sub.match


def match_counts(renamed: Iterable[Document], by_type: bool = False) -> dict[str, Any]:
    """Entities per outcome: ``exact``, ``relaxed``, ``rule`` or ``unchanged:<reason>``; ``by_type``: per
    coarse type, ``{type: {"exact", "relaxed", "rule", "unchanged"}}`` (every key present, reasons summed)."""
    if not by_type:
        return dict(sorted(Counter(kind for _, kind in _entity_matches(renamed)).items()))
    table: dict[str, Counter[str]] = {}
    for etype, kind in _entity_matches(renamed):
        row = table.setdefault(etype, Counter({key: 0 for key in MATCH_KINDS}))
        row["unchanged" if kind.startswith("unchanged:") else kind] += 1
    return {etype: dict(table[etype]) for etype in sorted(table)}


def construction_statistics(
    renamed: Sequence[Document],
    leaks: Sequence[int],
    names_used: set[str],
    source_docs: int,
    failures: Sequence[DocumentFailure],
    source: SourceInfo,
    seeds: Sequence[int],
) -> dict[str, Any]:
    """The numbers a dataset card reports (``leaks[i]`` is the leak count of ``renamed[i]``)."""
    return {
        "source_documents": source_docs,
        "seeds": list(seeds),
        "renamed_documents": len(renamed),
        "failed": len(failures),
        "failed_documents": len({f.doc_index for f in failures}),
        "substitution_rates": substitution_rates(renamed),
        "type_matches": match_counts(renamed),
        "type_matches_by_type": match_counts(renamed, by_type=True),
        "coherence": coherence_statistics(renamed),
        "leaks": {"documents": sum(1 for n in leaks if n), "occurrences": sum(leaks)},
        "names_used": len(names_used),
        "kb": {"name": source.kb_name, "snapshot": source.kb_snapshot},
        "renaming_config": source.renaming_config,
        "input": {"path": Path(source.input_path).name, "sha256": source.input_sha256},
    }


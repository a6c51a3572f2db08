"""Tolerant parsing of model text into official DocRED predictions: never raises on model output, reads the
usual variants of ``<1; country; 2>`` (bullets, other brackets or separators, ``Entity 1``, names, ``P17``),
maps entity numbers back to ``vertexSet`` indices, and reports what it dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..documents import Document, RelationSchema, docred_schema

_NUMBER_WORDS = {
    **{w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                  "fourteen fifteen sixteen seventeen eighteen nineteen".split())},
    **{w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)},
}
_BRACKETED = re.compile(r"<([^<>]*)>|\(([^()]*[;|][^()]*)\)|\[([^\[\]]*[;|][^\[\]]*)\]")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#+)\s+")
_PID = re.compile(r"\bP[1-9][0-9]*\b", re.IGNORECASE)
_IGNORABLE = re.compile(
    r"^(?:```\w*|(?:here are the )?(?:triples?|relations?)(?: found)?:?|output:?|answer:?|none\.?|no relations?(?: found)?\.?|n/?a)$", re.IGNORECASE
)


def _norm(text: str) -> str:
    text = text.replace("_", " ").replace("*", "").replace("`", "")
    text = re.sub(r"\s+", " ", text).strip().strip("\"'“”‘’.:").strip()
    return text.lower()


@dataclass
class ParseReport:
    """What the parser did with one model output (counts are of triples unless named lines)."""

    lines: int = 0
    parsed: int = 0
    unparsed_lines: list[str] = field(default_factory=list)
    unknown_relations: list[str] = field(default_factory=list)
    out_of_range: list[str] = field(default_factory=list)
    self_pairs: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)


_LEADING_NUMBER = re.compile(r"^\[?\s*(?:entity|ent\.?|e|no\.?|number|#)?\s*(\d+)\b", re.IGNORECASE)


def _entity_number(part: str, names: dict[str, int]) -> int | None:
    """1-based entity number of one triple part (``1``, ``[1 Skai TV]``, ``Entity 1``, ``E1``, ``#1``, ``twenty-one``,
    or an exact name in ``names``, which wins over a leading number: ``13 March 1963`` is the date), or None."""
    text = part.replace("*", "").replace("`", "").strip().strip("\"'“”‘’")
    norm = _norm(text)
    if norm in names and not norm.isdigit():
        return names[norm]
    match = _LEADING_NUMBER.match(text)
    if match:
        return int(match.group(1))
    words = norm.replace("entity", "").replace("-", " ").split()
    if 1 <= len(words) <= 2 and all(w in _NUMBER_WORDS for w in words):
        return sum(_NUMBER_WORDS[w] for w in words)
    return names.get(_norm(re.sub(r"\((?:PER|ORG|LOC|TIME|NUM|MISC)\)$", "", text)))


def _relation_id(part: str, schema: RelationSchema, name2id: dict[str, str]) -> str | None:
    norm = _norm(part)
    if norm in name2id:
        return name2id[norm]
    without = _norm(_PID.sub("", part).replace("()", ""))
    if without in name2id:
        return name2id[without]
    pid = _PID.search(part)
    if pid and pid.group().upper() in schema.id2name:
        return pid.group().upper()
    return None


def _split(body: str) -> list[str] | None:
    """Three parts (subject, relation, object) of a triple body, or None."""
    for sep in (";", "|", "\t", ","):
        parts = body.split(sep)
        if len(parts) >= 3:  # more: a separator inside the relation name
            return [parts[0], sep.join(parts[1:-1]), parts[-1]]
    arrow = re.split(r"\s*(?:->|→|--)\s*", body)
    if len(arrow) == 3:
        return arrow
    return None


class TripleParser:
    """Parses model outputs for one document (its entity numbering fixed by the prompt)."""

    def __init__(self, schema: RelationSchema | None = None):
        self.schema = schema or docred_schema()
        self.name2id = {_norm(name): rid for name, rid in self.schema.name2id.items()}

    def parse(
        self, text: str | None, doc: Document, numbering: Sequence[int]
    ) -> tuple[list[dict[str, Any]], ParseReport]:
        """Official-format predictions for ``doc`` and the :class:`ParseReport` of ``text``."""
        report = ParseReport()
        preds: list[dict[str, Any]] = []
        seen: set[tuple[int, int, str]] = set()
        n = len(numbering)
        numbers: dict[str, set[int]] = {}
        for number, e in enumerate(numbering, start=1):
            for name in doc.entities[e].names:
                numbers.setdefault(_norm(name), set()).add(number)
        names = {key: min(found) for key, found in numbers.items() if len(found) == 1}  # an ambiguous name names none
        ident = {"title": doc.title} if doc.doc_id is None else {"doc_id": doc.doc_id, "title": doc.title}
        for raw_line in (text or "").splitlines():
            line = raw_line.strip()
            if not line:
                continue
            report.lines += 1
            stripped = _BULLET.sub("", line).replace("**", "").strip()
            if _IGNORABLE.match(stripped):
                continue
            bodies = [next(g for g in m.groups() if g is not None) for m in _BRACKETED.finditer(stripped)]
            # the line's bracketed triples, else the whole line as one
            triples = [parts for parts in map(_split, bodies) if parts is not None]
            triples = triples or [_split(stripped.strip("<>()[]"))]
            found = False
            for parts in filter(None, triples):
                h_num, t_num = _entity_number(parts[0], names), _entity_number(parts[2], names)
                if h_num is None or t_num is None:
                    continue
                found = True
                rel = _relation_id(parts[1], self.schema, self.name2id)
                shown = f"<{parts[0].strip()}; {parts[1].strip()}; {parts[2].strip()}>"
                if rel is None:
                    report.unknown_relations.append(shown)
                elif not (1 <= h_num <= n and 1 <= t_num <= n):
                    report.out_of_range.append(shown)
                elif h_num == t_num:
                    report.self_pairs.append(shown)
                elif (h_num, t_num, rel) in seen:
                    report.duplicates.append(shown)
                else:
                    seen.add((h_num, t_num, rel))
                    preds.append({**ident, "h_idx": numbering[h_num - 1], "t_idx": numbering[t_num - 1], "r": rel})
            if not found:
                report.unparsed_lines.append(line)
        report.parsed = len(preds)
        return preds, report


def parse_triples(
    text: str | None, doc: Document, numbering: Sequence[int], schema: RelationSchema | None = None
) -> tuple[list[dict[str, Any]], ParseReport]:
    """Shortcut for ``TripleParser(schema).parse(text, doc, numbering)``."""
    return TripleParser(schema).parse(text, doc, numbering)

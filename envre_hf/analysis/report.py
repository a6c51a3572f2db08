"""Run every analysis on an original and a renamed benchmark and write ``report.md``, ``figures.json`` and
``entity_count.png``; an analysis whose inputs are missing is listed under "Not analysed" rather than failing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..atomic import write_json, write_text
from ..documents import Document
from ..kb.base import KnowledgeBase
from .entity_count import EntityCountCurve, f1_by_entity_count
from .robustness import performance_table
from .plots import plot_entity_count
from .popularity import QUARTILES, popularity_quartiles
from .substitution_table import substitution_table
from .train_overlap import overlap_table

REPORT = "report.md"
FIGURES = "figures.json"
ENTITY_COUNT_PLOT = "entity_count.png"

Predictions = Sequence[Mapping[str, Any]]


def run_analyses(
    original: Sequence[Document],
    renamed: Sequence[Document],
    pred_original: Predictions | None = None,
    pred_renamed: Predictions | None = None,
    train: Sequence[Document] | None = None,
    kb: KnowledgeBase | None = None,
    bin_width: int = 1,
) -> dict[str, Any]:
    """Every figure as plain JSON-ready data (tables keyed by name; ``not_analysed`` lists what was skipped)."""
    figures: dict[str, Any] = {
        "inputs": {
            "original_documents": len(original),
            "renamed_documents": len(renamed),
            "pred_original": None if pred_original is None else len(pred_original),
            "pred_renamed": None if pred_renamed is None else len(pred_renamed),
            "train_documents": None if train is None else len(train),
            "kb": None if kb is None else kb.snapshot_id(),
        },
        "not_analysed": {},
    }
    skipped = figures["not_analysed"]
    figures["substitution_rates"] = substitution_table(renamed)
    if pred_original is None and pred_renamed is None:
        skipped["performance"] = skipped["entity_count"] = "no predictions given (--pred-original / --pred-renamed)"
    else:
        figures["performance"] = performance_table(original, renamed, pred_original, pred_renamed, train)
        figures["entity_count"] = {
            name: asdict(f1_by_entity_count(preds, docs, bin_width=bin_width))
            for name, docs, preds in (("original", original, pred_original), ("renamed", renamed, pred_renamed))
            if preds is not None
        }
    popularity = popularity_quartiles(original, renamed, kb)
    figures["popularity"] = asdict(popularity)
    if not popularity.available:
        skipped["popularity"] = popularity.note
    if train is None:
        skipped["train_overlap"] = "no training split given (--train)"
    else:
        figures["train_overlap"] = overlap_table(original, renamed, train)
    return figures


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    value = value * 100 + 0.0  # no "-0.00"
    text = f"{value:+.2f}" if signed else f"{value:.2f}"
    return text.replace("-0.00", "+0.00" if signed else "0.00")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def render_markdown(figures: Mapping[str, Any], plot_name: str | None = None) -> str:
    """The markdown report of :func:`run_analyses` output (percentages with two decimals)."""
    inp = figures["inputs"]
    out = [
        "# Entity-name robustness report",
        "",
        f"Original: {inp['original_documents']} documents; renamed: {inp['renamed_documents']} documents"
        + (f"; training split: {inp['train_documents']} documents" if inp["train_documents"] is not None else "")
        + (f"; knowledge base: {inp['kb']}" if inp["kb"] else "")
        + ".",
        "",
        "## Substitution rates by entity type (Table 1)",
        "",
    ]
    rates = figures["substitution_rates"]
    out += _table(
        ["type", "entities", "substituted", "rate (%)"],
        [[t, str(r["entities"]), str(r["substituted"]), _pct(r["rate"])] for t, r in rates.items()],
    )
    perf = figures.get("performance")
    if perf:
        out += ["", "## Precision and recall (Table 2)", ""]
        out += _table(
            ["set", "P", "R", "F1", "Ign F1"],
            [
                [name, *(_pct(row[f], name == "change") for f in ("precision", "recall", "f1", "ign_f1"))]
                for name, row in perf.items()
            ],
        )
        out += ["", "## Intra- and inter-sentence F1 (Table 3)", ""]
        out += _table(
            ["set", "Intra F1", "Inter F1"],
            [[name, *(_pct(row[f], name == "change") for f in ("intra_f1", "inter_f1"))] for name, row in perf.items()],
        )
    pop = figures["popularity"]
    if pop["available"]:
        out += ["", "## Popularity of renamed entities (Table 4)", "", pop["note"] + ".", ""]
        out += _table(
            ["entities", *QUARTILES, "median statements"],
            [
                ["original", *(_pct(pop["original"][q]) for q in QUARTILES), f"{pop['median_original']:.0f}"],
                ["substituted", *(_pct(pop["substituted"][q]) for q in QUARTILES), f"{pop['median_substituted']:.0f}"],
            ],
        )
        cuts = ", ".join(f"{c:g}" for c in pop["cut_points"])
        out += ["", f"{pop['pairs']} substitutions; quartile cut points (statements): {cuts}; skipped: {pop['skipped']}."]
    overlap = figures.get("train_overlap")
    if overlap:
        out += ["", "## Mentions whose name appears in the training split (Table 5)", ""]
        types = list(dict.fromkeys([*overlap["original"], *overlap["renamed"]]))
        out += _table(
            ["set", *types],
            [[name, *(_pct(rows[t]["share"]) if t in rows else "-" for t in types)] for name, rows in overlap.items()],
        )
    curves = figures.get("entity_count")
    if curves:
        out += ["", "## F1 by number of entities (Figure 4)", ""]
        if plot_name:
            out += [f"![F1 by number of entities]({plot_name})", ""]
        out += _table(
            ["set", "points", "slope (F1 points per entity)", "intercept (F1 %)"],
            [
                [name, str(len(c["f1"])), "-" if c["slope"] is None else f"{c['slope'] * 100:+.3f}", _pct(c["intercept"])]
                for name, c in curves.items()
            ],
        )
    if figures["not_analysed"]:
        out += ["", "## Not analysed", ""]
        out += [f"- {name}: {why}" for name, why in figures["not_analysed"].items()]
    return "\n".join(out) + "\n"


def write_report(figures: Mapping[str, Any], output_dir: str | os.PathLike) -> dict[str, Path]:
    """Write ``figures.json``, ``report.md`` and the plot; returns their paths by name."""
    out = Path(output_dir)  # each writer creates it (atomic_path)
    paths: dict[str, Path] = {}
    curves = figures.get("entity_count")
    if curves:
        paths["entity_count_plot"] = plot_entity_count(
            {name: EntityCountCurve(**c) for name, c in curves.items()}, out / ENTITY_COUNT_PLOT
        )
    paths["figures"] = write_json(out / FIGURES, figures)
    paths["report"] = write_text(out / REPORT, render_markdown(figures, ENTITY_COUNT_PLOT if curves else None))
    return paths

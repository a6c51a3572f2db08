"""A whole attribution run: every gold fact of every document, then MAP(K) against the rationales; resumable
per document, and refusing training documents when given their titles (docs/attribution.md)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..documents.schema import Document
from ..atomic import open_run_log, write_json
from ..failures import Failure
from .attribution import AttributionConfig, DocumentAttributor
from .rationale_map import MAPCurve, map_curve

RECORDS = "attributions.jsonl"
RUN_CONFIG = "run_config.json"
MAP_FILE = "map.json"


class AttributionRunError(Failure):
    """The run cannot go ahead as asked (training overlap, existing results without resume, changed settings)."""


@dataclass
class AttributionRunResult:
    curve: MAPCurve
    documents: int
    skipped: int
    facts: int
    seconds: float
    output_dir: Path

    @property
    def facts_per_second(self) -> float | None:
        return self.facts / self.seconds if self.seconds > 0 else None


def title_overlap(docs: Iterable[Document], train_titles: Iterable[str]) -> list[str]:
    """Titles of ``docs`` that are also training titles, in document order."""
    train = set(train_titles)
    return [d.title for d in docs if d.title in train]


def run_attribution(
    model: Any,
    tokenizer: Any,
    docs: Sequence[Document],
    output_dir: str | os.PathLike,
    config: AttributionConfig | None = None,
    *,
    label: str = "",
    model_name: str = "",
    k_max: int = 30,
    exclude: str = "pair",
    rank_by: str = "signed",
    max_docs: int | None = None,
    resume: bool = False,
    train_titles: Iterable[str] | None = None,
    allow_train_overlap: bool = False,
    progress: bool = True,
    overwrite: bool = False,
) -> AttributionRunResult:
    """Attribute the gold facts of the first ``max_docs`` documents and write the run's files (see module doc);
    ``resume`` continues the run in ``output_dir`` (same settings), ``overwrite`` drops it."""
    config = config or AttributionConfig()
    docs = list(docs)[:max_docs]
    keys = [d.key for d in docs]
    if len(set(keys)) != len(keys):
        raise AttributionRunError("documents must have distinct keys (doc_id or title)")
    if not any(rel.extra.get("keywords") for d in docs for rel in d.relations):
        raise AttributionRunError("no relation carries 'keywords' rationales: attribute DocRED-HWE documents")
    if train_titles is not None:
        seen = title_overlap(docs, train_titles)
        if seen and not allow_train_overlap:
            raise AttributionRunError(
                f"{len(seen)} of the {len(docs)} documents to attribute are training documents of the model "
                f"(e.g. {seen[0]!r}); keep only documents it was not trained on (e.g. the HWE documents in "
                "Re-DocRED test) or allow the overlap explicitly"
            )
    out = Path(output_dir)
    run_config = {"model": model_name, "attribution": config.to_dict()}
    log = open_run_log(out, RECORDS, RUN_CONFIG, run_config, resume, AttributionRunError, overwrite=overwrite,
                       derived=(MAP_FILE,))
    records = log.records
    todo = [d for d in docs if d.key not in records]
    attributor = DocumentAttributor(model, tokenizer, config)
    try:
        bar = tqdm(todo, desc=f"Attributing {label or model_name}", unit="doc", disable=not progress)
        for doc in bar:
            rec = attributor.attribute(doc).to_dict()
            log.append(rec)
            if rec["seconds"] > 0:
                bar.set_postfix(facts_per_s=f"{len(rec['facts']) / rec['seconds']:.2f}")
    finally:
        log.close()

    ordered = [records[k] for k in keys if k in records]
    by_key = {d.key: d for d in docs}
    curve = map_curve(ordered, by_key, k_max=k_max, exclude=exclude, rank_by=rank_by, label=label or model_name)
    facts = sum(len(r["facts"]) for r in ordered)
    seconds = sum(r["seconds"] for r in ordered)
    gaps = [abs(f["gap"]) / max(abs(f["score"] - f["baseline_score"]), 1e-6) for r in ordered for f in r["facts"]]
    curve.extra = {
        "model": model_name,
        "attribution": config.to_dict(),
        "attributed_facts": facts,
        "attribution_seconds": round(seconds, 1),
        "median_relative_completeness_gap": float(sorted(gaps)[len(gaps) // 2]) if gaps else None,
    }
    write_json(out / MAP_FILE, curve.to_dict())
    return AttributionRunResult(curve, len(ordered), len(docs) - len(todo), facts, seconds, out)

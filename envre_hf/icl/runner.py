"""A whole in-context-learning evaluation: prompt, query, parse and score each test document, resumable from the
output folder's ``results.jsonl`` (docs/icl.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..atomic import open_run_log, refuse_used_records, write_json
from ..documents import Document, RelationSchema, docred_schema
from ..failures import Failure
from .backends import ChatBackend, backend_identity
from .parser import TripleParser
from .prompt import PromptBuilder, PromptConfig, Renamer
from ..metrics import score_predictions

RESULTS = "results.jsonl"
RUN_CONFIG = "run_config.json"
PREDICTIONS = "predictions.json"
SCORES = "scores.json"
PARSE_REPORT = "parse_report.json"

_REPORT_LISTS = ("unparsed_lines", "unknown_relations", "out_of_range", "self_pairs", "duplicates")


class ICLRunError(Failure):
    """The output directory cannot be used as asked (existing run without resume, changed settings)."""


@dataclass
class ICLResult:
    """What a run produced (also written to the output directory)."""

    predictions: list[dict[str, Any]]
    scores: dict[str, Any] | None
    parse_summary: dict[str, Any]
    documents: int
    skipped: int = 0


def summarize_parse_reports(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals over documents plus, per document with problems, what was dropped."""
    reports = [rec["parse"] for rec in records]
    totals = {"documents": len(records), **{k: sum(rep[k] for rep in reports) for k in ("lines", "parsed")},
              **{k: sum(len(rep[k]) for rep in reports) for k in _REPORT_LISTS}}
    problems = [{"doc": rec["doc"], **{k: rep[k] for k in _REPORT_LISTS if rep[k]}}
                for rec, rep in zip(records, reports) if any(rep[k] for k in _REPORT_LISTS)]
    return {"totals": totals, "documents_with_problems": problems}


def check_output_dir(output_dir: str | os.PathLike, resume: bool) -> None:
    """Refuse a folder already holding results unless resuming (cheap: ``envre icl`` checks before loading a model)."""
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        raise ICLRunError(f"{out}: a file, expected a folder")
    refuse_used_records(out / RESULTS, resume, ICLRunError)


def run_icl(
    test: Sequence[Document],
    train: Sequence[Document],
    backend: ChatBackend,
    output_dir: str | os.PathLike,
    config: PromptConfig | None = None,
    renamer: Renamer | None = None,
    max_docs: int | None = None,
    resume: bool = False,
    schema: RelationSchema | None = None,
    progress: bool = True,
) -> ICLResult:
    """Evaluate ``backend`` on the first ``max_docs`` test documents and write the run's files; scores use
    ``train`` for Ign F1 and are ``None`` when the test documents have no labels."""
    config = config or PromptConfig()
    schema = schema or docred_schema()
    out = Path(output_dir)
    docs = list(test)[:max_docs]
    # what the replies depend on: a resumed run must be answered the same way (endpoint, model, parameters,
    # demonstrations renamed or not, prompt)
    run_config = {"model": backend.model, "backend": backend_identity(backend), "renamer": renamer is not None,
                  "prompt": asdict(config)}  # fmt: skip
    check_output_dir(out, resume)
    log = open_run_log(out, RESULTS, RUN_CONFIG, run_config, resume, ICLRunError, ensure_ascii=True)
    records = log.records
    keys = [d.key for d in docs]
    if len(set(keys)) != len(keys):
        raise ICLRunError("test documents must have distinct keys (doc_id or title)")
    builder = PromptBuilder(train, config, renamer=renamer, schema=schema)
    parser = TripleParser(schema)
    todo = [d for d in docs if d.key not in records]
    try:
        for doc in tqdm(todo, desc=f"ICL {backend.model}", unit="doc", disable=not progress):
            prompt = builder.build(doc)
            completion = backend.complete(prompt.messages)
            preds, report = parser.parse(completion.text, doc, prompt.numbering)
            log.append({
                "doc": doc.key,
                "title": doc.title,
                "demonstrations": prompt.demonstrations,
                "response": completion.text,
                "predictions": preds,
                "parse": asdict(report),
                "usage": completion.usage,
                "cached": completion.cached,
            })
    finally:
        log.close()

    ordered = [records[k] for k in keys if k in records]
    predictions = [p for rec in ordered for p in rec["predictions"]]
    summary = summarize_parse_reports(ordered)
    scores = None
    if docs and all(d.has_labels for d in docs):
        scores = score_predictions(predictions, docs, train=[d for d in train if d.has_labels] or None).to_dict()
    write_json(out / PREDICTIONS, predictions, indent=None)
    write_json(out / PARSE_REPORT, summary)
    if scores is not None:
        write_json(out / SCORES, scores, ensure_ascii=True)
    return ICLResult(
        predictions=predictions,
        scores=scores,
        parse_summary=summary,
        documents=len(ordered),
        skipped=len(docs) - len(todo),
    )

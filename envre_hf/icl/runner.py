"""A whole in-context-learning evaluation: prompt, query, parse and score each test document, up to N requests in
flight, resumable from the output folder's ``results.jsonl`` (docs/icl.md)."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..atomic import open_run_log, refuse_used_records, write_json
from ..documents import Document, RelationSchema, docred_schema
from ..failures import Failure
from .backends import ChatBackend, backend_identity
from .parser import ParseReport, TripleParser
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


@dataclass
class DocumentResult:
    """What the model answered for one document: the reply, the predictions parsed from it (official format:
    ``title`` / ``doc_id``, ``h_idx``, ``t_idx``, ``r``) and the parse report; one line of ``results.jsonl``."""

    doc: str
    title: str
    demonstrations: list[str]
    response: str
    predictions: list[dict[str, Any]]
    parse: ParseReport
    usage: dict[str, Any]
    cached: bool


def predict_documents(
    backend: ChatBackend,
    documents: Sequence[Document],
    train: Sequence[Document],
    config: PromptConfig | None = None,
    *,
    renamer: Renamer | None = None,
    schema: RelationSchema | None = None,
    concurrency: int = 1,
    progress: bool = True,
    on_result: Callable[[DocumentResult], None] | None = None,
) -> list[DocumentResult]:
    """The ICL predictions of ``backend`` for ``documents``, in document order: each document's prompt (``k``
    demonstrations from ``train``, DA with ``renamer``, CG), the reply, the parsed triples.

    Up to ``concurrency`` requests are in flight (threads; a backend with ``complete_batch``, the local model,
    generates ``backend.batch_size`` prompts at once instead); the results are those of a sequential run. Each result
    goes to ``on_result`` in document order as soon as it and those before it are in (the runner writes it then); a
    failure raises after the results before it were given. A progress bar shows documents/s."""
    builder = PromptBuilder(train, config or PromptConfig(), renamer=renamer, schema=schema or docred_schema())
    parser, results = TripleParser(schema or docred_schema()), []
    prompts = ((doc, builder.build(doc)) for doc in documents)  # built in order, in this thread, as requests go
    with contextlib.closing(_complete(backend, prompts, concurrency)) as pairs:
        for doc, prompt, completion in tqdm(pairs, total=len(documents), desc=f"ICL {backend.model}", unit="doc",
                                            disable=not progress):
            preds, report = parser.parse(completion.text, doc, prompt.numbering)
            results.append(DocumentResult(doc.key, doc.title, prompt.demonstrations, completion.text, preds, report,
                                          completion.usage, completion.cached))
            if on_result is not None:
                on_result(results[-1])
    return results


def _complete(backend: ChatBackend, prompts: Iterable[tuple[Document, Any]], concurrency: int) -> Iterator[tuple]:
    """``(document, prompt, completion)`` in the order of ``prompts``, up to ``concurrency`` requests in flight (and as
    many queued, so a slow reply at the head does not idle the other workers), or in the backend's batches."""
    if hasattr(backend, "complete_batch"):
        while chunk := list(itertools.islice(prompts, backend.batch_size)):
            yield from ((doc, prompt, c) for (doc, prompt), c in zip(chunk, backend.complete_batch(
                [prompt.messages for _, prompt in chunk])))
        return
    pool, window = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="envre-icl"), deque()
    try:
        for doc, prompt in prompts:
            window.append((doc, prompt, pool.submit(backend.complete, prompt.messages)))
            if len(window) >= 2 * concurrency:
                doc, prompt, future = window.popleft()
                yield doc, prompt, future.result()
        while window:
            doc, prompt, future = window.popleft()
            yield doc, prompt, future.result()
    finally:  # a failure (or a caller that stops): queued requests are dropped, those in flight finish and are cached
        pool.shutdown(wait=True, cancel_futures=True)


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
    concurrency: int = 1,
    overwrite: bool = False,
) -> ICLResult:
    """Evaluate ``backend`` on the first ``max_docs`` test documents (``concurrency`` requests in flight, see
    :func:`predict_documents`) and write the run's files, each document's result as soon as those before it are in;
    scores use ``train`` for Ign F1 and are ``None`` when the test documents have no labels. ``resume`` continues
    the run in ``output_dir`` (same settings), ``overwrite`` drops it (the reply cache stays)."""
    config = config or PromptConfig()
    schema = schema or docred_schema()
    out = Path(output_dir)
    docs = list(test)[:max_docs]
    # what the replies depend on: a resumed run must be answered the same way (endpoint, model, parameters,
    # demonstrations renamed or not, prompt)
    run_config = {"model": backend.model, "backend": backend_identity(backend), "renamer": renamer is not None,
                  "prompt": asdict(config)}  # fmt: skip
    check_output_dir(out, resume or overwrite)
    log = open_run_log(out, RESULTS, RUN_CONFIG, run_config, resume, ICLRunError, overwrite=overwrite,
                       derived=(PREDICTIONS, PARSE_REPORT, SCORES), ensure_ascii=True)
    records = log.records
    keys = [d.key for d in docs]
    if len(set(keys)) != len(keys):
        raise ICLRunError("test documents must have distinct keys (doc_id or title)")
    todo = [d for d in docs if d.key not in records]
    try:
        predict_documents(backend, todo, train, config, renamer=renamer, schema=schema, concurrency=concurrency,
                          progress=progress, on_result=lambda result: log.append(asdict(result)))
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

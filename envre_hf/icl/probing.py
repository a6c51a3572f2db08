"""LLMs as the system ``envre probe`` probes: the prompts, backends, reply cache and parser of ``envre icl`` as a
relation extractor (docs/probe.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..analysis.extractors import ExtractorSystem
from ..documents import Document, RelationSchema
from .backends import ChatBackend, backend_identity
from .parser import TripleParser
from .prompt import PromptBuilder, PromptConfig, Renamer


def icl_triples(
    doc: Document, builder: PromptBuilder, backend: ChatBackend, parser: TripleParser, draw_for: Document | None = None
) -> list[dict[str, Any]]:
    """One document's predictions by in-context learning, as :func:`~envre_hf.icl.runner.run_icl` makes them
    (prompt, completion through the backend and its reply cache, tolerant parse); ``draw_for``: see
    :meth:`PromptBuilder.build`. The probe's one call into the ICL code."""
    prompt = builder.build(doc, draw_for=draw_for)
    completion = backend.complete(prompt.messages)
    return parser.parse(completion.text, doc, prompt.numbering)[0]


def llm_system(
    backend: ChatBackend,
    train: Sequence[Document],
    config: PromptConfig | None = None,
    renamer: Renamer | None = None,
    concurrency: int = 1,
    schema: RelationSchema | None = None,
) -> ExtractorSystem:
    """``backend`` prompted as ``envre icl`` prompts it (demonstrations from ``train``; DA with ``renamer``), each
    renamed copy with its original's demonstrations, so that the two prompts differ only in the names; up to
    ``concurrency`` requests in flight. Its identity (a resumed probe keeps it) is ``envre icl``'s run config."""
    builder = PromptBuilder(train, config, renamer=renamer, schema=schema)
    parser = TripleParser(builder.schema)
    cfg = builder.config
    setting = ", ".join([f"k={cfg.k}", *(["DA"] if cfg.da else []), *(["CG"] if cfg.cg else [])])
    identity = {"llm": backend_identity(backend), "renamer": renamer is not None, "prompt": asdict(cfg)}
    return ExtractorSystem(
        name=f"{backend.model} (ICL {setting})",
        extract=lambda doc, original: icl_triples(doc, builder, backend, parser, draw_for=original),
        identity=identity,
        kind="llm",
        concurrency=concurrency,
        schema=builder.schema,
    )

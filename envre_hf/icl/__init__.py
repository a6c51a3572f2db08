"""In-context learning for DocRE: prompts (DA and CG), chat backends, a tolerant triple parser and a resumable
runner (docs/icl.md)."""

from .backends import BackendError, ChatBackend, Completion, LocalBackend, OpenAIChatBackend, chat_cache_key
from .parser import ParseReport, TripleParser, parse_triples
from .prompt import (
    CONSISTENCY_GUIDANCE,
    Prompt,
    PromptBuilder,
    PromptConfig,
    draw_demonstrations,
    entity_list,
    entity_numbering,
    format_triples,
    mark_mentions,
)
from .runner import DocumentResult, ICLResult, ICLRunError, predict_documents, run_icl, summarize_parse_reports

__all__ = [
    "CONSISTENCY_GUIDANCE",
    "BackendError",
    "ChatBackend",
    "Completion",
    "DocumentResult",
    "ICLResult",
    "ICLRunError",
    "LocalBackend",
    "OpenAIChatBackend",
    "ParseReport",
    "Prompt",
    "PromptBuilder",
    "PromptConfig",
    "TripleParser",
    "chat_cache_key",
    "draw_demonstrations",
    "entity_list",
    "entity_numbering",
    "format_triples",
    "mark_mentions",
    "parse_triples",
    "predict_documents",
    "run_icl",
    "summarize_parse_reports",
]

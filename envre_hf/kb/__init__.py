"""Stage 2: knowledge bases the renaming pipeline links, types and draws replacement names from."""

from .base import Candidate, KnowledgeBase, KnowledgeBaseError
from .linked import PrecomputedLinks, names_by_frequency
from .wikidata_dump import IndexStats, WikidataDumpKB, index_dump
from .wikidata_http import WikidataHTTPKB

__all__ = [
    "Candidate",
    "IndexStats",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "PrecomputedLinks",
    "WikidataDumpKB",
    "WikidataHTTPKB",
    "index_dump",
    "names_by_frequency",
]

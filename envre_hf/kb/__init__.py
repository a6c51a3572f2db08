"""Stage 2: knowledge bases the renaming pipeline links, types and draws replacement names from."""

from .base import Candidate, KnowledgeBase, KnowledgeBaseError, distinct_names

__all__ = ["Candidate", "KnowledgeBase", "KnowledgeBaseError", "distinct_names"]

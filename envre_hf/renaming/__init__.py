"""Stage 3: renamed copies of documents (the four-step pipeline, value rules, isolation, leaks, stats)."""

from .coherence import coherence_statistics
from .driver import DocumentFailure, RenamedUnit, RenamingDriver, rename_unit
from .isolation import document_names, load_excluded_names, used_names
from .leaks import Leak, find_leaks
from .pipeline import (
    RenameReport,
    RenamingConfig,
    RenamingPipeline,
    is_substituted,
    original_key,
    rename_dataset,
)
from .stats import match_counts, substitution_rates
from .values import ValueRename, rename_values

__all__ = [
    "DocumentFailure",
    "Leak",
    "RenameReport",
    "RenamingConfig",
    "RenamedUnit",
    "RenamingDriver",
    "RenamingPipeline",
    "ValueRename",
    "coherence_statistics",
    "document_names",
    "find_leaks",
    "is_substituted",
    "load_excluded_names",
    "match_counts",
    "original_key",
    "rename_dataset",
    "rename_unit",
    "rename_values",
    "substitution_rates",
    "used_names",
]

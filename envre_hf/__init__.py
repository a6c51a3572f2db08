"""envre-hf: robustness of document-level relation extraction to entity name variations.

Stages in the order data travels: ``documents`` -> ``kb`` -> ``renaming`` -> ``features`` -> ``models`` ->
``training`` -> ``metrics`` / ``analysis`` (and ``icl``). The public names below are imported on first use (PEP 562),
so ``import envre_hf`` imports neither torch nor transformers; ``import envre_hf.models`` registers ``docre``.
"""

from __future__ import annotations

import importlib
from typing import Any

from .version import __version__

_PUBLIC = {
    "documents": ("Document", "DocumentError", "Entity", "Mention", "Relation", "Substitution", "read_documents",
                  "write_documents", "docred_schema"),
    "renaming": ("RenamingConfig", "RenamingPipeline"),
    "models": ("DocREConfig", "DocREModel", "DocREPreTrainedModel", "ATLOPModel", "KDDocREModel", "DocuNetModel",
               "push_docre_model", "predict"),
    "training": ("EVRTTrainer", "EVRTTrainingArguments", "EVRTPairDataset", "EVRTPairCollator"),
    "metrics": ("DocREScores", "TrainFacts", "score_predictions"),
}  # fmt: skip
#: public name -> subpackage that exports it
_EXPORTS = {name: stage for stage, names in _PUBLIC.items() for name in names}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

"""envre-hf: robustness of document-level relation extraction to entity name variations.

Stages in the order data travels: ``documents`` -> ``kb`` -> ``renaming`` -> ``features`` -> ``models`` ->
``training`` -> ``metrics`` / ``analysis`` (and ``icl``). The public names below are imported on first use (PEP 562),
so ``import envre_hf`` imports neither torch nor transformers. It teaches transformers the DocRE models and the
``document-relation-extraction`` task when transformers loads its auto models or its pipelines (post-import hooks),
so ``pipeline("document-relation-extraction", model=folder)`` and ``AutoModel.from_pretrained(folder)`` run
envre-hf's code, never a checkpoint's.
"""

from __future__ import annotations

import importlib
from typing import Any

import wrapt

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


def _register_with_transformers(module: Any) -> None:
    """Run by the import of transformers' auto models or pipelines (``module``): importing ``envre_hf.models``
    registers the model type, importing its ``pipeline_docre`` the pipeline's task (a module already being imported,
    as when it is what imports transformers, registers at its end)."""
    importlib.import_module(".models", __name__)  # by name: import envre_hf stays free of torch
    if module.__name__ == "transformers.pipelines":
        importlib.import_module(".models.pipeline_docre", __name__)


for _loaded in ("transformers.models.auto.modeling_auto", "transformers.pipelines"):
    wrapt.register_post_import_hook(_register_with_transformers, _loaded)  # now, if transformers loaded it already

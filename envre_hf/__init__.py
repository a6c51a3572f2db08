"""envre-hf: robustness of document-level relation extraction to entity name variations.

Stages, one subpackage each, in the order data travels: ``documents`` -> ``kb`` ->
``renaming`` -> ``features`` -> ``models`` -> ``training`` -> ``metrics`` / ``analysis``
(and ``icl`` for in-context learning with LLMs).

The public names below are imported on first use (PEP 562): ``import envre_hf`` imports neither
torch nor transformers. The first model name used (or ``import envre_hf.models``) registers the ``docre``
model type with transformers, so that ``AutoModel.from_pretrained`` of a saved DocRE model works.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

#: public name -> subpackage that exports it
_EXPORTS = {
    # documents
    "Document": "documents",
    "DocumentError": "documents",
    "Entity": "documents",
    "Mention": "documents",
    "Relation": "documents",
    "Substitution": "documents",
    "read_documents": "documents",
    "write_documents": "documents",
    "docred_schema": "documents",
    # renaming
    "RenamingConfig": "renaming",
    "RenamingPipeline": "renaming",
    # models
    "DocREConfig": "models",
    "DocREModel": "models",
    "DocREPreTrainedModel": "models",
    "ATLOPModel": "models",
    "KDDocREModel": "models",
    "DocuNetModel": "models",
    "push_docre_model": "models",
    "predict": "models",
    # training
    "EVRTTrainer": "training",
    "EVRTTrainingArguments": "training",
    "EVRTPairDataset": "training",
    "EVRTPairCollator": "training",
    # metrics
    "DocREScores": "metrics",
    "TrainFacts": "metrics",
    "score_predictions": "metrics",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # static analysers see the real names
    from .documents import (  # noqa: F401
        Document,
        DocumentError,
        Entity,
        Mention,
        Relation,
        Substitution,
        docred_schema,
        read_documents,
        write_documents,
    )
    from .metrics import DocREScores, TrainFacts, score_predictions  # noqa: F401
    from .models import (  # noqa: F401
        ATLOPModel,
        DocREConfig,
        DocREModel,
        DocREPreTrainedModel,
        DocuNetModel,
        KDDocREModel,
        predict,
        push_docre_model,
    )
    from .renaming import RenamingConfig, RenamingPipeline  # noqa: F401
    from .training import EVRTPairCollator, EVRTPairDataset, EVRTTrainer, EVRTTrainingArguments  # noqa: F401


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

"""Stage 3: DocRE models as transformers ``PreTrainedModel``s.

Names are imported on first use (PEP 562), so ``import envre_hf.models`` stays cheap. transformers
learns the ``docre`` model type as soon as its auto classes load (see :mod:`envre_hf.models.auto`):
``AutoModel.from_pretrained(dir)`` then returns the saved family. Saved models also carry their code
(``auto_map``) for users without envre-hf (``trust_remote_code=True``).
"""

from __future__ import annotations

import importlib
from typing import Any

from .auto import install as _install

#: public name -> submodule that defines it
_EXPORTS = {
    "HEAD_TYPES": "configuration_docre",
    "FAMILY_MODULES": "configuration_docre",
    "DocREConfig": "configuration_docre",
    "encoder_window": "configuration_docre",
    "portable_name": "configuration_docre",
    "adaptive_thresholding_loss": "losses",
    "none_class_ranking_loss": "losses",
    "DOCRE_HEADS": "modeling_docre",
    "DocREModelOutput": "modeling_docre",
    "DocREPreTrainedModel": "modeling_docre",
    "group_bilinear": "modeling_docre",
    "register_head": "modeling_docre",
    "threshold_decode": "modeling_docre",
    "DocREModel": "auto",
    "head_class": "auto",
    "ATLOPModel": "modeling_atlop",
    "KDDocREModel": "modeling_kd_docre",
    "DocuNetModel": "modeling_docunet",
    "model_card": "hub",
    "prepare_upload": "hub",
    "push_docre_model": "hub",
    "predict": "prediction",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    if name == "DOCRE_HEADS":  # the full registry: every family imported
        for module in sorted(set(getattr(importlib.import_module(".configuration_docre", __name__), "FAMILY_MODULES").values())):
            importlib.import_module(f".{module}", __name__)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


_install()

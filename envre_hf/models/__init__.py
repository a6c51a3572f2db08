"""Stage 3: DocRE models as transformers ``PreTrainedModel``s.

Names are imported on first use (PEP 562). ``import envre_hf.models`` registers the ``docre`` model type
with transformers (see :mod:`envre_hf.models.auto`): ``AutoModel.from_pretrained(dir)`` then returns the
saved family. Saved models also carry their code
(``auto_map``) for users without envre-hf (``trust_remote_code=True``). The families are listed once, in
:mod:`envre_hf.models.registry`.
"""

from __future__ import annotations

import importlib
from typing import Any

from .auto import register as _register
from .auto import register_pipeline as _register_pipeline

#: public name -> submodule that defines it
_EXPORTS = {
    "HEAD_TYPES": "registry",
    "Family": "registry",
    "HeadSettings": "registry",
    "KDDocREHeadConfig": "registry",
    "DocuNetHeadConfig": "registry",
    "families": "registry",
    "get_family": "registry",
    "head_class": "registry",
    "register_family": "registry",
    "unregister_family": "registry",
    "DocREConfig": "configuration_docre",
    "encoder_window": "configuration_docre",
    "portable_name": "configuration_docre",
    "adaptive_thresholding_loss": "losses",
    "none_class_ranking_loss": "losses",
    "DocREModelOutput": "modeling_docre",
    "DocREPreTrainedModel": "modeling_docre",
    "group_bilinear": "modeling_docre",
    "threshold_decode": "modeling_docre",
    "DocREModel": "auto",
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
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


_register()
_register_pipeline()

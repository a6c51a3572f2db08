"""Stage 3: DocRE models as transformers ``PreTrainedModel``s.

Importing this package registers ``DocREConfig`` with ``AutoConfig`` (model_type ``"docre"``)
and the :class:`DocREModel` dispatcher with ``AutoModel``, and imports every family so that each
registers its head types: ``AutoModel.from_pretrained(dir)`` then returns the saved family.
"""

import importlib
import logging

from transformers import AutoConfig, AutoModel

from .configuration_docre import HEAD_TYPES, DocREConfig, encoder_window
from .losses import adaptive_thresholding_loss, none_class_ranking_loss
from .modeling_atlop import ATLOPModel
from .modeling_docre import (
    DOCRE_HEADS,
    DocREModel,
    DocREModelOutput,
    DocREPreTrainedModel,
    group_bilinear,
    head_class,
    register_head,
    threshold_decode,
)

AutoConfig.register("docre", DocREConfig, exist_ok=True)
AutoModel.register(DocREConfig, DocREModel, exist_ok=True)

__all__ = [
    "DOCRE_HEADS",
    "HEAD_TYPES",
    "ATLOPModel",
    "DocREConfig",
    "DocREModel",
    "DocREModelOutput",
    "DocREPreTrainedModel",
    "adaptive_thresholding_loss",
    "encoder_window",
    "group_bilinear",
    "head_class",
    "none_class_ranking_loss",
    "register_head",
    "threshold_decode",
]

# Families written on top of the base register themselves on import; a family that is missing
# (or broken) must not make the others unusable, so it is reported and skipped.
for _module, _names in (("modeling_kd_docre", ("KDDocREModel",)), ("modeling_docunet", ("DocuNetModel",))):
    try:
        _mod = importlib.import_module(f"{__name__}.{_module}")
    except ImportError as _err:  # the family is not written yet / not installed
        if getattr(_err, "name", None) != f"{__name__}.{_module}":
            logging.getLogger(__name__).warning("could not import %s: %s", _module, _err)
        continue
    for _name in _names:
        if hasattr(_mod, _name):
            globals()[_name] = getattr(_mod, _name)
            __all__.append(_name)

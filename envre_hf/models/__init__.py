"""Stage 3: DocRE models as transformers ``PreTrainedModel``s; importing it registers the ``docre`` model type with
transformers' auto classes (:mod:`envre_hf.models.auto`); importing :mod:`.pipeline_docre`, which ``import envre_hf``
has transformers do when it loads its pipelines, registers the ``document-relation-extraction`` task."""

from .auto import DocREModel, register
from .configuration_docre import DocREConfig, encoder_window, portable_name
from .encoder import DocREEncoder, DocREEncoderOutput
from .hub import model_card, prepare_upload, push_docre_model
from .losses import adaptive_thresholding_loss, none_class_ranking_loss
from .modeling_atlop import ATLOPModel
from .modeling_docre import DocREModelOutput, DocREPreTrainedModel, group_bilinear, threshold_decode
from .modeling_docunet import DocuNetModel
from .modeling_kd_docre import KDDocREModel
from .prediction import predict
from .registry import (
    HEAD_TYPES,
    DocuNetHeadConfig,
    Family,
    HeadSettings,
    KDDocREHeadConfig,
    families,
    get_family,
    head_class,
    register_family,
    unregister_family,
)

register()

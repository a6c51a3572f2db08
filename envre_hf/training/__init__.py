"""Entity-variation robust training (EVRT): paired twins, consistency losses and the EVRT trainer."""

from .arguments import EVRT_LOSSES, TWIN_SOURCES, EVRTTrainingArguments
from .callbacks import TwinEpochCallback
from .consistency import prediction_consistency_loss, representation_consistency_loss, symmetric_bernoulli_kl
from .pairing import (
    DocumentFeaturesDataset,
    EVRTPairCollator,
    EVRTPairDataset,
    OnTheFlyTwins,
    PrebuiltTwins,
    TwinSource,
    assert_aligned,
    check_document_alignment,
    check_name_isolation,
    fixed_twins,
    original_key,
)
from .trainer import EVRTTrainer

__all__ = [
    "EVRT_LOSSES",
    "TWIN_SOURCES",
    "DocumentFeaturesDataset",
    "EVRTPairCollator",
    "EVRTPairDataset",
    "EVRTTrainer",
    "EVRTTrainingArguments",
    "OnTheFlyTwins",
    "PrebuiltTwins",
    "TwinEpochCallback",
    "TwinSource",
    "assert_aligned",
    "check_document_alignment",
    "check_name_isolation",
    "fixed_twins",
    "original_key",
    "prediction_consistency_loss",
    "representation_consistency_loss",
    "symmetric_bernoulli_kl",
]

"""The DocRE model families: the one registry every list of families is derived from (docs/models.md). Shipped
with every saved model (remote code): imports only the standard library, a family's module only when needed."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import KeysView, Mapping
from dataclasses import dataclass
from typing import Any


class HeadSettings:
    """Base of the families' settings dataclasses (a default for every field); :meth:`resolve` fills in the
    defaults that depend on the encoder (``config``: the ``DocREConfig``), so that a saved config lists every value."""

    def resolve(self, config: Any) -> HeadSettings:
        return self


@dataclass(frozen=True)
class Family:
    """One DocRE model family. ``module`` defines ``class_name``: ``".modeling_x"`` for a sibling of this file (what
    saved models ship), or an absolute module name; ``title``: the model cards' name of the head. ``emb_size`` and
    ``top_k``: what its original code uses when a config leaves them unset (``emb_size`` None: the encoder's hidden
    size, as ATLOP's released code on any encoder); ``original``: the GitHub repository of the code it equals
    (``benchmarks/check_family_equal.py``)."""

    head_type: str
    title: str
    module: str
    class_name: str
    settings: type[HeadSettings] | None = None
    emb_size: int | None = None
    top_k: int = 4
    original: str | None = None

    def parse_settings(self, given: HeadSettings | Mapping[str, Any] | None, config: Any) -> HeadSettings | None:
        """``given`` (a dict from config.json / the command line, or a settings object) as this family's
        typed settings, resolved against ``config``; None for a family without settings."""
        if self.settings is None:
            if given:
                raise ValueError(f"head_type {self.head_type!r} takes no head_settings; got {given!r}")
            return None
        if isinstance(given, HeadSettings):
            if not isinstance(given, self.settings):
                raise ValueError(
                    f"head_type {self.head_type!r} takes {self.settings.__name__} settings, not {type(given).__name__}"
                )
            return dataclasses.replace(given).resolve(config)  # a copy: the caller's object stays as it was
        given, known = dict(given or {}), {f.name for f in dataclasses.fields(self.settings)}
        unknown = sorted(set(given) - known)  # a typo
        if unknown:
            raise ValueError(
                f"head_settings has settings {unknown} unknown to head_type {self.head_type!r}; known: {sorted(known)}"
            )
        return self.settings(**given).resolve(config)


#: head_type -> family, in registration order.
_FAMILIES: dict[str, Family] = {}


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Make ``family`` known to config validation, ``DocREModel`` / ``AutoModel``, ``envre train`` and the cards."""
    if not family.head_type.isidentifier():
        raise ValueError(f"head_type {family.head_type!r} must be an identifier (it names files and options)")
    if family.head_type in _FAMILIES and not replace:
        raise ValueError(f"head_type {family.head_type!r} is already registered ({_FAMILIES[family.head_type]})")
    if family.settings is not None and not (isinstance(family.settings, type) and issubclass(family.settings, HeadSettings)):
        raise TypeError(f"family {family.head_type!r}: settings must be a HeadSettings dataclass")
    _FAMILIES[family.head_type] = family
    return family


def unregister_family(head_type: str) -> Family:
    """Forget ``head_type`` (e.g. a family registered by a test); returns it."""
    return _FAMILIES.pop(get_family(head_type).head_type)


def families() -> tuple[Family, ...]:
    """Every registered family, in registration order."""
    return tuple(_FAMILIES.values())


def get_family(head_type: str) -> Family:
    """The family of ``head_type``; an unknown one is an error that lists the known families."""
    family = _FAMILIES.get(head_type)
    if family is None:
        raise ValueError(f"unknown head_type {head_type!r}; known families: {', '.join(_FAMILIES)}")
    return family


def head_class(head_type: str) -> type:
    """The model class of ``head_type``; its module is imported now (a missing module or class is an error)."""
    family = get_family(head_type)
    module = importlib.import_module(family.module, __package__)  # the package only for a relative name
    cls = getattr(module, family.class_name, None)
    if not isinstance(cls, type):
        raise ImportError(f"family {head_type!r}: module {module.__name__} defines no class {family.class_name}")
    return cls


#: Every registered head type, a live view of the registry (argparse ``choices`` that follow :func:`register_family`).
HEAD_TYPES: KeysView[str] = _FAMILIES.keys()


# ---------------------------------------------------------------------- the families' settings


#: ``adaptive_focal_loss`` weights of a positive term (:func:`~.losses_kd_docunet.adaptive_focal_loss`).
AFL_WEIGHTS = ("released", "paper")


@dataclass
class KDDocREHeadConfig(HeadSettings):
    """KD-DocRE settings (docs/models.md); the defaults are the released model (tonytan48/KD-DocRE ``model.py``).
    ``pair_dim``: width of the pair matrix (None: the encoder's hidden size); ``matrix_size``: the pair matrix is at
    least this many entities wide (released: a fixed 42; None: each document's own entity count); ``mask_cells``:
    axial attention only among a document's valid pairs (released: every cell, self pairs and padding included);
    ``afl_self_pairs``: the adaptive focal loss averages over the self pairs too (released: their rows, all-zero
    logits, are part of the loss's mean)."""

    pair_dim: int | None = None
    axial_layers: int = 6
    axial_heads: int = 8
    axial_dropout: float = 0.0
    matrix_size: int | None = 42
    mask_cells: bool = False
    afl_gamma: float = 1.0
    afl_weight: str = "released"
    afl_self_pairs: bool = True
    use_distillation: bool = False
    distillation_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.axial_layers < 0 or self.axial_heads < 1:
            raise ValueError("axial_layers must be >= 0 and axial_heads >= 1")
        if self.afl_gamma < 0 or self.distillation_weight < 0:
            raise ValueError("afl_gamma and distillation_weight must be >= 0")
        if self.afl_weight not in AFL_WEIGHTS:
            raise ValueError(f"afl_weight must be 'released' or 'paper', got {self.afl_weight!r}")
        _check_matrix_size(self.matrix_size)

    def resolve(self, config: Any) -> KDDocREHeadConfig:
        return self if self.pair_dim is not None else dataclasses.replace(self, pair_dim=int(config.hidden_size))


def _check_matrix_size(size: int | None) -> None:
    if size is not None and size < 1:
        raise ValueError(f"matrix_size must be >= 1 or None, got {size}")


#: DocuNet's input maps: a projection of the pair's localized context (DocuNet's default), or the entity
#: embeddings' dot product, cosine and bilinear similarity.
CHANNEL_TYPES = ("context", "similarity")


@dataclass
class DocuNetHeadConfig(HeadSettings):
    """DocuNet settings (docs/models.md); the defaults are the released model (zjunlp/DocuNet
    ``model_balanceloss.py``, ``attn_unet.py``). ``unet_in_channels``: channels of the ``context`` map (``similarity``
    has 3); ``unet_down_channels``: width of the U-Net's first level (256 -> 512 -> 512 and back, as released);
    ``matrix_size``: the entity-pair map is at least this many entities wide (released: a fixed 42, its padding
    rows repeating the last entity; None: each document's own entity count)."""

    channel_type: str = "context"
    unet_in_channels: int = 3
    unet_down_channels: int = 256
    unet_out_channels: int = 256
    matrix_size: int | None = 42

    def __post_init__(self) -> None:
        if self.channel_type not in CHANNEL_TYPES:
            raise ValueError(f"channel_type {self.channel_type!r} is not one of {CHANNEL_TYPES}")
        if min(self.unet_in_channels, self.unet_down_channels, self.unet_out_channels) < 1:
            raise ValueError("the U-Net channel counts must be >= 1")
        _check_matrix_size(self.matrix_size)

    def resolve(self, config: Any) -> DocuNetHeadConfig:
        return dataclasses.replace(self, unet_in_channels=3) if self.channel_type == "similarity" else self


# ---------------------------------------------------------------------- the families of envre-hf

register_family(Family(
    "atlop", "ATLOP (adaptive thresholding + localized context pooling, Zhou et al., AAAI 2021)",
    ".modeling_atlop", "ATLOPModel", original="wzhouad/ATLOP",
))
register_family(Family(
    "ncrl", "NCRL (ATLOP architecture with the none-class ranking loss, Zhou & Lee, IJCAI 2022)",
    ".modeling_atlop", "ATLOPModel", original="THU-BPM/Env-DocRE",
))
register_family(Family(
    "kd_docre", "KD-DocRE (axial attention + adaptive focal loss, Tan et al., Findings of ACL 2022)",
    ".modeling_kd_docre", "KDDocREModel", KDDocREHeadConfig, emb_size=1024, original="tonytan48/KD-DocRE",
))
register_family(Family(
    "docunet", "DocuNet (entity-pair U-Net, Zhang et al., IJCAI 2021)",
    ".modeling_docunet", "DocuNetModel", DocuNetHeadConfig, emb_size=768, top_k=3, original="zjunlp/DocuNet",
))

"""``DocREConfig``: one configuration class for every DocRE family, the encoder's kept whole as a sub-config. Shipped
with every saved model (remote code): imports only transformers and siblings."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from transformers import AutoConfig, PretrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .registry import HeadSettings, get_family

#: ``DocREConfig.head_initialization`` values: the layers' PyTorch defaults (released code), or HF-style N(0, std).
HEAD_INITIALIZATIONS = ("pytorch", "normal")

#: Encoder families whose position ids start after the padding index (``padding_idx + 1``), so
#: ``max_position_embeddings`` overstates the usable window by ``pad_token_id + 1``.
_OFFSET_POSITION_MODELS = frozenset(
    {"roberta", "xlm-roberta", "camembert", "longformer", "bart", "mbart", "data2vec-text"}
)


def encoder_window(encoder_config: PretrainedConfig) -> int:
    """Longest token sequence (special tokens included) the encoder can read in one pass."""
    window = int(getattr(encoder_config, "max_position_embeddings", 512) or 512)
    if getattr(encoder_config, "model_type", "") in _OFFSET_POSITION_MODELS:
        window -= int(getattr(encoder_config, "pad_token_id", 1) or 1) + 1
    return window


def portable_name(name_or_path: str | os.PathLike) -> str:
    """What a saved config or card may say about where weights came from: a Hub id as it is, a Hub cache folder
    (``.../models--org--name/snapshots/<sha>``) as ``org/name``, any other local folder as its own name."""
    text = os.fspath(name_or_path)
    if not (os.path.isabs(text) or os.path.exists(text) or text.startswith(("./", "../", "~"))):
        return text  # a Hub id (or an already portable name)
    parts = Path(os.path.abspath(os.path.expanduser(text))).parts
    for i, part in enumerate(parts):
        if part.startswith("models--") and i + 1 < len(parts) and parts[i + 1] == "snapshots":
            return part[len("models--") :].replace("--", "/")
    return parts[-1] if parts else text


class DocREConfig(PretrainedConfig):
    """Encoder sub-config + head settings of a DocRE model (docs/models.md): 97 classes (DocRED's ``id2label``),
    class 0 = no relation / threshold. ``emb_size``: width of the pair extractors (None: the family's released value,
    :class:`~.registry.Family`). ``window``: the encoder window for long inputs (None: from
    ``max_position_embeddings``). ``ncrl_*``: NCRL's negative shift, none-class weight and none-class logit start
    (None: none, as released; docs/evrt.md). ``top_k``: relations per pair at decoding (None: the family's released value; 0: no cap).
    ``head_initialization``: ``"pytorch"`` (every released code: the layers' own defaults) or ``"normal"``
    (N(0, the encoder's initializer_range), zero biases). ``head_settings``: the family's settings dataclass (a dict
    in config.json). ``relation_names``: relation id -> name, for the pipeline's output.
    """

    model_type = "docre"
    #: ``Trainer.evaluate/predict`` never gathers the pair features (emb x block floats per pair).
    keys_to_ignore_at_inference = ["pair_representations", "bilinear_factors"]
    sub_configs_defaults = {"encoder": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    encoder: PretrainedConfig | dict | None = None
    head_type: str = "atlop"
    emb_size: int | None = None
    block_size: int = 64
    window: int | None = None
    top_k: int | None = None
    ncrl_margin: float = 0.05
    ncrl_none_weight: float = 1.0
    ncrl_none_bias: float | None = None
    head_initialization: str = "pytorch"
    head_settings: HeadSettings | dict | None = None
    encoder_name_or_path: str | None = None
    relation_names: dict[str, str] | None = None

    #: ``(id2label, relation id -> name)`` of a config built without labels: DocRED's, set when envre-hf registers
    #: its models (:func:`envre_hf.models.auto.register`); None in a copy loaded as remote code, which only reads
    #: saved configs (a saved config.json carries its own labels).
    default_relations = None

    def __post_init__(self, **kwargs: Any):
        defaults = type(self).default_relations
        if self.id2label is None and "num_labels" not in kwargs and defaults is not None:
            self.id2label = dict(defaults[0])
        # configs saved by earlier envre-hf name the pipeline's generated code, on which transformers' pipeline()
        # would then insist: the task is envre-hf's (registered), never a checkpoint's code
        kwargs.pop("custom_pipelines", None)
        super().__post_init__(**kwargs)
        if self.encoder_name_or_path is not None:
            self.encoder_name_or_path = portable_name(self.encoder_name_or_path)
        if isinstance(self.encoder, PretrainedConfig) and getattr(self.encoder, "_name_or_path", ""):
            self.encoder._name_or_path = portable_name(self.encoder._name_or_path)
        if self.label2id is None and self.id2label is not None:
            self.label2id = {name: int(i) for i, name in self.id2label.items()}
        if self.relation_names is None and defaults is not None and self.id2label is not None:
            names = defaults[1]
            self.relation_names = {r: names[r] for r in self.id2label.values() if r in names} or None
        family = get_family(self.head_type)
        if self.emb_size is None:
            self.emb_size = family.emb_size or int(self.encoder.hidden_size)
        if self.top_k is None:
            self.top_k = family.top_k
        if self.head_initialization not in HEAD_INITIALIZATIONS:
            raise ValueError(f"head_initialization must be one of {HEAD_INITIALIZATIONS}, got {self.head_initialization!r}")
        self.head_settings = family.parse_settings(self.head_settings, self)
        if self.emb_size % self.block_size:
            raise ValueError(f"emb_size ({self.emb_size}) must be a multiple of block_size ({self.block_size})")
        if self.window is None and isinstance(self.encoder, PretrainedConfig):
            self.window = encoder_window(self.encoder)

    def to_dict(self) -> dict[str, Any]:
        output = super().to_dict()
        if isinstance(self.head_settings, HeadSettings):
            output["head_settings"] = dataclasses.asdict(self.head_settings)
        return output

    @property
    def hidden_size(self) -> int:
        return int(self.encoder.hidden_size)

    @property
    def num_attention_heads(self) -> int:
        return int(self.encoder.num_attention_heads)


# ``save_pretrained`` copies this file next to config.json and writes ``auto_map["AutoConfig"]``.
DocREConfig.register_for_auto_class("AutoConfig")

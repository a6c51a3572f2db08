"""How transformers' ``AutoConfig`` / ``AutoModel`` find DocRE models when envre-hf is installed, without remote
code: ``import envre_hf.models`` calls :func:`register` (and ``import envre_hf`` has transformers import it when it
loads its auto models; the pipeline's task: :mod:`.pipeline_docre`)."""

from __future__ import annotations

from typing import Any

from transformers import AutoConfig, AutoModel

from ..documents.relations import docred_schema
from .configuration_docre import DocREConfig
from .registry import head_class


class DocREModel:
    """Dispatcher registered with ``AutoModel``: ``DocREModel(config)``, ``DocREModel.from_pretrained(dir)`` and
    ``AutoModel.from_pretrained(dir)`` build the family named by ``config.head_type`` (e.g. an ``ATLOPModel``)."""

    config_class = DocREConfig

    def __new__(cls, config: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
        return head_class(config.head_type)(config, *args, **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str, *model_args: Any, config: Any = None, **kwargs: Any):
        if config is None:
            hub = {k: kwargs[k] for k in ("revision", "cache_dir", "token", "local_files_only") if k in kwargs}
            config = AutoConfig.from_pretrained(pretrained_model_name_or_path, trust_remote_code=False, **hub)
        if type(config).__name__ != "DocREConfig" or not hasattr(config, "head_type"):
            raise ValueError(f"{pretrained_model_name_or_path} holds a {type(config).__name__}, not a DocREConfig")
        return head_class(config.head_type).from_pretrained(
            pretrained_model_name_or_path, *model_args, config=config, **kwargs
        )

    @classmethod
    def _from_config(cls, config: Any, **kwargs: Any) -> Any:
        return head_class(config.head_type)._from_config(config, **kwargs)

    @classmethod
    def from_encoder_pretrained(cls, encoder_name_or_path: str, **head: Any) -> Any:
        """Like ``DocREPreTrainedModel.from_encoder_pretrained``, for any ``head_type``."""
        head.setdefault("head_type", "atlop")
        return head_class(head["head_type"]).from_encoder_pretrained(encoder_name_or_path, **head)


def register() -> None:
    """``AutoConfig`` learns model type ``docre``, ``AutoModel`` builds :class:`DocREModel` (hence the saved family)
    for a ``DocREConfig``, and a new ``DocREConfig`` has DocRED's relations."""
    schema = docred_schema()
    DocREConfig.default_relations = (dict(schema.index2rel), dict(schema.id2name))
    AutoConfig.register("docre", DocREConfig, exist_ok=True)
    AutoModel.register(DocREConfig, DocREModel, exist_ok=True)

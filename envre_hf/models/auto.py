"""How transformers' ``AutoConfig`` / ``AutoModel`` find DocRE models when envre-hf is installed.

``import envre_hf`` must not import torch, yet ``AutoModel.from_pretrained(repo)`` must then work
without remote code. Registering with transformers imports torch (its auto modules do), so the
registration waits for transformers: :func:`install` registers at once when transformers' auto
modules are already loaded, else it hooks their import and registers right after they have loaded.
Saved models also carry their own code (``auto_map``) for users without envre-hf
(``trust_remote_code=True``). The same way, ``pipeline("document-relation-extraction", model=...)`` finds
:class:`~envre_hf.models.pipeline_docre.DocREPipeline` once ``transformers.pipelines`` has loaded.

:class:`DocREModel` is the class registered with ``AutoModel``: it builds or loads the family named
by ``config.head_type`` (importing that family's module only then; families: :mod:`envre_hf.models.registry`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import logging
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .registry import head_class

logger = logging.getLogger(__name__)

_CONFIG_AUTO = "transformers.models.auto.configuration_auto"
_MODEL_AUTO = "transformers.models.auto.modeling_auto"
_PIPELINES = "transformers.pipelines"
_PIPELINE_MODULE = f"{__package__}.pipeline_docre"
_CONFIG_MODULE = f"{__package__}.configuration_docre"


def _config_class() -> type | None:
    """``DocREConfig``, or None while its module is still being imported (its own import of transformers'
    auto classes fires the hooks; the hook on the module itself then registers once it is complete)."""
    module = sys.modules.get(_CONFIG_MODULE)
    if module is not None and not hasattr(module, "DocREConfig"):
        return None
    return importlib.import_module(_CONFIG_MODULE).DocREConfig


class _DispatcherType(type):
    @property
    def config_class(cls) -> type:  # a property: reading it (AutoModel.register does) imports transformers
        from .configuration_docre import DocREConfig  # lazy: `import envre_hf` must not import transformers

        return DocREConfig


class DocREModel(metaclass=_DispatcherType):
    """Dispatcher registered with ``AutoModel``: builds/loads the family named by ``config.head_type``.

    ``DocREModel(config)``, ``DocREModel.from_pretrained(dir)`` and ``AutoModel.from_pretrained(dir)``
    (after ``import envre_hf``) all return e.g. an ``ATLOPModel`` for head_type ``"atlop"``.
    """

    def __new__(cls, config: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
        return head_class(config.head_type)(config, *args, **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str, *model_args: Any, config: Any = None, **kwargs: Any):
        if config is None:
            from transformers import AutoConfig

            hub = {k: kwargs[k] for k in ("revision", "cache_dir", "token", "local_files_only") if k in kwargs}
            config = AutoConfig.from_pretrained(pretrained_model_name_or_path, **hub)
        if type(config).__name__ != "DocREConfig" or not hasattr(config, "head_type"):
            raise ValueError(f"{pretrained_model_name_or_path} holds a {type(config).__name__}, not a DocREConfig")
        return head_class(config.head_type).from_pretrained(
            pretrained_model_name_or_path, *model_args, config=config, **kwargs
        )

    @classmethod
    def _from_config(cls, config: Any, **kwargs: Any) -> Any:
        return head_class(config.head_type)._from_config(config, **kwargs)

    from_config = _from_config

    @classmethod
    def from_encoder_pretrained(cls, encoder_name_or_path: str, **head: Any) -> Any:
        """Like ``DocREPreTrainedModel.from_encoder_pretrained``, for any ``head_type``."""
        head.setdefault("head_type", "atlop")
        return head_class(head["head_type"]).from_encoder_pretrained(encoder_name_or_path, **head)


def register_config(configuration_auto: ModuleType | None = None) -> None:
    """``AutoConfig`` learns model type ``docre``."""
    configuration_auto = configuration_auto or importlib.import_module(_CONFIG_AUTO)
    config_class = _config_class()
    if config_class is not None:
        configuration_auto.AutoConfig.register("docre", config_class, exist_ok=True)


def register_model(modeling_auto: ModuleType | None = None) -> None:
    """``AutoModel`` builds :class:`DocREModel` (hence the saved family) for a ``DocREConfig``."""
    modeling_auto = modeling_auto or importlib.import_module(_MODEL_AUTO)
    config_class = _config_class()
    if config_class is not None:
        modeling_auto.AutoModel.register(config_class, DocREModel, exist_ok=True)


def register_pipeline(pipelines: ModuleType | None = None) -> None:
    """``pipeline("document-relation-extraction", ...)`` builds :class:`~envre_hf.models.pipeline_docre.DocREPipeline`.

    Skipped while the pipeline module is still being imported (its import of transformers' pipelines fires
    this hook): the hook on that module registers once it is complete."""
    module = sys.modules.get(_PIPELINE_MODULE)
    if module is not None and not hasattr(module, "DocREPipeline"):
        return
    from .pipeline_code import TASK  # lazy: the pipeline module imports torch and datasets
    from .pipeline_docre import DocREPipeline  # lazy: see above

    pipelines = pipelines or importlib.import_module(_PIPELINES)
    known = pipelines.PIPELINE_REGISTRY.supported_tasks.get(TASK)
    if known is None or known["impl"] is not DocREPipeline:
        model_auto = importlib.import_module(_MODEL_AUTO)
        pipelines.PIPELINE_REGISTRY.register_pipeline(TASK, pipeline_class=DocREPipeline, pt_model=model_auto.AutoModel)


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs ``callback(module)`` right after the module ``name`` has been executed (once)."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]):
        self.name, self.callback = name, callback
        self._loader: Any = None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if fullname != self.name or self._loader is not None:
            return None
        sys.meta_path.remove(self)  # find the real spec with the other finders
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        _run(self.callback, module)


def _run(callback: Callable[[ModuleType], None], module: ModuleType) -> None:
    try:
        callback(module)
    except Exception as err:  # a failed registration must never break transformers itself
        logger.warning("envre-hf could not register its DocRE models with transformers: %s", err)


def install() -> None:
    """Register with transformers now if its auto modules are loaded, else right after they load."""
    hooks = (
        (_CONFIG_AUTO, "AutoConfig", register_config),
        (_MODEL_AUTO, "AutoModel", register_model),
        (_PIPELINES, "PIPELINE_REGISTRY", register_pipeline),
    )
    for name, attr, callback in hooks:
        module = sys.modules.get(name)
        if module is not None and hasattr(module, attr):
            _run(callback, module)
        elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterImport(name, callback))
    for name, callback in ((_CONFIG_MODULE, lambda module: install()), (_PIPELINE_MODULE, lambda module: register_pipeline())):
        if name not in sys.modules and not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterImport(name, callback))

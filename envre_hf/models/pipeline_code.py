"""The ``document-relation-extraction`` pipeline's code, saved beside every checkpoint the library writes
(``DocREConfig.save_pretrained``, which every model's ``save_pretrained`` calls).

``pipeline("document-relation-extraction", model=repo, trust_remote_code=True)`` must work where envre-hf is
not installed: transformers then downloads the module that config.json's ``custom_pipelines`` names, and
only that module and its siblings. :mod:`envre_hf.models.pipeline_docre` needs document, featurization and
prediction code from several stages, so the saved ``pipeline_docre.py`` is GENERATED from those modules
(:func:`envre_hf.bundling.bundle_modules`, as the docre_f1 Space's scorer): never a hand copy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..atomic import write_text
from ..bundling import bundle_modules

TASK = "document-relation-extraction"
#: Name of the saved module and of the class in it.
MODULE, CLASS = "pipeline_docre", "DocREPipeline"
ROOTS = (f"{__package__}.{MODULE}",)


def custom_pipelines() -> dict[str, dict[str, Any]]:
    """config.json's ``custom_pipelines``: what transformers' ``pipeline()`` reads to load the saved code."""
    return {TASK: {"impl": f"{MODULE}.{CLASS}", "pt": ["AutoModel"], "type": "text"}}


def pipeline_source() -> str:
    """The standalone source of the saved ``pipeline_docre.py``."""
    return bundle_modules(
        ROOTS,
        title="The document-relation-extraction pipeline",
        writer="DocREPreTrainedModel.save_pretrained (envre_hf.models.pipeline_code)",
        purpose="transformers' pipeline() loads it with trust_remote_code=True where envre-hf is not installed",
    )


@contextlib.contextmanager
def pipeline_saved(config: Any, folder: str | os.PathLike) -> Iterator[None]:
    """Within the block (a config's ``save_pretrained``), ``config`` names the pipeline, whose code is written first."""
    folder = Path(folder)
    if folder.is_file():
        raise NotADirectoryError(20, "expected a folder to save the model into, got a file", str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / f"{MODULE}.py", pipeline_source())
    had = "custom_pipelines" in config.__dict__
    config.custom_pipelines = custom_pipelines()
    try:
        yield
    finally:
        if not had:
            del config.custom_pipelines

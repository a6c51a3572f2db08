"""Publishing the ``docre_f1`` metric as a Hugging Face Space that loads without envre-hf.

``evaluate.load`` downloads only ``docre_f1.py`` and its relative imports, so the upload carries the installed
package's :mod:`envre_hf.metrics.scoring` (the repository's Space folder holds no copy of it): the published
metric scores exactly as ``envre evaluate`` does. :func:`load_metric` loads the same, staged locally.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import scoring

#: Files of the Space folder that are uploaded, besides the scoring module.
SPACE_FILES = ("README.md", "app.py", "requirements.txt", "docre_f1.py")


def space_folder(folder: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Copy the Space's files from ``folder`` into ``destination``, with the package's ``scoring.py``."""
    folder, destination = Path(folder), Path(destination)
    missing = [name for name in SPACE_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not the docre_f1 Space folder: missing {', '.join(missing)}")
    destination.mkdir(parents=True, exist_ok=True)
    for name in SPACE_FILES:
        shutil.copyfile(folder / name, destination / name)
    shutil.copyfile(scoring.__file__, destination / "scoring.py")
    return destination


def load_metric(folder: str | os.PathLike = "spaces/docre_f1", **kwargs: Any) -> Any:
    """``evaluate.load`` of the Space as ``envre push-metric`` publishes it (:func:`space_folder`, staged in a
    temporary folder: evaluate keeps its own copy), i.e. what ``evaluate.load("envre/docre_f1")`` gives."""
    import evaluate  # lazy: only the evaluate module needs it

    with tempfile.TemporaryDirectory(prefix="envre-metric-") as tmp:
        return evaluate.load(str(space_folder(folder, Path(tmp) / "docre_f1")), **kwargs)


def push_metric(
    repo_id: str,
    folder: str | os.PathLike = "spaces/docre_f1",
    token: str | None = None,
    private: bool | None = None,
    commit_message: str = "Upload the docre_f1 metric with envre-hf",
    api: Any = None,
) -> Any:
    """Create the Space ``repo_id`` (gradio, as evaluate's metrics) and upload the metric in one commit."""
    from huggingface_hub import HfApi

    from ..hub_calls import push_folder  # lazy: the Hub only for a push

    api = api if api is not None else HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="envre-metric-") as tmp:
        staged = space_folder(folder, tmp)
        return push_folder(api, repo_id, "space", str(staged), what="the docre_f1 metric", private=private,
                           create_kwargs={"space_sdk": "gradio"}, commit_message=commit_message)

"""The ``docre_f1`` metric as a Hugging Face Space that loads without envre-hf.

``evaluate.load("envre/docre_f1")`` downloads ``docre_f1.py`` and the sibling modules it imports
relatively, nothing else; envre-hf is on no package index. So the Space carries the scorer as one
sibling module, ``docre_f1_scorer.py``, GENERATED here from the package's own modules
(:mod:`envre_hf.metrics.docre` and the document code it needs): never a hand copy.

``python -m envre_hf.metrics.space spaces/docre_f1`` rewrites the sibling module of the Space
folder; ``envre push-metric envre/docre_f1`` regenerates it and uploads the folder as a Space.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from .. import __version__
from ..bundling import bundle_modules

#: Name of the generated sibling module of the Space.
SCORER_MODULE = "docre_f1_scorer"
#: Modules whose names the Space's ``docre_f1.py`` imports; their envre-hf dependencies follow.
ROOTS = (
    "envre_hf.metrics.docre",
    "envre_hf.documents.formats",
    "envre_hf.documents.io",
    "envre_hf.documents.hf",
    "envre_hf.citations",
)
#: Files of a Space folder that are uploaded (besides the generated scorer).
SPACE_FILES = ("README.md", "app.py", "requirements.txt", "docre_f1.py")


def bundle_scorer(roots: tuple[str, ...] = ROOTS) -> str:
    """The source of the Space's scorer module: the envre-hf modules ``roots`` need, in one file."""
    return bundle_modules(
        roots,
        title="The DocRED scorer",
        writer="python -m envre_hf.metrics.space",
        purpose="the docre_f1 Space loads with only ``evaluate`` installed",
        version=__version__,
        name=SCORER_MODULE,
    )


def write_scorer(folder: str | os.PathLike) -> Path:
    """(Re)write ``<folder>/docre_f1_scorer.py`` from the installed package, atomically."""
    target = Path(folder) / f"{SCORER_MODULE}.py"
    text = bundle_scorer()
    fd, tmp = tempfile.mkstemp(prefix=f".{SCORER_MODULE}.", suffix=".tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def space_folder(folder: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Copy the Space's files from ``folder`` into ``destination`` with a freshly generated scorer."""
    folder, destination = Path(folder), Path(destination)
    missing = [name for name in SPACE_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not the docre_f1 Space folder: missing {', '.join(missing)}")
    destination.mkdir(parents=True, exist_ok=True)
    for name in SPACE_FILES:
        shutil.copyfile(folder / name, destination / name)
    write_scorer(destination)
    return destination


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

    api = api if api is not None else HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="envre-metric-") as tmp:
        staged = space_folder(folder, tmp)
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
        return api.upload_folder(repo_id=repo_id, folder_path=str(staged), repo_type="space", commit_message=commit_message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envre_hf.metrics.space", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="spaces/docre_f1", help="the Space folder (default spaces/docre_f1)")
    args = parser.parse_args(argv)
    print(write_scorer(args.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Publishing a built folder as a Hub dataset repo (and the dry run of what would be sent)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import PathLike
from ..documents.build_folder import WORK_DIR, unfinished_splits
from ..hub_client import push_folder
from .output_folder import MARKER_FILE, BuildError


@dataclass(frozen=True)
class UploadPlan:
    """Exactly what :func:`push_to_hub` sends: the files (relative paths) of the folder, to which repo."""

    repo_id: str
    repo_type: str
    folder: Path
    files: list[str]


#: Never uploaded: the marks of unfinished splits, temporary files and the folder's marker.
IGNORE_PATTERNS = [f"{WORK_DIR}/**", "**/*.tmp", "*.tmp", MARKER_FILE]


def upload_plan(output_dir: PathLike, repo_id: str) -> UploadPlan:
    """The dry run of :func:`push_to_hub`."""
    import fnmatch

    folder = Path(output_dir)
    files = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not any(fnmatch.fnmatch(p.relative_to(folder).as_posix(), pat) for pat in IGNORE_PATTERNS)
    )
    return UploadPlan(repo_id=repo_id, repo_type="dataset", folder=folder, files=files)


def push_to_hub(
    output_dir: PathLike,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    endpoint: str | None = None,
    commit_message: str | None = None,
) -> Any:
    """Create the dataset repo ``repo_id`` (if needed) and upload the built folder in one commit.

    ``endpoint`` defaults to ``HF_ENDPOINT`` (else the Hub) and ``token`` to ``HF_TOKEN`` / the saved login.
    Returns the commit info once the Hub's head is that commit (:func:`~envre_hf.hub_client.push_folder`).
    """
    from huggingface_hub import HfApi

    folder = Path(output_dir)
    if not (folder / "README.md").exists() or not (folder / "data").is_dir():
        raise BuildError(f"{folder} is not a built dataset folder (README.md and data/ missing)")
    if unfinished_splits(folder):
        raise BuildError(f"{folder} has a split whose write was cut short; run the same envre build again first")
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    return push_folder(
        api, repo_id, "dataset", str(folder), what=f"folder {folder}", private=private,
        ignore_patterns=IGNORE_PATTERNS, commit_message=commit_message or "Upload dataset built with envre build",
    )

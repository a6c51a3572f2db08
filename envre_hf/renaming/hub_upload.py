"""Publishing a built folder as a Hub dataset repo (and the dry run of what would be sent)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import PathLike
from ..documents.build_folder import WORK_DIR, unfinished_splits
from ..hub_calls import folder_files, push_folder
from .output_folder import MARKER_FILE, BuildError, read_statistics


@dataclass(frozen=True)
class UploadPlan:
    """Exactly what :func:`push_to_hub` sends: the files (relative paths) of the folder, to which repo."""

    repo_id: str
    repo_type: str
    folder: Path
    files: list[str]


#: Never uploaded: the marks of unfinished splits, temporary files and the folder's marker.
IGNORE_PATTERNS = [f"{WORK_DIR}/**", "**/*.tmp", "*.tmp", MARKER_FILE]


def stale_patterns(folder: Path) -> list[str]:
    """What a push deletes from the repository unless the folder uploads it: the shards (every config) and error
    lists of the folder's splits; else a rebuild with fewer shards leaves old ones that ``data/train-*`` reads too."""
    patterns = []
    for split in sorted(read_statistics(folder)):
        patterns += [f"data/{split}-*-of-*.parquet", f"data/*/{split}-*-of-*.parquet", f"errors/{split}.jsonl"]
    return patterns


def upload_plan(output_dir: PathLike, repo_id: str) -> UploadPlan:
    """The dry run of :func:`push_to_hub` (the files ``upload_folder`` selects, which the push then checks)."""
    folder = Path(output_dir)
    return UploadPlan(repo_id=repo_id, repo_type="dataset", folder=folder,
                      files=folder_files(str(folder), ignore_patterns=IGNORE_PATTERNS))


def push_to_hub(
    output_dir: PathLike,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    endpoint: str | None = None,
    commit_message: str | None = None,
) -> Any:
    """Create the dataset repo ``repo_id`` (if needed) and upload the built folder in one commit, deleting what it
    replaces (:func:`stale_patterns`).

    ``endpoint`` defaults to ``HF_ENDPOINT`` (else the Hub) and ``token`` to ``HF_TOKEN`` / the saved login.
    Returns the commit info once the Hub's head is that commit (:func:`~envre_hf.hub_calls.push_folder`).
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
        ignore_patterns=IGNORE_PATTERNS, delete_patterns=stale_patterns(folder) or None,
        commit_message=commit_message or "Upload dataset built with envre build",
    )

"""The one push of the package (a benchmark, a model, the metric's Space): a folder uploaded and confirmed on the Hub."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

from .net.client import configure_hub
from .net.hub_calls import HubError, hub_errors

def folder_files(folder: str, *, allow_patterns=None, ignore_patterns=None, path_in_repo: str | None = None) -> list[str]:
    """The repository paths ``upload_folder`` sends from ``folder``: its own filter (``filter_repo_objects``) with
    its default ignores (``.git``, ``.cache/huggingface``), so the plan of a push and its check match the upload."""
    root = Path(folder)
    local = sorted(p.relative_to(root).as_posix() for p in root.glob("**/*") if p.is_file())
    prefix = f"{path_in_repo.strip('/')}/" if path_in_repo and path_in_repo not in (".", "./") else ""
    ignore = [ignore_patterns] if isinstance(ignore_patterns, str) else list(ignore_patterns or [])
    chosen = filter_repo_objects(local, allow_patterns=allow_patterns, ignore_patterns=ignore + DEFAULT_IGNORE_PATTERNS)
    return [prefix + path for path in chosen]


def push_folder(api, repo_id: str, repo_type: str, folder: str, *, what: str, private: bool | None = None,
                create_kwargs: dict | None = None, **upload_kwargs):
    """Create ``repo_id`` if needed, upload ``folder`` and confirm it: the one push of the package (datasets, models,
    the metric's Space). The repository's head must be the commit ``upload_folder`` reports, holding every file of
    the folder (:func:`folder_files`; this also confirms an upload that made no commit because the Hub held every
    file unchanged, and catches files the Hub skips: a ``.gitignore``), else :class:`HubError`. The local folder is
    never changed, so a rerun completes a push. Returns the commit info."""
    configure_hub()
    action = f"push of {what} to {repo_type} repo {repo_id}"
    expected = folder_files(folder, allow_patterns=upload_kwargs.get("allow_patterns"),
                            ignore_patterns=upload_kwargs.get("ignore_patterns"),
                            path_in_repo=upload_kwargs.get("path_in_repo"))
    if "ignore_patterns" in upload_kwargs and not isinstance(upload_kwargs["ignore_patterns"], str):
        upload_kwargs["ignore_patterns"] = list(upload_kwargs["ignore_patterns"] or [])  # upload_folder extends it
    with hub_errors(action, getattr(api, "endpoint", None)):
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True, **(create_kwargs or {}))
        info = api.upload_folder(repo_id=repo_id, repo_type=repo_type, folder_path=str(folder), **upload_kwargs)
        if not getattr(info, "oid", None):
            raise HubError(f"{action}: the Hub reported no commit, so nothing is published; rerun the push")
        head = api.repo_info(repo_id, repo_type=repo_type).sha
        held = set(api.list_repo_files(repo_id, repo_type=repo_type, revision=info.oid)) if head == info.oid else set()
    if head != info.oid:
        raise HubError(f"{action}: the Hub reported commit {info.oid} but the repository's head is {head}: the push is "
                       "not confirmed; rerun it (the local folder is unchanged)")
    missing = [path for path in expected if path not in held]
    if missing:
        raise HubError(f"{action}: commit {info.oid} lacks {len(missing)} of the folder's {len(expected)} files "
                       f"({missing[0]!r} first): the Hub did not take them (a .gitignore in the repository?), so the "
                       "push is not confirmed; rerun it once they can be committed (the local folder is unchanged)")
    return info

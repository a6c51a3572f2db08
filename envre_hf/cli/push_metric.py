"""``envre push-metric REPO``: publish the docre_f1 metric as a Space (``evaluate.load(REPO)`` then works anywhere),
its scoring module the installed ``envre_hf/metrics/scoring.py``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo_id", help="the Space to create or update, e.g. envre/docre_f1")
    parser.add_argument(
        "--folder",
        type=Path,
        default=Path("spaces/docre_f1"),
        help="the metric's Space folder of the envre-hf repository (default: spaces/docre_f1)",
    )
    parser.add_argument("--token", help="Hub token (default: HF_TOKEN / the saved login)")
    parser.add_argument("--private", action="store_true", help="create the Space private")


def run(args: argparse.Namespace) -> int:
    from ..redaction import remember_secret  # lazy: start-up time
    from ..metrics.space import push_metric  # lazy: start-up time

    remember_secret(args.token)  # a server echoing it, or any error, never prints it

    try:
        info = push_metric(args.repo_id, args.folder, token=args.token, private=args.private or None)
    except FileNotFoundError as err:
        raise UsageError(f"{err} (run from the envre-hf repository root or pass --folder)") from None
    print(f"published {args.repo_id}: commit {info.oid} ({info.commit_url})")
    return 0

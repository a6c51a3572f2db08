"""Resuming from a checkpoint that a kill or a full disk cut short, and a full disk as one line.

``transformers`` writes ``checkpoint-N/`` in place, ``trainer_state.json`` last: a SIGKILL, a SIGINT or a full disk
while it writes leaves a folder with some of its files under its final name, and resuming from it (the newest)
fails on the missing ``trainer_state.json``. :func:`resume_checkpoint` skips such a folder with one warning line
naming it and resumes from the newest complete checkpoint; the folder is left where it is (nothing is deleted),
and the next save of step N writes it whole. :func:`disk_full_is_one_line` turns the errors a full disk raises
while saving (``OSError(ENOSPC)``, or torch's ``RuntimeError`` "file write failed") into an ``OSError`` naming
the output folder, which the CLI prints as one line with exit status 2.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

#: Written last by ``Trainer._save_checkpoint``: a checkpoint without it is incomplete.
TRAINER_STATE = "trainer_state.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
#: ``--resume_from_checkpoint`` values that mean "the newest checkpoint of --output_dir".
LATEST = ("true", "last", "latest")


def checkpoints(folder: str | os.PathLike) -> list[Path]:
    """The ``checkpoint-N`` folders of ``folder``, newest (largest N) first."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def is_complete(checkpoint: str | os.PathLike) -> bool:
    return (Path(checkpoint) / TRAINER_STATE).is_file()


def resume_checkpoint(value: str | bool | None, output_dir: str | os.PathLike) -> str | None:
    """The checkpoint to resume from for ``--resume_from_checkpoint value`` (``None``: start afresh).

    ``value`` is a checkpoint folder, ``output_dir`` itself or ``true``/``last`` (its newest checkpoint). An
    incomplete checkpoint (no ``trainer_state.json``) is skipped with one warning naming it, for the newest
    complete one of the same folder; none complete is a ``ValueError`` naming the folder.
    """
    if value is None or value is False or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    if value is True or text.lower() in LATEST:
        parent, wanted = Path(output_dir), None
    elif _CHECKPOINT.match(Path(text).name):
        parent, wanted = Path(text).parent, Path(text)
    else:
        parent, wanted = Path(text), None
    if wanted is not None and is_complete(wanted):
        return str(wanted)
    candidates = [c for c in checkpoints(parent) if wanted is None or int(c.name.split("-")[1]) <= int(wanted.name.split("-")[1])]
    for checkpoint in candidates:
        if is_complete(checkpoint):
            return str(checkpoint)
        logger.warning("skipping incomplete checkpoint %s (no %s: its write was cut short); resuming from an "
                       "older one", checkpoint, TRAINER_STATE)
    if wanted is not None and not wanted.is_dir():
        raise ValueError(f"--resume_from_checkpoint {wanted}: no such checkpoint folder")
    raise ValueError(f"--resume_from_checkpoint {text}: no complete checkpoint (with {TRAINER_STATE}) in {parent}")


_DISK_FULL_TEXTS = ("no space left on device", "file write failed", "disk quota exceeded")


@contextlib.contextmanager
def disk_full_is_one_line(output_dir: str | os.PathLike) -> Iterator[None]:
    """Training inside: a full disk while saving is ``OSError(ENOSPC)`` naming ``output_dir``."""
    try:
        yield
    except (OSError, RuntimeError) as err:
        full = getattr(err, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or any(
            t in str(err).lower() for t in _DISK_FULL_TEXTS
        )
        if not full:
            raise
        raise OSError(errno.ENOSPC, "no space left on device", str(output_dir)) from err

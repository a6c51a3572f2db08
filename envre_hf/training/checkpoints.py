"""Resuming from a checkpoint that a kill or a full disk cut short, a full disk as one line, and checkpoint state
files that are damaged or unsafe refused by name.

``transformers`` writes ``checkpoint-N/`` in place, ``trainer_state.json`` last: a SIGKILL, a SIGINT or a full disk
while it writes leaves a folder with some of its files under its final name. :class:`GuardedCheckpoints` (a base
of ``EVRTTrainer``) removes a checkpoint's ``trainer_state.json`` before saving it again and when its save fails,
so only a whole ``trainer_state.json`` vouches for a checkpoint (:func:`is_complete`). :func:`resume_checkpoint`
skips an incomplete folder with one warning line naming it and resumes from the newest complete checkpoint; the
folder is left where it is, and the next save of step N writes it whole. :func:`disk_full_is_one_line` turns the
errors a full disk raises while saving (``OSError(ENOSPC)``, safetensors' "No space left on device", torch's writer
failures) into a :class:`DiskFullError` naming the folder and what is kept. :func:`check_state_files` refuses, by
name, an optimizer / scheduler / scaler / RNG file that torch's weights-only loader (Trainer's) cannot read.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import pickle
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from transformers import Trainer
from transformers.trainer_pt_utils import safe_globals
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..atomic import refuse_links_below

logger = logging.getLogger(__name__)

#: Written last by ``Trainer._save_checkpoint``: a checkpoint without it (whole) is incomplete.
TRAINER_STATE = "trainer_state.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
#: ``--resume_from_checkpoint`` values that mean "the newest checkpoint of --output_dir".
LATEST = ("true", "last", "latest")
#: The pickled state files Trainer reads on resume (torch's weights-only loader), with the keys each must hold.
STATE_FILES = {"optimizer.pt": ("state", "param_groups"), "scheduler.pt": (), "scaler.pt": ()}
RNG_FILES = re.compile(r"^rng_state(_\d+)?\.pth$")
RNG_KEYS = ("python", "numpy", "cpu")


def checkpoints(folder: str | os.PathLike) -> list[Path]:
    """The ``checkpoint-N`` folders of ``folder``, newest (largest N) first."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def is_complete(checkpoint: str | os.PathLike) -> bool:
    """Whether ``checkpoint`` holds a whole ``trainer_state.json`` (a JSON object: one cut short by a full disk
    does not count)."""
    try:
        return isinstance(json.loads((Path(checkpoint) / TRAINER_STATE).read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


def resume_checkpoint(value: str | bool | None, output_dir: str | os.PathLike) -> str | None:
    """The checkpoint to resume from for ``--resume_from_checkpoint value`` (``None``: start afresh).

    ``value`` is a checkpoint folder, ``output_dir`` itself or ``true``/``last`` (its newest checkpoint). An
    incomplete checkpoint (no whole ``trainer_state.json``) is skipped with one warning naming it, for the newest
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
        logger.warning("skipping incomplete checkpoint %s (no whole %s: its write was cut short); resuming from an "
                       "older one", checkpoint, TRAINER_STATE)
    if wanted is not None and not wanted.is_dir():
        raise ValueError(f"--resume_from_checkpoint {wanted}: no such checkpoint folder")
    raise ValueError(f"--resume_from_checkpoint {text}: no complete checkpoint (with {TRAINER_STATE}) in {parent}")


class CheckpointStateError(ValueError):
    """A checkpoint's optimizer, scheduler, scaler or RNG file that cannot be resumed from: damaged, of the wrong
    shape, or holding objects other than tensors and plain values (never loaded: that could run code)."""


def check_state_files(checkpoint: str | os.PathLike) -> None:
    """Open each state file of ``checkpoint`` as Trainer will, with torch's weights-only loader and Trainer's
    allowlist (tensors mapped, not read), so a bad one is a :class:`CheckpointStateError` naming it before training
    starts, rather than torch's error (whose advice, ``weights_only=False``, would run the file's code)."""
    folder = Path(checkpoint)
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        keys = RNG_KEYS if RNG_FILES.match(path.name) else STATE_FILES.get(path.name)
        if keys is None or not path.is_file():
            continue
        try:
            with safe_globals():
                state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except pickle.UnpicklingError:
            problem = "holds objects other than tensors and plain values; envre-hf never loads such a file"
        except Exception as err:  # noqa: BLE001 - torch's reader: RuntimeError, EOFError, zip and OS errors
            problem = f"damaged, not a whole torch file ({type(err).__name__})"
        else:
            missing = [k for k in keys if k not in state] if isinstance(state, dict) else None
            problem = None if missing == [] else "not a state of the expected shape" + (
                f" (no {', '.join(missing)})" if missing else f" (a {type(state).__name__}, not a dict)")
        if problem:
            raise CheckpointStateError(
                f"{path}: cannot resume from it: {problem}; resume from another checkpoint "
                "(--resume_from_checkpoint) or start afresh"
            )


class GuardedCheckpoints(Trainer):
    """``Trainer`` whose checkpoints are safe to resume from: ``train`` refuses a symbolic link inside ``output_dir``
    (saves would follow it, ``push_to_hub`` would upload what it points to) and resumes only from a complete
    checkpoint (:func:`resume_checkpoint`) whose state files load (:func:`check_state_files`); a checkpoint's
    ``trainer_state.json`` (what marks it complete) is removed before its save and when the save fails, and a
    full disk while saving is one line naming it."""

    def train(self, resume_from_checkpoint: str | bool | None = None, *args: Any, **kwargs: Any):
        if os.path.isdir(self.args.output_dir):
            refuse_links_below(self.args.output_dir)
        checkpoint = resume_checkpoint(resume_from_checkpoint, self.args.output_dir)
        if checkpoint is not None:
            check_state_files(checkpoint)
        return super().train(checkpoint, *args, **kwargs)

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        folder = Path(self._get_output_dir(trial=trial)) / f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        state = folder / TRAINER_STATE
        if self.args.should_save:
            state.unlink(missing_ok=True)
        try:
            with disk_full_is_one_line(folder, "this checkpoint", "it is left incomplete and a resume skips it for "
                                       "the last whole one"):  # fmt: skip
                super()._save_checkpoint(model, trial)
        except Exception:
            if self.args.should_save:
                state.unlink(missing_ok=True)
            raise


class DiskFullError(OSError):
    """A full disk while training saved: ``errno`` ENOSPC; ``str()`` is the whole line (the folder, and which of
    its files are whole), which the CLI prints as it is (exit status 2)."""

    def __str__(self) -> str:
        return str(self.strerror)


_DISK_FULL_TEXTS = ("no space left on device", "disk quota exceeded")
#: What torch's zip writer says when a write fails underneath it (a full disk, mostly).
_WRITER_FAILURES = ("file write failed", "unexpected pos", "basic_ios::clear", "pytorchstreamwriter")


@contextlib.contextmanager
def disk_full_is_one_line(folder: str | os.PathLike, saving: str, kept: str) -> Iterator[None]:
    """Inside: a full disk while ``saving`` into ``folder`` is a :class:`DiskFullError` saying ``kept`` (what
    stays usable); other errors pass through, and so does a :class:`DiskFullError` raised further in."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as err:
        text = str(err).lower()
        full = getattr(err, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or any(t in text for t in _DISK_FULL_TEXTS)
        if not (full or any(t in text for t in _WRITER_FAILURES)):
            raise
        said = re.sub(r"^\[enforce fail at [^\]]*\][ .]*", "", str(err).splitlines()[0])[:120]
        what = "no space left on device" if full else f"a write failed (a full disk? torch says: {said})"
        raise DiskFullError(
            errno.ENOSPC, f"{folder}: {what} while saving {saving}; {kept}: free some space and rerun with "
            "--resume_from_checkpoint last"
        ) from err

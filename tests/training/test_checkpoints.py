"""A checkpoint cut short (kill or full disk while transformers writes it in place) never blocks a resume."""

from __future__ import annotations

import errno
import logging

import pytest
from safetensors import SafetensorError

from envre_hf.cli.common import error_message
from envre_hf.training.checkpoints import TRAINER_STATE, DiskFullError, disk_full_is_one_line, resume_checkpoint


def _checkpoint(out, step, complete=True):
    folder = out / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"x")
    if complete:
        (folder / TRAINER_STATE).write_text("{}")
    return folder


def test_the_newest_incomplete_checkpoint_is_skipped_with_one_line_naming_it(tmp_path, caplog):
    out = tmp_path / "out"
    _checkpoint(out, 2)
    good = _checkpoint(out, 10)  # 10 > 4 numerically: not a string sort
    cut = _checkpoint(out, 12, complete=False)
    with caplog.at_level(logging.WARNING, "envre_hf.training.checkpoints"):
        for value in ("true", str(out), str(cut), True):
            assert resume_checkpoint(value, out) == str(good)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4 and all(str(cut) in line and TRAINER_STATE in line for line in lines)
    assert cut.is_dir()  # nothing is deleted
    assert resume_checkpoint(str(good), out) == str(good) and resume_checkpoint(None, out) is None


def test_no_complete_checkpoint_is_one_error_naming_the_folder(tmp_path):
    out = tmp_path / "out"
    _checkpoint(out, 4, complete=False)
    with pytest.raises(ValueError, match=rf"no complete checkpoint .* in {out}"):
        resume_checkpoint("last", out)
    with pytest.raises(ValueError, match="no such checkpoint folder"):
        resume_checkpoint(str(tmp_path / "elsewhere" / "checkpoint-3"), out)


def test_a_checkpoint_whose_trainer_state_was_cut_short_is_incomplete(tmp_path):
    out = tmp_path / "out"
    good = _checkpoint(out, 1)
    (_checkpoint(out, 2) / TRAINER_STATE).write_text('{"global_step": 2, "log_hi')  # the disk filled while it was written
    assert resume_checkpoint("last", out) == str(good)


@pytest.mark.parametrize("raised", [
    OSError(errno.ENOSPC, "No space left on device"),
    SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"),
    RuntimeError("[enforce fail at inline_container.cc:626] . PytorchStreamWriter failed writing file data/0: file write failed"),
    RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"),
])  # fmt: skip
def test_a_full_disk_while_saving_is_one_line_naming_the_folder_and_what_is_kept(tmp_path, raised):
    folder = tmp_path / "out" / "checkpoint-2"
    with pytest.raises(DiskFullError) as info:
        with disk_full_is_one_line(folder, "this checkpoint", "a resume skips it"):
            raise raised
    assert info.value.errno == errno.ENOSPC
    message = error_message(info.value)
    assert message.startswith(f"{folder}: ") and message.endswith(
        " while saving this checkpoint; a resume skips it: free some space and rerun with --resume_from_checkpoint last"
    )
    assert ("no space left on device" in message) == ("space" in str(raised).lower())
    with pytest.raises(DiskFullError) as outer:  # a checkpoint's own line is kept by the run's
        with disk_full_is_one_line(tmp_path / "out", "training", "the checkpoints are whole"):
            raise info.value
    assert outer.value is info.value
    with pytest.raises(RuntimeError, match="other"):  # anything else passes through
        with disk_full_is_one_line(tmp_path, "training", "kept"):
            raise RuntimeError("other")

"""A checkpoint cut short (kill or full disk while transformers writes it in place) never blocks a resume."""

from __future__ import annotations

import errno
import logging

import pytest

from envre_hf.cli.common import error_message
from envre_hf.training.checkpoints import TRAINER_STATE, disk_full_is_one_line, resume_checkpoint


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


@pytest.mark.parametrize("raised", [OSError(errno.ENOSPC, "No space left on device"),
                                    RuntimeError("[enforce fail at inline_container.cc:626] . PytorchStreamWriter "
                                                 "failed writing file data/0: file write failed")])
def test_a_full_disk_while_saving_is_one_line_naming_the_output(tmp_path, raised):
    with pytest.raises(OSError) as info:
        with disk_full_is_one_line(tmp_path / "out"):
            raise raised
    assert error_message(info.value) == f"{tmp_path / 'out'}: no space left on device (nothing was half-written: free some space and rerun)"
    with pytest.raises(RuntimeError, match="other"):  # anything else passes through
        with disk_full_is_one_line(tmp_path):
            raise RuntimeError("other")

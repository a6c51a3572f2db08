"""No load of the project runs a checkpoint's code, whatever is typed at a prompt: a folder whose config names a
module (``auto_map``) that would write a marker file is refused by ``envre evaluate --model``, ``envre train
--model_name_or_path`` and the local ICL backend with one line naming it (exit 2), "y" on stdin, no marker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from malformed_inputs import SAMPLE_DOCS, SAMPLE_TRAIN

REPO = Path(__file__).resolve().parents[2]


def _code_folder(folder: Path, marker: Path, model_type: str = "evil") -> Path:
    """A checkpoint whose config and tokenizer config name ``evil.py``; importing it writes ``marker``."""
    folder.mkdir(parents=True)
    (folder / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizer\n"
        "class EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n"
        "class EvilModel(PreTrainedModel):\n    config_class = EvilConfig\n"
        "class EvilTokenizer(PreTrainedTokenizer):\n    pass\n"
    )
    models = {name: "evil.EvilModel" for name in ("AutoModel", "AutoModelForCausalLM")}
    config = {"model_type": model_type, "auto_map": {"AutoConfig": "evil.EvilConfig", **models}}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["evil.EvilTokenizer", None]}}))
    return folder


def _envre(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``envre ARGS`` in a fresh process (transformers' prompt reads stdin: it gets "y")."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "envre_hf.cli.main", *args], cwd=cwd, env=env, input="y\ny\ny\n",
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("command", ["evaluate", "train", "icl"])
def test_a_folder_naming_its_own_code_is_refused_and_the_code_never_runs(command, tmp_path):
    marker = tmp_path / "the-checkpoint-code-ran"
    model = _code_folder(tmp_path / "model", marker)
    args = {
        "evaluate": ["evaluate", "--model", str(model), "--gold", str(SAMPLE_DOCS), "--device", "cpu"],
        "train": ["train", "--model_name_or_path", str(model), "--train_file", str(SAMPLE_TRAIN),
                  "--output_dir", str(tmp_path / "run"), "--max_steps", "1", "--report_to", "none"],
        "icl": ["icl", "--backend", "local", "--model", str(model), "--test", str(SAMPLE_DOCS), "--train",
                str(SAMPLE_TRAIN), "--max-docs", "1", "--output", str(tmp_path / "icl")],
    }[command]
    proc = _envre(args, tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert str(model) in lines[0] and "envre-hf never runs a checkpoint's code" in lines[0], lines[0]
    assert "[y/N]" not in proc.stdout + proc.stderr  # never asked
    assert not marker.exists()


def test_a_docre_model_whose_tokenizer_names_its_own_code_is_refused_not_replaced(tmp_path):
    """The model loads with envre-hf's classes; its tokenizer would need the folder's code: refused, not
    silently swapped for the encoder's tokenizer."""
    from _pipeline_helpers import save_docre_model

    from envre_hf.models.loading import CheckpointCodeRefused
    from envre_hf.models.prediction import load_for_inference

    marker = tmp_path / "the-checkpoint-code-ran"
    model = save_docre_model(tmp_path / "model")
    (model / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (model / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["evil.Tok", None]}}))
    with pytest.raises(CheckpointCodeRefused, match=r"\(auto_map in tokenizer_config.json\)") as err:
        load_for_inference(str(model), "cpu")
    assert err.value.location == str(model) and not marker.exists()


def test_other_load_errors_stay_as_they_are(tmp_path):
    from envre_hf.models.loading import code_files, no_checkpoint_code

    assert code_files(tmp_path / "no" / "such" / "folder") == [] and code_files("../not/a/hub/id") == []

    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="something else") as err, no_checkpoint_code(folder):
        raise ValueError("something else")
    assert type(err.value) is ValueError

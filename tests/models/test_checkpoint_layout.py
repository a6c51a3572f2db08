"""Checkpoints saved before the encoder module (``checkpoints_before_encoder_module/``: tiny ATLOP, KD-DocRE and
DocuNet models saved by envre-hf at commit 42f4730, with their logits on ``inputs.json``, one document of them read
in two windows) load with the same logits, through ``from_pretrained`` and through ``load_state_dict`` (Trainer's
resume), and are saved again in the same layout: the encoder's tensors under ``encoder.<name>``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel

from envre_hf.models import DocREModel

SAVED = Path(__file__).parent / "checkpoints_before_encoder_module"
FAMILIES = ["atlop", "kd_docre", "docunet"]


def _logits(model) -> torch.Tensor:
    inputs = json.loads((SAVED / "inputs.json").read_text())
    with torch.no_grad():
        return model.eval()(
            input_ids=torch.tensor(inputs["input_ids"]), attention_mask=torch.tensor(inputs["attention_mask"]),
            entity_pos=inputs["entity_pos"], hts=inputs["hts"],
        ).logits  # fmt: skip


@pytest.mark.parametrize("family", FAMILIES)
def test_an_old_checkpoint_loads_with_its_logits_and_is_saved_in_its_layout(family, tmp_path):
    folder = SAVED / family
    expected = torch.tensor(json.loads((folder / "logits.json").read_text()))
    for loader in (DocREModel.from_pretrained, lambda f: AutoModel.from_pretrained(f, trust_remote_code=False)):
        model = loader(folder)
        assert model.config.head_type == family and model.config.window < 100  # the 100-token document is windowed
        assert torch.allclose(_logits(model), expected, atol=1e-5)
    model.save_pretrained(tmp_path)
    old, new = load_file(folder / "model.safetensors"), load_file(tmp_path / "model.safetensors")
    assert sorted(new) == sorted(old) and any(k.startswith("encoder.embeddings.") for k in new)
    assert all(torch.equal(new[k], old[k]) for k in old)
    assert all(name.startswith("encoder.transformer.") for name, _ in model.encoder.named_parameters(prefix="encoder"))


@pytest.mark.parametrize("family", FAMILIES)
def test_load_state_dict_reads_checkpoint_files_as_trainer_resume_does(family):
    folder = SAVED / family
    model = DocREModel(DocREModel.from_pretrained(folder).config)  # fresh weights
    expected = torch.tensor(json.loads((folder / "logits.json").read_text()))
    assert not torch.allclose(_logits(model), expected, atol=1e-3)
    result = model.load_state_dict(load_file(folder / "model.safetensors"), strict=False)  # transformers' Trainer call
    assert not result.missing_keys and not result.unexpected_keys
    assert torch.allclose(_logits(model), expected, atol=1e-5)

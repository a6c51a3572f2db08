"""Precision by the hardware: ``--bf16`` / ``autocast="bf16"`` run fp32 (one warning line) where bf16 is emulated.

The CPU running these tests may or may not have native bf16, so every test sets torch's capability checks
itself (``torch.cpu._is_avx512_bf16_supported`` / ``_is_amx_tile_supported``, ``torch.cuda.is_bf16_supported``).
"""

from __future__ import annotations

import logging

import pytest
import torch
from _training_helpers import tiny_model

import envre_hf.models.precision as precision
from envre_hf.features import featurize_document
from envre_hf.models.precision import fit_weights, native_bf16, resolve_autocast
from envre_hf.models.prediction import iter_logits

WARNING = "has no native bf16"


def _cpu(monkeypatch, avx512_bf16: bool, amx: bool) -> None:
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    monkeypatch.setattr(precision, "_warned", set())
    for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def emulated(monkeypatch):
    """A CPU like an AVX2-only EPYC: neither AVX512-BF16 nor AMX."""
    _cpu(monkeypatch, False, False)


@pytest.fixture(scope="module")
def docs(redocred_dev):
    return [d for d in redocred_dev[:40] if 3 <= d.num_entities <= 10][:2]


def test_native_bf16_follows_torchs_cpu_and_cuda_checks(monkeypatch):
    for avx512_bf16, amx in [(False, False), (True, False), (False, True)]:
        _cpu(monkeypatch, avx512_bf16, amx)
        assert native_bf16("cpu") is (avx512_bf16 or amx)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for supported in (False, True):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, s=supported, **k: s)
        assert native_bf16("cuda:0") is supported
    assert native_bf16("meta") is False


def test_a_onednn_isa_cap_below_bf16_makes_bf16_emulated(monkeypatch):
    _cpu(monkeypatch, True, True)  # the CPU has it, but oneDNN is told not to use it
    for name, cap, native in [("ONEDNN_MAX_CPU_ISA", "AVX2", False), ("DNNL_MAX_CPU_ISA", "avx512_core", False),
                              ("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16", True), ("ONEDNN_MAX_CPU_ISA", "ALL", True)]:
        monkeypatch.setenv(name, cap)
        assert native_bf16("cpu") is native, (name, cap)
        monkeypatch.delenv(name)


def test_bf16_falls_back_to_fp32_with_one_warning_line_where_emulated(emulated, caplog):
    with caplog.at_level(logging.WARNING, logger="envre_hf.models.precision"):
        assert resolve_autocast("bf16", "cpu") is None
        assert resolve_autocast("bf16", "cpu") is None  # once per device and process
        assert resolve_autocast("auto", "cpu") is None  # auto: silently
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and WARNING in lines[0] and "\n" not in lines[0] and "--precision bf16-force" in lines[0]
    assert resolve_autocast("bf16-force", "cpu") == "bf16"
    assert resolve_autocast("fp32", "cpu") is None and resolve_autocast(None, "cpu") is None
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_autocast("int4", "cpu")


def test_auto_and_bf16_run_bf16_where_native(monkeypatch, caplog):
    _cpu(monkeypatch, False, True)
    with caplog.at_level(logging.WARNING):
        assert resolve_autocast("auto", "cpu") == "bf16" and resolve_autocast("bf16", "cpu") == "bf16"
    assert not caplog.records


def test_emulated_bf16_predicts_exactly_the_fp32_logits_and_force_runs_bf16(tokenizer, docs, emulated):
    model = tiny_model(tokenizer, max_positions=128).eval()
    features = [featurize_document(d, tokenizer) for d in docs]
    pad = tokenizer.pad_token_id
    fp32 = dict(iter_logits(model, features, pad, progress=False))
    asked = dict(iter_logits(model, features, pad, progress=False, autocast="bf16"))
    forced = dict(iter_logits(model, features, pad, progress=False, autocast="bf16-force"))
    for i in fp32:
        assert torch.equal(asked[i], fp32[i])  # the fp32 path ran, so its time is the fp32 time
        assert not torch.equal(forced[i], fp32[i])


def test_envre_evaluate_bf16_warns_and_scores_as_fp32_unless_forced(tokenizer, docs, tmp_path, capsys, caplog,
                                                                     monkeypatch, emulated):
    import envre_hf.models.prediction as prediction_module
    from envre_hf.cli.main import main
    from envre_hf.documents import write_documents

    model = tiny_model(tokenizer, max_positions=128).eval()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    write_documents(docs, tmp_path / "gold.json")
    seen = []
    real = prediction_module.iter_logits

    def spy(*args, **kwargs):
        seen.append(kwargs.get("autocast"))
        return real(*args, **kwargs)

    monkeypatch.setattr(prediction_module, "iter_logits", spy)
    argv = ["evaluate", "--model", str(tmp_path / "model"), "--gold", str(tmp_path / "gold.json")]
    outputs = {}
    for flags in ([], ["--bf16"], ["--precision", "auto"], ["--precision", "bf16"], ["--bf16", "force"]):
        caplog.clear()
        assert main(argv + flags + ["--save-predictions", str(tmp_path / "p.json")]) == 0
        capsys.readouterr()
        outputs[" ".join(flags)] = (tmp_path / "p.json").read_text()
        warned = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
        assert len(warned) == (flags == ["--bf16"])  # once per process: --precision bf16 is not warned again
    assert seen == [None, "bf16", "auto", "bf16", "bf16-force"]
    assert outputs["--bf16"] == outputs["--precision auto"] == outputs[""]
    assert main(argv + ["--bf16", "--precision", "fp32"]) == 2
    assert "disagree" in capsys.readouterr().err
    assert main(argv + ["--bf16", "fast"]) == 2


def test_pipeline_casts_bf16_weights_to_fp32_where_emulated_unless_forced(tokenizer, emulated, caplog):
    model = tiny_model(tokenizer, max_positions=128).to(torch.bfloat16)
    with caplog.at_level(logging.WARNING):
        assert next(fit_weights(model, "bf16-force").parameters()).dtype == torch.bfloat16
        assert next(fit_weights(model).parameters()).dtype == torch.float32
    assert WARNING in caplog.text


def test_pipeline_dtype_bfloat16_runs_fp32_where_emulated(tmp_path, emulated):
    pytest.importorskip("spacy")
    from _pipeline_helpers import save_docre_model
    from transformers import pipeline

    import envre_hf  # noqa: F401  (registers the task)

    folder = save_docre_model(tmp_path / "model")
    pipe = pipeline("document-relation-extraction", model=str(folder), dtype=torch.bfloat16, device="cpu")
    assert next(pipe.model.parameters()).dtype == torch.float32  # bf16 forced: fit_weights above

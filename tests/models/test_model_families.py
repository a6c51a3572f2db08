"""The model-family registry (``envre_hf.models.registry``) is the one list of families.

A toy family registered here must reach every place that lists families (``envre train`` choices, config
validation, the ``DocREModel`` / ``AutoModel`` dispatch, saved configs, model cards, the unknown-family
error); no file of the code base keeps its own list; typed settings round-trip through config.json.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from transformers import AutoModel, BertConfig

from _training_helpers import TINY_HEADS, save_tiny_encoder

from envre_hf.features import DocRECollator, featurize_document
from envre_hf.models import DocREConfig, DocREModel
from envre_hf.models.hub import model_card
from envre_hf.models.losses import adaptive_thresholding_loss
from envre_hf.models.modeling_docre import DocREModelOutput, DocREPreTrainedModel
from envre_hf.models.registry import (
    HEAD_TYPES,
    Family,
    HeadSettings,
    families,
    get_family,
    head_class,
    register_family,
    unregister_family,
)
from envre_hf.training.run import ModelArguments, build_model, parse_args

REPO = Path(__file__).resolve().parents[2]
BUILT_IN = ("atlop", "ncrl", "kd_docre", "docunet")


# --------------------------------------------------------------------------- a toy family


@dataclass
class ToySettings(HeadSettings):
    """``scale`` multiplies the logits; ``width`` (None: the encoder's hidden size) is the pair layer's width."""

    scale: float = 1.0
    width: int | None = None

    def resolve(self, config: Any) -> ToySettings:
        return self if self.width is not None else dataclasses.replace(self, width=int(config.hidden_size))


class ToyModel(DocREPreTrainedModel):
    """Head and tail embeddings -> one linear layer -> logits (times ``scale``)."""

    def __init__(self, config: DocREConfig):
        super().__init__(config)
        settings = self.family_settings(ToySettings)
        self.pair = nn.Linear(2 * config.hidden_size, settings.width)
        self.classifier = nn.Linear(settings.width, config.num_labels)
        self.post_init()

    def forward(self, input_ids, attention_mask, entity_pos, hts, labels=None, **unused: Any) -> DocREModelOutput:
        hs, ts, _ = self.pair_features(self.encoder(input_ids, attention_mask, entity_pos), entity_pos, hts)
        logits = self.settings.scale * self.classifier(torch.tanh(self.pair(torch.cat([hs, ts], dim=-1))))
        loss = adaptive_thresholding_loss(logits, labels) if labels is not None else None
        return DocREModelOutput(loss=loss, logits=logits)


TOY = Family("toy", "Toy (a family registered by a test)", __name__, "ToyModel", ToySettings)


@pytest.fixture
def toy_family():
    family = register_family(TOY)
    try:
        yield family
    finally:
        unregister_family("toy")


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory) -> Path:
    return save_tiny_encoder(tmp_path_factory.mktemp("families") / "encoder")


@pytest.fixture(scope="module")
def batch(redocred_dev, tokenizer):
    docs = [d for d in redocred_dev[:40] if d.num_entities <= 8][:2]
    return DocRECollator(tokenizer)([featurize_document(d, tokenizer, max_seq_length=200) for d in docs])


def _tiny_encoder() -> dict:
    return BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    ).to_dict()


def _logits(model, batch) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(**{k: batch[k] for k in ("input_ids", "attention_mask", "entity_pos", "hts")}).logits


def _train_argv(encoder_dir: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["--model_name_or_path", str(encoder_dir), "--train_file", str(tmp_path / "train.json"),
            "--output_dir", str(tmp_path / "out"), "--emb_size", "32", "--block_size", "8", *extra]


def test_a_registered_family_appears_everywhere(toy_family, encoder_dir, batch, tmp_path, capsys):
    assert list(HEAD_TYPES) == [*BUILT_IN, "toy"] and "toy" in HEAD_TYPES and get_family("toy") is toy_family

    # envre train: the choices and the help list it; --head_settings reaches the model's typed settings
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--help"])
    assert exit_info.value.code == 0
    assert "{atlop,ncrl,kd_docre,docunet,toy}" in capsys.readouterr().out.replace("\n", "").replace(" ", "")
    model_args, _, _ = parse_args(_train_argv(encoder_dir, tmp_path, "--head_type", "toy", "--head_settings", '{"scale": 2.0}'))
    assert model_args.head_type == "toy"
    model = build_model(model_args)
    assert type(model) is ToyModel and model.config.head_settings == ToySettings(scale=2.0, width=32)

    # config validation: typed settings, defaults resolved against the encoder, typos refused
    config = DocREConfig(encoder=_tiny_encoder(), head_type="toy", emb_size=32, block_size=8, head_settings={"width": 16})
    assert config.head_settings == ToySettings(scale=1.0, width=16)
    with pytest.raises(ValueError, match=r"\['scael'\] unknown to head_type 'toy'"):
        DocREConfig(encoder=_tiny_encoder(), head_type="toy", emb_size=32, block_size=8, head_settings={"scael": 2})

    # the factory and the auto classes build it
    assert type(DocREModel(config)) is ToyModel and type(AutoModel.from_config(config)) is ToyModel
    assert head_class("toy") is ToyModel and ToyModel.default_head_type() == "toy"
    fresh = DocREModel.from_encoder_pretrained(str(encoder_dir), head_type="toy", emb_size=32, block_size=8)
    assert type(fresh) is ToyModel and fresh.config.head_settings == ToySettings(width=32)

    # saved and loaded with its settings (and the same logits); auto_map names the family's class
    model.save_pretrained(tmp_path / "toy")
    saved = json.loads((tmp_path / "toy" / "config.json").read_text())
    assert saved["head_type"] == "toy" and saved["head_settings"] == {"scale": 2.0, "width": 32}
    assert saved["auto_map"]["AutoModel"] == f"{__name__.rsplit('.', 1)[-1]}.ToyModel"
    loaded = AutoModel.from_pretrained(tmp_path / "toy")
    assert type(loaded) is ToyModel and loaded.config.head_settings == model.config.head_settings
    assert torch.equal(_logits(loaded, batch), _logits(model, batch))
    overridden = AutoModel.from_pretrained(tmp_path / "toy", head_settings={"scale": 3.0, "width": 32})
    assert overridden.settings == ToySettings(scale=3.0, width=32)
    assert torch.allclose(_logits(overridden, batch), 1.5 * _logits(model, batch), atol=1e-6)
    assert _logits(model, batch).shape == (sum(len(h) for h in batch["hts"]), 97)

    # the model card names it
    card = model_card(model)
    assert "Toy (a family registered by a test)" in card and "- toy" in card

    # the unknown-family error lists every known family, the toy included
    with pytest.raises(ValueError, match="unknown head_type 'nope'; known families: atlop, ncrl, kd_docre, docunet, toy"):
        DocREConfig(head_type="nope")


def test_an_unregistered_family_is_refused_everywhere(encoder_dir, tmp_path):
    assert "toy" not in HEAD_TYPES and list(HEAD_TYPES) == list(BUILT_IN)
    with pytest.raises(SystemExit) as exit_info:  # argparse: invalid choice
        parse_args(_train_argv(encoder_dir, tmp_path, "--head_type", "toy"))
    assert exit_info.value.code == 2
    with pytest.raises(ValueError, match="unknown head_type 'toy'; known families: atlop, ncrl, kd_docre, docunet$"):
        get_family("toy")
    with pytest.raises(ValueError, match="unknown head_type 'toy'"):
        head_class("toy")
    with pytest.raises(ValueError, match="already registered"):
        register_family(dataclasses.replace(get_family("atlop"), title="another ATLOP"))


def test_a_missing_or_misspelled_family_module_is_an_error_not_skipped():
    register_family(Family("ghost", "Ghost", ".modeling_ghost", "GhostModel"))
    register_family(Family("typo", "Typo", ".modeling_atlop", "ATLOPModle"))
    try:
        config = DocREConfig(encoder=_tiny_encoder(), head_type="ghost", emb_size=32, block_size=8)
        with pytest.raises(ModuleNotFoundError, match="modeling_ghost"):
            DocREModel(config)
        with pytest.raises(ImportError, match="defines no class ATLOPModle"):
            head_class("typo")
    finally:
        unregister_family("ghost")
        unregister_family("typo")
    with pytest.raises(ValueError, match="takes no head_settings"):
        DocREConfig(encoder=_tiny_encoder(), head_type="atlop", head_settings={"scale": 2.0})


# --------------------------------------------------------------------------- the built-in families


@pytest.mark.parametrize("head_type", BUILT_IN)
def test_built_in_family_class_auto_map_and_shipped_files(head_type, encoder_dir, tmp_path):
    family = get_family(head_type)
    cls = head_class(head_type)
    assert cls.__name__ == family.class_name and cls.__module__ == f"envre_hf.models{family.module}"
    model = DocREModel.from_encoder_pretrained(str(encoder_dir), head_type=head_type, **TINY_HEADS[head_type])
    settings = model.config.head_settings
    assert (settings is None) == (family.settings is None) and (settings is None or type(settings) is family.settings)
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["auto_map"]["AutoModel"] == f"{family.module.lstrip('.')}.{family.class_name}"
    assert "extra_head" not in config
    assert config["head_settings"] == (None if settings is None else dataclasses.asdict(settings))
    shipped = {p.name for p in tmp_path.glob("*.py")}
    assert {"configuration_docre.py", "registry.py", "modeling_docre.py", f"{family.module.lstrip('.')}.py"} <= shipped
    # shared helpers live on the base / in the registry: a family ships no sibling family's module
    assert {name for name in shipped if name.startswith("modeling_")} == {"modeling_docre.py", f"{family.module.lstrip('.')}.py"}
    assert model_card(model).count(family.title) == 1


# --------------------------------------------------------------------------- no second list


#: Folders whose Python files may not keep a list of families of their own.
LIBRARY_DIRS = ("envre_hf", "benchmarks", "examples", "dataset_scripts", "spaces")
REGISTRY = REPO / "envre_hf" / "models" / "registry.py"


def _hand_kept_family_lists(path: Path) -> list[str]:
    """Literal lists / tuples / sets (or dict keys) naming two or more registered families."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        else:
            continue
        names = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)} & set(BUILT_IN)
        if len(names) >= 2:
            found.append(f"{path.relative_to(REPO)}:{node.lineno} {sorted(names)}")
    return found


def test_no_file_keeps_its_own_list_of_families():
    assert tuple(HEAD_TYPES) == BUILT_IN  # this test's own list, checked against the registry
    found = [
        hit
        for folder in LIBRARY_DIRS
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != REGISTRY
        for hit in _hand_kept_family_lists(path)
    ]
    assert not found, "derive these from envre_hf.models.registry (HEAD_TYPES, families()):\n" + "\n".join(found)
    assert _hand_kept_family_lists(REGISTRY) == []  # the registry itself lists them one register_family call each


def test_test_helpers_and_docs_cover_every_family():
    assert set(TINY_HEADS) == set(HEAD_TYPES), "tests/_training_helpers.TINY_HEADS needs a tiny setting per family"
    docs = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    for family in families():
        assert f"`{family.head_type}`" in docs or f'"{family.head_type}"' in docs, family.head_type
        for field in dataclasses.fields(family.settings) if family.settings else ():
            assert f"`{field.name}`" in docs, f"docs/models.md does not list {family.head_type}'s setting {field.name}"


@pytest.mark.parametrize("script", ["bench_evrt.py", "bench_models.py", "replicate.py"])
def test_benchmark_family_options_offer_the_registry(script):
    """Each benchmark's family option takes its choices from the registry (its --help lists them)."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), "--help"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "{" + ",".join(HEAD_TYPES) + "}" in proc.stdout.replace("\n", "").replace(" ", "")


def test_envre_train_choices_are_the_live_registry():
    assert ModelArguments.__dataclass_fields__["head_type"].metadata["choices"] is HEAD_TYPES


def test_ncrl_none_bias_starts_the_none_class_above_every_relation_and_loads_as_saved(encoder_dir, tmp_path):
    """``ncrl_none_bias`` is an initialisation (docs/evrt.md): a new NCRL head starts with it, a loaded one keeps
    its trained bias, and ATLOP ignores it."""
    head = TINY_HEADS["ncrl"]
    released = DocREModel.from_encoder_pretrained(str(encoder_dir), head_type="ncrl", **head)
    prior = DocREModel.from_encoder_pretrained(str(encoder_dir), head_type="ncrl", ncrl_none_bias=3.0, **head)
    atlop = DocREModel.from_encoder_pretrained(str(encoder_dir), head_type="atlop", ncrl_none_bias=3.0, **head)
    bound = released.bilinear.in_features**-0.5  # PyTorch's default start, as released: no class set apart
    assert released.config.ncrl_none_bias is None and released.bilinear.bias.abs().max().item() <= bound
    assert prior.bilinear.bias[0].item() == 3.0 and prior.bilinear.bias[1:].abs().max().item() <= bound
    assert atlop.bilinear.bias.abs().max().item() <= bound
    with torch.no_grad():
        prior.bilinear.bias[0] = -1.5  # as if trained
    prior.save_pretrained(tmp_path / "m")
    loaded = DocREModel.from_pretrained(tmp_path / "m")
    assert loaded.config.ncrl_none_bias == 3.0
    assert loaded.bilinear.bias[0].item() == -1.5

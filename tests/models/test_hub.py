"""Hub-native use: what a Hugging Face user gets without envre-hf, against a local Hub stand-in.

Each "user" runs in a fresh subprocess with a clean ``HF_HOME``, ``HF_ENDPOINT`` at the stand-in and an
``envre_hf`` package on ``PYTHONPATH`` that raises ImportError: only transformers / datasets / evaluate (the
pipeline's user also with envre-hf: a checkpoint carries the model's code, not the pipeline's).
``trust_remote_code=True`` is passed only there, by the user; the library passes ``trust_remote_code=False``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hub_standin import LocalHub

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "envre_hf" / "samples"


@pytest.fixture(scope="module")
def hub():
    with LocalHub() as server:
        yield server


@pytest.fixture(scope="module")
def no_envre(tmp_path_factory) -> Path:
    """A PYTHONPATH entry whose ``envre_hf`` fails to import (shadows the installed package)."""
    folder = tmp_path_factory.mktemp("no_envre")
    (folder / "envre_hf").mkdir()
    (folder / "envre_hf" / "__init__.py").write_text('raise ImportError("envre_hf is not installed for this user")\n')
    return folder


def _env(hub: LocalHub, home: Path, pythonpath: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_"))}
    env.update(
        HF_ENDPOINT=hub.endpoint,
        HF_HOME=str(home),
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_ETAG_TIMEOUT="30",
        HF_DATASETS_DISABLE_PROGRESS_BARS="1",
        PYTHONPATH=pythonpath,
        **extra,
    )
    return env


def _as_user(hub, no_envre, tmp_path, code: str, cwd: Path | None = None, with_envre: bool = False) -> dict:
    """Run ``code`` as a user without envre-hf (``with_envre``: with this worktree's); it prints one JSON line last,
    which is returned."""
    home = tmp_path / "user_home"
    prelude = "import sys\ntry:\n    import envre_hf\nexcept ImportError:\n    pass\nelse:\n    sys.exit('envre_hf importable')\n"
    proc = subprocess.run(
        # -P: the working directory is not on sys.path
        [sys.executable, "-P", "-c", ("" if with_envre else prelude) + textwrap.dedent(code)],
        env=_env(hub, home, str(REPO if with_envre else no_envre)),
        cwd=str(cwd or tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-4000:] + "\nunhandled: " + "\n".join(hub.unhandled[-20:])
    last = proc.stdout.strip().splitlines()[-1]  # transformers' "[y/N]" prompt may precede the JSON on that line
    return json.loads(last[last.index("{"):])


def _as_maintainer(hub, tmp_path, args: list[str]) -> subprocess.CompletedProcess:
    """``envre ARGS`` with this worktree's envre-hf, pushing to the stand-in."""
    proc = subprocess.run(
        [sys.executable, "-m", "envre_hf.cli.main", *args],
        env=_env(hub, tmp_path / "maintainer_home", str(REPO), HF_TOKEN="hf_maintainer_token"),
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


# --------------------------------------------------------------------------- lazy public API


def test_import_envre_hf_imports_neither_torch_nor_transformers_and_exports_the_api():
    code = textwrap.dedent(
        """
        import sys, json
        import envre_hf
        light = [m for m in ("torch", "transformers", "datasets") if m in sys.modules]
        from envre_hf import (EVRTTrainer, EVRTTrainingArguments, DocREConfig, ATLOPModel, KDDocREModel,
                              DocuNetModel, DocREModel, score_predictions, RenamingPipeline, Document)
        import transformers
        print(json.dumps({"light": light, "trainer": issubclass(EVRTTrainer, transformers.Trainer),
                          "family": DocREModel(DocREConfig(head_type="docunet", encoder={"model_type": "bert",
                              "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                              "intermediate_size": 32, "vocab_size": 100}, emb_size=32, block_size=8)).__class__.__name__,
                          "all": sorted(envre_hf.__all__)}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["light"] == []
    assert out["trainer"] is True and out["family"] == "DocuNetModel"
    assert {"EVRTTrainer", "DocREConfig", "ATLOPModel", "score_predictions", "RenamingPipeline"} <= set(out["all"])


def test_unknown_public_name_is_an_attribute_error():
    import envre_hf

    with pytest.raises(AttributeError, match="no_such_name"):
        envre_hf.no_such_name  # noqa: B018


# --------------------------------------------------------------------------- saved configs


def test_saved_config_holds_no_local_absolute_path_and_names_its_code(tmp_path):
    from _training_helpers import save_tiny_encoder, tiny_model

    encoder = save_tiny_encoder(tmp_path / "my-encoder")
    model = tiny_model(encoder, "atlop")
    model.save_pretrained(tmp_path / "saved")
    text = (tmp_path / "saved" / "config.json").read_text()
    assert str(tmp_path) not in text and "/my-encoder" not in text
    config = json.loads(text)
    assert config["encoder_name_or_path"] == "my-encoder"
    assert config["auto_map"] == {"AutoConfig": "configuration_docre.DocREConfig", "AutoModel": "modeling_atlop.ATLOPModel"}
    assert "custom_pipelines" not in config  # the pipeline is envre-hf's (import envre_hf), not the checkpoint's
    shipped = {p.name for p in (tmp_path / "saved").glob("*.py")}
    assert shipped == {"configuration_docre.py", "registry.py", "modeling_atlop.py", "modeling_docre.py", "encoder.py",
                       "attention.py", "losses.py"}
    package = REPO / "envre_hf" / "models"
    for name in shipped:  # transformers' copies of the package's modules, each as it is (nothing generated)
        assert (tmp_path / "saved" / name).read_bytes() == (package / name).read_bytes(), name
        imports = [n for n in ast.walk(ast.parse((tmp_path / "saved" / name).read_text())) if isinstance(n, ast.ImportFrom)]
        assert all(n.level <= 1 and not (n.module or "").startswith("envre_hf") for n in imports), name  # siblings only


def test_portable_name_keeps_hub_ids_and_cache_repo_ids():
    from envre_hf.models import portable_name

    assert portable_name("bert-base-cased") == "bert-base-cased"
    assert portable_name("org/model") == "org/model"
    cache = "/home/u/.cache/huggingface/hub/models--FacebookAI--roberta-large/snapshots/abc123"
    assert portable_name(cache) == "FacebookAI/roberta-large"
    assert portable_name("/data/encoders/minilm") == "minilm"


# --------------------------------------------------------------------------- the three Hub uses


def test_load_dataset_after_envre_build_push_to_hub(hub, no_envre, tmp_path, redocred_test_path, redocred_dev_path):
    docs = json.loads(redocred_test_path.read_text())[:4]
    (tmp_path / "test.json").write_text(json.dumps(docs))
    (tmp_path / "pool.json").write_text(json.dumps(json.loads(redocred_dev_path.read_text())[:60]))
    out = tmp_path / "built"
    _as_maintainer(hub, tmp_path, ["build", "--input", str(tmp_path / "test.json"), "--kb", "corpus",
                                   "--kb-pool", str(tmp_path / "pool.json"), "--seeds", "2", "--no-progress",
                                   "--output", str(out), "--push-to-hub", "envre/env_redocred"])
    assert set(hub.auth) == {"Bearer hf_maintainer_token"}
    user = _as_user(hub, no_envre, tmp_path, """
        import json
        from datasets import load_dataset
        ds = load_dataset("envre/env_redocred")
        stream = load_dataset("envre/env_redocred", split="test", streaming=True)
        seed1 = load_dataset("envre/env_redocred", "seed1", split="test")
        original = load_dataset("envre/env_redocred", "original", split="test")
        print(json.dumps({"splits": sorted(ds), "titles": list(ds["test"]["title"]), "doc_ids": list(ds["test"]["doc_id"]),
                          "streamed": [row["doc_id"] for row in stream],
                          "seed1": [[row["doc_id"], row["original_doc_id"], row["seed"]] for row in seed1],
                          "original": [[row["title"], row["original_doc_id"]] for row in original]}))
    """)
    from datasets import load_dataset

    local = load_dataset(str(out))["test"]
    assert user["splits"] == ["test"]
    assert user["doc_ids"] == list(local["doc_id"]) == user["streamed"] and user["titles"] == list(local["title"])
    assert len(user["doc_ids"]) == 8
    titles = [d["title"] for d in docs]
    assert user["seed1"] == [[f"{t}#1", t, 1] for t in titles]  # one seed, joined to its original by original_doc_id
    assert user["original"] == [[t, t] for t in titles]


@pytest.mark.parametrize("head_type", ["atlop", "docunet"])
def test_automodel_with_remote_code_after_a_push_gives_the_local_logits(hub, no_envre, tmp_path, redocred_dev, head_type):
    import torch
    from _training_helpers import save_tiny_encoder, tiny_model
    from huggingface_hub import HfApi
    from transformers import AutoTokenizer

    from envre_hf.features import DocRECollator, featurize_document
    from envre_hf.models import push_docre_model

    encoder = save_tiny_encoder(tmp_path / "encoder")
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    model = tiny_model(encoder, head_type).eval()
    doc = next(d for d in redocred_dev if d.num_entities <= 8)
    batch = DocRECollator(tokenizer)([featurize_document(doc, tokenizer, max_seq_length=256)])
    with torch.no_grad():
        logits = model(**{k: batch[k] for k in ("input_ids", "attention_mask", "entity_pos", "hts")}).logits
    inputs = {"input_ids": batch["input_ids"].tolist(), "attention_mask": batch["attention_mask"].tolist(),
              "entity_pos": batch["entity_pos"], "hts": batch["hts"]}
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    repo = f"envre/{head_type}-tiny"
    push_docre_model(model, repo, tokenizer=tokenizer, api=HfApi(endpoint=hub.endpoint, token="hf_push_token"))
    config = json.loads(hub.files[("model", repo)]["config.json"])
    assert "AutoModel" in config["auto_map"] and str(tmp_path) not in json.dumps(config)

    user = _as_user(hub, no_envre, tmp_path, f"""
        import json, torch
        from transformers import AutoModel
        try:
            AutoModel.from_pretrained("{repo}")
        except ValueError as err:
            refused = "trust_remote_code" in str(err)
        model = AutoModel.from_pretrained("{repo}", trust_remote_code=True).eval()
        inputs = json.load(open("inputs.json"))
        with torch.no_grad():
            logits = model(input_ids=torch.tensor(inputs["input_ids"]), attention_mask=torch.tensor(inputs["attention_mask"]),
                           entity_pos=inputs["entity_pos"], hts=inputs["hts"]).logits
        print(json.dumps({{"refused": refused, "cls": type(model).__name__, "module": type(model).__module__,
                          "logits": logits.tolist()}}))
    """)
    assert user["refused"], "without trust_remote_code (and without envre-hf) loading must be refused with a hint"
    assert user["cls"] == type(model).__name__ and user["module"].startswith("transformers_modules")
    assert torch.allclose(torch.tensor(user["logits"]), logits, atol=1e-5)
    assert logits.abs().sum() > 0


def test_pipeline_after_a_push_is_envre_hfs_with_only_import_envre_hf(hub, no_envre, tmp_path, redocred_test_path,
                                                                      monkeypatch):
    """The checkpoint carries no pipeline code: ``import envre_hf`` (nothing else) makes the pulled repository a
    ``document-relation-extraction`` pipeline of envre-hf's own code, giving the local triples; without envre-hf the
    task is unknown to transformers, whatever ``trust_remote_code`` says."""
    import huggingface_hub.constants as hub_constants
    import transformers
    from _pipeline_helpers import docred_as_text
    from _training_helpers import save_tiny_encoder, tiny_model
    from transformers import AutoTokenizer, pipeline

    encoder = save_tiny_encoder(tmp_path / "encoder")
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    model = tiny_model(encoder, "atlop").eval()
    docs = json.loads(redocred_test_path.read_text())[:3]
    inputs = docs + [docred_as_text(docs[0])]
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    repo = "envre/atlop-pipeline"
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setattr(hub_constants, "ENDPOINT", hub.endpoint)
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", None)  # transformers keeps the HfApi of its first use
    local_dir = tmp_path / "local"
    tokenizer.save_pretrained(local_dir)
    model.save_pretrained(local_dir, push_to_hub=True, repo_id=repo, token="hf_push_token")
    tokenizer.push_to_hub(repo, token="hf_push_token")
    pushed = hub.files[("model", repo)]
    assert {"config.json", "modeling_docre.py"} <= set(pushed) and "pipeline_docre.py" not in pushed
    assert "custom_pipelines" not in json.loads(pushed["config.json"])
    local = pipeline("document-relation-extraction", model=str(local_dir))(inputs, batch_size=2)

    user = _as_user(hub, no_envre, tmp_path, f"""
        import json
        import envre_hf
        from transformers import pipeline
        pipe = pipeline("document-relation-extraction", model="{repo}")
        out = pipe(json.load(open("inputs.json")), batch_size=2)
        print(json.dumps({{"module": type(pipe).__module__, "model": type(pipe.model).__module__, "out": out}}))
    """, with_envre=True)
    assert user["module"] == "envre_hf.models.pipeline_docre" and user["model"].startswith("envre_hf.models.")
    triples = [[(r["h_idx"], r["t_idx"], r["relation"], r["head"]["mentions"]) for r in out] for out in user["out"]]
    assert triples == [[(r["h_idx"], r["t_idx"], r["relation"], r["head"]["mentions"]) for r in out] for out in local]
    assert all(out for out in local)
    assert {(r["h_idx"], r["t_idx"], r["relation"]) for r in user["out"][3]} == {
        (r["h_idx"], r["t_idx"], r["relation"]) for r in user["out"][0]}  # text with spans = its DocRED document
    scores = [r["score"] for out in user["out"] for r in out]
    assert scores == pytest.approx([r["score"] for out in local for r in out], abs=1e-5)

    without = _as_user(hub, no_envre, tmp_path, f"""
        import json
        from transformers import pipeline
        try:
            pipeline("document-relation-extraction", model="{repo}", trust_remote_code=True)
        except KeyError as err:
            print(json.dumps({{"unknown_task": "document-relation-extraction" in str(err)}}))
    """)
    assert without == {"unknown_task": True}


def test_evaluate_load_after_push_metric_equals_envre_evaluate(hub, no_envre, tmp_path):
    proc = _as_maintainer(hub, tmp_path, ["push-metric", "envre/docre_f1"])
    assert "envre/docre_f1" in proc.stdout
    space = hub.files[("space", "envre/docre_f1")]
    assert sorted(space) == ["README.md", "app.py", "docre_f1.py", "requirements.txt", "scoring.py"]
    assert space["scoring.py"] == (REPO / "envre_hf" / "metrics" / "scoring.py").read_bytes()
    card = space["README.md"].decode()
    assert "sdk: gradio" in card and "app_file: app.py" in card

    user = _as_user(hub, no_envre, tmp_path, """
        import contextlib, doctest, io, json
        import evaluate
        docre_f1 = evaluate.load("envre/docre_f1")
        documents = json.load(open("envre_hf/samples/sample_docs.json"))
        flat = json.load(open("envre_hf/samples/sample_predictions.json"))
        predictions = [[p for p in flat if p["title"] == doc["title"]] for doc in documents]
        scores = docre_f1.compute(predictions=predictions, references=documents,
                                  train_documents="envre_hf/samples/sample_train.json")
        runner = doctest.DocTestRunner()
        test = doctest.DocTestParser().get_doctest(docre_f1.inputs_description, {}, "docre_f1", None, 0)
        with contextlib.redirect_stdout(io.StringIO()) as report:
            runner.run(test)
        print(json.dumps({"scores": scores, "examples": runner.tries, "failed": runner.failures,
                          "report": report.getvalue()}))
    """, cwd=REPO)
    printed = json.loads(subprocess.run(
        [sys.executable, "-m", "envre_hf.cli.main", "evaluate", "--predictions", str(SAMPLES / "sample_predictions.json"),
         "--gold", str(SAMPLES / "sample_docs.json"), "--train", str(SAMPLES / "sample_train.json"),
         "--output", str(tmp_path / "scores.json")],
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300, check=True,
    ).stdout)
    written = json.loads((tmp_path / "scores.json").read_text())  # with the per-relation / entity-count tables
    assert user["scores"] == written
    assert {k: user["scores"][k] for k in printed} == printed and printed["f1"] > 0
    assert user["examples"] >= 6 and user["failed"] == 0, user["report"]

"""Sharing trained DocRE models: model card + weights + tokenizer, written into a folder by :func:`prepare_upload`
(inspectable offline), which :func:`push_docre_model` uploads in one commit."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, HfApi, ModelCardData

from .configuration_docre import portable_name
from .modeling_docre import DocREPreTrainedModel
from .registry import get_family
from ..atomic import write_text
from ..documents.sources import _HUB_ID
from ..hub_calls import push_folder

_SCORE_ORDER = ("f1", "ign_f1", "precision", "recall", "intra_f1", "inter_f1")


#: Scores that go into the card's ``model-index`` (as percentages), with their display names.
INDEX_METRICS = {"f1": "F1", "ign_f1": "Ign F1", "precision": "Precision", "recall": "Recall"}


def index_results(
    scores: Mapping[str, Mapping[str, Any]],
    eval_datasets: Mapping[str, str] | None = None,
    metrics: Mapping[str, str] = INDEX_METRICS,
) -> list[EvalResult]:
    """The card's ``model-index`` results: one per evaluation set and metric (a fraction, written as a percentage);
    ``eval_datasets``: set name -> dataset id (default: the set name). ``envre probe --compare`` writes them too."""
    return [
        EvalResult(
            task_type="relation-extraction",
            task_name="Document-level relation extraction",
            dataset_type=(eval_datasets or {}).get(set_name) or set_name,
            dataset_name=set_name,
            metric_type=key,
            metric_name=display,
            metric_value=round(100 * float(values[key]), 2),
        )
        for set_name, values in scores.items()
        for key, display in metrics.items()
        if isinstance(values.get(key), (int, float))
    ]


def _fmt(value: Any) -> str:
    return f"{100 * value:.2f}" if isinstance(value, float) else str(value)


#: The card's usage section (``REPO_ID``: the repository, filled in by :func:`prepare_upload`).
_USAGE = """
## Usage

With only transformers installed, the model's code comes with it (read it before you trust it):

```python
from transformers import AutoModel

model = AutoModel.from_pretrained("REPO_ID", trust_remote_code=True)
```

Relations from your own text (entities as character spans; or raw text with `ner=` a token-classification
model) come from envre-hf's pipeline (`pip install envre-hf`); with it, no remote code runs:

```python
import envre_hf  # registers the task and the model type with transformers
from transformers import pipeline

extract = pipeline("document-relation-extraction", model="REPO_ID")
extract({"text": "Marie Curie was born in Warsaw.", "entities": [
    {"mentions": [[0, 11]], "type": "PER"}, {"mentions": [[24, 30]], "type": "LOC"}]})
```

envre-hf also predicts whole documents:

```python
import envre_hf
from transformers import AutoModel, AutoTokenizer
from envre_hf.documents import read_documents
from envre_hf.models.prediction import predict

model = AutoModel.from_pretrained("REPO_ID")
tokenizer = AutoTokenizer.from_pretrained("REPO_ID")
rows = predict(model, read_documents("dev.json"), tokenizer)  # official DocRED result format
```
""".split("\n")


def _card_data(config: Any, encoder: str, datasets: list[str], scores: dict[str, dict[str, Any]] | None,
               license: str | None, evrt: dict[str, Any] | None, eval_datasets: dict[str, str] | None,
               model_name: str | None, tags: list[str] | None) -> ModelCardData:
    """The card's YAML metadata: base model and datasets when they are Hub ids, tags, ``model-index``."""
    hub_datasets = [d for d in datasets if _HUB_ID.fullmatch(d)]
    name = model_name or f"{config.head_type}-{encoder.rsplit('/', 1)[-1]}"
    eval_results = index_results(scores or {}, eval_datasets)
    return ModelCardData(
        library_name="transformers",
        license=license,
        base_model=encoder if _HUB_ID.fullmatch(encoder) else None,
        datasets=hub_datasets or None,
        tags=list(dict.fromkeys(["relation-extraction", "document-level-relation-extraction", "docred", "envre-hf",
                                 config.head_type, *(["evrt"] if evrt and evrt.get("evrt") else []), *(tags or [])])),
        pipeline_tag=None,
        model_name=name if eval_results else None,
        eval_results=eval_results or None,
    )


def _model_lines(config: Any, encoder: str, datasets: list[str]) -> list[str]:
    """The card's title and what the model is: encoder, head, training data."""
    return [
        f"# {config.head_type.upper()} document-level relation extraction model",
        "",
        "A DocRED-style relation extractor made with envre-hf: it reads a document whose",
        "entity mentions are given and predicts the relations (96 Wikidata properties) between every entity pair.",
        "",
        f"- **Encoder:** `{encoder}` ({config.encoder.model_type}, hidden size {config.encoder.hidden_size},"
        f" window {config.window} tokens; longer documents are read in overlapping windows)",
        f"- **Head:** {get_family(config.head_type).title}; emb_size {config.emb_size},"
        f" block_size {config.block_size}, {config.num_labels} classes (class 0 = no relation / threshold),"
        f" top-k {config.top_k} relations per pair at decoding",
        f"- **Training data:** {', '.join(datasets) if datasets else 'not stated'}",
        "",
    ]


def _score_lines(scores: dict[str, dict[str, Any]] | None) -> list[str]:
    """The card's scores section: a table of percentages per evaluation set."""
    if not scores:
        return ["## Scores", "", "No scores were reported."]
    keys = [k for k in _SCORE_ORDER if any(k in s for s in scores.values())]
    lines = ["## Scores", "", "| evaluation set | " + " | ".join(keys) + " |", "| --- |" + " --- |" * len(keys)]
    for set_name, values in scores.items():
        lines.append(f"| {set_name} | " + " | ".join(_fmt(values.get(k, "")) for k in keys) + " |")
    return lines + ["", "Scores are percentages computed with the official DocRED scoring rules (envre-hf `docre_f1`)."]


def model_card(
    model: DocREPreTrainedModel,
    training_data: str | list[str] | None = None,
    scores: dict[str, dict[str, Any]] | None = None,
    license: str | None = None,
    extra_text: str | None = None,
    *,
    evrt: dict[str, Any] | None = None,
    eval_datasets: dict[str, str] | None = None,
    model_name: str | None = None,
    tags: list[str] | None = None,
) -> str:
    """The README.md text (YAML metadata with ``model-index``, then encoder, head, data, EVRT, scores, usage), never
    a local absolute path. ``scores``: set name -> ``{metric: fraction}`` (``DocREScores.to_dict()``);
    ``eval_datasets``: set name -> Hub id; ``evrt``: the EVRT training settings to list."""
    config = model.config
    datasets = [training_data] if isinstance(training_data, str) else list(training_data or [])
    datasets = [portable_name(d) for d in datasets]  # a Hub id stays, a local path becomes a folder name
    raw_encoder = config.encoder_name_or_path or getattr(config.encoder, "_name_or_path", "") or config.encoder.model_type
    encoder = portable_name(raw_encoder)
    data = _card_data(config, encoder, datasets, scores, license, evrt, eval_datasets, model_name, tags)
    lines = ["---", data.to_yaml(), "---", "", *_model_lines(config, encoder, datasets)]
    if evrt:
        lines += ["## Training", "", "Entity-variation robust training (EVRT) settings:", ""]
        lines += [f"- `{key}`: {value}" for key, value in evrt.items()]
        lines.append("")
    lines += _score_lines(scores) + _USAGE
    if extra_text:
        lines += [extra_text.strip(), ""]
    return "\n".join(lines)


def prepare_upload(
    model: DocREPreTrainedModel,
    folder: str | os.PathLike,
    tokenizer: Any | None = None,
    training_data: str | list[str] | None = None,
    scores: dict[str, dict[str, Any]] | None = None,
    license: str | None = None,
    repo_id: str | None = None,
) -> Path:
    """Write weights (safetensors), config, tokenizer and README.md into ``folder``: the upload's content."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    card = model_card(model, training_data, scores, license)
    if repo_id:
        card = card.replace('"REPO_ID"', f'"{repo_id}"')
    write_text(folder / "README.md", card)
    return folder


def push_docre_model(
    model: DocREPreTrainedModel,
    repo_id: str,
    tokenizer: Any | None = None,
    training_data: str | list[str] | None = None,
    scores: dict[str, dict[str, Any]] | None = None,
    license: str | None = None,
    private: bool | None = None,
    token: str | None = None,
    commit_message: str = "Upload DocRE model with envre-hf",
    api: HfApi | None = None,
) -> Any:
    """Create ``repo_id`` (if needed) and upload model, tokenizer and model card in one commit (``api``: by default
    ``HfApi(token=token)``); returns the commit info once confirmed on the Hub."""
    api = api if api is not None else HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="envre-push-") as tmp:
        folder = prepare_upload(model, tmp, tokenizer, training_data, scores, license, repo_id)
        return push_folder(api, repo_id, "model", str(folder), what="the model", private=private,
                           commit_message=commit_message)

"""Sharing trained DocRE models: model card + weights + tokenizer, pushed with ``huggingface_hub``.

:func:`prepare_upload` writes exactly what would be uploaded into a folder (inspectable and
testable offline); :func:`push_docre_model` then creates the repository and uploads that folder
in one commit. The card (README.md) names the encoder, the head, the training data and the scores.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi, ModelCardData

from .modeling_docre import DocREPreTrainedModel

_HEAD_NAMES = {
    "atlop": "ATLOP (adaptive thresholding + localized context pooling, Zhou et al., AAAI 2021)",
    "ncrl": "NCRL (ATLOP architecture with the none-class ranking loss, Zhou & Lee, IJCAI 2022)",
    "kd_docre": "KD-DocRE (axial attention + adaptive focal loss, Tan et al., Findings of ACL 2022)",
    "docunet": "DocuNet (entity-pair U-Net, Zhang et al., IJCAI 2021)",
}

_SCORE_ORDER = ("f1", "ign_f1", "precision", "recall", "intra_f1", "inter_f1")


def _fmt(value: Any) -> str:
    return f"{100 * value:.2f}" if isinstance(value, float) else str(value)


def model_card(
    model: DocREPreTrainedModel,
    training_data: str | list[str] | None = None,
    scores: dict[str, dict[str, Any]] | None = None,
    license: str | None = None,
    extra_text: str | None = None,
) -> str:
    """The README.md text: YAML metadata, then encoder, head, training data, scores and usage.

    ``scores`` maps an evaluation set name to a score dict (``DocREScores.to_dict()`` or any
    ``{metric: fraction}``); fractions are shown as percentages.
    """
    config = model.config
    datasets = [training_data] if isinstance(training_data, str) else list(training_data or [])
    encoder = config.encoder_name_or_path or getattr(config.encoder, "_name_or_path", "") or config.encoder.model_type
    # a Hub id ("org/name"), not a local folder, is valid ``base_model`` metadata
    hub_id = encoder if encoder and not os.path.isabs(encoder) and not os.path.exists(encoder) else None
    data = ModelCardData(
        library_name="transformers",
        license=license,
        base_model=hub_id,
        datasets=datasets or None,
        tags=["relation-extraction", "document-level-relation-extraction", "docred", "envre-hf", config.head_type],
        pipeline_tag=None,
    )
    lines = [
        "---",
        data.to_yaml(),
        "---",
        "",
        f"# {config.head_type.upper()} document-level relation extraction model",
        "",
        "A DocRED-style relation extractor made with envre-hf: it reads a document whose",
        "entity mentions are given and predicts the relations (96 Wikidata properties) between every entity pair.",
        "",
        f"- **Encoder:** `{encoder}` ({config.encoder.model_type}, hidden size {config.encoder.hidden_size},"
        f" window {config.window} tokens; longer documents are read in overlapping windows)",
        f"- **Head:** {_HEAD_NAMES.get(config.head_type, config.head_type)}; emb_size {config.emb_size},"
        f" block_size {config.block_size}, {config.num_labels} classes (class 0 = no relation / threshold),"
        f" top-k {config.top_k} relations per pair at decoding",
        f"- **Training data:** {', '.join(datasets) if datasets else 'not stated'}",
        "",
        "## Scores",
        "",
    ]
    if scores:
        keys = [k for k in _SCORE_ORDER if any(k in s for s in scores.values())]
        lines.append("| evaluation set | " + " | ".join(keys) + " |")
        lines.append("| --- |" + " --- |" * len(keys))
        for name, values in scores.items():
            lines.append(f"| {name} | " + " | ".join(_fmt(values.get(k, "")) for k in keys) + " |")
        lines.append("")
        lines.append("Scores are percentages computed with the official DocRED scoring rules (envre-hf `docre_f1`).")
    else:
        lines.append("No scores were reported.")
    lines += [
        "",
        "## Usage",
        "",
        "```python",
        "import envre_hf.models  # registers the docre model type with transformers",
        "from transformers import AutoModel, AutoTokenizer",
        "from envre_hf.documents import read_documents",
        "from envre_hf.models.prediction import predict",
        "",
        'model = AutoModel.from_pretrained("REPO_ID")',
        'tokenizer = AutoTokenizer.from_pretrained("REPO_ID")',
        'rows = predict(model, read_documents("dev.json"), tokenizer)  # official DocRED result format',
        "```",
        "",
    ]
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
    from ..atomic import write_text

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
    """Create ``repo_id`` (if needed) and upload model, tokenizer and model card in one commit.

    ``api`` defaults to ``HfApi(token=token)`` (which honours ``HF_ENDPOINT``). Returns the
    ``upload_folder`` result (the commit info).
    """
    api = api if api is not None else HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="envre-push-") as tmp:
        folder = prepare_upload(model, tmp, tokenizer, training_data, scores, license, repo_id)
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        return api.upload_folder(
            repo_id=repo_id, folder_path=str(folder), repo_type="model", commit_message=commit_message
        )

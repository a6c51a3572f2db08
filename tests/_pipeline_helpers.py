"""Shared set-up of the pipeline and ``envre predict`` tests: a saved tiny DocRE model, a tiny NER model whose
predictions are set by hand, and raw DocRED documents as text with their mentions as character spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Words the tiny NER model tags (each one word piece of the MiniLM vocabulary), and their labels.
NER_WORDS = {"obama": "PER", "clinton": "PER", "paris": "LOC", "france": "LOC"}


def save_docre_model(folder: Path, head_type: str = "atlop") -> Path:
    """A tiny random DocRE model and its tokenizer, saved with ``save_pretrained`` into ``folder``."""
    from _training_helpers import save_tiny_encoder, tiny_model
    from transformers import AutoTokenizer

    encoder = save_tiny_encoder(folder.parent / f"{folder.name}-encoder")
    model = tiny_model(encoder, head_type).eval()
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(encoder).save_pretrained(folder)
    return folder


def save_tiny_ner(folder: Path) -> Path:
    """A token-classification BERT without layers whose embeddings and classifier tag exactly :data:`NER_WORDS`
    (B-PER / B-LOC) and everything else O: the plumbing of the NER route, with known mentions."""
    import torch
    from _training_helpers import minilm_dir
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=6, num_hidden_layers=0, num_attention_heads=1,
                        intermediate_size=6, id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    model = BertForTokenClassification(config).eval()
    direction = {"PER": [1, -1, 0, 0, 0, 0], "LOC": [0, 0, 1, -1, 0, 0], "O": [0, 0, 0, 0, 1, -1]}
    with torch.no_grad():
        emb = model.bert.embeddings
        emb.word_embeddings.weight[:] = torch.tensor(direction["O"], dtype=torch.float)
        for word, etype in NER_WORDS.items():
            emb.word_embeddings.weight[tokenizer.convert_tokens_to_ids(word)] = torch.tensor(direction[etype], dtype=torch.float)
        emb.position_embeddings.weight.zero_()
        emb.token_type_embeddings.weight.zero_()
        emb.LayerNorm.weight.fill_(1)
        emb.LayerNorm.bias.zero_()
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        for label in ("O", "PER", "LOC"):
            row = labels.index(label if label == "O" else f"B-{label}")
            model.classifier.weight[row] = 5 * torch.tensor(direction[label], dtype=torch.float)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def docred_as_text(doc: dict[str, Any]) -> dict[str, Any]:
    """A raw DocRED document as the pipeline's text input (:func:`envre_hf.documents.text.as_text`)."""
    from envre_hf.documents import from_dict
    from envre_hf.documents.text import as_text

    return as_text(from_dict(doc))

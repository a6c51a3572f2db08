"""A few EVRT steps and an evaluation under ``accelerate launch`` (run by test_training_models.py with 2 CPU
processes).

Each rank writes ``rank<R>.json`` with a checksum of its parameters after training, whether they
moved, the logged losses, the world size, the process-group backend, and the DocRED scores of an evaluation
(3 documents, one per batch: the second rank's last batch repeats a document to even out the shards) beside
those of the standalone predictor on the same model and documents.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import torch
import torch.distributed as dist

from _training_helpers import paired_dataset, tiny_model, tiny_training_args
from envre_hf.documents import read_documents
from envre_hf.features import DocRECollator
from envre_hf.metrics import score_predictions
from envre_hf.models.prediction import predict
from envre_hf.training import EVRTPairCollator, EVRTTrainer


def checksum(model: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, param in sorted(model.named_parameters()):
        digest.update(name.encode())
        digest.update(param.detach().float().contiguous().numpy().tobytes())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoder", required=True)
    parser.add_argument("--train", required=True)
    parser.add_argument("--output", required=True)
    cli = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cli.encoder)
    docs = read_documents(cli.train)
    # a small learning rate keeps the random head's plentiful predictions for the evaluation to score
    args = tiny_training_args(
        cli.output, per_device_train_batch_size=1, per_device_eval_batch_size=1, learning_rate=1e-5, use_cpu=True
    )
    model = tiny_model(cli.encoder)
    model.config.top_k = None  # every relation above the threshold: predictions to score from a barely trained head
    start = checksum(model)
    trainer = EVRTTrainer(
        model=model,
        args=args,
        train_dataset=paired_dataset(docs, docs, tokenizer),
        data_collator=EVRTPairCollator(DocRECollator(tokenizer)),
        processing_class=tokenizer,
        eval_documents={"dev": docs[:3]},
        train_documents_for_ign=docs,
        max_seq_length=160,
    )
    trainer.train()
    final = checksum(trainer.accelerator.unwrap_model(trainer.model))
    metrics = trainer.evaluate()
    alone = predict(trainer.accelerator.unwrap_model(trainer.model), docs[:3], tokenizer, max_seq_length=160, progress=False)
    expected = score_predictions(alone, docs[:3], train=docs)
    rank = trainer.accelerator.process_index
    report = {
        "rank": rank,
        "world_size": trainer.accelerator.num_processes,
        "backend": dist.get_backend() if dist.is_initialized() else None,
        "checksum": final,
        "changed": final != start,
        "losses": [e[k] for e in trainer.state.log_history for k in ("loss", "loss_rcr", "loss_pcr") if k in e],
        "scores": {k: metrics[f"eval_dev_{k}"] for k in ("precision", "recall", "f1", "ign_f1")},
        "expected_scores": {k: round(getattr(expected, k), 6) for k in ("precision", "recall", "f1", "ign_f1")},
    }
    Path(cli.output).mkdir(parents=True, exist_ok=True)
    (Path(cli.output) / f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()

"""A few EVRT steps under ``accelerate launch`` (run by test_training_models.py with 2 CPU processes).

Each rank writes ``rank<R>.json`` with a checksum of its parameters after training, whether they
moved, the logged losses, the world size and the process-group backend.
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
    args = tiny_training_args(cli.output, per_device_train_batch_size=1, use_cpu=True)
    model = tiny_model(cli.encoder)
    start = checksum(model)
    trainer = EVRTTrainer(
        model=model,
        args=args,
        train_dataset=paired_dataset(docs, docs, tokenizer),
        data_collator=EVRTPairCollator(DocRECollator(tokenizer)),
        processing_class=tokenizer,
    )
    trainer.train()
    final = checksum(trainer.accelerator.unwrap_model(trainer.model))
    rank = trainer.accelerator.process_index
    report = {
        "rank": rank,
        "world_size": trainer.accelerator.num_processes,
        "backend": dist.get_backend() if dist.is_initialized() else None,
        "checksum": final,
        "changed": final != start,
        "losses": [e[k] for e in trainer.state.log_history for k in ("loss", "loss_rcr", "loss_pcr") if k in e],
    }
    Path(cli.output).mkdir(parents=True, exist_ok=True)
    (Path(cli.output) / f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()

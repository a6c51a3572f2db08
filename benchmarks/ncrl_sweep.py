#!/usr/bin/env python3
"""Which learning rates let NCRL leave the constant predictor at CPU scale?

At the CPU head learning rate that ATLOP takes (1e-3) NCRL's margins spread far and it settles on the
constant predictor (``benchmarks/results/replicate-cpu-ncrl-underfit.json``: test F1 0). This sweep trains
vanilla NCRL with :mod:`replicate`'s own job (same recipe, documents, cap and decoding) at each
(encoder, head) learning rate, on a reduced budget, and records for each: the final training loss beside the
loss of the best constant predictor on the same documents (a model below it has learned something about the
pairs), the test F1 / Ign F1 and the number of predicted facts. The setting that learns becomes
``replicate.NCRL_CPU_HEAD_LR``. Written to ``--results`` (default ``benchmarks/results/ncrl-sweep-cpu.json``)
after each setting; a rerun skips the settings already there.

    python benchmarks/ncrl_sweep.py --head-lrs 1e-4 3e-4 1e-3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replicate  # noqa: E402


def constant_predictor_loss(docs, margin_shift: float) -> float:
    """The NCRL loss of the best pair-independent logits on ``docs``' labels (fitted by L-BFGS)."""
    import torch

    from envre_hf.documents.relations import docred_schema
    from envre_hf.features.featurize import multi_hot_labels
    from envre_hf.models.losses import none_class_ranking_loss

    schema = docred_schema()
    labels = torch.tensor([row for doc in docs for row in multi_hot_labels(doc, schema)], dtype=torch.float32)
    logits = torch.zeros(schema.num_labels, requires_grad=True)
    opt = torch.optim.LBFGS([logits], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = none_class_ranking_loss(logits.expand(labels.shape[0], -1), labels, margin_shift=margin_shift)
        loss.backward()
        return loss

    opt.step(closure)
    return float(closure())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--head-lrs", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    p.add_argument("--lrs", type=float, nargs="+", default=[1e-4], help="encoder learning rates")
    p.add_argument(
        "--none-biases", type=float, nargs="+", default=[None],
        help="replicate.py --ncrl-none-bias values (the none class's starting lead; default: the released init)",
    )
    p.add_argument("--max-train-docs", type=int, default=80)
    p.add_argument("--max-test-docs", type=int, default=80)
    p.add_argument("--epochs", type=float, default=4)
    p.add_argument("--results", type=Path, default=Path("benchmarks/results/ncrl-sweep-cpu.json"))
    p.add_argument("--output-dir", type=Path, default=Path("runs/ncrl-sweep"))
    cli = p.parse_args()
    command = "python benchmarks/ncrl_sweep.py " + " ".join(sys.argv[1:])
    sys.argv = [sys.argv[0]]
    base = replicate.parse_args()  # replicate's defaults for everything the sweep does not set
    done = json.loads(cli.results.read_text()) if cli.results.exists() else {"settings": []}
    from envre_hf.atomic import write_json

    data = replicate._data(argparse.Namespace(**{**vars(base), "max_train_docs": cli.max_train_docs, "val_docs": 0,
                                                 "max_test_docs": cli.max_test_docs}))
    constant = constant_predictor_loss(data["train"], base.ncrl_shift)
    done["command"] = command
    done["constant_predictor_train_loss"] = round(constant, 4)
    for lr, head_lr, bias in ((a, b, c) for a in cli.lrs for b in cli.head_lrs for c in cli.none_biases):
        if any(s["lr"] == lr and s["head_lr"] == head_lr and s.get("none_bias") == bias for s in done["settings"]):
            continue
        job_cli = argparse.Namespace(**{
            **vars(base), "max_train_docs": cli.max_train_docs, "val_docs": 0, "max_test_docs": cli.max_test_docs,
            "epochs": cli.epochs, "lr": lr, "ncrl_head_lr": head_lr, "ncrl_none_bias": bias, "workers": 1, "save_models": False,
            "output_dir": cli.output_dir,
        })
        started = time.perf_counter()
        result = replicate._job(job_cli, "ncrl", "vanilla", base.seed)
        original = result["report"]["original"]
        losses = [e["loss"] for e in result["loss_curve"] if "loss" in e]
        done["settings"].append({
            "lr": lr, "head_lr": head_lr, "none_bias": bias, "steps": result["loss_curve"][-1]["step"] if result["loss_curve"] else 0,
            "train_loss_last_3_logs": [round(v, 4) for v in losses[-3:]],
            "below_constant": bool(losses) and sum(losses[-3:]) / len(losses[-3:]) < constant,
            "test_f1": original["f1"], "test_ign_f1": original["ign_f1"],
            "test_precision": original["precision"], "test_recall": original["recall"], "seconds": round(time.perf_counter() - started, 1),
        })
        print(json.dumps(done["settings"][-1]), flush=True)
        write_json(cli.results, done)


if __name__ == "__main__":
    main()

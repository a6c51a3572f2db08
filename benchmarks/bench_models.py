"""Training step time, inference documents/s and peak memory of every DocRE family: the current code
path ("new") against the path it replaces ("replaced") and against the authors' released code
("released"), in the same run, with their ratios.

* released (ATLOP / NCRL only): ``_released_style.py``, a clean-room restatement of the forward computation
  of Env-DocRE's ``evrt/model.py`` + ``long_seq.py`` run on our model's modules and weights (eager attention
  with every layer's attentions, two-window long inputs, per-document / per-entity Python loops, batches in
  input order padded to the longest); its logits are checked against ours in the same run (max |difference|
  printed);
* replaced: the encoder in eager attention returning every layer's full attention
  (``model.set_attn_implementation("eager")``, the encoder's ``output_attentions`` route), batches in
  input order;
* new: SDPA in every layer and only the last layer's attention rows at mention starts
  (``DocREEncoder``), training batches in transformers' ``group_by_length`` order, prediction batches
  sorted by length (``iter_logits``);
* new-bf16: the new path under bf16 autocast (training and inference), printed as a separate figure
  against the fp32 released baseline (skipped with ``--dtype bf16``, where every path runs in bf16).

On CPU the times are CPU seconds of one torch thread (robust to other load on a shared machine);
on GPU they are wall-clock seconds. Every (family, path) runs in a fresh child process, so its peak memory (max RSS on CPU,
``max_memory_allocated`` on CUDA) is its own. The head + loss share of the new training step is also
printed: (b) everything after the encoder, forward + backward, with the encoder's outputs held fixed,
over (a) + (b), where (a) is the encoder's forward + backward.

``--inference-options`` (CPU) adds bf16 autocast and int8 dynamic quantization: docs/s, the largest
logit change, the agreement of their predictions with the float ones (F1 of one against the other)
and the F1 against gold; the gold F1 means something only for a trained model (``--model DIR``).

    nice -n 19 python benchmarks/bench_models.py --families atlop ncrl --docs 8 --batch-size 4
    python benchmarks/bench_models.py --encoder bert-base --device cuda --dtype bf16 --infer-docs 512
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import DEV, encoder_config, machine, minilm_path, peak_memory_mb, run_child, timed, write_json  # noqa: E402
from _released_style import released_families  # noqa: E402

from envre_hf.models.registry import HEAD_TYPES  # noqa: E402

PATHS = ("released", "replaced", "new", "new-bf16")


def build_model(family: str, args: argparse.Namespace, vocab_size: int):
    import envre_hf.models as models

    if args.model:
        return models.DocREModel.from_pretrained(args.model)
    if args.encoder == "minilm":
        return models.DocREModel.from_encoder_pretrained(minilm_path(), head_type=family)
    return models.DocREModel(models.DocREConfig(encoder=encoder_config(args.encoder, vocab_size), head_type=family))


def measure(family: str, path: str, args: argparse.Namespace) -> dict:
    """One family on one path (called in the child process)."""
    import torch
    from transformers import AutoTokenizer
    from transformers.trainer_pt_utils import get_length_grouped_indices

    from envre_hf.documents import read_documents
    from envre_hf.features import DocRECollator, featurize_document
    from envre_hf.models.prediction import iter_logits

    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device
    tokenizer = AutoTokenizer.from_pretrained(args.model or minilm_path())
    docs = read_documents(args.data)[: max(args.docs, args.infer_docs)]
    feats = [featurize_document(d, tokenizer) for d in docs]
    train_feats, infer_feats = feats[: args.docs], feats[: args.infer_docs]
    model = build_model(family, args, tokenizer.vocab_size).to(device)
    if path == "replaced":
        model.set_attn_implementation("eager")
    autocast = "bf16" if args.dtype == "bf16" or path == "new-bf16" else None
    fast = path in ("new", "new-bf16")

    def amp():
        if autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)

    lengths = [len(f["input_ids"]) for f in train_feats]
    if fast:
        # transformers' group_by_length order; mega-batches of 50 batches even on a few documents, as its sampler on a corpus
        generator = torch.Generator().manual_seed(0)
        order = get_length_grouped_indices(lengths, args.batch_size, mega_batch_mult=50, generator=generator)
    else:
        order = list(range(len(train_feats)))
    collate = DocRECollator(tokenizer)

    def to_device(batch: dict) -> dict:
        return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}

    if path == "released":
        from _released_style import ReleasedStyleATLOP, released_batches

        released = ReleasedStyleATLOP(model, tokenizer.cls_token_id, tokenizer.sep_token_id)
        batches = [b.to(device) for b in released_batches(train_feats, args.batch_size)]

        def loss_of(batch):
            return released(batch)[0]
    else:
        batches = [collate([train_feats[i] for i in order[k : k + args.batch_size]]) for k in range(0, len(order), args.batch_size)]
        batches = [to_device(b) for b in batches]

        def loss_of(batch):
            return model(**batch).loss

    # Our paths step with the Trainer's default optimizer, the fused AdamW (transformers' ``adamw_torch_fused``);
    # the released code's path with the multi-tensor AdamW it used (on CPU the two cost about the same).
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=path != "released" or None)

    def step(batch):
        with amp():
            loss = loss_of(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    result = {
        "family": family,
        "path": path,
        "class": type(model).__name__,
        "train_docs": len(train_feats),
        "batch_size": args.batch_size,
        "mean_wordpieces": round(sum(lengths) / len(lengths)),
        "max_wordpieces": max(lengths),
    }
    if args.epochs:  # 0 (children of bench_roofline.py): inference only
        model.train()
        step(batches[0])  # warm-up: allocator, optimizer state, kernels
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        steps = [timed(lambda b=b: step(b), device)[0] for _ in range(args.epochs) for b in batches]
        result.update(
            train_step_s=round(statistics.median(steps), 4),
            train_epoch_s=round(sum(steps) / args.epochs, 4),
            train_peak_mb=round(peak_memory_mb(device)),
        )
        if path == "new" and args.head_share:
            result.update(head_share(model, batches[0], device, amp))

    model.eval()
    pad = tokenizer.pad_token_id

    if path == "released":

        unlabelled = [{**f, "labels": None} for f in infer_feats]

        def infer(options=autocast):
            """The released evaluation loop: input-order batches, no labels, no_grad, decoded labels to numpy."""
            out = []
            with torch.no_grad(), amp():
                for batch in released_batches(unlabelled, args.infer_batch_size):
                    decoded, logits = released(batch.to(device))[:2]
                    decoded.cpu().numpy()
                    out += logits.float().cpu().split([len(h) for h in batch.hts])
            return dict(enumerate(out))

        with torch.no_grad(), amp():
            released(released_batches(unlabelled[: args.infer_batch_size], args.infer_batch_size)[0].to(device))
    else:

        def infer(options=autocast):
            return dict(
                iter_logits(model, infer_feats, pad, args.infer_batch_size, False, autocast=options, sort_by_length=fast)
            )

        list(iter_logits(model, infer_feats[: args.infer_batch_size], pad, args.infer_batch_size, False, autocast=autocast))
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    before = os.times()
    infer_s, logits = timed(infer, device)
    after = os.times()
    result.update(
        # CPU time in user and kernel mode: the kernel's share is mostly zeroing the pages of fresh large
        # tensors (the released path's per-layer attentions), which depends on the allocator's state
        inference_user_s=round(after.user - before.user, 3),
        inference_sys_s=round(after.system - before.system, 3),
        infer_docs=len(infer_feats),
        infer_batch_size=args.infer_batch_size,
        inference_docs_per_s=round(len(infer_feats) / infer_s, 2),
        peak_mb=round(peak_memory_mb(device)),
        device=device,
        torch_threads=torch.get_num_threads(),
        dtype="bf16" if autocast else args.dtype,
        encoder=args.model or args.encoder,
    )
    if path == "new" and args.inference_options and device == "cpu":
        result["inference_options"] = inference_options(model, docs[: args.infer_docs], infer_feats, logits, infer, infer_s)
    if path == "released":  # after the timings: the same batch through our model's (new) forward
        result.update(released_check(model, released, infer_feats[: args.batch_size], collate, to_device, amp))
    return result


def released_check(model, released, feats, collate, to_device, amp) -> dict:
    """Max |logit difference| (and loss difference) of the released restatement against our model, one batch."""
    import torch

    from _released_style import released_collate

    with torch.no_grad(), amp():
        loss, _, theirs, _ = released(released_collate(feats).to(next(model.parameters()).device))
        ours = model(**to_device(collate(feats)))
    return {
        "released_vs_new_max_abs_logit_diff": float((theirs.float() - ours.logits.float()).abs().max()),
        "released_vs_new_loss_diff": abs(float(loss) - float(ours.loss)),
        "released_check_pairs": int(theirs.size(0)),
    }


def head_share(model, batch, device, amp) -> dict:
    """Encoder forward + backward vs everything after it (encoder outputs held fixed), on one batch."""
    import torch

    def encoder_step():
        with amp():
            out = model.encoder(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
        sum(t.float().mean() for t in out.to_tuple()).backward()
        model.zero_grad(set_to_none=True)

    with torch.no_grad(), amp():
        fixed = model.encoder(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
    fixed = type(fixed)(*(t.detach().requires_grad_() for t in fixed.to_tuple()))

    def head_step():
        model.encoder.forward = lambda *a, **k: fixed
        try:
            with amp():
                loss = model(**batch).loss
            loss.backward()
        finally:
            del model.encoder.forward
        model.zero_grad(set_to_none=True)

    encoder_step(), head_step()  # warm-up
    enc = statistics.median(timed(encoder_step, device)[0] for _ in range(3))
    head = statistics.median(timed(head_step, device)[0] for _ in range(3))
    return {"encoder_fwd_bwd_s": round(enc, 4), "head_loss_fwd_bwd_s": round(head, 4), "head_loss_share": round(head / (enc + head), 3)}


def inference_options(model, docs, feats, float_logits, infer, float_s) -> dict:
    """bf16 autocast and int8 dynamic quantization against float inference (CPU)."""
    import torch

    from envre_hf.metrics import score_predictions
    from envre_hf.models.prediction import decode_predictions, quantize_int8

    def compare(logits) -> dict:
        agree_tp = n_a = n_b = 0
        rows = []
        for i, ref in float_logits.items():
            a, b = model.decode(ref)[:, 1:].bool(), model.decode(logits[i])[:, 1:].bool()
            agree_tp += int((a & b).sum())
            n_a, n_b = n_a + int(a.sum()), n_b + int(b.sum())
            rows += decode_predictions(docs[i], feats[i]["hts"], model.decode(logits[i]))
        return {
            "max_abs_logit_change": round(max(float((logits[i] - r).abs().max()) for i, r in float_logits.items()), 5),
            "agreement_f1_with_float": round(2 * agree_tp / (n_a + n_b), 4) if n_a + n_b else 1.0,
            "gold_f1": round(score_predictions(rows, docs).f1, 4),
        }

    out = {"float": {"inference_docs_per_s": round(len(feats) / float_s, 2), **compare(float_logits)}}
    bf16_s, bf16 = timed(lambda: infer("bf16"))
    out["bf16_autocast"] = {"inference_docs_per_s": round(len(feats) / bf16_s, 2), **compare(bf16)}
    quantize_int8(model)
    infer(None)  # warm-up of the quantized kernels
    int8_s, int8 = timed(lambda: infer(None))
    out["int8_dynamic"] = {"inference_docs_per_s": round(len(feats) / int8_s, 2), **compare(int8)}
    for name in ("bf16_autocast", "int8_dynamic"):
        out[name]["speedup_vs_float"] = round(out[name]["inference_docs_per_s"] / out["float"]["inference_docs_per_s"], 2)
        out[name]["gold_f1_change"] = round(out[name]["gold_f1"] - out["float"]["gold_f1"], 4)
    del torch
    return out


def compare(new: dict, old: dict) -> dict:
    """Speed-ups of ``new`` over ``old`` (above 1: new is faster) and the training peak memory ratio."""
    return {
        "train_step_speedup": round(old["train_step_s"] / new["train_step_s"], 2),
        "train_epoch_speedup": round(old["train_epoch_s"] / new["train_epoch_s"], 2),
        "inference_speedup": round(new["inference_docs_per_s"] / old["inference_docs_per_s"], 2),
        "train_peak_memory_ratio": round(new["train_peak_mb"] / old["train_peak_mb"], 2),
    }


def child_argv(args: argparse.Namespace) -> list[str]:
    argv = ["--data", str(args.data), "--docs", str(args.docs), "--batch-size", str(args.batch_size)]
    argv += ["--epochs", str(args.epochs), "--infer-docs", str(args.infer_docs), "--infer-batch-size", str(args.infer_batch_size)]
    argv += ["--threads", str(args.threads), "--device", args.device, "--encoder", args.encoder, "--dtype", args.dtype]
    if args.model:
        argv += ["--model", args.model]
    if args.inference_options:
        argv.append("--inference-options")
    if not args.head_share:
        argv.append("--no-head-share")
    return argv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="*", choices=HEAD_TYPES, help="head types (default: every registered one)")
    parser.add_argument("--data", type=Path, default=DEV, help="DocRED-format documents (the first ones are used)")
    parser.add_argument("--docs", type=int, default=8, help="training documents")
    parser.add_argument("--batch-size", type=int, default=4, help="training batch size")
    parser.add_argument("--epochs", type=int, default=2, help="timed passes over the training documents (at least 1)")
    parser.add_argument("--infer-docs", type=int, default=None, help="inference documents (default: --docs)")
    parser.add_argument("--infer-batch-size", type=int, default=None, help="default: --batch-size")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default; CPU time is measured)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: autocast in training and inference")
    parser.add_argument("--encoder", choices=["minilm", "bert-base", "tiny"], default="minilm",
                        help="minilm: the real MiniLM-L6; bert-base / tiny: random weights, nothing downloaded")
    parser.add_argument("--model", help="a trained DocRE model folder instead of --encoder (--families then ignored)")
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS),
                        help="code paths to measure (default: all; released only for atlop / ncrl; new-bf16 not with --dtype bf16)")
    parser.add_argument("--inference-options", action="store_true", help="also bf16 autocast and int8 (CPU)")
    parser.add_argument("--no-head-share", dest="head_share", action="store_false")
    parser.add_argument("--json-out", type=Path, help="write every figure (and this command) to this JSON file")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.infer_docs = args.infer_docs or args.docs
    args.infer_batch_size = args.infer_batch_size or args.batch_size
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], args)))
        return
    if args.epochs < 1:  # 0 only in the children bench_roofline.py starts (inference alone)
        parser.error("--epochs must be at least 1")

    import envre_hf.models as models

    families = args.families or sorted(HEAD_TYPES)
    if args.model:
        families = [models.DocREConfig.from_pretrained(args.model).head_type]
    results, summary = [], {}
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)

    def save() -> None:  # after every family, so that a run stopped by a time limit keeps what it measured
        if args.json_out:
            write_json(args.json_out, {"command": command, "machine": machine(), "ratios": summary, "runs": results})

    for family in families:
        runs = {}
        for path in PATHS:
            if path not in args.paths or (path == "released" and family not in released_families()):
                continue
            if path == "new-bf16" and args.dtype == "bf16":
                continue
            try:
                runs[path] = run_child(__file__, ["--child", family, path, *child_argv(args)])
            except RuntimeError as err:
                print(f"{family} {path}: {err}", file=sys.stderr)
        results += runs.values()
        for path, r in runs.items():
            print(
                f"{family:9s} {path:9s}: train step {r['train_step_s']:.3f} s (epoch {r['train_epoch_s']:.3f} s), "
                f"inference {r['inference_docs_per_s']:.2f} docs/s, peak {'CUDA' if r['device'].startswith('cuda') else 'RSS'} "
                f"{r['peak_mb']} MB (training {r['train_peak_mb']} MB)",
                flush=True,
            )
        if "replaced" in runs and "new" in runs:
            old, new = runs["replaced"], runs["new"]
            ratios = compare(new, old)
            summary.setdefault(family, {}).update(ratios)  # the new-vs-replaced ratios stay top-level keys
            print(
                f"{family:9s} new vs replaced: training step x{ratios['train_step_speedup']} faster "
                f"(epoch x{ratios['train_epoch_speedup']}), inference x{ratios['inference_speedup']} faster, "
                f"training peak memory x{ratios['train_peak_memory_ratio']}"
                + (f"; head+loss share {100 * new['head_loss_share']:.1f}%" if "head_loss_share" in new else ""),
                flush=True,
            )
            for name, opt in new.get("inference_options", {}).items():
                print(
                    f"{'':9s} {name:14s}: {opt['inference_docs_per_s']:.2f} docs/s"
                    + (f" (x{opt['speedup_vs_float']} vs float)" if "speedup_vs_float" in opt else "")
                    + f", max |logit change| {opt['max_abs_logit_change']}, agreement F1 with float "
                    f"{opt['agreement_f1_with_float']}, gold F1 {opt['gold_f1']}"
                    + (f" (change {opt['gold_f1_change']:+})" if "gold_f1_change" in opt else ""),
                    flush=True,
                )
        if "released" in runs:
            rel = runs["released"]
            print(
                f"{family:9s} released restatement vs our model, same batch ({rel['released_check_pairs']} pairs): "
                f"max |logit difference| {rel['released_vs_new_max_abs_logit_diff']:.2e}, "
                f"|loss difference| {rel['released_vs_new_loss_diff']:.2e}",
                flush=True,
            )
            for path, key, label in (
                ("new", "vs_released", f"new vs released ({args.dtype})"),
                ("new-bf16", "bf16_vs_released_fp32", "new bf16 vs released fp32"),
            ):
                if path in runs:
                    ratios = compare(runs[path], rel)
                    summary.setdefault(family, {})[key] = ratios
                    print(
                        f"{family:9s} {label}: training step x{ratios['train_step_speedup']} faster "
                        f"(epoch x{ratios['train_epoch_speedup']}), inference x{ratios['inference_speedup']} faster, "
                        f"training peak memory x{ratios['train_peak_memory_ratio']}",
                        flush=True,
                    )
        save()
    if results:
        r = results[0]
        print(
            f"\n{r['train_docs']} training documents (batch {r['batch_size']}, mean {r['mean_wordpieces']} word pieces, "
            f"max {r['max_wordpieces']}), {r['infer_docs']} inference documents (batch {r['infer_batch_size']}), "
            f"encoder {r['encoder']}, {r['dtype']}, device {r['device']}; times are "
            f"{'wall-clock' if r['device'].startswith('cuda') else 'CPU'} seconds"
        )
    if args.json_out:
        save()
        print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()

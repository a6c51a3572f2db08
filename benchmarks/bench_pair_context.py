"""The ``torch.bmm`` of prediction: pair attention and localized context pooling, now against a past commit.

The encoder runs once (``--model`` or MiniLM-L6 + a random ATLOP head) on the first ``--docs`` Re-DocRED test
documents in prediction's length-sorted batches; then ``pair_attention`` + ``localized_context`` of the batches'
pairs are timed with this checkout's functions and with those of ``--baseline`` (read from git, not copied),
alternating, in one process, with a ``torch.profiler`` count of the ops each calls. CPU seconds of one thread.

    nice -n 15 python benchmarks/bench_pair_context.py --baseline 13c235b --docs 10
"""

from __future__ import annotations

import argparse
import ast
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import REPO, TEST, machine, minilm_path, write_json  # noqa: E402

FUNCTIONS = ("pair_attention", "localized_context")


def baseline_functions(commit: str) -> dict:
    """``FUNCTIONS`` as ``commit``'s modeling_docre.py defined them."""
    import torch

    source = subprocess.run(["git", "show", f"{commit}:envre_hf/models/modeling_docre.py"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    tree = ast.parse(source)
    namespace = {"torch": torch, "Sequence": list, "annotations": None}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS:
            exec(compile(ast.Module([node], []), f"{commit}:modeling_docre.py", "exec"), namespace)  # noqa: S102
    return {name: namespace[name] for name in FUNCTIONS}


def main() -> None:
    import torch
    from transformers import AutoTokenizer

    from envre_hf.documents import read_documents
    from envre_hf.features import DocRECollator, featurize_document, length_sorted_batches
    from envre_hf.models import ATLOPModel, DocREModel
    from envre_hf.models import modeling_docre as current
    from envre_hf.models.modeling_docre import hts_index

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the commit to compare with")
    parser.add_argument("--docs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", help="a trained DocRE model folder (default: MiniLM-L6 + random ATLOP head)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(args.model or minilm_path())
    model = DocREModel.from_pretrained(args.model) if args.model else ATLOPModel.from_encoder_pretrained(minilm_path())
    model.eval()
    feats = [featurize_document(d, tokenizer) for d in read_documents(TEST)[: args.docs]]
    collate = DocRECollator(tokenizer.pad_token_id)
    inputs = []
    with torch.inference_mode():
        for idx in length_sorted_batches([len(f["input_ids"]) for f in feats], args.batch_size):
            batch = collate([{**feats[i], "labels": None} for i in idx])
            encoded = model.encoder(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
            seq, att, per_doc = encoded.last_hidden_state, encoded.entity_attention, [len(e) for e in batch["entity_pos"]]
            inputs.append((seq, att, *hts_index(batch["hts"], per_doc, seq.device), per_doc))
    variants = {"baseline": baseline_functions(args.baseline), "current": {n: getattr(current, n) for n in FUNCTIONS}}

    def run(fns: dict) -> list:
        out = []
        for seq, att, h, t, d, per_doc in inputs:
            out.append(fns["localized_context"](seq, fns["pair_attention"](att, h, t, d, per_doc), d))
        return out

    with torch.inference_mode():
        ref = run(variants["baseline"])
        diff = max(float((a - b).abs().max()) for a, b in zip(ref, run(variants["current"])))
        seconds = {name: [] for name in variants}
        for _ in range(args.repeats):
            for name, fns in variants.items():
                start = time.process_time()
                run(fns)
                seconds[name].append(time.process_time() - start)
        ops = {}
        for name, fns in variants.items():
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                run(fns)
            top = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:5]
            ops[name] = {e.key: {"calls": e.count, "self_cpu_ms": round(e.self_cpu_time_total / 1e3, 1)} for e in top}
    best = {name: round(min(s), 4) for name, s in seconds.items()}
    result = {"command": "python " + " ".join(shlex.quote(a) for a in sys.argv), "machine": machine(),
              "documents": len(feats), "pairs": sum(len(f["hts"]) for f in feats), "best_cpu_seconds": best,
              "baseline_over_current": round(best["baseline"] / best["current"], 2), "max_abs_difference": diff,
              "profile_top_ops": ops}
    print({k: result[k] for k in ("pairs", "best_cpu_seconds", "baseline_over_current", "max_abs_difference")})
    for name, table in ops.items():
        print(name, table)
    if args.json_out:
        write_json(args.json_out, result)


if __name__ == "__main__":
    main()

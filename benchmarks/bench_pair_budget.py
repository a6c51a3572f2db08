"""Prediction memory and time of documents with many entities: with the pair budget off and on, and
``envre evaluate --model`` at its defaults for every family (``--evaluate``).

A synthetic document of ``--entities`` entities (one mention each, two per sentence, plain one-piece words;
300 entities make 89,700 pairs in about 3,000 word pieces) is predicted by the real MiniLM-L6 encoder under
an ATLOP head (random head weights: memory and time do not depend on them; ``--model DIR`` for a trained
one) with ``iter_logits``: one document and a batch of ``--batch`` copies, each variant in a fresh child
process so its peak RSS is its own. ``budget off`` is ``pair_budget=None`` (every pair of a batch at once,
the code before the budget); the batch of copies with the budget off runs only with ``--unbounded-batch``
(four 300-entity documents need more than 24 GiB). Times are CPU seconds of ``--threads`` torch threads.

    nice -n 15 python benchmarks/bench_pair_budget.py --json-out benchmarks/results/pair-budget-cpu.json

``--evaluate``: the whole ``envre evaluate --model DIR --gold FILE`` command at its defaults (batch size 4, the pair
budget, fp32), in a child process per (family, document, copies): ``--families`` on MiniLM-L6 with random heads,
saved first; ``--documents`` ``synthetic`` (above) and ``redocred`` (Re-DocRED test documents, whole, one after
another until they hold ``--entities`` entities: about 3,500 words, 4,700 word pieces and 440 mentions for 300);
one document and ``--batch`` copies of it. ATLOP and NCRL (one network) score pairs in chunks of the budget;
KD-DocRE and DocuNet build every document's n x n pair matrix by design (their U-Net and axial layers read it
whole). ``--baseline COMMIT`` runs the same commands with that commit's code too (git archive).

    nice -n 15 python benchmarks/bench_pair_budget.py --evaluate --baseline 42f4730 \\
        --json-out benchmarks/results/pair-budget-evaluate-cpu.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import REPO, TEST, machine, minilm_path, package_at, peak_rss_mb, run_child, timed, write_json  # noqa: E402

WORDS = "the river town of a station near old green hill and mill road north with long bridge over lake".split()


def synthetic_document(entities: int, words_per_sentence: int = 18) -> dict:
    """A DocRED-format document: two one-word entity mentions per sentence, the rest filler words."""
    sents, vertex_set = [], []
    for s in range((entities + 1) // 2):
        words = [WORDS[(s + i) % len(WORDS)] for i in range(words_per_sentence)]
        for k, pos in enumerate((3, 11)):
            if len(vertex_set) < entities:
                words[pos] = "Paris" if k else "Berlin"
                vertex_set.append([{"name": words[pos], "sent_id": s, "pos": [pos, pos + 1], "type": "LOC"}])
        sents.append(words)
    return {"title": f"synthetic-{entities}", "sents": sents, "vertexSet": vertex_set, "labels": []}


def redocred_document(entities: int) -> dict:
    """Re-DocRED test documents, whole, one after another (those that would overshoot skipped) until they hold
    ``entities`` entities, as one DocRED document."""
    sents, vertex_set = [], []
    for doc in json.loads(TEST.read_text(encoding="utf-8")):
        if len(vertex_set) + len(doc["vertexSet"]) > entities:
            continue
        vertex_set += [[{**m, "sent_id": m["sent_id"] + len(sents)} for m in v] for v in doc["vertexSet"]]
        sents += doc["sents"]
        if len(vertex_set) == entities:
            break
    return {"title": f"redocred-{entities}", "sents": sents, "vertexSet": vertex_set, "labels": []}


def measure_evaluate(folder: str, gold: str, threads: int) -> dict:
    """``envre evaluate --model folder --gold gold`` in this process: CPU seconds and peak RSS."""
    import contextlib
    import io

    import torch

    from envre_hf.cli.main import main as envre

    torch.set_num_threads(threads)
    before = peak_rss_mb()
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        seconds, status = timed(lambda: envre(["evaluate", "--model", folder, "--gold", gold]))
    scores = json.loads(printed.getvalue()[printed.getvalue().index("{"):])
    return {"status": status, "cpu_seconds": round(seconds, 2), "peak_rss_mb": round(peak_rss_mb()),
            "rss_before_mb": round(before), "predictions": scores["num_predictions"]}


def evaluate_runs(args: argparse.Namespace, folder: Path) -> dict:
    """Every (code, family, document, copies) as its own ``envre evaluate`` child."""
    import torch
    from transformers import AutoTokenizer

    from envre_hf.models import DocREModel

    for family in args.families:  # MiniLM-L6 with a random head of each family, saved as envre train saves it
        torch.manual_seed(0)
        DocREModel.from_encoder_pretrained(minilm_path(), head_type=family).save_pretrained(folder / family)
        AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(folder / family)
    documents = {"synthetic": synthetic_document(args.entities), "redocred": redocred_document(args.entities)}
    for name in args.documents:
        for copies in (1, args.batch):
            docs = [{**documents[name], "title": f"{documents[name]['title']}-{i}"} for i in range(copies)]
            (folder / f"{name}-{copies}.json").write_text(json.dumps(docs))
    codes = {"new": str(REPO)}
    if args.baseline:
        codes[f"baseline {args.baseline}"] = package_at(args.baseline, folder / "baseline")
    runs = []
    for (code, path), family, name, copies in itertools.product(codes.items(), args.families, args.documents,
                                                                (1, args.batch)):
        child = ["--evaluate-child", str(folder / family), str(folder / f"{name}-{copies}.json"), "--threads", str(args.threads)]
        run = run_child(__file__, child, env={**os.environ, "PYTHONPATH": path})
        runs.append({"code": code, "family": family, "document": name, "documents": copies, **run})
        print(f"{code}: {family}, {copies} {name} document(s) of {args.entities} entities: {run['cpu_seconds']} CPU s, "
              f"peak RSS {run['peak_rss_mb']:,} MiB", flush=True)
    return {"runs": runs, "documents": {n: {"words": sum(len(s) for s in d["sents"]), "entities": len(d["vertexSet"]),
                                            "mentions": sum(len(v) for v in d["vertexSet"])}
                                        for n, d in documents.items() if n in args.documents}}


def measure(args: argparse.Namespace, copies: int, budget: int | None) -> dict:
    import torch
    from transformers import AutoTokenizer

    from envre_hf.documents.io import parse_document
    from envre_hf.features import featurize_document
    from envre_hf.models import ATLOPModel, DocREModel
    from envre_hf.models.prediction import iter_logits

    torch.set_num_threads(args.threads)
    source = args.model or minilm_path()
    tokenizer = AutoTokenizer.from_pretrained(source)
    if args.model:
        model = DocREModel.from_pretrained(args.model)
    else:
        torch.manual_seed(0)
        model = ATLOPModel.from_encoder_pretrained(minilm_path(), head_type="atlop")
    model.eval()
    doc = parse_document(synthetic_document(args.entities), None)
    feature = featurize_document(doc, tokenizer, max_seq_length=None)
    before = peak_rss_mb()
    seconds, out = timed(lambda: dict(iter_logits(model, [feature] * copies, tokenizer.pad_token_id, copies, False,
                                                   pair_budget=budget)))
    logits = torch.cat([out[i] for i in range(copies)])
    return {
        "documents": copies, "pair_budget": budget, "pairs": copies * len(feature["hts"]),
        "word_pieces": len(feature["input_ids"]), "cpu_seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_rss_mb()), "rss_before_prediction_mb": round(before),
        "logits_checksum": float(logits.double().abs().sum()),
    }


def main() -> None:
    from envre_hf.models.prediction import PAIR_BUDGET
    from envre_hf.models.registry import HEAD_TYPES, families

    networks = {}  # model class -> its first head type
    for family in families():
        networks.setdefault(family.class_name, family.head_type)

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=300)
    parser.add_argument("--batch", type=int, default=4, help="documents in the batched variant")
    parser.add_argument("--budget", type=int, default=PAIR_BUDGET, help=f"pair budget (default {PAIR_BUDGET})")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", help="a trained DocRE model folder (default: MiniLM-L6 + random ATLOP head)")
    parser.add_argument("--unbounded-batch", action="store_true", help="also the batch with the budget off")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--evaluate", action="store_true", help="envre evaluate --model at its defaults, per family")
    parser.add_argument("--families", nargs="+", choices=HEAD_TYPES, default=list(networks.values()),
                        help="default: one head type per network (NCRL is ATLOP's network with another loss)")
    parser.add_argument("--documents", nargs="+", choices=["synthetic", "redocred"], default=["synthetic", "redocred"])
    parser.add_argument("--baseline", help="--evaluate: also run this commit's code (git archive)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--evaluate-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        copies, budget = int(args.child[0]), None if args.child[1] == "off" else int(args.child[1])
        print(json.dumps(measure(args, copies, budget)))
        return
    if args.evaluate_child:
        print(json.dumps(measure_evaluate(*args.evaluate_child, args.threads)))
        return
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    if args.evaluate:
        with tempfile.TemporaryDirectory() as folder:
            result = {"command": command, "machine": machine(), **evaluate_runs(args, Path(folder))}
        if args.json_out:
            write_json(args.json_out, result)
        return
    passed = ["--entities", str(args.entities), "--threads", str(args.threads)] + (["--model", args.model] if args.model else [])
    variants = [(1, "off"), (1, str(args.budget)), (args.batch, str(args.budget))]
    if args.unbounded_batch:
        variants.append((args.batch, "off"))
    runs = []
    for copies, budget in variants:
        run = run_child(__file__, ["--child", str(copies), budget, *passed])
        runs.append(run)
        print(f"{copies} document(s), budget {budget}: {run['pairs']:,} pairs, {run['word_pieces']:,} word pieces each, "
              f"{run['cpu_seconds']} CPU s, peak RSS {run['peak_rss_mb']:,} MiB")
    off, on = runs[0], runs[1]
    ratios = {"peak_rss_off_over_on": round(off["peak_rss_mb"] / on["peak_rss_mb"], 2),
              "cpu_seconds_off_over_on": round(off["cpu_seconds"] / on["cpu_seconds"], 2),
              "same_logits_checksum": abs(off["logits_checksum"] - on["logits_checksum"]) <= 1e-6 * off["logits_checksum"]}
    print(json.dumps(ratios))
    if args.json_out:
        write_json(args.json_out, {"command": command, "machine": machine(), "ratios": ratios, "runs": runs})


if __name__ == "__main__":
    main()

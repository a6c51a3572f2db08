"""Memory and time of one long document in the ``document-relation-extraction`` pipeline, by its length.

The document is Re-DocRED-like text: the sentences of the Re-DocRED test documents, one after another, until it
holds ``--words`` words; its ``--entities`` entities take their mentions from those documents (entity k gathers the
mentions of every document's k-th entity, as character spans of the text), so mentions grow with the length as in a
real long text about a few entities (issue 44: 20,100 words, 23 entities). The pipeline (text with its entities as
character spans, the path of ``envre predict`` and ``envre probe`` too) runs the real MiniLM-L6 encoder under an
ATLOP head (random head weights: memory and time do not depend on them; ``--model DIR`` for a trained one), each
length in a fresh child process so that its peak RSS is its own; times are CPU seconds of ``--threads`` torch
threads, after a warm-up call on a short text. ``--baseline COMMIT`` also runs that commit's code (``git archive``
into a temporary folder) on the lengths up to ``--baseline-max-words`` (its memory grew with the length squared).

    nice -n 15 python benchmarks/bench_long_documents.py --baseline 42f4730 --baseline-max-words 8000 \\
        --json-out benchmarks/results/long-documents-cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import REPO, TEST, machine, minilm_path, package_at, peak_rss_mb, run_child, timed, write_json  # noqa: E402

#: Targets of issue 44: the 20k-word document under 4 GB, time within 1.5x of linear from 1k words.
MAX_RSS_MB, MAX_TIME_OVER_LINEAR = 4096, 1.5


def long_text(words: int, entities: int) -> dict:
    """``{"text", "entities"}``: Re-DocRED test documents' sentences joined by spaces up to ``words`` words; entity k
    holds the mentions of every document's k-th entity (its type: the first mention's)."""
    text, spans, types, count = [], [[] for _ in range(entities)], [None] * entities, 0
    length = 0
    for doc in json.loads(TEST.read_text(encoding="utf-8")):
        if count >= words:
            break
        starts = []  # per sentence, the character offset of each word
        for sentence in doc["sents"]:
            starts.append([])
            for word in sentence:
                length += 1 if text else 0
                starts[-1].append(length)
                text.append(word)
                length += len(word)
            count += len(sentence)
        for k, vertex in enumerate(doc["vertexSet"][:entities]):
            for mention in vertex:
                s, (a, b) = mention["sent_id"], mention["pos"]
                spans[k].append([starts[s][a], starts[s][b - 1] + len(doc["sents"][s][b - 1])])
                types[k] = types[k] or mention["type"]
    return {"text": " ".join(text), "entities": [{"mentions": m, "type": t} for m, t in zip(spans, types) if m]}


def measure(args: argparse.Namespace, words: int) -> dict:
    """One length in this process: the pipeline on the long text, after a warm-up on a short one."""
    import torch
    from transformers import AutoTokenizer

    import envre_hf
    from envre_hf.features import featurize_document
    from envre_hf.models import ATLOPModel, DocREModel
    from envre_hf.models.pipeline_docre import DocREPipeline

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model or minilm_path())
    torch.manual_seed(0)
    model = DocREModel.from_pretrained(args.model) if args.model else ATLOPModel.from_encoder_pretrained(minilm_path())
    pipe = DocREPipeline(model=model.eval(), tokenizer=tokenizer)
    doc = long_text(words, args.entities)
    pipe(long_text(50, args.entities))  # warm-up: the text segmenter, the encoder's first call
    before = peak_rss_mb()
    seconds, relations = timed(lambda: pipe(doc))
    feature = featurize_document(pipe.preprocess(doc).document, tokenizer)
    n_entities = len(doc["entities"])
    return {
        "code": str(Path(envre_hf.__file__).resolve().parents[1]), "words": len(doc["text"].split()),
        "word_pieces": len(feature["input_ids"]), "entities": n_entities,
        "mentions": sum(len(e["mentions"]) for e in doc["entities"]), "pairs": n_entities * (n_entities - 1),
        "cpu_seconds": round(seconds, 2), "peak_rss_mb": round(peak_rss_mb()), "rss_before_prediction_mb": round(before),
        "relations": len(relations),
    }


def summary(runs: list[dict]) -> dict:
    """Each length's CPU seconds per word against the shortest's, and the targets."""
    first, last = runs[0], runs[-1]
    per_word = first["cpu_seconds"] / first["words"]
    over_linear = {str(r["words"]): round(r["cpu_seconds"] / r["words"] / per_word, 2) for r in runs}
    return {
        "time_per_word_over_shortest": over_linear,
        "longest_peak_rss_mb": last["peak_rss_mb"],
        "longest_under_max_rss": last["peak_rss_mb"] < MAX_RSS_MB,
        "longest_time_within_linear_bound": last["cpu_seconds"] / first["cpu_seconds"]
        <= MAX_TIME_OVER_LINEAR * last["words"] / first["words"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, nargs="+", default=[1000, 4000, 8000, 20000])
    parser.add_argument("--entities", type=int, default=23)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", help="a trained DocRE model folder (default: MiniLM-L6 + random ATLOP head)")
    parser.add_argument("--baseline", help="also run this commit's code (git archive) on the shorter lengths")
    parser.add_argument("--baseline-max-words", type=int, default=8000)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args, args.child)))
        return
    passed = ["--entities", str(args.entities), "--threads", str(args.threads)] + (["--model", args.model] if args.model else [])
    result = {"command": "python " + " ".join(shlex.quote(a) for a in sys.argv), "machine": machine()}
    with tempfile.TemporaryDirectory() as folder:
        codes = {"new": str(REPO)}
        if args.baseline:
            codes[f"baseline {args.baseline}"] = package_at(args.baseline, folder)
        for name, code in codes.items():
            env = {**os.environ, "PYTHONPATH": code}
            sizes = [w for w in args.words if name == "new" or w <= args.baseline_max_words]
            runs = [run_child(__file__, ["--child", str(w), *passed], env=env) for w in sizes]
            for r in runs:
                print(f"{name}: {r['words']:,} words, {r['word_pieces']:,} word pieces, {r['mentions']:,} mentions: "
                      f"{r['cpu_seconds']} CPU s, peak RSS {r['peak_rss_mb']:,} MiB", flush=True)
            result[name] = {"runs": runs, "summary": summary(runs)}
            print(json.dumps(result[name]["summary"]))
    if args.baseline:
        old = {r["words"]: r for r in result[f"baseline {args.baseline}"]["runs"]}
        result["baseline_over_new"] = {
            str(r["words"]): {"peak_rss": round(old[r["words"]]["peak_rss_mb"] / r["peak_rss_mb"], 2),
                              "cpu_seconds": round(old[r["words"]]["cpu_seconds"] / r["cpu_seconds"], 2)}
            for r in result["new"]["runs"] if r["words"] in old
        }
        print(json.dumps(result["baseline_over_new"]))
    if args.json_out:
        write_json(args.json_out, result)


if __name__ == "__main__":
    main()

"""The pipeline predicts what ``envre evaluate --model`` predicts: Re-DocRED test documents given as DocRED dicts
and as text with their mentions as character spans, against :func:`envre_hf.models.prediction.predict`.

The model is ``--model DIR`` or, by default, ATLOP on the real MiniLM-L6 encoder (``[bench]`` extra) with its head
initialised from seed 0 (saved to a temporary folder): untrained, its relation scores sit near the threshold,
which makes the comparison strict. Prints the triple counts and whether the three sets are equal.

    python3 benchmarks/check_pipeline_equal.py [--docs 20] [--model DIR] [--json benchmarks/results/pipeline_equal.json]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

from _bench_common import TEST, minilm_path

from envre_hf.atomic import write_json
from envre_hf.documents import read_documents, to_docred
from envre_hf.documents.text import as_text
from envre_hf.models.prediction import load_for_inference, predict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--model", help="a saved DocRE model (default: MiniLM-L6 ATLOP, head from seed 0)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    import torch
    from transformers import AutoTokenizer, pipeline

    from envre_hf.models import DocREModel

    docs = read_documents(TEST)[: args.docs]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model
        if model_dir is None:
            torch.manual_seed(0)
            DocREModel.from_encoder_pretrained(minilm_path(), head_type="atlop").save_pretrained(tmp)
            AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(tmp)
            model_dir = tmp
        model, tokenizer = load_for_inference(model_dir, "cpu")
        start = time.perf_counter()
        rows = predict(model, docs, tokenizer, batch_size=args.batch_size, progress=False)
        evaluate_s = time.perf_counter() - start
        expected = {(r["title"], r["h_idx"], r["t_idx"], r["r"]) for r in rows}
        pipe = pipeline("document-relation-extraction", model=model_dir, device="cpu")
        start = time.perf_counter()
        routes = {"docred": pipe([to_docred(d) for d in docs], batch_size=args.batch_size)}
        pipeline_s = time.perf_counter() - start
        routes["text"] = pipe([as_text(d) for d in docs], batch_size=args.batch_size)
    triples = {name: {(d.title, r["h_idx"], r["t_idx"], r["relation"]) for d, out in zip(docs, outs) for r in out}
               for name, outs in routes.items()}
    result = {
        "command": "python3 benchmarks/check_pipeline_equal.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
        "model": args.model or "MiniLM-L6 ATLOP, head from seed 0 (untrained)",
        "documents": len(docs),
        "triples": {"evaluate_model": len(expected), **{k: len(v) for k, v in triples.items()}},
        "equal": {name: found == expected for name, found in triples.items()},
        "seconds": {"predict": round(evaluate_s, 2), "pipeline_docred": round(pipeline_s, 2)},
    }
    print(json.dumps(result, indent=1))
    if args.json:
        write_json(args.json, result, indent=1)
    return 0 if all(result["equal"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

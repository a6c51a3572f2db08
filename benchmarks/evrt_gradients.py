#!/usr/bin/env python3
"""Where does an EVRT update point? Gradient norm of each weighted loss term, per parameter group.

For a (trained) DocRE model and a few paired batches of real Re-DocRED documents with twins renamed
by the corpus KB, computes separately the gradients of L_clo, L_clp, alpha * L_rcr and beta * L_pcr
(``EVRTTrainer``'s definitions and weights), and prints per term: the gradient norm on the encoder
and on the head, the ratio to L_clo's norm, and the cosine with L_clo's gradient; plus the cosine of
the whole EVRT update with L_clo's gradient. Written to ``--json``.

    python benchmarks/evrt_gradients.py --model replicate_out/models/atlop --json benchmarks/results/evrt-gradients-cpu.json
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "redocred" / "dev_revised.json"
TERMS = ("clo", "clp", "rcr", "pcr")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a saved DocRE model folder")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="training documents (twins renamed from them)")
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--max-seq-length", type=int, default=256)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--beta", type=float, default=0.1)
    p.add_argument("--pcr-form", default="bce_margin", choices=["bce_margin", "sym_kl"])
    p.add_argument("--rcr-reduction", default="mean", choices=["mean", "sum"])
    p.add_argument("--json", type=Path)
    cli = p.parse_args()
    if not Path(cli.model).is_dir():
        sys.exit(f"evrt_gradients: --model {cli.model}: no such folder")

    import torch

    from envre_hf.documents import read_documents
    from envre_hf.features import DocRECollator, featurize_document
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.models.prediction import load_for_inference
    from envre_hf.renaming import RenamingPipeline
    from envre_hf.training import EVRTPairCollator, EVRTPairDataset, EVRTTrainer, EVRTTrainingArguments, OnTheFlyTwins

    torch.manual_seed(0)
    model, tokenizer = load_for_inference(cli.model, "cpu")
    model.train()
    docs = read_documents(cli.data)
    n_docs = cli.batches * cli.batch_size
    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=cli.max_seq_length)
    dataset = EVRTPairDataset(docs[:n_docs], featurize, OnTheFlyTwins(RenamingPipeline(CorpusKB(docs)), 0))
    collate = EVRTPairCollator(DocRECollator(tokenizer))
    args = EVRTTrainingArguments(
        output_dir="/tmp/evrt_gradients", evrt=True, evrt_alpha=cli.alpha, evrt_beta=cli.beta,
        evrt_pcr_form=cli.pcr_form, evrt_rcr_reduction=cli.rcr_reduction, report_to=[], use_cpu=True,
    )  # fmt: skip
    weights = {"clo": 1.0, "clp": 1.0, "rcr": cli.alpha, "pcr": cli.beta}
    groups = {
        "encoder": [p for n, p in model.named_parameters() if n.startswith("encoder.")],
        "head": [p for n, p in model.named_parameters() if not n.startswith("encoder.")],
    }
    sums: dict[str, dict[str, torch.Tensor]] = {}
    trainer = EVRTTrainer(model=model, args=args)
    for b in range(cli.batches):
        batch = collate([dataset[i] for i in range(b * cli.batch_size, (b + 1) * cli.batch_size)])
        for term in TERMS:
            model.zero_grad(set_to_none=True)
            (_term(trainer, model, batch, term) * weights[term]).backward()
            for group, params in groups.items():
                flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in params])
                sums.setdefault(term, {}).setdefault(group, torch.zeros_like(flat))
                sums[term][group] += flat
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(cli).items()}
    result: dict[str, dict] = {"command": "python benchmarks/evrt_gradients.py " + " ".join(sys.argv[1:]), "settings": settings}
    rows = {}
    for group in groups:
        clo = sums["clo"][group]
        total = sum(sums[t][group] for t in TERMS)
        for term in TERMS:
            g = sums[term][group]
            rows.setdefault(term, {})[group] = {
                "norm": float(g.norm()),
                "ratio_to_clo": float(g.norm() / clo.norm()),
                "cosine_with_clo": float(torch.nn.functional.cosine_similarity(g, clo, dim=0)),
            }
        rows.setdefault("update", {})[group] = {
            "norm": float(total.norm()),
            "ratio_to_clo": float(total.norm() / clo.norm()),
            "cosine_with_clo": float(torch.nn.functional.cosine_similarity(total, clo, dim=0)),
        }
    result["terms"] = rows
    print(f"{'term':<8} {'group':<8} {'|grad|':>10} {'/ |clo|':>9} {'cos(clo)':>9}")
    for term, per_group in rows.items():
        for group, r in per_group.items():
            print(f"{term:<8} {group:<8} {r['norm']:>10.4f} {r['ratio_to_clo']:>9.3f} {r['cosine_with_clo']:>9.3f}")
    if cli.json:
        cli.json.parent.mkdir(parents=True, exist_ok=True)
        cli.json.write_text(json.dumps(result, indent=2))


def _term(trainer, model, batch, term):
    """The unweighted loss term ``term`` of ``batch`` with its autograd graph (the trainer's objective)."""
    from envre_hf.training.objective import evrt_loss

    return evrt_loss(model, model, batch, trainer.args).terms[term]


if __name__ == "__main__":
    main()

"""Entities from mention spans without clusters: the alias rules against exact name match, on Re-DocRED test.

Every document is turned into text with its gold mentions as character spans
(:func:`envre_hf.documents.text.as_text`); the mentions, without their entities, are grouped by the pipeline's
``cluster`` rules (``alias``: :mod:`envre_hf.documents.aliases`; ``exact``: same name and type). Reported:
pairwise clustering precision / recall / F1 over the mention pairs of each document (micro-averaged), against
the gold entities. Target (issue 25): alias >= 0.80, exact about 0.74.

With ``--model DIR`` (a trained DocRE model), also the relation F1 (official DocRED scoring) of the pipeline on
the text with the gold entities (the gold-entity route) and on the text with the clustered mentions (each
predicted entity stands for the gold entity holding most of its mentions; triples deduplicated).

    python3 benchmarks/bench_clustering.py [--max-docs N] [--model DIR] [--json benchmarks/results/clustering.json]
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

from _bench_common import TEST

from envre_hf.atomic import write_json
from envre_hf.documents import read_documents
from envre_hf.documents.text import as_text
from envre_hf.models.pipeline_docre import CLUSTERINGS


def mention_table(doc) -> list[tuple[int, int, str, int]]:
    """(start, end, type, gold entity) of every gold mention, in text order."""
    text = as_text(doc)
    return sorted((s, e, doc.entities[i].type, i) for i, ent in enumerate(text["entities"]) for s, e in ent["mentions"])


def pairwise(docs, rule: str) -> dict[str, float]:
    """Micro pairwise precision / recall / F1 of ``rule``'s clusters against the gold entities."""
    counts = Counter()
    for doc in docs:
        text, table = as_text(doc)["text"], mention_table(doc)
        clusters = CLUSTERINGS[rule]([text[s:e] for s, e, _, _ in table], [t for _, _, t, _ in table])
        predicted = {i: c for c, members in enumerate(clusters) for i in members}
        for i, j in itertools.combinations(range(len(table)), 2):
            gold, same = table[i][3] == table[j][3], predicted[i] == predicted[j]
            counts["tp"] += gold and same
            counts["fp"] += same and not gold
            counts["fn"] += gold and not same
    p = counts["tp"] / max(1, counts["tp"] + counts["fp"])
    r = counts["tp"] / max(1, counts["tp"] + counts["fn"])
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r) if p + r else 0, 4),
            "pairs": dict(counts)}


def relation_f1(docs, model_dir: str, batch_size: int) -> dict[str, float]:
    """Relation F1 of the gold-entity route and of the alias-clustered route (see the module doc)."""
    from transformers import pipeline

    from envre_hf.metrics import score_predictions

    pipe = pipeline("document-relation-extraction", model=model_dir)
    gold_route = pipe([as_text(d) for d in docs], batch_size=batch_size)
    rows = [{"title": d.title, "h_idx": r["h_idx"], "t_idx": r["t_idx"], "r": r["relation"], "evidence": []}
            for d, out in zip(docs, gold_route) for r in out]
    gold_f1 = score_predictions(rows, docs).headline()["f1"]
    tables = [mention_table(d) for d in docs]
    inputs = [{"title": d.title, "text": as_text(d)["text"], "mentions": [{"span": [s, e], "type": t} for s, e, t, _ in table]}
              for d, table in zip(docs, tables)]
    rows = set()
    for doc, table, out in zip(docs, tables, pipe(inputs, batch_size=batch_size)):
        owner = {(s, e): g for s, e, _, g in table}

        def gold_entity(entity: dict) -> int:
            return Counter(owner[tuple(span)] for span in entity["mentions"]).most_common(1)[0][0]

        for r in out:
            h, t = gold_entity(r["head"]), gold_entity(r["tail"])
            if h != t:
                rows.add((doc.title, h, t, r["relation"]))
    clustered = [{"title": title, "h_idx": h, "t_idx": t, "r": r, "evidence": []} for title, h, t, r in sorted(rows)]
    return {"gold_entities_f1": gold_f1, "alias_clusters_f1": score_predictions(clustered, docs).headline()["f1"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=TEST)
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--model", help="a trained DocRE model folder: also report the relation F1 of both routes")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here (with the command)")
    args = parser.parse_args(argv)
    docs = read_documents(args.input)[: args.max_docs]
    start = time.process_time()
    result = {"command": "python3 benchmarks/bench_clustering.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
              "input": args.input.name, "documents": len(docs),
              "mentions": sum(len(e.mentions) for d in docs for e in d.entities),
              "pairwise": {rule: pairwise(docs, rule) for rule in ("exact", "alias")}}
    result["cpu_s"] = round(time.process_time() - start, 2)
    for rule, figures in result["pairwise"].items():
        print(f"{rule:>5}: pairwise clustering P {figures['precision']:.4f} R {figures['recall']:.4f} "
              f"F1 {figures['f1']:.4f}  ({len(docs)} documents, {result['mentions']} mentions)")
    if args.model:
        result["relations"] = relation_f1(docs, args.model, args.batch_size)
        print(f"relation F1: gold entities {result['relations']['gold_entities_f1']:.2f}, "
              f"alias clusters {result['relations']['alias_clusters_f1']:.2f}")
    result["checks"] = {"alias pairwise F1 >= 0.80": result["pairwise"]["alias"]["f1"] >= 0.80}
    if args.json:
        from _bench_common import machine  # this script's folder is on sys.path

        write_json(args.json, {**result, "machine": machine()}, indent=1)
    return 0 if all(result["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Recompute ``envre probe``'s flip rate and name-reliance share from its ``--save-predictions`` files alone.

An independent check of ``envre_hf.analysis.name_reliance`` (plain ``json``, no envre_hf import): a fact is
``(document key, h_idx, t_idx, r)``; an original row's key is its ``doc_id`` (or, without one, its ``title``), a
copy row's key is its ``doc_id`` without the ``#<seed>`` the renaming appends. For the facts predicted on the
originals: flip rate = lost (fact, copy) pairs / (facts x copies); name reliance = share of facts found in fewer
than half the copies. Prints both next to the values of ``probe.json``; exit status 1 when they differ.

    python benchmarks/probe_flip_rate.py probe_out
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _facts(rows: list[dict], strip_seed: bool) -> set[tuple]:
    out = set()
    for row in rows:
        key = row.get("doc_id") if row.get("doc_id") is not None else row["title"]
        if strip_seed:
            key = key.rsplit("#", 1)[0]
        out.add((key, row["h_idx"], row["t_idx"], row["r"]))
    return out


def recompute(folder: Path) -> dict[str, float | int | None]:
    """Flip rate and name reliance from ``folder/predictions/*.json``."""
    predictions = folder / "predictions"
    original = _facts(json.loads((predictions / "original.json").read_text(encoding="utf-8")), strip_seed=False)
    copy_files = sorted(predictions.glob("seed-*.json"), key=lambda p: int(p.stem.split("-", 1)[1]))
    if not copy_files:
        raise SystemExit(f"{predictions}: no seed-*.json files (run envre probe with --save-predictions)")
    copies = [_facts(json.loads(p.read_text(encoding="utf-8")), strip_seed=True) for p in copy_files]
    kept = {fact: sum(fact in copy for copy in copies) for fact in original}
    checks = len(original) * len(copies)
    return {
        "facts": len(original),
        "copies": len(copies),
        "flip_rate": (checks - sum(kept.values())) / checks if checks else None,
        "name_reliance": sum(n < len(copies) / 2 for n in kept.values()) / len(original) if original else None,
    }


def _same(a: float | None, b: float | None) -> bool:
    return a is None and b is None or a is not None and b is not None and math.isclose(a, b, rel_tol=0, abs_tol=1e-12)


def check(folder: Path) -> dict:
    """The recomputed figures, the ones ``folder/probe.json`` reports, and whether they are equal."""
    recomputed = recompute(folder)
    reported = json.loads((folder / "probe.json").read_text(encoding="utf-8"))["summary"]
    equal = recomputed["facts"] == reported["facts"] and all(
        _same(recomputed[key], reported[key]) for key in ("flip_rate", "name_reliance")
    )
    return {"recomputed": recomputed, "reported": {k: reported[k] for k in ("facts", "flip_rate", "name_reliance")},
            "equal": equal}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="an envre probe --output folder written with --save-predictions")
    result = check(parser.parse_args(argv).folder)
    print(json.dumps(result, indent=2))
    return 0 if result["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())

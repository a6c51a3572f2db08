"""Shared helpers of the metric tests: perturbed official-format predictions of gold documents."""

from __future__ import annotations

import random

from envre_hf.documents import docred_schema


def perturbed(gold, seed=0, *, evidence=True, by_title=False):
    """Gold facts with some dropped, some given another relation, some repeated (with other evidence),
    spurious pairs, and evidence absent, None, empty, repeated or partly wrong. ``by_title``: predictions
    name their document by ``title`` (plus ``doc_id`` where the document has one) instead of its key."""
    rng = random.Random(seed)
    rels = docred_schema().ids()
    preds = []

    def ref(doc):
        if not by_title:
            return {"doc_id": doc.key}
        return {"title": doc.title} | ({"doc_id": doc.doc_id} if doc.doc_id is not None else {})

    for doc in gold:
        for rel in doc.relations:
            u = rng.random()
            if u < 0.1:
                continue
            pred = {**ref(doc), "h_idx": rel.h, "t_idx": rel.t, "r": rng.choice(rels) if u < 0.2 else rel.r}
            v = rng.random()
            if evidence and v < 0.6:
                pred["evidence"] = list(rel.evidence) + ([0, 0] if v < 0.2 else [])
            elif evidence and v < 0.7:
                pred["evidence"] = None
            elif evidence and v < 0.8:
                pred["evidence"] = []
            preds.append(pred)
            if rng.random() < 0.05:  # a repeat: its evidence must not count
                preds.append({**pred, "evidence": [1, 2, 3]})
        n = doc.num_entities
        for _ in range(2):
            h, t = rng.sample(range(n), 2)
            preds.append({**ref(doc), "h_idx": h, "t_idx": t, "r": rng.choice(rels), "evidence": [0]})
    rng.shuffle(preds)
    return preds

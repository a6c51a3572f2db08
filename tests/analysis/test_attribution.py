"""Word attribution (IG over input embeddings) and MAP(K) against DocRED-HWE rationales (the study's Figure 5)."""

from __future__ import annotations

import copy
import itertools
import json
import random

import numpy as np
import pytest
import torch
from _training_helpers import tiny_model

from envre_hf.analysis.attribution import (
    AttributionConfig,
    DocumentAttributor,
    piece_tokens,
    sum_to_tokens,
)
from envre_hf.analysis.attribution_run import RECORDS, AttributionRunError, run_attribution
from envre_hf.analysis.rationale_map import (
    MAPCurve,
    excluded_tokens,
    map_curve,
    map_terms,
    rationale_tokens,
)
from envre_hf.documents import Document, Entity, Mention, Relation, read_documents, write_documents
from envre_hf.features import DocRECollator, featurize_document


@pytest.fixture(scope="module")
def hwe_docs(hwe_path, tokenizer):
    """Three short DocRED-HWE documents, each cut to its first three facts (keywords kept)."""
    docs = read_documents(hwe_path)[:60]
    docs = sorted(docs, key=lambda d: len(featurize_document(d, tokenizer)["input_ids"]))[:3]
    out = []
    for d in docs:
        d = copy.deepcopy(d)
        d.relations = d.relations[:3]
        out.append(d)
    return out



def margins_by_forward(model, tokenizer, doc, zero_embeddings=False, fill_id=None) -> dict[tuple[int, int, str], float]:
    """logit_r - logit_0 of every gold fact through the model's ordinary forward (no attribution machinery)."""
    from envre_hf.documents import docred_schema

    schema = docred_schema()
    feature = featurize_document(doc, tokenizer)
    batch = DocRECollator(tokenizer)([feature])
    if fill_id is not None:  # every position holds this token (the pad baseline)
        batch["input_ids"].fill_(fill_id)
    emb = model.get_input_embeddings()
    saved = emb.weight.detach().clone()
    with torch.no_grad():
        if zero_embeddings:
            emb.weight.zero_()
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       entity_pos=batch["entity_pos"], hts=batch["hts"]).logits
        emb.weight.copy_(saved)
    n = doc.num_entities
    out = {}
    for rel in doc.relations:
        row = rel.h * (n - 1) + (rel.t if rel.t < rel.h else rel.t - 1)
        out[(rel.h, rel.t, rel.r)] = float(logits[row, schema.rel2index[rel.r]] - logits[row, 0])
    return out


# --------------------------------------------------------------------------- integrated gradients


@pytest.mark.parametrize("max_positions", [512, 128])  # 128: the document is encoded in overlapping windows
def test_ig_completeness_against_the_models_own_forward(tokenizer, hwe_docs, max_positions):
    doc = hwe_docs[0]
    # large weights: a clearly non-linear score
    model = tiny_model(tokenizer, "ncrl", max_positions=max_positions, encoder={"initializer_range": 0.3}).double().eval()
    if max_positions == 128:
        assert len(featurize_document(doc, tokenizer)["input_ids"]) > 128
    ig = DocumentAttributor(model, tokenizer, AttributionConfig(steps=24)).attribute(doc)
    gxi = DocumentAttributor(model, tokenizer, AttributionConfig(method="grad_x_input")).attribute(doc)
    at_input = margins_by_forward(model, tokenizer, doc)
    at_zero = margins_by_forward(model, tokenizer, doc, zero_embeddings=True)
    assert len(ig.facts) == len(at_input)
    worst_gxi = 0.0
    for fact, lin in zip(ig.facts, gxi.facts):
        key = (fact.h, fact.t, fact.r)
        assert fact.score == pytest.approx(at_input[key], abs=1e-9)
        assert fact.baseline_score == pytest.approx(at_zero[key], abs=1e-9)
        diff = at_input[key] - at_zero[key]
        total = sum(fact.tokens) + fact.unmapped
        assert total == pytest.approx(diff, abs=1e-3 + 1e-3 * abs(diff))
        worst_gxi = max(worst_gxi, abs(sum(lin.tokens) + lin.unmapped - diff))
    assert worst_gxi > 1e-2  # the score is far from linear: completeness above is IG's, not an accident


def captum_ig(model, tokenizer, doc, steps):
    """Token attributions and unmapped shares of every fact by Captum's IntegratedGradients (one call per fact)."""
    from captum.attr import IntegratedGradients

    from envre_hf.analysis.attribution import _frozen, _prepare, fact_scores

    attributor = DocumentAttributor(model, tokenizer, AttributionConfig(steps=steps))
    prep = _prepare(model, doc, tokenizer, attributor.config, attributor.schema)
    with _frozen(model):
        x, b = attributor._embeddings(prep)
        ig = IntegratedGradients(lambda embeds: fact_scores(model, prep, embeds))
        pieces = [
            ig.attribute(x[None], baselines=b[None], target=f, n_steps=steps, method="gausslegendre")[0].sum(-1)
            for f in range(len(prep.facts))
        ]
    return sum_to_tokens(torch.stack(pieces).double(), prep.mapping, prep.n_tokens)


def test_ig_computes_captums_integral(tokenizer, hwe_docs):
    pytest.importorskip("captum")
    doc = hwe_docs[1]
    model = tiny_model(tokenizer, "ncrl", encoder={"initializer_range": 0.3}).double().eval()
    shared = DocumentAttributor(model, tokenizer, AttributionConfig(steps=8, step_batch=3)).attribute(doc)
    tokens, unmapped = captum_ig(model, tokenizer, doc, steps=8)
    assert len(shared.facts) == len(tokens)
    for a, b_tokens, b_unmapped in zip(shared.facts, tokens, unmapped):
        # Captum builds its interpolation points in float32: agreement to that precision
        np.testing.assert_allclose(a.tokens, b_tokens.tolist(), rtol=1e-5, atol=1e-8)
        assert a.unmapped == pytest.approx(float(b_unmapped), rel=1e-5)


def test_pad_baseline_and_bfloat16(tokenizer, hwe_docs):
    doc = hwe_docs[2]
    model = tiny_model(tokenizer, "ncrl").eval()
    with torch.no_grad():  # BERT initialises the pad row to zeros; a trained encoder's is not (MiniLM's has norm 0.77)
        model.get_input_embeddings().weight[tokenizer.pad_token_id] = 0.05
    pad = DocumentAttributor(model, tokenizer, AttributionConfig(steps=6, baseline="pad")).attribute(doc)
    zero = DocumentAttributor(model, tokenizer, AttributionConfig(steps=6)).attribute(doc)
    bf16 = DocumentAttributor(model, tokenizer, AttributionConfig(steps=6, dtype="bfloat16")).attribute(doc)
    at_pad = margins_by_forward(model, tokenizer, doc, fill_id=tokenizer.pad_token_id)
    for f in pad.facts:
        assert f.baseline_score == pytest.approx(at_pad[(f.h, f.t, f.r)], abs=1e-6)
    for f in pad.facts:
        assert sum(f.tokens) + f.unmapped == pytest.approx(f.score - f.baseline_score, abs=1e-3)
    for a, b in zip(zero.facts, bf16.facts):
        assert b.score == pytest.approx(a.score, abs=0.05)
    assert all(p.requires_grad for p in model.parameters())  # attribution leaves the model as it was


# --------------------------------------------------------------------------- word pieces -> tokens, exclusion


def test_pieces_map_to_docred_tokens_and_markers_map_to_none(tokenizer, hwe_docs):
    doc = hwe_docs[0]
    ids, mapping = piece_tokens(doc, tokenizer)
    assert ids == featurize_document(doc, tokenizer)["input_ids"]
    words = [w for s in doc.sents for w in s]
    mapped = [m for m in mapping if m >= 0]
    assert mapped == sorted(mapped) and sorted(set(mapped)) == list(range(len(words)))
    pieces = tokenizer.convert_ids_to_tokens(ids)
    for token in range(len(words)):
        text = "".join(p[2:] if p.startswith("##") else p for p, m in zip(pieces, mapping) if m == token)
        assert text == tokenizer.backend_tokenizer.normalizer.normalize_str(words[token]).replace(" ", "")
    unmapped = [p for p, m in zip(pieces, mapping) if m < 0]
    n_markers = len({(s, e) for ent in featurize_document(doc, tokenizer)["entity_pos"] for s, e in ent})
    assert unmapped.count("[CLS]") == 1 and unmapped.count("[SEP]") == 1
    assert set(unmapped) <= {"[CLS]", "[SEP]", "*"} and unmapped.count("*") >= n_markers


def test_sum_to_tokens_by_hand():
    scores = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    tokens, rest = sum_to_tokens(scores, [-1, 0, 0, -1, 1, -1], 3)
    assert tokens.tolist() == [[5.0, 5.0, 0.0]] and rest.tolist() == [11.0]


def _toy_doc() -> Document:
    """0:Alice 1:was 2:born 3:in 4:Paris 5:, 6:near 7:Versailles 8:. ; head Alice, tail Paris, bridge Versailles."""
    sents = [["Alice", "was", "born", "in", "Paris", ",", "near", "Versailles", "."]]
    ents = [
        Entity([Mention("Alice", 0, (0, 1), "PER")]),
        Entity([Mention("Paris", 0, (4, 5), "LOC")]),
        Entity([Mention("Versailles", 0, (7, 8), "LOC")]),
    ]
    kws = [{"name": "Alice", "sent_id": 0, "pos": [0, 1]}, {"name": "born", "sent_id": 0, "pos": [2, 3]},
           {"name": "Versailles", "sent_id": 0, "pos": [7, 8]}]
    return Document("toy", sents, ents, [Relation(0, 1, "P19", extra={"keywords": kws})])


def test_entity_mentions_are_not_ranked_nor_rationale():
    doc = _toy_doc()
    assert rationale_tokens(doc, doc.relations[0]) == {0, 2, 7}
    assert excluded_tokens(doc, 0, 1) == {0, 4}
    assert excluded_tokens(doc, 0, 1, "all") == {0, 4, 7}
    # the head mention (a keyword) gets the largest attribution: excluded, it must neither count nor be missed
    tokens = [9.0, 0.1, 5.0, 0.2, 8.0, 0.3, 0.4, 4.0, 0.5]
    rec = {"doc": "toy", "facts": [{"h": 0, "t": 1, "r": "P19", "tokens": tokens}]}
    pair = map_curve([rec], {"toy": doc}, k_max=3)
    assert pair.map == pytest.approx([1.0, 1.0, 2 / 3])  # born, Versailles, then a non-rationale word
    every = map_curve([rec], {"toy": doc}, k_max=2, exclude="all")
    assert every.map == pytest.approx([1.0, 0.5])  # only "born" is left to find
    rec["facts"][0]["tokens"] = [9.0, 0.1, 0.0, 0.2, 8.0, 0.3, 0.4, 0.0, 0.5]
    none_left = map_curve([rec], {"toy": doc}, k_max=2, exclude="all")
    assert none_left.map[1] == 0.0


def test_facts_without_rankable_rationale_are_reported_not_counted():
    doc = _toy_doc()
    doc.relations[0].extra["keywords"] = [{"name": "Alice", "sent_id": 0, "pos": [0, 1]}]
    rec = {"doc": "toy", "facts": [{"h": 0, "t": 1, "r": "P19", "tokens": [0.0] * 9}]}
    curve = map_curve([rec], {"toy": doc}, k_max=2)
    assert (curve.facts, curve.facts_without_rationale, curve.documents) == (0, 1, 1)


# --------------------------------------------------------------------------- MAP(K), Eq. 5


def map_by_the_formula(scores, relevant, k_max):
    """Eq. 5 for one fact written as a plain loop (no ties in ``scores``)."""
    ranked = [relevant[i] for i in sorted(range(len(scores)), key=lambda i: -scores[i])]
    out = []
    for k in range(1, k_max + 1):
        total = 0.0
        for i in range(1, k + 1):
            if i <= len(ranked) and ranked[i - 1]:
                precision = sum(ranked[:i]) / i
                total += precision * 1
        out.append(total / k)
    return out


def test_perfect_ranking_is_one_up_to_the_number_of_rationale_words():
    scores = [0.9, 0.8, 0.7, 0.1, 0.0, -0.5]
    relevant = [True, True, True, False, False, False]
    curve = map_terms(scores, relevant, 8)
    assert curve[:3] == pytest.approx([1.0, 1.0, 1.0])
    assert curve[3:] == pytest.approx([3 / k for k in range(4, 9)])


def test_rationale_words_ranked_last():
    scores = [5.0, 4.0, 3.0, 2.0, 1.0]
    relevant = [False, False, False, True, True]
    curve = map_terms(scores, relevant, 6)
    assert curve[:3] == pytest.approx([0.0, 0.0, 0.0])
    # rank 4: P = 1/4; rank 5: P = 2/5
    assert curve[3] == pytest.approx((1 / 4) / 4)
    assert curve[4] == pytest.approx((1 / 4 + 2 / 5) / 5)
    assert curve[5] == pytest.approx((1 / 4 + 2 / 5) / 6)


@pytest.mark.parametrize("seed", range(20))
def test_map_matches_the_formula_written_as_a_loop(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    scores = [rng.gauss(0, 1) for _ in range(n)]
    relevant = [rng.random() < 0.3 for _ in range(n)]
    k_max = rng.randint(1, 35)
    assert map_terms(scores, relevant, k_max) == pytest.approx(map_by_the_formula(scores, relevant, k_max))


@pytest.mark.parametrize(
    "scores,relevant",
    [
        ([1.0, 1.0, 1.0, 1.0], [True, False, False, True]),
        ([2.0, 1.0, 1.0, 1.0, 0.0], [False, True, False, True, True]),
        ([0.0] * 5, [False, False, True, False, False]),
        ([3.0, 3.0, 1.0, 1.0, 1.0, 0.5], [True, False, True, True, False, True]),
    ],
)
def test_ties_score_the_average_over_every_order_within_the_tie(scores, relevant):
    k_max = len(scores) + 1
    groups = {}
    for i, s in enumerate(scores):
        groups.setdefault(s, []).append(i)
    tie_orders = [list(itertools.permutations(groups[s])) for s in sorted(groups, reverse=True)]
    curves = []
    for choice in itertools.product(*tie_orders):
        order = [i for group in choice for i in group]
        strict = [0.0] * len(scores)
        for rank, i in enumerate(order):
            strict[i] = -float(rank)
        curves.append(map_by_the_formula(strict, relevant, k_max))
    assert map_terms(scores, relevant, k_max) == pytest.approx(np.mean(curves, axis=0).tolist())


def test_map_curve_round_trip():
    curve = MAPCurve("ncrl", [0.5, 0.25], facts=3, documents=2)
    again = MAPCurve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert again == curve and again.k == [1, 2]


# --------------------------------------------------------------------------- runs: overlap, resume, CLI


def test_training_overlap_is_refused_unless_allowed(tokenizer, hwe_docs, tmp_path):
    model = tiny_model(tokenizer, "ncrl").double().eval()
    cfg = AttributionConfig(method="grad_x_input")
    with pytest.raises(AttributionRunError, match="1 of the 2 documents .* training documents"):
        run_attribution(model, tokenizer, hwe_docs[:2], tmp_path / "a", cfg, train_titles={hwe_docs[1].title}, progress=False)
    assert not (tmp_path / "a" / RECORDS).exists()
    result = run_attribution(model, tokenizer, hwe_docs[:2], tmp_path / "b", cfg, train_titles={hwe_docs[1].title},
                             allow_train_overlap=True, progress=False)
    assert result.documents == 2
    clean = run_attribution(model, tokenizer, hwe_docs[:2], tmp_path / "c", cfg, train_titles={"another title"}, progress=False)
    assert clean.documents == 2


def test_runs_resume_per_document(tokenizer, hwe_docs, tmp_path, monkeypatch):
    model = tiny_model(tokenizer, "ncrl").double().eval()
    cfg = AttributionConfig(method="grad_x_input")
    out = tmp_path / "run"
    first = run_attribution(model, tokenizer, hwe_docs, out, cfg, max_docs=2, progress=False)
    assert first.documents == 2 and first.skipped == 0
    with pytest.raises(AttributionRunError, match="already holds results"):
        run_attribution(model, tokenizer, hwe_docs, out, cfg, progress=False)
    with pytest.raises(AttributionRunError, match="cannot resume"):
        run_attribution(model, tokenizer, hwe_docs, out, AttributionConfig(steps=3), resume=True, progress=False)
    # a crash in the middle of writing the second line leaves a torn line: it is dropped and redone
    lines = (out / RECORDS).read_bytes().splitlines(keepends=True)
    (out / RECORDS).write_bytes(lines[0] + lines[1][:40])
    seen = []
    original = DocumentAttributor.attribute

    def counting(self, doc):
        seen.append(doc.key)
        return original(self, doc)

    monkeypatch.setattr(DocumentAttributor, "attribute", counting)
    again = run_attribution(model, tokenizer, hwe_docs, out, cfg, resume=True, progress=False)
    assert seen == [hwe_docs[1].key, hwe_docs[2].key]
    assert again.documents == 3 and again.skipped == 1
    rows = [json.loads(x) for x in (out / RECORDS).read_text().splitlines()]
    assert [r["doc"] for r in rows] == [d.key for d in hwe_docs]
    saved = json.loads((out / "map.json").read_text())
    assert saved["documents"] == 3 and saved["facts"] == again.curve.facts
    fresh = run_attribution(model, tokenizer, hwe_docs, out, AttributionConfig(steps=3), max_docs=1, overwrite=True,
                            progress=False)  # other settings: the run starts over
    assert fresh.documents == 1 and fresh.skipped == 0 and len((out / RECORDS).read_text().splitlines()) == 1
    assert json.loads((out / "map.json").read_text())["documents"] == 1


def test_envre_attribute_and_analyze_map_curves(tokenizer, hwe_docs, tmp_path, capsys):
    from envre_hf.cli.main import main

    for name, seed in (("vanilla", 0), ("evrt", 1)):
        model = tiny_model(tokenizer, "ncrl", seed=seed).eval()
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
    gold = write_documents(hwe_docs, tmp_path / "gold.json")
    train = write_documents(hwe_docs[2:], tmp_path / "train.json")
    others = write_documents(hwe_docs[:2], tmp_path / "test.json")
    capsys.readouterr()
    base = ["attribute", "--gold", str(gold), "--steps", "2", "--k-max", "5"]

    code = main(base + ["--model", str(tmp_path / "vanilla"), "--train", str(train), "--output", str(tmp_path / "o0")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "training documents" in err and "Traceback" not in err
    assert "--titles-from" in err

    for name in ("vanilla", "evrt"):
        args = ["--model", str(tmp_path / name), "--train", str(train), "--titles-from", str(others)]
        assert main(base + args + ["--output", str(tmp_path / f"run-{name}")]) == 0
        out = capsys.readouterr().out
        assert "2 documents (0 resumed)" in out and "MAP(1)=" in out
        assert (tmp_path / f"run-{name}" / "map.png").stat().st_size > 0
    saved = json.loads((tmp_path / "run-evrt" / "map.json").read_text())
    assert saved["label"] == "evrt" and len(saved["map"]) == 5 and saved["documents"] == 2
    rerun = base + ["--model", str(tmp_path / "evrt"), "--titles-from", str(others), "--output", str(tmp_path / "run-evrt")]
    assert main(rerun) == 0 and "2 documents (2 resumed)" in capsys.readouterr().out  # a rerun continues
    assert main([*rerun, "--steps", "3"]) == 2  # other settings: one line naming the flag that starts over
    assert "cannot resume" in (err := capsys.readouterr().err) and "pass --overwrite to start over" in err
    assert main([*rerun, "--steps", "3", "--overwrite"]) == 0 and "(0 resumed)" in capsys.readouterr().out

    maps = [str(tmp_path / f"run-{n}" / "map.json") for n in ("vanilla", "evrt")]
    assert main(["analyze", "--map-curves", *maps, "--output", str(tmp_path / "fig")]) == 0
    both = json.loads((tmp_path / "fig" / "map_curves.json").read_text())
    assert [c["label"] for c in both["curves"]] == ["vanilla", "evrt"]
    assert (tmp_path / "fig" / "map_curves.png").stat().st_size > 0

    (tmp_path / "bad.json").write_text("{not json")
    assert main(["analyze", "--map-curves", str(tmp_path / "bad.json"), "--output", str(tmp_path / "fig2")]) == 2
    assert main(base + ["--model", str(tmp_path / "missing"), "--output", str(tmp_path / "o1")]) == 2
    assert "no config.json" in capsys.readouterr().err


def test_envre_attribute_resume_never_rewrites_a_linked_records_file(tokenizer, hwe_docs, tmp_path, capsys):
    """``attributions.jsonl`` linked to a file elsewhere: a rerun would cut it at its first line that is not a
    record and append to it; it is one line naming the link instead, and the file is left as it was."""
    from envre_hf.cli.main import main

    model = tiny_model(tokenizer, "ncrl").eval()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    gold = write_documents(hwe_docs[:1], tmp_path / "gold.json")
    elsewhere = tmp_path / "notes.txt"
    elsewhere.write_text("someone's notes\nnot records\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / RECORDS).symlink_to(elsewhere)
    capsys.readouterr()
    argv = ["attribute", "--model", str(tmp_path / "model"), "--gold", str(gold), "--steps", "2", "--k-max", "5",
            "--output", str(out)]  # fmt: skip
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # (a note on --train aside)
    assert len(errors) == 1 and f"{out / RECORDS}: a symbolic link where envre writes" in errors[0]
    assert elsewhere.read_text() == "someone's notes\nnot records\n" and not (out / "map.json").exists()

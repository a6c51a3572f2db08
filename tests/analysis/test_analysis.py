"""Analyses on small hand-built inputs whose answers are worked out by hand, plus the CLI and the plot."""

from __future__ import annotations

import json

import pytest

from envre_hf.analysis import (
    f1_by_entity_count,
    overlap_table,
    performance_table,
    plot_entity_count,
    popularity_quartiles,
    render_markdown,
    run_analyses,
    substitution_table,
    write_report,
)
from envre_hf.documents import Document, Entity, Mention, Relation, Substitution, write_documents
from envre_hf.kb.base import Candidate, KnowledgeBase

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_doc(title, names, types=None, sent_ids=None, relations=(), doc_id=None, qids=None, subs=None, orig_title=None):
    """One token per entity name placeholder: entity i is token i of its sentence."""
    types = types or ["LOC"] * len(names)
    sent_ids = sent_ids or [0] * len(names)
    sents: list[list[str]] = [[] for _ in range(max(sent_ids) + 1)]
    entities = []
    for i, (name, typ, s) in enumerate(zip(names, types, sent_ids)):
        pos = len(sents[s])
        sents[s].append(name)
        entities.append(Entity([Mention(name, s, (pos, pos + 1), typ)], wikidata_id=(qids or [None] * len(names))[i]))
    for sent in sents:
        sent.append(".")
    return Document(
        title=title,
        sents=sents,
        entities=entities,
        relations=[Relation(h, t, r) for h, t, r in relations],
        doc_id=doc_id,
        substitutions=subs,
        orig_title=orig_title,
    )


def pred(doc, h, t, r="P17"):
    return {"doc_id": doc.key, "title": doc.title, "h_idx": h, "t_idx": t, "r": r}


# --------------------------------------------------------------------------- Table 1


def test_substitution_table_counts_and_order():
    subs = [
        Substitution(0, "Q1", "Q515", "Paris", "Lyon", "exact"),
        Substitution(1, None, None, "1990", "1987", "rule"),
        Substitution(2, None, None, "Bob", "Bob", "unchanged:unlinked"),
    ]
    renamed = make_doc("A", ["Lyon", "1987", "Bob"], ["LOC", "TIME", "PER"], subs=subs, doc_id="A#0", orig_title="A")
    plain = make_doc("B", ["Rome"], ["LOC"], doc_id="B#0", subs=[])
    table = substitution_table([renamed, plain])
    assert list(table) == ["PER", "LOC", "TIME", "ALL"]  # DocRED type order, ALL last
    assert table["LOC"] == {"entities": 2, "substituted": 1, "rate": 0.5}
    assert table["TIME"]["rate"] == 1.0 and table["PER"]["rate"] == 0.0
    assert table["ALL"] == {"entities": 4, "substituted": 2, "rate": 0.5}


# --------------------------------------------------------------------------- Tables 2 and 3


def test_performance_table_hand_checked():
    # entities 0, 1 in sentence 0; entity 2 in sentence 1: (0,1) intra, (0,2) inter
    orig = make_doc("D", ["a", "b", "c"], sent_ids=[0, 0, 1], relations=[(0, 1, "P17"), (0, 2, "P131")])
    ren = make_doc("D", ["x", "y", "z"], sent_ids=[0, 0, 1], relations=[(0, 1, "P17"), (0, 2, "P131")], doc_id="D#0")
    p_orig = [pred(orig, 0, 1, "P17"), pred(orig, 1, 2, "P17")]  # 1 of 2 right: P = R = 0.5; intra 1/1, inter 0/1
    p_ren = [pred(ren, 0, 2, "P131"), pred(ren, 1, 0, "P17"), pred(ren, 2, 1, "P17"), pred(ren, 1, 2, "P131")]
    table = performance_table([orig], [ren], p_orig, p_ren)
    o, r, c = table["original"], table["renamed"], table["change"]
    assert (o["precision"], o["recall"], o["f1"]) == (0.5, 0.5, 0.5)
    assert o["intra_f1"] == 1.0 and o["inter_f1"] == 0.0
    assert r["precision"] == pytest.approx(0.25) and r["recall"] == 0.5
    assert r["intra_f1"] == 0.0  # intra: 1 predicted (1,0), gold (0,1): wrong
    assert r["inter_f1"] == pytest.approx(2 * (1 / 3) * 1 / (1 / 3 + 1))  # inter: 1 of 3 predictions right, 1 of 1 gold
    assert c["precision"] == pytest.approx(-0.25) and c["recall"] == 0.0
    assert o["ign_f1"] is None
    assert "change" not in performance_table([orig], [ren], p_orig, None)


# --------------------------------------------------------------------------- Table 4


class PopularityKB(KnowledgeBase):
    name = "fake-pop"

    def __init__(self, popularity, links):
        self.pop, self.links = popularity, links

    def link(self, doc, entity_index):
        return self.links.get((doc.title, entity_index))

    def types(self, item_id):
        return []

    def candidates(self, type_id, min_names, exclude=frozenset()):
        return [Candidate("Q0")]

    def names(self, item_id):
        return []

    def popularity(self, item_id):
        return self.pop.get(item_id)


def popularity_fixture():
    # doc A: entities linked in the data (Q1..Q4); doc B: linked by the KB (L0..L3); L3 unknown to the KB.
    a = make_doc("A", ["a0", "a1", "a2", "a3", "a4"], qids=["Q1", "Q2", "Q3", "Q4", None])
    b = make_doc("B", ["b0", "b1", "b2", "b3", "b4"])
    links = {("B", 0): "L0", ("B", 1): "L1", ("B", 2): "L2", ("B", 3): "L3"}
    pop = {"Q1": 10, "Q2": 20, "Q3": 30, "Q4": 40, "L0": 50, "L1": 60, "L2": 70, "L3": 80}
    # substituted items: six unpopular (5), one mid (30), one very popular (100)
    pop.update({f"N{i}": 5 for i in range(6)} | {"N6": 30, "N7": 100})

    def subs(items):
        out = []
        for e, item in enumerate(items):
            out.append(Substitution(e, item, "Q5", f"o{e}", f"n{e}", "exact"))
            out.append(Substitution(e, item, "Q5", f"alias{e}", f"new alias{e}", "exact"))  # second alias: count once
        return out

    ra = make_doc("A", ["n"] * 5, doc_id="A#0", orig_title="A", subs=subs(["N0", "N1", "N2", "N3"]) + [
        Substitution(4, None, None, "a4", "a9", "rule")])
    rb = make_doc("B", ["n"] * 5, doc_id="B#0", orig_title="B", subs=subs(["N4", "N5", "N6", "N7"]) + [
        Substitution(4, None, None, "b4", "b4", "unchanged:unlinked")])
    return [a, b], [ra, rb], pop, links


def test_popularity_quartiles_hand_checked():
    original, renamed, pop, links = popularity_fixture()
    result = popularity_quartiles(original, renamed, PopularityKB(pop, links))
    assert result.available and result.pairs == 8
    assert result.cut_points == [27.5, 45.0, 62.5]  # percentiles of 10, 20, ..., 80
    assert result.original == {"Q1": 0.25, "Q2": 0.25, "Q3": 0.25, "Q4": 0.25}
    assert result.substituted == {"Q1": 0.75, "Q2": 0.125, "Q3": 0.0, "Q4": 0.125}
    assert (result.median_original, result.median_substituted) == (45.0, 5.0)
    assert result.skipped["rule_based"] == 1 and result.skipped["popularity_unknown"] == 0

    del links[("B", 3)]  # entity 3 of B can no longer be linked
    pop.pop("N6")  # and one substituted item has no popularity
    result = popularity_quartiles(original, renamed, PopularityKB(pop, links))
    assert result.pairs == 6 and result.skipped["original_unlinked"] == 1 and result.skipped["popularity_unknown"] == 1


def test_popularity_without_kb_or_popularity():
    original, renamed, _, links = popularity_fixture()
    none = popularity_quartiles(original, renamed, None)
    assert not none.available and "no knowledge base" in none.note
    silent = popularity_quartiles(original, renamed, PopularityKB({}, links))
    assert not silent.available and "reports no popularity" in silent.note
    figures = run_analyses(original, renamed, kb=PopularityKB({}, links))
    assert "reports no popularity" in figures["not_analysed"]["popularity"]
    assert "reports no popularity" in render_markdown(figures)


# --------------------------------------------------------------------------- Table 5


def test_train_name_overlap_hand_checked():
    train = [make_doc("T", ["Paris", "France", "1990"], ["LOC", "LOC", "TIME"])]
    orig = make_doc("O", ["Paris", "Lyon", "1990", "Bob"], ["LOC", "LOC", "TIME", "PER"])
    ren = make_doc("O", ["Nantes", "Lyon", "1987", "France"], ["LOC", "LOC", "TIME", "PER"], doc_id="O#0")
    table = overlap_table([orig], [ren], train)
    o, r = table["original"], table["renamed"]
    assert list(o) == ["PER", "LOC", "TIME", "ALL"]
    assert o["LOC"] == {"mentions": 2, "in_train": 1, "share": 0.5}
    assert o["TIME"]["share"] == 1.0 and o["PER"]["share"] == 0.0 and o["ALL"]["share"] == 0.5
    assert r["LOC"]["share"] == 0.0 and r["TIME"]["share"] == 0.0
    assert r["PER"]["share"] == 1.0  # "France" is a training name whatever its type here
    assert r["ALL"] == {"mentions": 4, "in_train": 1, "share": 0.25}


# --------------------------------------------------------------------------- Figure 4


def entity_count_fixture():
    d2 = make_doc("two", ["a", "b"], relations=[(0, 1, "P17")])
    d3 = make_doc("three", ["a", "b", "c"], relations=[(0, 1, "P17")])
    d4 = make_doc("four", ["a", "b", "c", "d"], relations=[(0, 1, "P17")])
    preds = [pred(d2, 0, 1), pred(d3, 0, 1), pred(d3, 0, 2), pred(d3, 1, 2), pred(d4, 0, 2)]
    return [d2, d3, d4], preds  # F1: 1, 0.5, 0


def test_f1_by_entity_count_and_slope():
    docs, preds = entity_count_fixture()
    curve = f1_by_entity_count(preds, docs)
    assert curve.n_entities == [2.0, 3.0, 4.0] and curve.documents == [1, 1, 1]
    assert curve.f1 == pytest.approx([1.0, 0.5, 0.0])
    assert curve.slope == pytest.approx(-0.5) and curve.intercept == pytest.approx(2.0)
    binned = f1_by_entity_count(preds, docs, bin_width=2)  # {2, 3} -> P 2/4, R 2/2; {4} -> 0
    assert binned.n_entities == [2.5, 4.0] and binned.documents == [2, 1]
    assert binned.f1 == pytest.approx([2 / 3, 0.0])
    assert binned.slope == pytest.approx(-4 / 9)
    single = f1_by_entity_count(preds[:1], docs[:1])
    assert single.slope is None and single.intercept is None


def test_plot_written_as_png(tmp_path):
    docs, preds = entity_count_fixture()
    curves = {"original": f1_by_entity_count(preds, docs), "renamed": f1_by_entity_count(preds[:2], docs)}
    path = plot_entity_count(curves, tmp_path / "fig" / "f1.png")
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 2000


# --------------------------------------------------------------------------- report and CLI


def test_report_and_cli(tmp_path, capsys):
    from envre_hf.cli.main import main

    original, renamed = entity_count_fixture()[0], []
    for doc in original:
        copy = make_doc(doc.title, [f"n{i}" for i in range(doc.num_entities)], relations=[(0, 1, "P17")],
                        doc_id=f"{doc.title}#0", orig_title=doc.title,
                        subs=[Substitution(0, "Q9", "Q5", "a", "n0", "exact")])
        renamed.append(copy)
    _, preds = entity_count_fixture()
    ren_preds = [pred(renamed[0], 0, 1)]
    train = [make_doc("T", ["a", "zz"])]
    files = {}
    for name, obj in (("orig.json", original), ("ren.json", renamed), ("train.json", train)):
        files[name] = write_documents(obj, tmp_path / name)
    for name, obj in (("p_orig.json", preds), ("p_ren.json", ren_preds)):
        files[name] = tmp_path / name
        files[name].write_text(json.dumps(obj))
    out = tmp_path / "report"
    argv = ["analyze", "--original", str(files["orig.json"]), "--renamed", str(files["ren.json"]),
            "--pred-original", str(files["p_orig.json"]), "--pred-renamed", str(files["p_ren.json"]),
            "--train", str(files["train.json"]), "--output", str(out)]
    assert main(argv) == 0
    figures = json.loads((out / "figures.json").read_text())
    assert figures["performance"]["original"]["f1"] == pytest.approx(0.5)  # P 2/5, R 2/3
    assert figures["performance"]["renamed"]["precision"] == 1.0
    assert figures["performance"]["renamed"]["recall"] == pytest.approx(1 / 3)
    assert figures["entity_count"]["original"]["slope"] == pytest.approx(-0.5)
    assert figures["substitution_rates"]["ALL"]["substituted"] == 3
    assert figures["train_overlap"]["original"]["ALL"]["share"] == pytest.approx(3 / 9)  # the three "a" mentions
    assert figures["train_overlap"]["renamed"]["ALL"]["share"] == 0.0
    assert "popularity" in figures["not_analysed"]
    assert (out / "entity_count.png").read_bytes().startswith(PNG_SIGNATURE)
    report = (out / "report.md").read_text()
    for heading in ("Table 1", "Table 2", "Table 3", "Table 5", "Figure 4", "Not analysed"):
        assert heading in report
    assert "| original | 40.00 | 66.67 | 50.00 | 50.00 |" in report  # no training facts: Ign F1 = F1
    assert "| change | +60.00 | -33.33 | +0.00 | +0.00 |" in report
    assert "not analysed: popularity" in capsys.readouterr().out
    # --max-docs keeps the first documents of each set and the predictions that belong to them
    assert main(argv[:-1] + [str(tmp_path / "first"), "--max-docs", "1"]) == 0
    first = json.loads((tmp_path / "first" / "figures.json").read_text())
    assert first["inputs"]["original_documents"] == 1 and first["inputs"]["pred_original"] == 1
    assert first["performance"]["original"]["f1"] == 1.0 and first["performance"]["renamed"]["f1"] == 1.0
    # without predictions or training data: still a report, with the reasons
    figures = run_analyses(original, renamed)
    assert set(figures["not_analysed"]) == {"performance", "entity_count", "popularity", "train_overlap"}
    paths = write_report(figures, tmp_path / "bare")
    assert "entity_count_plot" not in paths and "no predictions given" in paths["report"].read_text()

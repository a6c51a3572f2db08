"""Wikidata dump indexing (three compressions, resumable, constant-memory streaming) and WikidataDumpKB."""

from __future__ import annotations

import gzip
from contextlib import closing
import pickle
import sqlite3

import pytest

from envre_hf.documents import Document, Entity, Mention
from envre_hf.kb import KnowledgeBaseError, WikidataDumpKB, index_dump
from envre_hf.kb import wikidata_dump
from kb_fixtures.synthetic import synthetic_entities, write_dump
from kb_fixtures.fake_wikidata import english_names, truthy_p31

N_ITEMS = 300
COMPRESSIONS = ["json", "json.gz", "json.bz2"]


@pytest.fixture(scope="module")
def entities() -> list[dict]:
    return list(synthetic_entities(N_ITEMS, seed=11))


@pytest.fixture(scope="module")
def items(entities) -> dict[str, dict]:
    return {e["id"]: e for e in entities if e["type"] == "item"}


@pytest.fixture(scope="module")
def dumps(entities, tmp_path_factory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("dumps")
    return {suffix: write_dump(entities, folder / f"latest-all.{suffix}") for suffix in COMPRESSIONS}


@pytest.fixture(scope="module")
def index(dumps, tmp_path_factory):
    path = tmp_path_factory.mktemp("index") / "wikidata.sqlite"
    stats = index_dump(dumps["json"], path, batch_size=64, progress=False)
    assert stats.complete and not path.with_name(path.name + "-wal").exists()  # a single self-contained file
    return path


@pytest.fixture()
def kb(index):
    with WikidataDumpKB(index) as opened:
        yield opened


def tables(path) -> dict[str, list[tuple]]:
    """Every row of the index's data tables (what "the same index" means)."""
    with closing(sqlite3.connect(path)) as conn:
        return {
            "items": conn.execute("SELECT * FROM items ORDER BY id").fetchall(),
            "names": conn.execute("SELECT * FROM names ORDER BY item, ord").fetchall(),
            "types": conn.execute("SELECT * FROM types ORDER BY item, ord").fetchall(),
            "incoming": conn.execute("SELECT * FROM incoming ORDER BY id").fetchall(),
        }


def expected_popularity(items: dict[str, dict]) -> dict[str, int]:
    """Own statements + main-snak item values pointing at the item from other items."""
    popularity = {item: sum(len(v) for v in (e["claims"] or {}).values()) for item, e in items.items()}
    for item, entity in items.items():
        for statements in (entity["claims"] or {}).values():
            for statement in statements:
                value = statement["mainsnak"].get("datavalue", {}).get("value")
                target = value.get("id") if isinstance(value, dict) else None
                if target in popularity and target != item:
                    popularity[target] += 1
    return popularity


def test_dump_file_has_the_real_layout(dumps):
    with gzip.open(dumps["json.gz"], "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert lines[0] == "[" and lines[-1] == "]"
    assert all(line.endswith(",") for line in lines[1:-2]) and not lines[-2].endswith(",")


def test_index_holds_names_types_and_popularity(kb, items, index):
    popularity = expected_popularity(items)
    assert len(kb) == len(items)
    for item, entity in items.items():
        assert kb.names(item) == english_names(entity)
        ranks = {"preferred": 0, "normal": 1}
        p31 = [s for s in entity["claims"].get("P31", []) if s["rank"] in ranks] if entity["claims"] else []
        p31.sort(key=lambda s: ranks[s["rank"]])
        assert kb.types(item) == list(dict.fromkeys(s["mainsnak"]["datavalue"]["value"]["id"] for s in p31))
        assert kb.popularity(item) == popularity[item]
    assert any(p > sum(len(v) for v in items[i]["claims"].values()) for i, p in popularity.items())
    assert kb.names("Q31") == [] and kb.popularity("Q999999999") is None  # properties are not items


@pytest.mark.parametrize("suffix", COMPRESSIONS[1:])
def test_compressed_dumps_give_the_same_index(dumps, index, tmp_path, suffix):
    stats = index_dump(dumps[suffix], tmp_path / "i.sqlite", batch_size=50, progress=False)
    assert stats.complete and stats.items == N_ITEMS + 8  # + the type items
    assert tables(tmp_path / "i.sqlite") == tables(index)


@pytest.mark.parametrize("suffix", COMPRESSIONS)
def test_resume_after_max_items_yields_the_identical_index(dumps, index, tmp_path, suffix):
    path = tmp_path / "partial.sqlite"
    first = index_dump(dumps[suffix], path, batch_size=32, max_items=100, progress=False)
    assert not first.complete and first.items == 100
    with pytest.raises(KnowledgeBaseError, match="incomplete"):
        WikidataDumpKB(path)
    second = index_dump(dumps[suffix], path, batch_size=32, max_items=90, progress=False)
    assert not second.complete and second.resumed_from_line == first.lines and second.items == 190
    third = index_dump(dumps[suffix], path, batch_size=32, progress=False)
    assert third.complete and third.items_this_run == N_ITEMS + 8 - 190
    assert tables(path) == tables(index)


def test_resume_after_a_crash_mid_batch(dumps, entities, index, tmp_path, monkeypatch):
    path = tmp_path / "crashed.sqlite"
    real_parse, calls = wikidata_dump.parse_entity, {"n": 0}

    def crash_at_150(entity, language="en"):
        calls["n"] += 1
        if calls["n"] == 150:
            raise RuntimeError("simulated crash")
        return real_parse(entity, language)

    monkeypatch.setattr(wikidata_dump, "parse_entity", crash_at_150)
    with pytest.raises(RuntimeError, match="simulated crash"):
        index_dump(dumps["json.gz"], path, batch_size=40, progress=False)
    monkeypatch.setattr(wikidata_dump, "parse_entity", real_parse)
    with closing(sqlite3.connect(path)) as conn:
        committed = conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
        line = int(conn.execute("SELECT value FROM meta WHERE key = 'line'").fetchone()[0])
    # whole batches of 40 entities only: 3 batches committed, the 4th (crashed) one rolled back
    assert committed == sum(1 for e in entities[:120] if e["type"] == "item") and line == 121
    stats = index_dump(dumps["json.gz"], path, batch_size=40, progress=False)
    assert stats.complete and stats.resumed_from_line == line
    assert tables(path) == tables(index)


# SIGKILL while a new index file is being set up, at the first statement after: the file is switched to WAL
# ("wal"), a table is made ("table"); or at the first meta row ("meta"); or once the index is complete, before it is
# made one self-contained file again ("single").
_KILL_AT_SETUP = """
import os, signal, sqlite3, sys
from envre_hf.kb import index_dump, wikidata_dump

dump, path, point = sys.argv[1:4]
seen = {"wal": False, "table": False}

class Connection:
    def __init__(self, conn):
        self.conn = conn
    def __getattr__(self, name):
        return getattr(self.conn, name)
    def _run(self, method, sql, *args):
        if seen.get(point) or (point == "meta" and "INTO meta" in sql) or (
            point == "single" and "journal_mode=DELETE" in sql
        ):
            os.kill(os.getpid(), signal.SIGKILL)
        out = getattr(self.conn, method)(sql, *args)
        seen["wal"] = seen["wal"] or "journal_mode=WAL" in sql
        seen["table"] = seen["table"] or "CREATE TABLE" in sql
        return out
    def execute(self, sql, *args):
        return self._run("execute", sql, *args)
    def executemany(self, sql, rows):
        return self._run("executemany", sql, rows)
    def executescript(self, script):
        return self._run("executescript", script)

real_connect = sqlite3.connect
wikidata_dump.sqlite3 = type("S", (), {"connect": staticmethod(lambda *a, **k: Connection(real_connect(*a, **k))),
                                       "DatabaseError": sqlite3.DatabaseError,
                                       "OperationalError": sqlite3.OperationalError})
index_dump(dump, path, progress=False)
"""


@pytest.mark.parametrize("point", ["wal", "table", "meta", "single"])
def test_a_kill_while_a_new_index_is_set_up_is_resumed(dumps, index, tmp_path, point):
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "new.sqlite"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _KILL_AT_SETUP, str(dumps["json"]), str(path), point], env=env,
                         timeout=60)
    assert run.returncode == -9 and path.exists()
    stats = index_dump(dumps["json"], path, progress=False)  # the same command again, as docs/kb.md says
    assert stats.complete and tables(path) == tables(index)
    with closing(sqlite3.connect(path)) as conn:  # one self-contained file, like an uninterrupted index
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_complete_index_is_not_redone_and_other_dumps_are_refused(dumps, entities, index, tmp_path):
    again = index_dump(dumps["json"], index, progress=False)
    assert again.complete and again.items_this_run == 0
    other = write_dump(entities[:50], tmp_path / "other.json")
    with pytest.raises(KnowledgeBaseError, match="resume=False"):
        index_dump(other, index, progress=False)
    rebuilt = index_dump(other, tmp_path / "copy.sqlite", progress=False)
    assert rebuilt.complete and rebuilt.items == 48


def test_rebuild_with_resume_false(dumps, tmp_path):
    path = tmp_path / "i.sqlite"
    index_dump(dumps["json"], path, max_items=10, progress=False)
    stats = index_dump(dumps["json"], path, resume=False, progress=False)
    assert stats.complete and stats.resumed_from_line == 0 and stats.items_this_run == stats.items


def test_broken_dump_line_is_named(entities, tmp_path):
    path = write_dump(entities[:30], tmp_path / "broken.json")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[12] = lines[12][:40]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"broken\.json: line 13"):
        index_dump(path, tmp_path / "i.sqlite", batch_size=5, progress=False)
    malformed = write_dump([*entities[:5], {"type": "item", "id": "Q7", "claims": {"P31": [{"rank": "normal"}]}}],
                           tmp_path / "malformed.json")
    with pytest.raises(KnowledgeBaseError, match=r"malformed\.json: line 7: malformed entity 'Q7'"):
        index_dump(malformed, tmp_path / "m.sqlite", progress=False)
    with pytest.raises(KnowledgeBaseError, match="no dump file"):
        index_dump(tmp_path / "missing.json", tmp_path / "j.sqlite")
    with pytest.raises(KnowledgeBaseError, match="no dump index"):
        WikidataDumpKB(tmp_path / "missing.sqlite")


def doc_with(*entities: list[tuple[str, str]]) -> Document:
    sents, out = [], []
    for mentions in entities:
        ms = []
        for name, typ in mentions:
            ms.append(Mention(name=name, sent_id=len(sents), pos=(0, len(name.split())), type=typ))
            sents.append(name.split())
        out.append(Entity(mentions=ms))
    return Document(title="t", sents=sents, entities=out)


def test_link_by_exact_name_with_popularity_tie_break(kb, items):
    popularity = expected_popularity(items)
    by_name: dict[str, list[str]] = {}
    for item, entity in items.items():
        for name in english_names(entity):
            by_name.setdefault(name, []).append(item)
    homonym = next(name for name, ids in by_name.items() if len(ids) > 1)
    winner = min(by_name[homonym], key=lambda i: (-popularity[i], int(i[1:])))
    unique = next(name for name, ids in by_name.items() if len(ids) == 1)
    doc = doc_with(
        [("Nobody Known", "PER"), ("Nobody Known", "PER"), (homonym, "PER")],  # most frequent name unknown
        [(unique, "ORG")],
        [("3 million", "NUM")],
        [(unique.lower() + " zz", "LOC")],
    )
    assert kb.link(doc, 0) == winner
    assert kb.link(doc, 1) == by_name[unique][0]
    assert kb.link(doc, 2) is None and kb.link(doc, 3) is None


@pytest.mark.parametrize("type_id,min_names", [("Q5", 3), ("Q515", 1), ("Q4830453", 2), ("Q43229", 1)])
def test_candidates_by_best_rank_type_and_name_count(kb, items, type_id, min_names):
    expected = sorted(
        (i for i, e in items.items() if type_id in truthy_p31(e) and len(english_names(e)) >= min_names),
        key=lambda i: int(i[1:]),
    )
    got = [c.item_id for c in kb.candidates(type_id, min_names)]
    assert got == expected and len(got) > 3
    assert all(c.match == "exact" for c in kb.candidates(type_id, min_names))
    kept = [c.item_id for c in kb.candidates(type_id, min_names, frozenset(expected[1:3]))]
    assert kept == expected[:1] + expected[3:]
    assert kb.candidates("Q999", 1) == [] and kb.candidates("not an id", 1) == []


def test_http_and_dump_backends_agree(kb, entities, items, tmp_path):
    from envre_hf.kb import WikidataHTTPKB
    from kb_fixtures.fake_wikidata import FakeWikidata

    with FakeWikidata(entities) as server:
        http = WikidataHTTPKB(tmp_path / "cache", api_url=server.api_url, sparql_url=server.sparql_url,
                              user_agent="envre-hf-tests/0.1 (tests@example.org)", count_incoming=True)
        sample = sorted(items)[::17]
        http.prefetch(sample)
        for item in sample:
            assert (http.names(item), http.types(item), http.popularity(item)) == (
                kb.names(item), kb.types(item), kb.popularity(item))
        assert http.candidates("Q5", 2) == kb.candidates("Q5", 2)


def test_dump_kb_pickles_and_snapshot(kb, index):
    clone = pickle.loads(pickle.dumps(kb))
    item = kb.candidates("Q5", 1)[0].item_id
    assert clone.names(item) == kb.names(item)
    assert kb.snapshot_id().startswith("wikidata-dump:latest-all.json:")
    assert kb.snapshot_id() == WikidataDumpKB(index).snapshot_id()


def test_a_file_that_is_not_a_dump_index_is_refused_and_left_alone(dumps, tmp_path):
    theirs = tmp_path / "theirs.sqlite"
    with closing(sqlite3.connect(theirs)) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.commit()
    ours_by_name = tmp_path / "items.sqlite"  # one of the index's table names, holding someone's rows
    with closing(sqlite3.connect(ours_by_name)) as conn:
        conn.execute("CREATE TABLE items (id INTEGER)")
        conn.execute("INSERT INTO items VALUES (1)")
        conn.commit()
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database\n" * 100)
    for path in (theirs, ours_by_name, text):
        before = path.read_bytes()
        with pytest.raises(KnowledgeBaseError, match="not a dump index"):
            index_dump(dumps["json"], path, progress=False)
        assert path.read_bytes() == before

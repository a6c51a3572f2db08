"""WikidataHTTPKB and its HTTP client against a fake Wikidata on 127.0.0.1 (real reply formats, injected faults)."""

from __future__ import annotations

import math
import pickle
import time
from email.utils import formatdate

import pytest

from envre_hf.documents import Document, Entity, Mention
from envre_hf.net.bounds import parse_retry_after
from envre_hf.replies import cache_key
from envre_hf.kb import KnowledgeBaseError, PrecomputedLinks, WikidataHTTPKB
from envre_hf.kb.base import clean_names
from kb_fixtures.synthetic import synthetic_entities
from envre_hf.kb.wikidata_http import MAX_IDS_PER_REQUEST, CachedJSONClient
from kb_fixtures.fake_wikidata import FakeWikidata, english_names, truthy_p31

N_ITEMS = 300
UA = "envre-hf-tests/0.1 (https://example.org/envre; tests@example.org)"


@pytest.fixture(scope="module")
def entities() -> list[dict]:
    return list(synthetic_entities(N_ITEMS, seed=3))


@pytest.fixture(scope="module")
def items(entities) -> dict[str, dict]:
    return {e["id"]: e for e in entities if e["type"] == "item" and e["id"].startswith("Q1")}


@pytest.fixture()
def server(entities):
    with FakeWikidata(entities) as fake:
        yield fake


def make_kb(server: FakeWikidata, cache_dir, **kwargs) -> WikidataHTTPKB:
    options = dict(user_agent=UA, timeout=0.2, max_retries=3, backoff_factor=0.001)
    options.update(kwargs)
    return WikidataHTTPKB(cache_dir, api_url=server.api_url, sparql_url=server.sparql_url, **options)


def doc_with(*entities: list[tuple[str, str]]) -> Document:
    """A document whose entity i has mentions ``[(name, type), ...]`` (one sentence per mention)."""
    sents, out = [], []
    for mentions in entities:
        ms = []
        for name, typ in mentions:
            tokens = name.split()
            ms.append(Mention(name=name, sent_id=len(sents), pos=(0, len(tokens)), type=typ))
            sents.append(tokens + ["."])
        out.append(Entity(mentions=ms))
    return Document(title="t", sents=sents, entities=out)


def english_label(entity: dict) -> str | None:
    return entity.get("labels", {}).get("en", {}).get("value")


def test_link_types_names_and_request_format(server, items, tmp_path):
    human = next(e for e in items.values() if "Q5" in truthy_p31(e) and len(english_names(e)) >= 2)
    alias = english_names(human)[1]
    doc = doc_with(
        [(english_label(human), "PER"), (alias, "PER"), (alias, "PER")],  # the alias is the most frequent name
        [("1984", "TIME")],
        [("no such name anywhere", "ORG")],
    )
    kb = make_kb(server, tmp_path / "cache")
    assert kb.link(doc, 0) == human["id"]
    assert server.requests_to("wbsearchentities")[0].params["search"] == alias
    assert kb.link(doc, 1) is None and server.counts["wbsearchentities"] == 1  # TIME: rule-based, no request
    assert kb.link(doc, 2) is None
    assert kb.types(human["id"]) == ["Q5"]
    assert kb.names(human["id"]) == clean_names([english_label(human), *english_names(human)[1:]])
    assert kb.popularity(human["id"]) == sum(len(v) for v in human["claims"].values())
    for request in server.requests:
        assert request.headers["User-Agent"] == UA
        assert request.params["format"] == "json" and request.params["maxlag"] == "5"
    search = server.requests_to("wbsearchentities")[0].params
    assert (search["language"], search["type"]) == ("en", "item")
    get = server.requests_to("wbgetentities")[0].params
    assert get["props"] == "labels|aliases|claims" and get["languages"] == "en"
    assert kb.types("Q999999999") == [] and kb.names("Q999999999") == [] and kb.popularity("Q999999999") is None


def test_prefetch_batches_at_most_50_ids(server, items, tmp_path):
    kb = make_kb(server, tmp_path / "cache")
    wanted = sorted(items)[:120]
    kb.prefetch(wanted + wanted[:10])  # duplicates are fetched once
    batches = [r.params["ids"].split("|") for r in server.requests_to("wbgetentities")]
    assert len(batches) == math.ceil(120 / MAX_IDS_PER_REQUEST)
    assert all(len(b) <= MAX_IDS_PER_REQUEST for b in batches)
    assert sorted(i for b in batches for i in b) == wanted
    before = server.counts["wbgetentities"]
    for item in wanted:
        assert kb.names(item) == english_names(items[item]) or not english_label(items[item])
    assert server.counts["wbgetentities"] == before  # all answered from memory


def expected_candidates(items: dict[str, dict], type_id: str, min_names: int) -> list[str]:
    ids = [i for i, e in items.items() if type_id in truthy_p31(e) and len(english_names(e)) >= min_names]
    return sorted(ids, key=lambda i: int(i[1:]))


@pytest.mark.parametrize("type_id,min_names", [("Q5", 3), ("Q515", 2), ("Q43229", 1)])
def test_candidates_pages_through_sparql(server, items, tmp_path, type_id, min_names):
    kb = make_kb(server, tmp_path / "cache", sparql_page_size=7)
    expected = expected_candidates(items, type_id, min_names)
    assert len(expected) > 7  # several pages
    got = [c.item_id for c in kb.candidates(type_id, min_names)]
    assert got == expected
    requests = server.requests_to("sparql")
    assert len(requests) == len(expected) // 7 + 1
    for page, request in enumerate(requests):
        assert request.headers["Accept"] == "application/sparql-results+json"
        assert request.params["format"] == "json"
        assert "ORDER BY ?item" in request.params["query"] and f"OFFSET {7 * page}" in request.params["query"]
    excluded = frozenset(expected[:3])
    assert [c.item_id for c in kb.candidates(type_id, min_names, excluded)] == expected[3:]
    assert len(server.requests_to("sparql")) == len(requests)  # memoised


def test_max_candidates_caps_paging(server, tmp_path):
    kb = make_kb(server, tmp_path / "cache", sparql_page_size=5, max_candidates=12)
    assert len(kb.candidates("Q5", 1)) == 12
    limits = [r.params["query"].split("LIMIT ")[1].split()[0] for r in server.requests_to("sparql")]
    assert limits == ["5", "5", "2"]


def test_long_sparql_query_is_posted(server, tmp_path):
    kb = make_kb(server, tmp_path / "cache")
    query = "# " + "x" * 2000 + "\n" + "SELECT ?item WHERE { ?item wdt:P31 wd:Q5 . } GROUP BY ?item "
    query += "HAVING (COUNT(DISTINCT ?name) >= 1) ORDER BY ?item LIMIT 3 OFFSET 0"
    assert len(kb.sparql(query)) == 3
    assert server.requests_to("sparql")[0].method == "POST"


def workload(kb: WikidataHTTPKB, items: dict[str, dict]) -> tuple:
    human = next(e for e in items.values() if "Q5" in truthy_p31(e) and english_label(e))
    doc = doc_with([(english_label(human), "PER")])
    kb.prefetch(sorted(items)[:60])
    return (
        kb.link(doc, 0),
        kb.types(human["id"]),
        kb.names(human["id"]),
        kb.popularity(human["id"]),
        [c.item_id for c in kb.candidates("Q515", 2)],
    )


def test_cache_makes_a_rebuild_send_no_request(server, items, tmp_path):
    first = make_kb(server, tmp_path / "cache", count_incoming=True)
    result = workload(first, items)
    first.close()
    sent = sum(server.counts.values())
    assert sent >= 5 and first.client.stats.total_sent == sent
    second = make_kb(server, tmp_path / "cache", count_incoming=True)
    assert workload(second, items) == result
    assert sum(server.counts.values()) == sent  # nothing sent: every reply came from the cache
    assert second.client.stats.total_sent == 0 and sum(second.client.stats.cache_hits.values()) == sent


@pytest.mark.parametrize("fault", ["429", "503", "500", "maxlag", "stall", "truncated", "cut"])
def test_transient_faults_are_retried(server, items, tmp_path, fault):
    kb = make_kb(server, tmp_path / "cache")
    server.inject("wbgetentities", fault, fault)
    item = sorted(items)[0]
    assert kb.names(item) == english_names(items[item])
    assert server.counts["wbgetentities"] == 3
    assert kb.client.stats.retries[server.api_url] == 2


def test_retry_after_is_honoured_and_backoff_grows(entities, tmp_path):
    waits: list[float] = []
    with FakeWikidata(entities, retry_after="2") as server:
        client = CachedJSONClient(tmp_path / "c", user_agent=UA, timeout=1, max_retries=4, backoff_factor=0.01,
                                  sleep=waits.append)
        server.inject("sparql", "429", "500", "500")
        client.get_json(server.sparql_url, {"query": "SELECT ?n WHERE { ?statement ?ps wd:Q1000001 . }"})
    assert len(waits) == 3
    assert waits[0] >= 2.0  # Retry-After: 2 beats the 0.01 s backoff
    assert 0.01 <= waits[1] < waits[2] <= 0.05  # exponential backoff, small jitter


def test_exhausted_retries_raise_a_clear_error_and_cache_nothing(server, items, tmp_path):
    kb = make_kb(server, tmp_path / "cache", max_retries=2)
    server.inject("wbgetentities", *["500"] * 3)
    item = sorted(items)[0]
    with pytest.raises(KnowledgeBaseError) as err:
        kb.names(item)
    message = str(err.value)
    assert "giving up after 3 attempts" in message and server.api_url in message and item in message
    assert "HTTP 500" in message
    assert server.counts["wbgetentities"] == 3
    assert kb.client.cache is not None and len(kb.client.cache) == 0


def test_broken_json_every_time_is_reported(server, items, tmp_path):
    kb = make_kb(server, tmp_path / "cache", max_retries=1)
    server.inject("wbsearchentities", "truncated", "truncated")
    with pytest.raises(KnowledgeBaseError, match="broken JSON reply"):
        kb.search("Kadel")


@pytest.mark.parametrize(
    "endpoint, fault, message",
    [
        ("wbgetentities", "shapeless", "no 'entities' object"),
        ("wbgetentities", "bad-entity", "malformed entity"),
        ("wbsearchentities", "shapeless", "no 'search' list"),
    ],
)
def test_a_reply_of_the_wrong_shape_is_raised_and_not_cached(server, items, tmp_path, endpoint, fault, message):
    """The KB error says 'rerun with --resume'; a cached bad reply would fail that rerun the same way forever."""
    item = next(i for i in sorted(items) if english_names(items[i]))
    ask = (lambda kb: kb.names(item)) if endpoint == "wbgetentities" else (lambda kb: kb.search(english_names(items[item])[0]))
    kb = make_kb(server, tmp_path / "cache")
    server.inject(endpoint, fault)
    with pytest.raises(KnowledgeBaseError, match=message):
        ask(kb)
    kb.close()
    again = make_kb(server, tmp_path / "cache")  # the resumed build, same cache
    answer = ask(again)
    assert answer == english_names(items[item]) if endpoint == "wbgetentities" else item in answer
    assert server.counts[endpoint] == 2  # asked again: the bad reply was not kept


@pytest.mark.parametrize("fault", ["bad-row", "bare-value", "no-value"])
@pytest.mark.parametrize("query", ["candidates", "popularity"])
def test_sparql_rows_of_the_wrong_shape_are_raised_and_not_cached(server, items, tmp_path, fault, query):
    """Rows of results.bindings must be objects whose bindings are objects with a 'value'; checked before the
    reply is cached (a cached bad reply would fail every resumed build the same way)."""
    target = max(server.incoming, key=lambda i: (server.incoming[i], i) if i in items else (-1, i))
    if query == "candidates":
        ask, expected = (lambda kb: [c.item_id for c in kb.candidates("Q5", 3)]), expected_candidates(items, "Q5", 3)
    else:
        ask = lambda kb: kb.popularity(target)  # noqa: E731
        expected = sum(len(v) for v in items[target]["claims"].values()) + server.incoming[target]
    kb = make_kb(server, tmp_path / "cache", count_incoming=True)
    if query == "popularity":
        kb.entity(target)  # the entity request first: only the SPARQL reply is bad
    server.inject("sparql", fault)
    with pytest.raises(KnowledgeBaseError, match=r"results\.bindings"):
        ask(kb)
    kb.close()
    again = make_kb(server, tmp_path / "cache", count_incoming=True)  # the resumed build, same cache
    assert ask(again) == expected
    assert server.counts["sparql"] == 2  # asked again: the bad reply was not kept


def test_a_cached_sparql_reply_of_the_wrong_shape_is_a_kb_error(server, tmp_path):
    """A cache written before the rows were checked may hold such a reply: a KnowledgeBaseError, not a crash."""
    from envre_hf.kb.wikidata_http import SPARQL_ACCEPT, candidates_query

    kb = make_kb(server, tmp_path / "cache", sparql_page_size=7)
    server.inject("sparql", "bad-row")
    params = {"query": candidates_query("Q5", 3, "en", 7, 0), "format": "json"}
    kb.client.get_json(server.sparql_url, params, headers={"Accept": SPARQL_ACCEPT})  # cached unchecked
    with pytest.raises(KnowledgeBaseError, match=r"results\.bindings\[0\] is not an object"):
        kb.candidates("Q5", 3)
    assert server.counts["sparql"] == 1


def test_stalled_server_times_out(server, tmp_path):
    kb = make_kb(server, tmp_path / "cache", max_retries=0)
    server.inject("sparql", "stall")
    started = time.perf_counter()
    with pytest.raises(KnowledgeBaseError, match="Timeout"):
        kb.candidates("Q5", 1)
    assert time.perf_counter() - started < server.stall_seconds


def test_client_errors_are_not_retried(server, tmp_path):
    kb = WikidataHTTPKB(tmp_path / "cache", api_url=server.base_url + "/nope", sparql_url=server.sparql_url,
                        user_agent=UA, timeout=0.5, max_retries=3, backoff_factor=0.001)
    with pytest.raises(KnowledgeBaseError, match="HTTP 404"):
        kb.search("anything")
    assert server.counts["unknown"] == 1


def test_api_error_reply_is_raised_not_cached(server, tmp_path):
    client = CachedJSONClient(tmp_path / "c", user_agent=UA, timeout=1, max_retries=3, backoff_factor=0.001)
    kb = make_kb(server, None, client=client)
    with pytest.raises(KnowledgeBaseError, match="badvalue"):
        kb._action({"action": "nosuchaction"})
    assert server.counts["nosuchaction"] == 1 and len(client.cache) == 0


def test_popularity_with_incoming_statements(server, items, tmp_path):
    kb = make_kb(server, tmp_path / "cache", count_incoming=True)
    target = max(server.incoming, key=lambda i: (server.incoming[i], i) if i in items else (-1, i))
    own = sum(len(v) for v in items[target]["claims"].values())
    assert server.incoming[target] > 0
    assert kb.popularity(target) == own + server.incoming[target]


def test_precomputed_links(server, items, tmp_path):
    kb = PrecomputedLinks(make_kb(server, tmp_path / "cache"))
    human = next(e for e in items.values() if "Q5" in truthy_p31(e) and english_label(e))
    doc = doc_with([("Somebody", "PER")], [(english_label(human), "PER")], [("Elsewhere", "LOC")])
    doc.entities[0].wikidata_id = "Q42"
    doc.entities[2].wikidata_id = "http://www.wikidata.org/entity/Q64"
    assert kb.link(doc, 0) == "Q42" and kb.link(doc, 2) == "Q64"
    assert server.counts["wbsearchentities"] == 0
    assert kb.link(doc, 1) == human["id"] and server.counts["wbsearchentities"] == 1
    assert kb.link_counts == {"precomputed": 2, "fallback": 1, "unlinked": 0}
    assert kb.names(human["id"]) == english_names(human)
    assert kb.snapshot_id().startswith("precomputed+wikidata-http:")
    offline = PrecomputedLinks(kb.kb, fallback=False)
    assert offline.link(doc, 1) is None and server.counts["wbsearchentities"] == 1


def test_kb_pickles_for_multiprocessing(server, items, tmp_path):
    kb = make_kb(server, tmp_path / "cache")
    item = sorted(items)[0]
    names = kb.names(item)
    clone = pickle.loads(pickle.dumps(kb))
    clone._entities.clear()
    assert clone.names(item) == names and server.counts["wbgetentities"] == 1  # the copy reads the shared cache


def test_retry_after_and_cache_key_helpers():
    assert parse_retry_after("0") == 0.0 and parse_retry_after("1.5") == 1.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert 8 <= parse_retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10
    assert cache_key("GET", "u", {"a": 1, "b": "x"}) == cache_key("get", "u", {"b": "x", "a": "1"})
    assert cache_key("GET", "u", {"a": 1}) != cache_key("POST", "u", {"a": 1})

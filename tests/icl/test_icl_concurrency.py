"""``envre icl`` with requests in flight at once: the predictions of a sequential run, in document order, one shared
back-off on ``Retry-After``, and a run killed midway resumed without sending a finished document again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _chat_server import ChatServer, digest_reply

from envre_hf.documents import write_documents
from envre_hf.icl import OpenAIChatBackend, PromptConfig, run_icl

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def docs(redocred_dev):
    return redocred_dev[:12], redocred_dev[100:130]


def run(server, tmp_path, name, docs, concurrency, **kwargs):
    test, train = docs
    backend = OpenAIChatBackend("m", base_url=server.url, cache_path=tmp_path / name / "cache.sqlite", **kwargs)
    run_icl(test, train, backend, tmp_path / name, PromptConfig(k=1), progress=False, concurrency=concurrency)
    return (tmp_path / name / "predictions.json").read_bytes(), (tmp_path / name / "results.jsonl").read_text()


def test_concurrent_runs_predict_as_a_sequential_run_in_document_order(docs, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-concurrency-1")
    server = ChatServer(delay=0.15, reply=digest_reply)
    try:
        sequential = run(server, tmp_path, "one", docs, 1)
        assert server.most_in_flight == 1
        concurrent = run(server, tmp_path, "six", docs, 6)
        assert 2 <= server.most_in_flight <= 6  # up to N requests in flight
    finally:
        server.close()
    assert concurrent[0] == sequential[0] and json.loads(sequential[0])  # predictions.json: the same bytes
    lines = [[json.loads(line) for line in run[1].splitlines()] for run in (sequential, concurrent)]
    assert [r["doc"] for r in lines[1]] == [d.key for d in docs[0]]  # results.jsonl in document order
    assert lines[0] == lines[1] and len(server.requests) == 24


def test_a_retry_after_pauses_every_worker(docs, tmp_path, monkeypatch):
    """The third request is answered 429 with Retry-After: 1 while three others are in flight: no request reaches the
    endpoint until the second is over (one pause shared by the four workers, not four retries)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-concurrency-2")
    server = ChatServer(delay=0.3, reply=digest_reply)
    server.script = [None, None, (429, {"Retry-After": "1"}, '{"error": "rate limited"}')]
    try:
        run(server, tmp_path, "four", docs, 4)
    finally:
        server.close()
    refused = server.requests[2]["answered"]
    during = [r["arrived"] - refused for r in server.requests if 0.05 < r["arrived"] - refused < 0.95]
    assert during == [] and len(server.requests) == 13  # 12 documents and the one retry


def test_a_run_killed_midway_resumes_without_resending_finished_documents(docs, tmp_path, monkeypatch):
    test, train = docs
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-concurrency-3")
    write_documents(test, tmp_path / "test.json")
    write_documents(train, tmp_path / "train.json")
    server = ChatServer(delay=0.4, reply=digest_reply)
    argv = ["icl", "--test", str(tmp_path / "test.json"), "--train", str(tmp_path / "train.json"), "--backend",
            "openai", "--model", "m", "--base-url", server.url, "--k", "1", "--concurrency", "3",
            "--output", str(tmp_path / "run")]
    results = tmp_path / "run" / "results.jsonl"
    try:
        child = subprocess.Popen([sys.executable, "-m", "envre_hf.cli.main", *argv], cwd=str(tmp_path),
                                 env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not (results.exists() and len(results.read_text().splitlines()) >= 4) and time.monotonic() < deadline:
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait()
        finished = _finished(results)
        assert 4 <= len(finished) < len(test), finished
        sent_before = len(server.requests)
        from envre_hf.cli.main import main

        assert main(argv) == 0  # the same command continues the run
        resumed = [r["body"]["messages"][0]["content"] for r in server.requests[sent_before:]]
        reference = run(server, tmp_path, "reference", docs, 1)
    finally:
        server.close()
    assert (tmp_path / "run" / "predictions.json").read_bytes() == reference[0]
    sent_again = [_document_of(prompt, test) for prompt in resumed]
    assert not set(sent_again) & finished, (sent_again, finished)  # no finished document is sent again
    assert len(sent_again) == len(set(sent_again)) <= len(test) - len(finished), (sent_again, finished)  # nor a
    # reply already cached (the requests in flight at the kill are sent again)


def _finished(results: Path) -> set[str]:
    """The documents whose line in ``results.jsonl`` is whole (a kill may tear the last one)."""
    done = set()
    for line in results.read_text().splitlines():
        try:
            done.add(json.loads(line)["doc"])
        except ValueError:
            pass
    return done


def _document_of(prompt: str, test) -> str:
    """The key of the test document a prompt asks about."""
    from envre_hf.icl import mark_mentions

    return next(d.key for d in test if mark_mentions(d) in prompt.split("Test document")[-1])

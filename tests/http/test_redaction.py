"""Credentials never reach an error text: HTTP error bodies that echo the API key / bearer token are redacted."""

from __future__ import annotations

import json

import pytest
from _chat_server import ChatServer

from envre_hf.net.bounds import HTTPRequestError
from envre_hf.redaction import REDACTED, redact, request_secrets
from envre_hf.kb.wikidata_http import CachedJSONClient
from envre_hf.icl.backends import BackendError, OpenAIChatBackend

KEY = "sk-live-0123456789abcdef"


@pytest.fixture
def server():
    s = ChatServer()
    yield s
    s.close()


def test_request_secrets_and_redact():
    secrets = request_secrets({"Authorization": f"Bearer {KEY}", "Accept": "application/json"}, {"api_key": "k-998877"})
    assert KEY in secrets and "k-998877" in secrets and "application/json" not in secrets
    assert redact(f"bad key {KEY} (Bearer {KEY}), k-998877", secrets) == f"bad key {REDACTED} ({REDACTED}), {REDACTED}"


def test_backend_error_on_401_does_not_carry_the_key(server, monkeypatch):
    monkeypatch.setenv("MY_KEY", KEY)
    server.script = [(401, {}, json.dumps({"error": f"Incorrect API key provided: {KEY}. Header was Bearer {KEY}"}))]
    backend = OpenAIChatBackend("m", base_url=server.url, api_key_env="MY_KEY", max_retries=0)
    with pytest.raises(BackendError) as info:
        backend.complete([{"role": "user", "content": "hi"}])
    assert server.requests[0]["auth"] == f"Bearer {KEY}"  # the key was sent ...
    assert KEY not in str(info.value) and REDACTED in str(info.value)  # ... and never comes back in the error


def test_retried_5xx_bodies_are_redacted_in_the_final_error(server, monkeypatch):
    monkeypatch.setenv("MY_KEY", KEY)
    server.script = [(500, {}, f"upstream rejected token {KEY}")] * 2
    backend = OpenAIChatBackend("m", base_url=server.url, api_key_env="MY_KEY", max_retries=1, sleep=lambda s: None)
    with pytest.raises(BackendError) as info:
        backend.complete([{"role": "user", "content": "hi"}])
    assert KEY not in str(info.value) and "giving up" in str(info.value)


def test_kb_client_error_does_not_carry_credentials():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # a 403 that echoes the query string and the auth header
            body = f"denied {self.path} for {self.headers.get('Authorization')}".encode()
            self.send_response(403)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        client = CachedJSONClient(None, max_retries=0, sleep=lambda s: None)
        with pytest.raises(HTTPRequestError) as info:  # the KB turns it into KnowledgeBaseError
            client.get_json(f"http://127.0.0.1:{httpd.server_port}/kb", {"q": "x", "token": KEY},
                            headers={"Authorization": f"Bearer {KEY}"})
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert "HTTP 403" in str(info.value) and KEY not in str(info.value) and REDACTED in str(info.value)

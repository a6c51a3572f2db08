"""A chat-completions double on 127.0.0.1 (OpenAI-compatible), shared by the ICL, credential-redaction and ICL
concurrency tests and by ``benchmarks/bench_icl_concurrency.py``."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def digest_reply(body: dict) -> str:
    """Triples that depend on the prompt (documents get different predictions), the same for the same prompt."""
    digest = hashlib.sha256(body["messages"][0]["content"].encode()).digest()
    return "\n".join(f"<{1 + digest[i] % 3}; country; {2 + digest[i + 1] % 3}>" for i in range(digest[2] % 4))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many clients connect at once (the default backlog of 5 delays the others by 1 s)

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that went away (killed) is no error here
            super().handle_error(request, client_address)


class ChatServer:
    """A threaded chat-completions double on 127.0.0.1 that plays a scripted list of replies.

    ``script``: ``(status, headers, body)`` for the next requests in arrival order (``None``: the normal reply);
    once empty, every request gets the normal reply: after ``delay`` seconds, the content ``reply(body)`` (default
    ``<1; country; 3>``). ``requests`` records each request with its ``arrived`` and ``answered`` times
    (``time.monotonic()``); ``most_in_flight`` is the most requests it held at once."""

    def __init__(self, delay: float = 0.0, reply: Callable[[dict], str] | None = None):
        self.script: list[tuple[int, dict[str, str], str] | None] = []
        self.requests: list[dict] = []
        self.delay, self.reply = delay, reply
        self.most_in_flight, self._in_flight, self._lock = 0, 0, threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # a JSON API for the KB client, to share the reply cache with
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": None})
                self._send(200, {}, json.dumps({"path": self.path}))

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                record = {"path": self.path, "auth": self.headers.get("Authorization"), "body": body,
                          "arrived": time.monotonic()}
                with server._lock:
                    server.requests.append(record)
                    entry = server.script.pop(0) if server.script else None
                    server._in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server._in_flight)
                try:
                    if entry is None:
                        server._stop.wait(server.delay)
                        entry = (200, {}, server.completion(body))
                    record["answered"] = time.monotonic()
                    self._send(*entry)
                finally:
                    with server._lock:
                        server._in_flight -= 1

            def _send(self, status, headers, payload):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                data = payload.encode()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def completion(self, body: dict) -> str:
        content = self.reply(body) if self.reply is not None else "<1; country; 3>"
        return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                           "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}})

    def close(self):
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

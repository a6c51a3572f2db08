"""A chat-completions double on 127.0.0.1 (OpenAI-compatible), shared by the ICL and credential-redaction tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatServer:
    """A threaded chat-completions double on 127.0.0.1 that plays a scripted list of replies."""

    def __init__(self):
        self.script: list[tuple[int, dict[str, str], str]] = []  # (status, headers, body); empty -> echo success
        self.requests: list[dict] = []
        #: The reply's content from the request body when the script is empty (default: one fixed triple).
        self.answer: Callable[[dict], str] = lambda body: "<1; country; 3>"
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # a JSON API for the KB client, to share the reply cache with
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": None})
                data = json.dumps({"path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                if server.script:
                    status, headers, payload = server.script.pop(0)
                else:
                    status, headers = 200, {}
                    payload = json.dumps(
                        {
                            "choices": [{"message": {"role": "assistant", "content": server.answer(body)}}],
                            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
                        }
                    )
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                data = payload.encode()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

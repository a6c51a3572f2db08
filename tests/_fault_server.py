"""A fault-injecting HTTP server on 127.0.0.1: each request plays the next scripted fault, then JSON ``{"ok": true}``.

Faults: ``("trickle", seconds)`` (headers, then one body byte every ``seconds``), ``("trickle_headers", seconds)``
(the status line and headers one byte every ``seconds``), ``("hang", seconds)`` (no answer
for that long), ``("late", seconds)`` (the ``ok`` reply after that long), ``("drop",)`` (connection closed without a reply), ``("cut",)`` (half the announced body),
``("html",)`` (an HTML page with HTTP 200), ``("status", code, headers, body)``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultServer:
    def __init__(self, ok_body: bytes = b'{"ok": true}'):
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        self.ok_body = ok_body
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server.requests.append({"method": self.command, "path": self.path,
                                        "auth": self.headers.get("Authorization"), "body": body})
                fault = server.script.pop(0) if server.script else ("ok",)
                kind = fault[0]
                if kind in ("hang", "late"):
                    if server.stop.wait(fault[1]) or kind == "hang":
                        return
                if kind == "drop":
                    self.close_connection = True
                    return
                if kind == "trickle_headers":
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Padding: " + b"x" * 64 + b"\r\n"
                    for byte in head:
                        if server.stop.wait(fault[1]):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    self.close_connection = True
                    return
                if kind == "status":
                    code, headers, payload = fault[1], fault[2], fault[3].encode()
                elif kind == "html":
                    code, headers, payload = 200, {"Content-Type": "text/html"}, b"<html><body>Bad gateway</body></html>"
                else:
                    code, headers, payload = 200, {"Content-Type": "application/json"}, server.ok_body
                self.send_response(code)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if kind == "cut":
                    self.wfile.write(payload[: len(payload) // 2])
                    self.close_connection = True
                elif kind == "trickle":
                    for byte in payload:
                        if server.stop.wait(fault[1]):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                else:
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _reply

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def chat_reply() -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": "<1; country; 3>"}}]}).encode()


__all__ = ["FaultServer", "chat_reply", "time"]

"""A local stand-in of the Hugging Face Hub on 127.0.0.1: enough of its HTTP API for the clients we test.

Serves repository creation, YAML validation, preupload and commit (regular, base64 uploads), then reading back
what was committed: repo info / revision, tree, paths-info, and ``resolve`` (HEAD and GET, with ``Range``) for
models, datasets and Spaces. ``huggingface_hub``, ``datasets.load_dataset``, ``transformers``' remote code and
``evaluate.load`` then work against it with ``HF_ENDPOINT`` pointing at :attr:`LocalHub.endpoint`.
Unknown routes answer 404 and are recorded in :attr:`LocalHub.unhandled`.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class LocalHub:
    """Stateful Hub stand-in. ``files[(repo_type, repo_id)]`` holds the committed files (path -> bytes)."""

    def __init__(self):
        self.repos: list[dict] = []  # bodies of /api/repos/create
        self.validated: list[dict] = []
        self.commits: list[tuple[str, list[dict]]] = []
        self.auth: list[str | None] = []  # Authorization header of every write request
        self.files: dict[tuple[str, str], dict[str, bytes]] = {}
        self.shas: dict[tuple[str, str], str] = {}
        self.unhandled: list[str] = []
        #: faults to play on write requests whose path contains the key ("create", "preupload", "commit"):
        #: ("status", code, headers, body), ("html",), ("hang", seconds), ("trickle_headers", seconds) or ("drop",)
        self.faults: dict[str, list[tuple]] = {}
        #: the same, played on downloads (GET, not HEAD) whose path contains the key
        self.read_faults: dict[str, list[tuple]] = {}
        #: seconds the replies to requests whose path contains the key wait after the request was handled (a slow
        #: Hub: the work is done, the answer comes late); the key "" delays every reply
        self.late: dict[str, float] = {}
        #: patterns of a .gitignore in every repository: preupload tells the client to skip those files
        self.gitignore: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, code, obj=None, body=None, headers=None, error_code=None):
                delay = max((v for k, v in hub.late.items() if k in self.path), default=0.0)
                if delay and hub._stop.wait(delay):
                    return
                if body is None:
                    body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json" if obj is not None else "application/octet-stream")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                if error_code:
                    self.send_header("X-Error-Code", error_code)
                    self.send_header("X-Error-Message", error_code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _not_found(self, error_code):
                hub.unhandled.append(f"{self.command} {self.path} -> {error_code}")
                return self._send(404, {"error": error_code}, error_code=error_code)

            def _repo(self, kind, parts):
                """(repo key, rest of the path parts) for ``{ns}/{name}/...``; None when unknown."""
                if len(parts) < 2:
                    return None, parts
                key = (_TYPES[kind], f"{parts[0]}/{parts[1]}")
                return (key if key in hub.files else None), parts[2:]

            def _revision_ok(self, key, revision):
                return unquote(revision) in ("main", hub.shas.get(key))

            # ---------------------------------------------------------------- reads

            def do_HEAD(self):
                self.do_GET()

            def do_GET(self):
                if self.command == "GET" and self._fault(hub.read_faults):
                    return
                url = urlsplit(self.path)
                parts = [unquote(p) for p in url.path.strip("/").split("/")]
                if parts[0] == "api" and len(parts) > 1 and parts[1] in _TYPES:
                    return self._api_get(parts[1], parts[2:], parse_qs(url.query))
                kind = parts[0] if parts[0] in ("datasets", "spaces") else "models"
                rest = parts[1:] if kind != "models" else parts
                key, tail = self._repo(kind, rest)
                if len(tail) >= 2 and tail[0] == "resolve":
                    if key is None:
                        return self._not_found("RepoNotFound")
                    if not self._revision_ok(key, tail[1]):
                        return self._not_found("RevisionNotFound")
                    return self._resolve(key, "/".join(tail[2:]))
                return self._not_found("RepoNotFound" if key is None else "EntryNotFound")

            def _resolve(self, key, path):
                data = hub.files[key].get(path)
                if data is None:
                    return self._not_found("EntryNotFound")
                headers = {
                    "ETag": f'"{_git_oid(data)}"',
                    "X-Repo-Commit": hub.shas[key],
                    "Accept-Ranges": "bytes",
                }
                ranged = self.headers.get("Range")
                if ranged and ranged.startswith("bytes="):
                    start_text, _, end_text = ranged[len("bytes="):].partition("-")
                    if start_text == "":  # suffix range: the last N bytes
                        start, end = max(0, len(data) - int(end_text)), len(data) - 1
                    else:
                        start = int(start_text)
                        end = min(int(end_text), len(data) - 1) if end_text else len(data) - 1
                    if start >= len(data) and len(data):
                        return self._send(416, {"error": "range"}, headers={"Content-Range": f"bytes */{len(data)}"})
                    headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                    return self._send(206, body=data[start : end + 1], headers=headers)
                return self._send(200, body=data, headers=headers)

            def _entry(self, key, path):
                files = hub.files[key]
                if path in files:
                    return {"type": "file", "path": path, "size": len(files[path]), "oid": _git_oid(files[path])}
                if any(f.startswith(path.rstrip("/") + "/") for f in files) or path in ("", "."):
                    return {"type": "directory", "path": path, "oid": "0" * 40, "size": 0}
                return None

            def _api_get(self, kind, parts, query):
                key, rest = self._repo(kind, parts)
                if key is None:
                    return self._not_found("RepoNotFound")
                revision = "main"
                if rest[:1] == ["revision"]:
                    revision, rest = rest[1], rest[2:]
                if rest[:1] == ["tree"] and len(rest) >= 2:
                    revision, rest = rest[1], ["tree", *rest[2:]]
                if not self._revision_ok(key, revision):
                    return self._not_found("RevisionNotFound")
                if not rest:  # repo info
                    files = hub.files[key]
                    return self._send(
                        200,
                        {
                            "id": key[1],
                            "_id": key[1],
                            "sha": hub.shas[key],
                            "private": False,
                            "disabled": False,
                            "gated": False,
                            "downloads": 0,
                            "likes": 0,
                            "tags": [],
                            "lastModified": "2026-01-01T00:00:00.000Z",
                            "createdAt": "2026-01-01T00:00:00.000Z",
                            "siblings": [{"rfilename": p, "size": len(b)} for p, b in sorted(files.items())],
                        },
                    )
                if rest[0] == "tree":
                    base = "/".join(rest[1:]).strip("/")
                    recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
                    files = hub.files[key]
                    prefix = base + "/" if base else ""
                    if base and not any(f.startswith(prefix) for f in files):
                        return self._not_found("EntryNotFound")
                    entries, dirs = [], set()
                    for path in sorted(files):
                        if not path.startswith(prefix):
                            continue
                        inner = path[len(prefix):].split("/")
                        for depth in range(1, len(inner)):
                            if recursive or depth == 1:
                                dirs.add(prefix + "/".join(inner[:depth]))
                        if recursive or len(inner) == 1:
                            entries.append(self._entry(key, path))
                    entries += [{"type": "directory", "path": d, "oid": "0" * 40, "size": 0} for d in sorted(dirs)]
                    return self._send(200, entries)
                return self._not_found("NotMocked")

            # ---------------------------------------------------------------- writes

            def _fault(self, faults=None):
                for key, queue in (hub.faults if faults is None else faults).items():
                    if key in self.path and queue:
                        fault = queue.pop(0)
                        if fault[0] == "drop":  # the connection closed without a reply
                            self.close_connection = True
                        elif fault[0] == "hang":
                            hub._stop.wait(fault[1])
                            self.close_connection = True
                        elif fault[0] == "html":
                            self._send(200, body=b"<html><body>502 Bad Gateway</body></html>")
                        elif fault[0] == "trickle_headers":  # the status line and headers, a byte every fault[1] s
                            self._trickle(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"x" * 64,
                                          fault[1])
                        else:
                            self._send(fault[1], body=fault[3].encode(), headers=fault[2])
                        return True
                return False

            def _trickle(self, head: bytes, every: float) -> None:
                self.close_connection = True
                for byte in head:
                    if hub._stop.wait(every):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:  # the client gave up (its deadline)
                        return

            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self._fault():
                    return
                url = urlsplit(self.path)
                path = url.path
                if path == "/api/repos/create":
                    hub.auth.append(self.headers.get("Authorization"))
                    body = json.loads(data)
                    hub.repos.append(body)
                    repo = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
                    key = (body.get("type") or "model", repo)
                    with hub._lock:
                        hub.files.setdefault(key, {})
                        hub.shas.setdefault(key, "0" * 40)
                    prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[key[0]]
                    return self._send(200, {"url": f"{hub.endpoint}/{prefix}{repo}", "name": repo})
                if path == "/api/validate-yaml":
                    hub.auth.append(self.headers.get("Authorization"))
                    import yaml

                    body = json.loads(data)
                    hub.validated.append(body)
                    yaml.safe_load(body["content"].split("---\n")[1])
                    return self._send(200, {"errors": [], "warnings": []})
                parts = [unquote(p) for p in path.strip("/").split("/")]
                if parts[0] != "api" or len(parts) < 5 or parts[1] not in _TYPES:
                    return self._not_found("NotMocked")
                key, rest = self._repo(parts[1], parts[2:])
                if key is None:
                    return self._not_found("RepoNotFound")
                if rest[:1] == ["preupload"]:
                    hub.auth.append(self.headers.get("Authorization"))
                    files = json.loads(data)["files"]
                    held = hub.files[key]
                    return self._send(200, {"files": [
                        {"path": f["path"], "uploadMode": "regular",
                         "shouldIgnore": any(fnmatch.fnmatch(f["path"], pattern) for pattern in hub.gitignore),
                         **({"oid": _git_oid(held[f["path"]])} if f["path"] in held else {})}  # as the Hub: unchanged
                        for f in files]})
                if rest[:1] == ["commit"]:
                    hub.auth.append(self.headers.get("Authorization"))
                    lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
                    hub.commits.append((path, lines))
                    with hub._lock:
                        files = hub.files[key]
                        for line in lines:
                            value = line.get("value", {})
                            if line["key"] == "file":
                                files[value["path"]] = base64.b64decode(value["content"])
                            elif line["key"] in ("deletedFile", "deletedFolder"):
                                for name in [p for p in files if p == value["path"] or p.startswith(value["path"].rstrip("/") + "/")]:
                                    del files[name]
                        oid = hashlib.sha1(json.dumps(sorted((p, _git_oid(b)) for p, b in files.items())).encode()).hexdigest()
                        hub.shas[key] = oid
                    prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[key[0]]
                    return self._send(200, {"commitUrl": f"{hub.endpoint}/{prefix}{key[1]}/commit/{oid}", "commitOid": oid})
                if rest[:1] == ["paths-info"]:
                    if not self._revision_ok(key, rest[1] if len(rest) > 1 else "main"):
                        return self._not_found("RevisionNotFound")
                    content_type = self.headers.get("Content-Type", "")
                    if "json" in content_type:
                        paths = json.loads(data).get("paths", [])
                    else:
                        paths = parse_qs(data.decode()).get("paths", [])
                    entries = [e for e in (self._entry(key, p.strip("/")) for p in paths) if e is not None]
                    return self._send(200, entries)
                return self._not_found("NotMocked")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> LocalHub:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

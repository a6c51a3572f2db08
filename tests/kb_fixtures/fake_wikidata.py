"""A fake Wikidata on 127.0.0.1: the action API (wbsearchentities, wbgetentities) and a SPARQL endpoint.

It answers in the real reply formats, computed directly from entity JSON objects (so it is an
independent oracle for the client's parsing), counts requests per endpoint, records parameters and
headers, and injects faults on demand: ``"429"``/``"503"`` (with ``Retry-After``), ``"500"``,
``"maxlag"`` (HTTP 200 with the action API's maxlag error), ``"stall"`` (answers after the client's
timeout) and ``"truncated"`` (half a JSON body).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

ENTITY_URI = "http://www.wikidata.org/entity/"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


def english_names(entity: dict) -> list[str]:
    """Label and aliases in English as SPARQL sees them (distinct literals)."""
    names = []
    label = entity.get("labels", {}).get("en")
    if label:
        names.append(label["value"])
    aliases = entity.get("aliases") or {}
    names.extend(a["value"] for a in (aliases.get("en", []) if isinstance(aliases, dict) else []))
    return list(dict.fromkeys(names))


def _value_id(snak: dict) -> str | None:
    value = (snak.get("datavalue") or {}).get("value")
    return value.get("id") if isinstance(value, dict) and snak.get("snaktype") == "value" else None


def _claims(entity: dict) -> dict:
    claims = entity.get("claims")
    return claims if isinstance(claims, dict) else {}


def truthy_p31(entity: dict) -> list[str]:
    """``wdt:P31`` semantics: values of the best non-deprecated rank."""
    statements = [s for s in _claims(entity).get("P31", []) if s.get("rank") != "deprecated"]
    if any(s.get("rank") == "preferred" for s in statements):
        statements = [s for s in statements if s.get("rank") == "preferred"]
    return [v for v in (_value_id(s["mainsnak"]) for s in statements) if v]


@dataclass
class Request:
    endpoint: str
    method: str
    params: dict[str, str]
    headers: dict[str, str]


class FakeWikidata:
    """Start with ``with FakeWikidata(entities) as server:``; URLs are ``server.api_url`` and ``server.sparql_url``."""

    def __init__(self, entities: list[dict], *, stall_seconds: float = 0.6, retry_after: str = "0", port: int = 0,
                 fail_after: int | None = None):
        self.entities = {e["id"]: e for e in entities if e.get("type") == "item"}
        #: the port to listen on (0: any free one; a restarted server takes its predecessor's)
        self.port = port
        #: after this many requests the server is down for good: every later request is dropped unanswered
        self.fail_after = fail_after
        self.stall_seconds = stall_seconds
        self.retry_after = retry_after
        self.faults: dict[str, deque[str]] = defaultdict(deque)
        self.counts: Counter = Counter()
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.incoming: Counter = Counter()
        for entity in self.entities.values():
            for statements in _claims(entity).values():
                for statement in statements:
                    target = _value_id(statement["mainsnak"])
                    if target and target != entity["id"]:
                        self.incoming[target] += 1

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "FakeWikidata":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                fake._handle(self, dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True)))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length).decode("utf-8")
                fake._handle(self, dict(parse_qsl(body, keep_blank_values=True)))

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        return self.base_url + "/w/api.php"

    @property
    def sparql_url(self) -> str:
        return self.base_url + "/sparql"

    def inject(self, endpoint: str, *faults: str) -> None:
        """Queue faults for the next requests to ``endpoint`` (``wbsearchentities``, ``wbgetentities``, ``sparql``)."""
        self.faults[endpoint].extend(faults)

    def requests_to(self, endpoint: str) -> list[Request]:
        return [r for r in self.requests if r.endpoint == endpoint]

    # ------------------------------------------------------------------ dispatch

    def _handle(self, handler: BaseHTTPRequestHandler, params: dict[str, str]) -> None:
        path = urlsplit(handler.path).path
        if path == "/w/api.php":
            endpoint = params.get("action", "?")
        elif path == "/sparql":
            endpoint = "sparql"
        else:
            endpoint = "unknown"
        with self._lock:
            self.counts[endpoint] += 1
            self.requests.append(Request(endpoint, handler.command, params, dict(handler.headers)))
            fault = self.faults[endpoint].popleft() if self.faults[endpoint] else None
            down = self.fail_after is not None and len(self.requests) > self.fail_after
        if down:  # the connection closes without a reply
            handler.close_connection = True
            return None
        if endpoint == "unknown":
            return self._send(handler, 404, b'{"error": "not found"}')
        if fault in ("429", "503", "500"):
            headers = {"Retry-After": self.retry_after} if fault != "500" else {}
            return self._send(handler, int(fault), b"<html>busy</html>", "text/html", headers)
        if fault == "maxlag":
            body = {"error": {"code": "maxlag", "info": "Waiting for db1: 7 seconds lagged.", "host": "db1",
                              "lag": 7, "type": "db", "*": "See the API help for usage."}, "servedby": "mw1"}
            return self._send(handler, 200, json.dumps(body).encode(), headers={
                "Retry-After": self.retry_after, "X-Database-Lag": "7"})
        if fault == "stall":
            time.sleep(self.stall_seconds)
        if endpoint == "wbsearchentities":
            payload = self._search(params)
        elif endpoint == "wbgetentities":
            payload = self._getentities(params)
        elif endpoint == "sparql":
            payload = self._sparql(params.get("query", ""))
        else:
            info = f'Unrecognized value for parameter "action": {endpoint}.'
            payload = {"error": {"code": "badvalue", "info": info}}
        if fault == "shapeless":  # valid JSON without the reply's expected member (a proxy's or mirror's glitch)
            payload = {"batchcomplete": ""}
        elif fault == "bad-entity" and endpoint == "wbgetentities":
            payload = {"entities": {key: {"id": key, "type": "item", "claims": {"P31": [{"rank": "normal"}]}}
                                    for key in payload["entities"]}}  # a statement without its mainsnak
        elif fault == "bad-row" and endpoint == "sparql":  # a result row that is not an object
            payload = {**payload, "results": {"bindings": ["row"] + payload["results"]["bindings"]}}
        elif fault in ("bare-value", "no-value") and endpoint == "sparql":  # a binding not {"type", "value"}
            payload = {**payload, "results": {"bindings": [
                {var: (b["value"] if fault == "bare-value" else {"type": b["type"]}) for var, b in row.items()}
                for row in payload["results"]["bindings"]]}}
        body = json.dumps(payload).encode("utf-8")
        if fault == "truncated":
            body = body[: len(body) // 2]
        content_type = "application/sparql-results+json" if endpoint == "sparql" else "application/json"
        if fault == "cut":  # the connection drops mid-body: Content-Length promises more than arrives
            handler.close_connection = True
            return self._send(handler, 200, body, content_type, length=len(body), send=body[: len(body) // 2])
        self._send(handler, 200, body, content_type)

    @staticmethod
    def _send(handler, status: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None, length: int | None = None, send: bytes | None = None) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", f"{content_type}; charset=utf-8")
            handler.send_header("Content-Length", str(len(body) if length is None else length))
            for key, value in (headers or {}).items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(body if send is None else send)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (stall fault)
            pass

    # ------------------------------------------------------------------ endpoints

    def _search(self, params: dict[str, str]) -> dict:
        text = params.get("search", "")
        needle = text.casefold()
        hits = []
        for item_id, entity in self.entities.items():
            names = english_names(entity)
            label = entity.get("labels", {}).get("en", {}).get("value")
            for name in names:
                if name.casefold() == needle:
                    rank = 0 if name == label else 1
                elif name.casefold().startswith(needle):
                    rank = 2
                else:
                    continue
                hits.append((rank, int(item_id[1:]), item_id, name, label))
                break
        hits.sort()
        limit = int(params.get("limit", 7))
        results = []
        for rank, _, item_id, name, label in hits[:limit]:
            hit = {
                "id": item_id, "title": item_id, "pageid": int(item_id[1:]) + 7, "repository": "wikidata",
                "url": f"//www.wikidata.org/wiki/{item_id}", "concepturi": ENTITY_URI + item_id,
                "display": {"label": {"value": label, "language": "en"}} if label else {},
                "label": label, "description": "synthetic item",
                "match": {"type": "label" if rank == 0 else "alias", "language": "en", "text": name},
            }
            if rank != 0:
                hit["aliases"] = [name]
            results.append(hit)
        payload = {"searchinfo": {"search": text}, "search": results, "success": 1}
        if len(hits) > limit:
            payload["search-continue"] = limit
        return payload

    def _getentities(self, params: dict[str, str]) -> dict:
        ids = params.get("ids", "").split("|")
        if len(ids) > 50:
            return {"error": {"code": "toomanyvalues",
                              "info": 'Too many values supplied for parameter "ids". The limit is 50.'}}
        props = set(params.get("props", "info|sitelinks|aliases|labels|descriptions|claims|datatype").split("|"))
        languages = set(params.get("languages", "en").split("|"))
        out = {}
        for item_id in ids:
            entity = self.entities.get(item_id)
            if entity is None:
                out[item_id] = {"id": item_id, "missing": ""}
                continue
            reply = {"type": "item", "id": item_id}
            if "labels" in props:
                reply["labels"] = {k: v for k, v in entity.get("labels", {}).items() if k in languages}
            if "aliases" in props:
                aliases = entity.get("aliases") or {}
                aliases = aliases if isinstance(aliases, dict) else {}  # dumps write an empty map as []
                reply["aliases"] = {k: v for k, v in aliases.items() if k in languages}
            if "claims" in props:
                reply["claims"] = _claims(entity)
            out[item_id] = reply
        return {"entities": out, "success": 1}

    def _sparql(self, query: str) -> dict:
        incoming = re.search(r"\?statement \?ps wd:(Q\d+) \.", query)
        if incoming:
            n = self.incoming[incoming.group(1)]
            return {"head": {"vars": ["n"]},
                    "results": {"bindings": [{"n": {"datatype": XSD_INTEGER, "type": "literal", "value": str(n)}}]}}
        type_id = re.search(r"\?item wdt:P31 wd:(Q\d+) \.", query).group(1)
        min_names = int(re.search(r"HAVING \(COUNT\(DISTINCT \?name\) >= (\d+)\)", query).group(1))
        limit = int(re.search(r"LIMIT (\d+)", query).group(1))
        offset = int(re.search(r"OFFSET (\d+)", query).group(1))
        rows = []
        for item_id, entity in self.entities.items():
            n_names = len(english_names(entity))
            if type_id in truthy_p31(entity) and n_names >= min_names:
                rows.append((ENTITY_URI + item_id, n_names))
        rows.sort()  # ORDER BY ?item: URIs compare as strings
        bindings = [
            {"item": {"type": "uri", "value": uri},
             "names": {"datatype": XSD_INTEGER, "type": "literal", "value": str(n)}}
            for uri, n in rows[offset : offset + limit]
        ]
        return {"head": {"vars": ["item", "names"]}, "results": {"bindings": bindings}}

"""Wikidata over HTTP: ``wbsearchentities`` links (step 1), ``wbgetentities`` gives types and names (at most 50 ids
a request), a paged SPARQL query the candidates of step 3; every request goes through :class:`CachedJSONClient`,
whose reply cache also freezes the snapshot of a live Wikidata (docs/kb.md)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from ..documents import Document
from ..net.bounds import (RETRY_STATUSES, HTTPRequestError, NetworkBounds, ReplyTooSlow, RetriesExhausted, RetryLater,
                          RetryPolicy, Transient, parse_retry_after, server_of)
from ..redaction import redact, redact_url, request_secrets
from ..replies import ResponseCache, cache_key
from ..version import __version__
from .base import Candidate, KnowledgeBase, KnowledgeBaseError
from .linked import link_by_name, normalize_item_id
from .wikidata_json import EntityRecord, is_item_id, item_number, parse_entity

WIKIDATA_API_URL = "https://www.wikidata.org/w/api.php"
WIKIDATA_SPARQL_URL = "https://query.wikidata.org/sparql"

#: The action API accepts at most 50 ids per ``wbgetentities`` call for ordinary clients.
MAX_IDS_PER_REQUEST = 50

SPARQL_ACCEPT = "application/sparql-results+json"

#: Declared explicitly so the queries also run on mirrors that do not predefine Wikidata's prefixes.
SPARQL_PREFIXES = (
    "PREFIX wd: <http://www.wikidata.org/entity/>\n"
    "PREFIX wdt: <http://www.wikidata.org/prop/direct/>\n"
    "PREFIX wikibase: <http://wikiba.se/ontology#>\n"
    "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
    "PREFIX skos: <http://www.w3.org/2004/02/skos/core#>\n"
)

#: Queries longer than this go by POST (URLs of many kilobytes are refused by some proxies).
_MAX_GET_QUERY = 1500

#: Default ``User-Agent`` (Wikimedia's policy: tool/version plus a way to contact the operator). Override it with
#: the ``user_agent`` argument or the ``ENVRE_USER_AGENT`` environment variable, ideally adding your own e-mail.
DEFAULT_USER_AGENT = (
    f"envre-hf/{__version__} (https://github.com/envre-hf/envre-hf; envre-hf@users.noreply.github.com)"
)

#: Decides whether a parsed JSON reply is a transient refusal; returns ``None`` for a good reply
#: or a short reason (e.g. ``"maxlag"``) for one to retry.
PayloadCheck = Callable[[Any], "str | None"]


@dataclass
class RequestStats:
    """What the client did, per URL: requests sent over the network, retries, cache hits."""

    sent: Counter = field(default_factory=Counter)
    retries: Counter = field(default_factory=Counter)
    cache_hits: Counter = field(default_factory=Counter)

    @property
    def total_sent(self) -> int:
        return sum(self.sent.values())


def describe_request(method: str, url: str, params: Mapping[str, Any], limit: int = 300) -> str:
    """A readable ``METHOD url?params`` for error messages (long queries shortened)."""
    text = f"{method.upper()} {redact_url(url)}?{urlencode(sorted((str(k), str(v)) for k, v in params.items()))}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failure_kind(exc: Exception, httpx: Any) -> str:
    """What a transport error means, in words."""
    if isinstance(exc, httpx.ConnectTimeout):
        return "no connection within the connect timeout (ENVRE_CONNECT_TIMEOUT)"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer within the read timeout (ENVRE_READ_TIMEOUT)"
    if isinstance(exc, (httpx.ConnectError, httpx.ProxyError)):
        refused = "refused" in str(exc).lower()
        return "connection refused (is the server running at that address?)" if refused else "could not connect"
    return "the connection dropped before the reply was complete"


class CachedJSONClient:
    """GET/POST JSON requests with retries (:class:`~envre_hf.net.bounds.RetryPolicy`) and the on-disk reply cache
    (``cache_dir/responses.sqlite``, or an open ``cache``), sent through the package's bounded transport
    (:func:`~envre_hf.net.client.bounded_client`). ``timeout``, ``max_retries`` and ``backoff_factor`` override
    ``bounds`` (default :meth:`~envre_hf.net.bounds.NetworkBounds.from_env`); ``user_agent`` defaults to
    ``$ENVRE_USER_AGENT``.
    """

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None,
        *,
        user_agent: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        backoff_factor: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        cache: ResponseCache | None = None,
        bounds: NetworkBounds | None = None,
    ):
        self.user_agent = user_agent or os.environ.get("ENVRE_USER_AGENT") or DEFAULT_USER_AGENT
        overrides = {"connect_timeout": timeout, "read_timeout": timeout, "max_retries": max_retries,
                     "backoff": backoff_factor}
        self.bounds = replace(bounds or NetworkBounds.from_env(), **{k: v for k, v in overrides.items() if v is not None})
        self.retry = RetryPolicy(self.bounds, sleep=sleep)
        if cache is None and cache_dir is not None:
            cache = ResponseCache.in_folder(cache_dir)
        self.cache = cache
        self.stats = RequestStats()
        self._session: Any = None

    @property
    def session(self) -> Any:
        """The ``httpx`` client, opened at the first request."""
        if self._session is None:
            from ..net.client import bounded_client  # lazy: httpx on the first request (start-up time)

            self._session = bounded_client(self.bounds, headers={"User-Agent": self.user_agent})
        return self._session

    def get_json(
        self,
        url: str,
        params: Mapping[str, Any],
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        retry_payload: PayloadCheck | None = None,
        error_payload: PayloadCheck | None = None,
    ) -> Any:
        """The parsed JSON reply to ``method url`` with ``params`` (query string for GET, form body for POST).

        ``retry_payload`` flags a transient refusal inside a 200 reply (retried, never cached); then
        ``error_payload`` flags a permanent error reply (raised at once, never cached).
        """
        from huggingface_hub.utils import httpx

        method = method.upper()
        if method not in ("GET", "POST"):
            raise ValueError(f"unsupported HTTP method {method!r}")
        key = cache_key(method, url, params)
        if self.cache is not None:
            body = self.cache.get(key)
            if body is not None:
                self.stats.cache_hits[url] += 1
                return json.loads(body)

        secrets = request_secrets(headers, params)
        what = redact(describe_request(method, url, params), secrets)

        def attempt(n: int) -> Any:
            if n:
                self.stats.retries[url] += 1
            self.stats.sent[url] += 1
            try:
                response = self.session.request(
                    method,
                    url,
                    params=params if method == "GET" else None,
                    data=params if method == "POST" else None,
                    headers=dict(headers or {}),
                )
            except ReplyTooSlow as exc:
                raise Transient(str(exc)) from None
            except (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.TooManyRedirects) as exc:  # retrying won't help
                raise HTTPRequestError(redact(f"request failed: {what}: {exc}", secrets)) from None
            except (httpx.TransportError, httpx.DecodingError) as exc:  # also mid-body
                raise Transient(redact(f"{_failure_kind(exc, httpx)} ({type(exc).__name__})", secrets)) from None
            body, status = response.text, response.status_code
            if status in RETRY_STATUSES:
                raise Transient(f"HTTP {status} {response.reason_phrase}",
                                parse_retry_after(response.headers.get("Retry-After")))
            if status >= 400:
                raise HTTPRequestError(
                    redact(f"HTTP {status} {response.reason_phrase} for {what}: {redact(body, secrets)[:200]!r}", secrets)
                )
            try:
                payload = json.loads(body)
            except ValueError as exc:
                looks = "an HTML page" if body.lstrip()[:1] == "<" else f"{len(body)} characters"
                raise Transient(f"broken JSON reply ({looks}; {exc})") from None
            if retry_payload is not None and (busy := retry_payload(payload)):
                raise Transient(f"server busy ({busy})")
            if error_payload is not None and (reason := error_payload(payload)):
                raise HTTPRequestError(f"error reply for {what}: {reason}")
            if self.cache is not None:
                self.cache.put(key, method, url, params, body)
            return payload

        try:
            return self.retry.run(attempt)
        except RetriesExhausted as exc:
            raise HTTPRequestError(
                f"{server_of(url)} failed: giving up after {exc.attempts} attempts: {what}: last problem: {exc.problem}"
            ) from None
        except RetryLater as exc:
            raise HTTPRequestError(f"{server_of(url)}: {what}: {exc}") from None

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        if self.cache is not None:
            self.cache.close()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_session": None}


def _action_api_busy(payload: Any) -> str | None:
    """``"maxlag"`` when the action API asks the client to wait (an error reply with HTTP 200)."""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        if payload["error"].get("code") == "maxlag":
            return f"maxlag: {payload['error'].get('info', 'replication lag')}"
    return None


def _action_api_error(payload: Any) -> str | None:
    """A description of any other action API error reply (permanent: bad parameters, unknown ids)."""
    if not isinstance(payload, dict):
        return f"unexpected reply of type {type(payload).__name__}"
    error = payload.get("error")
    return f"{error.get('code')}: {error.get('info', '')}" if isinstance(error, dict) else None


def _parse_entities(payload: Any, language: str) -> tuple[dict[str, EntityRecord | None], str | None]:
    """The records of a ``wbgetentities`` reply by key and by the ids redirected to them, or what is wrong with
    the reply."""
    entities = payload.get("entities") if isinstance(payload, dict) else None
    if not isinstance(entities, dict):
        return {}, "no 'entities' object"
    records: dict[str, EntityRecord | None] = {}
    for key, entity in entities.items():
        if isinstance(entity, dict):
            try:
                records[key] = parse_entity(entity, language)
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                return {}, f"malformed entity {key!r} ({exc!r})"
            redirect = entity.get("redirects")
            if isinstance(redirect, dict) and is_item_id(redirect.get("from")):
                records[redirect["from"]] = records[key]
    return records, None


def _sparql_error(payload: Any) -> str | None:
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), dict):
        return "not a SPARQL JSON results document (no 'results')"
    if not isinstance(payload["results"].get("bindings"), list):
        return "SPARQL results without a 'bindings' list"
    for i, row in enumerate(payload["results"]["bindings"]):
        if not isinstance(row, dict):
            return f"results.bindings[{i}] is not an object ({type(row).__name__})"
        for var, binding in row.items():
            if not (isinstance(binding, dict) and "value" in binding):
                return f"results.bindings[{i}] -> {var!r} is not an object with a 'value'"
    return None


def candidates_query(type_id: str, min_names: int, language: str, limit: int, offset: int) -> str:
    """The SPARQL text of one page of step 3 (items of item ``type_id`` with >= ``min_names`` names)."""
    return f"""{SPARQL_PREFIXES}SELECT ?item (COUNT(DISTINCT ?name) AS ?names) WHERE {{
  ?item wdt:P31 wd:Q{item_number(type_id)} .
  {{ ?item rdfs:label ?name }} UNION {{ ?item skos:altLabel ?name }}
  FILTER(LANG(?name) = "{language}")
}}
GROUP BY ?item
HAVING (COUNT(DISTINCT ?name) >= {int(min_names)})
ORDER BY ?item
LIMIT {int(limit)} OFFSET {int(offset)}
"""


def incoming_query(item_id: str) -> str:
    """SPARQL counting the statements of other items whose main value is ``item_id`` (an item id)."""
    item = f"wd:Q{item_number(item_id)}"
    return f"""{SPARQL_PREFIXES}SELECT (COUNT(?statement) AS ?n) WHERE {{
  ?statement ?ps {item} .
  ?property wikibase:statementProperty ?ps .
  ?subject ?p ?statement .
  ?property wikibase:claim ?p .
  FILTER(?subject != {item})
}}
"""


class WikidataHTTPKB(KnowledgeBase):
    """The :class:`KnowledgeBase` on Wikidata's public endpoints, or a mirror at other base URLs (docs/kb.md).

    ``cache_dir`` holds the reply cache (``None``: none, not recommended); ``maxlag`` goes with every action API
    call; step 3 fetches ``sparql_page_size`` rows a page, at most ``max_candidates`` per (type, min_names);
    ``count_incoming`` adds the statements of other items whose main value is the item to its popularity (one
    SPARQL query per item).
    """

    name = "wikidata-http"

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None,
        api_url: str = WIKIDATA_API_URL,
        sparql_url: str = WIKIDATA_SPARQL_URL,
        user_agent: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        *,
        backoff_factor: float | None = None,
        maxlag: int | None = 5,
        language: str = "en",
        sparql_page_size: int = 1000,
        max_candidates: int = 10_000,
        count_incoming: bool = False,
        client: CachedJSONClient | None = None,
    ):
        self.api_url = api_url
        self.sparql_url = sparql_url
        #: the URLs as they may be written (card, statistics, manifest, errors): no password
        self.public_api_url, self.public_sparql_url = redact_url(api_url), redact_url(sparql_url)
        self.maxlag = maxlag
        self.language = language
        self.sparql_page_size = max(1, int(sparql_page_size))
        self.max_candidates = max(0, int(max_candidates))
        self.count_incoming = count_incoming
        self.client = client or CachedJSONClient(
            cache_dir, user_agent=user_agent, timeout=timeout, max_retries=max_retries, backoff_factor=backoff_factor
        )
        self._entities: dict[str, EntityRecord | None] = {}
        self._candidates: dict[tuple[str, int], list[str]] = {}
        self._incoming: dict[str, int] = {}

    def _get_json(self, url: str, params: dict[str, Any], **kwargs: Any) -> Any:
        try:
            return self.client.get_json(url, params, **kwargs)
        except HTTPRequestError as exc:  # the KB's callers handle KnowledgeBaseError only
            raise KnowledgeBaseError(str(exc)) from exc

    def _action(self, params: dict[str, Any], check: PayloadCheck | None = None) -> Any:
        """An action API reply; ``check(payload)`` names what is wrong with its shape (then raised, never cached:
        a cached bad reply would fail every rerun of the build the same way)."""
        params = {**params, "format": "json"}
        if self.maxlag is not None:
            params["maxlag"] = self.maxlag
        return self._get_json(self.api_url, params, retry_payload=_action_api_busy,
                              error_payload=lambda reply: _action_api_error(reply) or (check(reply) if check else None))

    def sparql(self, query: str) -> list[dict[str, Any]]:
        """The ``results.bindings`` of a SELECT query (GET, or POST for long queries)."""
        method = "GET" if len(query) <= _MAX_GET_QUERY else "POST"
        payload = self._get_json(
            self.sparql_url,
            {"query": query, "format": "json"},
            method=method,
            headers={"Accept": SPARQL_ACCEPT},
            error_payload=_sparql_error,
        )
        problem = _sparql_error(payload)
        if problem is not None:  # only a damaged cache gets here: fresh replies were checked before caching
            raise KnowledgeBaseError(f"SPARQL reply at {self.public_sparql_url}: {problem}")
        return payload["results"]["bindings"]

    def search(self, name: str) -> list[str]:
        """Item ids ``wbsearchentities`` returns for ``name`` (English, items), best first."""
        payload = self._action(
            {
                "action": "wbsearchentities",
                "search": name,
                "language": self.language,
                "uselang": self.language,
                "type": "item",
                "limit": 1,  # only the first hit is used
            },
            check=lambda reply: None if isinstance(reply.get("search"), list) else "no 'search' list",
        )
        return [hit["id"] for hit in payload["search"] if isinstance(hit, dict) and is_item_id(hit.get("id"))]

    def prefetch(self, item_ids: Iterable[str]) -> None:
        """Fetch the entity data of all ``item_ids`` not yet known, at most 50 ids per request."""
        wanted = sorted({i for i in item_ids if is_item_id(i) and i not in self._entities}, key=item_number)
        for start in range(0, len(wanted), MAX_IDS_PER_REQUEST):
            batch = wanted[start : start + MAX_IDS_PER_REQUEST]
            payload = self._action(
                {
                    "action": "wbgetentities",
                    "ids": "|".join(batch),
                    "props": "labels|aliases|claims",
                    "languages": self.language,
                },
                check=lambda reply: _parse_entities(reply, self.language)[1],
            )
            records, problem = _parse_entities(payload, self.language)
            if problem is not None:  # only a damaged cache gets here: fresh replies were checked before caching
                raise KnowledgeBaseError(f"wbgetentities reply for {batch[0]}..{batch[-1]} at {self.public_api_url}: {problem}")
            self._entities.update(records)
            for item in batch:  # ids the reply did not mention are unknown
                self._entities.setdefault(item, None)

    def entity(self, item_id: str) -> EntityRecord | None:
        """The item's record, or ``None`` when the item does not exist (or is not an item id)."""
        item = normalize_item_id(item_id)
        if item is not None and item not in self._entities:
            self.prefetch([item])
        return self._entities.get(item)  # None for a non-item id: no such key

    def link(self, doc: Document, entity_index: int) -> str | None:
        return link_by_name(doc, entity_index, lambda name: next(iter(self.search(name)), None))

    def types(self, item_id: str) -> list[str]:
        record = self.entity(item_id)
        return list(record.types) if record else []

    def demonyms(self, item_id: str) -> list[str]:
        """English P1549 demonyms, from the same entity request as the names."""
        record = self.entity(item_id)
        return list(record.demonyms) if record else []

    def names(self, item_id: str) -> list[str]:
        record = self.entity(item_id)
        return list(record.names) if record else []

    def candidates(self, type_id: str, min_names: int, exclude: frozenset[str] = frozenset()) -> list[Candidate]:
        key = (type_id, int(min_names))
        if key not in self._candidates:
            items: set[str] = set()
            offset = 0
            while len(items) < self.max_candidates:
                page = min(self.sparql_page_size, self.max_candidates - len(items))
                rows = self.sparql(candidates_query(type_id, min_names, self.language, page, offset))
                for row in rows:
                    item = normalize_item_id((row.get("item") or {}).get("value"))
                    if item is not None:
                        items.add(item)
                if len(rows) < page:
                    break
                offset += len(rows)
            self._candidates[key] = sorted(items, key=item_number)
        return [Candidate(item) for item in self._candidates[key] if item not in exclude]

    def popularity(self, item_id: str) -> int | None:
        record = self.entity(item_id)
        if record is None:
            return None
        if not self.count_incoming:
            return record.statements
        if record.item_id not in self._incoming:
            rows = self.sparql(incoming_query(record.item_id))
            try:
                self._incoming[record.item_id] = int(rows[0]["n"]["value"]) if rows else 0
            except (KeyError, TypeError, ValueError) as exc:
                raise KnowledgeBaseError(
                    f"incoming-statement count for {record.item_id} at {self.public_sparql_url}: "
                    f"unexpected reply {rows!r:.200}"
                ) from exc
        return record.statements + self._incoming[record.item_id]

    def snapshot_id(self) -> str:
        return f"{self.name}:{self.public_api_url}|{self.public_sparql_url}|{self.language}"

    def close(self) -> None:
        self.client.close()

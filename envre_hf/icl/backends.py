"""Chat backends: any OpenAI-compatible chat-completions endpoint, or a local ``transformers`` model.

Both take chat ``messages`` ([{"role", "content"}]) and return a :class:`Completion`. Responses go to
a persistent :class:`ResponseCache` (SQLite, keyed by a hash of model, messages and generation
parameters), so rerunning an evaluation costs nothing. The API key is read from an environment
variable and sent only in the ``Authorization`` header: it never enters logs, caches or reports.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import requests

from ..kb.http import parse_retry_after, redact, request_secrets

logger = logging.getLogger(__name__)

Messages = list[dict[str, str]]


class BackendError(RuntimeError):
    """The backend could not produce a completion (after retries, or a non-retryable error)."""


@dataclass
class Completion:
    """One model answer. ``usage``: token counts as the server reports them (may be empty)."""

    text: str
    usage: dict[str, Any] = field(default_factory=dict)
    cached: bool = False


class ChatBackend(Protocol):
    """What the ICL runner needs from a backend."""

    model: str

    def complete(self, messages: Messages) -> Completion: ...


def cache_key(model: str, messages: Messages, params: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of model, messages and generation parameters."""
    payload = json.dumps({"model": model, "messages": messages, "params": params}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    """A persistent key -> completion store in one SQLite file (safe across threads of one process)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        with self._lock, self._conn:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, text TEXT, usage TEXT, created REAL)"
            )

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute("SELECT text, usage FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else Completion(text=row[0], usage=json.loads(row[1] or "{}"), cached=True)

    def put(self, key: str, model: str, completion: Completion) -> None:
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                (key, model, completion.text, json.dumps(completion.usage), time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class OpenAIChatBackend:
    """POST ``{base_url}/chat/completions`` (OpenAI, vLLM, llama.cpp server, TGI, ...).

    Defaults: temperature 0, up to ``max_retries`` retries on 429, 5xx, connection errors and
    malformed replies, waiting ``Retry-After`` when the server sends it, else ``backoff * 2**attempt``
    seconds (at most ``max_backoff``). The key comes from ``$api_key_env`` (default ``OPENAI_API_KEY``);
    without it no ``Authorization`` header is sent (local servers usually need none).
    """

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        cache_path: str | os.PathLike | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.cache = ResponseCache(cache_path) if cache_path is not None else None
        self.session = session or requests.Session()
        self._sleep = sleep
        if not os.environ.get(api_key_env):
            logger.warning("environment variable %s is not set: requests are sent without an API key", api_key_env)

    @property
    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _wait(self, attempt: int, retry_after: float | None) -> None:
        delay = retry_after if retry_after is not None else self.backoff * (2**attempt)
        self._sleep(min(delay, self.max_backoff))

    def complete(self, messages: Messages) -> Completion:
        key = cache_key(self.model, messages, self.params)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        completion = self._request(messages)
        if self.cache is not None:
            self.cache.put(key, self.model, completion)
        return completion

    def _request(self, messages: Messages) -> Completion:
        url = f"{self.base_url}/chat/completions"
        body = {"model": self.model, "messages": messages, **self.params}
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            retry_after = None
            headers = self._headers()
            secrets = request_secrets(headers)  # a server may echo the key: never raise or log it
            try:
                resp = self.session.post(url, json=body, headers=headers, timeout=self.timeout)
            except requests.RequestException as err:
                last = f"connection error: {type(err).__name__}"
            else:
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                        text = data["choices"][0]["message"]["content"]
                        if not isinstance(text, str):
                            raise TypeError("content is not a string")
                        return Completion(text=text, usage=dict(data.get("usage") or {}))
                    except (ValueError, KeyError, IndexError, TypeError) as err:
                        last = f"malformed reply ({type(err).__name__}: {redact(str(err), secrets)[:200]})"
                elif resp.status_code == 429 or resp.status_code >= 500:
                    last = f"HTTP {resp.status_code}: {redact(resp.text, secrets)[:200]}"
                    retry_after = parse_retry_after(resp.headers.get("Retry-After"))
                else:
                    raise BackendError(f"{url} answered HTTP {resp.status_code}: {redact(resp.text, secrets)[:500]}")
            if attempt < self.max_retries:
                logger.info("chat completion attempt %d failed (%s); retrying", attempt + 1, last)
                self._wait(attempt, retry_after)
        raise BackendError(f"{url}: giving up after {self.max_retries + 1} attempts; last error: {last}")


class LocalBackend:
    """A local causal LM through ``transformers``: greedy decoding, the chat template when the
    tokenizer has one, else the message contents joined by blank lines. Prompts longer than the
    model's context keep their end (the test document and ``Triples:``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 256,
        name: str | None = None,
        cache_path: str | os.PathLike | None = None,
    ):
        self.hf_model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.model = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.cache = ResponseCache(cache_path) if cache_path is not None else None

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: str | None = None, **kwargs: Any) -> "LocalBackend":
        """Load model and tokenizer (safetensors only, no remote code)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        model = AutoModelForCausalLM.from_pretrained(name_or_path, use_safetensors=True)
        if device:
            model = model.to(device)
        return cls(model, tokenizer, name=name_or_path, **kwargs)

    def prompt_ids(self, messages: Messages) -> list[int]:
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            ids = list(ids)
        else:
            ids = tok("\n\n".join(m["content"] for m in messages) + "\n", add_special_tokens=True)["input_ids"]
        limit = getattr(self.hf_model.config, "max_position_embeddings", None) or getattr(
            self.hf_model.config, "n_positions", None
        )
        if limit and len(ids) + self.max_new_tokens > limit:
            keep = max(1, limit - self.max_new_tokens)
            logger.warning("prompt of %d tokens cut to its last %d (model context %d)", len(ids), keep, limit)
            ids = ids[-keep:]
        return ids

    def complete(self, messages: Messages) -> Completion:
        import torch

        params = {"max_new_tokens": self.max_new_tokens, "do_sample": False}
        key = cache_key(self.model, messages, params)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        ids = self.prompt_ids(messages)
        device = next(self.hf_model.parameters()).device
        input_ids = torch.tensor([ids], device=device)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        with torch.no_grad():
            out = self.hf_model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=pad,
            )
        new = out[0, len(ids) :].tolist()
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        completion = Completion(
            text=text, usage={"prompt_tokens": len(ids), "completion_tokens": len(new), "total_tokens": len(ids) + len(new)}
        )
        if self.cache is not None:
            self.cache.put(key, self.model, completion)
        return completion

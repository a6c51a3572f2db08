"""Chat backends (an OpenAI-compatible endpoint, a local ``transformers`` model): messages in, a :class:`Completion`
out, replies kept in the package's one reply cache (:class:`envre_hf.http.ResponseCache`); docs/icl.md."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError, InferenceTimeoutError
from huggingface_hub.utils import httpx  # httpx (huggingface_hub 1.x) or httpx2 (2.x): the transport's errors

from ..hub_client import configure_hub
from ..failures import Failure
from ..http import (
    RETRY_STATUSES,
    NetworkBounds,
    ReplyTooSlow,
    RetryLater,
    RetriesExhausted,
    ResponseCache,
    RetryPolicy,
    Transient,
    parse_retry_after,
    redact,
    redact_url,
    request_secrets,
)

logger = logging.getLogger(__name__)

Messages = list[dict[str, str]]


class BackendError(Failure):
    """The backend could not produce a completion (after retries, or a non-retryable error)."""


@dataclass
class Completion:
    """One model answer. ``usage``: token counts as the server reports them (may be empty)."""

    text: str
    usage: dict[str, Any] = field(default_factory=dict)
    cached: bool = False


class ChatBackend(Protocol):
    """What the ICL runner needs from a backend (``identity``, when a backend has it: see
    :func:`backend_identity`)."""

    model: str

    def complete(self, messages: Messages) -> Completion: ...


def backend_identity(backend: ChatBackend) -> dict[str, Any]:
    """Where and how a backend answers (``backend.identity``, else its model name): a resumed ICL run must keep
    it, so that one run is never answered by two servers or two settings."""
    identity = getattr(backend, "identity", None)
    return dict(identity) if identity is not None else {"model": backend.model}


def chat_cache_key(identity: dict[str, Any], messages: Messages) -> str:
    """SHA-256 of the canonical JSON of a backend's ``identity`` and the messages; the endpoint is part of it,
    as two servers may serve different weights under one model name (every TGI server calls its model ``tgi``)."""
    payload = json.dumps({**identity, "messages": messages}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def open_cache(cache: ResponseCache | str | os.PathLike | None) -> ResponseCache | None:
    """``cache`` as the shared reply cache: an open one, the path of its SQLite file, or ``None`` (no cache)."""
    if cache is None or isinstance(cache, ResponseCache):
        return cache
    return ResponseCache(cache)


def cached_complete(
    cache: ResponseCache | None, identity: dict[str, Any], where: str, messages: Messages,
    answer: Callable[[Messages], Completion],
) -> Completion:
    """The cached completion of ``messages`` (marked ``cached``), or ``answer(messages)``, then stored."""
    key = chat_cache_key(identity, messages)
    body = cache.get(key) if cache is not None else None
    if body is not None:
        data = json.loads(body)
        return Completion(text=data["text"], usage=dict(data.get("usage") or {}), cached=True)
    completion = answer(messages)
    if cache is not None:
        body = json.dumps({"text": completion.text, "usage": completion.usage}, ensure_ascii=False)
        cache.put(key, "CHAT", where, identity["params"], body)
    return completion


class OpenAIChatBackend:
    """Chat completions at ``{base_url}/chat/completions`` through ``huggingface_hub.InferenceClient``; transient
    failures are retried under :class:`~envre_hf.http.NetworkBounds` (honouring ``Retry-After``), other HTTP errors
    fail at once. The key comes from ``$api_key_env``; without it no ``Authorization`` header is sent."""

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        timeout: float = 120.0,
        max_retries: int | None = None,
        backoff: float = 1.0,
        cache_path: ResponseCache | str | os.PathLike | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.timeout = timeout
        # no jitter: one client asks one question at a time, and the waits stay predictable
        self.retry = RetryPolicy(NetworkBounds.from_env(max_retries=max_retries), backoff_factor=backoff,
                                 max_backoff=60.0, jitter=0.0, sleep=sleep)
        self.cache = open_cache(cache_path)
        if not os.environ.get(api_key_env):
            logger.warning("environment variable %s is not set: requests are sent without an API key", api_key_env)

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def params(self) -> dict[str, Any]:
        """The generation parameters sent with every request (and part of the cache key)."""
        optional = {"max_tokens": self.max_tokens, "seed": self.seed}
        return {"temperature": self.temperature, **{k: v for k, v in optional.items() if v is not None}}

    @property
    def identity(self) -> dict[str, Any]:
        """The endpoint (without a password: this is written to run_config.json and keys the reply cache), model
        and generation parameters (what a resumed run must keep)."""
        return {"endpoint": redact_url(self.url), "model": self.model, "params": self.params}

    def complete(self, messages: Messages) -> Completion:
        return cached_complete(self.cache, self.identity, self.url, messages, self._request)

    def _request(self, messages: Messages) -> Completion:
        token = os.environ.get(self.api_key_env) or None
        # a server may echo the key: it never reaches an error or a log line
        secrets = request_secrets({"Authorization": f"Bearer {token}"}) if token else []
        # Without a key, huggingface_hub would send the machine's Hugging Face token to whatever server base_url
        # names; a header set to None overrides it and is dropped, so no Authorization header goes out.
        headers = None if token else {"authorization": None}
        configure_hub()  # bounded waits; HF_HUB_OFFLINE does not block a non-Hub endpoint
        client = InferenceClient(base_url=self.base_url, api_key=token, timeout=self.timeout, headers=headers)

        def attempt(n: int) -> Completion:
            try:
                out = client.chat_completion(messages=messages, model=self.model, **self.params)
            except HfHubHTTPError as err:
                response = getattr(err, "response", None)
                status = getattr(response, "status_code", None)
                try:
                    body = redact(response.text if response is not None else "", secrets)
                except Exception:  # a streamed body that was never read
                    body = ""
                if status is None or status in RETRY_STATUSES:
                    retry_after = parse_retry_after(response.headers.get("Retry-After")) if response is not None else None
                    raise Transient(f"HTTP {status}: {body[:200]}", retry_after) from None
                raise BackendError(f"{self.url} answered HTTP {status}: {body[:500]}") from None
            except ReplyTooSlow as err:
                raise Transient(str(err)) from None
            except (InferenceTimeoutError, httpx.TimeoutException) as err:
                raise Transient(f"timeout after {self.timeout:g} s ({type(err).__name__})") from None
            except httpx.TransportError as err:
                raise Transient(f"connection error: {type(err).__name__}") from None
            except ValueError as err:  # the reply is not JSON, or not a chat completion
                raise Transient(f"malformed reply ({type(err).__name__}: {redact(str(err), secrets)[:200]})") from None
            try:
                text = out.choices[0].message.content
            except (AttributeError, IndexError, TypeError) as err:
                raise Transient(f"malformed reply ({type(err).__name__}: no choices[0].message)") from None
            if not isinstance(text, str):
                raise Transient("malformed reply (content is not a string)")
            return Completion(text=text, usage=dict(out.usage or {}))

        def on_retry(n: int, problem: str) -> None:
            logger.info("chat completion attempt %d failed (%s); retrying", n + 1, problem)

        try:
            return self.retry.run(attempt, on_retry)
        except RetryLater as exc:
            raise BackendError(f"{self.url}: {exc}") from None
        except RetriesExhausted as exc:
            raise BackendError(f"{self.url}: giving up after {exc.attempts} attempts; last error: {exc.problem}") from None


class LocalBackend:
    """A local causal LM through ``transformers``: greedy decoding, the chat template when the tokenizer has one;
    prompts longer than the context keep their end (the test document and ``Triples:``). Replies are cached
    under ``name`` (default: where it was loaded from): a model retrained in place needs a new one."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 256,
        name: str | None = None,
        cache_path: ResponseCache | str | os.PathLike | None = None,
    ):
        self.hf_model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        known = name or getattr(model.config, "_name_or_path", "")
        self.model = known or type(model).__name__
        if cache_path is not None and not known:
            # the name is the model's identity in the reply cache: two unnamed models of one class would
            # answer each other's prompts from it
            raise ValueError(
                f"a LocalBackend with a reply cache needs a name for its {type(model).__name__} (name=...): the "
                "cache keys replies by it"
            )
        self.cache = open_cache(cache_path)
        limit = self.context_length
        if limit and limit <= max_new_tokens:  # else every prompt would be cut to nothing and F1 be a silent 0
            raise ValueError(
                f"{self.model}: a context of {limit} tokens cannot hold a prompt and {max_new_tokens} new tokens; "
                "lower max_new_tokens or use a model with a longer context"
            )

    @property
    def context_length(self) -> int | None:
        """The model's context in tokens (None when its config does not say)."""
        config = self.hf_model.config
        return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)

    @classmethod
    def from_pretrained(cls, name_or_path: str, **kwargs: Any) -> "LocalBackend":
        """Load model and tokenizer (safetensors only, no remote code); a base model is refused before its
        weights are loaded (given chat messages joined as text, it answers nothing useful)."""
        # torch/transformers only for the local backend: an endpoint run (and `envre icl --help`) never loads them
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ..models.loading import no_checkpoint_code  # lazy: as transformers, for the local backend only

        with no_checkpoint_code(name_or_path):
            tokenizer = AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=False)
            if not getattr(tokenizer, "chat_template", None):
                raise ValueError(
                    f"{name_or_path}: its tokenizer has no chat template; expected a chat (instruction-tuned) "
                    "model, e.g. Qwen/Qwen2.5-0.5B-Instruct"
                )
            model = AutoModelForCausalLM.from_pretrained(name_or_path, use_safetensors=True, trust_remote_code=False)
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
        limit = self.context_length
        if limit and len(ids) + self.max_new_tokens > limit:
            keep = max(1, limit - self.max_new_tokens)
            logger.warning("prompt of %d tokens cut to its last %d (model context %d)", len(ids), keep, limit)
            ids = ids[-keep:]
        return ids

    @property
    def identity(self) -> dict[str, Any]:
        """``transformers``, the model's name and the generation parameters (what a resumed run must keep)."""
        return {"endpoint": "transformers", "model": self.model,
                "params": {"max_new_tokens": self.max_new_tokens, "do_sample": False}}

    def complete(self, messages: Messages) -> Completion:
        return cached_complete(self.cache, self.identity, f"transformers:{self.model}", messages, self._generate)

    def _generate(self, messages: Messages) -> Completion:
        import torch  # see from_pretrained: loaded only when a local model runs

        ids = self.prompt_ids(messages)
        device = next(self.hf_model.parameters()).device
        input_ids = torch.tensor([ids], device=device)
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
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
        return Completion(
            text=text, usage={"prompt_tokens": len(ids), "completion_tokens": len(new), "total_tokens": len(ids) + len(new)}
        )

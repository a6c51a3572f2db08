"""Chat backends (an OpenAI-compatible endpoint, a local ``transformers`` model): messages in, a :class:`Completion`
out, replies kept in the package's one reply cache (:class:`envre_hf.replies.ResponseCache`); docs/icl.md."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..net.bounds import (RETRY_STATUSES, NetworkBounds, ReplyTooSlow, RetriesExhausted, RetryLater, RetryPolicy,
                          Transient, parse_retry_after)
from ..net.client import bounded_client, httpx
from ..failures import Failure
from ..redaction import redact, redact_url, request_secrets
from ..replies import ResponseCache

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


def cached_completions(
    cache: ResponseCache | None, identity: dict[str, Any], where: str, batch: Sequence[Messages],
    answer: Callable[[list[Messages]], list[Completion]],
) -> list[Completion]:
    """The completion of each messages of ``batch``: from the cache (marked ``cached``), else from one
    ``answer(the missing ones)`` call, then stored."""
    keys = [chat_cache_key(identity, messages) for messages in batch]
    bodies = [cache.get(key) if cache is not None else None for key in keys]
    missing = [i for i, body in enumerate(bodies) if body is None]
    fresh = dict(zip(missing, answer([batch[i] for i in missing]) if missing else []))
    out = []
    for i, (key, body) in enumerate(zip(keys, bodies)):
        if body is not None:
            data = json.loads(body)
            out.append(Completion(text=data["text"], usage=dict(data.get("usage") or {}), cached=True))
            continue
        if cache is not None:
            reply = json.dumps({"text": fresh[i].text, "usage": fresh[i].usage}, ensure_ascii=False)
            cache.put(key, "CHAT", where, identity["params"], reply)
        out.append(fresh[i])
    return out


class OpenAIChatBackend:
    """Chat completions at ``{base_url}/chat/completions``, the OpenAI-compatible JSON API (OpenAI, vLLM, TGI,
    Inference Providers), sent through the package's bounded client: a completion may take ``timeout`` seconds
    (default ``ENVRE_ICL_TIMEOUT``, 120 s). Transient failures are retried under one
    :class:`~envre_hf.net.bounds.RetryPolicy` that every thread using this backend shares (a ``Retry-After`` pauses
    them all); other HTTP errors fail at once. The key comes from ``$api_key_env``; without it no ``Authorization``
    header is sent."""

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        backoff: float | None = None,
        cache_path: ResponseCache | str | os.PathLike | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        bounds = NetworkBounds.from_env(max_retries=max_retries, backoff=backoff)
        self.timeout = timeout or bounds.icl_timeout
        self.limits = httpx.Timeout(self.timeout, connect=bounds.connect_timeout)  # the endpoint's bounded waits
        # no jitter: the waits stay predictable (a Retry-After already pauses every worker at once)
        self.retry = RetryPolicy(bounds, max_backoff=60.0, jitter=0.0, sleep=sleep)
        self.client = bounded_client(bounds)
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
        """The completion of ``messages``; safe to call from many threads at once."""
        return cached_completions(self.cache, self.identity, self.url, [messages], lambda b: [self._request(b[0])])[0]

    def _request(self, messages: Messages) -> Completion:
        token = os.environ.get(self.api_key_env) or None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        secrets = request_secrets(headers)  # a server may echo the key: it never reaches an error or a log line
        body = {"model": self.model, "messages": messages, **self.params, "stream": False}

        def attempt(n: int) -> Completion:
            try:
                response = self.client.post(self.url, json=body, headers=headers, timeout=self.limits,
                                            extensions={"reply_deadline": self.timeout})
            except ReplyTooSlow as err:
                raise Transient(str(err)) from None
            except httpx.TimeoutException as err:
                raise Transient(f"timeout after {self.timeout:g} s ({type(err).__name__})") from None
            except httpx.TransportError as err:
                raise Transient(f"connection error: {type(err).__name__}") from None
            text = redact(response.text, secrets)
            if response.status_code in RETRY_STATUSES:
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                raise Transient(f"HTTP {response.status_code}: {text[:200]}", retry_after)
            if response.status_code >= 400:
                raise BackendError(f"{self.url} answered HTTP {response.status_code}: {text[:500]}")
            try:
                reply = response.json()
                content, usage = reply["choices"][0]["message"]["content"], dict(reply.get("usage") or {})
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
                raise Transient(f"malformed reply ({type(err).__name__}: not a chat completion)") from None
            if not isinstance(content, str):
                raise Transient("malformed reply (content is not a string)")
            return Completion(text=content, usage=usage)

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
    prompts longer than the context keep their end (the test document and ``Triples:``). ``batch_size`` prompts are
    generated at once (left-padded: the same tokens as one at a time). Replies are cached under ``name`` (default:
    where it was loaded from): a model retrained in place needs a new one."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 256,
        name: str | None = None,
        cache_path: ResponseCache | str | os.PathLike | None = None,
        batch_size: int = 8,
    ):
        self.hf_model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
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
        return self.complete_batch([messages])[0]

    def complete_batch(self, batch: Sequence[Messages]) -> list[Completion]:
        """The completions of ``batch`` (at most ``batch_size`` prompts), those not cached generated together."""
        return cached_completions(self.cache, self.identity, f"transformers:{self.model}", batch, self._generate)

    def _generate(self, batch: list[Messages]) -> list[Completion]:
        import torch  # see from_pretrained: loaded only when a local model runs

        prompts = [self.prompt_ids(messages) for messages in batch]
        width, tok = max(map(len, prompts)), self.tokenizer
        pad = next((t for t in (tok.pad_token_id, tok.eos_token_id) if t is not None), 0)
        device = next(self.hf_model.parameters()).device
        # left padding, masked: each row's positions and greedy choices are those of the prompt alone
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts], device=device)
        with torch.no_grad():
            out = self.hf_model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=self.max_new_tokens,
                                         do_sample=False, pad_token_id=pad)
        stops = self.hf_model.generation_config.eos_token_id
        stops = set(stops if isinstance(stops, list) else [] if stops is None else [stops])
        completions = []
        for ids, row in zip(prompts, out[:, width:].tolist()):
            new = row[: next((i + 1 for i, t in enumerate(row) if t in stops), len(row))]  # the pads after the end go
            usage = {"prompt_tokens": len(ids), "completion_tokens": len(new), "total_tokens": len(ids) + len(new)}
            completions.append(Completion(text=tok.decode(new, skip_special_tokens=True), usage=usage))
        return completions

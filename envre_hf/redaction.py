"""Credentials never reach a message or a file: :func:`redact` for texts, :func:`redact_url` for recorded URLs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[REDACTED]"
_SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "x-auth-token")
_SECRET_PARAMS = ("key", "api_key", "apikey", "token", "access_token", "password", "secret")
#: Environment variables that hold credentials; their values are always redacted.
SECRET_ENV_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY")
#: Credentials this process was given (``--token``, the API key's variable): redacted wherever they appear.
_KNOWN_SECRETS: set[str] = set()

#: What a credential looks like in any text: Hugging Face tokens, ``Authorization:``/``Bearer``/``--token``/
#: ``token=`` values, and the password of ``scheme://user:password@host``.
_SECRET_PATTERNS = (
    (re.compile(r"\bhf_[A-Za-z0-9]{10,}"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{10,}"), REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{4,}"), r"\1\2" + REDACTED),
    (re.compile(r"(?i)((?:proxy-)?authorization|x-api-key|api[-_]?key)(['\"]?\s*[:=]\s*['\"]?)(?!\[REDACTED)[^\s'\",}]+"),
     r"\1\2" + REDACTED),
    (re.compile(r"(?i)(--token|--api-key|[?&](?:token|access_token|api_key|apikey|key|password|secret))([= ])[^\s&'\"]+"),
     r"\1\2" + REDACTED),
    (re.compile(r"([a-z][a-z0-9+.-]*://[^\s/:@]*):[^\s/@]*@"), r"\1:" + REDACTED + "@"),
)


def request_secrets(headers: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None) -> list[str]:
    """The credentials a request carries: auth header values (and the token after ``Bearer``), key/token params."""
    secrets = []
    for name, value in (headers or {}).items():
        if str(name).lower() in _SECRET_HEADERS and value:
            scheme, _, token = str(value).partition(" ")
            secrets += [str(value), token.strip()] if token and scheme.lower() in ("bearer", "token", "basic") else [str(value)]
    secrets += [str(v) for k, v in (params or {}).items() if str(k).lower() in _SECRET_PARAMS and v]
    return [s for s in secrets if len(s) >= 4]


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from every later message of this process (a ``--token`` given on the command line)."""
    if value and len(value) >= 4:
        _KNOWN_SECRETS.add(str(value))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every credential replaced by ``[REDACTED]``: the ``secrets`` a request carries
    (:func:`request_secrets`), those of this process, and anything that looks like one (:data:`_SECRET_PATTERNS`)."""
    text = str(text)
    known = {*secrets, *_KNOWN_SECRETS, *(os.environ.get(var, "") for var in SECRET_ENV_VARS)}
    for secret in sorted((s for s in known if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_url(url: str) -> str:
    """``url`` without its password (``user:password@`` keeps the user) and secret query parameters: what is
    written wherever a URL is recorded (cards, manifests, the reply cache and its keys)."""
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return redact(str(url))
    userinfo, at, host = parts.netloc.rpartition("@")
    netloc = f"{userinfo.split(':', 1)[0]}@{host}" if at and userinfo.split(":", 1)[0] else host
    return redact(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))

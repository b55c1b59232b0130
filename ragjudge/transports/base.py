"""The transport protocol: one request in, one ``Reply`` out, or a ``TransportError`` whose
``kind`` tells the chokepoint what to do (retry, give up on the row, stop the run)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ragjudge.types import Reply

# what went wrong, as the chokepoint decides on it
AUTH = "auth"                    # 401: fatal
PERMISSION = "permission"        # 403: fatal
NOT_FOUND = "not_found"          # 404 (unknown model or endpoint): fatal
QUOTA = "quota"                  # 429 saying the account's quota is spent (insufficient_quota): fatal
NO_KEY = "no_key"                # no API key configured: fatal
UNKNOWN_PROVIDER = "unknown_provider"  # fatal
RATE_LIMIT = "rate_limit"        # 429: retried, honouring Retry-After, retry-after-ms or "retry in Ns"
SERVER = "server"                # 5xx, 408, 409: retried
TIMEOUT = "timeout"              # no answer within judge.timeout: retried
CONNECT = "connect"              # the connection was refused or the host unknown: retried; fatal on the run's first call
DISCONNECTED = "disconnected"    # a connection dropped mid-request: retried
RESPONSE_FORMAT = "response_format"  # 400 rejecting response_format: asked once more without it
BAD_REQUEST = "bad_request"      # another 4xx: the row fails
TOKENS_EXCEEDED = "tokens_exceeded"  # a decision request over the model's token limit (System One): a row's metrics asked apart, else the row fails
OTHER = "other"                  # anything else: the row fails
PENDING = "pending"              # the call was handed to a provider's batch: no reply yet, the row waits (not retried)

FATAL = frozenset({AUTH, PERMISSION, NOT_FOUND, QUOTA, NO_KEY, UNKNOWN_PROVIDER})
RETRYABLE = frozenset({RATE_LIMIT, SERVER, TIMEOUT, CONNECT, DISCONNECTED})


def rejects_response_format(text: str) -> bool:
    """True when a 400's message says the server does not take ``response_format``."""
    text = text.lower()
    return any(word in text for word in ("response_format", "json_schema", "response format", "structured output"))


def message_text(content: Any) -> str | None:
    """A reply message's ``content`` as text: a string as it is; a list of parts (Mistral,
    Anthropic-style and OpenAI's multi-part replies: ``[{"type": "text", "text": "..."}]``) as
    its text parts joined; None for no content. Raises ``TransportError`` (``OTHER``: that row's
    error, naming the shape) for parts with no text or content of another type
    (simonw/llm-mistral#38: a list of parts ended the whole run with a TypeError)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        texts = [part["text"] if isinstance(part, dict) else part for part in content
                 if isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text"), str)
                                              and part.get("type", "text") in ("text", "output_text"))]
        if texts:
            return "".join(texts)
        kinds = sorted({str(part.get("type")) if isinstance(part, dict) else type(part).__name__ for part in content}) or ["none"]
        raise TransportError(OTHER, f"the reply's content is a list of {len(content)} part(s) of type {', '.join(kinds)} "
                                    "with no text part; the judge must answer in text")
    raise TransportError(OTHER, f"the reply's content is a {type(content).__name__}, not text")


class TransportError(Exception):
    """A request that got no usable reply. ``kind``: one of the kinds above; ``retry_after``:
    seconds the server asked to wait (None if it did not say); ``status``: the HTTP status if
    any. ``str(err)`` is one line, keys redacted."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status


@dataclass
class Request:
    """One chat-completion request, provider-neutral. ``logprobs``: ask for token
    log-probabilities (with the 10 top candidates); ``response_format``: an OpenAI
    ``json_schema`` format, or None to send none; ``timeout`` in seconds. ``key``: the call's
    cache key and ``ask`` 0, or 1 for the re-ask of an unreadable reply (not sent; a transport
    that names its calls, the batch's, reads them). ``questions`` and ``state``: what a decision
    model is asked (``transports.decision_models.DecisionTransport``); a chat transport ignores them."""

    messages: list[dict[str, Any]]
    temperature: float
    max_tokens: int
    response_format: dict[str, Any] | None = None
    seed: int | None = None
    logprobs: bool = False
    timeout: float = 120.0
    extra: dict[str, Any] = field(default_factory=dict)
    key: str | None = None
    ask: int = 0
    questions: list[Any] = field(default_factory=list)  # a decision model's request: its typed questions (``types.Question``)
    state: Any = None  # and the row's fields they are asked about (a decision model reads these, not ``messages``)


def chat_body(model: str, request: Request) -> dict[str, Any]:
    """The OpenAI chat-completions JSON body for ``request`` sent to ``model`` (the name the
    server knows, without ragjudge's ``openai/`` prefix): messages, temperature, max_tokens,
    and response_format, seed and log-probabilities (top 10) when the request asks for them."""
    out: dict[str, Any] = {"model": model, "messages": request.messages, "temperature": request.temperature,
                           "max_tokens": request.max_tokens}
    if request.response_format is not None:
        out["response_format"] = request.response_format
    if request.seed is not None:
        out["seed"] = request.seed
    if request.logprobs:
        out["logprobs"], out["top_logprobs"] = True, 10
    return out


class Transport:
    """How requests reach one model; every transport subclasses it. ``provider_model``: the model
    as its provider knows it (``provider/model``; part of the cache key). ``where``: the URL or
    place named in messages. ``free``: its calls cost nothing (the embedded judge).
    ``cacheable``: its replies may be cached (a batch's finding pass: not). ``key_env``: the
    variable its key is read from, where it is its own (a decision model's), for messages; None:
    the judge's ``api_key_env``.

    The defaults are a plain transport's: ``prepare`` loads nothing ahead, ``prepaid`` is false
    for every request, ``for_model`` answers every model with this same transport."""

    provider_model: str
    where: str
    free: bool = False
    cacheable: bool = True
    key_env: str | None = None

    def prepare(self) -> None:
        """Load what the first call needs (a client library) in the calling thread, before the
        calls start (``Model.prepare``). Optional: a call loads what it needs anyway."""

    def prepaid(self, request: Request) -> bool:
        """Whether ``request`` is answered with a reply already paid for (a batch's reply): the
        budget (``judge.max_cost``) never refuses it."""
        return False

    def for_model(self, provider_model: str) -> "Transport":
        """The transport for another model of a panel or cascade (``provider/model``): this one,
        unless a transport keeps each model apart (the test double, ``FakeTransport``)."""
        return self

    async def complete(self, request: Request) -> Reply:
        """Send ``request``; return its ``Reply`` or raise ``TransportError``."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close what the transport holds (connections, the embedded model's share)."""


OPENAI_BASE = "https://api.openai.com/v1"


def endpoint(settings: Any, provider_model: str) -> str | None:
    """The API base a call of ``settings.model`` (resolved as ``provider_model``) goes to,
    wherever it was given: ``judge.api_base`` (flag or config), else the provider's
    environment variable (``OPENAI_BASE_URL`` / ``OPENAI_API_BASE`` for ``openai/...`` and ``openai-decisions/...``,
    ``PROVIDER_API_BASE`` / ``PROVIDER_BASE_URL`` for another provider, as litellm reads
    them); None for the provider's own default (OpenAI's URL given in the environment counts
    as that) and for the embedded judge. Part of the cache key."""
    if settings.api_base:
        return settings.api_base
    provider = provider_model.partition("/")[0]
    if provider == "local" or not provider:
        return None
    if provider in ("openai", "openai-decisions"):  # OpenAI's Decisions API reads OpenAI's variables (transports.decision_models)
        found = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        return None if not found or found.rstrip("/") == OPENAI_BASE else found
    name = provider.upper().replace("-", "_")
    return os.environ.get(f"{name}_API_BASE") or os.environ.get(f"{name}_BASE_URL") or None

"""The fast path: OpenAI-compatible chat completions over one shared ``aiohttp.ClientSession``.

It serves ``openai/...`` models (and bare OpenAI model names), with or without
``judge.api_base``: OpenAI itself, vLLM, SGLang, llama.cpp's server, Ollama's ``/v1`` and
gateways. aiohttp does the HTTP; this module maps the protocol (request body, statuses,
``Retry-After``, usage). Prices come from litellm's price table read as data
(``ragjudge.prices``); litellm itself is never imported on this path.

Requests: ``POST {api_base}/chat/completions`` with ``model``, ``messages``, ``temperature``,
``max_tokens``, ``response_format``, ``seed``, ``logprobs`` / ``top_logprobs``; the key from
``judge.api_key_env``, else ``OPENAI_API_KEY`` (a server at ``api_base`` may need none). The
base URL is ``judge.api_base``, else ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE``, else OpenAI's.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from ragjudge.transports import base
from ragjudge.transports.base import OPENAI_BASE, Request, TransportError, chat_body, endpoint
from ragjudge.types import Reply, Usage
from ragjudge import prices
from ragjudge.http_errors import hard_quota, parse_retry_after, redact, retry_hint

PREFIX = "openai/"

# one session per event loop (ragjudge's own, in practice), shared by every transport
_SESSIONS: dict[int, list[Any]] = {}


def loop_session() -> Any:
    """The aiohttp ``ClientSession`` of the running event loop, made on first use (one connection
    pool per loop, shared by every transport of ours on it: chat and decision calls), counted once
    more for the caller; give it back with ``release_session``. Call from a coroutine."""
    import aiohttp

    loop = id(asyncio.get_running_loop())
    entry = _SESSIONS.get(loop)
    if entry is None or entry[0].closed:
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=30)
        entry = _SESSIONS[loop] = [aiohttp.ClientSession(connector=connector, json_serialize=json.dumps), 0]
    entry[1] += 1
    return entry[0]


async def release_session(session: Any) -> None:
    """One user fewer of ``session`` (from ``loop_session``); the last one closes it."""
    for loop, entry in list(_SESSIONS.items()):
        if entry[0] is session:
            entry[1] -= 1
            if entry[1] <= 0:
                _SESSIONS.pop(loop, None)
                await session.close()


def fast_model(settings: Any) -> str | None:
    """The name to send when ``settings.model`` takes the fast path, else None: ``openai/NAME``
    (not a reasoning model, whose parameters litellm maps), or a bare name that litellm's table
    lists as an OpenAI chat model; never with ``judge.transport: litellm``."""
    if getattr(settings, "transport", "auto") == "litellm":
        return None

    model = settings.model
    if model.startswith(PREFIX):
        name = model[len(PREFIX):]
    elif "/" not in model:
        row = prices.table().get(model)
        if not isinstance(row, dict) or row.get("litellm_provider") != "openai" or row.get("mode") != "chat":
            return None
        name = model
    else:
        return None
    if not name:
        return None
    row = prices.entry("openai", name) or {}
    if row.get("supports_reasoning"):
        return None
    return name


class OpenAIHTTPTransport(base.Transport):
    """``settings``: ``JudgeSettings`` whose model takes the fast path (``fast_model``)."""

    free = False

    def __init__(self, settings: Any) -> None:
        name = fast_model(settings)
        if name is None:
            raise ValueError(f"{settings.model} does not take the OpenAI-compatible fast path")
        self.settings = settings
        self.name = name
        self.provider_model = PREFIX + name
        base_url = endpoint(settings, self.provider_model) or OPENAI_BASE
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.where = base_url
        self._session: Any = None
        self._url: Any = None  # the parsed URL (yarl), made once
        self._header_cache: dict[str, str] | None = None
        self._timeouts: dict[float, Any] = {}

    def prepare(self) -> None:
        """Import aiohttp now, in the calling thread (``Model.prepare``)."""
        import aiohttp  # noqa: F401

    def _headers(self) -> dict[str, str]:
        """The request headers: the key read from the environment on the first call (an
        error, ``NO_KEY``, is raised again on every call until a key is there)."""
        if self._header_cache is None:
            self._header_cache = self._read_headers()
        return self._header_cache

    def _read_headers(self) -> dict[str, str]:
        env = self.settings.api_key_env
        key = os.environ.get(env) if env else os.environ.get("OPENAI_API_KEY")
        if not key and self.settings.api_base and not env:
            key = "sk-no-key-needed"  # OpenAI-compatible local servers often need no key
        if not key:
            raise TransportError(base.NO_KEY, f"no API key in {env or 'OPENAI_API_KEY'}")
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        for variable, header in (("OPENAI_ORGANIZATION", "OpenAI-Organization"), ("OPENAI_PROJECT", "OpenAI-Project")):
            if os.environ.get(variable) and not self.settings.api_base:
                headers[header] = os.environ[variable]
        return headers

    async def _client(self) -> Any:
        if self._session is None:
            self._session = loop_session()
        return self._session

    def body(self, request: Request) -> dict[str, Any]:
        """The JSON body of ``request``."""
        return chat_body(self.name, request)

    async def complete(self, request: Request) -> Reply:
        import aiohttp

        session = await self._client()
        headers = self._headers()
        payload = dumps(self.body(request))
        timeout = self._timeouts.get(request.timeout)
        if timeout is None:
            timeout = self._timeouts[request.timeout] = aiohttp.ClientTimeout(total=request.timeout)
        if self._url is None:
            from yarl import URL

            self._url = URL(self.url)
        try:
            async with session.post(self._url, data=payload, headers=headers, timeout=timeout) as response:
                raw = await response.read()
                status = response.status
                response_headers = response.headers
        except asyncio.TimeoutError:
            raise TransportError(base.TIMEOUT, f"no reply within {request.timeout:g} s from {self.where}") from None
        except aiohttp.InvalidURL as exc:
            raise TransportError(base.CONNECT, f"invalid URL {exc}") from None
        except aiohttp.ClientConnectorError as exc:  # its own text names "ssl:default" even for an http:// URL: the OS's reason alone
            raise TransportError(base.CONNECT, _one_line(exc.os_error) if getattr(exc, "os_error", None) else _one_line(exc)) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise TransportError(base.DISCONNECTED, _one_line(exc) or type(exc).__name__) from None
        if status != 200:
            raise _status_error(status, raw, response_headers)
        try:
            data = loads(raw)
        except ValueError:
            raise TransportError(base.SERVER, f"HTTP 200 with a body that is not a chat completion: {_snippet(raw)}") from None
        return reply_of(data, self.name)

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await release_session(session)


def reply_of(data: Any, name: str, batch: bool = False, provider: str = "openai") -> Reply:
    """A chat completion's JSON (``data``, parsed) as a ``Reply`` for the model asked for as
    ``name``: text, finish reason, log-probabilities, usage priced from the table (at the batch
    price with ``batch``: a line of a batch's output file), reasoning text. Raises
    ``TransportError`` (``SERVER``) for a body that is not a chat completion."""
    try:
        choice = data["choices"][0]
        counts = data.get("usage") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise TransportError(base.SERVER, f"HTTP 200 with a body that is not a chat completion: {_snippet(dumps(data) if isinstance(data, (dict, list)) else str(data).encode())}") from None
    prompt = int(counts.get("prompt_tokens") or 0)
    completion = int(counts.get("completion_tokens") or 0)
    cached = int(((counts.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)

    message = choice.get("message") or {}
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return Reply(
        text=base.message_text(message.get("content")),
        finish_reason=choice.get("finish_reason"),
        logprobs=choice.get("logprobs"),
        # no token counts (no usage object): unknown, not zero; the chokepoint estimates them
        usage=Usage(prompt, completion, prices.cost(provider, [data.get("model"), name], prompt, completion, cached, batch), 1,
                    estimated=prompt <= 0),
        reasoning=reasoning if isinstance(reasoning, str) and reasoning.strip() else None,
        batch=batch,
    )


def dumps(body: dict[str, Any]) -> bytes:
    """``body`` as JSON bytes: orjson (text as UTF-8), ``json`` for what orjson refuses (a lone
    surrogate, a number past 64 bits)."""
    try:
        import orjson

        return orjson.dumps(body)
    except (ImportError, TypeError):
        return json.dumps(body).encode("utf-8")


def loads(raw: bytes) -> Any:
    """A JSON reply body: orjson, ``json`` for what orjson refuses (NaN, Infinity); raises ``ValueError``."""
    try:
        import orjson

        return orjson.loads(raw)
    except ImportError:
        return json.loads(raw)
    except ValueError:
        return json.loads(raw)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return redact(text[0] if text else type(exc).__name__)[:300]


def _snippet(raw: bytes) -> str:
    return redact(raw[:200].decode("utf-8", "replace").replace("\n", " "))


def _status_error(status: int, raw: bytes, headers: Any) -> TransportError:
    """An HTTP error status -> ``TransportError`` of the kind the chokepoint acts on."""
    message, code = "", ""
    try:
        error = json.loads(raw).get("error")
        if isinstance(error, dict):
            message, code = str(error.get("message") or ""), str(error.get("code") or error.get("type") or "")
        elif error:
            message = str(error)
    except (ValueError, AttributeError):
        message = raw[:200].decode("utf-8", "replace")
    line = redact(f"HTTP {status}: {' '.join(message.split()) or 'no message'}")[:300]
    if status == 400 and base.rejects_response_format(message):
        return TransportError(base.RESPONSE_FORMAT, line, status=status)
    return status_error(status, line, parse_retry_after(headers), message, code)


def status_error(status: int, line: str, after: float | None, message: str = "", code: str = "") -> TransportError:
    """The kind of an HTTP error ``status`` as every transport of ours maps it (the chat
    completions' and the decision models'): 401 ``AUTH``, 403 ``PERMISSION``, 404 ``NOT_FOUND``,
    429 ``RATE_LIMIT`` after ``after`` seconds (or the message's "retry in Ns"; ``QUOTA`` when the
    account's quota is spent), 5xx, 408 and 409 ``SERVER``, any other ``BAD_REQUEST``. ``line``:
    the error's one line (keys redacted); ``message`` and ``code``: the body's, read for a 429."""
    if status == 401:
        return TransportError(base.AUTH, line, status=status)
    if status == 403:
        return TransportError(base.PERMISSION, line, status=status)
    if status == 404:
        return TransportError(base.NOT_FOUND, line, status=status)
    if status == 429:
        if hard_quota(code, message, after):  # the account's quota is spent: waiting does not help
            return TransportError(base.QUOTA, line, after, status)
        return TransportError(base.RATE_LIMIT, line, after if after is not None else retry_hint(message), status)
    if status >= 500 or status in (408, 409):
        return TransportError(base.SERVER, line, after, status)
    return TransportError(base.BAD_REQUEST, line, status=status)

"""Requests through litellm: every provider litellm knows (OpenAI, Anthropic, Azure, Bedrock,
Vertex, Ollama, vLLM ...). Cost comes from litellm's price table. litellm is imported when
this transport is built, never earlier (it takes seconds to import)."""

from __future__ import annotations

import copy
import os
from typing import Any

from ragjudge.transports import base
from ragjudge.http_errors import hard_quota, parse_retry_after, redact, retry_hint
from ragjudge.transports.base import endpoint, message_text, Request, TransportError
from ragjudge.types import Reply, Usage
from ragjudge.errors import ConfigError


def import_litellm() -> Any:
    """Import litellm configured for batch judging: the local cost map (no network at
    import), no debug banners, no telemetry."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


class LitellmTransport(base.Transport):
    """``settings``: ``JudgeSettings`` (model, api_base, api_key_env, timeout).

    Raises ``ConfigError`` (exit 2) when litellm finds no provider for the model string."""

    free = False

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self._litellm = import_litellm()
        self.provider_model = self.resolve(settings.model, settings.api_base)
        self.where = settings.api_base or self.provider_model

    @staticmethod
    def resolve(model: str, api_base: str | None) -> str:
        """``provider/model`` as litellm resolves ``model``. Raises ``ConfigError`` when it
        finds no provider."""
        try:
            name, provider, _, _ = import_litellm().get_llm_provider(model, api_base=api_base)
            return f"{provider}/{name}"
        except Exception:
            raise ConfigError(
                f"unknown provider in model '{model}'; use a litellm model string such as "
                "openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, ollama/llama3 or local/qwen2.5-coder-1.5b"
            ) from None

    def _api_key(self) -> str | None:
        if self.settings.api_key_env:
            return os.environ.get(self.settings.api_key_env)
        if self.settings.api_base and self.provider_model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            return "sk-no-key-needed"  # OpenAI-compatible local servers often need no key
        return None

    async def complete(self, request: Request) -> Reply:
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": request.timeout,
            "max_retries": 0,
            "num_retries": 0,
            "drop_params": True,  # a provider that lacks a parameter (seed, logprobs) is sent the rest
        }
        if request.response_format is not None:
            kwargs["response_format"] = copy.deepcopy(request.response_format)  # shared by every row: litellm may change it
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.logprobs:
            kwargs["logprobs"], kwargs["top_logprobs"] = True, 10

        where = endpoint(self.settings, self.provider_model)  # the flag, config or environment's: the cache key's
        if where:
            kwargs["api_base"] = where
        key = self._api_key()
        if key:
            kwargs["api_key"] = key
        try:
            response = await self._litellm.acompletion(**kwargs)
        except Exception as exc:
            raise self._classify(exc) from None
        choice = response.choices[0]
        counts = getattr(response, "usage", None)
        prompt = int(getattr(counts, "prompt_tokens", 0) or 0)
        completion = int(getattr(counts, "completion_tokens", 0) or 0)
        reasoning = getattr(choice.message, "reasoning_content", None) or getattr(choice.message, "reasoning", None)
        return Reply(
            text=message_text(getattr(choice.message, "content", None)),
            finish_reason=getattr(choice, "finish_reason", None),
            logprobs=getattr(choice, "logprobs", None),
            # no token counts (no usage object): unknown, not zero; the chokepoint estimates them
            usage=Usage(prompt, completion, self._cost(response), 1, estimated=prompt <= 0),
            reasoning=reasoning if isinstance(reasoning, str) and reasoning.strip() else None,
        )

    def _cost(self, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")  # litellm prices every response once already
        if cost is None and "response_cost" not in hidden:
            try:
                cost = self._litellm.completion_cost(completion_response=response)
            except Exception:
                cost = None
        return None if cost is None else float(cost)

    def _classify(self, exc: Exception) -> TransportError:
        """litellm's exception -> a ``TransportError`` of the neutral kind."""
        litellm = self._litellm
        line = first_line(exc)
        text = str(exc).lower()
        status = getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        after = retry_after(exc)
        if isinstance(exc, litellm.AuthenticationError):
            return TransportError(base.AUTH, line, status=status)
        if any(s in text for s in ("missing credentials", "api_key client option must be set", "no api key", "api key not found")):
            return TransportError(base.NO_KEY, line, status=status)
        if isinstance(exc, litellm.PermissionDeniedError):
            return TransportError(base.PERMISSION, line, status=status)
        if isinstance(exc, litellm.NotFoundError):
            return TransportError(base.NOT_FOUND, line, status=status)
        if isinstance(exc, litellm.RateLimitError):
            code = str(getattr(exc, "code", None) or "")
            if hard_quota(code, text, after):  # the account's quota is spent: waiting does not help
                return TransportError(base.QUOTA, line, after, status)
            return TransportError(base.RATE_LIMIT, line, after if after is not None else retry_hint(text), status)
        if isinstance(exc, litellm.BadRequestError) and "llm provider not provided" in text:
            return TransportError(base.UNKNOWN_PROVIDER, line, status=status)
        if isinstance(exc, litellm.Timeout):
            return TransportError(base.TIMEOUT, line, after, status)
        if _is_connection_error(exc, litellm):
            return TransportError(base.CONNECT if _never_connected(exc) else base.DISCONNECTED, line, after, status)
        if isinstance(exc, (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError)):
            return TransportError(base.SERVER, line, after, status)
        if status is not None and (status >= 500 or status in (408, 409)):
            return TransportError(base.SERVER, line, after, status)
        if status == 429:
            if hard_quota(str(getattr(exc, "code", None) or ""), text, after):
                return TransportError(base.QUOTA, line, after, status)
            return TransportError(base.RATE_LIMIT, line, after if after is not None else retry_hint(text), status)
        if isinstance(exc, litellm.BadRequestError) or status == 400:
            kind = base.RESPONSE_FORMAT if base.rejects_response_format(text) else base.BAD_REQUEST
            return TransportError(kind, line, status=status)
        return TransportError(base.OTHER, line, status=status)

    async def aclose(self) -> None:
        return None


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, keys redacted, at most 300 characters."""
    text = str(getattr(exc, "message", None) or exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    line = line.replace(" Traceback (most recent call last):", "").strip()  # litellm appends it to some messages' first line
    return redact(line)[:300]


def retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked to wait, from the error's response headers; None if none."""
    sources = [getattr(exc, "headers", None), getattr(exc, "litellm_response_headers", None)]
    response = getattr(exc, "response", None)
    sources.append(getattr(response, "headers", None))
    for headers in sources:
        if not headers:
            continue
        try:
            found = parse_retry_after(headers)
        except AttributeError:
            continue
        if found is not None:
            return found
    return None


def _is_connection_error(exc: BaseException, litellm: Any) -> bool:
    """True for refused / dropped connections, which litellm may report as APIConnectionError
    or as InternalServerError('Connection error.')."""
    if isinstance(exc, litellm.APIConnectionError):
        return True
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, (ConnectionError, OSError)) or type(seen).__name__ in ("ConnectError", "APIConnectionError"):
            return True
        seen = seen.__cause__ or seen.__context__
    return "connection error" in str(exc).lower()


def _never_connected(exc: BaseException) -> bool:
    """True when the chain of causes shows a connection that was never made (refused, host
    unknown) rather than one that dropped."""
    import socket

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, (ConnectionRefusedError, socket.gaierror)) or type(seen).__name__ in ("ConnectError", "ClientConnectorError"):
            return True
        seen = seen.__cause__ or seen.__context__
    text = str(exc).lower()
    return any(s in text for s in ("connection refused", "connect call failed", "name or service not known", "nodename nor servname"))

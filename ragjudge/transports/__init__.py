"""Transports: how one chat-completion request reaches a judge model.

``base`` defines the request, the neutral error kinds and the ``Transport`` protocol; the
model chokepoint (``ragjudge.model``) owns everything around a request (cache, limits,
retries). ``openai_http`` is the fast path for OpenAI-compatible servers (aiohttp, no
litellm); ``litellm`` serves every other provider; ``local`` the embedded judge, in-process.
"""

from __future__ import annotations

import os
from typing import Any

OPENAI_BASE = "https://api.openai.com/v1"


def choose(settings: Any, cache_dir: str | None = None) -> Any:
    """The transport for ``settings.model``: the embedded judge for ``local/...``; with
    ``judge.transport: auto``, the aiohttp fast path for OpenAI-compatible models
    (``openai_http.fast_model``); litellm for every other provider."""
    if settings.model.startswith("local/"):
        from ragjudge.transports.local import LocalTransport

        return LocalTransport(settings, cache_dir)
    from ragjudge.transports.openai_http import OpenAIHTTPTransport, fast_model

    if fast_model(settings) is not None:
        return OpenAIHTTPTransport(settings)
    from ragjudge.transports.litellm import LitellmTransport

    return LitellmTransport(settings)


def resolve_model(settings: Any) -> str:
    """``provider/model`` for ``settings.model`` as its transport resolves it (part of the
    cache key), without building the transport. Raises ``ConfigError`` for an unknown provider."""
    if settings.model.startswith("local/"):
        return settings.model
    from ragjudge.transports.openai_http import PREFIX, fast_model

    name = fast_model(settings)
    if name is not None:
        return PREFIX + name
    from ragjudge.transports.litellm import LitellmTransport

    return LitellmTransport.resolve(settings.model, settings.api_base)


def endpoint(settings: Any, provider_model: str) -> str | None:
    """The API base a call of ``settings.model`` (resolved as ``provider_model``) goes to,
    wherever it was given: ``judge.api_base`` (flag or config), else the provider's
    environment variable (``OPENAI_BASE_URL`` / ``OPENAI_API_BASE`` for ``openai/...``,
    ``PROVIDER_API_BASE`` / ``PROVIDER_BASE_URL`` for another provider, as litellm reads
    them); None for the provider's own default (OpenAI's URL given in the environment counts
    as that) and for the embedded judge. Part of the cache key."""
    if settings.api_base:
        return settings.api_base
    provider = provider_model.partition("/")[0]
    if provider == "local" or not provider:
        return None
    if provider == "openai":
        found = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        return None if not found or found.rstrip("/") == OPENAI_BASE else found
    name = provider.upper().replace("-", "_")
    return os.environ.get(f"{name}_API_BASE") or os.environ.get(f"{name}_BASE_URL") or None

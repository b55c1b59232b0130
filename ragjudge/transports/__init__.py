"""Transports: how one chat-completion request reaches a judge model.

``base`` defines the request, the neutral error kinds and the ``Transport`` protocol; the
model chokepoint (``ragjudge.model``) owns everything around a request (cache, limits,
retries). ``litellm`` serves every provider litellm knows; ``local`` the embedded judge,
in-process.
"""

from __future__ import annotations
from typing import Any


def choose(settings: Any, cache_dir: str | None = None) -> Any:
    """The transport for ``settings.model``: the embedded judge for ``local/...``, litellm for
    every other provider."""
    if settings.model.startswith("local/"):
        from ragjudge.transports.local import LocalTransport

        return LocalTransport(settings, cache_dir)
    from ragjudge.transports.litellm import LitellmTransport

    return LitellmTransport(settings)


def resolve_model(settings: Any) -> str:
    """``provider/model`` for ``settings.model`` as its transport resolves it (part of the
    cache key), without building the transport. Raises ``ConfigError`` for an unknown provider."""
    if settings.model.startswith("local/"):
        return settings.model
    from ragjudge.transports.litellm import LitellmTransport

    return LitellmTransport.resolve(settings.model, settings.api_base)

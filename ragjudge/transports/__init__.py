"""Transports: how one chat-completion request reaches a judge model.

``base`` defines the request, the neutral error kinds and the ``Transport`` protocol; the
model chokepoint (``ragjudge.model``) owns everything around a request (cache, limits,
retries). ``openai_http`` is the fast path for OpenAI-compatible servers (aiohttp, no
litellm); ``litellm`` serves every other provider; ``local`` the embedded judge, in-process.
A batch run (``ragjudge.run.batch``) calls through ``batch`` (the manifest, and a transport that
answers from a batch's replies), over ``openai_batch`` and ``anthropic_batch`` (the providers'
batch APIs, aiohttp).
"""

from __future__ import annotations

from typing import Any

from ragjudge.transports.base import OPENAI_BASE, endpoint  # re-exported: their place is base, which every transport imports
from ragjudge.transports.openai_http import fast_model, OpenAIHTTPTransport, PREFIX
from ragjudge.transports.litellm import LitellmTransport
from ragjudge.transports.local import LocalTransport
from ragjudge.transports.decision_models import DecisionTransport, decision_model

__all__ = ["OPENAI_BASE", "choose", "decision_model", "endpoint", "resolve_model"]


def choose(settings: Any, cache_dir: str | None = None) -> Any:
    """The transport for ``settings.model``: the embedded judge for ``local/...``; with
    ``judge.transport: auto``, the aiohttp fast path for OpenAI-compatible models
    (``openai_http.fast_model``); a decision model (``openai-decisions/...``, ``systemone/...``:
    ``decision_models.DecisionTransport``); litellm for every other provider."""
    if settings.model.startswith("local/"):
        return LocalTransport(settings, cache_dir)

    if decision_model(settings.model):
        return DecisionTransport(settings)

    if fast_model(settings) is not None:
        return OpenAIHTTPTransport(settings)

    return LitellmTransport(settings)


def resolve_model(settings: Any) -> str:
    """``provider/model`` for ``settings.model`` as its transport resolves it (part of the
    cache key), without building the transport. Raises ``ConfigError`` for an unknown provider."""
    if settings.model.startswith("local/") or decision_model(settings.model):
        return settings.model

    name = fast_model(settings)
    if name is not None:
        return PREFIX + name

    return LitellmTransport.resolve(settings.model, settings.api_base)

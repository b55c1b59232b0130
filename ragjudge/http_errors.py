"""Helpers for provider errors that both the model chokepoint and the transports use: keys
redacted from messages, and the wait a server asks for (headers or the message's own words).

It sits with ``types`` and ``errors`` at the bottom of the layers and imports no other
ragjudge module, so ``ragjudge.model`` and ``ragjudge.transports`` both may import it.
"""

from __future__ import annotations

import os
import re
from typing import Any

RETRY_AFTER_MAX_S = 120.0

_SECRET_RE = re.compile(r"(sk-[A-Za-z0-9_\-*]{4,}|Bearer\s+[A-Za-z0-9._\-]+)")
# "Please retry in 1s", "retry in 12.5 seconds", "try again in 20ms", "retry after 3 s"
_HINT_RE = re.compile(r"(?:re)?try\s+(?:again\s+)?(?:in|after)\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec|secs|seconds?)\b", re.I)


def redact(text: str) -> str:
    """Remove API keys (values of *_API_KEY / *_TOKEN / *_KEY variables, sk-... and Bearer tokens)."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and (name.endswith("_API_KEY") or name.endswith("_TOKEN") or name.endswith("_KEY")):
            text = text.replace(value, "***")
    return _SECRET_RE.sub("***", text)


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from response headers: ``retry-after-ms`` / ``x-ms-retry-after-ms``
    (milliseconds, Azure OpenAI), else ``Retry-After`` (seconds or an HTTP date); capped at
    ``RETRY_AFTER_MAX_S``; None when no header says."""
    for name in ("retry-after-ms", "x-ms-retry-after-ms"):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, min(float(value) / 1000.0, RETRY_AFTER_MAX_S))
            except (TypeError, ValueError):
                pass
    value = headers.get("retry-after")
    if value is None:
        value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, min(float(value), RETRY_AFTER_MAX_S))
    except (TypeError, ValueError):
        from datetime import datetime, timezone
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(str(value))
            return max(0.0, min((when - datetime.now(timezone.utc)).total_seconds(), RETRY_AFTER_MAX_S))
        except (TypeError, ValueError):
            return None


def retry_hint(message: str) -> float | None:
    """Seconds to wait that an error message asks for in words ("Please retry in 1s", "try
    again in 20ms", "retry after 3 seconds"), capped at ``RETRY_AFTER_MAX_S``; None when it
    says none."""
    match = _HINT_RE.search(message or "")
    if match is None:
        return None
    seconds = float(match.group(1)) / (1000.0 if match.group(2).lower().startswith("m") else 1.0)
    return max(0.0, min(seconds, RETRY_AFTER_MAX_S))


def hard_quota(code: str, message: str, retry_after: float | None = None) -> bool:
    """True when a 429 says the account's quota is spent, which waiting does not cure: OpenAI's
    ``insufficient_quota`` code (or that word or "check your plan and billing" in the message),
    or a message about a "quota" that asks for no wait (no ``retry_after`` header, no "retry in
    Ns") and names no per-minute or per-second window. False for a rate limit to wait out,
    "Quota exceeded for metric: ...per_minute..." included."""
    text = (message or "").lower()
    if code == "insufficient_quota" or "insufficient_quota" in text or "check your plan and billing" in text:
        return True
    if "quota" not in text or retry_after is not None or retry_hint(text) is not None:
        return False
    return not any(word in text for word in ("per_minute", "per minute", "perminute", "per_second", "per second", "rate limit", "rate_limit"))

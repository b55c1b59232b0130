"""Model prices from litellm's bundled price table, read as data: the JSON file litellm ships
(``model_prices_and_context_window_backup.json``), found through the package's location
without importing litellm (which takes seconds).

``cost(provider, models, prompt_tokens, completion_tokens)`` -> USD, or None when no entry
prices the model; ``batch=True`` at the batch price (``batch_rates``). ``entry(provider, name)`` -> the table's row, or None.
``input_limit(provider_model)`` -> the model's ``max_input_tokens``, or None.
``TokenCounter(provider_model)`` counts the prompt tokens of messages (the dry run's count,
and the estimate for a reply that reports no usage).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE = "model_prices_and_context_window_backup.json"


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """litellm's price table (model -> entry); empty when litellm is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / TABLE
    try:
        raw = path.read_bytes()
    except OSError:
        return {}
    try:
        import orjson  # a third of json's time on the 1 MB table, which every hosted run reads

        return orjson.loads(raw)
    except ImportError:
        pass
    except ValueError:
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}


# The decision models' prices (USD per token; /work/shared/protocols/decision-models.md sections 0, 1.5, 2, 3),
# which litellm's table does not have: input only, output free. OpenAI Decisions: $0.10 / 1M input, cache reads free
# [apidog][dart-live]; TypeSafe Jev: $0.042 / 1M input [ts-models]; Upstage Solar Decide: $0.10 / 1M input, cached input
# at the same $0.10 [up-model]. ``judge.price`` overrides them.
_LUNA = {"input_cost_per_token": 0.10e-6, "output_cost_per_token": 0.0, "cache_read_input_token_cost": 0.0, "max_input_tokens": 1_050_000}
_JEV = {"input_cost_per_token": 0.042e-6, "output_cost_per_token": 0.0, "max_input_tokens": 64_000}
_SOLAR = {"input_cost_per_token": 0.10e-6, "output_cost_per_token": 0.0, "cache_read_input_token_cost": 0.10e-6, "max_input_tokens": 524_288}
DECISION_PRICES: dict[str, dict[str, Any]] = {
    "openai-decisions/gpt-6-luna": _LUNA,
    **{f"systemone/{name}": _JEV for name in ("jev-latest", "jev-preview", "jev-1.13.0")},
    "systemone/solar-decide": _SOLAR,
}


def entry(provider: str, name: str) -> dict[str, Any] | None:
    """The price-table row of ``name`` served by ``provider``: ``provider/name``, else ``name``
    when that row is the same provider's; None when the table has neither. The decision
    models' rows (``DECISION_PRICES``) come first."""
    own = DECISION_PRICES.get(f"{provider}/{name}")
    if own is not None:
        return own
    rows = table()
    found = rows.get(f"{provider}/{name}")
    if found is None:
        found = rows.get(name)
        if found is not None and found.get("litellm_provider") not in (provider, None):
            return None
    return found if isinstance(found, dict) else None


BATCH_DISCOUNT = 0.5  # OpenAI's, Azure OpenAI's and Anthropic's batch APIs charge half the direct price


def batch_rates(row: dict[str, Any]) -> tuple[float, float] | None:
    """USD per token (input, output) of a call through the provider's batch API: the table's
    ``input_cost_per_token_batches`` / ``output_cost_per_token_batches``, else half the direct
    price (``BATCH_DISCOUNT``, the providers' published discount); None when the row has no price."""
    if row.get("input_cost_per_token") is None:
        return None
    per_in = row.get("input_cost_per_token_batches")
    per_out = row.get("output_cost_per_token_batches")
    return (float(per_in) if per_in is not None else float(row["input_cost_per_token"]) * BATCH_DISCOUNT,
            float(per_out) if per_out is not None else float(row.get("output_cost_per_token") or 0.0) * BATCH_DISCOUNT)


def cost(provider: str, models: list[str | None], prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0,
         batch: bool = False) -> float | None:
    """USD for one call: the first of ``models`` (e.g. the model the reply names, then the one
    asked for) that the table prices, by input and output tokens as litellm's
    ``completion_cost`` counts them (cached prompt tokens at the cached rate where there is
    one; the long-context rate above 128k tokens where there is one). ``batch``: a call made
    through the provider's batch API, every token at ``batch_rates`` (no cached or long-context
    rate). None when no model is priced."""
    for name in models:
        if not name:
            continue
        row = entry(provider, name)
        if row is None or row.get("input_cost_per_token") is None:
            continue
        if batch:
            per_in, per_out = batch_rates(row)  # type: ignore[misc]
            return prompt_tokens * per_in + completion_tokens * per_out
        long_context = prompt_tokens > 128_000
        per_in = float((long_context and row.get("input_cost_per_token_above_128k_tokens")) or row["input_cost_per_token"])
        per_out = float((long_context and row.get("output_cost_per_token_above_128k_tokens")) or row.get("output_cost_per_token") or 0.0)
        per_cached = row.get("cache_read_input_token_cost")
        cached = min(cached_tokens, prompt_tokens) if per_cached is not None else 0
        return (prompt_tokens - cached) * per_in + cached * float(per_cached or 0.0) + completion_tokens * per_out
    return None


def input_limit(provider_model: str) -> int | None:
    """The most prompt tokens ``provider_model`` (``provider/name``) takes: the table's
    ``max_input_tokens``; None when the table does not say."""
    provider, _, name = provider_model.partition("/")
    row = entry(provider, name) if name else None
    limit = (row or {}).get("max_input_tokens")
    return int(limit) if isinstance(limit, (int, float)) and limit > 0 else None


def _litellm() -> Any:
    """litellm, imported as ``ragjudge.transports.litellm.import_litellm`` does: the local
    cost map (no network), no debug banners, no telemetry."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


class TokenCounter:
    """Prompt tokens of messages for ``provider_model``: its tokenizer where litellm ships one
    (OpenAI's models through tiktoken, Anthropic's; ``counted`` True), else 4 characters a
    token. litellm is imported at the first count that needs it, never before."""

    def __init__(self, provider_model: str) -> None:
        provider, _, name = provider_model.partition("/")
        row = entry(provider, name) or {}
        self.counted = provider in ("openai", "azure", "anthropic") and bool(row)
        self.model = name if provider == "openai" else provider_model
        self._litellm: Any = None
        self._encoding: Any = None if provider in ("openai", "azure") else False  # None: not loaded yet; False: none

    def _tiktoken(self) -> Any:
        """OpenAI's tokenizer for the model through tiktoken itself, read from the files litellm
        ships (no network), or False: importing litellm for its ``token_counter`` took 3 of a dry
        run's 4 seconds on the sample rows, where the run itself never imports it."""
        if self._encoding is None:
            self._encoding = False
            try:
                import importlib.util

                spec = importlib.util.find_spec("litellm")
                if spec is not None and spec.submodule_search_locations:
                    os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(spec.submodule_search_locations[0], "litellm_core_utils",
                                                                             "tokenizers"))
                import tiktoken

                self._encoding = tiktoken.encoding_for_model(self.model.rpartition("/")[2])
            except Exception:  # noqa: BLE001 - an unknown model or no tokenizer file: litellm's way
                self._encoding = False
        return self._encoding

    def _openai_count(self, messages: list[dict[str, Any]]) -> int | None:
        """litellm's count for OpenAI's chat models: 3 tokens a message, 1 a name, 3 for the reply's
        priming, and each text field's tokens; None for content that is not text."""
        encoding = self._tiktoken()
        if not encoding:
            return None
        total = 3
        for message in messages:
            total += 3
            for key, value in message.items():
                if not isinstance(value, str):
                    return None
                total += len(encoding.encode(value, disallowed_special=()))
                if key == "name":
                    total += 1
        return total

    def __call__(self, messages: list[dict[str, Any]]) -> int:
        if self.counted:
            fast = self._openai_count(messages)
            if fast is not None:
                return fast
            if self._litellm is None:
                self._litellm = _litellm()
            try:
                return int(self._litellm.token_counter(model=self.model, messages=messages))
            except Exception:  # a tokenizer that cannot load offline: estimate instead
                self.counted = False
        return sum(len(str(m.get("content", ""))) for m in messages) // 4

    def text(self, text: str | None) -> int:
        """Tokens of one reply's text (0 for none)."""
        if not text:
            return 0
        if self.counted:
            encoding = self._tiktoken()
            if encoding:
                return len(encoding.encode(text, disallowed_special=()))
            if self._litellm is None:
                self._litellm = _litellm()
            try:
                return int(self._litellm.token_counter(model=self.model, text=text))
            except Exception:
                self.counted = False
        return max(1, len(text) // 4)

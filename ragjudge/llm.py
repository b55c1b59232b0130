"""The one place that calls a judge model: cache, concurrency limit, pacing, retries, usage.

Every judge call goes through ``JudgeClient.judge``: cache lookup, then one asyncio
semaphore shared by all rows and metrics (``judge.concurrency``), an optional
requests-per-minute pace (``judge.rpm``), and a bounded retry with exponential backoff and
jitter (tenacity) on retryable failures only: 429 (honouring ``Retry-After``), 5xx,
timeouts and dropped connections. Authentication, permission, not-found and
quota-exhausted errors are fatal: the client stops the run (``ProviderFatalError``, exit 3).
The first provider call of a run goes alone, so a bad key costs one call, not one per row.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from ragjudge.cache import ResponseCache, cache_key
from ragjudge.config import JudgeSettings
from ragjudge.errors import ProviderFatalError
from ragjudge.judges.base import ParseError, Prepared, Verdict, field_probabilities, field_probability, score_distribution

BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 30.0
RETRY_AFTER_MAX_S = 120.0
REASK = (
    "Your reply could not be read as the requested JSON object. Reply again with only that "
    "JSON object, with every required key."
)
_USAGE_KEYS = ("cached", "prompt_tokens", "completion_tokens", "cost_usd", "raw", "agreement")


def import_litellm():
    """Import litellm configured for batch judging: local cost map (no network at import),
    unsupported parameters dropped per provider, no debug banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.drop_params = True
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    from ragjudge import local

    local.register(litellm)
    return litellm


_SECRET_RE = re.compile(r"(sk-[A-Za-z0-9_\-*]{4,}|Bearer\s+[A-Za-z0-9._\-]+)")


def redact(text: str) -> str:
    """Remove API keys (values of *_API_KEY / *_TOKEN variables, sk-... and Bearer tokens)."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and (name.endswith("_API_KEY") or name.endswith("_TOKEN") or name.endswith("_KEY")):
            text = text.replace(value, "***")
    return _SECRET_RE.sub("***", text)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return redact(line)[:300]


def _retry_after(exc: BaseException) -> float | None:
    sources = [getattr(exc, "headers", None), getattr(exc, "litellm_response_headers", None)]
    response = getattr(exc, "response", None)
    sources.append(getattr(response, "headers", None))
    for headers in sources:
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if value is None:
            continue
        try:
            return max(0.0, min(float(value), RETRY_AFTER_MAX_S))
        except (TypeError, ValueError):
            from email.utils import parsedate_to_datetime
            from datetime import datetime, timezone

            try:
                when = parsedate_to_datetime(str(value))
                return max(0.0, min((when - datetime.now(timezone.utc)).total_seconds(), RETRY_AFTER_MAX_S))
            except (TypeError, ValueError):
                continue
    return None


class Pacer:
    """``judge.rpm``: at most ``rpm`` calls start per minute, evenly spaced on asyncio's
    clock (one every 60/rpm seconds, no bursts); ``rpm`` None: no waiting."""

    def __init__(self, rpm: float | None) -> None:
        self.rpm = rpm
        self._next = 0.0
        self._lock: asyncio.Lock | None = None

    async def wait(self) -> None:
        """Return when the next call may start."""
        if not self.rpm:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = asyncio.get_running_loop().time()
            if self._next > now:
                await asyncio.sleep(self._next - now)
            self._next = max(now, self._next) + 60.0 / self.rpm

    def restart(self) -> None:
        """Count the next interval from now: a call started later than it was paced."""
        if self.rpm:
            self._next = max(self._next, asyncio.get_running_loop().time() + 60.0 / self.rpm)


class JudgeClient:
    """Calls the judge model for prepared prompts; see the module docstring.

    ``settings``: ``JudgeSettings``; ``cache``: a ``ResponseCache`` or None (no caching).
    ``calls``: provider calls made (retries and re-asks included). ``fatal``: the
    ``ProviderFatalError`` that stopped the run, if any.
    """

    def __init__(self, settings: JudgeSettings, cache: ResponseCache | None = None) -> None:
        self.settings = settings
        self.cache = cache
        self.calls = 0
        self.fatal: ProviderFatalError | None = None
        self.stopping = False
        self._litellm = import_litellm()
        self._semaphore: asyncio.Semaphore | None = None
        self.pacer = Pacer(settings.rpm)
        self._probe_started = False
        self._probe_done: asyncio.Event | None = None
        self._provider_model = self._resolve_model()

    def _resolve_model(self) -> str:
        """``provider/model`` as litellm resolves it. Raises ``ConfigError`` (exit 2) for a
        model string with no known provider."""
        try:
            model, provider, _, _ = self._litellm.get_llm_provider(self.settings.model, api_base=self.settings.api_base)
            return f"{provider}/{model}"
        except Exception:
            from ragjudge.errors import ConfigError

            raise ConfigError(
                f"unknown provider in model '{self.settings.model}'; use a litellm model string such as "
                "openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, ollama/llama3 or local/qwen2.5-coder-1.5b"
            ) from None

    def _loop_state(self) -> None:
        if self._semaphore is None:
            # the embedded judge runs one prompt at a time: queueing more calls only ages them
            self._semaphore = asyncio.Semaphore(1 if self.is_local else self.settings.concurrency)
            self._probe_done = asyncio.Event()

    @property
    def is_local(self) -> bool:
        return self.settings.model.startswith("local/")

    def _api_key(self) -> str | None:
        if self.settings.api_key_env:
            return os.environ.get(self.settings.api_key_env)
        if self.settings.api_base and self._provider_model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            return "sk-no-key-needed"  # OpenAI-compatible local servers often need no key
        return None

    def temperature(self, prepared: Prepared) -> float:
        """Sampling temperature for ``prepared``: ``judge.temperature``, raised to 0.7 when
        ``judge.samples`` > 1 would otherwise draw the same reply N times. Completeness's
        first call (the ground truth's statements, ``mode`` "statements") is made once and
        shared by every sample, so it keeps ``judge.temperature``."""
        if self.settings.samples > 1 and self.settings.temperature == 0.0 and prepared.mode != "statements":
            return 0.7
        return self.settings.temperature

    def key(self, prepared: Prepared, version: str, sample: int) -> str:
        return cache_key(
            model=self._provider_model,
            api_base=self.settings.api_base,
            temperature=self.temperature(prepared),
            max_tokens=self.settings.max_tokens,
            seed=self.settings.seed,
            response_format=prepared.response_format,
            messages=prepared.messages,
            metric=prepared.metric,
            prompt_version=version,
            sample=sample if self.settings.samples > 1 else 0,
            logprobs=self.wants_logprobs(prepared),
        )

    def wants_logprobs(self, prepared: Prepared) -> bool:
        """Log-probabilities are asked for where ``judge.yes_threshold`` (reference-free
        sufficiency) or ``judge.fact_threshold`` (grounded) will read them."""
        if prepared.metric == "completeness":
            return prepared.mode != "statements" and (self.settings.expected_score or self.settings.coverage_score)
        if prepared.metric != "sufficiency":
            return False
        if prepared.mode == "reference_free":
            return self.settings.yes_threshold is not None
        return self.settings.fact_threshold is not None

    def from_cache(self, key: str) -> Verdict | None:
        """The cached verdict for ``key`` (cost 0, no tokens, ``cached`` True), or None."""
        if self.cache is None:
            return None
        hit = self.cache.get(key)
        if hit is None:
            return None
        verdict = Verdict(**hit["verdict"])
        verdict.cached, verdict.cost_usd, verdict.prompt_tokens, verdict.completion_tokens = True, 0.0, 0, 0
        return verdict

    async def judge(self, prepared: Prepared, parse: Callable[[str | None, Prepared], Verdict], version: str, sample: int = 0) -> Verdict:
        """One verdict for a prepared prompt: from the cache, or from the model.

        Returns an ok ``Verdict`` with usage (tokens; ``cost_usd`` in USD, None when the
        model has no price) or an error ``Verdict`` (truncated reply, unreadable after one
        re-ask, non-retryable provider error, retries exhausted) with the raw reply kept.
        Raises nothing for row-level failures; a fatal provider error sets ``self.fatal``.
        """
        self._loop_state()
        key = prepared.cache_key if sample == 0 and prepared.cache_key else None
        if key is None:  # not looked up yet
            key = self.key(prepared, version, sample)
            hit = self.from_cache(key)
            if hit is not None:
                return hit
        probe = False
        if not self._probe_started:
            self._probe_started = probe = True
        else:
            await self._probe_done.wait()  # type: ignore[union-attr]
        try:
            if self.fatal is not None or self.stopping:
                reason = f"not run: {self.fatal}" if self.fatal else "interrupted"
                return Verdict.failed(prepared.metric, reason, mode=prepared.mode)
            verdict = await self._judge_uncached(prepared, parse, sample)
        finally:
            if probe:
                self._probe_done.set()  # type: ignore[union-attr]
        if verdict.status == "ok" and self.cache is not None:
            stored = {k: v for k, v in asdict(verdict).items() if k not in _USAGE_KEYS}
            self.cache.set(key, {"verdict": stored, "raw": verdict.raw})
        verdict.cached = False
        if verdict.status == "ok":
            verdict.raw = None
        return verdict

    async def _judge_uncached(self, prepared: Prepared, parse, sample: int) -> Verdict:
        messages = list(prepared.messages)
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
        text: str | None = None
        for attempt in range(2):  # the call, then one re-ask if the reply is unreadable
            try:
                response = await self._call(messages, prepared, sample)
            except ProviderFatalError as exc:
                if self.fatal is None:
                    self.fatal = exc
                return Verdict.failed(prepared.metric, str(exc), raw=text, mode=prepared.mode)
            except asyncio.CancelledError:
                raise
            except _ProbeConnectionError as exc:  # the run's first call never connected
                if self.fatal is None:
                    self.fatal = ProviderFatalError(str(exc))
                return Verdict.failed(prepared.metric, str(exc), raw=text, mode=prepared.mode)
            except Exception as exc:  # retries exhausted or a non-retryable row error
                return Verdict.failed(prepared.metric, f"judge call failed: {_first_line(exc)}", raw=text, mode=prepared.mode)
            self._add_usage(usage, response)
            choice = response.choices[0]
            text = getattr(choice.message, "content", None)
            if getattr(choice, "finish_reason", None) == "length":
                verdict = Verdict.failed(
                    prepared.metric,
                    f"reply truncated at max_tokens={self.settings.max_tokens}; raise judge.max_tokens",
                    raw=text,
                    mode=prepared.mode,
                )
                return self._with_usage(verdict, usage)
            try:
                verdict = parse(text, prepared)
                if self.wants_logprobs(prepared):
                    logprobs = getattr(choice, "logprobs", None)
                    if prepared.metric == "completeness":
                        found = {"p_score": score_distribution(logprobs), "p_covered": field_probabilities(logprobs, '"covered":')}
                    elif prepared.mode == "reference_free":
                        found = {"p_yes": field_probability(logprobs)}
                    else:
                        found = {"p_supported": field_probabilities(logprobs, '"supported":')}
                    verdict.details = {**(verdict.details or {}), **found}
            except ParseError as exc:
                if attempt == 0:
                    messages = messages + [{"role": "assistant", "content": text or ""}, {"role": "user", "content": REASK}]
                    continue
                verdict = Verdict.failed(prepared.metric, f"unreadable judge reply: {exc}", raw=text, mode=prepared.mode)
            verdict.raw = text
            return self._with_usage(verdict, usage)
        raise AssertionError("unreachable")

    @staticmethod
    def _with_usage(verdict: Verdict, usage: dict[str, Any]) -> Verdict:
        verdict.prompt_tokens = usage["prompt_tokens"]
        verdict.completion_tokens = usage["completion_tokens"]
        verdict.cost_usd = usage["cost_usd"]
        return verdict

    def _add_usage(self, usage: dict[str, Any], response: Any) -> None:
        counts = getattr(response, "usage", None)
        usage["prompt_tokens"] += int(getattr(counts, "prompt_tokens", 0) or 0)
        usage["completion_tokens"] += int(getattr(counts, "completion_tokens", 0) or 0)
        if usage["cost_usd"] is None:
            return
        if self.is_local:
            return  # the embedded judge costs nothing
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")  # litellm prices every response once already
        if cost is None and "response_cost" not in hidden:
            try:
                cost = self._litellm.completion_cost(completion_response=response)
            except Exception:
                cost = None
        usage["cost_usd"] = None if cost is None else usage["cost_usd"] + float(cost)

    async def _call(self, messages: list[dict[str, str]], prepared: Prepared, sample: int) -> Any:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        backoff = wait_exponential_jitter(multiplier=BACKOFF_INITIAL_S, max=BACKOFF_MAX_S, jitter=BACKOFF_INITIAL_S)

        def wait(state) -> float:
            exc = state.outcome.exception() if state.outcome else None
            after = _retry_after(exc) if exc else None
            return after if after is not None else backoff(state)

        litellm = self._litellm
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.temperature(prepared),
            "max_tokens": self.settings.max_tokens,
            "response_format": prepared.response_format,
            "timeout": self.settings.timeout,
            "max_retries": 0,
            "num_retries": 0,
        }
        if self.settings.seed is not None:
            kwargs["seed"] = self.settings.seed
        if self.wants_logprobs(prepared):
            kwargs["logprobs"], kwargs["top_logprobs"] = True, 10
        if self.settings.api_base:
            kwargs["api_base"] = self.settings.api_base
        key = self._api_key()
        if key:
            kwargs["api_key"] = key
        async with self._semaphore:  # type: ignore[union-attr]
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.settings.max_retries + 1),
                wait=wait,
                retry=retry_if_exception(self._retryable),
                reraise=True,
            ):
                with attempt:
                    if self.fatal is not None:
                        raise self.fatal
                    await self.pacer.wait()
                    self.calls += 1
                    try:
                        return await litellm.acompletion(**kwargs)
                    except Exception as exc:
                        raise self._classify(exc) from None

    def _retryable(self, exc: BaseException) -> bool:
        litellm = self._litellm
        if isinstance(exc, ProviderFatalError):
            return False
        if isinstance(exc, _ProbeConnectionError):
            return True
        retryable = (
            litellm.RateLimitError,
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.APIConnectionError,
            litellm.Timeout,
            litellm.BadGatewayError,
        )
        if isinstance(exc, retryable):
            return True
        status = getattr(exc, "status_code", None)
        return isinstance(status, int) and (status >= 500 or status in (408, 409, 429))

    def _classify(self, exc: Exception) -> Exception:
        """Turn a fatal provider error into ``ProviderFatalError`` with one clear line."""
        litellm = self._litellm
        model = self.settings.model
        where = f" at {self.settings.api_base}" if self.settings.api_base else ""
        if isinstance(exc, litellm.AuthenticationError):
            hint = f"set {self.settings.api_key_env}" if self.settings.api_key_env else "check the provider's API key variable"
            return ProviderFatalError(f"authentication failed for {model}{where}: {hint}")
        text = str(exc).lower()
        if any(s in text for s in ("missing credentials", "api_key client option must be set", "no api key", "api key not found")):
            hint = f"set {self.settings.api_key_env}" if self.settings.api_key_env else "set the provider's API key variable (e.g. OPENAI_API_KEY)"
            return ProviderFatalError(f"no API key for {model}{where}: {hint}")
        if isinstance(exc, litellm.PermissionDeniedError):
            return ProviderFatalError(f"permission denied for {model}{where}: the key may not use this model")
        if isinstance(exc, litellm.NotFoundError):
            return ProviderFatalError(f"model or endpoint not found: {model}{where}; check --model and --api-base")
        if isinstance(exc, litellm.RateLimitError) and "quota" in str(exc).lower():
            return ProviderFatalError(f"quota exhausted for {model}{where}: {_first_line(exc)}")
        if isinstance(exc, litellm.BadRequestError) and "llm provider not provided" in str(exc).lower():
            return ProviderFatalError(f"unknown provider in model '{model}'; use e.g. openai/gpt-4o-mini or local/qwen2.5-coder-1.5b")
        if _is_connection_error(exc, litellm) and not self._probe_done.is_set():  # type: ignore[union-attr]
            return _ProbeConnectionError(exc, f"cannot connect to {model}{where}: {_first_line(exc)}")
        return exc


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


class _ProbeConnectionError(Exception):
    """A connection failure on the run's first call: retried, and fatal if retries run out."""

    def __init__(self, original: Exception, message: str) -> None:
        super().__init__(message)
        self.original = original

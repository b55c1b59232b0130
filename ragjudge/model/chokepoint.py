"""``Model``: the chokepoint for one judge model, every step of a call in order (the package's
docstring, ``ragjudge.model``): cache, de-duplication, the first call's probe, the limit and
pacing (``limits``), retries (``retry``), the transport, error classification, cache set."""

from __future__ import annotations

import asyncio
import random
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ragjudge import prices
from ragjudge.cache import cache_key
from ragjudge.errors import ProviderFatalError
from ragjudge.model import retry as backoff  # read at each call: tests lower its BACKOFF_* constants
from ragjudge.model.probe import FirstCall
from ragjudge.model.limits import _LIMITS, CallLimit, Pacer
from ragjudge.model.retry import (BUDGET, Ledger, _Again, _Budget, _cancelled, _counted, _Failed, _requests,
                                  _retryable, _Stopped, asked_wait)
from ragjudge.prices import TokenCounter
from ragjudge.transports import base, choose, endpoint
from ragjudge.transports.base import Request, TransportError
from ragjudge.types import OK, Call, ParseError, Reason, Reply, Usage, Verdict, clean_text

MISSING = object()  # not prefetched
MEMORY = 4096  # replies kept in memory per model, so a repeated call within a run is not paid twice
REASK = (
    "Your reply could not be read as the requested JSON object. Reply again with only that "
    "JSON object, with every required key."
)



class Model:
    """The chokepoint for one judge model; see the docstring of ``ragjudge.model``.

    ``settings``: ``JudgeSettings``. ``cache``: a ``ResponseCache`` or None. ``transport``: how
    requests travel (default: chosen from the model string by ``ragjudge.transports``).
    ``fatal``: the ``ProviderFatalError`` that stopped this model, if any (later calls return
    error verdicts "not run: ..."). ``stopping``: set by an interrupt; later calls return
    "interrupted". ``calls``: provider requests made (retries and re-asks included);
    ``retries``: those of them that repeated a failed attempt. ``api_base``: the endpoint
    calls go to, wherever it was given (``ragjudge.transports.endpoint``; part of the cache key).
    ``ledger``: the ``Ledger`` whose ``spent`` ``judge.max_cost`` bounds (a panel's members share one).
    """

    def __init__(self, settings: Any, cache: Any = None, transport: Any = None, ledger: Ledger | None = None) -> None:
        self.settings = settings
        self.cache = cache
        if transport is None:
            transport = choose(settings, str(cache.directory) if cache is not None else None)
        self.transport = transport
        self.provider_model: str = transport.provider_model

        # where calls go, wherever it was given (flag, config, environment); None: the provider's default
        self.api_base: str | None = endpoint(settings, self.provider_model)
        self.fatal: ProviderFatalError | None = None
        self.stopping = False
        self.on_wire = 0  # requests sent whose answer is awaited now (``interrupt`` lets them finish: ``Scorer.interrupt``)
        self.calls = 0
        self._memory: OrderedDict[str, Verdict] = OrderedDict()
        self._prefetched: dict[str, Any] = {}  # key -> cached reply or None (not cached), from ``prefetch``
        self._in_flight: dict[str, asyncio.Future] = {}
        self.first_call = FirstCall()  # the first call goes alone (a bad key costs one call)
        # set (from the loop thread) once the run's first call has an answer, or was never sent: a
        # JSON Lines run imports pandas then, not while the first calls are being made (``Scorer.finish``)
        self.answered = self.first_call.answered
        self._limit: CallLimit | None = None
        self._limits: dict[tuple[str, str | None], CallLimit] = {}
        self._pacer = Pacer(settings.rpm)
        self._skip_response_format = False
        self.ledger = ledger or Ledger()  # USD of the replies received (judge.max_cost stops new calls at it)
        self.budget_reached = False
        self.retries = 0  # requests that repeated a failed attempt (counted in ``calls`` too)
        self._counter: Any = None
        self._input_limit: int | None | bool = False  # False: not looked up yet

    def prepare(self) -> None:
        """Load what the first call needs (the fast path's aiohttp) in the calling thread, before
        the calls start: a JSON Lines run then imports pandas while its first calls are in flight,
        instead of both imports taking turns on the loop thread (issue 51). Optional: a call
        loads what it needs anyway."""
        self.transport.prepare()

    @property
    def spent(self) -> float:
        """USD of the replies received by the models sharing this one's budget (``ledger``)."""
        return self.ledger.spent

    @spent.setter
    def spent(self, value: float) -> None:
        self.ledger.spent = value

    def price(self, batch: bool | None = None) -> tuple[float, float] | None:
        """USD per million (input, output) tokens: ``judge.price``, else litellm's price table;
        (0, 0) for the embedded judge; None when unknown. ``batch`` (default: ``judge.batch``):
        the batch API's price (``prices.batch_rates``; half of ``judge.price``)."""
        if self.transport.free:
            return (0.0, 0.0)
        batch = bool(getattr(self.settings, "batch", False)) if batch is None else batch
        if self.settings.price is not None:
            share = prices.BATCH_DISCOUNT if batch else 1.0
            return (self.settings.price.input_per_mtok * share, self.settings.price.output_per_mtok * share)

        provider, _, name = self.provider_model.partition("/")
        row = prices.entry(provider, name) or {}
        if row.get("input_cost_per_token") is None:
            return None
        if batch:
            per_in, per_out = prices.batch_rates(row)  # type: ignore[misc]
            return (per_in * 1e6, per_out * 1e6)
        return (float(row["input_cost_per_token"]) * 1e6, float(row.get("output_cost_per_token") or 0.0) * 1e6)

    def _priced(self, usage: Usage, batch: bool = False) -> Usage:
        """``usage`` priced by ``judge.price`` when it is set (the table's price otherwise; half
        of it for a reply through the batch API, ``batch``)."""
        if self.settings.price is None or self.transport.free:
            return usage
        per_input, per_output = self.price(batch)  # type: ignore[misc]  # judge.price, at the batch share where it applies
        return replace(usage, cost_usd=(usage.prompt_tokens * per_input + usage.completion_tokens * per_output) / 1e6)

    def counter(self) -> Any:
        """This model's token counter (``ragjudge.prices.TokenCounter``), as the dry run counts."""
        if self._counter is None:
            self._counter = TokenCounter(self.provider_model)
        return self._counter

    def _estimated(self, usage: Usage, messages: list[dict[str, Any]], text: str | None, batch: bool = False) -> Usage:
        """``usage`` of a reply that reported no token counts: the prompt's and reply's tokens
        counted as the dry run counts them, priced (at the batch price for a reply through the
        batch API, ``batch``), and marked ``estimated``."""
        counter = self.counter()
        prompt, completion = counter(messages), counter.text(text)
        price = self.price(batch)
        cost = None if price is None else (prompt * price[0] + completion * price[1]) / 1e6
        return replace(usage, prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost, estimated=True)

    def input_limit(self) -> int | None:
        """The most prompt tokens this model takes (litellm's table, ``max_input_tokens``);
        None when unknown."""
        if self.transport.free:
            return None
        if self._input_limit is False:
            self._input_limit = prices.input_limit(self.provider_model)
        return self._input_limit  # type: ignore[return-value]

    def too_long(self, messages: list[dict[str, Any]]) -> str | None:
        """Why ``messages`` cannot be sent: "prompt of N tokens exceeds MODEL's input limit of
        M" where the model's input limit is known and the prompt is past it; else None. A
        prompt of no more UTF-8 bytes than the limit is never counted (a token is at least a byte)."""
        limit = self.input_limit()
        if limit is None:
            return None
        texts = [str(m.get("content", "")) for m in messages]
        if 4 * sum(map(len, texts)) <= limit or sum(len(t.encode("utf-8")) for t in texts) <= limit:
            return None  # at most 4 bytes a character
        tokens = self.counter()(messages)
        if tokens <= limit:
            return None
        return f"prompt of {tokens} tokens exceeds {self.settings.model}'s input limit of {limit}; shorten the row's context"

    # -- the cache key and synchronous look-ups ----------------------------------------
    def key(self, call: Call, sample: int = 0) -> str:
        """The cache key of ``call`` (sample ``sample``): model, API base, sampling parameters,
        response format, messages, the judge's name and prompt version. Not retries,
        timeouts, concurrency or keys."""
        memo = call.memo.get((id(self), sample))
        if memo is not None:
            return memo

        key = call.memo[(id(self), sample)] = cache_key(
            model=self.provider_model,
            api_base=self.api_base,
            temperature=call.temperature,
            max_tokens=max(self.settings.max_tokens, call.reply_tokens),
            seed=self.settings.seed,
            response_format=call.response_format,
            messages=call.messages,
            metric=call.metric,
            prompt_version=call.version,
            sample=sample,
            logprobs=call.logprobs,
        )
        return key

    def prefetch(self, calls: list[Call]) -> None:
        """Ask the response cache once for the keys of ``calls`` (sample 0) that this process does
        not remember; ``peek`` then reads the answers from here instead of asking the disk for
        each (bench figure 1c: a row's look-up cost about 35 us alone, under 10 us so). The
        answers are kept until the next ``prefetch``."""
        if self.cache is None or not calls:
            self._prefetched = {}
            return
        keys = [key for key in dict.fromkeys(self.key(call) for call in calls) if key not in self._memory]
        self._prefetched = self.cache.get_many(keys) if keys else {}

    def peek(self, call: Call, sample: int = 0, key: str | None = None) -> Verdict | None:
        """The verdict for ``call`` without a provider call: from this process's memory or the
        response cache (``cached`` True, no usage); None when it would need a call."""
        key = key or self.key(call, sample)
        kept = self._memory.get(key)
        if kept is not None:
            self._memory.move_to_end(key)
            return _unpaid(kept)
        if self.cache is None or call.memo.get((id(self), sample, "missed")):
            return None  # the response cache was asked already for this call object: not again
        hit = self._prefetched.pop(key, MISSING) if self._prefetched else MISSING
        if hit is MISSING:
            hit = self.cache.get(key)
        if hit is None:
            call.memo[(id(self), sample, "missed")] = True
            return None
        verdict = Verdict.from_cache(hit["verdict"])
        verdict.cached = True
        return verdict

    # -- the call ----------------------------------------------------------------------
    async def call(self, call: Call, parse: Callable[[Reply, Call], Verdict], sample: int = 0) -> Verdict:
        """One verdict for ``call``: remembered, cached, shared with an identical call in
        flight, or from the model. ``parse`` reads a reply (raising ``ParseError``).

        Returns an ok ``Verdict`` with ``usage``, or an error ``Verdict`` (truncated reply,
        unreadable after one re-ask, a non-retryable provider error, retries exhausted, the
        run stopped) with the raw reply kept. Never raises for a row's failure; raises
        ``asyncio.CancelledError`` when the task was cancelled (``CallLimit.held_cancellation``)."""
        CallLimit.held_cancellation()
        key = self.key(call, sample)
        found = self.peek(call, sample, key)
        if found is not None:
            return found
        shared = self._in_flight.get(key)
        if shared is not None:
            return _unpaid(await asyncio.shield(shared))
        # the call runs in this task (an interrupt cancels it as it cancels the row); identical
        # calls wait on ``done``
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        self._in_flight[key] = done
        try:
            verdict = await self._fetch(key, call, parse, sample)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                done.cancel()
            else:
                done.set_exception(exc)
            raise
        finally:
            self._in_flight.pop(key, None)
        done.set_result(verdict)
        return verdict

    async def _fetch(self, key: str, call: Call, parse: Callable[[Reply, Call], Verdict], sample: int) -> Verdict:
        probe = await self.first_call.turn()
        try:
            if self.fatal is not None or self.stopping:
                reason = f"not run: {self.fatal}" if self.fatal is not None else Reason.INTERRUPTED
                return Verdict.failed(call.metric, reason, mode=call.mode)
            verdict, replied = await self._ask(call, parse, probe, key)
        finally:
            if probe:
                self.first_call.answer()
        if verdict.status == OK and self.cache is not None and self.transport.cacheable:
            self.cache.set(key, {"verdict": verdict.to_cache(), "raw": verdict.raw})
        verdict.cached = None if verdict.reason is BUDGET or verdict.input_error else False
        if verdict.status == OK:
            verdict.raw = None
        # a reply (read or not) is kept for identical calls of this run, so rows that share a
        # call agree whatever the chunking; a call that got no reply is tried again
        if replied and not (self.stopping or self.fatal is not None):
            self._memory[key] = verdict.copy()
            if len(self._memory) > MEMORY:
                self._memory.popitem(last=False)
        return verdict

    async def _ask(self, call: Call, parse: Callable[[Reply, Call], Verdict], probe: bool, key: str | None = None) -> tuple[Verdict, bool]:
        """The call, then one re-ask when the reply cannot be read. Returns the verdict and
        whether a reply came back. When the re-ask cannot be read either, the error names
        what was wrong with each reply where they differ (the first reply's score, say, which
        the re-ask's own fault would hide)."""
        messages = list(call.messages)
        usage = Usage()
        text: str | None = None
        first_fault = ""
        too_long = self.too_long(messages)
        if too_long is not None:  # a row error before the call: nothing is sent
            return Verdict.failed(call.metric, too_long, mode=call.mode, input_error=True), False
        for attempt in range(2):
            try:
                reply = await self._send(call, messages, probe and attempt == 0, key, attempt)
            except asyncio.CancelledError:
                _cancelled(usage)  # the first reply of a re-ask, received and paid
                raise
            except _Failed as failure:
                usage = usage + failure.usage
                if failure.fatal is not None and self.fatal is None:
                    self.fatal = failure.fatal
                return Verdict.failed(call.metric, failure.reason or str(failure), raw=text, mode=call.mode, usage=usage), attempt > 0
            batched = bool(reply.batch)
            if reply.usage.estimated or reply.usage.prompt_tokens <= 0:  # no usage reported: unknown, not zero
                reply.usage = self._estimated(reply.usage, messages, reply.text, batched)
            reply.usage = self._priced(reply.usage, batched)
            usage = usage + reply.usage
            self.spent += reply.usage.cost_usd or 0.0
            text = reply.text = clean_text(reply.text) if reply.text else reply.text
            if not (text or "").strip() and reply.reasoning:
                reason = (f"the model spent its output tokens on reasoning ({reply.usage.completion_tokens} tokens) and gave no "
                          f"answer; raise judge.max_tokens (now {self.settings.max_tokens})")
                return Verdict.failed(call.metric, reason, raw=clean_text(reply.reasoning), mode=call.mode, usage=usage), True
            if reply.finish_reason == "length":
                reason = f"reply truncated at max_tokens={max(self.settings.max_tokens, call.reply_tokens)}; raise judge.max_tokens"
                return Verdict.failed(call.metric, reason, raw=text, mode=call.mode, usage=usage), True
            try:
                verdict = parse(reply, call)
            except ParseError as exc:
                if attempt == 0:
                    first_fault = str(exc)
                    messages = messages + [{"role": "assistant", "content": text or ""}, {"role": "user", "content": REASK}]
                    continue
                fault = str(exc) if str(exc) == first_fault else f"{first_fault}; asked again: {exc}"
                return Verdict.failed(call.metric, f"unreadable judge reply: {fault}", raw=text, mode=call.mode, usage=usage), True
            verdict.raw = text
            verdict.usage = usage
            return verdict, True
        raise AssertionError("unreachable")

    def _limiter(self) -> CallLimit:
        if self._limit is None:
            limits = _LIMITS.setdefault(asyncio.get_running_loop(), {})
            limit = limits.setdefault((self.provider_model, self.api_base), CallLimit())
            limit.ask(id(self), 1 if self.transport.free else self.settings.concurrency)
            self._limit, self._limits = limit, limits
        return self._limit

    async def _send(self, call: Call, messages: list[dict[str, Any]], probe: bool, key: str | None = None, ask: int = 0) -> Reply:
        """One request with the limit, pacing and retries; raises ``_Failed``. ``key``: the call's
        cache key and ``ask`` 0 (1 for the re-ask), carried on the ``Request`` for a transport
        that names its calls (the batch: ``ragjudge.transports.batch``)."""
        def wait(state: Any) -> float:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, _Again):
                return 0.0
            return asked_wait(getattr(exc, "retry_after", None), backoff._backoff()(state))

        def wait_first(exc: BaseException) -> float:
            """The wait before the first retry: the first backoff, or longer where the server asks."""
            if isinstance(exc, _Again):
                return 0.0
            return asked_wait(getattr(exc, "retry_after", None), min(backoff.BACKOFF_MAX_S, backoff.BACKOFF_INITIAL_S + random.uniform(0, backoff.BACKOFF_INITIAL_S)))

        request = Request(
            messages=messages,
            temperature=call.temperature,
            max_tokens=max(self.settings.max_tokens, call.reply_tokens),
            response_format=None if self._skip_response_format else call.response_format,
            seed=self.settings.seed,
            logprobs=call.logprobs,
            timeout=self.settings.timeout,
            key=key,
            ask=ask,
            questions=call.questions,
            state=call.state,
        )
        attempts = 0
        first = probe

        async def attempt() -> Reply:
            nonlocal attempts, first, request
            if self.fatal is not None:
                raise self.fatal
            if self.settings.max_cost is not None and self.spent >= self.settings.max_cost and not self.transport.prepaid(request):
                self.budget_reached = True  # checked as each call is about to leave: calls in flight still finish
                raise _Budget()
            if self._pacer.rpm:
                await self._pacer.wait()
            if self.stopping:  # interrupted while this call waited (a slot, the pace, a retry's back-off): not sent
                raise _Stopped()
            attempts += 1
            self.calls += 1
            if attempts > 1:
                self.retries += 1
            self.on_wire += 1
            try:
                return await self.transport.complete(request)
            except TransportError as err:
                if err.kind == base.RESPONSE_FORMAT and request.response_format is not None:
                    self._skip_response_format = True
                    request = replace(request, response_format=None)
                    raise _Again(str(err)) from None
                if err.kind in base.FATAL or (first and err.kind == base.CONNECT):
                    fatal = ProviderFatalError(self._message(err))
                    if self.fatal is None:
                        self.fatal = fatal  # before the probe lets the other calls go
                    raise fatal from None
                raise
            finally:
                self.on_wire -= 1
                if first:
                    first = False
                    self.first_call.answer()

        async with self._limiter():
            try:
                try:  # most calls succeed at once: tenacity is set up only for a retry
                    return _counted(await attempt(), attempts)
                except (TransportError, _Again) as err:
                    if not _retryable(err) or self.settings.max_retries == 0:
                        raise
                    await asyncio.sleep(wait_first(err))
                from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

                async for retry in AsyncRetrying(stop=stop_after_attempt(self.settings.max_retries), wait=wait,
                                                 retry=retry_if_exception(_retryable), reraise=True):
                    with retry:
                        return _counted(await attempt(), attempts)
            except ProviderFatalError as fatal:  # met by this call, or by another before this one was sent
                raise _Failed(str(fatal) if attempts else f"not run: {fatal}", _requests(attempts), fatal) from None
            except _Budget:
                raise _Failed(BUDGET, _requests(attempts)) from None
            except _Stopped:
                raise _Failed(Reason.INTERRUPTED, _requests(attempts)) from None
            except (TransportError, _Again) as err:
                raise _Failed(f"judge call failed: {err}", _requests(attempts), kind=getattr(err, "kind", None)) from None
            except asyncio.CancelledError:
                _cancelled(_requests(attempts))  # the requests sent for it, the one cancelled in flight included
                raise
        raise AssertionError("unreachable")

    def _message(self, err: TransportError) -> str:
        """One line for a fatal error, naming the model, where it was called and the fix."""
        model = self.settings.model
        where = f" at {self.api_base}" if self.api_base else ""
        env = self.settings.api_key_env or self.transport.key_env  # a decision model's own (TYPESAFE_API_KEY...)
        if err.kind == base.AUTH:
            hint = f"set {env}" if env else "check the provider's API key variable"
            return f"authentication failed for {model}{where}: {hint}"
        if err.kind == base.NO_KEY:
            hint = f"set {env}" if env else "set the provider's API key variable (e.g. OPENAI_API_KEY)"
            return f"no API key for {model}{where}: {hint}"
        if err.kind == base.PERMISSION:
            return f"permission denied for {model}{where}: the key may not use this model"
        if err.kind == base.NOT_FOUND:
            return f"model or endpoint not found: {model}{where}; check --model and --api-base"
        if err.kind == base.QUOTA:
            return f"quota exhausted for {model}{where}: {err}"
        if err.kind == base.UNKNOWN_PROVIDER:
            return f"unknown provider in model '{model}'; use e.g. openai/gpt-4o-mini or local/qwen2.5-coder-1.5b"
        if err.kind == base.CONNECT:
            return f"cannot connect to {model}{where}: {err}"
        return f"judge call failed: {err}"

    def group(self, calls: list[Call]) -> None:
        """Nothing: a chat model makes each of a row's calls on its own (``DecisionModel.group``
        asks a row's metrics in one request)."""

    def interrupt(self) -> None:
        """Stop starting calls: later calls return "interrupted" verdicts, and no request leaves
        after this (a call waiting for a slot, its pace or a retry's back-off included). A request
        already sent (``on_wire``) goes on: its reply is counted and cached as any other
        (``Scorer.interrupt`` waits a grace for them)."""
        self.stopping = True

    async def aclose(self) -> None:
        """Give back this model's share of the process-wide limit and close the transport."""
        if self._limit is not None:
            self._limit.leave(id(self))
            if not self._limit.asked and not self._limit.in_use:
                self._limits.pop((self.provider_model, self.api_base), None)
            self._limit = None
        await self.transport.aclose()


def _unpaid(verdict: Verdict) -> Verdict:
    """``verdict`` for a row that made no call of its own: no usage; ``cached`` when ok."""
    copy = verdict.copy(usage=Usage())
    copy.cached = True if verdict.status == OK else verdict.cached
    return copy


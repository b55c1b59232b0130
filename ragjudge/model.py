"""The one chokepoint for judge-model calls. It knows no metric: a judge hands it a ``Call``
and a parser, and gets a ``Verdict`` back.

Every call goes through ``Model.call``, in this order:

1. **cache get**: the on-disk response cache (``ragjudge.cache``), then the replies this
   model already received in this process (the last ``MEMORY`` calls);
2. **de-duplication**: an identical call already in flight is awaited, not sent again (the
   row that made it pays; the others get it at no cost). A call made ahead of its row (``AHEAD``:
   a JSON Lines run's first call, sent while the rest of the first chunk is read) is given to
   the first row that makes it, as that row's own: paid, not cached;
3. **the first-call probe**: a run's first uncached call goes alone, so a bad key costs one
   call; the others start once its first attempt has an answer or ``PROBE_GRACE_S`` (0.5 s)
   after it started, whichever comes first (an auth error comes back in the connection's
   set-up and one round trip; a judge's answer takes the model's time, which the others need
   not wait for; a grace the loop thread was held through, the probe perhaps unsent, starts
   again: ``_release_after``); a timeout is that row's problem; a refused connection or an auth,
   permission, not-found or quota error stops the run: ``fatal``. An error slower than the
   grace meets the calls already sent (at most ``judge.concurrency``, each refused at no
   charge); none is sent after it, and the rows never sent say "not run: ...";
4. **the concurrency limit**, one for the whole process per model and API base
   (``judge.concurrency``; the lowest asked for wins when several scorers share a model);
5. **pacing** (``judge.rpm``);
6. **retry** with exponential backoff and jitter (tenacity) on 429 (honouring
   ``Retry-After``, ``retry-after-ms`` and a "retry in Ns" in the message; a 429 that says the
   account's quota is spent, OpenAI's ``insufficient_quota``, is fatal), 5xx, timeouts and
   dropped connections; a 400 that rejects ``response_format`` is asked once more without it
   (the prompt spells out the JSON);
7. **the transport call** (``ragjudge.transports``);
8. **error classification** into row errors (returned as error verdicts, never raised) and
   fatal errors (``fatal`` set; later calls return "not run");
9. **cache set** (parsed, successful replies only).

Before the first step that sends, a prompt past the model's known input limit (litellm's
table, ``max_input_tokens``) is a row error ("prompt of N tokens exceeds MODEL's input limit
of M"; no call). A reply that cannot be parsed is asked for once more; a reply cut at
``max_tokens`` is an error row, and so is a reply whose only text is a reasoning model's
reasoning (raise ``judge.max_tokens``). ``Verdict.usage`` carries each row's tokens, cost
(USD, or unknown), calls (every HTTP request) and retries; a reply without ``usage`` has its
tokens estimated as the dry run counts them (``Usage.estimated``), priced, and counted by
``judge.max_cost``.

Why it is over 600 lines: the steps above are one pipeline around one call,
in one order, sharing the call's state (its key, its retries, its usage); the transports, the
cache, the prices and the HTTP error reading already live in their own modules.
"""

from __future__ import annotations

import asyncio
import random
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from ragjudge.errors import ProviderFatalError
from ragjudge.http_errors import RETRY_AFTER_MAX_S
from ragjudge.transports import base, choose, decision_model, endpoint, resolve_model
from ragjudge.transports.base import Request, TransportError
from ragjudge.types import OK, Call, ParseError, Reason, Reply, Usage, Verdict, clean_text
from ragjudge import prices
from ragjudge.cache import cache_key
from ragjudge.prices import TokenCounter

BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 30.0
MISSING = object()  # not prefetched
MEMORY = 4096  # replies kept in memory per model, so a repeated call within a run is not paid twice
PROBE_GRACE_S = 0.5  # seconds the other calls wait for the probe's answer at most (bench/README.md, figure 1c)
PROBE_LATE_S = 0.05  # a grace timer this late found the loop thread held (the probe perhaps never sent): the grace starts again
# set in a task whose calls are made ahead of the rows that will claim them (``Model.call``)
AHEAD: ContextVar[bool] = ContextVar("ragjudge_call_ahead", default=False)
# set by a row's chain of calls (``Scorer._chain``): a list the usage of its calls cancelled by an interrupt is added
# to (the requests sent, a reply already received before a re-ask), so the row's "interrupted" verdict counts them
CANCELLED: ContextVar[list[Usage] | None] = ContextVar("ragjudge_cancelled_usage", default=None)
REASK = (
    "Your reply could not be read as the requested JSON object. Reply again with only that "
    "JSON object, with every required key."
)

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


class _Limit:
    """A concurrency limit shared by every model of one (provider model, API base) in this
    process; its capacity is the lowest that a live model asked for. A call under the limit
    takes a slot at once, without a lock, when no other call waits for one; the others wait in
    order of arrival, and a woken call that finds its slot taken stays first in line."""

    def __init__(self) -> None:
        self.asked: dict[int, int] = {}
        self.in_use = 0
        self._woken = 0  # calls woken for a slot that have not run yet
        self._waiters: deque[asyncio.Future] = deque()

    @property
    def capacity(self) -> int:
        return min(self.asked.values()) if self.asked else 1

    async def __aenter__(self) -> None:
        if self.in_use + self._woken < self.capacity and not self._waiters:
            self.in_use += 1  # a free slot nobody waits for
            return
        again = False
        while not again or self.in_use >= self.capacity:  # a woken call looks again, as with asyncio.Condition
            slot = asyncio.get_running_loop().create_future()
            if again:
                self._waiters.appendleft(slot)  # woken but beaten to the slot: first in line still
            else:
                self._waiters.append(slot)
            self._wake()  # a slot may be free with calls queued before this one
            try:
                await slot
            except asyncio.CancelledError:
                if slot.done() and not slot.cancelled():
                    self._woken -= 1
                    self._wake()  # woken and cancelled at once: the wake goes to the next call
                else:
                    try:
                        self._waiters.remove(slot)
                    except ValueError:
                        pass
                raise
            self._woken -= 1
            again = True
        self.in_use += 1

    async def __aexit__(self, exc_type: Any = None, *exc: Any) -> None:
        self.in_use -= 1
        woken = self._woken
        self._wake()
        if self._woken > woken and exc_type is None:  # a reply in hand: the next call goes first
            await _after_woken()

    def _wake(self) -> None:
        """Wake one waiting call per free slot not already promised to a woken one (it takes
        the slot when it runs, if still free)."""
        while self._waiters and self.in_use + self._woken < self.capacity:
            slot = self._waiters.popleft()
            if not slot.done():
                slot.set_result(None)
                self._woken += 1


_LIMITS: dict[tuple[str, str | None], _Limit] = {}

# tasks whose cancellation arrived while they let a woken call go first, with a reply in hand:
# their reply is kept, and the cancellation reaches them at their next call (``Model.call``)
_CANCEL_AT_NEXT_CALL: "weakref.WeakSet[asyncio.Task]" = weakref.WeakSet()


async def _after_woken() -> None:
    """Let the call just woken for a freed slot send its request before this call's reply is
    read, cached and decided: two turns of the event loop, the woken call's task and, on Python
    before 3.12, the task in which aiohttp writes its request body. When replies come back
    together, new calls then go out as each slot frees, not after the whole burst has been
    processed (bench/README.md, figure 1c: at C=64, L=100 ms, 597 -> 613 calls/s on 2 cores).

    The reply is already received here, so a cancellation that arrives in these two turns does
    not lose it: it is held, and raised at the task's next call (``Model.call``)."""
    cancelled = 0
    for _ in range(2):
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            cancelled += 1
    task = asyncio.current_task()
    if cancelled and task is not None:
        for _ in range(cancelled):
            task.uncancel()
        _CANCEL_AT_NEXT_CALL.add(task)


def _held_cancellation() -> None:
    """Raise the cancellation that ``_after_woken`` held for this task, if any."""
    task = asyncio.current_task()
    if task is not None and task in _CANCEL_AT_NEXT_CALL:
        _CANCEL_AT_NEXT_CALL.discard(task)
        raise asyncio.CancelledError()


class _Again(Exception):
    """Ask again at once (the server rejected ``response_format``; it is dropped)."""


BUDGET = Reason.BUDGET_REACHED


class _Budget(Exception):
    """``judge.max_cost`` is spent: no new call starts."""


class _Stopped(Exception):
    """The run was interrupted (``Model.interrupt``): no new request leaves, a retry included."""


class _Failed(Exception):
    def __init__(self, message: str | Reason, usage: Usage, fatal: ProviderFatalError | None = None, kind: str | None = None) -> None:
        super().__init__(message.value if isinstance(message, Reason) else message)
        self.reason = message if isinstance(message, Reason) else None
        self.usage = usage
        self.fatal = fatal
        self.kind = kind  # the transport error's kind, where one ended the call


class Ledger:
    """USD spent by the models that share one budget (``judge.max_cost``): one model, or every
    member of a panel."""

    def __init__(self) -> None:
        self.spent = 0.0


class Model:
    """The chokepoint for one judge model; see the module docstring.

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
        self._ahead: dict[str, asyncio.Future] = {}  # key -> a call made ahead of its row, not claimed yet
        self._probe_started = False
        self._probe_done: asyncio.Event | None = None
        # set (from the loop thread) once the run's first call has an answer, or was never sent: a
        # JSON Lines run imports pandas then, not while the first calls are being made (``Scorer.finish``)
        self.answered = threading.Event()
        self._limit: _Limit | None = None
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
        prepare = getattr(self.transport, "prepare", None)
        if prepare is not None:
            prepare()

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
        if key in self._ahead:
            return None  # made ahead of its row: ``call`` gives it to the row as its own
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

    def unclaimed(self) -> list[Verdict]:
        """The verdicts of the calls made ahead (``AHEAD``) that no row has made since: their cost
        is in ``spent`` and an ok reply is cached, but no row holds them. Read once the calls are
        done (``Scorer.drop``)."""
        return [made.result() for made in self._ahead.values() if made.done() and not made.cancelled() and made.exception() is None]

    # -- the call ----------------------------------------------------------------------
    async def call(self, call: Call, parse: Callable[[Reply, Call], Verdict], sample: int = 0) -> Verdict:
        """One verdict for ``call``: remembered, cached, shared with an identical call in
        flight, or from the model. ``parse`` reads a reply (raising ``ParseError``).

        Returns an ok ``Verdict`` with ``usage``, or an error ``Verdict`` (truncated reply,
        unreadable after one re-ask, a non-retryable provider error, retries exhausted, the
        run stopped) with the raw reply kept. Never raises for a row's failure; raises
        ``asyncio.CancelledError`` when the task was cancelled (``_after_woken``)."""
        _held_cancellation()
        key = self.key(call, sample)
        made = self._ahead.pop(key, None) if self._ahead else None
        if made is not None:  # the first row whose call this is made it ahead: its own, paid, not cached
            return (await asyncio.shield(made)).copy()
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
        ahead = AHEAD.get()
        if ahead:
            self._ahead[key] = done
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
        done.set_result(verdict.copy() if ahead else verdict)  # what the row that claims it gets: the reply as made, before this job decides on it
        return verdict

    async def _fetch(self, key: str, call: Call, parse: Callable[[Reply, Call], Verdict], sample: int) -> Verdict:
        if self._probe_done is None:
            self._probe_done = asyncio.Event()
        probe = not self._probe_started
        if probe:
            self._probe_started = True
            # the others go at the probe's answer, or after the grace (a timer, not a wait per call) of a loop thread free to send it
            _release_after(asyncio.get_running_loop(), self._probe_done, PROBE_GRACE_S)
        elif not self._probe_done.is_set():
            await self._probe_done.wait()
        try:
            if self.fatal is not None or self.stopping:
                reason = f"not run: {self.fatal}" if self.fatal is not None else Reason.INTERRUPTED
                return Verdict.failed(call.metric, reason, mode=call.mode)
            verdict, replied = await self._ask(call, parse, probe, key)
        finally:
            if probe:
                self._probe_done.set()
                self.answered.set()
        if verdict.status == OK and self.cache is not None and getattr(self.transport, "cacheable", True):
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

    def _limiter(self) -> _Limit:
        if self._limit is None:
            limit = _LIMITS.setdefault((self.provider_model, self.api_base), _Limit())
            limit.asked[id(self)] = 1 if self.transport.free else self.settings.concurrency
            self._limit = limit
        return self._limit

    async def _send(self, call: Call, messages: list[dict[str, Any]], probe: bool, key: str | None = None, ask: int = 0) -> Reply:
        """One request with the limit, pacing and retries; raises ``_Failed``. ``key``: the call's
        cache key and ``ask`` 0 (1 for the re-ask), carried on the ``Request`` for a transport
        that names its calls (the batch: ``ragjudge.transports.batch``)."""
        def wait(state: Any) -> float:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, _Again):
                return 0.0
            return asked_wait(getattr(exc, "retry_after", None), _backoff()(state))

        def wait_first(exc: BaseException) -> float:
            """The wait before the first retry: the first backoff, or longer where the server asks."""
            if isinstance(exc, _Again):
                return 0.0
            return asked_wait(getattr(exc, "retry_after", None), min(BACKOFF_MAX_S, BACKOFF_INITIAL_S + random.uniform(0, BACKOFF_INITIAL_S)))

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
            if self.settings.max_cost is not None and self.spent >= self.settings.max_cost and not prepaid(self.transport, request):
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
                    self.answered.set()
                    if self._probe_done is not None:
                        self._probe_done.set()

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
        env = self.settings.api_key_env or getattr(self.transport, "key_env", None)  # a decision model's own (TYPESAFE_API_KEY...)
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
            self._limit.asked.pop(id(self), None)
            if not self._limit.asked and not self._limit.in_use:
                _LIMITS.pop((self.provider_model, self.api_base), None)
            self._limit = None
        await self.transport.aclose()


class PanelModel:
    """The members of a panel (``judge.panel``), one ``Model`` each, seen by the run as one
    model: the scorer asks each member (``members``) and combines their verdicts
    (``ragjudge.judges.panel.decide``).

    Each member has its own chokepoint: its own cache keys (its model and API base), limit,
    probe, retries and fatal error; they share one budget (``judge.max_cost``, a ``Ledger``).
    ``fatal``: a ``ProviderFatalError`` only when fewer members than the quorum can still
    answer (a member's own fatal error leaves the rows to the others). ``transport``: as
    ``Model``'s, for every member; one with a ``for_model(provider_model)`` method (the test
    double ``ragjudge.transports.fake.FakeTransport``) gives each member its own.
    """

    def __init__(self, settings: Any, cache: Any = None, transport: Any = None) -> None:
        self.settings = settings
        self.cache = cache
        self.quorum: int = settings.quorum
        self.ledger = Ledger()
        self.members: list[tuple[str, Model]] = []
        for member in settings.panel:
            own = settings.member(member)
            given = transport.for_model(resolve_model(own)) if hasattr(transport, "for_model") else transport
            self.members.append((member.label, model_for(own, cache, given, self.ledger)))
        self.provider_model = "panel: " + ", ".join(model.provider_model for _, model in self.members)
        self.transport = self.members[0][1].transport

    @property
    def names(self) -> list[str]:
        """The members' names (columns ``M_panel_NAME_*``), in the panel's order."""
        return [name for name, _ in self.members]

    @property
    def fatal(self) -> ProviderFatalError | None:
        """The error that stops the whole panel: fewer members than the quorum are left without
        a fatal error of their own; None while the quorum holds."""
        stopped = [(name, model.fatal) for name, model in self.members if model.fatal is not None]
        if len(self.members) - len(stopped) >= self.quorum:
            return None
        return ProviderFatalError(f"the panel is below its quorum of {self.quorum}: "
                                  + "; ".join(f"{name}: {fatal}" for name, fatal in stopped))

    @fatal.setter
    def fatal(self, value: ProviderFatalError | None) -> None:  # another Ray actor's fatal error: no member calls
        for _, model in self.members:
            model.fatal = value

    @property
    def budget_reached(self) -> bool:
        return any(model.budget_reached for _, model in self.members)

    @property
    def spent(self) -> float:
        return self.ledger.spent

    @property
    def calls(self) -> int:
        return sum(model.calls for _, model in self.members)

    @property
    def retries(self) -> int:
        return sum(model.retries for _, model in self.members)

    @property
    def stopping(self) -> bool:
        return any(model.stopping for _, model in self.members)

    @property
    def on_wire(self) -> int:
        return sum(model.on_wire for _, model in self.members)

    def prefetch(self, calls: list[Call]) -> None:
        """Nothing: each member looks its calls up as it makes them."""

    def group(self, calls: list[Call]) -> None:
        """Each member groups a row's calls as its kind does (``Model.group``, ``DecisionModel.group``)."""
        for _, model in self.members:
            model.group(calls)

    def peek(self, call: Call, sample: int = 0, key: str | None = None) -> Verdict | None:
        """None: a panel's verdict is its members' (each member's ``call`` reads its own cache)."""
        return None

    def unclaimed(self) -> list[Verdict]:
        """Every member's calls made ahead that no row made again (``Model.unclaimed``)."""
        return [verdict for _, model in self.members for verdict in model.unclaimed()]

    def interrupt(self) -> None:
        """Stop starting calls on every member."""
        for _, model in self.members:
            model.interrupt()

    async def aclose(self) -> None:
        """Close every member (``Model.aclose``)."""
        for _, model in self.members:
            await model.aclose()


class _Group:
    """The calls of one row that a decision model asks in one request (``DecisionModel.group``):
    the first member to be sent sends every member's questions about the union of their
    states; the others take their answers from that reply."""

    def __init__(self, members: list[Call]) -> None:
        self.members = members
        self.task: asyncio.Future | None = None
        self.paid = False  # the request's count (calls, retries) goes to the first member that takes the reply

    def union(self) -> Call:
        """One ``Call`` asking every member's questions about every field any member reads; a
        question two members ask (sufficient_k's whole-context probe is sufficiency's) once."""
        first = self.members[0]
        state: dict[str, Any] = {}
        for member in self.members:
            state.update(member.state)
        questions = list({q.id: q for m in self.members for q in m.questions}.values())
        return Call(first.metric, first.version, first.mode, first.messages, None, questions=questions, state=state)

    def share(self, reply: Reply, call: Call) -> Reply:
        """``call``'s part of the row's ``reply``: its own answers, and its share of the input
        tokens and cost by its share of the questions (the request, calls and retries, counted once)."""
        asked = sum(len(m.questions) for m in self.members)
        mine = len(call.questions) / asked if asked else 0.0
        usage = reply.usage
        share = Usage(round(usage.prompt_tokens * mine), 0, None if usage.cost_usd is None else usage.cost_usd * mine,
                      0 if self.paid else usage.calls, 0 if self.paid else usage.retries, usage.estimated)
        self.paid = True
        answers = reply.answers or {}
        return Reply(None, reply.finish_reason, usage=share, answers={q.id: answers[q.id] for q in call.questions if q.id in answers})


class DecisionModel(Model):
    """The chokepoint for a decision model (``--model openai-decisions/...``, ``systemone/...``;
    ``ragjudge.transports.decision_models``): a ``Call``'s ``questions`` about its ``state`` are
    sent, never its chat messages; ``call(call, parse)`` gives the metric's ``Verdict`` as
    ``Model.call`` does (cache, limits, retries after the servers' delays, the budget), so
    panels and the scorer's chains use it unchanged.

    Every metric of a row goes in one request (``group``, called by the scorer for each row),
    split only past the protocol's limits: OpenAI's 200 questions, and a System One request over
    the model's token limit (``max_tokens_exceeded``: each metric is then asked alone); each metric's verdict is
    cached under its own key (``key``: the model, its API base, the metric, its prompt version,
    its own questions and the fields it reads), so a metric added later pays for its own
    questions only. A request's input tokens and cost are shared among its metrics by their
    number of questions; its call is counted once."""

    LIMITS = {"openai-decisions": 200}  # questions a request takes (System One has no count limit: its token budget)

    def key(self, call: Call, sample: int = 0) -> str:
        """The cache key of ``call``: model, API base, metric, prompt version, the metric's own
        questions and the row fields it reads (``call.state``). Not the chat messages."""
        memo = call.memo.get((id(self), sample))
        if memo is not None:
            return memo
        from dataclasses import asdict

        key = call.memo[(id(self), sample)] = cache_key(
            model=self.provider_model, api_base=self.api_base, metric=call.metric, prompt_version=call.version, sample=sample,
            questions=[asdict(q) for q in call.questions], state=call.state)
        return key

    def request_tokens(self, call: Call) -> int:
        """The input tokens of ``call``'s request as the dry run and ``--max-cost`` count them: its
        questions and state as JSON text, 4 characters a token (the providers publish no tokenizer)."""
        import json
        from dataclasses import asdict

        text = json.dumps({"state": call.state, "questions": [asdict(q) for q in call.questions]}, ensure_ascii=False)
        return max(1, len(text) // 4)

    def too_long(self, messages: list[dict[str, Any]]) -> str | None:
        """None: the chat messages are not sent (the provider refuses a state past its limit)."""
        return None

    def group(self, calls: list[Call]) -> None:
        """Ask ``calls`` (one row's, each a metric's) in one request: the first sent sends them all;
        a new request only where the next metric's questions would pass the protocol's limit."""
        asked = [call for call in calls if call.questions]
        if len(asked) < 2:
            return
        limit = self.LIMITS.get(self.provider_model.partition("/")[0])
        groups: list[list[Call]] = [[]]
        count = 0
        for call in asked:
            if groups[-1] and limit is not None and count + len(call.questions) > limit:
                groups.append([])
                count = 0
            groups[-1].append(call)
            count += len(call.questions)
        for members in groups:
            if len(members) > 1:
                found = _Group(members)
                for call in members:
                    call.memo[(id(self), "group")] = found

    async def _send(self, call: Call, messages: list[dict[str, Any]], probe: bool, key: str | None = None, ask: int = 0) -> Reply:
        found: _Group | None = call.memo.get((id(self), "group"))
        if found is None:
            return await super()._send(call, messages, probe, key, ask)
        if found.task is None:
            found.task = asyncio.ensure_future(super()._send(found.union(), messages, probe, None, ask))
        try:
            reply = await asyncio.shield(found.task)
        except _Failed as failure:
            usage = Usage() if found.paid else failure.usage
            found.paid = True
            if failure.kind == base.TOKENS_EXCEEDED:  # the row's request is over the model's token limit: this metric asked alone
                reply = await super()._send(call, messages, probe, key, ask)
                reply.usage = reply.usage + usage
                return reply
            raise _Failed(failure.reason or str(failure), usage, failure.fatal, failure.kind) from None
        return found.share(reply, call)

    async def _ask(self, call: Call, parse: Callable[[Reply, Call], Verdict], probe: bool, key: str | None = None) -> tuple[Verdict, bool]:
        """The request (``_send``: the row's, where grouped), then ``parse`` of the metric's answers;
        no re-ask (a malformed reply is a server error, retried by ``_send``)."""
        try:
            reply = await self._send(call, [], probe, key, 0)
        except _Failed as failure:
            if failure.fatal is not None and self.fatal is None:
                self.fatal = failure.fatal
            return Verdict.failed(call.metric, failure.reason or str(failure), mode=call.mode, usage=failure.usage), False
        reply.usage = self._priced(reply.usage)
        self.spent += reply.usage.cost_usd or 0.0
        try:
            verdict = parse(reply, call)
        except ParseError as exc:
            return Verdict.failed(call.metric, f"unreadable decision reply: {exc}", mode=call.mode, usage=reply.usage), True
        verdict.usage = reply.usage
        return verdict, True


def model_for(settings: Any, cache: Any = None, transport: Any = None, ledger: Ledger | None = None) -> Model:
    """The chokepoint for ``settings.model``: a ``DecisionModel`` for a decision model, else a ``Model``."""
    if decision_model(settings.model):
        return DecisionModel(settings, cache, transport, ledger)
    return Model(settings, cache, transport, ledger)


def _release_after(loop: asyncio.AbstractEventLoop, event: asyncio.Event, grace: float) -> None:
    """Set ``event`` (the probe's, ``Model._fetch``) ``grace`` seconds from now, unless it is set
    by then. A timer that fires more than ``PROBE_LATE_S`` late found the loop thread held (a
    panel's run imported pandas on the main thread while its members' first calls were out): the
    probe may not even have been sent, or its answer, a 401 say, waits unread, so the grace starts
    again rather than letting the queued calls go before that answer (issue 60 item 15: a member
    with a bad key was called 16 times, its concurrency, instead of once)."""
    due = loop.time() + grace

    def release() -> None:
        if event.is_set():
            return
        if loop.time() - due > PROBE_LATE_S:
            _release_after(loop, event, grace)
            return
        event.set()

    loop.call_later(grace, release)


def asked_wait(after: float | None, step: float) -> float:
    """Seconds to wait before a retry: the backoff's next ``step``, or the server's ``after``
    (Retry-After and the like, seconds) where it asks for longer, up to ``RETRY_AFTER_MAX_S``. A
    server's wait of zero, below zero, in the past or unreadable never shortens the backoff: a
    server answering ``Retry-After: 0`` while overloaded got its retries back to back
    (will-ockmore/httpx-retries#13)."""
    if after is None or not after > step:  # None, NaN, 0, negative, or shorter than the backoff
        return step
    return min(after, RETRY_AFTER_MAX_S)


_BACKOFF: Any = None


def _backoff() -> Any:
    """tenacity's exponential backoff with jitter (made on the first retry, and again when
    ``BACKOFF_INITIAL_S`` or ``BACKOFF_MAX_S`` changed): before retry n (n = 1, 2, ...) it waits
    ``min(BACKOFF_INITIAL_S * 2**(n-1) + uniform(0, BACKOFF_INITIAL_S), BACKOFF_MAX_S)`` seconds
    (Google Cloud's retry strategy, which tenacity follows).

    tenacity 9.2 renamed the first factor ``initial=`` to ``multiplier=`` (``initial=`` warns there);
    every release from 8.2 to 9.1 (Phoenix's server keeps 9.1.4) knows only ``initial=``, and
    ``multiplier=`` raised TypeError on each retry there (issue 60 item 11): the name is taken from
    the installed release's signature."""
    global _BACKOFF
    if _BACKOFF is None or _BACKOFF[0] != (BACKOFF_INITIAL_S, BACKOFF_MAX_S):
        import inspect

        from tenacity import wait_exponential_jitter

        factor = "multiplier" if "multiplier" in inspect.signature(wait_exponential_jitter).parameters else "initial"
        _BACKOFF = ((BACKOFF_INITIAL_S, BACKOFF_MAX_S),
                    wait_exponential_jitter(**{factor: BACKOFF_INITIAL_S}, max=BACKOFF_MAX_S, jitter=BACKOFF_INITIAL_S))
    return _BACKOFF[1]


def prepaid(transport: Any, request: Request) -> bool:
    """Whether ``transport`` answers ``request`` with a reply already paid for (a batch's reply,
    ``ragjudge.transports.batch``): the budget never refuses it."""
    check = getattr(transport, "prepaid", None)
    return bool(check(request)) if check is not None else False


def _cancelled(usage: Usage) -> None:
    """Add ``usage``, spent on a call being cancelled, to its row's ``CANCELLED`` list."""
    spent = CANCELLED.get()
    if spent is not None and usage.calls:
        spent.append(usage)


def _requests(attempts: int) -> Usage:
    """The usage of ``attempts`` requests that got no reply: every one counted, all but the first a retry."""
    return Usage(calls=attempts, retries=max(0, attempts - 1))


def _counted(reply: Reply, attempts: int) -> Reply:
    """``reply``, its usage counting every request made for it (``attempts``; the failed
    ones before it are retries)."""
    reply.usage = replace(reply.usage, calls=attempts, retries=max(0, attempts - 1))
    return reply


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, _Again):
        return True
    return isinstance(exc, TransportError) and exc.kind in base.RETRYABLE


def _unpaid(verdict: Verdict) -> Verdict:
    """``verdict`` for a row that made no call of its own: no usage; ``cached`` when ok."""
    copy = verdict.copy(usage=Usage())
    copy.cached = True if verdict.status == OK else verdict.cached
    return copy

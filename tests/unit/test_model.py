"""The model chokepoint in the unit tier: ``Model`` against the in-process fake transport
(ragjudge.transports.fake), with no HTTP: calls and retries counted. Moved from
tests/test_peer_faults_model.py, its assertions unchanged; the provider behaviours stay there,
through both transports against the loopback server, and so does the in-process test of the
input limit (it counts a known model's tokens with litellm, whose import alone takes seconds)."""

from __future__ import annotations

import pytest

def test_the_model_counts_calls_and_retries_in_process():
    """The chokepoint without HTTP: two 429s then a reply is three calls, two retries."""
    from ragjudge import _loop
    from ragjudge import load_config
    from ragjudge.transports.fake import FakeTransport
    from ragjudge.model import Model
    from ragjudge.transports import base
    from ragjudge.transports.base import TransportError
    from ragjudge.types import Call, Verdict

    fake = FakeTransport()
    fake.errors.extend([TransportError(base.RATE_LIMIT, "HTTP 429", 0.0, 429), TransportError(base.SERVER, "HTTP 500", 0.0, 500)])
    fake.replies.append('{"verdict": "yes"}')
    model = Model(load_config(None, {"judge": {"model": "openai/fake-judge"}}).judge, None, fake)
    call = Call(metric="m", version="v", mode=None, messages=[{"role": "user", "content": "q"}], response_format=None)
    verdict = _loop.run(model.call(call, lambda reply, _: Verdict(metric="m", status="ok", score=1.0)))
    assert (verdict.usage.calls, verdict.usage.retries) == (3, 2) == (model.calls, model.retries)
    assert len(fake.requests) == 3
    _loop.run(model.aclose())


@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_the_probe_holds_the_other_calls_only_for_its_grace_and_a_fast_auth_error_still_costs_one_call():
    """The first call goes alone; the others wait for its answer or ``PROBE_GRACE_S``, whichever
    comes first. A probe that takes the model's time (here 1 s) no longer holds them for all of
    it (issue 51: the probe's lone round was one whole latency of every run); a 401 within the
    grace still stops the run after that one call; a slower one meets the calls sent by then,
    and the rows never sent say "not run"."""
    import asyncio

    from ragjudge import _loop, load_config
    from ragjudge.model import PROBE_GRACE_S, Model
    from ragjudge.transports import base
    from ragjudge.transports.base import TransportError
    from ragjudge.transports.fake import FakeTransport
    from ragjudge.types import Call, Verdict

    class Timed(FakeTransport):
        def __init__(self, latency: float) -> None:
            super().__init__(latency=latency)
            self.times: list[tuple[float, float]] = []  # (sent, answered), the loop's clock

        async def complete(self, request):
            sent = asyncio.get_running_loop().time()
            try:
                return await super().complete(request)
            finally:
                self.times.append((sent, asyncio.get_running_loop().time()))

    def calls(n: int) -> list[Call]:
        return [Call(metric="m", version="v", mode=None, messages=[{"role": "user", "content": f"q{i}"}], response_format=None)
                for i in range(n)]

    def parse(reply, call):
        return Verdict(metric="m", status="ok", score=1.0)

    def run(transport, concurrency: int = 8) -> list[Verdict]:
        settings = load_config(None, {"judge": {"model": "openai/fake-judge", "concurrency": concurrency}}).judge
        model = Model(settings, None, transport)

        async def go():
            return await asyncio.gather(*(model.call(call, parse) for call in calls(5)))

        try:
            return _loop.run(go())
        finally:
            _loop.run(model.aclose())

    slow = Timed(latency=PROBE_GRACE_S + 0.5)
    assert [v.status for v in run(slow)] == ["ok"] * 5
    (probe_sent, probe_answered), *others = sorted(slow.times)
    assert len(others) == 4 and all(sent < probe_answered for sent, _ in others)  # they left while the probe was out
    assert all(sent >= probe_sent + PROBE_GRACE_S * 0.9 for sent, _ in others)  # but not before the grace

    refused = FakeTransport()  # the 401 at once: one call
    refused.errors.append(TransportError(base.AUTH, "Incorrect API key provided", 0.0, 401))
    verdicts = run(refused)
    assert refused.calls == 1
    assert sorted(str(v.error)[:30] for v in verdicts) == ["authentication failed for open"] + ["not run: authentication failed"] * 4

    late = FakeTransport(latency=PROBE_GRACE_S + 0.2)  # the 401 after the grace: the call sent in the grace is answered
    late.errors.append(TransportError(base.AUTH, "Incorrect API key provided", 0.0, 401))
    verdicts = run(late, concurrency=2)
    assert late.calls == 2
    assert sorted(str(v.error)[:30] for v in verdicts) == ["None", "authentication failed for open"] + ["not run: authentication failed"] * 3


def test_a_freed_slot_sends_the_next_request_before_the_reply_that_freed_it_is_read():
    """When a reply frees a slot, the call waiting for it sends its request before that reply
    is read, cached and decided (issue 51): with replies coming back together, new calls went
    out only once the whole burst had been processed (597 -> 613 calls/s at C=64, L=100 ms,
    bench/README figure 1c)."""
    import asyncio

    from ragjudge import _loop, load_config
    from ragjudge.model import Model
    from ragjudge.transports.fake import FakeTransport
    from ragjudge.types import Call, Verdict

    events: list[str] = []

    class Logged(FakeTransport):
        async def complete(self, request):
            events.append("sent " + request.messages[-1]["content"])
            return await super().complete(request)

    def parse(reply, call):
        events.append("read " + call.messages[-1]["content"])
        return Verdict(metric="m", status="ok", score=1.0)

    settings = load_config(None, {"judge": {"model": "openai/fake-judge", "concurrency": 1}}).judge
    model = Model(settings, None, Logged(latency=0.01))
    calls = [Call(metric="m", version="v", mode=None, messages=[{"role": "user", "content": f"q{i}"}], response_format=None)
             for i in range(3)]

    async def go():
        return await asyncio.gather(*(model.call(call, parse) for call in calls))

    try:
        assert [v.status for v in _loop.run(go())] == ["ok"] * 3
    finally:
        _loop.run(model.aclose())
    # q0 is the probe (alone); q1 and q2 share the one slot: q2 leaves before q1's reply is read
    assert events == ["sent q0", "read q0", "sent q1", "sent q2", "read q1", "read q2"]


def test_a_cancellation_while_the_woken_call_goes_first_keeps_the_reply_and_stops_the_next_call():
    """The reply is in hand while the freed slot's next call goes first; a cancellation in those
    loop turns (Ctrl-C: every row's task cancelled) does not lose it. The task ends with its
    reply, and the cancellation is raised at its next call (a follow-up call is not made)."""
    import asyncio

    from ragjudge import _loop, load_config
    from ragjudge.model import CallLimit, Model
    from ragjudge.transports.fake import FakeTransport
    from ragjudge.types import Call, Verdict

    settings = load_config(None, {"judge": {"model": "openai/fake-judge"}}).judge
    fake = FakeTransport()
    model = Model(settings, None, fake)
    follow_up = Call(metric="m", version="v", mode=None, messages=[{"role": "user", "content": "next"}], response_format=None)

    async def go():
        limit = CallLimit()
        limit.ask(0, 1)
        release = asyncio.Event()
        outcome: list[str] = []

        async def holder():
            async with limit:
                await release.wait()
                reply = "the reply"
            outcome.append(reply)  # the reply survives the cancellation
            try:
                await model.call(follow_up, lambda reply, call: Verdict(metric="m", status="ok", score=1.0))
            except asyncio.CancelledError:
                outcome.append("next call cancelled")
                raise
            return reply

        async def waiter():
            async with limit:
                outcome.append("waiter in")

        first = asyncio.ensure_future(holder())
        await asyncio.sleep(0)
        second = asyncio.ensure_future(waiter())
        await asyncio.sleep(0)
        release.set()
        await asyncio.sleep(0)  # the holder leaves the limit, wakes the waiter and lets it go first
        first.cancel()
        done = await asyncio.gather(first, second, return_exceptions=True)
        return outcome, done

    try:
        outcome, (first, second) = _loop.run(go())
    finally:
        _loop.run(model.aclose())
    assert outcome == ["waiter in", "the reply", "next call cancelled"]
    assert isinstance(first, asyncio.CancelledError) and second is None
    assert fake.calls == 0  # the follow-up was never sent


def test_the_backoff_doubles_from_the_first_step_with_its_jitter_up_to_the_cap_on_every_tenacity(monkeypatch):
    """Issue 60 item 11: ``multiplier=`` exists from tenacity 9.2.1 only; on 8.2 to 9.1.4 (Phoenix's)
    making the backoff raised TypeError and every retried call became a row error. Before retry n
    the wait is min(0.5 * 2**(n-1) + uniform(0, 0.5), 30) s, on the lowest tenacity the range allows
    (make unit-lowest) as on the locked one, and no deprecation warning (``initial=`` warns on 9.2)."""
    import random
    import warnings

    from tenacity import RetryCallState

    from ragjudge.model import retry as model

    monkeypatch.setattr(model, "BACKOFF_INITIAL_S", 0.5)
    monkeypatch.setattr(model, "BACKOFF_MAX_S", 30.0)
    random.seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wait = model._backoff()
    state = RetryCallState(None, None, (), {})
    for n, (low, high) in enumerate([(0.5, 1.0), (1.0, 1.5), (2.0, 2.5), (4.0, 4.5), (8.0, 8.5), (16.0, 16.5), (30.0, 30.0), (30.0, 30.0)], 1):
        state.attempt_number = n
        waits = [wait(state) for _ in range(50)]
        assert low <= min(waits) and max(waits) <= high, (n, min(waits), max(waits))
        assert high == low or max(waits) - min(waits) > 0.25 * model.BACKOFF_INITIAL_S  # the jitter is there


# issue 65 (model split, review of the hasattr gates): ``Model._message`` read ``transport.key_env``
# with getattr, and the decision transport had none, so a decision model's missing key said
# "set the provider's API key variable (e.g. OPENAI_API_KEY)" for System One too
def test_a_decision_models_fatal_error_names_its_own_key_variable(monkeypatch):
    from ragjudge import load_config
    from ragjudge.model import model_for
    from ragjudge.transports import base
    from ragjudge.transports.base import TransportError

    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    model = model_for(load_config(None, {"judge": {"model": "systemone/jev-latest"}}).judge)
    assert model._message(TransportError(base.NO_KEY, "no API key in TYPESAFE_API_KEY")).endswith("set TYPESAFE_API_KEY")
    assert model._message(TransportError(base.AUTH, "HTTP 401")).endswith("set TYPESAFE_API_KEY")

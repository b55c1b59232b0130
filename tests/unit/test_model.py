"""The model chokepoint in the unit tier: ``Model`` against the in-process fake transport
(ragjudge.transports.fake), with no HTTP: calls and retries counted, the input limit checked
before a call. Moved from tests/test_peer_faults_model.py, their assertions unchanged; the
provider behaviours stay there, through both transports against the loopback server."""

from __future__ import annotations


def test_the_model_counts_calls_and_retries_in_process():
    """The chokepoint without HTTP: two 429s then a reply is three calls, two retries."""
    from ragjudge import _loop
    from ragjudge.config import load_config
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


def test_the_input_limit_in_process_and_no_limit_when_the_table_has_none():
    from ragjudge import _loop
    from ragjudge.config import load_config
    from ragjudge.transports.fake import FakeTransport
    from ragjudge.model import Model
    from ragjudge.types import Call, Verdict

    long = [{"role": "user", "content": "alpha beta gamma delta " * 4000}]  # ~16k tokens
    call = Call(metric="m", version="v", mode=None, messages=long, response_format=None)

    def run(provider_model: str) -> tuple[Verdict, FakeTransport]:
        fake = FakeTransport(provider_model)
        fake.replies.append('{"verdict": "yes"}')
        model = Model(load_config(None, {"judge": {"model": provider_model}}).judge, None, fake)
        try:
            return _loop.run(model.call(call, lambda reply, _: Verdict(metric="m", status="ok", score=1.0))), fake
        finally:
            _loop.run(model.aclose())

    refused, fake = run("openai/gpt-4")  # 8192 tokens
    assert refused.status == "error" and refused.input_error and not fake.requests
    assert "exceeds openai/gpt-4's input limit of 8192" in refused.error
    taken, fake = run("openai/gpt-4o-mini")  # 128000 tokens: it fits
    assert taken.status == "ok" and len(fake.requests) == 1
    unknown, fake = run("openai/fake-judge")  # no row in the table: no limit known, sent as before
    assert unknown.status == "ok" and len(fake.requests) == 1

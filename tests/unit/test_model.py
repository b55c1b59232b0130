"""The model chokepoint in the unit tier: ``Model`` against the in-process fake transport
(ragjudge.transports.fake), with no HTTP: calls and retries counted. Moved from
tests/test_peer_faults_model.py, its assertions unchanged; the provider behaviours stay there,
through both transports against the loopback server, and so does the in-process test of the
input limit (it counts a known model's tokens with litellm, whose import alone takes seconds)."""

from __future__ import annotations


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

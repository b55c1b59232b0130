"""The unit tier's judge (ragjudge.transports.fake.FakeTransport) answers as the loopback fake
server does: the same table, summary and exit code for the same input, so the unit tests
assert the values the loopback tests asserted."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLE, read_jsonl, write_jsonl


def test_the_in_process_judge_scores_the_sample_data_as_the_loopback_server_does(run_cli, run_score, tmp_path, judge, server):
    server.keep_requests = True
    over_http, in_process = tmp_path / "http.jsonl", tmp_path / "fake.jsonl"
    http_summary, fake_summary = tmp_path / "http.json", tmp_path / "fake.json"
    source = str(SAMPLE / "rag_eval.jsonl")
    cli = run_cli(["score", source, "-o", str(over_http), "--summary-json", str(http_summary), "--no-cache"])
    unit = run_score(source, output=str(in_process), summary_json=str(fake_summary), no_cache=True)
    assert (cli.code, unit.code) == (1, 1)
    assert read_jsonl(in_process) == read_jsonl(over_http)
    assert len(read_jsonl(in_process)) == 32
    drop = ("seconds",)
    http_doc, fake_doc = (json.loads(p.read_text()) for p in (http_summary, fake_summary))
    assert {k: v for k, v in fake_doc.items() if k not in drop} == {k: v for k, v in http_doc.items() if k not in drop}
    assert judge.calls == server.calls == 37
    # the request bodies are the ones the aiohttp transport sends
    key = lambda body: json.dumps(body, sort_keys=True)  # noqa: E731
    assert sorted(map(key, judge.requests)) == sorted(map(key, server.requests))


def test_scripted_replies_errors_and_truncation_come_back_as_a_reply_or_a_transport_error():
    from ragjudge import _loop
    from ragjudge.transports import base
    from ragjudge.transports.base import Request, TransportError
    from ragjudge.transports.fake import FakeTransport

    fake = FakeTransport("openai/gpt-4o-mini")
    fake.errors.append(TransportError(base.RATE_LIMIT, "HTTP 429", 0.0, 429))
    fake.replies.append('{"verdict": "yes"}')
    request = Request(messages=[{"role": "user", "content": "x" * 400}], temperature=0.0, max_tokens=256, logprobs=True)
    with pytest.raises(TransportError) as info:
        _loop.run(fake.complete(request))
    assert info.value.kind == base.RATE_LIMIT
    reply = _loop.run(fake.complete(request))
    assert (reply.text, reply.finish_reason) == ('{"verdict": "yes"}', "stop")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.estimated) == (100, 4, False)
    assert reply.usage.cost_usd == pytest.approx(100 * 0.15e-6 + 4 * 0.6e-6)  # the price table's gpt-4o-mini
    assert reply.logprobs["content"]  # asked for: the tokens' log-probabilities
    fake.truncate, fake.usage = True, False
    cut = _loop.run(fake.complete(request))  # no script left: the fake server's word-overlap rule
    assert cut.finish_reason == "length" and json.loads(cut.text) == {"rationale": "Generic reply from the fake judge server.", "result": "yes"}
    assert (cut.usage.prompt_tokens, cut.usage.estimated) == (0, True)
    assert fake.calls == 3 and [body["logprobs"] for body in fake.requests] == [True, True, True]
    assert fake.requests[0]["model"] == "gpt-4o-mini" and "top_logprobs" in fake.requests[0]


def test_a_decision_test_fails_when_the_fake_judge_answers_otherwise(run_score, tmp_path, judge):
    # the unit tier's values come from the judge it is given: a scripted "no" turns the row's verdict
    row = {"id": "a", "request": "Where is landmark 1?", "context": ["Landmark 1 stands in city 1."]}
    out = tmp_path / "out.jsonl"
    source = write_jsonl(tmp_path / "in.jsonl", [row])
    assert run_score(source, metric=["sufficiency"], output=str(out), no_cache=True).code == 0
    assert read_jsonl(out)[0]["sufficiency_score"] == 1.0
    judge.replies.append(json.dumps({"needed": "n", "quote": "NONE", "rationale": "r", "verdict": "no"}))
    failed = run_score(source, metric=["sufficiency"], output=str(out), no_cache=True)
    assert read_jsonl(out)[0]["sufficiency_score"] == 0.0 and failed.code == 1
    assert "FAIL sufficiency: pass rate 0.00 < 1.00 (0 of 1 ok rows passed)" in failed.lines

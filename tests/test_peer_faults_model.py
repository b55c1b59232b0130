"""Faults of the model chokepoint and the transports found by replaying peers' bug reports
(issue 29, items 2, 3, 5, 7, 13 and 14). Each has the report's case with the right value and
a second test of the same kind in another shape; a case that involves a transport runs
through both (the ``transport`` fixture) against the loopback fake server."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl
from ragjudge.fakeserver import FakeJudgeServer


def rows(n: int, start: int = 0) -> list[dict]:
    return [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."],
             "expected_response": f"Landmark {i} stands in city {i}.", "response": f"City {i}."}
            for i in range(start, start + n)]


def summary_of(path) -> dict:
    return json.loads(path.read_text())


# 2. No usage in a reply is unknown, not zero: estimated, marked, and counted by the budget

def test_replies_without_usage_are_estimated_and_trip_the_budget(run_cli, tmp_path, server, transport):
    server.usage = False
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(4)), "-m", "sufficiency", "--model", "openai/gpt-4o-mini",
                      "--max-cost", "0.000001", "--concurrency", "1", "-o", str(out), "--summary-json", str(summary)])
    written = read_jsonl(out)
    done = [r for r in written if r["sufficiency_status"] == "ok"]
    left = [r for r in written if r["sufficiency_error"] == "budget reached"]
    assert len(done) == 1 and len(left) == 3 and server.calls == 1  # the first reply's estimated cost spends the budget
    row = done[0]
    assert row["sufficiency_prompt_tokens"] > 0 and row["sufficiency_completion_tokens"] > 0
    assert row["sufficiency_tokens_estimated"] is True
    assert row["sufficiency_cost_usd"] == pytest.approx(
        row["sufficiency_prompt_tokens"] * 0.15e-6 + row["sufficiency_completion_tokens"] * 0.6e-6)
    assert all(r["sufficiency_tokens_estimated"] is None for r in left)  # no call made: nothing to estimate
    doc = summary_of(summary)
    assert doc["tokens_estimated"] is True and doc["metrics"]["sufficiency"]["tokens_estimated"] is True
    assert doc["cost_usd"] > 0.000001
    assert result.code == 3 and "budget reached" in result.stderr
    assert "(estimated: a reply reported no usage)" in result.stderr


def test_estimated_tokens_are_the_dry_runs_count_and_priced_by_judge_price(run_cli, tmp_path, server, transport):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  price: {input_per_mtok: 2.0, output_per_mtok: 8.0}\n")
    source = write_jsonl(tmp_path / "in.jsonl", rows(3))
    dry_summary, summary, out = tmp_path / "dry.json", tmp_path / "s.json", tmp_path / "out.jsonl"
    assert run_cli(["score", source, "-m", "completeness", "-c", str(config), "--dry-run", "--summary-json", str(dry_summary)]).code == 0
    server.usage = False
    result = run_cli(["score", source, "-m", "completeness", "-c", str(config), "-o", str(out), "--summary-json", str(summary),
                      "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    written = read_jsonl(out)
    assert all(r["completeness_tokens_estimated"] is True for r in written)
    # the statements and coverage calls' prompts, counted as the dry run counts them
    dry = summary_of(dry_summary)["dry_run"]["metrics"]["completeness"]
    assert sum(r["completeness_prompt_tokens"] for r in written) == dry["prompt_tokens"]
    for r in written:
        assert r["completeness_cost_usd"] == pytest.approx((r["completeness_prompt_tokens"] * 2.0 + r["completeness_completion_tokens"] * 8.0) / 1e6)
    # replies that do report usage are not marked
    server.usage = True
    again = run_cli(["score", source, "-m", "completeness", "-c", str(config), "-o", str(out), "--no-cache", "--min-pass-rate", "0"])
    assert again.code == 0 and all(r["completeness_tokens_estimated"] is False for r in read_jsonl(out))


# 3. A 429 is a rate limit to wait out, unless the provider marks it a hard quota

PER_MINUTE = ("Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, "
              "limit: 10, quota_id: GenerateRequestsPerMinutePerProjectPerModel-FreeTier per_minute. Please retry in 1s.")


def test_a_per_minute_quota_429_is_waited_out(run_cli, tmp_path, server, transport):
    server.errors.append((429, "RESOURCE_EXHAUSTED", PER_MINUTE, {"Retry-After": "1"}))
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(3)), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code in (0, 1), result.stderr
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 3
    assert server.calls == 4 and server.statuses[429] == 1
    assert server.arrivals[-1] - server.arrivals[0] >= 0.95  # Retry-After: 1 honoured (the retry comes last)


def test_a_wait_said_only_in_the_message_is_honoured_and_insufficient_quota_stays_fatal(run_cli, tmp_path, server, transport):
    server.errors.append((429, "rate_limit_exceeded", "Rate limit reached for requests per minute. Please try again in 700ms.", {}))
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(2)), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code in (0, 1), result.stderr
    assert server.calls == 3 and server.arrivals[-1] - server.arrivals[0] >= 0.65  # not the 10 ms backoff
    server.errors.append((429, "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.",
                          {"Retry-After": "1"}))
    fatal = run_cli(["score", write_jsonl(tmp_path / "more.jsonl", rows(3, start=10)), "-m", "sufficiency"])
    assert fatal.code == 3 and "quota exhausted" in fatal.stderr and server.calls == 4


@pytest.mark.parametrize("code, message, after, hard", [
    ("insufficient_quota", "You exceeded your current quota", None, True),
    ("", "insufficient_quota: check your plan and billing details", 3.0, True),
    ("", "You exceeded your quota.", None, True),  # no wait offered, no window named: as before
    ("RESOURCE_EXHAUSTED", PER_MINUTE, None, False),
    ("", "Quota exceeded for requests per minute", None, False),
    ("", "quota reached", 2.0, False),  # the server says when to come back
    ("rate_limit_exceeded", "Rate limit reached", None, False),
])
def test_hard_quota_against_a_rate_limit(code, message, after, hard):
    from ragjudge.http_errors import hard_quota

    assert hard_quota(code, message, after) is hard


@pytest.mark.parametrize("message, seconds", [
    ("Please retry in 1s.", 1.0), ("Please try again in 700ms.", 0.7), ("retry after 2.5 seconds", 2.5),
    ("Try again in 20 sec", 20.0), ("retry in 9000s", 120.0), ("Rate limit reached.", None),
])
def test_retry_hint_reads_the_wait_in_words(message, seconds):
    from ragjudge.http_errors import retry_hint

    assert retry_hint(message) == (None if seconds is None else pytest.approx(seconds))


# 5. The cache key holds the endpoint actually used, however it was given

@pytest.fixture
def second_server():
    with FakeJudgeServer() as fake:
        yield fake


def test_the_endpoint_from_the_environment_is_in_the_cache_key(run_cli, tmp_path, server, second_server, transport, monkeypatch, cache_dir):
    source = write_jsonl(tmp_path / "in.jsonl", rows(3))
    out = tmp_path / "out.jsonl"
    args = ["score", source, "-m", "sufficiency", "--model", "openai/fake-judge", "--cache-dir", cache_dir, "-o", str(out),
            "--min-pass-rate", "0", "--transport", transport]
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    assert run_cli(args, judge=False).code == 0
    assert server.calls == 3 and second_server.calls == 0
    monkeypatch.setenv("OPENAI_BASE_URL", second_server.url)
    assert run_cli(args, judge=False).code == 0
    assert second_server.calls == 3 and server.calls == 3  # B is called, not answered from A's replies
    assert all(r["sufficiency_cached"] is False for r in read_jsonl(out))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)  # back to A: its replies are in the cache
    assert run_cli(args, judge=False).code == 0
    assert server.calls == 3 and all(r["sufficiency_cached"] is True for r in read_jsonl(out))


def test_the_key_names_the_endpoint_whatever_gave_it_and_none_keeps_the_old_key(monkeypatch):
    from ragjudge import load_config
    from ragjudge.model import Model
    from ragjudge.types import Call

    class Named:
        free, where = False, ""

        def __init__(self, provider_model: str) -> None:
            self.provider_model = provider_model

    call = Call(metric="sufficiency", version="v", mode=None, messages=[{"role": "user", "content": "q"}], response_format=None)

    def key(judge: dict) -> str:
        config = load_config(None, {"judge": judge})
        return Model(config.judge, None, Named("openai/gpt-4o-mini")).key(call)

    none = key({"model": "openai/gpt-4o-mini"})
    flag = key({"model": "openai/gpt-4o-mini", "api_base": "http://proxy:8000/v1"})
    monkeypatch.setenv("OPENAI_API_BASE", "http://proxy:8000/v1")
    assert key({"model": "openai/gpt-4o-mini"}) == flag  # the same endpoint, from the environment
    monkeypatch.delenv("OPENAI_API_BASE")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1/")
    assert key({"model": "openai/gpt-4o-mini"}) == none  # OpenAI's own URL is the default: the old key
    monkeypatch.setenv("OPENAI_BASE_URL", "http://other:9/v1")
    assert key({"model": "openai/gpt-4o-mini"}) not in (none, flag)
    assert key({"model": "openai/gpt-4o-mini", "api_base": "http://proxy:8000/v1"}) == flag  # the flag wins over the environment


# 7. Every HTTP request is counted, and the retries on their own

def test_calls_count_every_request_and_retries_are_reported(run_cli, tmp_path, server, transport):
    server.rate_429, server.rate_500 = 0.3, 0.15
    summary = tmp_path / "s.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(30)), "-m", "sufficiency", "--summary-json", str(summary),
                      "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    doc = summary_of(summary)
    first_attempts = server.statuses[200]
    assert first_attempts == 30 and server.calls > 40  # the faults happened
    assert doc["provider_calls"] == server.calls
    assert doc["provider_retries"] == server.calls - first_attempts == server.statuses[429] + server.statuses[500]
    assert doc["metrics"]["sufficiency"]["retries"] == doc["provider_retries"]
    assert f"provider calls: {server.calls} ({doc['provider_retries']} retries)" in result.stderr


def test_two_calls_a_row_and_a_refused_response_format_are_counted(run_cli, tmp_path, server, transport):
    server.rate_500 = 0.2
    server.reject_response_format = True  # the first request is refused, then asked again without it
    summary, out = tmp_path / "s.json", tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(8)), "-m", "completeness", "--summary-json", str(summary),
                      "-o", str(out), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    doc = summary_of(summary)
    assert doc["provider_calls"] == server.calls
    assert doc["provider_retries"] == server.calls - server.statuses[200] > 0
    # per row: the statements and coverage requests, retries included, add up to the server's count
    assert doc["metrics"]["completeness"]["retries"] == doc["provider_retries"]
    assert len(read_jsonl(out)) == 8


# 13. A prompt past the model's input limit is a row error before the call; the dry run counts it

def long_context_rows() -> list[dict]:
    words = " ".join(f"word{i} stands near item{i * 7} in the old quarter." for i in range(6000))  # ~60k tokens
    return [*rows(2), {"id": "huge", "request": "Where is landmark 9?", "context": [words]}]


def test_a_prompt_past_the_input_limit_is_a_row_error_before_the_call(run_cli, tmp_path, server, transport):
    out, summary = tmp_path / "out.jsonl", tmp_path / "dry.json"
    source = write_jsonl(tmp_path / "in.jsonl", long_context_rows())
    dry = run_cli(["score", source, "-m", "sufficiency", "--model", "openai/gpt-4", "--dry-run", "--summary-json", str(summary)])
    assert dry.code == 0, dry.stderr
    estimate = summary_of(summary)["dry_run"]["metrics"]["sufficiency"]
    assert estimate["over_input_limit"] == 1 and estimate["calls"] == 2
    assert "1 row over the model's input limit" in dry.stderr + dry.stdout  # said "1 rows" (issue 44 item 13)
    result = run_cli(["score", source, "-m", "sufficiency", "--model", "openai/gpt-4", "-o", str(out), "--max-error-rate", "1",
                      "--min-pass-rate", "0"])
    written = {r["id"]: r for r in read_jsonl(out)}
    assert result.code in (0, 1), result.stderr
    assert server.calls == 2  # the two short rows; the long one never went out
    error = written["huge"]["sufficiency_error"]
    assert written["huge"]["sufficiency_status"] == "error"
    assert error.startswith("prompt of ") and "tokens exceeds openai/gpt-4's input limit of 8192" in error
    assert int(error.split()[2]) > 8192
    assert written["huge"]["sufficiency_prompt_tokens"] is None  # no call made
    strict = run_cli(["score", source, "-m", "sufficiency", "--model", "openai/gpt-4", "--min-pass-rate", "0"])
    assert strict.code == 2 and "1 from unusable input" in strict.stderr  # the row's input is at fault, not the judge
    assert server.calls == 2  # the short rows come from the cache; the long one is refused again


def test_the_input_limit_in_process_and_no_limit_when_the_table_has_none():
    from ragjudge import _loop
    from ragjudge import load_config
    from ragjudge.fakeserver import FakeTransport
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


# 14. A reasoning model that spent its output tokens thinking

def test_a_reply_of_reasoning_only_names_the_setting_to_raise(run_cli, tmp_path, server, transport):
    server.reasoning_only = 1
    out, config = tmp_path / "out.jsonl", tmp_path / "c.yaml"
    config.write_text("judge:\n  max_tokens: 300\n")
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(1)), "-m", "sufficiency", "-o", str(out), "-c", str(config)])
    row = read_jsonl(out)[0]
    assert row["sufficiency_status"] == "error" and server.calls == 1  # asking again would spend the same way
    assert row["sufficiency_error"].startswith("the model spent its output tokens on reasoning")
    assert "raise judge.max_tokens (now 300)" in row["sufficiency_error"]
    assert row["sufficiency_raw"].startswith("Let me weigh each passage")
    assert result.code == 3


def test_reasoning_under_the_other_field_name_is_recognised_too(run_cli, tmp_path, server, transport):
    server.reasoning_only, server.reasoning_field = 1, "reasoning"
    out = tmp_path / "out.jsonl"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(2)), "-m", "completeness", "-o", str(out), "--concurrency", "1",
             "--max-error-rate", "1", "--min-pass-rate", "0"])
    errors = [r["completeness_error"] for r in read_jsonl(out) if r["completeness_status"] == "error"]
    assert len(errors) == 1 and "spent its output tokens on reasoning" in errors[0] and "judge.max_tokens" in errors[0]

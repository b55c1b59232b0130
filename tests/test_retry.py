"""Rate limits (``ragjudge.http_errors``, ``ragjudge.model``): a 429 is a rate limit waited out, for as
long as the provider asks (a header, or words in the message), unless the provider marks it a hard
quota, which stops the run."""

from __future__ import annotations

import pytest

from conftest import read_jsonl, write_jsonl
from helpers import landmark_rows as rows

PER_MINUTE = ("Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, "
              "limit: 10, quota_id: GenerateRequestsPerMinutePerProjectPerModel-FreeTier per_minute. Please retry in 1s.")


# peer report (issue 29 item 3): a 429 is a rate limit to wait out, unless the provider marks it a hard quota
def test_a_per_minute_quota_429_is_waited_out(run_cli, tmp_path, server, transport):
    server.errors.append((429, "RESOURCE_EXHAUSTED", PER_MINUTE, {"Retry-After": "1"}))
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(3)), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code in (0, 1), result.stderr
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 3
    assert server.calls == 4 and server.statuses[429] == 1
    assert server.arrivals[-1] - server.arrivals[0] >= 0.95  # Retry-After: 1 honoured (the retry comes last)


# peer report (issue 29 item 3): a 429 is a rate limit to wait out, unless the provider marks it a hard quota
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


# peer report (issue 29 item 3): a 429 is a rate limit to wait out, unless the provider marks it a hard quota
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


# peer report (issue 29 item 3): a 429 is a rate limit to wait out, unless the provider marks it a hard quota
@pytest.mark.parametrize("message, seconds", [
    ("Please retry in 1s.", 1.0), ("Please try again in 700ms.", 0.7), ("retry after 2.5 seconds", 2.5),
    ("Try again in 20 sec", 20.0), ("retry in 9000s", 120.0), ("Rate limit reached.", None),
])
def test_retry_hint_reads_the_wait_in_words(message, seconds):
    from ragjudge.http_errors import retry_hint

    assert retry_hint(message) == (None if seconds is None else pytest.approx(seconds))

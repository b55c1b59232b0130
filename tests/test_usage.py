"""Usage and calls as a run counts them (``ragjudge.model``): a reply without usage is estimated
(as the dry run counts), marked and counted by the budget; every HTTP request is counted, and the
retries on their own, against the fake server on both transports."""

from __future__ import annotations

import pytest

from conftest import read_jsonl, write_jsonl
from helpers import landmark_rows as rows
from helpers import summary_of


# peer report (issue 29 item 2): no usage in a reply is unknown, not zero: estimated, marked, and counted by the budget
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


# peer report (issue 29 item 2): no usage in a reply is unknown, not zero: estimated, marked, and counted by the budget
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


# peer report (issue 29 item 7): every HTTP request is counted, and the retries on their own
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


# peer report (issue 29 item 7): every HTTP request is counted, and the retries on their own
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

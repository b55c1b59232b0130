"""The judge client: retries, timeouts, cache, concurrency, usage and cost, interruption (issue 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, read_jsonl, write_jsonl
from helpers import city_rows as rows


def test_429s_and_500s_with_retry_after_still_give_every_row_ok(run_cli, tmp_path, server, transport):
    server.rate_429, server.rate_500, server.retry_after = 0.2, 0.1, 0.01
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(100)), "-m", "sufficiency", "-o", str(out), "--no-cache"])
    errors = [r["sufficiency_error"] for r in read_jsonl(out) if r["sufficiency_status"] != "ok"]
    assert errors == []
    assert result.code == 0, result.stderr
    assert server.statuses[429] > 5 and server.statuses[500] > 3
    assert server.statuses[200] == 100
    assert server.calls == 100 + server.statuses[429] + server.statuses[500]


def test_hanging_call_times_out_and_is_retried(run_cli, tmp_path, server, transport):
    server.hang_first, server.hang_seconds = 1, 30
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(3)), "-m", "sufficiency", "-o", str(out), "--timeout", "0.5"])
    assert result.code == 0, result.stderr
    # counted, not timed (this test asserted under 20 s): the hung call was never answered (the
    # server holds it 30 s), so the run neither waited for it nor took its reply
    assert server.statuses[200] == 3
    assert {r["sufficiency_status"] for r in read_jsonl(out)} == {"ok"}
    assert server.calls == 4  # the hung call, its retry, two more rows


def test_second_run_makes_zero_calls_and_reports_cache(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(20))
    out = tmp_path / "out.jsonl"
    summary = tmp_path / "summary.json"
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(out)]).code == 0
    first = read_jsonl(out)
    assert server.calls == 20
    assert not any(r["sufficiency_cached"] for r in first)
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "--summary-json", str(summary)]).code == 0
    assert server.calls == 20
    second = read_jsonl(out)
    assert all(r["sufficiency_cached"] for r in second)
    assert [r["sufficiency_score"] for r in second] == [r["sufficiency_score"] for r in first]
    assert all(r["sufficiency_cost_usd"] == 0.0 and r["sufficiency_prompt_tokens"] == 0 for r in second)
    doc = json.loads(summary.read_text())
    assert doc["metrics"]["sufficiency"]["cached"] == 20
    assert doc["provider_calls"] == 0


def test_cache_key_ignores_concurrency_and_timeout_but_not_model(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(5))
    run_cli(["score", source, "-m", "sufficiency"])
    run_cli(["score", source, "-m", "sufficiency", "--concurrency", "2", "--timeout", "30", "--max-retries", "1"])
    assert server.calls == 5
    run_cli(["score", source, "-m", "sufficiency", "--model", "openai/other-judge"])
    assert server.calls == 10


def test_no_cache_bypasses_cache(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(3))
    run_cli(["score", source, "-m", "sufficiency"])
    run_cli(["score", source, "-m", "sufficiency", "--no-cache"])
    assert server.calls == 6


def test_errors_are_not_cached(run_cli, tmp_path, server, transport):
    source = write_jsonl(tmp_path / "in.jsonl", rows(1))
    server.replies.extend(["garbage", "more garbage"])
    assert run_cli(["score", source, "-m", "sufficiency"]).code == 3
    assert server.calls == 2
    assert run_cli(["score", source, "-m", "sufficiency"]).code == 0
    assert server.calls == 3


def test_concurrency_limit_is_reached_not_exceeded(run_cli, tmp_path, server, transport):
    server.latency = 0.05
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(40)), "--concurrency", "8"])
    assert server.max_in_flight == 8


def test_usage_and_cost_for_a_priced_model(run_cli, tmp_path, server, transport):
    out = tmp_path / "out.jsonl"
    summary = tmp_path / "s.json"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(2)), "-m", "sufficiency", "-o", str(out), "--model", "openai/gpt-4o-mini", "--summary-json", str(summary)])
    scored = read_jsonl(out)
    assert all(r["sufficiency_prompt_tokens"] > 50 and r["sufficiency_completion_tokens"] > 5 for r in scored)
    # gpt-4o-mini: $0.15 / 1M input tokens, $0.60 / 1M output tokens (litellm's price table)
    for r in scored:
        expected = r["sufficiency_prompt_tokens"] * 0.15e-6 + r["sufficiency_completion_tokens"] * 0.6e-6
        assert r["sufficiency_cost_usd"] == pytest.approx(expected, rel=1e-6)
    doc = json.loads(summary.read_text())
    assert doc["cost_usd"] == pytest.approx(sum(r["sufficiency_cost_usd"] for r in scored))


def test_unpriced_model_cost_is_null(run_cli, tmp_path, transport):
    out = tmp_path / "out.jsonl"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(1)), "-m", "sufficiency", "-o", str(out)])
    assert read_jsonl(out)[0]["sufficiency_cost_usd"] is None


def test_cache_info_and_clear(run_cli, tmp_path, cache_dir):
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(3)), "-m", "sufficiency"])
    info = run_cli(["cache", "info", "--cache-dir", cache_dir], judge=False)
    assert f"location: {cache_dir}" in info.stdout and "entries: 3" in info.stdout
    cleared = run_cli(["cache", "clear", "--cache-dir", cache_dir], judge=False)
    assert "removed 3 entries" in cleared.stdout
    assert "entries: 0" in run_cli(["cache", "info", "--cache-dir", cache_dir], judge=False).stdout
    assert "embedded judge model" not in info.stdout


def test_cache_info_shows_the_embedded_model_file_that_clear_keeps(run_cli, tmp_path):
    # the 1.1 GB model sits in the cache folder; cache info reported only the replies' 1 MiB
    folder = tmp_path / "cache"
    (folder / "models").mkdir(parents=True)
    model = folder / "models" / "judge.gguf"
    model.write_bytes(b"\0" * (3 * 2**20))
    info = run_cli(["cache", "info", "--cache-dir", str(folder)], judge=False).stdout
    assert f"embedded judge model: {model} (3.0 MiB; cache clear keeps it" in info
    run_cli(["cache", "clear", "--cache-dir", str(folder)], judge=False)
    assert model.stat().st_size == 3 * 2**20


@pytest.mark.slow  # a ragjudge process interrupted, then run again
def test_interrupted_run_writes_all_rows_and_rerun_pays_only_unfinished(tmp_path):
    from ragjudge.fakeserver import FakeJudgeServer

    source = write_jsonl(tmp_path / "in.jsonl", rows(60))
    out = tmp_path / "out.jsonl"
    with FakeJudgeServer(latency=0.2) as server:
        command = [sys.executable, "-m", "ragjudge", "score", source, "-m", "sufficiency", "-o", str(out),
                   "--model", "openai/fake", "--api-base", server.url, "--cache-dir", str(tmp_path / "cache"), "--concurrency", "4", "-q"]
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}
        process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while server.statuses[200] < 12 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        first = read_jsonl(out)
        assert len(first) == 60
        done = [r for r in first if r["sufficiency_status"] == "ok"]
        interrupted = [r for r in first if r["sufficiency_error"] == "interrupted"]
        # the server counts a reply when it sends it; up to --concurrency (4) of the 12 sent
        # replies may still be on their way to the run at the interrupt, so at least 12 - 4
        # rows are done, and never more than were answered
        assert 12 - 4 <= len(done) <= server.statuses[200]
        assert len(done) + len(interrupted) == 60 and interrupted
        calls_before = server.calls
        rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        rerun_calls = server.calls - calls_before
        assert rerun_calls == 60 - len(done)  # finished rows are never paid again
        assert sum(r["sufficiency_cached"] for r in read_jsonl(out)) == 60 - rerun_calls

def test_failed_calls_cost_nothing_rather_than_an_unknown_price(run_cli, tmp_path, server, transport):
    # every call failed (no reply), and the summary said "cost: unknown (no price for this model)"
    server.rate_500 = 1.0
    summary = tmp_path / "summary.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(2)), "-m", "sufficiency", "--max-retries", "0", "--summary-json", str(summary)])
    assert result.code == 3
    assert "no price" not in result.stderr and "cost: $0.0000" in result.stderr
    assert json.loads(summary.read_text())["cost_usd"] == 0.0


def test_cache_commands_do_not_create_a_missing_folder_and_refuse_an_empty_one(run_cli, tmp_path):
    missing = tmp_path / "nowhere"
    info = run_cli(["cache", "info", "--cache-dir", str(missing)], judge=False)
    assert info.code == 0 and f"location: {missing} (does not exist yet)" in info.stdout and "entries: 0" in info.stdout
    cleared = run_cli(["cache", "clear", "--cache-dir", str(missing)], judge=False)
    assert cleared.code == 0 and not missing.exists()
    (tmp_path / "afile").write_text("x")
    here = tmp_path / "here"  # a breaker's find: cache info on a folder without a cache made DIR/responses/cache.db
    here.mkdir()
    info = run_cli(["cache", "info", "--cache-dir", str(here)], judge=False)
    assert info.code == 0 and f"location: {here} (no reply cached yet)" in info.stdout and list(here.iterdir()) == []
    for command in ("info", "clear"):
        on_file = run_cli(["cache", command, "--cache-dir", str(tmp_path / "afile")], judge=False)
        assert on_file.code == 2 and "is a file, not a folder" in on_file.stderr
    empty = run_cli(["cache", "info", "--cache-dir", ""], judge=False)
    assert empty.code == 2 and "--cache-dir is empty" in empty.stderr
    for blank in ("", "  "):
        scored = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(1)), "--cache-dir", blank], judge=False)
        assert scored.code == 2 and "--cache-dir: should not be empty or blank" in scored.stderr


def test_rpm_paces_calls_instead_of_a_burst(run_cli, tmp_path, server):
    # 60 rpm = one call a second
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(4)), "-m", "sufficiency", "--no-cache", "--rpm", "60"])
    assert result.code == 0, result.stderr
    gaps = [b - a for a, b in zip(server.arrivals, server.arrivals[1:])]
    assert len(server.arrivals) == 4
    assert min(gaps) >= 0.9  # evenly spaced, no burst


@pytest.mark.integration  # ragjudge in its own process
def test_exit_leaves_at_once_while_an_embedded_call_still_runs():
    code = (  # a llama.cpp call that runs for a minute, stood in for by a server that sleeps
        "import os, threading, time, ragjudge.local as local, ragjudge.cli as cli\n"
        "os.environ['RAGJUDGE_LOCAL_SHARED'] = '0'\n"
        "class Server:\n"
        "    def handle_chat_completions(self, request):\n"
        "        time.sleep(60)\n"
        "local.RUNTIME.load = lambda path: Server()\n"
        "threading.Thread(target=local.RUNTIME.chat, args=(None, {}), daemon=True, name='ragjudge-local-judge').start()\n"
        "while not local.busy():\n"
        "    time.sleep(0.01)\n"
        "cli._exit(130)\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert time.monotonic() - started < 30


def test_workers_flag_is_accepted_and_said_to_be_ignored(run_cli, tmp_path, server):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(2)), "-m", "sufficiency", "--workers", "2"])
    assert result.code == 0, result.stderr
    assert "--workers (judge.workers) is no longer needed and is ignored" in result.stderr
    assert server.calls == 2

"""Judge calls spread over worker processes (``--workers``): same verdicts, one global
concurrency limit, shared cache, fatal errors stop every worker, --rpm paced once. Interrupts
with workers: tests/test_client.py (parametrised over --workers 1 and 2)."""

from __future__ import annotations

import subprocess
import sys
import time

from conftest import ROOT, read_jsonl, write_jsonl
from test_client import rows


def _verdicts(path) -> list[tuple]:
    return [(r["id"], r["sufficiency_status"], r["sufficiency_score"], r["sufficiency_missing"]) for r in read_jsonl(path)]


def test_workers_give_the_same_verdicts_as_one_process(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(40) + [{"id": "bad", "request": "Where?", "context": [], "expected_response": "x"}])
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(one), "--no-cache"]).code == 0
    calls_one = server.calls
    result = run_cli(["score", source, "-m", "sufficiency", "-o", str(two), "--no-cache", "--workers", "2", "--summary-json", str(tmp_path / "s.json")])
    assert result.code == 0, result.stderr
    assert _verdicts(two) == _verdicts(one)
    assert server.calls - calls_one == calls_one == 40  # the empty-context row is skipped, not called
    assert '"provider_calls": 40' in (tmp_path / "s.json").read_text()


def test_workers_keep_one_global_concurrency_limit(run_cli, tmp_path, server):
    server.latency = 0.05
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(60)), "-m", "sufficiency", "--concurrency", "6", "--workers", "3", "--no-cache"])
    assert result.code == 0, result.stderr
    assert server.max_in_flight == 6


def test_workers_write_the_shared_cache(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(30))
    out = tmp_path / "out.jsonl"
    assert run_cli(["score", source, "-m", "sufficiency", "--workers", "2"]).code == 0
    assert server.calls == 30
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "--workers", "2"]).code == 0
    assert server.calls == 30
    assert all(r["sufficiency_cached"] for r in read_jsonl(out))


def test_auth_error_with_workers_costs_one_call(run_cli, tmp_path, server):
    server.auth_error = True
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(50)), "-m", "sufficiency", "-o", str(out), "--workers", "2"])
    assert result.code == 3
    assert server.calls == 1
    assert "authentication failed" in result.stderr
    scored = read_jsonl(out)
    assert len(scored) == 50 and {r["sufficiency_status"] for r in scored} == {"error"}


def test_retries_work_inside_workers(run_cli, tmp_path, server):
    server.rate_429, server.rate_500, server.retry_after = 0.2, 0.1, 0.01
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(60)), "-m", "sufficiency", "-o", str(out), "--no-cache", "--workers", "2"])
    assert result.code == 0, result.stderr
    assert {r["sufficiency_status"] for r in read_jsonl(out)} == {"ok"}
    assert server.statuses[200] == 60 and server.statuses[429] > 0


def test_a_dead_worker_turns_its_rows_into_errors_not_a_hang(server, tmp_path):
    import asyncio

    from ragjudge.config import JudgeSettings
    from ragjudge.judges import sufficiency
    from ragjudge.records import EvalRecord, Passage
    from ragjudge.workers import WorkerPool

    settings = JudgeSettings(model="openai/fake-judge", api_base=server.url, workers=2, concurrency=4)
    prepared = sufficiency.prepare(EvalRecord(index=0, request="Where is landmark 1?", passages=[Passage("Landmark 1 stands in city 1.")], expected_response="city 1"))

    async def scenario():
        pool = WorkerPool(settings, None)
        try:
            first = await pool.judge(prepared, sufficiency.parse, sufficiency.PROMPT_VERSION)
            for process in pool._processes:
                process.kill()
                process.join(10)
            after = await asyncio.wait_for(pool.judge(prepared, sufficiency.parse, sufficiency.PROMPT_VERSION), 30)
            return first, after
        finally:
            await pool.aclose()

    first, after = asyncio.run(scenario())
    assert first.status == "ok" and first.score == 1.0
    assert after.status == "error" and "exited" in after.error


def test_rpm_with_workers_interleaves_calls_instead_of_a_burst(run_cli, tmp_path, server):
    # 60 rpm = one call a second in all; 3 workers each pace at 20 rpm, offset by a second
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(5)), "-m", "sufficiency", "--no-cache", "--workers", "3", "--rpm", "60"])
    assert result.code == 0, result.stderr
    gaps = [b - a for a, b in zip(server.arrivals, server.arrivals[1:])]
    assert len(server.arrivals) == 5
    assert server.arrivals[-1] - server.arrivals[0] >= 3.5  # 5 calls at 1 s spacing span about 4 s
    assert sum(1 for gap in gaps if gap < 0.5) <= 1  # no burst (one near-collision allowed for a slow worker)


def test_exit_leaves_at_once_while_an_embedded_call_still_runs():
    code = (
        "import threading, time, ragjudge.local, ragjudge.cli as cli\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True, name='ragjudge-local-judge').start()\n"
        "assert ragjudge.local.busy()\n"
        "cli._exit(130)\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert time.monotonic() - started < 30

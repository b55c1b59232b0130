"""Know the cost before paying it (issue 18): --dry-run, --limit / --sample, --max-cost and
judge.price, against the fake server (which returns usage: 4 characters a token)."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLE, read_jsonl, write_jsonl


def rows(n: int, start: int = 0) -> list[dict]:
    return [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."],
             "expected_response": f"Landmark {i} stands in city {i}. It was built in {1800 + i}.", "response": f"City {i}."}
            for i in range(start, start + n)]


def test_the_dry_run_counts_the_calls_and_cache_hits_of_the_run_that_follows(run_cli, tmp_path, server):
    source = str(SAMPLE / "rag_eval.jsonl")
    summary = tmp_path / "dry.json"
    out = tmp_path / "out.jsonl"
    dry = run_cli(["score", source, "--dry-run", "--summary-json", str(summary), "-o", str(out)])
    assert dry.code == 0, dry.stderr
    assert server.calls == 0 and not out.exists()  # no call made, no table written
    estimate = json.loads(summary.read_text())["dry_run"]
    real_summary = tmp_path / "real.json"
    real = run_cli(["score", source, "--summary-json", str(real_summary), "--min-pass-rate", "0"])
    assert real.code == 0, real.stderr
    doc = json.loads(real_summary.read_text())
    assert estimate["total"]["calls"] == doc["provider_calls"] == server.calls == 37
    assert estimate["metrics"]["completeness"]["calls"] == 13  # 5 statements calls (shared by rows) and 8 coverage calls
    assert estimate["metrics"]["sufficiency"]["skipped_by"] == {"no context": 8}
    assert estimate["tokens"] == "estimated at 4 characters a token"  # openai/fake-judge: no tokenizer known
    used = sum(m["prompt_tokens"] for m in doc["metrics"].values())
    assert abs(estimate["total"]["prompt_tokens"] - used) <= 0.1 * used
    # again, now that the cache holds every reply: all hits, nothing to call
    again = json.loads(run_cli(["score", source, "--dry-run", "--summary-json", str(summary)]) and summary.read_text())["dry_run"]
    assert again["total"]["calls"] == 0 and again["total"]["cache_hits"] == 32


def test_the_dry_run_prices_a_priced_model_as_a_range(run_cli, tmp_path, server):
    summary = tmp_path / "dry.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(4)), "-m", "sufficiency", "--model", "openai/gpt-4o-mini",
                      "--dry-run", "--summary-json", str(summary)])
    assert result.code == 0
    m = json.loads(summary.read_text())["dry_run"]["metrics"]["sufficiency"]
    assert m["calls"] == 4 and m["max_completion_tokens"] == 4 * 1024
    # gpt-4o-mini: $0.15 / $0.60 per million tokens
    assert m["cost_low"] == pytest.approx((m["prompt_tokens"] * 0.15 + m["expected_completion_tokens"] * 0.60) / 1e6)
    assert m["cost_high"] == pytest.approx((m["prompt_tokens"] * 0.15 + 4 * 1024 * 0.60) / 1e6)
    assert "cost $" in result.stderr and "counted with the model's tokenizer" in result.stderr


def test_bad_input_fails_the_dry_run_as_it_fails_a_run(run_cli, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": 1}\nnot json\n')
    assert run_cli(["score", str(path), "--dry-run"]).stderr == run_cli(["score", str(path)]).stderr
    assert run_cli(["score", str(path), "--dry-run"]).code == 2


def test_sample_picks_the_same_rows_for_a_seed_and_the_gate_ignores_the_rest(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(20))
    picked = []
    for attempt in range(2):
        out = tmp_path / f"out{attempt}.jsonl"
        result = run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "--sample", "5", "--seed", "7", "--max-skip-rate", "0"])
        assert result.code == 0, result.stderr  # 15 rows not sampled: no skip-rate failure, pass rate over the 5
        written = read_jsonl(out)
        assert len(written) == 20
        picked.append([r["id"] for r in written if r["sufficiency_status"] == "ok"])
        assert {r["sufficiency_error"] for r in written if r["sufficiency_status"] == "skipped"} == {"not sampled"}
    assert picked[0] == picked[1] and len(picked[0]) == 5
    other = read_jsonl(tmp_path / "out0.jsonl")
    assert server.calls == 5  # the second run came from the cache
    different = tmp_path / "other.jsonl"
    run_cli(["score", source, "-m", "sufficiency", "-o", str(different), "--sample", "5", "--seed", "8"])
    assert [r["id"] for r in read_jsonl(different) if r["sufficiency_status"] == "ok"] != picked[0]
    assert len(other) == 20


def test_limit_judges_the_first_rows(run_cli, tmp_path, server):
    out = tmp_path / "out.jsonl"
    summary = tmp_path / "s.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(10)), "-m", "sufficiency", "-o", str(out), "--limit", "3",
                      "--summary-json", str(summary)])
    assert result.code == 0, result.stderr
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 3 + ["skipped"] * 7
    m = json.loads(summary.read_text())["metrics"]["sufficiency"]
    assert (m["ok"], m["skipped"], m["not_sampled"], m["skip_rate"]) == (3, 0, 7, 0.0)
    assert server.calls == 3


def test_max_cost_stops_within_one_round_of_concurrency_and_the_rerun_completes(run_cli, tmp_path, server):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  price: {input_per_mtok: 1000, output_per_mtok: 1000}\n")  # about $0.1 a call here
    source = write_jsonl(tmp_path / "in.jsonl", rows(30))
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", source, "-m", "sufficiency", "-c", str(config), "-o", str(out), "--max-cost", "0.5", "--concurrency", "2"])
    written = read_jsonl(out)
    assert result.code == 3
    assert len(written) == 30  # no row lost
    done = [r for r in written if r["sufficiency_status"] == "ok"]
    left = [r for r in written if r["sufficiency_error"] == "budget reached"]
    assert len(done) + len(left) == 30 and left
    spent = sum(r["sufficiency_cost_usd"] for r in done)
    per_call = max(r["sufficiency_cost_usd"] for r in done)
    assert 0.5 <= spent <= 0.5 + 2 * per_call  # calls in flight at the cap finish: at most one round of concurrency past it
    assert f"FAIL budget reached: spent ${spent:.4f} of --max-cost $0.5; rows not judged: {len(left)} by sufficiency" in result.stderr
    calls = server.calls
    rerun = run_cli(["score", source, "-m", "sufficiency", "-c", str(config), "-o", str(out), "--max-cost", "100", "--min-pass-rate", "0"])
    assert rerun.code == 0, rerun.stderr
    assert server.calls - calls == len(left)  # only the remaining rows are paid
    assert all(r["sufficiency_status"] == "ok" for r in read_jsonl(out))


def test_max_cost_without_a_price_is_refused_before_the_run(run_cli, tmp_path, server):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(2)), "--max-cost", "1"])
    assert result.code == 2 and "has no price in litellm's price table" in result.stderr and "judge.price" in result.stderr
    assert server.calls == 0


def test_judge_price_fills_the_cost_column(run_cli, tmp_path, server):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  price: {input_per_mtok: 2.0, output_per_mtok: 8.0}\n")
    out = tmp_path / "out.jsonl"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(3)), "-m", "sufficiency", "-c", str(config), "-o", str(out)])
    for row in read_jsonl(out):
        expected = (row["sufficiency_prompt_tokens"] * 2.0 + row["sufficiency_completion_tokens"] * 8.0) / 1e6
        assert row["sufficiency_cost_usd"] == pytest.approx(expected) and expected > 0


def test_a_limit_far_past_the_rows_costs_no_memory(run_cli, tmp_path, server):
    # --limit 100000000 on a 32-row file built a set of 10^8 numbers (18 GB) before judging
    from ragjudge.pipeline import selection

    chosen = selection("unused.jsonl", "jsonl", 10_000, limit=100_000_000)
    assert isinstance(chosen, range) and 99_999_999 in chosen and 100_000_000 not in chosen
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(4)), "-m", "sufficiency", "-o", str(out), "--limit", "100000000"])
    assert result.code == 0, result.stderr
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 4


@pytest.mark.parametrize("dry", [True, False])
def test_sample_on_stdin_counts_every_row(run_cli, tmp_path, server, dry):
    # the dry run's --sample read stdin to count it, then found no rows left: "dry run: 0 rows"
    data = "".join(json.dumps(r) + "\n" for r in rows(12)).encode()
    summary = tmp_path / "s.json"
    args = ["score", "-", "-m", "sufficiency", "--sample", "5", "--seed", "3", "--summary-json", str(summary)]
    result = run_cli(args + (["--dry-run"] if dry else ["-o", str(tmp_path / "out.jsonl")]), stdin=data)
    assert result.code == 0, result.stderr
    doc = json.loads(summary.read_text())
    assert (doc["dry_run"] if dry else doc)["rows"] == 12
    if dry:
        assert "sufficiency: 5 rows to judge, 7 skipped (7 not sampled)" in result.stdout + result.stderr
    else:
        assert [r["sufficiency_status"] for r in read_jsonl(tmp_path / "out.jsonl")].count("ok") == 5 and server.calls == 5


def test_max_cost_counts_the_rows_each_metric_left(run_cli, tmp_path, server):
    # two metrics: the line said "8 row(s) not judged" (the larger count) where 6 sufficiency
    # and 8 completeness verdicts were left
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  price: {input_per_mtok: 1000, output_per_mtok: 1000}\n")
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(12)), "-c", str(config), "-o", str(out), "--max-cost", "0.3",
                      "--concurrency", "1"])
    written = read_jsonl(out)
    left = {m: sum(r[f"{m}_error"] == "budget reached" for r in written) for m in ("sufficiency", "completeness")}
    assert result.code == 3 and left["completeness"] > 0
    shown = ", ".join(f"{n} by {m}" for m, n in left.items() if n)
    assert f"; rows not judged: {shown} (run again with a higher --max-cost" in result.stderr

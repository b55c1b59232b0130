"""Know the cost before paying it (issue 18): --dry-run, --limit / --sample, --max-cost and
judge.price, against the fake server (which returns usage: 4 characters a token)."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLE, read_jsonl, write_jsonl
from helpers import GROUNDED
from helpers import cost_rows as rows


def test_the_dry_run_counts_the_calls_and_cache_hits_of_the_run_that_follows(run_score, tmp_path, judge):
    source = str(SAMPLE / "rag_eval.jsonl")
    summary = tmp_path / "dry.json"
    out = tmp_path / "out.jsonl"
    dry = run_score(source, dry_run=True, summary_json=str(summary), output=str(out))
    assert dry.code == 0, dry.text
    assert judge.calls == 0 and not out.exists()  # no call made, no table written
    estimate = json.loads(summary.read_text())["dry_run"]
    real_summary = tmp_path / "real.json"
    real = run_score(source, summary_json=str(real_summary), min_pass_rate=["0"])
    assert real.code == 0, real.text
    doc = json.loads(real_summary.read_text())
    assert estimate["total"]["calls"] == doc["provider_calls"] == judge.calls == 37
    assert estimate["metrics"]["completeness"]["calls"] == 13  # 5 statements calls (shared by rows) and 8 coverage calls
    assert estimate["metrics"]["sufficiency"]["skipped_by"] == {"no context": 8}
    assert estimate["tokens"] == "estimated at 4 characters a token"  # openai/fake-judge: no tokenizer known
    used = sum(m["prompt_tokens"] for m in doc["metrics"].values())
    assert abs(estimate["total"]["prompt_tokens"] - used) <= 0.1 * used
    # again, now that the cache holds every reply: all hits, nothing to call
    again = json.loads(run_score(source, dry_run=True, summary_json=str(summary)) and summary.read_text())["dry_run"]
    assert again["total"]["calls"] == 0 and again["total"]["cache_hits"] == 32


def test_quiet_dry_run_prints_the_estimate_alone(run_cli):
    # -q quieted the run's notes but not the dry run's (noted at the issue 50 stop)
    source = str(SAMPLE / "rag_eval.jsonl")
    loud, quiet = run_cli(["score", source, "--dry-run"]), run_cli(["score", source, "--dry-run", "-q"])
    assert loud.code == quiet.code == 0
    assert loud.stderr.startswith("columns: id, request, context")  # the dry run prints on stderr, as the run's notes
    figures = [line for line in loud.stderr.splitlines() if not line.startswith("columns: ")]
    assert quiet.stderr.splitlines() == figures and figures[0].startswith("dry run: 32 rows") and len(figures) == 4


def test_the_dry_run_prices_a_priced_model_as_a_range(run_score, tmp_path):
    summary = tmp_path / "dry.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows(4)), metric=["sufficiency"], model="openai/gpt-4o-mini", dry_run=True,
                       summary_json=str(summary))
    assert result.code == 0
    m = json.loads(summary.read_text())["dry_run"]["metrics"]["sufficiency"]
    assert m["calls"] == 4 and m["max_completion_tokens"] == 4 * 1024
    # gpt-4o-mini: $0.15 / $0.60 per million tokens
    assert m["cost_low"] == pytest.approx((m["prompt_tokens"] * 0.15 + m["expected_completion_tokens"] * 0.60) / 1e6)
    assert m["cost_high"] == pytest.approx((m["prompt_tokens"] * 0.15 + 4 * 1024 * 0.60) / 1e6)
    assert "cost $" in result.text and "counted with the model's tokenizer" in result.text


def test_bad_input_fails_the_dry_run_as_it_fails_a_run(run_score, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": 1}\nnot json\n')
    assert run_score(str(path), dry_run=True).text == run_score(str(path)).text
    assert run_score(str(path), dry_run=True).code == 2


def test_max_cost_without_a_price_is_refused_before_the_run(run_score, tmp_path, judge):
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows(2)), max_cost=1)
    assert result.code == 2 and "has no price in litellm's price table" in result.error and "judge.price" in result.error
    assert judge.calls == 0


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


# review of main (fixa) item 7: the budget line under --no-cache
@pytest.mark.parametrize("cache, said", [
    ({}, "run again with a higher --max-cost: the rows judged come from the cache"),
    ({"no_cache": True}, "run again with a higher --max-cost: nothing was cached (--no-cache), so every row will be paid again"),
])
def test_the_budget_line_says_whether_the_rows_judged_were_cached(run_score, tmp_path, cache, said):
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": str(i), "request": f"Question {i}?"} for i in range(4)]),
                       metric=["sufficiency"], model="openai/gpt-4o-mini", max_cost=0.000001, concurrency=1, **cache)
    assert result.code == 3 and said in result.text, result.text
    other = "nothing was cached" if not cache else "come from the cache"
    assert other not in result.text


def test_a_dry_run_makes_no_cache_folder(run_score, tmp_path):
    # a new user's find: "no call made, nothing written", yet --cache-dir and its responses folder were made
    folder = tmp_path / "fresh-cache"
    dry = run_score(str(SAMPLE / "rag_eval.jsonl"), dry_run=True, cache_dir=str(folder))
    assert dry.code == 0 and dry.result["total"]["cache_hits"] == 0 and dry.result["total"]["calls"] == 37
    assert not folder.exists()

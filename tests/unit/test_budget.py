"""Limits, samples and budgets in the unit tier (issue 18): --limit / --sample, --max-cost and
judge.price, from runs through the library against the in-process fake judge, which counts
tokens as the fake server does (4 characters a token). Moved from tests/test_cost.py and
tests/test_peer_faults_io.py, their assertions unchanged; the dry run stays there."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl
from helpers import cost_rows as rows
from helpers import multiline_csv, two_files


def test_sample_picks_the_same_rows_for_a_seed_and_the_gate_ignores_the_rest(run_score, tmp_path, judge):
    source = write_jsonl(tmp_path / "in.jsonl", rows(20))
    picked = []
    for attempt in range(2):
        out = tmp_path / f"out{attempt}.jsonl"
        result = run_score(source, metric=["sufficiency"], output=str(out), sample=5, seed=7, max_skip_rate=0.0)
        assert result.code == 0, result.text  # 15 rows not sampled: no skip-rate failure, pass rate over the 5
        written = read_jsonl(out)
        assert len(written) == 20
        picked.append([r["id"] for r in written if r["sufficiency_status"] == "ok"])
        assert {r["sufficiency_error"] for r in written if r["sufficiency_status"] == "skipped"} == {"not sampled"}
    assert picked[0] == picked[1] and len(picked[0]) == 5
    other = read_jsonl(tmp_path / "out0.jsonl")
    assert judge.calls == 5  # the second run came from the cache
    different = tmp_path / "other.jsonl"
    run_score(source, metric=["sufficiency"], output=str(different), sample=5, seed=8)
    assert [r["id"] for r in read_jsonl(different) if r["sufficiency_status"] == "ok"] != picked[0]
    assert len(other) == 20


def test_limit_judges_the_first_rows(run_score, tmp_path, judge):
    out = tmp_path / "out.jsonl"
    summary = tmp_path / "s.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows(10)), metric=["sufficiency"], output=str(out), limit=3, summary_json=str(summary))
    assert result.code == 0, result.text
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 3 + ["skipped"] * 7
    m = json.loads(summary.read_text())["metrics"]["sufficiency"]
    assert (m["ok"], m["skipped"], m["not_sampled"], m["skip_rate"]) == (3, 0, 7, 0.0)
    assert judge.calls == 3


def test_max_cost_stops_within_one_round_of_concurrency_and_the_rerun_completes(run_score, tmp_path, judge):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  price: {input_per_mtok: 1000, output_per_mtok: 1000}\n")  # about $0.1 a call here
    source = write_jsonl(tmp_path / "in.jsonl", rows(30))
    out = tmp_path / "out.jsonl"
    result = run_score(source, metric=["sufficiency"], config=str(config), output=str(out), max_cost=0.5, concurrency=2)
    written = read_jsonl(out)
    assert result.code == 3
    assert len(written) == 30  # no row lost
    done = [r for r in written if r["sufficiency_status"] == "ok"]
    left = [r for r in written if r["sufficiency_error"] == "budget reached"]
    assert len(done) + len(left) == 30 and left
    spent = sum(r["sufficiency_cost_usd"] for r in done)
    per_call = max(r["sufficiency_cost_usd"] for r in done)
    assert 0.5 <= spent <= 0.5 + 2 * per_call  # calls in flight at the cap finish: at most one round of concurrency past it
    assert f"FAIL budget reached: spent ${spent:.4f} of --max-cost $0.5; rows not judged: {len(left)} by sufficiency" in result.text
    calls = judge.calls
    rerun = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], config=str(config), output=str(out), max_cost=100.0)
    assert rerun.code == 0, rerun.text
    assert judge.calls - calls == len(left)  # only the remaining rows are paid
    assert all(r["sufficiency_status"] == "ok" for r in read_jsonl(out))


def test_judge_price_fills_the_cost_column(run_score, tmp_path, judge):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  price: {input_per_mtok: 2.0, output_per_mtok: 8.0}\n")
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows(3)), metric=["sufficiency"], config=str(config), output=str(out))
    for row in read_jsonl(out):
        expected = (row["sufficiency_prompt_tokens"] * 2.0 + row["sufficiency_completion_tokens"] * 8.0) / 1e6
        assert row["sufficiency_cost_usd"] == pytest.approx(expected) and expected > 0


def test_a_limit_far_past_the_rows_costs_no_memory(run_score, tmp_path, judge):
    # --limit 100000000 on a 32-row file built a set of 10^8 numbers (18 GB) before judging
    from ragjudge.run.engine import selection

    chosen = selection("unused.jsonl", "jsonl", 10_000, limit=100_000_000)
    assert isinstance(chosen, range) and 99_999_999 in chosen and 100_000_000 not in chosen
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows(4)), metric=["sufficiency"], output=str(out), limit=100000000)
    assert result.code == 0, result.text
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 4


def test_max_cost_counts_the_rows_each_metric_left(run_score, tmp_path, judge):
    # two metrics: the line said "8 row(s) not judged" (the larger count) where 6 sufficiency
    # and 8 completeness verdicts were left
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  price: {input_per_mtok: 1000, output_per_mtok: 1000}\n")
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows(12)), config=str(config), output=str(out), max_cost=0.3, concurrency=1)
    written = read_jsonl(out)
    left = {m: sum(r[f"{m}_error"] == "budget reached" for r in written) for m in ("sufficiency", "completeness")}
    assert result.code == 3 and left["completeness"] > 0
    shown = ", ".join(f"{n} by {m}" for m, n in left.items() if n)
    assert f"; rows not judged: {shown} (run again with a higher --max-cost" in result.text


def test_sample_on_a_csv_whose_cells_span_lines_judges_that_many_records(run_score, tmp_path, judge):
    source = multiline_csv(tmp_path / "in.csv")
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(out), sample=5, seed=1)
    assert result.code == 0, result.text
    statuses = [r["sufficiency_status"] for r in read_jsonl(out)]
    assert len(statuses) == 10 and statuses.count("ok") == 5 and statuses.count("skipped") == 5 and judge.calls == 5
    dry = run_score(source, metric=["sufficiency"], sample=5, seed=1, dry_run=True, summary_json=str(summary))
    assert dry.code == 0, dry.text
    assert "sufficiency: 5 rows to judge, 5 skipped (5 not sampled)" in dry.text
    assert json.loads(summary.read_text())["dry_run"]["rows"] == 10


@pytest.mark.parametrize("shape", ["folder", "glob"])
def test_the_local_engine_reads_a_folder_or_a_glob_whose_meta_is_an_integer_then_text(run_score, tmp_path, judge, shape):
    folder = two_files(tmp_path / "data")
    source = str(folder) if shape == "folder" else str(folder / "*.jsonl")
    out = tmp_path / "out.jsonl"
    result = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    written = read_jsonl(out)
    assert [r["id"] for r in written] == ["a0", "a1", "a2", "b0", "b1"] and judge.calls == 5
    assert [r["meta"] for r in written] == ["0", "1", "2", "note 0", "note 1"]  # one column of text, as Arrow unifies it
    assert [r["tags"] for r in written] == [None, None, None, ["x", "y"], ["x", "y"]]
    assert {r["sufficiency_status"] for r in written} == {"ok"}
    dry = run_score(source, metric=["sufficiency"], sample=4, dry_run=True)
    assert dry.code == 0 and "dry run: 5 rows" in dry.text and "4 rows to judge" in dry.text


# issue 60 item 21: --dry-run exited 0 where the run would exit 2 (nothing would be judged)
def test_a_dry_run_that_would_judge_nothing_exits_2_as_the_run_does(run_score, tmp_path, judge):
    source = write_jsonl(tmp_path / "in.jsonl", [{"request": "What is the capital of Spain?", "retrieved": ["Madrid is."]}] * 2)
    summary = tmp_path / "s.json"
    assert run_score(source).code == 2  # the run: every row skipped by every metric
    dry = run_score(source, dry_run=True, summary_json=str(summary))
    assert dry.code == 2 and judge.calls == 0
    assert dry.lines[-1] == ("FAIL nothing was judged: every row was skipped by every metric (2 rows); check the input and the column "
                             "mapping (the 'columns:' line; -q hides it) (the run would exit 2)")
    written = json.loads(summary.read_text())["dry_run"]
    assert written["exit_code"] == 2 and written["gate_lines"] == [dry.lines[-1]]
    mapped = run_score(source, dry_run=True, map=["context=retrieved"])  # sufficiency would judge both rows
    assert mapped.code == 0 and not mapped.result["gate_lines"]


def test_a_dry_run_whose_every_row_has_an_unusable_input_exits_2_as_the_run_does(run_score, tmp_path, judge):
    # a second shape: rows to judge, each an input error (passages with no text): the run judges none and exits 2
    source = write_jsonl(tmp_path / "in.jsonl", [{"request": "q", "context": [{"doc_uri": "a"}]}, {"request": "r", "context": [{"id": "b"}]}])
    assert run_score(source, metric=["sufficiency"]).code == 2
    dry = run_score(source, metric=["sufficiency"], dry_run=True)
    assert dry.code == 2 and judge.calls == 0
    assert dry.lines[-1] == ("FAIL nothing could be judged: every judged row has an unusable input (2 rows; the M_error column says "
                             "why) (the run would exit 2)")
    assert dry.result["metrics"]["sufficiency"]["input_errors"] == 2
    one_good = write_jsonl(tmp_path / "good.jsonl", [{"request": "q", "context": [{"doc_uri": "a"}]}, {"request": "r", "context": ["b"]}])
    assert run_score(one_good, metric=["sufficiency"], dry_run=True).code == 0

"""Reviewers' faults on main (issue review, helper fixa): each with the reported case and a
second shape."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl

GROUNDED = {"request": "Where is the Eiffel Tower?", "context": ["The Eiffel Tower is in Paris."],
            "expected_facts": ["The Eiffel Tower is in Paris."], "expected_response": "Paris"}


def _scored(**cells) -> pd.DataFrame:
    table = pd.DataFrame({"id": ["a", "b", "c"], "sufficiency_status": ["ok", "ok", "ok"], "sufficiency_passed": ["True", "False", "True"],
                          "sufficiency_score": ["1", "0", "1"]})
    for column, value in cells.items():
        table[column] = table[column].astype(object)
        table.loc[1, column] = value
    return table


# -- 1. an unreadable cell of a scored table read back ---------------------------------------------

@pytest.mark.parametrize("column, value, what", [
    ("sufficiency_score", "abc", "'abc' is not a finite number"),
    ("sufficiency_score", "inf", "'inf' is not a finite number"),
    ("sufficiency_score", "", "a blank cell is not a finite number"),
    ("sufficiency_passed", "maybe", "'maybe' is not a boolean"),
    ("sufficiency_status", "weird", "'weird' is not a status (ok, error or skipped)"),
])
def test_report_on_an_unreadable_cell_is_exit_2_naming_the_file_row_and_column(run_cli, tmp_path, column, value, what):
    path = tmp_path / "scored.csv"
    _scored(**{column: value}).to_csv(path, index=False)
    result = run_cli(["report", str(path), "-o", str(tmp_path / "r.html")], judge=False)
    assert result.code == 2, result.stderr
    assert f"{path}: row 2 (id 'b'), column {column}: {what}" in result.stderr and "correct the cell" in result.stderr
    assert "unexpected" not in result.stderr and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("column, value", [("sufficiency_passed", "maybe"), ("sufficiency_status", "weird"), ("sufficiency_status", None),
                                           ("sufficiency_score", "abc")])
def test_compare_refuses_an_unreadable_cell_rather_than_inventing_a_regression(run_cli, tmp_path, column, value):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    _scored().to_json(good, orient="records", lines=True)
    _scored(**{column: value}).to_json(bad, orient="records", lines=True)
    result = run_cli(["compare", str(good), str(bad), "--max-regressions", "0"], judge=False)
    assert result.code == 2 and f"the current table: row 2 (id 'b'), column {column}:" in result.stderr
    report = run_cli(["report", str(good), "--baseline", str(bad), "-o", str(tmp_path / "r.html")], judge=False)
    assert report.code == 2 and f"the baseline table: row 2 (id 'b'), column {column}:" in report.stderr
    assert run_cli(["compare", str(good), str(good), "--max-regressions", "0"], judge=False).code == 0


def test_a_null_score_on_an_ok_row_is_refused_by_the_report_and_a_good_table_still_reads(run_cli, tmp_path):
    path = tmp_path / "scored.jsonl"
    rows = [{"id": i, "sufficiency_status": "ok", "sufficiency_passed": True, "sufficiency_score": 1.0} for i in ("a", "b")]
    rows.append({"id": "c", "sufficiency_status": "error", "sufficiency_passed": None, "sufficiency_score": None})
    write_jsonl(path, rows)
    assert run_cli(["report", str(path), "-o", str(tmp_path / "ok.html")], judge=False).code == 0  # null on an error row is fine
    rows[1]["sufficiency_score"] = None
    write_jsonl(path, rows)
    result = run_cli(["report", str(path), "-o", str(tmp_path / "r.html")], judge=False)
    assert result.code == 2 and f"{path}: row 2 (id 'b'), column sufficiency_score: a blank cell is not a finite number" in result.stderr


def test_score_with_a_baseline_holding_an_unreadable_score_names_the_baseline(run_cli, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    baseline = tmp_path / "base.jsonl"
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(baseline), "-q"]).code == 0
    rows = read_jsonl(baseline)
    rows[0]["sufficiency_score"] = "abc"
    write_jsonl(baseline, rows)
    result = run_cli(["score", source, "-m", "sufficiency", "--baseline", str(baseline), "-q"])
    assert result.code == 2 and f"--baseline {baseline}: row 1 (id 'a'), column sufficiency_score: 'abc'" in result.stderr


# -- 2. a bad --baseline is refused before any judge call -------------------------------------------

@pytest.mark.parametrize("fault, said", [
    ("duplicate", "the baseline table has the id 'a' more than once"),
    ("null id", "the baseline table has no id on row(s) 2; every row needs an id to match rows"),
    ("bad score", "column sufficiency_score: 'abc' is not a finite number"),
    ("bad status", "column sufficiency_status: 'weird' is not a status"),
])
def test_a_bad_baseline_is_exit_2_before_any_judge_call(run_cli, tmp_path, server, fault, said):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    rows = [{"id": i, "sufficiency_status": "ok", "sufficiency_passed": True, "sufficiency_score": 1.0} for i in ("a", "b")]
    change = {"duplicate": ("id", "a"), "null id": ("id", None), "bad score": ("sufficiency_score", "abc"),
              "bad status": ("sufficiency_status", "weird")}[fault]
    rows[1][change[0]] = change[1]
    baseline = write_jsonl(tmp_path / "base.jsonl", rows)
    summary = tmp_path / "summary.json"
    result = run_cli(["score", source, "-m", "sufficiency", "--baseline", baseline, "--summary-json", str(summary), "-q"])
    assert result.code == 2 and said in result.stderr, result.stderr
    assert server.calls == 0  # found before judging, not after every row was paid for


def test_a_missing_or_good_baseline_before_judging(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    result = run_cli(["score", source, "-m", "sufficiency", "--baseline", str(tmp_path / "none.jsonl")])
    assert result.code == 2 and "--baseline: no such file" in result.stderr and server.calls == 0
    baseline = tmp_path / "base.jsonl"
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(baseline), "-q"]).code == 0
    calls = server.calls
    assert calls > 0
    summary = tmp_path / "summary.json"
    ok = run_cli(["score", source, "-m", "sufficiency", "--baseline", str(baseline), "--no-cache", "--summary-json", str(summary), "-q"])
    assert ok.code == 0 and server.calls > calls and summary.exists()


# -- 3. an id with a NUL matches its own CSV read-back ----------------------------------------------

def test_a_baseline_written_as_csv_matches_the_row_whose_id_held_a_nul(run_cli, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": "a\u0000b"}, {**GROUNDED, "id": "c"}])
    baseline = tmp_path / "base.csv"
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(baseline), "-q"]).code == 0
    assert "a\ufffdb" in baseline.read_text(encoding="utf-8")
    summary = tmp_path / "summary.json"
    result = run_cli(["score", source, "-m", "sufficiency", "--baseline", str(baseline), "--summary-json", str(summary), "-q"])
    assert result.code == 0, result.stderr
    comparison = json.loads(summary.read_text())["comparison"]
    assert comparison["rows"] == 2 and comparison["only_in_baseline"]["count"] == 0 and comparison["only_in_current"]["count"] == 0


def test_compare_matches_a_nul_id_with_its_csv_form():
    from ragjudge.compare import compare

    jsonl = pd.DataFrame({"id": ["x\u0000", "y"], "sufficiency_status": ["ok", "ok"], "sufficiency_passed": [True, True],
                          "sufficiency_score": [1.0, 1.0]})
    csv = jsonl.assign(id=["x\ufffd", "y"], sufficiency_passed=["True", "False"])
    report = compare(jsonl, csv)
    assert report["rows"] == 2 and report["only_in_baseline"]["count"] == 0
    assert report["metrics"]["sufficiency"]["regressed_ids"] == ["y"]


# -- 4. --by-position on tables of different lengths ------------------------------------------------

def test_by_position_on_tables_of_different_lengths_says_the_row_counts_differ(run_cli, tmp_path):
    base, short = tmp_path / "base.jsonl", tmp_path / "short.jsonl"
    table = pd.DataFrame({"id": list("abcd"), "sufficiency_status": ["ok"] * 4, "sufficiency_passed": [True] * 4,
                          "sufficiency_score": [1.0] * 4})
    table.to_json(base, orient="records", lines=True)
    table.iloc[:3].to_json(short, orient="records", lines=True)
    result = run_cli(["compare", str(base), str(short), "--by-position"], judge=False)
    assert result.code == 2 and "the tables have 4 and 3 rows: the row counts differ" in result.stderr
    assert "needs tables of equal length" in result.stderr and "no ids" not in result.stderr
    matched = run_cli(["compare", str(base), str(short), "--json"], judge=False)  # by id they compare
    assert matched.code == 0 and json.loads(matched.stdout)["only_in_baseline"]["ids"] == ["d"]
    no_ids = tmp_path / "no_ids.jsonl"
    table.iloc[:3].drop(columns="id").to_json(no_ids, orient="records", lines=True)
    unmatched = run_cli(["compare", str(base), str(no_ids)], judge=False)
    assert unmatched.code == 2 and "no ids to match them by" in unmatched.stderr


# -- 5. --max-error-rate and --max-skip-rate per metric ---------------------------------------------

def test_max_skip_rate_takes_metric_equals_rate_and_gates_only_that_metric(run_cli, tmp_path):
    # no response: completeness skips every row; sufficiency judges them
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": i, "request": "Where?", "context": ["In Paris."]} for i in "ab"])
    failed = run_cli(["score", source, "--max-skip-rate", "completeness=0.25", "--summary-json", str(tmp_path / "s.json"), "-q"])
    assert failed.code == 1, failed.stderr
    metrics = json.loads((tmp_path / "s.json").read_text())["metrics"]
    assert metrics["completeness"]["max_skip_rate"] == 0.25 and metrics["sufficiency"]["max_skip_rate"] == 1.0
    passed = run_cli(["score", source, "--max-skip-rate", "sufficiency=0.25", "--min-pass-rate", "0"])
    assert passed.code == 0, passed.stderr
    every = run_cli(["score", source, "--max-skip-rate", "0.25", "--min-pass-rate", "0", "-q"])  # one number: every metric
    assert every.code == 1


def test_max_error_rate_per_metric_from_the_flag_and_the_config(run_cli, tmp_path):
    from ragjudge import load_config

    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": "a", "response": "Paris is the capital of France."}])
    assert run_cli(["score", source, "--max-error-rate", "completeness=0.33", "--max-error-rate", "sufficiency=0.5", "--summary-json",
                    str(tmp_path / "s.json"), "-q", "--min-pass-rate", "0"]).code == 0
    metrics = json.loads((tmp_path / "s.json").read_text())["metrics"]
    assert (metrics["completeness"]["max_error_rate"], metrics["sufficiency"]["max_error_rate"]) == (0.33, 0.5)
    bad = run_cli(["score", source, "--max-error-rate", "completeness=1.5"])
    assert bad.code == 2 and "--max-error-rate" in bad.stderr and "1.5 is not between 0 and 1" in bad.stderr
    config = load_config(None, **{"gate": {"max_error_rate": {"completeness": 0.2, "*": 0.1}, "max_skip_rate": 0.5}})
    assert config.gate.error_ceiling("completeness") == 0.2 and config.gate.error_ceiling("sufficiency") == 0.1
    assert config.gate.skip_ceiling("groundedness") == 0.5


# -- 6. the failing rows listed are those of the failed checks' metrics -----------------------------

def _two_metric_summary():
    from ragjudge.gate import MetricSummary, Summary
    from ragjudge.types import Verdict

    suff = MetricSummary("sufficiency", 0.5, min_pass_rate=0.0)
    comp = MetricSummary("completeness", 3.0, min_pass_rate=0.0)
    for i in range(4):
        suff.add(Verdict(metric="sufficiency", status="ok", score=0.0, passed=False, rationale="thin"), f"s{i}", i)
        comp.add(Verdict(metric="completeness", status="ok", score=5.0 if i else 1.0, passed=bool(i), rationale="short"), f"c{i}", i)
    return Summary(rows=4, metrics={"sufficiency": suff, "completeness": comp}, judge_model="fake")


def test_a_failed_regression_gate_lists_the_regressed_rows_not_another_metrics_failures():
    from ragjudge.compare import checks
    from ragjudge.gate import check_gate, with_regressions
    from ragjudge.reports.console import failing_lines

    summary = _two_metric_summary()
    comparison = {"rows": 4, "matched_by": "id", "metrics": {
        "sufficiency": {"pairs": 4, "regressed": 0, "improved": 0, "change": 0.0, "regressed_ids": []},
        "completeness": {"pairs": 4, "regressed": 2, "improved": 0, "change": -0.5, "regressed_ids": ["c0", "c3"]}}}
    gate = with_regressions(check_gate(summary), checks(comparison, max_regressions=0))
    assert not gate.passed
    lines = failing_lines(summary, gate=gate, comparison=comparison)
    assert lines[0] == "failing rows (2 of 2):"
    assert lines[1:] == ["  completeness c0: regressed (passed in the baseline, fails now)",
                         "  completeness c3: regressed (passed in the baseline, fails now)"]
    assert not any("sufficiency" in line for line in lines)


def test_a_failed_pass_rate_gate_lists_only_that_metrics_rows():
    from ragjudge.gate import check_gate
    from ragjudge.reports.console import failing_lines

    summary = _two_metric_summary()
    summary.metrics["completeness"].min_pass_rate = 1.0  # completeness 3/4 fails; sufficiency 0/4 passes its floor of 0
    gate = check_gate(summary)
    lines = failing_lines(summary, gate=gate)
    assert lines == ["failing rows (1 of 1):", "  completeness c0: score 1: short"]
    assert len(failing_lines(summary)) == 6  # without the gate: every metric's failing rows (1 + 4), as before


# -- 7. the budget line under --no-cache ------------------------------------------------------------

@pytest.mark.parametrize("cache, said", [
    ([], "run again with a higher --max-cost: the rows judged come from the cache"),
    (["--no-cache"], "run again with a higher --max-cost: nothing was cached (--no-cache), so every row will be paid again"),
])
def test_the_budget_line_says_whether_the_rows_judged_were_cached(run_cli, tmp_path, server, cache, said):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": str(i), "request": f"Question {i}?"} for i in range(4)]), "-m", "sufficiency",
                      "--model", "openai/gpt-4o-mini", "--max-cost", "0.000001", "--concurrency", "1", *cache])
    assert result.code == 3 and said in result.stderr, result.stderr
    other = "nothing was cached" if not cache else "come from the cache"
    assert other not in result.stderr


# -- 8. score --help tells the truth -----------------------------------------------------------------

def test_score_help_names_every_kind_of_metric_every_gate_exiting_1_and_a_real_example_file():
    import re

    from conftest import ROOT
    from ragjudge.cli import SCORE_EPILOG, app
    from typer.testing import CliRunner

    text = " ".join(re.sub("[│╭╮╰╯─]", " ", CliRunner().invoke(app, ["score", "--help"], terminal_width=400).output).split())
    assert "repeat for both" not in text and "groundedness" in text and "a judge defined in the config" in text
    assert "1 a pass-rate gate failed" not in text and "1 a gate failed (pass rate, skip rate, diagnosis share" in text
    assert "regressions, pass-rate drop" in text
    for path in re.findall(r"ragjudge score (\S+\.jsonl)", SCORE_EPILOG):
        if path not in ("data.jsonl",):
            assert (ROOT / path).is_file(), path
    assert "sample_data/rag_eval.mlflow.jsonl" in SCORE_EPILOG and "mlflow_records.jsonl" not in SCORE_EPILOG


# -- 9. a bad --set value is named as the --set key given ---------------------------------------------

@pytest.mark.parametrize("args", [["--set", "judge.concurrency=0"], ["--set", 'judge={"concurrency": 0}']])
def test_a_bad_set_value_names_the_set_key_not_a_flag_never_given(run_cli, tmp_path, server, args):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  concurrency: 2\n")
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": "a"}]), "-c", str(config), *args])
    assert result.code == 2 and "error: --set judge.concurrency: should be greater than or equal to 1 (got 0)" in result.stderr
    assert "--concurrency:" not in result.stderr and server.calls == 0
    named = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": "a"}]), "--concurrency", "0", *args])
    assert named.code == 2 and "error: --concurrency: should be greater than or equal to 1 (got 0)" in named.stderr  # it names itself

"""What a run prints on the terminal at its end (``ragjudge.reports.console``): the summary
table, in a narrow terminal and in a log, and the failing rows it lists."""

from __future__ import annotations


# peer report (issue 20 item 15): the summary table at 80 columns hides its numbers
def test_the_summary_table_at_80_columns_keeps_every_count():
    import io

    from rich.console import Console

    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.console import print_summary

    metrics = {name: MetricSummary(name, 0.5, rows=300, ok=275, error=12, skipped=13, passed=200, cached=275, score_thousandths=200_000)
               for name in ("sufficiency", "completeness")}
    summary = Summary(rows=300, metrics=metrics, judge_model="openai/gpt-4o-mini")
    for width in (80, 60):
        buffer = io.StringIO()
        print_summary(Console(file=buffer, width=width), summary, check_gate(summary))
        table = buffer.getvalue()
        assert "…" not in table
        assert all(line.count("275") == 1 and "12" in line and "13" in line for line in table.splitlines() if "sufficiency" in line and "│" in line)
        assert max(len(line) for line in table.splitlines() if "│" in line) <= width


# peer report (issue 20 item 15): the summary table at 80 columns hides its numbers
def test_the_summary_leaves_no_trailing_spaces_in_a_log():
    # rich padded the table's title to the table's width: a CI log had 'judge openai/gpt-4o-mini        '
    import io

    from rich.console import Console

    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.console import print_summary

    metrics = {"sufficiency": MetricSummary("sufficiency", 0.5, rows=3, ok=3, passed=2, score_thousandths=2000)}
    summary = Summary(rows=3, metrics=metrics, judge_model="openai/gpt-4o-mini")
    buffer = io.StringIO()
    print_summary(Console(file=buffer, width=120), summary, check_gate(summary))
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "ragjudge: 3 rows, judge openai/gpt-4o-mini"
    assert [line for line in lines if line != line.rstrip()] == []


def _two_metric_summary():
    from ragjudge.gate import MetricSummary, Summary
    from ragjudge.types import Verdict

    suff = MetricSummary("sufficiency", 0.5, min_pass_rate=0.0)
    comp = MetricSummary("completeness", 3.0, min_pass_rate=0.0)
    for i in range(4):
        suff.add(Verdict(metric="sufficiency", status="ok", score=0.0, passed=False, rationale="thin"), f"s{i}", i)
        comp.add(Verdict(metric="completeness", status="ok", score=5.0 if i else 1.0, passed=bool(i), rationale="short"), f"c{i}", i)
    return Summary(rows=4, metrics={"sufficiency": suff, "completeness": comp}, judge_model="fake")


# review of main (fixa) item 6: the failing rows listed are those of the failed checks' metrics
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


# review of main (fixa) item 6: the failing rows listed are those of the failed checks' metrics
def test_a_failed_pass_rate_gate_lists_only_that_metrics_rows():
    from ragjudge.gate import check_gate
    from ragjudge.reports.console import failing_lines

    summary = _two_metric_summary()
    summary.metrics["completeness"].min_pass_rate = 1.0  # completeness 3/4 fails; sufficiency 0/4 passes its floor of 0
    gate = check_gate(summary)
    lines = failing_lines(summary, gate=gate)
    assert lines == ["failing rows (1 of 1):", "  completeness c0: score 1: short"]
    assert len(failing_lines(summary)) == 6  # without the gate: every metric's failing rows (1 + 4), as before


def test_a_failed_error_rate_gate_lists_the_error_rows_before_the_low_scores():
    # a new user's find: the one input-error row that failed the gate (exit 2) was "and 1 more" under five score-0 rows
    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.console import failing_lines
    from ragjudge.types import Verdict

    suff = MetricSummary("sufficiency", 0.5, min_pass_rate=0.0)
    for i in range(5):
        suff.add(Verdict(metric="sufficiency", status="ok", score=0.0, passed=False, rationale="thin"), f"s{i}", i)
    suff.add(Verdict.failed("sufficiency", "empty row", input_error=True), "s5", 5)
    summary = Summary(rows=6, metrics={"sufficiency": suff}, judge_model="fake")
    gate = check_gate(summary)
    assert not gate.passed and {c.check.value for c in gate.checks if c.failed} == {"error_rate"}
    assert failing_lines(summary, gate=gate) == ["failing rows (5 of 6):", "  1 row(s) (sufficiency): error: empty row",
                                                 "  sufficiency s0: score 0: thin", "  sufficiency s1: score 0: thin",
                                                 "  sufficiency s2: score 0: thin", "  sufficiency s3: score 0: thin", "  and 1 more (write the scored table with -o to see every row)"]
    summary.metrics["sufficiency"].min_pass_rate = 0.5  # the pass rate fails too: its rows first, as before
    lines = failing_lines(summary, gate=check_gate(summary))
    assert lines[1] == "  sufficiency s0: score 0: thin" and lines[-1].startswith("  and 1 more")

"""What a run prints on the terminal at its end (``ragjudge.reports.console``): the summary
table, in a narrow terminal and in a log, and the failing rows it lists."""

from __future__ import annotations


# peer report (issue 20 item 15): The summary table at 80 columns hides its numbers
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


# peer report (issue 20 item 15): The summary table at 80 columns hides its numbers
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

"""The gate (``ragjudge.gate``): its typed checks, per-metric bounds, the lines it prints and the
exit code it decides."""

from __future__ import annotations


# peer report (issue 20 item 11): Printed comparisons round the numbers they compare
def test_a_gate_line_shows_the_digits_that_make_it_true():
    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.gate_text import lines_of

    m = MetricSummary("sufficiency", 0.5, rows=40, ok=40, passed=38, score_thousandths=38000, min_pass_rate=0.951)
    lines = lines_of(check_gate(Summary(rows=40, metrics={"sufficiency": m})))
    assert "FAIL sufficiency: pass rate 0.950 < 0.951 (38 of 40 ok rows passed)" in lines  # it read "0.95 < 0.95"

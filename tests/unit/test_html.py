"""The HTML report's page built in-process (``ragjudge.reports.html``), without a browser: its counts
and figures. What the page does in a browser: tests/test_report.py."""

from __future__ import annotations


# new user's first hour (issue 44 item 13): "1 rows", and a histogram of fractional scores counting half rows
def test_one_row_is_one_row_and_a_histogram_counts_whole_rows(monkeypatch):
    import pandas as pd

    from ragjudge import load_config
    from ragjudge.reports import html

    figures = []
    monkeypatch.setattr(html, "_svg", lambda figure: figures.append(figure) or "<svg></svg>")
    row = {"id": "a", "request": "q", "response": "r", "expected_response": "e", "completeness_status": "ok", "completeness_score": 2.9,
           "completeness_passed": False, "completeness_rationale": "x", "judge_model": "m"}
    text = html.from_table(pd.DataFrame([row, {**row, "id": "b", "completeness_score": 3.4, "completeness_passed": True}]).iloc[:2],
                           load_config(None, {"metrics": ["completeness"]}))
    assert "· 2 rows ·" in text
    text = html.from_table(pd.DataFrame([row]), load_config(None, {"metrics": ["completeness"]}))
    assert "· 1 row ·" in text and "1 rows" not in text
    histogram = next(f for f in figures if f.axes[0].get_xlabel() == "score")
    assert all(float(tick).is_integer() for tick in histogram.axes[0].get_yticks())

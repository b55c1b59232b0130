"""CI outputs in the unit tier: the summary's row ids, JUnit XML, the Markdown summary and the
regression gate against a baseline, from runs through the library against the in-process fake
judge (moved from tests/test_ci.py, their assertions unchanged; the printed lines, annotations
and the compare command's contract stay there)."""

from __future__ import annotations

import json

from conftest import write_jsonl
from helpers import ci_rows as rows


def _tables(markdown_text: str) -> list[list[list[str]]]:
    """The tables of a Markdown text as rows of cell texts, read by markdown-it-py."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt().enable("table").parse(markdown_text)
    tables, rows_, cells = [], None, None
    for token in tokens:
        if token.type == "table_open":
            rows_ = []
        elif token.type == "tr_open":
            cells = []
        elif token.type == "inline" and cells is not None:
            cells.append(token.content)
        elif token.type == "tr_close":
            rows_.append(cells)
            cells = None
        elif token.type == "table_close":
            tables.append(rows_)
    return tables


def test_the_summary_keeps_at_most_100_ids_with_the_whole_count(run_score, tmp_path):
    summary = tmp_path / "s.json"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows(130, bad=set(range(130)))), metric=["sufficiency"], summary_json=str(summary), quiet=True)
    failed = json.loads(summary.read_text())["metrics"]["sufficiency"]["failed_rows"]
    assert failed["count"] == 130 and failed["ids"] == [f"r{i}" for i in range(100)]


def test_junit_counts_per_suite_match_the_summary(run_score, tmp_path, judge):
    from junitparser import Error, Failure, JUnitXml, Skipped

    judge.replies.extend(["not json", "still not json"])  # the first call errs (and its re-ask)
    junit = tmp_path / "junit.xml"
    summary = tmp_path / "s.json"
    data = rows(10, bad={2, 5}, skipped={7})
    for row in data:
        row["response"] = "city 0" if row["id"] != "r9" else None
    result = run_score(write_jsonl(tmp_path / "in.jsonl", data), min_pass_rate=["0"], junit=str(junit), summary_json=str(summary), concurrency=1, max_error_rate=1.0)
    assert result.code == 0, result.text
    xml = JUnitXml.fromfile(str(junit))
    doc = json.loads(summary.read_text())["metrics"]
    suites = {suite.name: suite for suite in xml if suite.name != "gate"}  # the gate's own suite: tests/unit/test_junit_gate.py
    assert {suite.name for suite in xml} == {"sufficiency", "completeness", "gate"}
    for name, suite in suites.items():
        cases = list(suite)
        outcome = {"failure": 0, "error": 0, "skipped": 0}
        for case in cases:
            for result_ in case.result:
                outcome[{Failure: "failure", Error: "error", Skipped: "skipped"}[type(result_)]] += 1
            assert case.classname == name
        m = doc[name]
        assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (m["rows"], m["ok"] - m["passed"], m["error"], m["skipped"])
        assert (outcome["failure"], outcome["error"], outcome["skipped"]) == (m["ok"] - m["passed"], m["error"], m["skipped"])
        assert [case.name for case in cases] == [f"r{i}" for i in range(10)] and suite.time >= 0
    sufficiency = {case.name: case for case in suites["sufficiency"]}
    assert sufficiency["r0"].result and isinstance(sufficiency["r0"].result[0], Error)  # the unreadable reply
    assert isinstance(sufficiency["r7"].result[0], Skipped) and sufficiency["r7"].result[0].message == "no context"
    failure = sufficiency["r2"].result[0]
    assert isinstance(failure, Failure) and "Missing: a village far from 1002" in failure.message


def test_the_markdown_summary_holds_the_gate_the_metrics_and_the_worst_rows(run_score, tmp_path, monkeypatch):
    step = tmp_path / "step.md"
    step.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    markdown = tmp_path / "summary.md"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows(12, bad=set(range(0, 12, 3)))), metric=["sufficiency"], markdown=str(markdown), quiet=True)
    assert result.code == 1
    text = markdown.read_text()
    assert text.startswith("## ragjudge: gate failed (exit 1)")
    assert "- FAIL sufficiency: pass rate 0.67 &lt; 1.00 (8 of 12 ok rows passed)" in text
    metrics, worst = _tables(text)
    assert metrics[0] == ["metric", "ok", "error", "skipped", "pass rate", "threshold", "mean score"]
    assert metrics[1] == ["sufficiency", "12", "0", "0", "0.67", "0.5", "0.67"]
    assert [row[:3] for row in worst[1:]] == [["sufficiency", f"r{i}", "0"] for i in (0, 3, 6, 9)]
    assert "Tokens:" in text and "cost:" in text
    appended = step.read_text()
    assert appended.startswith("# earlier step\n") and appended.endswith(text)  # appended, not overwritten
    run_score(write_jsonl(tmp_path / "in.jsonl", rows(2)), metric=["sufficiency"], quiet=True, step_summary=False)
    assert step.read_text() == appended


def test_the_markdown_names_the_regressed_rows_at_most_20_a_metric(run_score, tmp_path):
    # issue 47: the pull request comment quotes the Markdown summary, which named how many rows
    # regressed but not which
    baseline = tmp_path / "base.jsonl"
    run_score(write_jsonl(tmp_path / "old.jsonl", rows(30)), metric=["sufficiency"], output=str(baseline), quiet=True)
    markdown = tmp_path / "m.md"
    source = write_jsonl(tmp_path / "new.jsonl", rows(30, bad={2, 5}))
    assert run_score(source, metric=["sufficiency"], min_pass_rate=["0"], baseline=str(baseline), markdown=str(markdown)).code == 0
    text = markdown.read_text()
    assert "Regressed rows (passed in the baseline, fail now):\n\n- sufficiency (2): r2, r5\n" in text
    run_score(write_jsonl(tmp_path / "worse.jsonl", rows(30, bad=set(range(25)))), metric=["sufficiency"], min_pass_rate=["0"],
              baseline=str(baseline), markdown=str(markdown))
    listed = ", ".join(f"r{i}" for i in range(20))
    assert f"- sufficiency (25): {listed} and 5 more\n" in markdown.read_text()
    run_score(write_jsonl(tmp_path / "same.jsonl", rows(30)), metric=["sufficiency"], baseline=str(baseline), markdown=str(markdown))
    assert "Regressed rows" not in markdown.read_text()


def _failing(score: float, threshold: float):
    """A summary with one completeness row failing at ``score`` (pass mark ``threshold``)."""
    from ragjudge.gate import MetricSummary, Summary

    metric = MetricSummary("completeness", threshold, rows=1, ok=1,
                           worst=[{"row": 0, "id": "r0", "score": score, "rationale": "why", "missing": []}])
    return Summary(rows=1, metrics={"completeness": metric})


def test_failing_rows_show_the_score_as_the_verbose_line_and_the_demo_do():
    # found in `make demo` on a clean clone: the row scored 2.501 read "completeness 2.5 FAILED" (-v), "judge 2.5 of 5" (the
    # demo's lines) and "score 2.501" in the failing rows under the gate: one score, two texts (issue 60 item 23's kind)
    from ragjudge.reports.annotations import commands
    from ragjudge.reports.console import _add_worst

    shown: list[str] = []
    _add_worst(shown, _failing(2.501, 2.9).metrics, 5)
    assert shown == ["  completeness r0: score 2.5: why"]
    assert "score 2.5 (threshold 2.9). why" in commands(_failing(2.501, 2.9), "in.jsonl", "jsonl")[0]  # the GitHub annotation
    # the other shape: a score just under the pass mark keeps the digits that show it fails (2.899 is not "2.9" at 2.9)
    shown = []
    _add_worst(shown, _failing(2.899, 2.9).metrics, 5)
    assert shown == ["  completeness r0: score 2.899: why"]
    assert "score 2.899 (threshold 2.9)" in commands(_failing(2.899, 2.9), "in.jsonl", "jsonl")[0]

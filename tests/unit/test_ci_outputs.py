"""CI outputs in the unit tier: the summary's row ids, JUnit XML, the Markdown summary and the
regression gate against a baseline, from runs through the library against the in-process fake
judge (moved from tests/test_ci.py, their assertions unchanged; the printed lines, annotations
and the compare command's contract stay there)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl
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


def test_score_with_a_baseline_gives_the_numbers_of_score_then_compare(run_score, run_cli, tmp_path):
    baseline = tmp_path / "base.jsonl"
    run_score(write_jsonl(tmp_path / "old.jsonl", rows(10, bad={1})), metric=["sufficiency"], output=str(baseline), quiet=True)
    source = write_jsonl(tmp_path / "new.jsonl", rows(10, bad={1, 2, 3}))
    summary = tmp_path / "s.json"
    current = tmp_path / "cur.jsonl"
    junit = tmp_path / "j.xml"
    markdown = tmp_path / "m.md"
    result = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(current), baseline=str(baseline), max_regressions=1, summary_json=str(summary), junit=str(junit), markdown=str(markdown))
    assert result.code == 1
    assert "FAIL sufficiency: 2 regressed row(s) > 1 (passed in the baseline, fail now; 0 improved)" in result.text
    in_summary = json.loads(summary.read_text())
    separately = json.loads(run_cli(["compare", str(baseline), str(current), "--max-regressions", "1", "--json"], judge=False).stdout)
    assert in_summary["comparison"]["metrics"] == separately["metrics"] and in_summary["exit_code"] == 1
    assert in_summary["comparison"]["gate_lines"] == separately["gate_lines"]
    from junitparser import JUnitXml

    regressions = [suite for suite in JUnitXml.fromfile(str(junit)) if suite.name == "regressions"][0]
    assert [case.name for case in regressions] == ["r2", "r3"] and regressions.failures == 2
    assert "### Against the baseline" in markdown.read_text()
    assert run_score(source, metric=["sufficiency"], max_regressions=1).code == 2  # a gate on a baseline needs one
    written = read_jsonl(current)
    assert len(written) == 10


def test_scored_csv_tables_compare_and_report_as_the_run_wrote_them(run_score, run_cli, tmp_path):
    # a CSV holds M_passed as the text "False", and bool("False") is True: an unchanged run
    # read back from CSV showed 13 "regressed" rows, and CSV against CSV never regressed
    source = write_jsonl(tmp_path / "in.jsonl", rows(10, bad={1, 2, 3}))
    run_score(source, metric=["sufficiency"], output=str(tmp_path / "base.csv"), quiet=True)
    run_score(source, metric=["sufficiency"], output=str(tmp_path / "base.parquet"), quiet=True)
    same = json.loads(run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "base.csv"), "--json"], judge=False).stdout)
    m = same["metrics"]["sufficiency"]
    assert (m["pairs"], m["regressed"], m["improved"], m["baseline_pass_rate"], m["pass_rate"]) == (10, 0, 0, 0.7, 0.7)
    again = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], baseline=str(tmp_path / "base.csv"), max_regressions=0, quiet=True)
    assert again.code == 0, again.text
    flipped = pd.read_csv(tmp_path / "base.csv")
    flipped.loc[0, "sufficiency_passed"] = False  # r0 passed in base.csv; it fails in flipped.csv
    flipped.to_csv(tmp_path / "flipped.csv", index=False)
    worse = run_cli(["compare", str(tmp_path / "base.csv"), str(tmp_path / "flipped.csv"), "--max-regressions", "0"], judge=False)
    assert worse.code == 1 and "FAIL sufficiency: 1 regressed row(s) > 0" in worse.stdout
    from ragjudge import Config
    from ragjudge.compare import typed
    from ragjudge.reports.html import summary_of

    read_back = typed(pd.read_csv(tmp_path / "base.csv"))
    assert read_back["sufficiency_passed"].tolist() == [True, False, False, False, True, True, True, True, True, True]
    assert summary_of(read_back, ["sufficiency"], Config()).metrics["sufficiency"].passed == 7


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


# issue 60 item 20: score --baseline run1 --max-regressions 0 exited 1 and report said so, but compare run1 run2 exited 0 with
# no gate line, although run2's Parquet file records max_regressions: 0
def test_compare_applies_the_regression_gate_the_current_table_records(run_score, run_cli, tmp_path):
    baseline = tmp_path / "run1.parquet"
    run_score(write_jsonl(tmp_path / "old.jsonl", rows(10, bad={1})), metric=["sufficiency"], output=str(baseline), quiet=True)
    current = tmp_path / "run2.parquet"
    scored = run_score(write_jsonl(tmp_path / "new.jsonl", rows(10, bad={1, 2, 3})), metric=["sufficiency"], min_pass_rate=["0"],
                       output=str(current), baseline=str(baseline), max_regressions=0, quiet=True)
    assert scored.code == 1
    compared = run_cli(["compare", str(baseline), str(current)], judge=False)
    assert compared.code == 1
    assert "FAIL sufficiency: 2 regressed row(s) > 0 (passed in the baseline, fail now; 0 improved)" in compared.stdout
    assert f"note: the regression gates {current} records of its run: --max-regressions 0" in compared.stderr
    as_json = json.loads(run_cli(["compare", str(baseline), str(current), "--json"], judge=False).stdout)
    assert as_json["gate_lines"] == ["FAIL sufficiency: 2 regressed row(s) > 0 (passed in the baseline, fail now; 0 improved)"]
    given = run_cli(["compare", str(baseline), str(current), "--max-regressions", "2"], judge=False)  # a flag replaces its bound
    assert given.code == 0 and "PASS sufficiency: 2 regressed row(s) <= 2" in given.stdout and "records" not in given.stderr


def test_compare_applies_a_recorded_drop_beside_a_regressions_flag(run_score, run_cli, tmp_path):
    # a second shape: the run gated the pass rate's drop (--max-drop 0.1); compare given only --max-regressions kept no drop gate
    baseline = tmp_path / "run1.parquet"
    run_score(write_jsonl(tmp_path / "old.jsonl", rows(10, bad={1})), metric=["sufficiency"], output=str(baseline), quiet=True)
    current = tmp_path / "run2.parquet"
    scored = run_score(write_jsonl(tmp_path / "new.jsonl", rows(10, bad={1, 2, 3})), metric=["sufficiency"], min_pass_rate=["0"],
                       output=str(current), baseline=str(baseline), max_drop=0.1, quiet=True)
    assert scored.code == 1  # 0.90 -> 0.70: a drop of 0.20
    compared = run_cli(["compare", str(baseline), str(current), "--max-regressions", "5"], judge=False)
    assert compared.code == 1
    lines = [line for line in compared.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert lines[0] == "PASS sufficiency: 2 regressed row(s) <= 5 (passed in the baseline, fail now; 0 improved)"
    assert lines[1].startswith("FAIL sufficiency: pass rate dropped 0.20 > 0.10")
    assert f"note: the regression gates {current} records of its run: --max-drop 0.1 (a flag given replaces its own)" in compared.stderr
    # a table that records no gate (CSV, or a run without one) is compared with the flags alone, as before
    plain = run_cli(["compare", str(baseline), str(baseline)], judge=False)
    assert plain.code == 0 and "PASS" not in plain.stdout and "FAIL" not in plain.stdout and plain.stderr == ""


# compare of CSV / JSON Lines tables (which record no run) exited 0 with no gate line and no word that the run's
# --max-regressions 0 could not be read back; report says the same of a CSV table
@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_compare_says_a_table_that_records_nothing_gets_no_regression_gate(run_score, run_cli, tmp_path, suffix):
    baseline = tmp_path / f"run1{suffix}"
    run_score(write_jsonl(tmp_path / "old.jsonl", rows(10, bad={1})), metric=["sufficiency"], output=str(baseline), quiet=True)
    current = tmp_path / f"run2{suffix}"
    scored = run_score(write_jsonl(tmp_path / "new.jsonl", rows(10, bad={1, 2, 3})), metric=["sufficiency"], min_pass_rate=["0"],
                       output=str(current), baseline=str(baseline), max_regressions=0, quiet=True)
    assert scored.code == 1
    compared = run_cli(["compare", str(baseline), str(current)], judge=False)
    assert compared.code == 0 and "2 regressed" in compared.stdout
    assert compared.stderr == (f"note: {current} does not record its run's regression gates (a Parquet file written by ragjudge score "
                               "does): no regression gate is applied; give --max-regressions and --max-drop to gate\n")
    gated = run_cli(["compare", str(baseline), str(current), "--max-regressions", "0"], judge=False)  # the flag: no note, the gate
    assert gated.code == 1 and gated.stderr == "" and "FAIL sufficiency: 2 regressed row(s) > 0" in gated.stdout


def test_compare_with_a_misspelt_metric_says_did_you_mean(run_score, run_cli, tmp_path):
    # found trying the README as a new user: score -m sufficency and the gate flags say "did you mean 'sufficiency'?";
    # compare -m sufficency said only "the baseline table has no sufficency columns (...); it holds sufficiency"
    source = write_jsonl(tmp_path / "in.jsonl", rows(10, bad={1}))
    run_score(source, metric=["sufficiency"], output=str(tmp_path / "base.parquet"), quiet=True)
    base = str(tmp_path / "base.parquet")
    typo = run_cli(["compare", base, base, "-m", "sufficency"], judge=False)
    assert typo.code == 2 and typo.stderr.strip() == ("error: the baseline table has no sufficency columns (sufficency_status, sufficency_passed); "
                                             "did you mean 'sufficiency'? (it holds sufficiency)")
    # the other shape: another case of the same name is suggested; a name like none the table holds lists what it holds
    assert "did you mean 'sufficiency'?" in run_cli(["compare", base, base, "-m", "Sufficiency"], judge=False).stderr
    far = run_cli(["compare", base, base, "-m", "groundedness"], judge=False)
    assert far.code == 2 and far.stderr.strip() == ("error: the baseline table has no groundedness columns (groundedness_status, groundedness_passed); "
                                           "it holds sufficiency")


def test_compare_ends_with_the_gates_verdict_and_exit_code_as_score_does(run_score, run_cli, tmp_path):
    # found trying the README as a new user: score --baseline ... ends "gate failed (exit 1)"; compare of the same tables
    # printed its FAIL line and exited 1 with no closing line (the run's verdict left to $?)
    baseline = tmp_path / "run1.parquet"
    run_score(write_jsonl(tmp_path / "old.jsonl", rows(10, bad={1})), metric=["sufficiency"], output=str(baseline), quiet=True)
    current = tmp_path / "run2.parquet"
    scored = run_score(write_jsonl(tmp_path / "new.jsonl", rows(10, bad={1, 2, 3})), metric=["sufficiency"], min_pass_rate=["0"],
                       output=str(current), baseline=str(baseline), max_regressions=0, quiet=True)
    assert scored.code == 1
    failed = run_cli(["compare", str(baseline), str(current)], judge=False)
    assert failed.code == 1 and failed.stdout.splitlines()[-2:] == [
        "FAIL sufficiency: 2 regressed row(s) > 0 (passed in the baseline, fail now; 0 improved)", "gate failed (exit 1)"]
    # the other shape: a bound given that passes ends "gate passed"; no bound at all gates nothing and says no verdict;
    # --json stays JSON alone
    passed = run_cli(["compare", str(baseline), str(current), "--max-regressions", "2"], judge=False)
    assert passed.code == 0 and passed.stdout.splitlines()[-1] == "gate passed"
    ungated = run_cli(["compare", str(baseline), str(baseline)], judge=False)
    assert ungated.code == 0 and not ungated.stdout.splitlines()[-1].startswith("gate ")
    assert json.loads(run_cli(["compare", str(baseline), str(current), "--json"], judge=False).stdout)["gate_lines"]


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

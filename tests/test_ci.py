"""In CI (issue 16): failing rows named, JUnit XML, the Markdown summary, GitHub annotations,
and the regression gate against a baseline (`ragjudge compare`, `score --baseline`)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl
from helpers import TEST_API_KEY as KEY
from helpers import GROUNDED
from helpers import ci_rows as rows
from ragjudge.gate import MetricSummary, Summary, check_gate
from ragjudge.types import Verdict


def test_a_failing_gate_names_its_failing_rows(run_cli, tmp_path):
    out = tmp_path / "out.parquet"
    summary = tmp_path / "s.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(12, bad={1, 3, 4, 6, 8, 9, 11})), "-m", "sufficiency",
                      "-o", str(out), "--summary-json", str(summary), "-q"])
    assert result.code == 1
    lines = result.stderr.splitlines()
    start = lines.index("failing rows (5 of 7):")
    assert lines[start + 1].startswith("  sufficiency r1: score 0: ")
    assert [line.split(":")[0] for line in lines[start + 1:start + 6]] == [f"  sufficiency r{i}" for i in (1, 3, 4, 6, 8)]
    assert lines[start + 6] == (f"  and 2 more: the rows where sufficiency_passed is false (or the status is error) in {out}; "
                                f"their ids in {summary} (failed_rows, error_rows)")
    doc = json.loads(summary.read_text())["metrics"]["sufficiency"]
    assert doc["failed_rows"] == {"count": 7, "ids": ["r1", "r3", "r4", "r6", "r8", "r9", "r11"]}
    assert doc["error_rows"] == {"count": 0, "ids": []} and doc["skipped_rows"] == {"count": 0, "ids": []}


def test_with_the_table_on_stdout_the_hint_points_there_not_at_minus_o(run_cli, tmp_path):
    # with -o - the hint said "write the scored table with -o to see every row"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(12, bad={1, 3, 4, 6, 8, 9, 11})), "-m", "sufficiency", "-o", "-", "-q"])
    assert result.code == 1
    assert "  and 2 more: the rows where sufficiency_passed is false (or the status is error) in the table on stdout" in result.stderr.splitlines()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_annotations_point_at_the_input_file_and_line(run_cli, tmp_path, monkeypatch, server, fmt):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("MY_GATEWAY_KEY", "gateway-secret-12345")
    server.replies.append(json.dumps({"facts": [{"fact": 1, "supported": False, "passages": [], "reason": "r"}],
                                      "rationale": "The key sk-abcdefgh12345 and gateway-secret-12345 leaked here.", "verdict": "no"}))
    data = rows(14, bad={4, 12})
    for row in data:
        row["context"] = row["context"][0] + "\nSecond line of the passage."  # a CSV record spans two lines
    if fmt == "jsonl":
        path = tmp_path / "in.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in data[:3]) + "\n\n" + "\n".join(json.dumps(r) for r in data[3:]) + "\n")
        lines = {0: 1, 4: 6, 12: 14}  # r0 on line 1; a blank line after r2
    else:
        path = tmp_path / "in.csv"
        pd.DataFrame(data).to_csv(path, index=False)
        assert path.read_text().count("\n") == 1 + 2 * 14
        lines = {0: 2, 4: 10, 12: 26}  # each record two lines, after the header
    result = run_cli(["score", str(path), "-m", "sufficiency", "--concurrency", "1"])
    assert result.code == 1
    commands = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert commands[0].startswith(f"::error file={path},line={lines[0]},title=ragjudge sufficiency failed%3A r0::")  # the scripted "no"
    assert f"file={path},line={lines[4]},title=ragjudge sufficiency failed%3A r4::" in commands[1]
    assert f"file={path},line={lines[12]},title=ragjudge sufficiency failed%3A r12::" in commands[2]
    assert len(commands) == 3
    assert "sk-abcdefgh12345" not in result.stdout and "gateway-secret-12345" not in result.stdout and KEY not in result.stdout
    assert "***" in commands[0]


def test_annotations_are_capped_at_ten_with_a_notice(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(25, bad=set(range(25)))), "-m", "sufficiency"])
    commands = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert len([c for c in commands if c.startswith("::error")]) == 10
    assert commands[-1] == "::notice title=ragjudge::15 more failing row(s) not annotated; see the scored table or the summary"


def _scored(rows_: list[tuple[str, str, bool | None, float | None]], metric: str = "sufficiency") -> pd.DataFrame:
    return pd.DataFrame({"id": [r[0] for r in rows_], f"{metric}_status": [r[1] for r in rows_], f"{metric}_passed": [r[2] for r in rows_],
                         f"{metric}_score": [r[3] for r in rows_], "group": ["a", "a", "b", "b", "b", "b", "b", "b"][: len(rows_)]})


BASE = _scored([("1", "ok", True, 1.0), ("2", "ok", True, 1.0), ("3", "ok", True, 1.0), ("4", "ok", False, 0.0),
                ("5", "ok", True, 1.0), ("6", "ok", True, 1.0), ("7", "error", None, None), ("8", "ok", True, 1.0)])
CURRENT = _scored([("1", "ok", False, 0.0), ("2", "ok", False, 0.0), ("3", "ok", True, 1.0), ("4", "ok", True, 1.0),
                   ("5", "ok", False, 0.0), ("6", "ok", True, 1.0), ("7", "ok", True, 1.0), ("9", "ok", True, 1.0)])


def test_compare_gives_the_hand_computed_regressions_and_statistics():
    from ragjudge.compare import checks, compare, render
    from ragjudge.reports.gate_text import lines

    def check(report, **bounds):  # the regression gates' lines (compare.check until the gate's words moved to reports)
        return lines(checks(report, **bounds))

    report = compare(BASE, CURRENT)
    m = report["metrics"]["sufficiency"]
    # rows 1..6 and 8 are ok in both... no: 7 erred in the baseline, 8 and 9 are in one table only
    assert report["matched_by"] == "id" and report["rows"] == 7
    assert report["only_in_baseline"] == {"count": 1, "ids": ["8"]} and report["only_in_current"] == {"count": 1, "ids": ["9"]}
    assert (m["pairs"], m["regressed"], m["improved"]) == (6, 3, 1)
    assert m["regressed_ids"] == ["1", "2", "5"] and m["improved_ids"] == ["4"]
    assert {"  regressed: 1, 2, 5", "  improved: 4"} <= set(render(report).splitlines())  # the improved ids were in --json alone
    assert m["baseline_pass_rate"] == pytest.approx(5 / 6) and m["pass_rate"] == pytest.approx(3 / 6)
    assert m["mcnemar_p"] == pytest.approx(0.625)  # 3 of 4 changed rows regressed: 2 x P(X >= 3 | n 4, p 0.5) = 2 x 5/16
    assert m["status_changed"] == 1 and m["status_changed_ids"] == ["7"]
    assert check(report, max_regressions=3) == ["PASS sufficiency: 3 regressed row(s) <= 3 (passed in the baseline, fail now; 1 improved)"]
    assert check(report, max_regressions=2)[0].startswith("FAIL sufficiency: 3 regressed row(s) > 2")
    assert check(report, max_drop=0.3)[0].startswith("FAIL sufficiency: pass rate dropped 0.33 > 0.30")
    assert check(report, max_drop=0.34)[0].startswith("PASS sufficiency: pass rate dropped 0.33 <= 0.34")


def _with_reasons(rows_: list[tuple[str, str, bool | None, float | None, str | None]]) -> pd.DataFrame:
    return pd.DataFrame({"id": [r[0] for r in rows_], "sufficiency_status": [r[1] for r in rows_], "sufficiency_passed": [r[2] for r in rows_],
                         "sufficiency_score": [r[3] for r in rows_], "sufficiency_error": [r[4] for r in rows_],
                         "group": ["a"] * 4 + ["b"] * (len(rows_) - 4)})


def test_a_row_that_passed_in_the_baseline_and_is_not_judged_now_is_a_regression_in_every_output(run_cli, tmp_path):
    # rows that passed in the baseline and erred (or were skipped) now were left out of both
    # the regressions and the pass rates, so --max-regressions 0 and --max-drop 0 passed a run
    # that could no longer judge them; then the gate counted them but the Markdown, JUnit and
    # --by figures did not; a row --limit left out ("not sampled") is no row of the run
    from ragjudge.compare import checks, compare, markdown_view, render
    from ragjudge.reports.gate_text import lines

    base = _with_reasons([("1", "ok", True, 1.0, None), ("2", "ok", True, 1.0, None), ("3", "ok", True, 1.0, None), ("4", "ok", False, 0.0, None),
                          ("5", "ok", True, 1.0, None), ("6", "ok", True, 1.0, None), ("7", "error", None, None, "judge call failed"),
                          ("8", "ok", True, 1.0, None), ("9", "ok", True, 1.0, None)])
    cur = _with_reasons([("1", "ok", True, 1.0, None), ("2", "ok", True, 1.0, None), ("3", "error", None, None, "judge call failed"),
                         ("4", "error", None, None, "judge call failed"), ("5", "ok", True, 1.0, None), ("6", "skipped", None, None, "no context"),
                         ("7", "ok", True, 1.0, None), ("8", "ok", True, 1.0, None), ("9", "skipped", None, None, "not sampled")])
    report = compare(base, cur, by="group")
    m = report["metrics"]["sufficiency"]
    # ok in both: 1, 2, 5, 8, all passing either side; 3 and 6 passed and are not judged now; 4 failed then; 9 was not sampled
    assert (m["pairs"], m["regressed"], m["regressed_ids"], m["unjudged"], m["unjudged_ids"]) == (4, 2, ["3", "6"], 2, ["3", "6"])
    assert m["change"] == 0.0 and m["mcnemar_p"] is None  # no row ok in both changed its verdict
    # the drop's rows: ok in the baseline and sampled now (1-6, 8): 6 of 7 passed then, 4 of 7 pass now
    assert (m["gated_rows"], m["gated_baseline_pass_rate"], m["gated_pass_rate"]) == (7, 6 / 7, 4 / 7)
    assert m["status_changed_ids"] == ["3", "4", "6", "7"]
    assert (m["by"]["a"]["regressed"], m["by"]["b"]["regressed"]) == (1, 1)  # 3 in a, 6 in b: the groups add up to the gate's count
    assert lines(checks(report, max_regressions=0)) == [
        "FAIL sufficiency: 2 regressed row(s) > 0 (passed in the baseline: 0 fail now, 2 not judged now (error or skipped); 0 improved)"]
    assert lines(checks(report, max_regressions=2))[0].startswith("PASS sufficiency: 2 regressed row(s) <= 2")
    assert lines(checks(report, max_drop=0.28)) == [
        "FAIL sufficiency: pass rate dropped 0.29 > 0.28 (0.86 -> 0.57 on the 7 rows ok in the baseline, a row not judged now counted "
        "as failing: 2 passed then; 1.00 -> 1.00 on the 4 rows ok in both, change 95% [+0.00, +0.00])"]
    assert lines(checks(report, max_drop=0.3))[0].startswith("PASS sufficiency: pass rate dropped 0.29 <= 0.30")
    text = render(report).splitlines()
    assert text[1].endswith("on 4 rows ok in both; 2 regressed (2 of them not judged now), 0 improved (McNemar p -)")
    assert "  of them passed in the baseline and not judged now (error or skipped; the gates count them as failing): 3, 6" in text
    assert markdown_view(report, "base.parquet", [])["regressed"] == [{"name": "sufficiency", "count": 2, "ids": ["3", "6"], "more": 0}]
    b, c = tmp_path / "base.parquet", tmp_path / "cur.parquet"
    base.to_parquet(b)
    cur.to_parquet(c)
    assert run_cli(["compare", str(b), str(c), "--max-regressions", "0"], judge=False).code == 1
    assert run_cli(["compare", str(b), str(c), "--max-regressions", "2"], judge=False).code == 0


def test_a_drop_of_exactly_the_bound_passes_and_the_drop_counts_every_row_ok_in_the_baseline():
    # 0.7 - 0.8 is -0.10000000000000009 in floating point: "pass rate dropped 0.1 > 0.1", exit 1
    from ragjudge.compare import checks, compare
    from ragjudge.reports.gate_text import lines

    def table(states):
        return pd.DataFrame({"id": [str(i) for i in range(len(states))], "sufficiency_status": [s for s, _ in states],
                             "sufficiency_passed": [p for _, p in states], "sufficiency_score": [None if p is None else float(p) for _, p in states]})

    before = table([("ok", i < 8) for i in range(10)])
    after = table([("ok", i < 7) for i in range(10)])
    m = compare(before, after)["metrics"]["sufficiency"]
    assert m["change"] == -0.1
    assert lines(checks(compare(before, after), max_drop=0.1)) == ["PASS sufficiency: pass rate dropped 0.10 <= 0.10 (0.80 -> 0.70 on 10 rows ok in both, change 95% [-0.30, +0.00])"]
    # 10 rows ok in the baseline (0-4 pass, 5-9 fail); now 0 and 5-9 err: 0.5 -> 0.4 over those 10, not over 0-4 alone
    before = table([("ok", i < 5) for i in range(10)])
    after = table([("error", None) if i == 0 or i >= 5 else ("ok", True) for i in range(10)])
    m = compare(before, after)["metrics"]["sufficiency"]
    assert (m["gated_rows"], m["gated_baseline_pass_rate"], m["gated_pass_rate"], m["gated_change"]) == (10, 0.5, 0.4, -0.1)
    assert lines(checks(compare(before, after), max_drop=0.1))[0].startswith("PASS sufficiency: pass rate dropped 0.10 <= 0.10 (0.50 -> 0.40 on the 10 rows")


def test_a_table_without_scores_is_compared_on_its_verdicts(run_cli, tmp_path):
    # a baseline with M_status and M_passed but no M_score passed the checks, and compare ended
    # in "unexpected KeyError: 'sufficiency_score'" (after the run's judge calls, with --baseline)
    b, c = tmp_path / "base.parquet", tmp_path / "cur.parquet"
    BASE.drop(columns=["sufficiency_score"]).to_parquet(b)
    CURRENT.to_parquet(c)
    result = run_cli(["compare", str(b), str(c), "--max-regressions", "3", "--json"], judge=False)
    assert result.code == 0, result.stderr
    m = json.loads(result.stdout)["metrics"]["sufficiency"]
    assert (m["pairs"], m["regressed"], m["improved"]) == (6, 3, 1)


def test_compare_on_a_scale_uses_wilcoxon_on_the_paired_scores():
    from scipy.stats import wilcoxon

    from ragjudge.compare import compare

    before = [5.0, 4.0, 3.0, 5.0, 2.0, 4.0]
    after = [3.0, 4.0, 2.0, 4.0, 1.0, 2.0]
    base = pd.DataFrame({"id": list("abcdef"), "completeness_status": ["ok"] * 6, "completeness_passed": [s >= 3 for s in before],
                         "completeness_score": before})
    cur = pd.DataFrame({"id": list("abcdef"), "completeness_status": ["ok"] * 6, "completeness_passed": [s >= 3 for s in after],
                        "completeness_score": after})
    m = compare(base, cur)["metrics"]["completeness"]
    assert m["wilcoxon_p"] == pytest.approx(wilcoxon([-2.0, -1.0, -1.0, -1.0, -2.0]).pvalue)
    assert (m["regressed"], m["improved"]) == (2, 0) and m["mean_score"] == pytest.approx(16 / 6)  # c (3 -> 2) and f (4 -> 2)


def test_compare_means_leave_out_a_blank_score_and_never_print_minus_zero():
    # a hand-edited table with a blank score printed "mean score 5.00 -> nan", and an
    # unchanged pass rate printed "(-0.00)"
    from ragjudge.compare import compare, render

    base = pd.DataFrame({"id": list("abc"), "completeness_status": ["ok"] * 3, "completeness_passed": [True, True, False],
                         "completeness_score": [5.0, 4.0, 2.0]})
    cur = pd.DataFrame({"id": list("abc"), "completeness_status": ["ok"] * 3, "completeness_passed": [True, True, False],
                        "completeness_score": [float("nan"), 3.0, 2.0]})
    report = compare(base, cur)
    m = report["metrics"]["completeness"]
    assert m["baseline_mean_score"] == pytest.approx(3.0) and m["mean_score"] == pytest.approx(2.5)  # rows b and c
    text = render(report)
    assert "pass rate 0.67 -> 0.67 (+0.00 [+0.00, +0.00])" in text and "mean score 3.00 -> 2.50" in text and "nan" not in text


@pytest.mark.parametrize("change, shown", [(0.0, "+0.00"), (-0.0, "+0.00"), (-1 / 300, "-0.0033"), (1 / 300, "+0.0033"), (-0.25, "-0.25"),
                                           (0.004999, "+0.005"), (None, "-")])
def test_a_pass_rate_change_keeps_its_direction_in_the_terminal_and_the_markdown(change, shown):
    # the terminal printed "-0.00" for no change; the Markdown summary still did, and a drop of
    # one row in 300 showed as "+0.00" or "-0.00"
    from ragjudge.compare import markdown_view, render

    report = {"rows": 1, "matched_by": "id", "only_in_baseline": {"count": 0}, "only_in_current": {"count": 0}, "warnings": [],
              "metrics": {"sufficiency": {"pairs": 300, "baseline_pass_rate": 0.5, "pass_rate": 0.5, "change": change, "regressed": 1,
                                          "improved": 0, "regressed_ids": [], "status_changed": 0, "mcnemar_p": 1.0}}}
    assert f"pass rate 0.50 -> 0.50 ({shown})" in render(report)
    assert markdown_view(report, "base.parquet", [])["metrics"][0]["change"] == shown


def test_compare_exits_1_exactly_when_a_gate_fails_and_2_for_tables_it_cannot_match(run_cli, tmp_path):
    base, cur = tmp_path / "base.parquet", tmp_path / "cur.parquet"
    BASE.to_parquet(base)
    CURRENT.to_parquet(cur)
    ran = {gates: run_cli(["compare", str(base), str(cur), *gates], judge=False).code
           for gates in [(), ("--max-regressions", "3"), ("--max-regressions", "2"), ("--max-drop", "0.5"), ("--max-drop", "0.1")]}
    assert list(ran.values()) == [0, 0, 1, 0, 1]
    grouped = run_cli(["compare", str(base), str(cur), "--by", "group", "--json"], judge=False)
    assert json.loads(grouped.stdout)["metrics"]["sufficiency"]["by"]["a"]["regressed"] == 2
    other = tmp_path / "other.parquet"
    CURRENT.rename(columns={c: c.replace("sufficiency", "completeness") for c in CURRENT.columns}).to_parquet(other)
    mismatched = run_cli(["compare", str(base), str(other)], judge=False)
    assert mismatched.code == 2 and "the tables hold different metrics: the baseline sufficiency, the current table completeness" in mismatched.stderr
    twice = tmp_path / "twice.parquet"
    CURRENT.assign(id=["1", "1", "3", "4", "5", "6", "7", "9"]).to_parquet(twice)
    duplicated = run_cli(["compare", str(base), str(twice)], judge=False)
    assert duplicated.code == 2 and "the current table has the id '1' more than once" in duplicated.stderr
    no_ids = tmp_path / "noid.parquet"
    CURRENT.drop(columns=["id"]).to_parquet(no_ids)
    by_position = run_cli(["compare", str(base), str(no_ids)], judge=False)
    assert by_position.code == 0 and "warning: a table has no id for every row: rows are matched by position" in by_position.stdout


def test_compare_matches_ids_whatever_their_type_and_fails_a_gate_when_nothing_compares(run_cli, tmp_path):
    from ragjudge.compare import checks, compare
    from ragjudge.reports.gate_text import lines

    def check(report, **bounds):  # the regression gates' lines (compare.check until the gate's words moved to reports)
        return lines(checks(report, **bounds))

    numbered = BASE.assign(id=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])  # ids read as floats (a JSON 1.0, a CSV column with gaps)
    assert compare(numbered, BASE.assign(id=[1, 2, 3, 4, 5, 6, 7, 8]))["rows"] == 8
    apart = compare(BASE, CURRENT.assign(id=[f"x{i}" for i in range(8)]))
    assert apart["rows"] == 0
    assert check(apart, max_regressions=0) == ["FAIL sufficiency: no row is ok in both tables (0 matched by id), so nothing could be compared"]
    failed = CURRENT.assign(sufficiency_status="error", sufficiency_passed=None)
    assert check(compare(BASE, failed), max_drop=0.0)[0].startswith("FAIL sufficiency: no row is ok in both tables (7 matched by id)")
    base, cur = tmp_path / "base.parquet", tmp_path / "cur.parquet"
    BASE.to_parquet(base)
    failed.to_parquet(cur)
    assert run_cli(["compare", str(base), str(cur), "--max-regressions", "0", "--max-drop", "0"], judge=False).code == 1
    assert run_cli(["compare", str(base), str(cur)], judge=False).code == 0  # no gate asked for


def test_control_characters_and_keys_never_reach_the_ci_outputs(run_cli, tmp_path, monkeypatch, server):
    # a form feed (text extracted from PDFs) in a missing fact made --junit fail with
    # "unexpected ExpatError" (exit 2 for a run whose gate said 1); a key in a rationale or an
    # id reached the annotation's title, the Markdown, the JUnit file and the console; an id
    # with a newline could start a workflow command of its own in the job log
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step.md"))
    leak = "sk-abcdefgh12345"
    server.replies.append(json.dumps({"facts": [{"fact": 1, "supported": False, "passages": [], "reason": "r"}],
                                      "rationale": f"Page\fbreak; the key {leak} leaked.", "verdict": "no"}))
    data = rows(3)
    data[0]["id"] = f"r0|{leak}\n::warning::injected"
    data[0]["expected_facts"] = ["a fact\fwith a form feed"]
    junit, markdown = tmp_path / "j.xml", tmp_path / "m.md"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", data), "-m", "sufficiency", "--concurrency", "1",
                      "--junit", str(junit), "--markdown", str(markdown)])
    assert result.code == 1, result.stderr
    from junitparser import JUnitXml

    cases = [case for suite in JUnitXml.fromfile(str(junit)) for case in suite]
    assert cases[0].name.startswith("r0|***") and leak not in cases[0].name
    assert "Page\ufffdbreak; the key *** leaked." in cases[0].result[0].message
    everything = result.stdout + result.stderr + junit.read_text() + markdown.read_text() + (tmp_path / "step.md").read_text()
    assert leak not in everything
    assert not [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("::warning::")]
    assert "sufficiency r0|*** ::warning::injected: score 0" in result.stderr


def test_a_step_summary_that_is_an_output_or_cannot_be_written_is_left_alone(run_cli, tmp_path, monkeypatch):
    source = write_jsonl(tmp_path / "in.jsonl", rows(2))
    out = tmp_path / "out.jsonl"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(out))
    result = run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "-q"])
    assert result.code == 0 and f"warning: GITHUB_STEP_SUMMARY is {out}, which this run also reads or writes" in result.stderr
    assert len(read_jsonl(out)) == 2  # Markdown appended to it made "line 5: not valid JSON"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "step.md"))
    result = run_cli(["score", source, "-m", "sufficiency", "-q"])
    assert result.code == 0 and "which cannot be written (a folder, or its folder does not exist)" in result.stderr


def test_a_step_summary_left_alone_is_in_the_run_s_notes(run_score, tmp_path, monkeypatch):
    # the warning went only to the listener: evaluate()'s result and a library caller never saw it (found moving tests in-process)
    source = write_jsonl(tmp_path / "in.jsonl", rows(2))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "step.md"))
    done = run_score(source, metric=["sufficiency"])
    assert done.code == 0
    assert done.notes[0] == (f"warning: GITHUB_STEP_SUMMARY names {tmp_path / 'missing' / 'step.md'}, which cannot be written (a folder, or "
                             "its folder does not exist); the job summary is not appended")


def test_regression_gates_and_baselines_are_checked_before_judging(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", rows(2))
    unscored = write_jsonl(tmp_path / "unscored.jsonl", rows(2))
    result = run_cli(["score", source, "-m", "sufficiency", "--baseline", unscored, "--max-regressions", "0"])
    assert result.code == 2 and server.calls == 0  # found after every row was judged, before
    assert f"--baseline {unscored} holds no scored metric" in result.stderr
    for gate in (["--max-regressions", "-1"], ["--max-drop", "-1"], ["--max-drop", "1.5"], ["--max-drop", "nan"]):
        refused = run_cli(["score", source, "-m", "sufficiency", "--baseline", unscored, *gate])
        assert refused.code == 2 and gate[0] in refused.stderr, gate
    base = tmp_path / "base.parquet"
    BASE.to_parquet(base)
    assert run_cli(["compare", str(base), str(base), "--max-drop", "-1"], judge=False).code == 2
    assert server.calls == 0
    # a bound on a metric the run does not judge would gate nothing: refused, naming the run's metrics (it was a warning, exit 0)
    refused = run_cli(["score", source, "-m", "sufficiency", "--min-pass-rate", "groundedness=0.5", "-q"])
    assert refused.code == 2 and server.calls == 0
    assert ("error: --min-pass-rate groundedness=...: this run does not judge 'groundedness'; it judges sufficiency, and -m replaces "
            "that list: to judge groundedness too, give -m sufficiency -m groundedness") in refused.stderr


def test_a_baseline_without_the_run_s_metrics_or_labels_is_refused_before_judging(run_score, judge, tmp_path):
    # a breaker's find: a baseline scored for sufficiency alone was refused after every call of a both-metric run (54 paid, no
    # report); a baseline without the labels column, after 28
    source = write_jsonl(tmp_path / "in.jsonl", [{**row, "human": "yes"} for row in rows(2)])
    baseline = tmp_path / "base.jsonl"
    assert run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(baseline)).code == 0
    calls = judge.calls
    both = run_score(source, metric=["sufficiency", "completeness"], baseline=str(baseline))
    assert both.code == 2 and judge.calls == calls
    assert both.error == (f"--baseline {baseline} holds no completeness columns (M_status, M_passed); it holds sufficiency: compare with a "
                          "baseline scored with completeness, or judge only sufficiency (-m sufficiency)")
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "human"}) + "\n" for r in read_jsonl(baseline)))
    labelled = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], baseline=str(unlabelled))
    assert labelled.code == 2 and judge.calls == calls
    assert labelled.error == (f"--baseline {unlabelled} has no column 'human' for the labels of sufficiency (labels.sufficiency); give the "
                              "baseline its labels column (one run's labels are not the other's)")
    assert run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], baseline=str(baseline), min_pass_rate=["0"]).code == 0


def test_empty_tables_are_named_as_empty(run_cli, tmp_path):
    # an empty current table was "the tables hold different metrics: ... the current table none"
    base, empty = tmp_path / "base.parquet", tmp_path / "empty.parquet"
    BASE.to_parquet(base)
    BASE.iloc[:0].to_parquet(empty)
    result = run_cli(["compare", str(base), str(empty)], judge=False)
    assert result.code == 2 and "the current table has no rows" in result.stderr
    result = run_cli(["report", str(empty), "-o", str(tmp_path / "r.html")], judge=False)
    assert result.code == 2 and "the table has no rows" in result.stderr


def test_output_flags_are_named_as_given(run_cli, tmp_path):
    base = tmp_path / "base.parquet"
    BASE.to_parquet(base)
    folder = run_cli(["report", str(base), "-o", str(tmp_path)], judge=False)  # said "--html: cannot write"
    assert folder.code == 2 and folder.stderr.startswith(f"error: -o: cannot write '{tmp_path}'")
    stdout = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows(1)), "--junit", "-"])
    assert stdout.code == 2 and "--junit writes a file, not stdout" in stdout.stderr
    actors = run_cli(["score", str(tmp_path / "in.jsonl"), "--engine", "ray", "--ray-actors", "0"])
    assert actors.code == 2 and "--ray-actors 0: give a number of actors, 1 or more" in actors.stderr


EVIL_ID = "row\x1b]0;owned\x07\x1b[2J\x9b31m"


# peer report (issue 29 item 16): terminal escapes in annotations and the step summary
def test_control_characters_never_reach_annotations_or_the_markdown_raw():
    from ragjudge.reports import annotations, markdown

    m = MetricSummary("sufficiency", 0.5, min_pass_rate=1.0)
    m.add(Verdict(metric="sufficiency", status="ok", score=0.0, passed=False, rationale="bad\x1b[31m red\x00", missing=["fact\x1b[0m"]),
          EVIL_ID, 0)
    summary = Summary(rows=1, metrics={"sufficiency": m}, judge_model="fake\x1b[1m")
    lines = annotations.commands(summary, "-", None)
    assert lines[0] == ("::error title=ragjudge sufficiency failed%3A row\ufffd]0;owned\ufffd\ufffd[2J\ufffd31m::"
                        "score 0 (threshold 0.5). bad\ufffd[31m red\ufffd Missing: fact\ufffd[0m")
    text = markdown.render(summary, check_gate(summary), "in\x1b.jsonl")
    assert not any(ch in text for ch in "\x1b\x07\x00\x9b")
    assert "| sufficiency | row\ufffd]0;owned\ufffd\ufffd[2J\ufffd31m | 0 | bad\ufffd[31m red\ufffd | fact\ufffd[0m |" in text
    assert "judge `fake\ufffd[1m`, input `in\ufffd.jsonl`" in text


# issue 60 item 9 (esphome/devices.esphome.io#1649): a rationale or a row id posted live @mentions and links
def test_mentions_links_and_references_from_the_data_are_inert_in_the_markdown_summary():
    from ragjudge.reports import markdown

    m = MetricSummary("sufficiency", 0.5, min_pass_rate=1.0)
    m.add(Verdict(metric="sufficiency", status="ok", score=0.0, passed=False,
                  rationale="Ask @octocat or @acme/legal; see https://evil.example/x, www.evil.example and [docs](http://x.test) ![i](y)",
                  missing=["mail ops@corp.example", "fixed in #12, GH-3 and acme/app#4"]), "@row-owner", 0)
    summary = Summary(rows=1, metrics={"sufficiency": m}, judge_model="judge`model")
    text = markdown.render(summary, check_gate(summary), "in`put.jsonl")
    z = "&#8203;"
    assert (f"| sufficiency | @{z}row-owner | 0 | Ask @{z}octocat or @{z}acme/legal; see https:{z}//evil.example/x, www{z}.evil.example "
            f"and [docs]\\(http:{z}//x.test) ![i]\\(y) | mail ops@{z}corp.example; fixed in #{z}12, GH{z}-3 and acme/app#{z}4 |") in text
    for live in ("@octocat", "@acme", "@row-owner", "https://", "http://", "www.evil", "](", "#12", "GH-3", "@corp"):
        assert live not in text, live
    # a backtick in a code span's text no longer ends it early: the span's fence is longer
    assert "judge ``judge`model``, input ``in`put.jsonl``." in text


# peer report (issue 29 item 16): terminal escapes in annotations and the step summary
def test_an_escape_in_a_row_id_stays_out_of_a_ci_run_log_and_job_summary(run_cli, tmp_path, monkeypatch):
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    row = {**GROUNDED, "id": EVIL_ID, "context": ["Nothing about towers."]}  # the fake judge says no: a failing row
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [row]), "-m", "sufficiency", "-q"])
    assert result.code == 1
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "title=ragjudge sufficiency failed%3A row\ufffd]0;owned\ufffd\ufffd[2J\ufffd31m" in errors[0]
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout
    text = step.read_text(encoding="utf-8")
    assert "row\ufffd]0;owned" in text and "\x1b" not in text and "\x9b" not in text


# review of main (fixa) item 2: a bad --baseline is refused before any judge call
@pytest.mark.parametrize("fault, said", [
    ("duplicate", "the baseline table has the id 'a' more than once"),
    ("null id", "the baseline table has no id on row(s) 2; every row needs an id to match rows"),
    ("bad score", "column sufficiency_score: 'abc' is not a finite number"),
    ("bad status", "column sufficiency_status: 'weird' is not a status"),
])
def test_a_bad_baseline_is_exit_2_before_any_judge_call(run_score, tmp_path, judge, fault, said):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    rows = [{"id": i, "sufficiency_status": "ok", "sufficiency_passed": True, "sufficiency_score": 1.0} for i in ("a", "b")]
    change = {"duplicate": ("id", "a"), "null id": ("id", None), "bad score": ("sufficiency_score", "abc"),
              "bad status": ("sufficiency_status", "weird")}[fault]
    rows[1][change[0]] = change[1]
    baseline = write_jsonl(tmp_path / "base.jsonl", rows)
    summary = tmp_path / "summary.json"
    result = run_score(source, metric=["sufficiency"], baseline=baseline, summary_json=str(summary), quiet=True)
    assert result.code == 2 and said in result.error, result.text
    assert judge.calls == 0  # found before judging, not after every row was paid for


# review of main (fixa) item 2: a bad --baseline is refused before any judge call
def test_a_missing_or_good_baseline_before_judging(run_score, tmp_path, judge):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    result = run_score(source, metric=["sufficiency"], baseline=str(tmp_path / "none.jsonl"))
    assert result.code == 2 and "--baseline: no such file" in result.error and judge.calls == 0
    baseline = tmp_path / "base.jsonl"
    assert run_score(source, metric=["sufficiency"], output=str(baseline), quiet=True).code == 0
    calls = judge.calls
    assert calls > 0
    summary = tmp_path / "summary.json"
    ok = run_score(source, metric=["sufficiency"], baseline=str(baseline), no_cache=True, summary_json=str(summary), quiet=True)
    assert ok.code == 0 and judge.calls > calls and summary.exists()


def test_report_refuses_a_bound_or_labels_on_a_metric_the_table_does_not_hold(run_cli, tmp_path):
    # report read a --set bound against the default metric list: a bound on completeness for a
    # table of sufficiency alone was taken and applied to nothing, and a misspelt one was told
    # to "give -m", which report has no such flag for
    base = tmp_path / "base.parquet"
    BASE.to_parquet(base)
    html = str(tmp_path / "r.html")
    misspelt = run_cli(["report", str(base), "-o", html, "--set", "gate.min_pass_rate.sufficency=0.9"], judge=False)
    assert misspelt.code == 2 and misspelt.stderr == (
        "error: --set gate.min_pass_rate.sufficency: the table holds no 'sufficency' (no sufficency_status, sufficency_passed "
        "columns); did you mean 'sufficiency'? It holds sufficiency; a setting for another metric applies to nothing\n")
    other = run_cli(["report", str(base), "-o", html, "--set", "gate.min_pass_rate.completeness=0.9"], judge=False)
    assert other.code == 2 and "the table holds no 'completeness' (no completeness_status, completeness_passed columns). It holds" in other.stderr
    labels = run_cli(["report", str(base), "-o", html, "--labels", "completeness=human"], judge=False)
    assert labels.code == 2 and labels.stderr.startswith("error: --labels completeness=...: the table holds no 'completeness'")
    held = run_cli(["report", str(base), "-o", html, "--set", "gate.min_pass_rate.sufficiency=0.9"], judge=False)
    assert held.code == 0 and (tmp_path / "r.html").stat().st_size > 0


def test_rows_left_out_by_limit_are_no_regressions_against_a_full_baseline(run_score, tmp_path):
    # with --limit 2 against a baseline of 6 passing rows, the 4 rows left out ("not sampled")
    # counted as regressions: a sampled run could never pass --max-regressions 0
    source = write_jsonl(tmp_path / "in.jsonl", rows(6))
    base = tmp_path / "base.parquet"
    assert run_score(source, metric=["sufficiency"], output=str(base)).code == 0
    summary = tmp_path / "s.json"
    sampled = run_score(source, metric=["sufficiency"], baseline=str(base), limit=2, max_regressions=0, max_drop=0.0,
                        summary_json=str(summary))
    assert sampled.code == 0, sampled.text
    assert "PASS sufficiency: 0 regressed row(s) <= 0 (passed in the baseline, fail now; 0 improved)" in sampled.text
    figures = json.loads(summary.read_text())["comparison"]["metrics"]["sufficiency"]
    assert (figures["pairs"], figures["regressed"], figures["unjudged"], figures["status_changed"]) == (2, 0, 0, 0)


def test_float_ids_match_between_a_csv_and_a_parquet_table(run_cli, tmp_path):
    # ids 1.0, 2.5, 3.0 written to CSV read back as "1.0", "2.5", "3.0" while Parquet's 3.0 is
    # the id "3": only 2.5 matched, and the regression of 3.0 went unseen (exit 0)
    from ragjudge.io import write_table

    base = pd.DataFrame({"id": [1.0, 2.5, 3.0], "sufficiency_status": ["ok"] * 3, "sufficiency_passed": [True, True, True],
                         "sufficiency_score": [1.0, 1.0, 1.0]})
    cur = base.assign(sufficiency_passed=[True, True, False], sufficiency_score=[1.0, 1.0, 0.0])
    write_table(base, str(tmp_path / "base.csv"))
    cur.to_parquet(tmp_path / "cur.parquet")
    result = run_cli(["compare", str(tmp_path / "base.csv"), str(tmp_path / "cur.parquet"), "--max-regressions", "0", "--json"], judge=False)
    assert result.code == 1
    report = json.loads(result.stdout)
    assert report["rows"] == 3 and report["metrics"]["sufficiency"]["regressed_ids"] == ["3"]


def test_compare_matches_by_the_id_column_either_run_recorded_even_with_a_config(run_cli, tmp_path):
    # scored once with --map id=qid and once without (rows in reverse order): compare took the current
    # table's record alone, found no id column and paired the rows by position (4 regressed, 4
    # improved that did not exist); with -c it dropped the record altogether
    data = [{"qid": row.pop("id"), **row} for row in rows(6, bad={1, 2})]
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    assert run_cli(["score", write_jsonl(tmp_path / "a.jsonl", data), "-m", "sufficiency", "--map", "id=qid", "--min-pass-rate", "0",
                    "-o", str(first), "-q"]).code == 0
    assert run_cli(["score", write_jsonl(tmp_path / "b.jsonl", data[::-1]), "-m", "sufficiency", "--min-pass-rate", "0",
                    "-o", str(second), "-q"]).code == 0
    config = tmp_path / "my.yaml"
    config.write_text("thresholds:\n  sufficiency: 0.5\n")
    for extra in ([], ["-c", str(config)]):
        result = run_cli(["compare", str(first), str(second), "--max-regressions", "0", *extra], judge=False)
        assert result.code == 0, result.stdout + result.stderr
        assert result.stdout.startswith("6 rows matched by id;") and "0 regressed, 0 improved" in result.stdout

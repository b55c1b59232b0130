"""The HTML report (issue 17), opened in a real browser: headless Chromium from the system's
packages (Debian's chromium and chromium-driver), driven by Selenium. `.ci/run` installs them;
without them these tests are skipped."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, SAMPLE, write_jsonl

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.slow  # a headless Chromium, started per module
needs_browser = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1300,1800",
                     f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(argument)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def open_report(browser, path: Path) -> None:
    browser.get(path.resolve().as_uri())
    deadline = time.monotonic() + 30
    while browser.find_element("tag name", "body").get_attribute("data-ready") != "yes":
        assert time.monotonic() < deadline, "the report's script did not finish"
        time.sleep(0.05)


def select(browser, element_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", element_id)).select_by_value(value)


def rows_shown(browser) -> list:
    return browser.find_elements("css selector", "#rows tr.row")


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    """The sample data scored against the fake server, and its report (with --html)."""
    import os
    import subprocess
    import sys

    from ragjudge.fakeserver import FakeJudgeServer

    folder = tmp_path_factory.mktemp("report")
    report = folder / "report.html"
    scored = folder / "scored.parquet"
    with FakeJudgeServer() as server:
        done = subprocess.run([sys.executable, "-m", "ragjudge", "score", str(SAMPLE / "rag_eval.jsonl"), "--model", "openai/fake-judge",
                               "--api-base", server.url, "--no-cache", "-o", str(scored), "--html", str(report), "-q"],
                              cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # the gate fails on the sample data: information
    return report, scored


def test_the_report_is_one_self_contained_file(sample_report):
    text = sample_report[0].read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text, re.I) and "<link" not in text
    assert text.count("<svg") >= 4  # the charts are inline SVG, drawn by matplotlib
    assert "matplotlib" in text


@needs_browser
def test_the_sample_report_renders_its_header_charts_and_rows(browser, sample_report):
    report, _ = sample_report
    open_report(browser, report)
    assert browser.find_element("id", "verdict").text == "gate failed (exit 1)"
    assert "FAIL sufficiency: pass rate 0.46 < 1.00 (11 of 24 ok rows passed)" in browser.find_element("tag name", "header").text
    assert len(browser.find_elements("css selector", ".chart svg")) >= 4
    assert len(rows_shown(browser)) == 32
    assert browser.find_element("id", "count").text == "showing 32 of 32 matching rows (32 rows)"
    out = ROOT / "out"
    out.mkdir(exist_ok=True)
    browser.save_screenshot(str(out / "report_sample.png"))  # a build artifact, for people to look at
    assert (out / "report_sample.png").stat().st_size > 10_000


@needs_browser
def test_filtering_to_failed_rows_shows_only_them_and_a_row_opens_to_its_missing_facts(browser, sample_report):
    report, scored = sample_report
    open_report(browser, report)
    select(browser, "passed", "failed")
    shown = rows_shown(browser)
    table = pd.read_parquet(scored)
    failed = table[(table["sufficiency_status"] == "ok") & (table["sufficiency_passed"] == False)]  # noqa: E712
    assert len(shown) == len(failed) == 13
    assert all(row.find_elements("tag name", "td")[-2].text.startswith("failed") for row in shown)
    grounded = failed[failed["sufficiency_mode"] == "grounded"].iloc[0]
    row = [r for r in shown if r.get_attribute("data-id") == grounded["id"]][0]
    row.click()
    missing = [li.text for li in browser.find_elements("css selector", "tr.detail li.fact.missing")]
    assert missing and all(text.startswith("✗ missing: ") for text in missing)
    assert {text.removeprefix("✗ missing: ") for text in missing} >= set(grounded["sufficiency_missing"])


@needs_browser
def test_text_from_the_data_never_runs(browser, tmp_path, run_cli):
    rows = [{"id": "evil", "request": "<b>bold?</b> Where is it?", "context": ["<script>window.__pwned = 1</script> It is in Paris.",
             '<img src=x onerror="window.__pwned = 2"> Nothing else.'], "expected_response": "</script><script>window.__pwned=3</script>"}]
    scored = tmp_path / "scored.jsonl"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "-o", str(scored), "--min-pass-rate", "0"])
    report = tmp_path / "report.html"
    assert run_cli(["report", str(scored), "-o", str(report)], judge=False).code == 0
    open_report(browser, report)
    rows_shown(browser)[0].click()
    passages = [li.text for li in browser.find_elements("css selector", "tr.detail li.passage")]
    assert passages[0] == "<script>window.__pwned = 1</script> It is in Paris."  # shown as text
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.find_elements("css selector", "tr.detail img") == []


@needs_browser
def test_error_and_skipped_rows_show_their_reasons(browser, tmp_path, run_cli, server):
    server.replies.extend(["not json", "still not json"])
    rows = [{"id": "bad", "request": "Where?", "context": ["Here."], "expected_response": "Here"},
            {"id": "none", "request": "Where?", "context": None, "expected_response": "Here"}]
    scored = tmp_path / "scored.jsonl"
    report = tmp_path / "report.html"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "-o", str(scored), "--html", str(report),
             "--concurrency", "1", "--max-error-rate", "1"])
    open_report(browser, report)
    for index in range(len(rows_shown(browser))):
        rows_shown(browser)[index].click()  # each click draws the table again
    reasons = [node.text for node in browser.find_elements("css selector", "tr.detail .reason")]
    assert reasons[0].startswith("error: unreadable judge reply")
    assert reasons[1] == "skipped: no context"


def _big_table(n: int) -> pd.DataFrame:
    ids = [f"row-{i}" for i in range(n)]
    ok = [i % 10 != 0 for i in range(n)]
    passed = [None if not good else i % 3 != 0 for i, good in enumerate(ok)]
    return pd.DataFrame({
        "id": ids, "request": [f"Where is landmark {i}?" for i in range(n)],
        "context": [[f"Landmark {i} stands in city {i}.", "A second passage of filler text about the weather."] for i in range(n)],
        "expected_response": [f"city {i}" for i in range(n)], "system": [f"s{i % 4}" for i in range(n)],
        "sufficiency_score": [None if not good else float(p) for good, p in zip(ok, passed)],
        "sufficiency_passed": passed, "sufficiency_rationale": ["Checked." for _ in range(n)],
        "sufficiency_status": ["ok" if good else "error" for good in ok], "sufficiency_error": [None if good else "judge call failed" for good in ok],
        "sufficiency_missing": [[] if p else [f"city {i}"] for i, p in enumerate(passed)], "sufficiency_mode": ["grounded"] * n,
        "judge_model": ["openai/x"] * n,
    })


@needs_browser
def test_a_10000_row_report_renders_and_filters_in_a_few_seconds(browser, tmp_path, run_cli):
    scored = tmp_path / "big.parquet"
    _big_table(10_000).to_parquet(scored)
    report = tmp_path / "big.html"
    assert run_cli(["report", str(scored), "-o", str(report), "--by", "system"], judge=False).code == 0
    started = time.monotonic()
    open_report(browser, report)
    opened = time.monotonic() - started
    assert browser.find_element("id", "count").text == "showing 100 of 10000 matching rows (10000 rows)"
    started = time.monotonic()
    select(browser, "passed", "failed")
    select(browser, "group", "s1")
    filtered = time.monotonic() - started
    expected = sum(1 for i in range(10_000) if i % 10 != 0 and i % 3 == 0 and i % 4 == 1)
    assert browser.find_element("id", "count").text == f"showing 100 of {expected} matching rows (10000 rows)"
    assert opened < 10 and filtered < 5, (opened, filtered)


def test_report_of_a_table_without_scores_is_exit_2(run_cli, tmp_path):
    path = write_jsonl(tmp_path / "plain.jsonl", [{"id": 1, "request": "q"}])
    result = run_cli(["report", path, "-o", str(tmp_path / "r.html")], judge=False)
    assert result.code == 2 and "holds no scored metric" in result.stderr


def test_report_with_a_baseline_counts_regressions(run_cli, tmp_path):
    base, cur = _big_table(40), _big_table(40)
    cur.loc[[1, 2], "sufficiency_passed"] = False
    base.loc[[1, 2], "sufficiency_passed"] = True
    base_path, cur_path = tmp_path / "base.parquet", tmp_path / "cur.parquet"
    base.to_parquet(base_path)
    cur.to_parquet(cur_path)
    report = tmp_path / "r.html"
    assert run_cli(["report", str(cur_path), "--baseline", str(base_path), "-o", str(report)], judge=False).code == 0
    text = report.read_text()
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S).group(1))
    assert [row["id"] for row in data["rows"] if row["m"]["sufficiency"]["regressed"]] == ["row-1", "row-2"]
    assert "regressed" in text and "baseline (n=" in text


@needs_browser
def test_report_with_a_baseline_shows_each_change_with_its_interval_in_the_browser(browser, run_cli, tmp_path):
    # issue 64 item 1: the HTML report lists each metric's change with its 95% paired bootstrap interval and p-value
    base, cur = _big_table(40), _big_table(40)
    base.loc[[1, 2], "sufficiency_passed"] = True
    cur.loc[[1, 2], "sufficiency_passed"] = False
    base_path, cur_path = tmp_path / "base.parquet", tmp_path / "cur.parquet"
    base.to_parquet(base_path)
    cur.to_parquet(cur_path)
    report = tmp_path / "r.html"
    assert run_cli(["report", str(cur_path), "--baseline", str(base_path), "-o", str(report)], judge=False).code == 0
    open_report(browser, report)
    shown = [item.text for item in browser.find_elements("css selector", "#changes li")]
    from ragjudge.compare import compare

    interval = compare(base, cur)["metrics"]["sufficiency"]["change_interval"]
    assert round(interval[0], 2) == -0.14 and interval[1] == 0.0  # two rows of 36 regressed (-0.056), none improved
    assert shown == ["sufficiency against the baseline: pass rate 0.67 -> 0.61, change -0.06 [-0.14, +0.00] (95%) on 36 rows ok "
                     "in both, McNemar p 0.5"]


# -- issue 33: the diagnosis matrix -----------------------------------------------------------


@pytest.fixture(scope="module")
def whole_report(tmp_path_factory):
    """The whole RAG sample rows (sample_data/rag_whole.jsonl) scored against the fake server, with --html."""
    import os
    import subprocess
    import sys

    from ragjudge.fakeserver import FakeJudgeServer

    report = tmp_path_factory.mktemp("whole") / "report.html"
    with FakeJudgeServer() as server:
        done = subprocess.run([sys.executable, "-m", "ragjudge", "score", str(SAMPLE / "rag_whole.jsonl"), "--model", "openai/fake-judge",
                               "--api-base", server.url, "--no-cache", "--html", str(report), "-q", "--min-pass-rate", "0"],
                              cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return report


def _matrix(browser) -> dict[str, tuple[str, str]]:
    cells = browser.find_elements("css selector", "#diagnosis-matrix td")
    return {td.get_attribute("data-diagnosis"): (td.find_element("css selector", ".n").text, td.find_element("css selector", ".share").text)
            for td in cells}


@needs_browser
def test_the_diagnosis_matrix_shows_each_cell_and_its_link_filters_the_rows(browser, whole_report):
    open_report(browser, whole_report)
    matrix = browser.find_element("id", "diagnosis-matrix")
    assert [th.text for th in matrix.find_elements("css selector", "th")] == \
        ["", "response complete", "response incomplete", "context sufficient", "context insufficient"]
    assert [td.get_attribute("data-diagnosis") for td in matrix.find_elements("css selector", "td")] == \
        ["ok", "generation", "beyond_context", "retrieval"]  # the 2x2 layout
    assert _matrix(browser) == {"ok": ("2", "0.25"), "generation": ("2", "0.25"), "retrieval": ("2", "0.25"), "beyond_context": ("2", "0.25")}
    browser.find_element("css selector", '#diagnosis-matrix a[data-diagnosis="retrieval"]').click()
    assert [row.get_attribute("data-id") for row in rows_shown(browser)] == ["whole-q1-retrieval", "whole-q2-retrieval"]
    assert browser.find_element("id", "count").text == "showing 2 of 2 matching rows (8 rows)"
    assert browser.find_element("id", "diagnosis").get_attribute("value") == "retrieval"
    assert "active" in browser.find_element("css selector", '#diagnosis-matrix td[data-diagnosis="retrieval"]').get_attribute("class")
    assert browser.current_url.endswith("#diagnosis=retrieval")
    rows_shown(browser)[0].click()
    assert browser.find_element("css selector", "tr.detail p.diagnosis").text == "retrieval"
    browser.find_element("css selector", '#diagnosis-matrix a[data-diagnosis="ok"]').click()
    assert [row.get_attribute("data-id") for row in rows_shown(browser)] == ["whole-q1-ok", "whole-q2-ok"]
    select(browser, "diagnosis", "any")
    assert len(rows_shown(browser)) == 8


@needs_browser
def test_a_link_to_a_cell_opens_the_report_filtered_to_it(browser, whole_report):
    browser.get(whole_report.resolve().as_uri() + "#diagnosis=beyond_context")
    deadline = time.monotonic() + 30
    while browser.find_element("tag name", "body").get_attribute("data-ready") != "yes":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert [row.get_attribute("data-id") for row in rows_shown(browser)] == ["whole-q1-beyond_context", "whole-q2-beyond_context"]


@needs_browser
def test_the_sample_report_shows_an_empty_matrix_its_rows_carry_no_whole_row(browser, sample_report):
    # rag_eval.jsonl: context or a response, never both -> no row has a diagnosis
    open_report(browser, sample_report[0])
    assert {name: n for name, (n, _) in _matrix(browser).items()} == {"ok": "0", "generation": "0", "retrieval": "0", "beyond_context": "0"}
    select(browser, "diagnosis", "none")
    assert browser.find_element("id", "count").text == "showing 32 of 32 matching rows (32 rows)"


@needs_browser
def test_the_report_gates_a_parquet_table_as_its_run_did_and_says_when_a_table_cannot_tell(browser, tmp_path, run_cli):
    # a run that passed its own --min-pass-rate 0.5 was reported "gate failed (exit 1)" against the
    # default bound, and rows scored with --map id=qid were matched by position in compare and
    # report; a Parquet file now records the run's gate, thresholds and id column
    from helpers import ci_rows

    data = [{"qid": row.pop("id"), **row} for row in ci_rows(10, bad={1, 3, 4})]
    source = write_jsonl(tmp_path / "in.jsonl", data)
    for name in ("run.parquet", "run.csv", "again.parquet"):
        ran = run_cli(["score", source, "-m", "sufficiency", "--map", "id=qid", "--min-pass-rate", "0.5", "--set", "thresholds.sufficiency=0.5",
                       "-o", str(tmp_path / name), "-q"])
        assert ran.code == 0, ran.stderr
    report = tmp_path / "report.html"
    recorded = run_cli(["report", str(tmp_path / "run.parquet"), "-o", str(report), "--baseline", str(tmp_path / "again.parquet")], judge=False)
    assert recorded.code == 0 and recorded.stderr == (
        "note: the run gated no regressions (--max-regressions, --max-drop): the report marks the regressed rows and gates none; "
        "ragjudge compare applies them\n")
    open_report(browser, report)
    assert browser.find_element("id", "verdict").text == "gate passed"
    header = browser.find_element("tag name", "header").text
    assert "PASS sufficiency: pass rate 0.70 >= 0.50 (7 of 10 ok rows passed)" in header and "matched by position" not in header
    assert {row.get_attribute("data-id") for row in rows_shown(browser)} == {f"r{i}" for i in range(10)}
    csv = run_cli(["report", str(tmp_path / "run.csv"), "-o", str(report)], judge=False)
    assert csv.code == 0
    assert csv.stderr.startswith(f"note: {tmp_path / 'run.csv'} does not record the run's gate (a Parquet file written by ragjudge score "
                                 "does): the report checks the default thresholds and bounds")
    open_report(browser, report)
    assert browser.find_element("id", "verdict").text == "gate failed (exit 1)"
    assert "does not record the run's gate" in browser.find_element("id", "warnings").text
    matched = run_cli(["compare", str(tmp_path / "run.parquet"), str(tmp_path / "again.parquet")], judge=False)
    assert matched.stdout.startswith("10 rows matched by id;")
    by_position = run_cli(["compare", str(tmp_path / "run.csv"), str(tmp_path / "run.csv")], judge=False)
    assert "warning: a table has no id for every row: rows are matched by position; 'qid' looks like their ids: give --map id=qid" in by_position.stdout


@needs_browser
def test_the_report_gates_what_its_run_gated_the_metrics_it_judged_and_its_regressions(browser, tmp_path, run_cli):
    # a table scored again (-m completeness on a table of sufficiency) keeps the earlier columns: the
    # report gated sufficiency too ("gate failed" for a run that passed); the run's --max-regressions
    # was not applied by report --baseline ("gate passed" for a run that failed); a Parquet file named
    # without the .parquet suffix was "not recorded"
    from helpers import ci_rows

    source = write_jsonl(tmp_path / "in.jsonl", [{**row, "response": row["expected_response"]} for row in ci_rows(6, bad={1, 2})])
    first = tmp_path / "first.parquet"
    assert run_cli(["score", source, "-m", "sufficiency", "--min-pass-rate", "0", "-o", str(first), "-q"]).code == 0
    again = tmp_path / "again.pq"  # Parquet by --output-format, not by its name
    ran = run_cli(["score", str(first), "-m", "completeness", "--min-pass-rate", "completeness=0.2", "-o", str(again),
                   "--output-format", "parquet", "-q"])
    assert ran.code == 0, ran.stderr
    report = tmp_path / "report.html"
    assert run_cli(["report", str(again), "-o", str(report)], judge=False).stderr == ""
    open_report(browser, report)
    assert browser.find_element("id", "verdict").text == "gate passed"
    assert "sufficiency" not in browser.find_element("id", "counts").text  # not this run's metric
    # the regression gate, recorded with --baseline and applied by report --baseline as the run applied it
    worse = write_jsonl(tmp_path / "worse.jsonl", [{**row, "response": "no idea"} if row["id"] == "r0" else row
                                                   for row in read_rows(source)])
    now = tmp_path / "now.parquet"
    failed = run_cli(["score", worse, "-m", "completeness", "--min-pass-rate", "0", "--baseline", str(again), "--max-regressions", "0",
                      "-o", str(now), "-q"])
    assert failed.code == 1 and "FAIL completeness: 1 regressed row(s) > 0" in failed.stderr
    assert run_cli(["report", str(now), "-o", str(report), "--baseline", str(again)], judge=False).stderr == ""
    open_report(browser, report)
    assert browser.find_element("id", "verdict").text == "gate failed (exit 1)"
    assert "FAIL completeness: 1 regressed row(s) > 0 (passed in the baseline, fail now; 0 improved)" in browser.find_element("tag name", "header").text


def read_rows(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]

# -- issue 66 item 2: the abstention audit's grid ------------------------------------------------
@needs_browser
def test_the_audit_grid_shows_each_cell_and_its_link_filters_the_rows(browser, run_score, tmp_path):
    from helpers import AUDIT_BUILT, audit_rows

    rows, cells = audit_rows()
    report = tmp_path / "report.html"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency", "completeness", "abstention"], min_pass_rate=["0"],
                     html=str(report))
    assert done.code == 0, done.text
    open_report(browser, report)
    grid = browser.find_elements("css selector", "#audit-matrix td")
    assert [td.get_attribute("data-audit") for td in grid] == list(AUDIT_BUILT)  # the 2 x 3 layout, sufficient first
    assert {td.get_attribute("data-audit"): td.find_element("css selector", ".n").text for td in grid} == \
        {name: str(count) for name, count in AUDIT_BUILT.items()}
    browser.find_element("css selector", '#audit-matrix a[data-audit="insufficient_incorrect"]').click()
    assert [row.get_attribute("data-id") for row in rows_shown(browser)] == \
        [row["id"] for row, cell in zip(rows, cells) if cell == "insufficient_incorrect"]
    assert browser.find_element("id", "audit").get_attribute("value") == "insufficient_incorrect"
    assert browser.current_url.endswith("#audit=insufficient_incorrect")


@needs_browser
def test_a_judge_with_probabilities_gets_a_histogram_of_p_yes_by_verdict_and_its_calibration_line(browser, tmp_path, run_cli, server):
    server.p_yes = 0.8  # the verdict token's P(yes); yes_threshold 0.9 turns every verdict into no
    rows = [{"id": f"r{i}", "request": "Where is the tower?", "context": ["The tower is in Paris."], "human": "yes" if i % 2 else "no"}
            for i in range(6)]
    report = tmp_path / "report.html"
    outcome = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "-o", str(tmp_path / "out.jsonl"),
                       "--html", str(report), "--min-pass-rate", "0", "--labels", "sufficiency=human", "--set", "sufficiency.yes_threshold=0.9"])
    assert outcome.code == 0, outcome
    open_report(browser, report)
    charts = browser.find_element("css selector", '.charts[data-metric="sufficiency"]')
    histogram = [svg for svg in charts.find_elements("tag name", "svg") if "P(yes) by verdict" in svg.get_attribute("innerHTML")]
    assert len(histogram) == 1 and histogram[0].size["height"] > 50  # drawn, not only in the file
    assert "pass (0)" in histogram[0].get_attribute("innerHTML") and "fail (6)" in histogram[0].get_attribute("innerHTML")
    line = browser.find_element("id", "probabilities").text
    assert line == ("sufficiency: mean P(yes) 0.80 over 6 ok rows; against 'human' (6 labelled): Brier 0.340, "
                    "0.8-0.9: P 0.80, observed 0.50 of 6")

"""``ragjudge compare`` and ``score --baseline`` through the command (``run_cli``): the numbers of
score then compare, scored CSV tables, the regression gate a table records, significance by slice,
one row said as one row. The comparisons themselves, in-process: tests/unit/test_ci_outputs.py,
tests/unit/test_compare_significance.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import read_jsonl, write_jsonl
from helpers import ci_rows as rows
from helpers import sliced_tables as _sliced


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


def test_compare_command_gates_on_significance_with_either_correction(run_cli, tmp_path):
    base, cur = _sliced()
    baseline, current = tmp_path / "base.jsonl", tmp_path / "cur.jsonl"
    base.to_json(baseline, orient="records", lines=True)
    cur.to_json(current, orient="records", lines=True)
    shown = run_cli(["compare", str(baseline), str(current), "--by", "source", "--max-drop", "0.05", "--alpha", "0.05",
                     "--correction", "bh"], judge=False)
    assert shown.code == 1
    assert "  a: 0.80 -> 0.55 (-0.25 [-0.40, -0.12]) on 40; 10 regressed, 0 improved (McNemar p 0.00195, adjusted 0.00781) *" in shown.stdout
    assert "  changed significantly (bh-adjusted p <= 0.05, across the 4 slice(s) with a test): a" in shown.stdout
    assert "FAIL sufficiency (source = a): pass rate dropped 0.25 > 0.05" in shown.stdout
    as_json = json.loads(run_cli(["compare", str(baseline), str(current), "--by", "source", "--correction", "bh", "--json"],
                                 judge=False).stdout)
    b = as_json["metrics"]["sufficiency"]["by"]["b"]
    assert (b["mcnemar_p"], b["mcnemar_p_adjusted"]) == (pytest.approx(0.03125), pytest.approx(0.0625))
    bad = run_cli(["compare", str(baseline), str(current), "--by", "source", "--correction", "bonferroni"], judge=False)
    assert bad.code == 2 and "--correction bonferroni: give holm" in bad.stderr
    level = run_cli(["compare", str(baseline), str(current), "--max-drop", "0.1", "--alpha", "5"], judge=False)
    assert level.code == 2 and "--alpha 5.0: give a significance level between 0 and 1" in level.stderr


def test_compare_applies_the_level_a_run_recorded_with_its_drop_gate(run_score, run_cli, tmp_path):
    from helpers import ci_rows as rows

    baseline, current = tmp_path / "run1.parquet", tmp_path / "run2.parquet"
    run_score(write_jsonl(tmp_path / "old.jsonl", rows(12)), metric=["sufficiency"], output=str(baseline), quiet=True)
    run_score(write_jsonl(tmp_path / "new.jsonl", rows(12, bad={1, 2})), metric=["sufficiency"], min_pass_rate=["0"], quiet=True,
              output=str(current), baseline=str(baseline), max_drop=0.1, alpha=0.05)
    compared = run_cli(["compare", str(baseline), str(current)], judge=False)
    assert f"note: the regression gates {current} records of its run: --max-drop 0.1, --alpha 0.05" in compared.stderr
    assert compared.code == 0 and "McNemar p 0.5 > alpha 0.05: not significant, so the drop passes" in compared.stdout
    # a flag given replaces the recorded level: at 0.6, p 0.5 is significant and the drop fails
    stricter = run_cli(["compare", str(baseline), str(current), "--alpha", "0.6"], judge=False)
    assert stricter.code == 1 and "FAIL sufficiency: pass rate dropped 0.17 > 0.10" in stricter.stdout


def test_compare_says_correction_without_by_and_alpha_without_max_drop_are_ignored(run_cli, tmp_path):
    # a bad-input trial's find: both were dropped in silence
    base, cur = _sliced()
    base.to_csv(tmp_path / "base.csv", index=False)
    cur.to_csv(tmp_path / "cur.csv", index=False)
    command = ["compare", str(tmp_path / "base.csv"), str(tmp_path / "cur.csv")]
    done = run_cli([*command, "--correction", "bh", "--alpha", "0.1"], judge=False)
    assert done.code == 0, done.stderr
    assert ("note: --correction bh adjusts the p-values of --by's slices; without --by there are none and it is ignored: give "
            "--by COLUMN, or leave it out") in done.stderr
    assert ("note: --alpha 0.1 gates --max-drop's drop (and, with --by, calls a slice changed); with neither it is ignored: give "
            "--max-drop DROP, or leave it out") in done.stderr
    used = run_cli([*command, "--correction", "bh", "--alpha", "0.1", "--by", "source"], judge=False)
    assert used.code == 0 and "--correction bh" not in used.stderr and "--alpha 0.1" not in used.stderr, used.stderr
    gated = run_cli([*command, "--alpha", "0.1", "--max-drop", "0.5"], judge=False)
    assert "--alpha 0.1" not in gated.stderr and "--correction" not in gated.stderr, gated.stderr


ROW = {"request": "Where is the tower?", "context": ["The tower is in Paris."], "expected_response": "The tower is in Paris."}


# issue 60 item 23: "1 rows"
def test_one_row_reads_one_row_in_the_dry_run_and_the_comparison(run_score, run_cli, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "r1", **ROW}])
    dry = run_score(source, metric=["sufficiency"], dry_run=True)
    assert dry.lines[1] == ("sufficiency: 1 row to judge, 0 skipped, 0 cache hits; 1 call to make; prompt tokens "
                            f"{dry.result['metrics']['sufficiency']['prompt_tokens']}; completion tokens about "
                            f"{dry.result['metrics']['sufficiency']['expected_completion_tokens']}, at most 1024; cost unknown (no price for this model)")
    # a second shape: the comparison of two one-row tables
    scored = tmp_path / "scored.jsonl"
    run_score(source, metric=["sufficiency"], output=str(scored), quiet=True)
    text = run_cli(["compare", str(scored), str(scored)], judge=False).stdout.splitlines()
    assert text[0] == "1 row matched by id; only in the baseline: 0, only in the current table: 0"
    assert " on 1 row ok in both; 0 regressed, 0 improved" in text[1]


def test_compare_refuses_a_bad_correction_before_any_note_and_lists_the_columns_for_a_bad_by(run_cli, tmp_path):
    # --correction xyz first said "note: --correction xyz ... is ignored", then exit 2 on the value; --by nosuchcol named no column
    base, cur = _sliced()
    base.to_csv(tmp_path / "base.csv", index=False)
    cur.to_csv(tmp_path / "cur.csv", index=False)
    command = ["compare", str(tmp_path / "base.csv"), str(tmp_path / "cur.csv")]
    bad = run_cli([*command, "--correction", "xyz"], judge=False)
    assert bad.code == 2 and "--correction xyz: give holm" in bad.stderr
    assert "note:" not in bad.stderr, bad.stderr
    missing = run_cli([*command, "--by", "sourc"], judge=False)
    assert missing.code == 2 and "--by sourc: the current table has no such column; did you mean 'source'?" in missing.stderr
    assert "Its columns: " in missing.stderr and "source" in missing.stderr.split("Its columns: ")[1]

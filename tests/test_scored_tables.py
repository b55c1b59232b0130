"""Scored tables read back (``ragjudge report``, ``compare``, ``--baseline``): a cell that cannot be read
(a score that is no finite number, a pass that is no boolean, an unknown status) is exit 2 naming
the file, row and column, never a regression or a chart made up from it."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import SAMPLE, read_jsonl, write_jsonl
from helpers import GROUNDED


def _scored(**cells) -> pd.DataFrame:
    table = pd.DataFrame({"id": ["a", "b", "c"], "sufficiency_status": ["ok", "ok", "ok"], "sufficiency_passed": ["True", "False", "True"],
                          "sufficiency_score": ["1", "0", "1"]})
    for column, value in cells.items():
        table[column] = table[column].astype(object)
        table.loc[1, column] = value
    return table


# review of main (fixa) item 1: an unreadable cell of a scored table read back
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


# review of main (fixa) item 1: an unreadable cell of a scored table read back
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


# review of main (fixa) item 1: an unreadable cell of a scored table read back
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


# review of main (fixa) item 1: an unreadable cell of a scored table read back
def test_score_with_a_baseline_holding_an_unreadable_score_names_the_baseline(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    baseline = tmp_path / "base.jsonl"
    assert run_score(source, metric=["sufficiency"], output=str(baseline), quiet=True).code == 0
    rows = read_jsonl(baseline)
    rows[0]["sufficiency_score"] = "abc"
    write_jsonl(baseline, rows)
    result = run_score(source, metric=["sufficiency"], baseline=str(baseline), quiet=True)
    assert result.code == 2 and f"--baseline {baseline}: row 1 (id 'a'), column sufficiency_score: 'abc'" in result.error


def test_scoring_a_scored_table_for_fewer_metrics_says_the_others_are_an_earlier_run_s(run_score, tmp_path):
    # a breaker's find: score out.parquet -m sufficiency kept completeness_* from the earlier run without a word, and
    # `ragjudge report` of the output showed completeness as if this run had judged it
    first = tmp_path / "first.parquet"
    assert run_score(str(SAMPLE / "rag_eval.jsonl"), min_pass_rate=["0"], output=str(first)).code == 0
    again = run_score(str(first), metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "again.parquet"))
    assert again.code == 0
    assert ("note: the input holds completeness verdicts of an earlier run (completeness_status, completeness_passed, ...); this run does "
            "not judge completeness, so the output keeps them as they were, and its summary and gate count only this run's metrics") in again.notes
    assert list(again.result.summary.metrics) == ["sufficiency"]


# fix b item 2: compare and report read a cascade table's metric as M (its final verdict), not M_cascade_<stage>
@pytest.mark.parametrize("ext", ["jsonl", "parquet"])
def test_compare_and_report_read_a_cascade_tables_metric_as_its_final_verdict(run_cli, server, tmp_path, ext):
    import json
    import re

    rows = [{"id": f"r{i}", "request": f"question {i}: what is the capital of place {i}?",
             "context": [f"Place {i} has the capital city Town{i}."]} for i in range(6)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    # P(yes) 0.4 on the even rows: a fail for the decision model alone, in the band for the cascade, whose chat stage passes them
    server.decision_p_yes = lambda text: 0.95 if int(re.search(r"question (\d+):", text).group(1)) % 2 else 0.4
    plain, cascade = tmp_path / f"plain.{ext}", tmp_path / f"cascade.{ext}"
    alone = run_cli(["score", source, "-m", "sufficiency", "--model", "openai-decisions/gpt-6-luna", "-o", str(plain), "--min-pass-rate", "0"])
    assert alone.code == 0, alone.stderr
    scored = run_cli(["score", source, "-m", "sufficiency", "--cascade", "openai-decisions/gpt-6-luna,openai/fake-strong",
                      "--cascade-band", "0.3,0.7", "-o", str(cascade), "--min-pass-rate", "0"])
    assert scored.code == 0, scored.stderr
    table = pd.read_parquet(cascade) if ext == "parquet" else pd.DataFrame(read_jsonl(cascade))
    assert table["sufficiency_stage"].tolist() == ["fake_strong", "gpt_6_luna"] * 3
    assert table["sufficiency_cascade_fake_strong_status"].isna().tolist() == [False, True] * 3  # the odd rows leave these blank

    better = run_cli(["compare", str(plain), str(cascade), "--json", "--max-regressions", "0"], judge=False)
    assert better.code == 0, better.stderr
    found = json.loads(better.stdout)["metrics"]
    assert list(found) == ["sufficiency"]
    assert (found["sufficiency"]["baseline_pass_rate"], found["sufficiency"]["pass_rate"], found["sufficiency"]["improved_ids"]) == (
        0.5, 1.0, ["r0", "r2", "r4"])
    worse = run_cli(["compare", str(cascade), str(plain), "--json", "--max-regressions", "0"], judge=False)
    assert worse.code == 1, worse.stderr
    found = json.loads(worse.stdout)["metrics"]
    assert list(found) == ["sufficiency"] and found["sufficiency"]["regressed_ids"] == ["r0", "r2", "r4"]

    html = run_cli(["report", str(cascade), "--baseline", str(plain), "-o", str(tmp_path / "r.html")], judge=False)
    assert html.code == 0, html.stderr
    assert "sufficiency_cascade" not in (tmp_path / "r.html").read_text()

"""How two scored tables' rows are matched (``ragjudge.compare``, ``--baseline``, ``ragjudge agreement``):
by id, every row needing one (a null id is exit 2 naming the rows), an id with a NUL matched with its
CSV form, and by position only when asked (``--by-position``), on tables of the same length."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl
from helpers import GROUNDED
from ragjudge.errors import InputError


def _scored(ids, passed):
    return pd.DataFrame({"id": ids, "sufficiency_status": ["ok"] * len(ids), "sufficiency_passed": passed,
                         "sufficiency_score": [1.0 if p else 0.0 for p in passed]})


# peer report (issue 29 item 9): one null id switches compare to matching by position
def test_compare_with_one_null_id_is_exit_2_naming_the_row_not_two_false_regressions(run_cli, tmp_path):
    # the case: the same verdicts, reordered, one id null; matching by position made two
    # false regressions and exit 1
    base = _scored(["a", "b", "c", "d"], [True, True, False, True])
    current = _scored(["d", None, "b", "a"], [True, False, True, True])  # c (null id) failed in both
    base.to_parquet(tmp_path / "base.parquet")
    current.to_parquet(tmp_path / "cur.parquet")
    result = run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "cur.parquet"), "--max-regressions", "0"], judge=False)
    assert result.code == 2
    assert "the current table has no id on row(s) 2; every row needs an id to match rows (or match them by position: --by-position)" in result.stderr
    # by position only when asked for: then row 2 (b -> null) passed and fails: one regression, no warning
    asked = run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "cur.parquet"), "--max-regressions", "0", "--by-position",
                     "--json"], judge=False)
    report = json.loads(asked.stdout)
    assert asked.code == 1 and report["matched_by"] == "position" and report["warnings"] == []
    assert report["metrics"]["sufficiency"]["regressed_ids"] == ["row 2"]
    # the ids all there: matched by id, nothing regressed
    current.assign(id=["d", "c", "b", "a"]).to_parquet(tmp_path / "ids.parquet")
    assert run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "ids.parquet"), "--max-regressions", "0"], judge=False).code == 0


# peer report (issue 29 item 9): one null id switches compare to matching by position
def test_a_null_id_in_a_baseline_or_a_pair_table_is_exit_2_naming_the_rows(run_score, tmp_path):
    from ragjudge.agreement import agreement
    from ragjudge.compare import compare

    with pytest.raises(InputError, match=r"the baseline table has no id on row\(s\) 1, 3;"):
        compare(_scored([None, "b", float("nan"), "d"], [True] * 4), _scored(["a", "b", "c", "d"], [True] * 4))
    # a blank id was taken, and the CSV the run wrote read it back as no id: a baseline that could not be used again
    with pytest.raises(InputError, match=r"the current table has no id on row\(s\) 2, 4;"):
        compare(_scored(["a", "b", "c", "d"], [True] * 4), _scored(["a", "", "c", "  "], [True] * 4))
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    baseline = tmp_path / "base.jsonl"
    assert run_score(source, metric=["sufficiency"], output=str(baseline), quiet=True).code == 0
    rows = read_jsonl(baseline)
    rows[1]["id"] = None
    write_jsonl(baseline, rows)
    result = run_score(source, metric=["sufficiency"], baseline=str(baseline), quiet=True)
    assert result.code == 2 and "the baseline table has no id on row(s) 2; every row needs an id to match rows" in result.error
    whole = tmp_path / "whole.parquet"
    assert run_score(source, metric=["sufficiency"], output=str(whole), quiet=True).code == 0
    blank = write_jsonl(tmp_path / "blank.jsonl", [{**GROUNDED, "id": i} for i in ("a", "")])
    refused = run_score(blank, metric=["sufficiency"], baseline=str(whole), quiet=True)
    assert refused.code == 2 and "the input table has no id on row(s) 2" in refused.error
    table = pd.DataFrame({"id": ["x", "y"], "completeness_status": ["ok", "ok"], "completeness_score": [2.0, 4.0], "pref": [1, -1]})
    with pytest.raises(InputError, match=r"the pair table has no id on row\(s\) 2;"):
        agreement(table, "completeness", "pref", pair=table.assign(id=["x", None]))


# review of main (fixa) item 3: an id with a NUL matches its own CSV read-back
def test_a_baseline_written_as_csv_matches_the_row_whose_id_held_a_nul(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": "a\u0000b"}, {**GROUNDED, "id": "c"}])
    baseline = tmp_path / "base.csv"
    assert run_score(source, metric=["sufficiency"], output=str(baseline), quiet=True).code == 0
    assert "a\ufffdb" in baseline.read_text(encoding="utf-8")
    summary = tmp_path / "summary.json"
    result = run_score(source, metric=["sufficiency"], baseline=str(baseline), summary_json=str(summary), quiet=True)
    assert result.code == 0, result.text
    comparison = json.loads(summary.read_text())["comparison"]
    assert comparison["rows"] == 2 and comparison["only_in_baseline"]["count"] == 0 and comparison["only_in_current"]["count"] == 0


# review of main (fixa) item 3: an id with a NUL matches its own CSV read-back
def test_compare_matches_a_nul_id_with_its_csv_form():
    from ragjudge.compare import compare

    jsonl = pd.DataFrame({"id": ["x\u0000", "y"], "sufficiency_status": ["ok", "ok"], "sufficiency_passed": [True, True],
                          "sufficiency_score": [1.0, 1.0]})
    csv = jsonl.assign(id=["x\ufffd", "y"], sufficiency_passed=["True", "False"])
    report = compare(jsonl, csv)
    assert report["rows"] == 2 and report["only_in_baseline"]["count"] == 0
    assert report["metrics"]["sufficiency"]["regressed_ids"] == ["y"]


# review of main (fixa) item 4: --by-position on tables of different lengths
def test_by_position_on_tables_of_different_lengths_says_the_row_counts_differ(run_cli, tmp_path):
    base, short = tmp_path / "base.jsonl", tmp_path / "short.jsonl"
    table = pd.DataFrame({"id": list("abcd"), "sufficiency_status": ["ok"] * 4, "sufficiency_passed": [True] * 4,
                          "sufficiency_score": [1.0] * 4})
    table.to_json(base, orient="records", lines=True)
    table.iloc[:3].to_json(short, orient="records", lines=True)
    result = run_cli(["compare", str(base), str(short), "--by-position"], judge=False)
    assert result.code == 2 and "the tables have 4 and 3 rows: the row counts differ" in result.stderr
    assert "needs tables of equal length" in result.stderr and "no ids" not in result.stderr
    matched = run_cli(["compare", str(base), str(short), "--json"], judge=False)  # by id they compare
    assert matched.code == 0 and json.loads(matched.stdout)["only_in_baseline"]["ids"] == ["d"]
    no_ids = tmp_path / "no_ids.jsonl"
    table.iloc[:3].drop(columns="id").to_json(no_ids, orient="records", lines=True)
    unmatched = run_cli(["compare", str(base), str(no_ids)], judge=False)
    assert unmatched.code == 2 and "no ids to match them by" in unmatched.stderr

"""Columns in a score run (``run_score``) and on the command line (``render``, what -q prints): a metric
whose field no column feeds is exit 2 naming the columns
not read and the ``--map`` that fixes it, in ``score``, its dry run and ``render`` alike; a metric that
judged no row is named; a nested column with no value says whether its key is there. Which column
is chosen is decided in ``ragjudge.records`` (tests/unit/test_columns.py)."""

from __future__ import annotations

import json

import pytest

from conftest import write_jsonl


# peer report (issue 20 item 13): a broken retriever passes the gate
def test_a_metric_asked_for_whose_field_maps_to_no_column_exits_2(run_score, tmp_path):
    rows = [{"id": "a", "request": "q?", "retrieved_passages_v2": ["c"]}]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], quiet=True)
    assert result.code == 2
    assert ("sufficiency needs a context column and none was found; columns not read: retrieved_passages_v2; "
            "if 'retrieved_passages_v2' holds it, set --map context=retrieved_passages_v2") in result.error


# peer report (issue 20 item 13): a broken retriever passes the gate
def test_a_default_metric_that_judged_no_row_is_named(run_cli, tmp_path):
    rows = [{"id": "a", "request": "q?", "retrieved_passages_v2": ["c"], "expected_response": "x", "response": "x"}]
    summary = tmp_path / "s.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-q", "--summary-json", str(summary)])
    assert "SKIP sufficiency: no row judged (1 skipped): no context" in result.stderr  # printed with -q too
    doc = json.loads(summary.read_text())
    assert doc["metrics_not_judged"] == ["sufficiency"] and doc["metrics"]["sufficiency"]["skipped_by"] == {"no context": 1}
    verbose = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows)])
    assert "note: sufficiency needs a context column and none was found" in verbose.stderr
    assert "note: sufficiency judged no row of 1 (1 'no context')" in verbose.stderr


def test_render_of_an_empty_row_says_what_score_says(run_cli, tmp_path):
    # a breaker's find: render said "skipped: no request" for a {} row that score reports as an empty row (an input error)
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "request": "Where?", "context": ["In Lisbon."]}\n{}\n')
    shown = run_cli(["render", str(source), "-m", "sufficiency", "--row", "2"], judge=False)
    assert shown.code == 0 and "# no call: error: empty row: no column holds a value" in shown.stdout


# peer report (issue 20 item 16): internal paths leak into messages
def test_render_refuses_a_metric_whose_column_is_missing_as_score_does(run_cli, tmp_path):
    # render printed "no call: skipped: no context" (exit 0) where score -m exits 2
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "Where was it signed?", "response": "In Lisbon."}])
    for command in (["render", source, "-m", "sufficiency"], ["score", source, "-m", "sufficiency", "--dry-run"]):
        result = run_cli(command, judge=False)
        assert result.code == 2, command
        assert "sufficiency needs a context column and none was found" in result.stderr, command


# peer report (issue 20 item 16): internal paths leak into messages
def test_a_missing_expected_response_column_reads_as_english(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "Where was it signed?", "response": "In Lisbon."}])
    result = run_score(source, metric=["completeness"], dry_run=True)
    assert result.code == 2
    assert "completeness needs an expected_response or expected_facts column and none was found" in result.error


# peer report (issue 20 item 16): internal paths leak into messages
@pytest.mark.parametrize("expectations, note", [
    ({"expected_facts": None, "expected_response": "Lisbon"},
     "note: 'expectations.expected_facts' (for expected_facts) is null or empty in each of the first 2 rows"),
    ({"expected_response": "Lisbon"},
     "note: 'expectations.expected_facts' (for expected_facts) has no value in the first 2 rows (keys seen under 'expectations': "
     "expected_response)"),
])
def test_a_nested_column_with_no_value_says_whether_its_key_is_there(run_score, tmp_path, expectations, note):
    # the note listed expected_facts among the keys seen while saying it had no value
    rows = [{"id": f"r{i}", "inputs": {"request": "Where was it signed?"}, "context": ["It was signed in Lisbon."],
             "expectations": expectations} for i in range(2)]
    config = tmp_path / "c.yaml"
    config.write_text("columns:\n  request: inputs.request\n  expected_facts: expectations.expected_facts\n")
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), config=str(config), metric=["sufficiency"], dry_run=True)
    assert note in result.text, result.text

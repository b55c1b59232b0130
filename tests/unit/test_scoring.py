"""Scoring values in the unit tier: verdicts, statuses, modes, formats and the gate of
``ragjudge score``'s run, through the library against the in-process fake judge (moved from
tests/test_score.py, their assertions unchanged; the command-line contract stays there)."""

from __future__ import annotations

import json

import pandas as pd

from conftest import SAMPLE, read_jsonl, shared_file, write_jsonl
from helpers import GROUNDED_ROW


def test_squad2_goldremoved_all_250_rows_scored(run_score, tmp_path, judge):
    source = shared_file("squad2_goldremoved_sufficiency_dev.jsonl")
    out = tmp_path / "scored.jsonl"
    result = run_score(str(source), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    rows = read_jsonl(out)
    assert len(rows) == 250
    source_ids = [json.loads(line)["id"] for line in open(source)]
    assert [r["id"] for r in rows] == source_ids
    assert {r["sufficiency_status"] for r in rows} == {"ok"}
    assert {r["sufficiency_score"] for r in rows} == {0.0, 1.0}
    assert {r["sufficiency_mode"] for r in rows} == {"grounded"}
    assert all(r["sufficiency_rationale"] for r in rows)
    assert judge.calls == 250
    # the label column is kept as an original column, never judged
    assert all("label_sufficient" in r for r in rows)


def test_mlflow_twin_with_mlflow_config(run_score, tmp_path):
    source = shared_file("squad2_goldremoved_sufficiency_dev.mlflow.jsonl")
    out = tmp_path / "scored.parquet"
    result = run_score(str(source), metric=["sufficiency"], min_pass_rate=["0"], config="configs/mlflow.yaml", output=str(out))
    assert result.code == 0, result.text
    table = pd.read_parquet(out)
    assert len(table) == 250
    assert set(table["sufficiency_status"]) == {"ok"}
    assert set(table["sufficiency_mode"]) == {"grounded"}
    assert "request=inputs.query" in result.text
    plain = read_jsonl(shared_file("squad2_goldremoved_sufficiency_dev.jsonl"))
    # same rows, same verdicts as the flat file: the mapping reads the same fields
    flat = tmp_path / "flat.jsonl"
    run_score(str(shared_file("squad2_goldremoved_sufficiency_dev.jsonl")), metric=["sufficiency"], min_pass_rate=["0"], output=str(flat))
    assert list(table["sufficiency_score"]) == [r["sufficiency_score"] for r in read_jsonl(flat)]
    assert len(plain) == 250


def test_gate_failure_exits_1_and_summary_agrees(run_score, tmp_path):
    rows = [GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2", "expected_response": "Rome, Italy"}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    summary = tmp_path / "summary.json"
    result = run_score(source, metric=["sufficiency"], summary_json=str(summary))
    assert result.code == 1
    assert "FAIL sufficiency: pass rate 0.50 < 1.00 (1 of 2 ok rows passed)" in result.text
    doc = json.loads(summary.read_text())
    assert doc["exit_code"] == 1
    assert doc["gate"]["passed"] is False
    assert doc["metrics"]["sufficiency"]["pass_rate"] == 0.5
    assert doc["metrics"]["sufficiency"]["ok"] == 2
    assert doc["rows"] == 2


def test_min_pass_rate_per_metric_lets_gate_pass(run_score, tmp_path):
    rows = [GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2", "expected_response": "Rome, Italy"}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_score(source, metric=["sufficiency"], min_pass_rate=["sufficiency=0.5"]).code == 0
    assert run_score(source, metric=["sufficiency"], min_pass_rate=["sufficiency=0.51"]).code == 1


def test_skipped_when_inputs_missing_never_zero(run_score, tmp_path):
    rows = [
        {"id": "a", "request": "q?", "context": None, "expected_response": "x", "response": None},
        {"id": "b", "request": "q?", "context": ["some text"], "expected_response": None, "response": "an answer"},
    ]
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), output=str(out))
    written = read_jsonl(out)
    assert [r["sufficiency_status"] for r in written] == ["skipped", "ok"]
    assert written[0]["sufficiency_error"] == "no context"
    assert written[0]["sufficiency_score"] is None and written[0]["sufficiency_passed"] is None
    assert [r["completeness_status"] for r in written] == ["skipped", "skipped"]
    assert written[0]["completeness_error"] == "no response"
    assert written[1]["completeness_error"] == "no expected_response or expected_facts"
    assert written[1]["sufficiency_mode"] == "reference_free"
    assert "SKIP completeness: no row judged (2 skipped)" in result.text


def test_parse_failure_is_error_not_no_and_raw_kept(run_score, tmp_path, judge):
    judge.replies.extend(["I think it is fine.", "Still not JSON, sorry."])
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW]), metric=["sufficiency"], output=str(out))
    row = read_jsonl(out)[0]
    assert row["sufficiency_status"] == "error"
    assert row["sufficiency_score"] is None
    assert row["sufficiency_error"].startswith("unreadable judge reply")
    assert row["sufficiency_raw"] == "Still not JSON, sorry."
    assert judge.calls == 2  # the call and one re-ask
    assert result.code == 3


def test_damaged_json_is_repaired(run_score, tmp_path, judge):
    judge.replies.append('```json\n{"facts": [{"fact": 1, "reason": "p1 says so", "supported": true, "passages": [1],}], "rationale": "Stated in [1]", "verdict": "yes"\n```')
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW]), metric=["sufficiency"], output=str(out))
    row = read_jsonl(out)[0]
    assert row["sufficiency_status"] == "ok"
    assert row["sufficiency_score"] == 1.0
    assert row["sufficiency_rationale"] == "Stated in [1]"
    assert row["sufficiency_raw"] is None


def test_truncated_reply_is_error(run_score, tmp_path, judge):
    judge.truncate = True
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW]), metric=["sufficiency"], output=str(out))
    row = read_jsonl(out)[0]
    assert row["sufficiency_status"] == "error"
    assert row["sufficiency_error"] == "reply truncated at max_tokens=1024; raise judge.max_tokens"
    assert row["sufficiency_raw"]


def test_aliases_are_used_and_printed(run_score, tmp_path):
    rows = [{"question": "Where is the Eiffel Tower?", "contexts": ["It is in Paris, France."], "ground_truth": "Paris, France", "answer": "Paris"}]
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), min_pass_rate=["0"], output=str(out))
    assert "request=question" in result.text and "context=contexts" in result.text
    assert "expected_response=ground_truth" in result.text and "response=answer" in result.text
    row = read_jsonl(out)[0]
    assert row["sufficiency_status"] == "ok" and row["completeness_status"] == "ok"
    assert row["sufficiency_mode"] == "grounded"


def test_csv_with_json_context_cells(run_score, tmp_path):
    out = tmp_path / "out.csv"
    result = run_score(str(SAMPLE / "rag_eval.csv"), min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    table = pd.read_csv(out)
    source = pd.read_csv(SAMPLE / "rag_eval.csv")
    assert list(table["id"]) == list(source["id"])
    suff = table[table["slice"] != "squality_completeness_dev"]
    assert set(suff["sufficiency_status"]) == {"ok"}
    # lists are written as JSON text in CSV
    assert all(json.loads(cell) == [] or isinstance(json.loads(cell), list) for cell in table["sufficiency_missing"])


def test_parquet_keeps_lists_typed(run_score, tmp_path):
    out = tmp_path / "out.parquet"
    run_score(str(SAMPLE / "rag_eval.jsonl"), min_pass_rate=["0"], output=str(out))
    import pyarrow.parquet as pq

    schema = pq.read_schema(out)
    assert str(schema.field("context").type) == "list<element: string>"
    assert str(schema.field("sufficiency_missing").type) == "list<element: string>"
    assert str(schema.field("sufficiency_passed").type) == "bool"
    assert str(schema.field("completeness_score").type) == "double"


def test_json_array_input_and_output(run_score, tmp_path):
    source = tmp_path / "in.json"
    source.write_text(json.dumps([GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2"}]))
    out = tmp_path / "out.json"
    result = run_score(str(source), metric=["sufficiency"], output=str(out))
    assert result.code == 0, result.text
    rows = json.loads(out.read_text())
    assert [r["id"] for r in rows] == ["r1", "r2"]


def test_threshold_changes_row_pass(run_score, tmp_path):
    rows = [{"id": "a", "expected_response": "Alpha beta. Gamma delta.", "response": "alpha beta", "request": "q"}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["completeness"], min_pass_rate=["0"], output=str(out))
    assert read_jsonl(out)[0]["completeness_score"] == 3.0
    assert read_jsonl(out)[0]["completeness_passed"] is True
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["completeness"], threshold=["completeness=4"], min_pass_rate=["0"], output=str(out))
    assert read_jsonl(out)[0]["completeness_passed"] is False


def test_skipped_rows_have_no_mode(run_score, tmp_path):
    rows = [{"id": "a", "request": "q?", "context": None, "expected_response": "x"}]  # no context at all ([] would be a retrieval that found nothing)
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], output=str(out))
    assert read_jsonl(out)[0]["sufficiency_mode"] is None


# peer report (issue 21)
def test_max_skip_rate_gates_on_skipped_rows(run_score, tmp_path):
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."] if i < 2 else None,
             "expected_response": f"city {i}"} for i in range(4)]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], max_skip_rate=0.25)
    assert result.code == 1
    assert "FAIL sufficiency: skip rate 0.50 > 0.25 (2 of 4 rows skipped): no context" in result.text
    assert run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], max_skip_rate=0.5).code == 0
    # under --limit the rate is over the rows chosen, and so is the count it prints (it said "1 of 4 rows skipped")
    limited = run_score(str(tmp_path / "in.jsonl"), metric=["sufficiency"], max_skip_rate=0.25, limit=3)
    assert limited.code == 1, limited.text
    assert "FAIL sufficiency: skip rate 0.33 > 0.25 (1 of 3 rows skipped): no context" in limited.text.splitlines()

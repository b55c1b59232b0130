"""Which column feeds each field (``ragjudge.records``): the common names of a field are
recognised, and a field no column feeds gets the closest unused column suggested (the id
column's suggestion: tests/unit/test_id_column.py; the command line's messages: tests/test_columns.py)."""

from __future__ import annotations

import pytest

from conftest import read_jsonl, write_jsonl


# peer report (issue 21)
def test_the_common_names_are_recognised(run_score, tmp_path):
    rows = [{"question": "Where is the Eiffel Tower?", "retrieved_docs": ["It is in Paris, France."], "gold_answer": "Paris, France",
             "bot_answer": "Paris"}]
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    assert "context=retrieved_docs" in result.text and "expected_response=gold_answer" in result.text and "response=bot_answer" in result.text
    row = read_jsonl(out)[0]
    assert (row["sufficiency_status"], row["completeness_status"]) == ("ok", "ok")


# peer report (issue 21)
@pytest.mark.parametrize("columns, field, column", [
    (["query", "kontext_chunks", "answer"], "context", "kontext_chunks"),
    (["question", "contexts", "model_output_text", "notes"], "response", "model_output_text"),
])
def test_an_unmapped_field_gets_the_closest_unused_column_suggested(run_score, tmp_path, columns, field, column):
    rows = [{name: ["x"] if "chunk" in name else "x" for name in columns}]
    metric = "sufficiency" if field == "context" else "completeness"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=[metric])
    assert result.code == 2
    assert f"set --map {field}={column}" in result.text and "columns not read:" in result.text


@pytest.mark.parametrize("sep, shown", [(";", "semicolons"), ("\t", "tabs")])
def test_a_csv_saved_with_another_separator_is_named_as_such(run_score, tmp_path, sep, shown):
    # a spreadsheet's "CSV" with semicolons read as one column, and the hint said
    # "set --map request=request;context;expected_response"
    path = tmp_path / "in.csv"
    path.write_text(sep.join(["request", "context", "expected_response"]) + "\n" + sep.join(["Who?", "Bob did it.", "Bob"]) + "\n")
    result = run_score(str(path), metric=["sufficiency"])
    assert result.code == 2
    header = repr(sep.join(["request", "context", "expected_response"]))
    assert (f"sufficiency needs a request column and none was found; the input has one column, {header}: a header separated by "
            f"{shown}. CSV is read separated by commas: save the file comma-separated") in result.text
    assert "--map" not in result.text

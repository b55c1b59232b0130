"""Which column feeds each field (``ragjudge.records``): the common names of a field are
recognised, and a field no column feeds gets the closest unused column suggested (the id
column's suggestion: tests/unit/test_id_column.py; the command line's messages: tests/test_columns.py)."""

from __future__ import annotations

import re

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


# issue 60 item 19: retrieved and gold, no --map: the notes suggested --map context=retrieved, --map response=retrieved and
# --map expected_response=retrieved; followed, sufficiency judged the context against itself (1.00) without a word
def test_no_column_is_suggested_for_two_fields(run_score, tmp_path):
    rows = [{"request": "What is the capital of Spain?", "retrieved": ["Paris is the capital of France."],
             "gold": "Madrid is the capital of Spain."}]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows))
    suggested = re.findall(r"set --map (\w+)=([a-z_]+)\b", result.text)
    assert sorted(suggested) == [("context", "retrieved"), ("expected_response", "gold")]
    assert "columns not read: retrieved, gold; set --map response=COLUMN" in result.text  # no column left for it: none named


def test_two_fields_reading_one_column_are_warned_of(run_score, tmp_path):
    rows = [{"request": "What is the capital of Spain?", "retrieved": ["Paris is the capital of France."],
             "gold": "Madrid is the capital of Spain."}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    same = run_score(source, metric=["sufficiency"], map=["context=retrieved", "expected_response=retrieved"], min_pass_rate=["0"])
    assert same.code == 0 and same.result.summary.metrics["sufficiency"].pass_rate == 1.0  # the column against itself
    assert ("warning: context and expected_response both read the column 'retrieved': context (--map), expected_response (--map); "
            "a judge that compares them compares the column with itself") in same.text
    own = run_score(source, metric=["sufficiency"], map=["context=retrieved", "expected_response=gold"], min_pass_rate=["0"])
    assert own.result.summary.metrics["sufficiency"].pass_rate == 0.0 and "both read" not in own.text


def test_a_column_read_by_its_own_name_and_by_the_config_is_warned_of(run_score, tmp_path):
    # a second shape: no flag at all; the config maps the ground truth to the column the context is read from by its name
    rows = [{"request": "What is the capital of Spain?", "context": ["Paris is the capital of France."]}]
    config = tmp_path / "c.yaml"
    config.write_text("columns:\n  expected_facts: context\n", encoding="utf-8")
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], config=str(config), min_pass_rate=["0"])
    assert ("warning: context and expected_facts both read the column 'context': context (its own name), "
            "expected_facts (columns: in the config)") in result.text


def test_the_column_the_id_note_names_is_not_suggested_for_a_field(run_score, tmp_path):
    # a second shape of one column for two fields: the id note says --map id=item_key, and the request's hint named item_key too
    rows = [{"item_key": f"k{i}", "body": f"What is {i} + {i}?", "passages": [f"{i} + {i} is {2 * i}."], "answer": f"{2 * i}",
             "reference": f"{i} + {i} is {2 * i}."} for i in range(3)]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows))
    assert "set --map id=item_key" in result.text
    assert re.findall(r"set --map request=([a-z_]+)\b", result.text) == ["body"], result.text


def test_a_mapped_column_in_another_case_is_named(run_score, tmp_path):
    # --map context=Context on a table whose column is 'context' listed the columns and no fix; the same for a dotted path
    rows = [{"id": "a", "request": "Where is the tower?", "context": ["The tower is in Paris."], "meta": {"gold": "Paris"}}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    wrong = run_score(source, metric=["sufficiency"], map=["context=Context"])
    assert wrong.code == 2 and wrong.error == (
        f"column 'Context' (for context) not found in {source}; did you mean 'context'? (column names are case-sensitive); "
        "available: id, request, context, meta; set --map context=COLUMN")
    dotted = run_score(source, metric=["sufficiency"], map=["expected_response=META.gold"])
    assert dotted.code == 2 and "not found in" in dotted.error and "did you mean 'meta.gold'? (column names are case-sensitive)" in dotted.error
    unlike = run_score(source, metric=["sufficiency"], map=["context=passages"])  # no column like it: no guess
    assert unlike.code == 2 and "did you mean" not in unlike.error


def test_every_missing_field_gets_its_map_in_one_message(run_score, tmp_path):
    # a table with 'Question' and 'Context' took one run per field: the error named --map request=Question, then the next
    # run --map context=Context; now one message gives both, never one column for two fields
    rows = [{"ID": "a", "Question": "Where is x?", "Context": ["x is in y."], "Answer": "y"}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    result = run_score(source, metric=["sufficiency"])
    assert result.code == 2 and result.error.endswith(
        "if 'Question' holds it, set --map request=Question (or columns.request in the config); if these columns hold them, every "
        "field at once: --map request=Question --map context=Context")
    fixed = run_score(source, metric=["sufficiency"], map=["request=Question", "context=Context"], min_pass_rate=["0"])
    assert fixed.code == 0, fixed.text
    # a second shape: one field missing: no 'every field at once' (it would repeat the hint)
    one = run_score(source, metric=["sufficiency"], map=["request=Question"])
    assert one.code == 2 and "every field at once" not in one.error and "set --map context=Context" in one.error

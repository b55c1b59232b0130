"""How a row's context becomes passages (``ragjudge.records``): items read by their text key
(content, page_content or text) whatever other keys they hold, lists that pandas wrote into a CSV
cell, passages that hold no text (an error naming the fix, not an empty retrieval) and bytes."""

from __future__ import annotations

import pytest
from conftest import read_jsonl
from helpers import _parquet

from ragjudge.records import Mapping, to_records


# peer report (issue 21)
def test_a_null_text_key_does_not_hide_another_text_key(run_score, tmp_path, judge):
    # the same kind: items with "content" and items with "page_content", merged by Arrow
    judge.keep_requests = True
    rows = [{"id": "a", "request": "Where was it signed?", "context": [{"content": "It was signed in Lisbon."},
                                                                       {"page_content": "The year was 1911.", "doc_uri": "d2"}]}]
    out = tmp_path / "out.jsonl"
    run_score(_parquet(tmp_path, rows), metric=["sufficiency"], output=str(out))
    assert read_jsonl(out)[0]["sufficiency_status"] == "ok"
    prompt = judge.requests[0]["messages"][1]["content"]
    assert "[1] It was signed in Lisbon.\n[2] The year was 1911." in prompt


# peer report (issue 21)
def test_a_list_cell_written_by_pandas_to_csv_is_read_as_a_list(run_score, tmp_path, judge):
    import pandas as pd

    judge.keep_requests = True
    path = tmp_path / "in.csv"
    pd.DataFrame([{"id": "a", "request": "Where and when was it signed?",
                   "context": ["The treaty was signed in Lisbon.", "It was signed in March 1911."],
                   "expected_facts": ["The treaty was signed in Lisbon.", "It was signed in March 1911."]}]).to_csv(path, index=False)
    assert "['The treaty was signed in Lisbon.', 'It was signed in March 1911.']" in path.read_text()
    out = tmp_path / "out.jsonl"
    result = run_score(str(path), metric=["sufficiency"], output=str(out))
    assert result.code == 0, result.text
    prompt = judge.requests[0]["messages"][1]["content"]
    assert "[1] The treaty was signed in Lisbon.\n[2] It was signed in March 1911." in prompt  # two passages
    assert "<expected_facts>\n[1] The treaty was signed in Lisbon.\n[2] It was signed in March 1911.\n</expected_facts>" in prompt


# peer report (issue 21)
def test_a_cell_that_looks_like_a_list_but_is_not_one_gets_a_note(run_score, tmp_path, judge):
    path = tmp_path / "in.csv"
    path.write_text('id,request,passages\na,Where was it signed?,"[The treaty was signed in Lisbon, in 1911]"\n'
                    'b,Where?,"[{\'content\': \'In Lisbon.\', \'doc_uri\': \'x\'}]"\n')
    out = tmp_path / "out.jsonl"
    result = run_score(str(path), metric=["sufficiency"], output=str(out))
    assert result.code in (0, 1), result.text
    assert ("column 'passages' (for context) holds text that looks like a list but is neither JSON nor a Python list; "
            "it was read as one piece of text") in result.text
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok", "ok"]  # a Python list of objects is read too


# peer report (issue 21)
def test_passages_with_ids_but_null_text_are_an_error_not_an_empty_retrieval(run_score, tmp_path, judge):
    # every passage's text was null in the Parquet file: the row was judged "no" as a retrieval
    # that found nothing, with no call, hiding the broken column
    rows = [{"id": "null-text", "request": "Where was it signed?", "context": [{"text": None, "id": "d1"}, {"text": None, "id": "d2"}],
             "expected_response": "Lisbon"},
            {"id": "one-empty", "request": "Where was it signed?", "context": [{"text": "It was signed in Lisbon.", "id": "d1"},
                                                                               {"text": "", "id": "d2"}], "expected_response": "Lisbon"},
            {"id": "retrieved-nothing", "request": "Where was it signed?", "context": [], "expected_response": "Lisbon"}]
    out = tmp_path / "out.jsonl"
    run_score(_parquet(tmp_path, rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out), max_error_rate=1.0)
    got = {r["id"]: (r["sufficiency_status"], r["sufficiency_error"], r["sufficiency_score"]) for r in read_jsonl(out)}
    assert got["null-text"] == ("error", "context holds 2 passage(s) and none has text under content, page_content, "
                                         "text; fill in their text, or map context to the column that has it", None)
    assert got["one-empty"][0] == "ok" and got["one-empty"][2] is not None  # one empty passage among others is dropped
    assert got["retrieved-nothing"][:2] == ("ok", None) and got["retrieved-nothing"][2] == 0.0


# peer report (issue 21)
def test_a_passage_object_with_only_a_null_text_is_an_error_too_and_bytes_are_text(run_score, tmp_path, judge):
    # [{"text": null}] was judged as a retrieval that found nothing (score 0, no call); a binary
    # Parquet column reached the judge as b'Paris.'
    judge.keep_requests = True
    rows = [{"id": "only-null", "request": "Where was it signed?", "context": [{"text": None}], "expected_response": "Lisbon",
             "response": b"In Lisbon."},
            {"id": "bytes", "request": "Where was it signed?", "context": [{"text": "It was signed in Lisbon."}], "expected_response": "Lisbon",
             "response": b"In Lisbon."}]
    out = tmp_path / "out.jsonl"
    run_score(_parquet(tmp_path, rows), min_pass_rate=["0"], output=str(out), max_error_rate=1.0)
    got = {r["id"]: r for r in read_jsonl(out)}
    assert got["only-null"]["sufficiency_status"] == "error"
    assert got["only-null"]["sufficiency_error"].startswith("context holds 1 passage(s) and none has text under content")
    sent = "\n".join(str(m["content"]) for request in judge.requests for m in request["messages"])
    assert "In Lisbon." in sent and "b'In Lisbon.'" not in sent


# tester's report: empty and non-text context items

def _records(context):
    mapping = Mapping(paths={"id": None, "request": "q", "context": "c", "expected_facts": None, "expected_response": None, "response": None},
                      origins={}, columns=("q", "c"))
    return to_records([{"q": "Capital of France?", "c": context}], mapping)


@pytest.mark.parametrize("context, position", [([None, "Paris is the capital of France."], 1), (["", " x"], 1),
                                               ([{"content": None}, {"content": "Paris."}], 1), (["Paris.", "  "], 2)])
def test_an_empty_item_among_passages_is_a_rank_error_naming_it(context, position):
    record = _records(context)[0]
    assert record.context_error is None and record.rank_error is not None
    assert record.rank_error.startswith(f"context item {position} is empty")
    assert _records(["Paris.", "Lyon."])[0].rank_error is None


@pytest.mark.parametrize("context, position", [(42, 1), (True, 1), ([1, 2.5], 1), (["Paris.", {"content": 5}], 2),
                                               ([{"content": ["a", "b"]}], 1)])
def test_a_passage_that_is_not_text_is_a_row_error_naming_the_item(context, position):
    record = _records(context)[0]
    assert record.passages == [] and record.context_error.startswith(f"context item {position} has no text")
    assert _records(["It costs 42 euros."])[0].context_error is None  # numbers inside text are text


def test_rank_metrics_refuse_a_row_with_an_empty_item_and_sufficiency_still_judges_it(run_score, tmp_path, judge):
    rows = [{"id": "a", "request": "Capital of France?", "context": [None, "Paris is the capital of France."], "rel": [0, 1],
             "expected_response": "Paris"}]
    out = tmp_path / "out.jsonl"
    run_score(_parquet(tmp_path, rows), metric=["passage_relevance", "sufficient_k", "sufficiency"], labels=["passage_relevance=rel"],
              at_k="1,2", min_pass_rate=["0"], max_error_rate=1.0, output=str(out))
    row = read_jsonl(out)[0]
    assert row["passage_relevance_status"] == "error" and row["passage_relevance_error"].startswith("context item 1 is empty")
    assert row["sufficient_k_status"] == "error" and row["sufficient_k_error"].startswith("context item 1 is empty")
    assert row["sufficiency_status"] == "ok"

"""Faults peers found (issue 21), in the unit tier: unjudged facts, passages, list cells, empty
contexts, skip rates, column names, the evidence check and probability notes, from runs through
the library against the in-process fake judge (moved from tests/test_peer_faults.py, their
assertions unchanged; the printed lines and one-line errors stay there)."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl
from test_peer_faults import FACTS, PASSAGES, _parquet, reply


def test_an_unjudged_fact_is_asked_again_then_an_error_row(run_score, tmp_path, judge):
    incomplete = reply([{"fact": 1, "supported": True, "passages": [1], "reason": "p1"}])
    judge.replies.extend([incomplete, incomplete])
    row = {"id": "r", "request": "Where and when was the treaty signed?", "context": [PASSAGES[0].text], "expected_facts": FACTS}
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [row]), metric=["sufficiency"], output=str(out))
    scored = read_jsonl(out)[0]
    assert result.code == 3 and judge.calls == 2
    assert scored["sufficiency_status"] == "error" and scored["sufficiency_score"] is None
    assert scored["sufficiency_error"] == "unreadable judge reply: fact(s) 2, 3 of 3 not judged"


def test_hosted_judges_are_asked_for_the_reasoning_before_each_verdict(run_score, tmp_path, judge):
    judge.keep_requests = True
    rows = [{"id": "g", "request": "Where was it signed?", "context": ["It was signed in Lisbon."], "expected_response": "Lisbon"},
            {"id": "f", "request": "Where was it signed?", "context": ["It was signed in Lisbon."]}]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"])
    assert result.code == 0, result.text
    schemas = {body["response_format"]["json_schema"]["name"]: body["response_format"]["json_schema"]["schema"] for body in judge.requests}
    fact = schemas["sufficiency_grounded"]["properties"]["facts"]["items"]["properties"]
    assert list(fact) == ["fact", "passages", "reason", "supported"]
    assert list(schemas["sufficiency_grounded"]["properties"]) == ["facts", "rationale", "verdict"]
    assert list(schemas["sufficiency_reference_free"]["properties"]) == ["needed", "quote", "rationale", "verdict"]


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


def test_an_empty_context_is_insufficient_without_a_call(run_score, tmp_path, judge):
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."] if i < 5 else [],
             "expected_response": f"city {i}"} for i in range(12)]
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], output=str(out))
    written = read_jsonl(out)
    assert result.code == 1  # 7 of 12 rows retrieved nothing: pass rate 5/12, not 1.00
    assert [(r["sufficiency_status"], r["sufficiency_score"]) for r in written[5:]] == [("ok", 0.0)] * 7
    assert {r["sufficiency_rationale"] for r in written[5:]} == {"no passages retrieved"}
    assert written[5]["sufficiency_missing"] == ["city 5"]
    assert judge.calls == 5
    assert "FAIL sufficiency: pass rate 0.42 < 1.00 (5 of 12 ok rows passed)" in result.text


def test_max_skip_rate_gates_on_skipped_rows(run_score, tmp_path):
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."] if i < 2 else None,
             "expected_response": f"city {i}"} for i in range(4)]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], max_skip_rate=0.25)
    assert result.code == 1
    assert "FAIL sufficiency: skip rate 0.50 > 0.25 (2 of 4 rows skipped): no context" in result.text
    assert run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], max_skip_rate=0.5).code == 0


def test_the_common_names_are_recognised(run_score, tmp_path):
    rows = [{"question": "Where is the Eiffel Tower?", "retrieved_docs": ["It is in Paris, France."], "gold_answer": "Paris, France",
             "bot_answer": "Paris"}]
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    assert "context=retrieved_docs" in result.text and "expected_response=gold_answer" in result.text and "response=bot_answer" in result.text
    row = read_jsonl(out)[0]
    assert (row["sufficiency_status"], row["completeness_status"]) == ("ok", "ok")


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


@pytest.mark.parametrize("fact, passage, expected", [
    pytest.param("The library was funded by the city.", "The library opens Monday to Friday from nine to five.", 0.0, id="english"),
    pytest.param("La biblioteca fue financiada por la ciudad.", "La biblioteca abre de lunes a viernes de nueve a cinco.", 0.0, id="spanish"),
    pytest.param("Die Bibliothek wurde von der Stadt finanziert.", "Die Bibliothek ist von Montag bis Freitag geöffnet.", 0.0, id="german"),
    pytest.param("La bibliothèque a été financée par la ville.", "La bibliothèque est ouverte du lundi au vendredi.", 0.0, id="french"),
    pytest.param("La biblioteca fue financiada por la ciudad.", "La ciudad ha financiado la biblioteca: fue financiada por la ciudad en 1990.", 1.0,
                 id="spanish_stated"),
])
def test_the_evidence_check_treats_languages_alike(run_score, tmp_path, judge, fact, passage, expected):
    # in Spanish, la / por / fue counted as evidence and the unsupported fact was accepted (1.0)
    rows = [{"id": "a", "request": "?", "context": [passage], "expected_facts": [fact]}]
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  fact_evidence: 0.5\n")
    judge.replies.append(json.dumps({"facts": [{"fact": 1, "supported": True, "passages": [1], "reason": "r"}], "rationale": "r", "verdict": "yes"}))
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out), config=str(config))
    assert read_jsonl(out)[0]["sufficiency_score"] == expected


def test_a_lone_surrogate_in_a_reply_is_replaced_and_every_row_written(run_score, tmp_path, judge):
    # "unexpected UnicodeEncodeError", exit 2, no output in any format, and the bad verdict cached
    judge.replies.append('{"facts": [{"fact": 1, "supported": true, "passages": [1], "reason": "r"}], "rationale": "Stated \\ud83d plainly.", "verdict": "yes"}')
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."], "expected_response": f"city {i}"}
            for i in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    for suffix in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"out.{suffix}"
        result = run_score(source, metric=["sufficiency"], output=str(out), concurrency=1, summary_json=str(tmp_path / "s.json"))
        assert result.code == 0, result.text
        import pandas as pd

        table = pd.read_json(out, lines=True) if suffix == "jsonl" else pd.read_csv(out) if suffix == "csv" else pd.read_parquet(out)
        assert len(table) == 3 and table["sufficiency_rationale"][0] == "Stated \ufffd plainly."  # cached, then read again


def test_a_probability_note_shows_the_digits_that_make_it_true(run_score, tmp_path, judge):
    judge.p_yes = 0.838
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  yes_threshold: 0.84\n")
    out = tmp_path / "out.jsonl"
    rows = [{"id": "a", "request": "Where is landmark 1?", "context": ["Landmark 1 stands in city 1."]}]
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out), config=str(config))
    assert read_jsonl(out)[0]["sufficiency_rationale"].startswith("probability check: P(yes) 0.838 < yes_threshold 0.84, so no")


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

"""Each reference's own semantics (issue 27): MLflow's precedence of the expected response,
``sufficiency.mode`` (auto / grounded as MLflow / reference_free as Axion), every ground-truth
statement judged (Azure), and the shapes MLflow, Axion and Azure users pass in. Through the
fake judge, the server or in-process (``run_score``) (word overlap: a fact is supported when most of its words are in a passage)."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl
from helpers import _parquet
from ragjudge import Scorer, load_config
from ragjudge.records import Columns, normalise_context, resolve_mapping, to_records

# the expected response is in the passages, the facts are not: the ground truth used decides
BOTH = {"id": "both", "request": "Where was the treaty signed?", "context": ["The treaty was signed in Lisbon in 1911."],
        "expected_response": "The treaty was signed in Lisbon.", "expected_facts": ["The treaty was ratified by Norway in Oslo."]}
FACTS_ONLY = {"id": "facts", "request": "Where was the treaty signed?", "context": ["The treaty was signed in Lisbon in 1911."],
              "expected_facts": ["The treaty was ratified by Norway in Oslo."]}
NO_REFERENCE = {"id": "none", "request": "Where was the treaty signed?", "context": ["The treaty was signed in Lisbon in 1911."]}


def _scorer(server, tmp_path, **settings):
    return Scorer(model="openai/fake-judge", api_base=server.url, cache={"dir": str(tmp_path / "cache")}, **settings)


def test_the_expected_response_wins_over_the_facts_as_mlflow_has_it(server, tmp_path):
    with _scorer(server, tmp_path, metrics=["sufficiency"]) as scorer:
        scored = scorer.score([BOTH, FACTS_ONLY])
    rows = scored.frame.to_dict("records")
    assert [r["sufficiency_score"] for r in rows] == [1.0, 0.0]
    assert [r["sufficiency_ground_truth"] for r in rows] == ["expected_response", "expected_facts"]
    assert scored.summary.metrics["sufficiency"].to_dict()["ground_truth"] == {"expected_facts": 1, "expected_response": 1}
    assert rows[0]["sufficiency_missing"] == []


def test_ground_truth_facts_judges_the_facts_of_a_row_with_both(server, tmp_path):
    with _scorer(server, tmp_path, metrics=["sufficiency"], sufficiency={"ground_truth": "facts"}) as scorer:
        row = scorer.score([BOTH]).frame.to_dict("records")[0]
    assert (row["sufficiency_score"], row["sufficiency_ground_truth"]) == (0.0, "expected_facts")
    assert list(row["sufficiency_missing"]) == ["The treaty was ratified by Norway in Oslo."]


def test_the_summary_json_counts_the_ground_truth_used(run_score, tmp_path):
    summary = tmp_path / "summary.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [BOTH, FACTS_ONLY, NO_REFERENCE]), metric=["sufficiency"],
                       summary_json=str(summary), min_pass_rate=["0"], set_=["sufficiency.ground_truth=facts"],
                       output=str(tmp_path / "out.jsonl"))
    assert result.code == 0, result.text
    assert json.loads(summary.read_text())["metrics"]["sufficiency"]["ground_truth"] == {"expected_facts": 2}


@pytest.mark.parametrize("mode, expected", [
    ("auto", [("ok", "grounded", 1.0), ("ok", "grounded", 0.0), ("ok", "reference_free", 1.0)]),
    ("grounded", [("ok", "grounded", 1.0), ("ok", "grounded", 0.0), ("skipped", "grounded", None)]),
    ("reference_free", [("ok", "reference_free", 1.0), ("ok", "reference_free", 1.0), ("ok", "reference_free", 1.0)]),
])
def test_a_forced_mode_on_each_kind_of_row(run_score, tmp_path, mode, expected):
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [BOTH, FACTS_ONLY, NO_REFERENCE]), metric=["sufficiency"], output=str(out),
                       min_pass_rate=["0"], set_=[f"sufficiency.mode={mode}"])
    assert result.code == 0, result.text
    rows = read_jsonl(out)
    assert [(r["sufficiency_status"], r["sufficiency_mode"], r["sufficiency_score"]) for r in rows] == expected
    if mode == "grounded":
        assert rows[2]["sufficiency_error"] == "no expected_facts or expected_response"
    if mode == "reference_free":
        assert all(r["sufficiency_ground_truth"] is None for r in rows)


def test_the_mode_is_read_from_the_config_section_too(server, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("sufficiency:\n  mode: grounded\n")
    assert load_config(str(config)).sufficiency.mode == "grounded"
    with _scorer(server, tmp_path, metrics=["sufficiency"], sufficiency={"mode": "grounded"}) as scorer:
        row = scorer.score([NO_REFERENCE]).frame.to_dict("records")[0]
    assert (row["sufficiency_status"], row["sufficiency_error"]) == ("skipped", "no expected_facts or expected_response")
    assert server.calls == 0


_NAMES = ["Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune", "Pluto", "Ceres", "Eris", "Haumea", "Makemake",
          "Sedna", "Quaoar", "Orcus", "Gonggong", "Varuna", "Ixion", "Salacia", "Vesta", "Pallas", "Hygiea", "Juno", "Astraea", "Hebe",
          "Iris", "Flora", "Metis", "Eunomia", "Psyche", "Thetis", "Egeria", "Irene", "Eunike", "Fortuna", "Massalia", "Lutetia",
          "Kalliope", "Thalia", "Themis", "Phocaea", "Proserpina", "Euterpe", "Bellona"]
_COLOURS = ["crimson", "azure", "amber", "violet", "ochre", "teal", "scarlet", "indigo", "ivory", "olive"]
TEN = [f"{_NAMES[n]} glows {_COLOURS[n]}." for n in range(10)]
HOLDS_EIGHT = " ".join(TEN[:8])


@pytest.mark.parametrize("shape", ["expected_response", "expected_facts"])
def test_a_ten_fact_truth_against_a_response_holding_eight_is_not_5_and_names_the_two_missing(server, tmp_path, shape):
    truth = {"expected_response": " ".join(TEN)} if shape == "expected_response" else {"expected_facts": TEN}
    with _scorer(server, tmp_path, metrics=["completeness"]) as scorer:
        row = scorer.score([{"id": "t", "request": "Tell me about the planets.", "response": HOLDS_EIGHT, **truth}]).frame.to_dict("records")[0]
    assert row["completeness_status"] == "ok"
    assert row["completeness_score"] == 4.0
    assert list(row["completeness_missing"]) == TEN[8:]


def test_a_truth_longer_than_one_call_holds_is_split_across_coverage_calls(server, tmp_path):
    facts = [f"{name} is {name.lower()}ish." for name in _NAMES]  # 45 statements: three calls of at most 20
    response = " ".join(facts[:44])
    with _scorer(server, tmp_path, metrics=["completeness"]) as scorer:
        scored = scorer.score([{"id": "t", "request": "List the items.", "response": response, "expected_facts": facts}])
        row = scored.frame.to_dict("records")[0]
        assert server.calls == 3
        again = scorer.score([{"id": "t", "request": "List the items.", "response": response, "expected_facts": facts}])
    assert (row["completeness_status"], row["completeness_score"]) == ("ok", 4.0)  # 44 of 45: 1 + round(4 x 0.98) = 5, capped at 4
    assert list(row["completeness_missing"]) == [facts[44]]
    assert row["completeness_rationale"].startswith("45 statements judged in 3 coverage calls; 44 covered.")
    assert server.calls == 3 and again.frame.to_dict("records")[0]["completeness_score"] == 4.0  # every part from the cache
    whole = dict(row)
    with _scorer(server, tmp_path, metrics=["completeness"]) as scorer:
        full = scorer.score([{"id": "t", "request": "List the items.", "response": " ".join(facts), "expected_facts": facts}])
    assert full.frame.to_dict("records")[0]["completeness_score"] == 5.0 and whole["completeness_score"] == 4.0


def test_a_truth_cut_past_the_limit_cannot_score_5(server, tmp_path, monkeypatch):
    monkeypatch.setattr("ragjudge.judges.completeness.MAX_TOTAL", 3)
    facts = ["Ann finds a map.", "She sails to the island.", "She finds gold.", "She returns home rich."]
    with _scorer(server, tmp_path, metrics=["completeness"]) as scorer:
        # the last fact in other words: a response holding every fact word for word is the whole truth (5)
        response = " ".join(facts[:3]) + " Rich, she goes back home."
        row = scorer.score([{"id": "c", "request": "Plot?", "response": response, "expected_facts": facts}]).frame.to_dict("records")[0]
    assert row["completeness_score"] == 4.0
    assert row["completeness_rationale"].startswith("the ground truth was cut: 1 statement(s) past the first 3 were not judged, so at most 4")


def _record(row, columns=None):
    return to_records([row], resolve_mapping(list(row), [row], columns or Columns()))[0]


def test_a_context_object_with_no_text_key_is_one_json_passage_with_a_note():
    notes: list[str] = []
    passages, error = normalise_context([{"title": "Treaty", "body": "Signed in Lisbon."}], notes)
    assert error is None and [p.text for p in passages] == ['{"title": "Treaty", "body": "Signed in Lisbon."}']
    assert notes == ["note: a context item has no text under content, page_content, text (keys: title, body); "
                     "it was judged as its JSON text, one passage"]
    record = _record({"request": "q?", "context": json.dumps({"body": "x", "doc_uri": "u"})})  # one object, as JSON text
    assert [p.text for p in record.passages] == ['{"body": "x", "doc_uri": "u"}'] and record.passages[0].doc_uri == "u"
    assert record.notes and "keys: body, doc_uri" in record.notes[0]


def test_a_context_object_holding_no_text_at_all_is_still_an_error_naming_its_keys():
    passages, error = normalise_context([{"score": 0.3, "metadata": {"doc_uri": "x"}}], [])
    assert passages == [] and error == "context item 1 has no text under content, page_content, text; keys found: score, metadata"
    passages, error = normalise_context([{"score": 0.3, "tags": ["law", "treaty"]}], [])
    assert error is None and [p.text for p in passages] == ['{"score": 0.3, "tags": ["law", "treaty"]}']


def test_retrieved_content_is_an_alias_of_context():
    mapping = resolve_mapping(["query", "retrieved_content"], [], Columns())
    assert (mapping.paths["request"], mapping.paths["context"]) == ("query", "retrieved_content")
    record = _record({"query": "Where?", "retrieved_content": "In Lisbon."})
    assert (record.request, [p.text for p in record.passages]) == ("Where?", ["In Lisbon."])


@pytest.mark.parametrize("inputs, request_text", [
    ({"question": "Where was it signed?"}, "Where was it signed?"),
    ({"query": "Where was it signed?"}, "Where was it signed?"),
    ({"question": "Where?", "locale": "en"}, '{"question": "Where?", "locale": "en"}'),
])
def test_mlflow_records_take_inputs_with_any_single_key_or_its_json_text(inputs, request_text):
    config = load_config("mlflow")
    row = {"inputs": inputs, "outputs": {"retrieved_context": [{"content": "Signed in Lisbon."}], "response": "Lisbon"},
           "expectations": {"expected_response": "Lisbon"}}
    mapping = resolve_mapping(list(row), [row], config.columns)
    assert _record(row, config.columns).request == request_text
    assert mapping.paths["request"] == "inputs.query"


def test_a_request_of_chat_messages_is_its_last_message_as_mlflow_reads_it():
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where was it signed?"}]
    assert _record({"request": {"messages": messages}}).request == "Where was it signed?"
    assert _record({"request": json.dumps({"messages": messages})}).request == "Where was it signed?"


def test_mlflow_records_with_a_question_are_judged_through_the_cli(run_cli, tmp_path):
    row = {"inputs": {"question": "Where was the treaty signed?"}, "outputs": {"retrieved_context": [{"content": "The treaty was signed in Lisbon."}]},
           "expectations": {"expected_response": "The treaty was signed in Lisbon."}}
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [row]), "-c", "mlflow", "-m", "sufficiency", "-o", str(out)])
    assert result.code == 0, result.stderr
    assert (read_jsonl(out)[0]["sufficiency_status"], read_jsonl(out)[0]["sufficiency_score"]) == ("ok", 1.0)


@pytest.mark.parametrize("response", [
    [{"role": "user", "content": "Where was it signed?"}, {"role": "assistant", "content": "First try."},
     {"role": "user", "content": "Again?"}, {"role": "assistant", "content": "In Lisbon."}],
    json.dumps([{"role": "user", "content": "Where?"}, {"role": "assistant", "content": [{"type": "text", "text": "In Lisbon."}]}]),
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "assistant", "content": "In Lisbon."}]},
])
def test_a_response_of_chat_messages_is_judged_on_its_final_assistant_message(response):
    assert _record({"request": "q?", "response": response}).response == "In Lisbon."


def test_a_response_that_is_a_list_of_strings_is_still_one_line_each():
    assert _record({"request": "q?", "response": ["In Lisbon.", "In 1911."]}).response == "In Lisbon.\nIn 1911."


@pytest.mark.parametrize("given, read", [("openai:/gpt-4.1-mini", "openai/gpt-4.1-mini"), ("anthropic:/claude-3-5-haiku-latest",
                                                                                            "anthropic/claude-3-5-haiku-latest"),
                                         ("openai/gpt-4o-mini", "openai/gpt-4o-mini"), ("local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-1.5b")])
def test_mlflow_model_names_are_read_as_litellm_ones(given, read):
    assert load_config(None, {"judge": {"model": given}}).judge.model == read


def test_an_mlflow_model_name_works_on_the_command_line(run_cli, tmp_path):
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [NO_REFERENCE]), "-m", "sufficiency", "-o", str(out), "--model", "openai:/fake-judge"])
    assert result.code == 0, result.stderr
    assert read_jsonl(out)[0]["judge_model"] == "openai/fake-judge"


def test_a_split_truth_with_several_samples_merges_each_sample(server, tmp_path):
    facts = [f"{name} is {name.lower()}ish." for name in _NAMES]
    with _scorer(server, tmp_path, metrics=["completeness"], judge={"samples": 3}) as scorer:
        row = scorer.score([{"id": "t", "request": "List the items.", "response": " ".join(facts[:40]), "expected_facts": facts}]).frame.to_dict("records")[0]
    assert (row["completeness_status"], row["completeness_score"], row["completeness_agreement"]) == ("ok", 4.0, 1.0)
    assert list(row["completeness_missing"]) == facts[40:]
    assert server.calls == 2 + 3  # the first two parts once, the last part sampled three times


# peer report (issue 20 item 5): Parquet contexts hide unknown chunk keys
def test_a_context_item_with_an_unknown_key_is_the_same_passage_in_parquet_as_in_jsonl(run_score, tmp_path):
    # Arrow merges the items' structs, so "content" exists and is null: the body-only row was
    # skipped as "no context", and the mixed row judged on its first item alone. Since issue 27
    # such an item is one passage holding its JSON text (as MLflow judges str(context)), not an error
    rows = [{"id": "body-only", "request": "q?", "context": [{"body": "The treaty was signed in Lisbon."}], "expected_response": "Lisbon"},
            {"id": "mixed", "request": "q?", "context": [{"content": "Signed in 1911."}, {"body": "It was signed in Lisbon."}],
             "expected_response": "Lisbon"}]
    errors = {}
    for source in (write_jsonl(tmp_path / "in.jsonl", rows), _parquet(tmp_path, rows)):
        out = tmp_path / "out.jsonl"
        run_score(source, metric=["sufficiency"], output=str(out), max_error_rate=["1"])
        errors[source] = [(r["sufficiency_status"], r["sufficiency_score"]) for r in read_jsonl(out)]
    jsonl, parquet = errors.values()
    assert jsonl == parquet == [("ok", 1.0), ("ok", 1.0)]  # "Lisbon" is in the body's JSON text, read as a passage

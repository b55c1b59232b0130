"""Custom judges in the unit tier: metrics defined in YAML, the bundled groundedness judge and
extensions of the built-ins, judged through the library against the in-process fake judge
(moved from tests/test_custom_judges.py, their assertions unchanged)."""

from __future__ import annotations

import json

import pytest
from conftest import read_jsonl, write_jsonl
from helpers import BINARY, SCALE, config_file, judge_with
from helpers import CUSTOM_ROWS as ROWS
from helpers import score_rows as _score

IF_B = "{% if 'Colosseum' in response %}"  # true for row b only, never for the sample values checked at load


def test_a_binary_custom_metric_end_to_end(run_score, tmp_path, judge):
    config = config_file(tmp_path, BINARY)
    source = write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    summary = tmp_path / "s.json"
    result = run_score(source, metric=["cites_sources"], config=config, output=str(out), summary_json=str(summary))
    written = read_jsonl(out)
    assert [r["cites_sources_status"] for r in written] == ["ok", "ok", "skipped"]
    assert written[2]["cites_sources_error"] == "no response"
    assert {"cites_sources_score", "cites_sources_passed", "cites_sources_rationale", "cites_sources_cached"} <= set(written[0])
    assert all(r["cites_sources_score"] in (0.0, 1.0) for r in written[:2])
    doc = json.loads(summary.read_text())
    assert doc["metrics"]["cites_sources"]["ok"] == 2 and doc["metrics"]["cites_sources"]["skipped"] == 1
    assert result.code == (0 if all(r["cites_sources_passed"] for r in written[:2]) else 1)
    calls = judge.calls
    again = run_score(source, metric=["cites_sources"], min_pass_rate=["0"], config=config, output=str(out))
    assert again.code == 0 and judge.calls == calls  # every verdict from the cache
    assert [r["cites_sources_cached"] for r in read_jsonl(out)] == [True, True, None]
    # the column a judge reads reaches it fenced as data
    judge.keep_requests = True
    run_score(source, metric=["cites_sources"], min_pass_rate=["0"], config=config, no_cache=True)
    prompt = judge.requests[0]["messages"][-1]["content"]
    assert '<data name="source_title">\nParis guide\n</data>' in prompt and "<response>\nThe Eiffel Tower is in Paris.\n</response>" in prompt


def test_a_1_to_5_custom_metric_end_to_end(run_score, tmp_path, judge):
    judge.keep_requests = True
    config = config_file(tmp_path, SCALE)
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), metric=["faithful_1to5"], config=config, output=str(out))
    written = read_jsonl(out)
    # row a: its one sentence is in the passages (5); row b: none of its two (1); row c: no response
    assert [(r["faithful_1to5_status"], r["faithful_1to5_score"], r["faithful_1to5_passed"]) for r in written] == [
        ("ok", 5.0, True), ("ok", 1.0, False), ("skipped", None, None)]
    assert result.code == 1 and "FAIL faithful_1to5: pass rate 0.50 < 1.00 (1 of 2 ok rows passed)" in result.text
    body = judge.requests[0]
    assert body["response_format"]["json_schema"]["schema"]["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # the few-shot example, as an earlier turn
    assert json.loads(body["messages"][2]["content"]) == {"rationale": "Every sentence is stated.", "score": 5.0}


def test_groundedness_works_with_no_config_of_ones_own(run_score, tmp_path, judge):
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), metric=["groundedness"], output=str(out))
    written = read_jsonl(out)
    assert [r["groundedness_status"] for r in written] == ["ok", "ok", "skipped"]
    assert written[0]["groundedness_score"] == 1.0 and written[0]["groundedness_missing"] == []
    assert written[1]["groundedness_score"] == 0.0
    assert written[1]["groundedness_missing"] == ["The Colosseum is in Rome.", "It was built by Romans."]  # the unsupported claims
    assert result.code == 1


def test_an_unjudged_claim_is_never_a_yes(run_score, tmp_path, judge):
    bad = json.dumps({"claims": [{"claim": "It is in Paris.", "reason": "r", "supported": "probably"}], "rationale": "r", "verdict": "yes"})
    judge.replies.extend([bad, bad])
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", ROWS[:1]), metric=["groundedness"], output=str(out), max_error_rate=1.0)
    row = read_jsonl(out)[0]
    assert row["groundedness_status"] == "error" and row["groundedness_error"] == "unreadable judge reply: claim(s) 1 not judged"


@pytest.mark.parametrize("text, message", [
    pytest.param(BINARY.replace("{{ source_title }}", "{{ source_titel }}"),
                 "judge 'cites_sources': the prompt names unknown field(s) source_titel; available: request, passages, context, response, "
                 "expected_response, expected_facts, id, source_title", id="unknown_field"),
    pytest.param(BINARY.replace("name: cites_sources", "name: sufficiency"),
                 "judges: 'sufficiency' is a metric that ships with ragjudge; give your judge another name; to add instructions or "
                 "examples to it, use extend.sufficiency", id="clash_with_built_in"),
    pytest.param(BINARY.replace("name: cites_sources", "name: groundedness"),
                 "judges: 'groundedness' is a metric that ships with ragjudge; give your judge another name", id="clash_with_bundled"),
    pytest.param(BINARY.replace("kind: binary", "kind: likert"), "invalid value for 'judges item 1.kind': should be 'binary' or 'scale'",
                 id="unknown_kind"),
    pytest.param(SCALE.replace("min: 1", "min: 5"), "judge 'faithful_1to5': min (5) must be below max (5)", id="min_not_below_max"),
    pytest.param(SCALE.replace("threshold: 4", "threshold: 7"), "judge 'faithful_1to5': threshold 7 is outside its scale 1..5",
                 id="threshold_outside"),
    pytest.param(BINARY.replace("{{ response }}", "{{ response }"), "judge 'cites_sources': prompt line 3: unexpected '}'",
                 id="template_syntax"),
])
def test_a_bad_definition_exits_2_with_the_fix(run_score, tmp_path, text, message):
    result = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), config=config_file(tmp_path, text))
    assert result.code == 2
    assert message in result.text, result.text


@pytest.mark.parametrize("expression", [
    "{{ response.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ ''.__class__.__base__ }}",
])
def test_a_template_that_reaches_for_python_internals_fails_cleanly(run_score, tmp_path, expression):
    text = BINARY.replace("{{ response }}", "{{ response }} " + expression)
    result = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), config=config_file(tmp_path, text))
    assert result.code == 2
    assert "the prompt reaches for something a template may not use" in result.text and "Traceback" not in result.text


def test_a_needed_column_that_is_missing_exits_2(run_score, tmp_path):
    rows = [{k: v for k, v in row.items() if k != "source_title"} for row in ROWS]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["cites_sources"], config=config_file(tmp_path, BINARY))
    assert result.code == 2
    assert "cites_sources needs a column 'source_title' and the input has none; columns: id, request, context, response" in result.text


@pytest.mark.parametrize("prompt, extra, message", [
    pytest.param("{{ 1/0 }}{{ response }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: ZeroDivisionError: division by zero; fix the template so "
                 "that it renders for any row", id="zero_division"),
    pytest.param("{{ response|truncate(-1) }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: AssertionError: expected length >= 3, got -1", id="assertion"),
    pytest.param("{{ '%s%s'|format(response) }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: TypeError: not enough arguments for format string", id="type_error"),
    pytest.param("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: RecursionError: maximum recursion depth exceeded",
                 id="recursion"),
    pytest.param("{{ response }}", "    system: \"{{ 1/0 }}\"\n",
                 "judge 'cites_sources': the system fails on sample values: ZeroDivisionError: division by zero", id="system"),
    pytest.param("{{ response }}", "    system: \"{{ 'x' * 10**8 }}\"\n",
                 "judge 'cites_sources': the system goes past a template limit on sample values: '*' would make a value of size 100,000,000",
                 id="system_limit"),
])
def test_a_template_that_raises_on_sample_values_is_a_config_error(run_score, tmp_path, prompt, extra, message):
    result = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), config=config_file(tmp_path, judge_with(prompt, extra)))
    assert result.code == 2
    assert message in result.text, result.text
    assert len(result.text.strip().splitlines()) == 1 and "unexpected" not in result.text


@pytest.mark.parametrize("prompt, extra, error", [
    pytest.param(IF_B + "{{ 1/0 }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: ZeroDivisionError: division by zero", id="zero_division"),
    pytest.param("{% macro m() %}{{ m() }}{% endmacro %}" + IF_B + "{{ m() }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: RecursionError: maximum recursion depth exceeded",
                 id="recursion"),
    pytest.param(IF_B + "{{ response|truncate(-1) }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: AssertionError: expected length >= 3, got -1",
                 id="assertion"),
    pytest.param(IF_B + "{{ '%s%s'|format(response) }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: TypeError: not enough arguments for format string",
                 id="type_error"),
    pytest.param(IF_B + "{{ 'x' * 10**8 }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: TemplateLimitError: '*' would make a value of size "
                 "100,000,000, over the limit of 10,000,000 (a character counts 1, an item of a list 100)", id="limit"),
    pytest.param(IF_B + "{% for a in response %}{% for b in response %}{{ a }}{% endfor %}{% endfor %}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: TemplateLimitError: a text field cannot be looped "
                 "over character by character; use it whole, or loop over its words or lines (response.split(), response.splitlines())",
                 id="characters_of_a_text"),
    pytest.param("{{ response }}", f"    system: \"{IF_B}{{{{ 1/0 }}}}{{% endif %}}You judge.\"\n",
                 "judge 'cites_sources': the system template failed on this row: ZeroDivisionError: division by zero", id="system"),
])
def test_a_template_that_fails_on_one_row_fails_that_row_only(run_score, tmp_path, judge, prompt, extra, error):
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), metric=["cites_sources"], min_pass_rate=["0"], config=config_file(tmp_path, judge_with(prompt, extra)), output=str(out), max_error_rate=1.0)
    assert result.code == 0, result.text
    written = read_jsonl(out)
    assert [r["cites_sources_status"] for r in written] == ["ok", "error", "skipped"]
    if "RecursionError" in error:
        assert written[1]["cites_sources_error"].startswith(error)
    else:
        assert written[1]["cites_sources_error"] == error
    assert judge.calls == 1  # row a judged; row b never reached the judge


def test_a_judge_may_need_and_read_the_id(run_score, tmp_path, judge):
    judge.keep_requests = True
    text = BINARY.replace("needs: [response, source_title]", "needs: [id, response]").replace("{{ source_title }}", "Row {{ id }}")
    rows = [*ROWS, {**ROWS[0], "id": ""}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["cites_sources"], min_pass_rate=["0"], config=config_file(tmp_path, text), output=str(out))
    written = read_jsonl(out)
    assert [(r["cites_sources_status"], r["cites_sources_error"]) for r in written] == [
        ("ok", None), ("ok", None), ("skipped", "no response"), ("skipped", "no id")]
    assert 'Row <data name="id">\na\n</data>' in judge.requests[0]["messages"][-1]["content"]


def test_a_scale_reply_without_a_score_says_so_and_one_out_of_scale_names_its_value(run_score, tmp_path, judge):
    # "(got None)" read as if the judge had given null
    config = config_file(tmp_path, SCALE)
    out = tmp_path / "out.jsonl"
    judge.replies.extend(['{"rationale": "r"}', '{"rationale": "r", "score": 9}'])
    run_score(write_jsonl(tmp_path / "in.jsonl", ROWS[:1]), metric=["faithful_1to5"], config=config, output=str(out),
              max_error_rate=["1"], no_cache=True)
    assert read_jsonl(out)[0]["faithful_1to5_error"] == ("unreadable judge reply: the reply has no score from 1 to 5; "
                                                         "asked again: the reply has no score from 1 to 5 (got 9)")


UNIT_SCALE = """\
judges:
  - name: relevance
    needs: [response]
    kind: scale
    min: 0
    max: 1
    threshold: 0.7
    prompt: |
      How relevant is the response, from 0 to 1?
      {{ response }}
"""


def _definition(text: str):
    import yaml

    from ragjudge.judges.definitions import JudgeDefinition

    return JudgeDefinition.model_validate(yaml.safe_load(text)["judges"][0])


def _score_schema(definition) -> dict:
    from ragjudge.judges.custom import _schema

    return _schema(definition)["properties"]["score"]


# peer report (issue 29 item 6): a 0..1 custom scale is a number (langfuse#11604)
def test_a_zero_to_one_scale_gets_a_number_schema_and_takes_a_fraction(run_score, tmp_path, judge):
    path = tmp_path / "c.yaml"
    path.write_text(UNIT_SCALE)
    judge.keep_requests = True
    judge.replies.append(json.dumps({"rationale": "mostly relevant", "score": 0.8}))
    result, rows = _score(run_score, tmp_path, [{"id": "a", "response": "Paris."}], metric=["relevance"], config=str(path))
    assert result.code == 0, result.text
    schema = judge.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["score"]
    assert schema == {"type": "number"}
    assert (rows[0]["relevance_score"], rows[0]["relevance_passed"]) == (0.8, True)


# peer report (issue 29 item 6): a 0..1 custom scale is a number (langfuse#11604)
def test_a_scale_is_integer_only_when_said_or_when_bounds_and_threshold_are_whole():
    base = UNIT_SCALE.replace("    min: 0\n    max: 1\n    threshold: 0.7\n", "")
    assert _score_schema(_definition(base.replace("kind: scale", "kind: scale\n    min: 1\n    max: 5"))) == {
        "type": "integer", "enum": [1, 2, 3, 4, 5]}  # 1..5, the middle 3: whole
    assert _score_schema(_definition(base.replace("kind: scale", "kind: scale\n    min: 0\n    max: 1\n    integer: true"))) == {
        "type": "integer", "enum": [0, 1]}
    assert _score_schema(_definition(base.replace("kind: scale", "kind: scale\n    min: 1\n    max: 5\n    threshold: 3.5"))) == {
        "type": "number"}
    assert _score_schema(_definition(base.replace("kind: scale", "kind: scale\n    min: 0\n    max: 1"))) == {"type": "number"}  # pass at 0.5
    assert _score_schema(_definition(base.replace("kind: scale", "kind: scale\n    min: 1\n    max: 5\n    integer: false"))) == {
        "type": "number"}


# peer report (issue 29 item 6): a 0..1 custom scale is a number (langfuse#11604)
def test_a_fraction_in_reply_to_a_whole_number_scale_is_an_error_row(run_score, tmp_path, judge):
    path = tmp_path / "c.yaml"
    path.write_text(UNIT_SCALE.replace("min: 0\n    max: 1\n    threshold: 0.7", "min: 1\n    max: 5\n    threshold: 3"))
    judge.replies.extend([json.dumps({"rationale": "r", "score": 3.5})] * 2)  # the call and its re-ask
    result, rows = _score(run_score, tmp_path, [{"id": "a", "response": "Paris."}], metric=["relevance"], config=str(path))
    assert rows[0]["relevance_status"] == "error" and rows[0]["relevance_score"] is None
    assert "not a whole number" in rows[0]["relevance_error"]
    assert result.code == 3


# peer report (issue 29 item 6): a 0..1 custom scale is a number (langfuse#11604)
def test_a_definition_without_integer_keeps_its_prompt_version():
    # caches of definitions written before integer: stay valid
    import hashlib

    from ragjudge.config import JudgeSettings
    from ragjudge.judges.custom import CustomJudge

    definition = _definition(UNIT_SCALE)
    judge = CustomJudge(definition, JudgeSettings())
    # (mlflow_name, issue 60 item 14, came later still: it names the feedback, never the judgment; per and k, issue 63,
    # later again: left out while unset)
    digest = hashlib.sha256(definition.model_dump_json(exclude={"integer", "mlflow_name", "per", "k"}).encode("utf-8")).hexdigest()[:12]
    assert judge.version == f"custom-{digest}" == "custom-708b7a7b2eac"  # the version before per and k
    assert CustomJudge(_definition(UNIT_SCALE + "    integer: false\n"), JudgeSettings()).version != judge.version


# issue 60 item 14: the MLflow feedback name a definition gives is no part of its prompt version (its cache stays)
def test_an_mlflow_name_keeps_the_prompt_version_and_names_the_shape():
    from ragjudge.config import JudgeSettings
    from ragjudge.judges.custom import CustomJudge
    from ragjudge.types import TRACE, MetricShape

    plain = CustomJudge(_definition(UNIT_SCALE), JudgeSettings())
    named = CustomJudge(_definition(UNIT_SCALE + "    mlflow_name: my_feedback\n"), JudgeSettings())
    assert named.version == plain.version
    assert named.shape() == MetricShape(level=TRACE, binary=False, mlflow_name="my_feedback")  # needs the response only
    assert plain.shape().mlflow_name is None


# issue 60 item 14: each metric's level, kind and MLflow name, from its definition (what the trace sinks read)
def test_the_config_gives_each_metrics_shape_from_its_definition():
    import ragjudge
    from ragjudge.types import SPAN, TRACE, MetricShape

    config = ragjudge.load_config()
    assert config.shape("sufficiency") == MetricShape(SPAN, True, "retrieval_sufficiency")
    assert config.shape("groundedness") == MetricShape(SPAN, True, "retrieval_groundedness")
    assert config.shape("completeness") == MetricShape(TRACE, False, "response_completeness")
    with pytest.raises(KeyError):
        config.shape("relevance")  # not defined here


ODD = """\
judges:
  - name: cites_title
    needs: [response, source-title]
    prompt: |
      Does the response name the source titled below?
      {{ PLACE }}
      {{ response }}
"""


# peer report (issue 29 item 10): a needed column whose name is not an identifier (promptfoo#244)
def test_a_column_named_source_title_is_reached_as_columns_item(run_score, tmp_path, judge):
    path = tmp_path / "c.yaml"
    path.write_text(ODD.replace("PLACE", "columns['source-title']"))
    judge.keep_requests = True
    result, rows = _score(run_score, tmp_path, [{"id": "a", "response": "See the Paris guide.", "source-title": "Paris guide"}],
                          metric=["cites_title"], config=str(path))
    assert result.code == 0, result.text
    prompt = judge.requests[0]["messages"][-1]["content"]
    assert '<data name="source-title">\nParis guide\n</data>' in prompt
    assert rows[0]["cites_title_status"] == "ok"


# peer report (issue 29 item 10): a needed column whose name is not an identifier (promptfoo#244)
def test_the_message_for_a_name_that_is_not_an_identifier_shows_the_columns_form(run_score, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(ODD.replace("PLACE", "source-title"))
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [{"id": "a"}]), metric=["cites_title"], config=str(path))
    assert result.code == 2
    assert "unknown field(s) source, title" in result.text
    assert "{{ columns['source-title'] }}" in result.text


# peer report (issue 29 item 10): a needed column whose name is not an identifier (promptfoo#244)
def test_every_needed_field_is_in_columns_whatever_its_name():
    # another shape: canonical fields and identifier columns are there too, and examples render with them
    from ragjudge.config import JudgeSettings
    from ragjudge.judges.custom import CustomJudge
    from ragjudge.records import EvalRecord

    text = ODD.replace("PLACE", "columns['response'] }} {{ columns.title }} {{ columns['source-title']").replace(
        "needs: [response, source-title]", "needs: [response, title, source-title]")
    text += "    examples:\n      - inputs: {response: r, title: t, source-title: s}\n        verdict: yes\n"
    judge = CustomJudge(_definition(text), JudgeSettings())
    record = EvalRecord(index=0, response="Named.", extra={"title": "T1", "source-title": "S1"})
    user = judge.render(record)[-1]["content"]
    assert user.count("Named.") == 2
    assert '<data name="title">\nT1\n</data>' in user and '<data name="source-title">\nS1\n</data>' in user

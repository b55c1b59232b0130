"""Faults of the judges found by replaying peers' bug reports (issue 29, items 1, 6, 8 and 10).
Each has the issue's case with its right value, and a second test of the same kind in another
shape. The end-to-end cases run through the library against the in-process fake judge's
scripted replies (the unit tier)."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl

ROW = {"id": "r1", "request": "Who wrote Hamlet?", "context": ["Hamlet is a tragedy written by William Shakespeare."]}
COMPLETE_ROW = {"id": "c1", "request": "Where and when was the treaty signed?", "response": "In Lisbon, in March 1911.",
                "expected_facts": ["The treaty was signed in Lisbon.", "It was signed in March 1911."]}


def _score(run_score, tmp_path, rows, **options) -> tuple[object, list[dict]]:
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), output=str(out), min_pass_rate=["0"], **options)
    return result, read_jsonl(out)


# 1. Text after the verdict does not change it (promptfoo#1166)

def test_a_quoted_no_after_a_fenced_yes_verdict_leaves_the_verdict_yes(run_score, tmp_path, judge):
    verdict = {"needed": "the author of Hamlet", "quote": "Hamlet is a tragedy written by William Shakespeare.",
               "rationale": "The passage names the author.", "verdict": "yes"}
    judge.replies.append("```json\n" + json.dumps(verdict) + '\n```\nA reply such as {"verdict": "no"} would be wrong here.')
    result, rows = _score(run_score, tmp_path, [ROW], metric=["sufficiency"])
    assert result.code == 0, result.text
    assert judge.calls == 1
    assert (rows[0]["sufficiency_status"], rows[0]["sufficiency_score"]) == ("ok", 1.0)
    assert rows[0]["sufficiency_rationale"] == "The passage names the author."


def test_a_completeness_score_quoted_after_the_reply_does_not_replace_it(run_score, tmp_path, judge):
    reply = {"statements": [{"statement": 1, "covered": True}, {"statement": 2, "covered": True}],
             "rationale": "Both statements are in the response.", "score": 5}
    judge.replies.append(json.dumps(reply) + ' A response that said nothing would be scored like {"score": 1}.')
    result, rows = _score(run_score, tmp_path, [COMPLETE_ROW], metric=["completeness"])
    assert result.code == 0, result.text
    assert (rows[0]["completeness_status"], rows[0]["completeness_score"]) == ("ok", 5.0)


def test_prose_before_the_verdict_quoting_an_object_is_skipped_for_the_first_that_fits():
    # another shape: the quoted object comes first, but it does not fit the schema (no score,
    # no statements), so the reply's own verdict further on decides; a custom judge likewise
    from ragjudge.judges.base import load_reply

    schema = {"type": "object", "properties": {"rationale": {}, "verdict": {}}, "required": ["rationale", "verdict"]}
    text = 'Unlike {"verdict": "no"}, I find: {"rationale": "stated", "verdict": "yes"} and {"rationale": "x", "verdict": "no"}'
    assert load_reply(text, schema) == {"rationale": "stated", "verdict": "yes"}
    assert load_reply('{"verdict": "yes"} then {"verdict": "no"}', schema) == {"verdict": "yes"}  # none fits whole: the first
    assert load_reply('{"a": 1} {"b": 2}') == {"a": 1}  # no schema: the first object


# 6. A 0..1 custom scale is a number (langfuse#11604)

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


def test_a_fraction_in_reply_to_a_whole_number_scale_is_an_error_row(run_score, tmp_path, judge):
    path = tmp_path / "c.yaml"
    path.write_text(UNIT_SCALE.replace("min: 0\n    max: 1\n    threshold: 0.7", "min: 1\n    max: 5\n    threshold: 3"))
    judge.replies.extend([json.dumps({"rationale": "r", "score": 3.5})] * 2)  # the call and its re-ask
    result, rows = _score(run_score, tmp_path, [{"id": "a", "response": "Paris."}], metric=["relevance"], config=str(path))
    assert rows[0]["relevance_status"] == "error" and rows[0]["relevance_score"] is None
    assert "not a whole number" in rows[0]["relevance_error"]
    assert result.code == 3


def test_a_definition_without_integer_keeps_its_prompt_version():
    # caches of definitions written before integer: stay valid
    import hashlib

    from ragjudge.judges.custom import CustomJudge
    from ragjudge.config import JudgeSettings

    definition = _definition(UNIT_SCALE)
    judge = CustomJudge(definition, JudgeSettings())
    digest = hashlib.sha256(definition.model_dump_json(exclude={"integer"}).encode("utf-8")).hexdigest()[:12]
    assert judge.version == f"custom-{digest}"
    assert CustomJudge(_definition(UNIT_SCALE + "    integer: false\n"), JudgeSettings()).version != judge.version


# 8. An even number of samples never passes on a tie (inspect_ai#3840)

def _samples_of(scores: list[int]):
    from ragjudge.judges import judge_class
    from ragjudge.config import JudgeSettings
    from ragjudge.types import OK, Verdict

    judge = judge_class("completeness")(JudgeSettings(samples=len(scores)), 3.0)
    samples = [Verdict(metric="completeness", status=OK, score=float(s)) for s in scores]
    return judge, samples


@pytest.mark.parametrize("scores, threshold, score, passed", [
    pytest.param("2,3", 3, 2.0, False, id="two_three"),
    pytest.param("3,4", 4, 3.0, False, id="three_four"),
])
def test_two_samples_take_the_lower_middle_score(run_score, tmp_path, judge, scores, threshold, score, passed):
    reply = lambda n: json.dumps({"statements": [{"statement": 1, "covered": True}, {"statement": 2, "covered": False}],  # noqa: E731
                                  "rationale": "r", "score": n})
    judge.replies.extend(reply(int(s)) for s in scores.split(","))
    result, rows = _score(run_score, tmp_path, [COMPLETE_ROW], metric=["completeness"], samples=2,
                          threshold=[f"completeness={threshold}"])
    assert result.code == 0, result.text
    assert (rows[0]["completeness_score"], rows[0]["completeness_passed"]) == (score, passed)
    assert rows[0]["completeness_agreement"] == 0.5


def test_four_samples_take_the_lower_middle_and_agreement_is_the_share_agreeing():
    judge, samples = _samples_of([5, 3, 2, 4])
    combined = judge.combine(samples)
    assert (combined.score, combined.passed, combined.agreement) == (3.0, True, 0.25)
    judge, samples = _samples_of([4, 4, 2, 2])
    combined = judge.combine(samples)
    assert (combined.score, combined.passed, combined.agreement) == (2.0, False, 0.5)
    judge, samples = _samples_of([1, 5, 3])  # an odd number: the middle, as before
    assert judge.combine(samples).score == 3.0


# 10. A needed column whose name is not an identifier (promptfoo#244)

ODD = """\
judges:
  - name: cites_title
    needs: [response, source-title]
    prompt: |
      Does the response name the source titled below?
      {{ PLACE }}
      {{ response }}
"""


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


def test_the_message_for_a_name_that_is_not_an_identifier_shows_the_columns_form(run_score, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(ODD.replace("PLACE", "source-title"))
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [{"id": "a"}]), metric=["cites_title"], config=str(path))
    assert result.code == 2
    assert "unknown field(s) source, title" in result.text
    assert "{{ columns['source-title'] }}" in result.text


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

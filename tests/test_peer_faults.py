"""Faults found by replaying peers' bug reports and a new user's trial (issue 20). Each kind
of fault has the example's right value as a test, and a second test of the same kind."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl
from ragjudge.config import JudgeSettings
from ragjudge.judges import sufficiency
from ragjudge.judges.sufficiency import SufficiencyJudge
from ragjudge.records import EvalRecord, Passage
from ragjudge.types import ParseError

FACTS = ["The treaty was signed in Lisbon.", "It was signed in March 1911.", "Portugal and Spain signed it."]
PASSAGES = [Passage("The treaty was signed in Lisbon in March 1911.")]


def grounded_call(settings: JudgeSettings | None = None):
    judge = SufficiencyJudge(settings or JudgeSettings())
    return judge, judge.prepare(EvalRecord(index=0, request="Where and when was the treaty signed?", passages=PASSAGES, expected_facts=FACTS))


def reply(facts: list[dict], verdict: str = "yes") -> str:
    return json.dumps({"facts": facts, "rationale": "r", "verdict": verdict})


# 1. Per-fact verdicts decide grounded sufficiency

def test_a_fact_judged_unsupported_decides_no_whatever_the_overall_verdict():
    _, call = grounded_call()
    verdict = sufficiency.parse(reply([{"fact": 1, "supported": False}, {"fact": 2, "supported": True}]), call)  # fact 3 omitted
    assert (verdict.score, verdict.missing) == (0.0, ["The treaty was signed in Lisbon."])


@pytest.mark.parametrize("facts", [
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}], id="omitted"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}, {"fact": 7, "supported": True}], id="numbered_outside"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}, {"fact": 2, "supported": True}], id="duplicated"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}, {"fact": 3, "supported": "maybe"}], id="not_boolean"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 1, "supported": False}, {"fact": 2, "supported": True},
                  {"fact": 3, "supported": True}], id="contradicted"),
])
def test_an_unjudged_fact_is_never_a_yes(facts):
    _, call = grounded_call()
    with pytest.raises(ParseError, match="not judged"):
        sufficiency.parse(reply(facts), call)


def test_an_unjudged_fact_is_asked_again_then_an_error_row(run_cli, tmp_path, server):
    incomplete = reply([{"fact": 1, "supported": True, "passages": [1], "reason": "p1"}])
    server.replies.extend([incomplete, incomplete])
    row = {"id": "r", "request": "Where and when was the treaty signed?", "context": [PASSAGES[0].text], "expected_facts": FACTS}
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [row]), "-m", "sufficiency", "-o", str(out)])
    scored = read_jsonl(out)[0]
    assert result.code == 3 and server.calls == 2
    assert scored["sufficiency_status"] == "error" and scored["sufficiency_score"] is None
    assert scored["sufficiency_error"] == "unreadable judge reply: fact(s) 2, 3 of 3 not judged"


# 2. Reasoning before the verdict, for hosted judges

def test_hosted_judges_are_asked_for_the_reasoning_before_each_verdict(run_cli, tmp_path, server):
    server.keep_requests = True
    rows = [{"id": "g", "request": "Where was it signed?", "context": ["It was signed in Lisbon."], "expected_response": "Lisbon"},
            {"id": "f", "request": "Where was it signed?", "context": ["It was signed in Lisbon."]}]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    schemas = {body["response_format"]["json_schema"]["name"]: body["response_format"]["json_schema"]["schema"] for body in server.requests}
    fact = schemas["sufficiency_grounded"]["properties"]["facts"]["items"]["properties"]
    assert list(fact) == ["fact", "passages", "reason", "supported"]
    assert list(schemas["sufficiency_grounded"]["properties"]) == ["facts", "rationale", "verdict"]
    assert list(schemas["sufficiency_reference_free"]["properties"]) == ["needed", "quote", "rationale", "verdict"]


def test_the_embedded_judge_keeps_its_measured_order_under_its_own_prompt_version():
    local_judge, local_call = grounded_call(JudgeSettings(model="local/qwen2.5-coder-1.5b"))
    hosted_judge, hosted_call = grounded_call(JudgeSettings(model="openai/gpt-4o-mini"))
    local_fact = local_call.response_format["json_schema"]["schema"]["properties"]["facts"]["items"]["properties"]
    assert list(local_fact) == ["fact", "supported", "passages", "reason"]
    assert local_call.version == sufficiency.PROMPT_VERSION != hosted_call.version == sufficiency.REASONING_FIRST_VERSION
    chosen, _ = grounded_call(JudgeSettings(model="openai/gpt-4o-mini", reasoning_first=False))
    assert chosen.version == sufficiency.PROMPT_VERSION

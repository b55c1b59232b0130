"""The abstention metric (``ragjudge.judges.abstention``): does the response decline to answer?
Judged by the fake judge's visible rule (``fake_rule.DECLINES``), scripted replies and
log-probabilities; a row without a response is skipped."""

from __future__ import annotations

import json

import pandas as pd

from conftest import write_jsonl

ROWS = [
    {"id": "declines", "request": "Who wrote it?", "context": ["A page."], "response": "I don't know; the passages do not say."},
    {"id": "answers", "request": "Who wrote it?", "context": ["A page."], "response": "Jane Austen wrote it."},
    {"id": "asks", "request": "Where is it?", "context": ["A page."], "response": "Could you give me more context about which town?"},
    {"id": "empty", "request": "Who wrote it?", "context": ["A page."], "response": ""},
]


def test_the_fake_judge_says_which_responses_decline_and_skips_a_row_without_one(tmp_path, run_score, judge):
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), metric=["abstention"], output=str(out), min_pass_rate=["0"])
    assert done.code == 0, done.text
    frame = pd.read_json(out, lines=True)
    assert frame["abstention_status"].tolist() == ["ok", "ok", "ok", "skipped"]
    assert frame["abstention_score"].tolist()[:3] == [1.0, 0.0, 1.0]
    assert frame["abstention_passed"].tolist()[:3] == [True, False, True]
    assert "no response" in frame["abstention_error"].tolist()[3]
    assert len(judge.requests) == 3  # one call per row with a response
    prompt = judge.requests[0]["messages"][-1]["content"]
    assert "<response>\nI don't know; the passages do not say.\n</response>" in prompt and "<context>" not in prompt  # never the context
    assert done.gate.checks and done.result.summary.metrics["abstention"].ok == 3


def test_the_reply_decides_and_a_reply_without_a_verdict_is_an_error(tmp_path, run_score, judge):
    judge.replies.extend(['{"verdict": "no", "rationale": "It names Austen."}', '{"rationale": "no verdict"}', '{"rationale": "still none"}'])
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", ROWS[:2]), metric=["abstention"], output=str(out), concurrency=1, min_pass_rate=["0"],
              max_error_rate=1.0)
    frame = pd.read_json(out, lines=True)
    # the first row's scripted "no" overrides the rule (its response declines); the second's replies have no verdict
    assert frame["abstention_score"].tolist()[0] == 0.0 and frame["abstention_rationale"].tolist()[0] == "It names Austen."
    assert frame["abstention_status"].tolist()[1] == "error" and "no yes/no verdict" in frame["abstention_error"].tolist()[1]


def test_yes_threshold_decides_on_p_yes_read_from_the_verdict_token(tmp_path, run_score, judge):
    config = tmp_path / "c.yaml"
    config.write_text("abstention:\n  yes_threshold: 0.9\n", encoding="utf-8")
    judge.p_yes = 0.8  # the fake's P(yes) at the verdict token: below 0.9, so every yes becomes no
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", ROWS[:2]), metric=["abstention"], output=str(out), config=str(config), min_pass_rate=["0"])
    frame = pd.read_json(out, lines=True)
    assert frame["abstention_score"].tolist() == [0.0, 0.0]
    assert frame["abstention_rationale"].tolist()[0].startswith("probability check: P(yes) 0.80 < yes_threshold 0.9, so no")
    assert json.loads(json.dumps(frame["abstention_probability"].tolist())) == [0.8, 0.8]  # the fake spreads 0.8 on yes at every verdict token


def test_abstentions_pass_rate_is_no_quality_so_its_default_floor_is_zero(tmp_path, run_score):
    # its pass rate is the share declined: the default floor of 1.0 the other metrics have would fail every run that answers
    done = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS[1:2]), metric=["abstention"])
    assert done.code == 0, done.text
    assert "PASS abstention: pass rate 0.00 >= 0.00" in done.text

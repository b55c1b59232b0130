"""A row's faults stay in its row (issue 44 item 1): whatever goes wrong inside one row's
judging (a transport or parser that raises something unplanned, a judge step that fails) is
that row's error, with the exception's type, never the end of the run; and the waits and reply
budgets that decide whether a row can be judged at all (items 2 and 3)."""

from __future__ import annotations

import pytest

from conftest import read_jsonl, write_jsonl
from helpers import THREE_COMPLETE_ROWS as ROWS
from ragjudge.http_errors import RETRY_AFTER_MAX_S
from ragjudge.model import asked_wait


class _Odd(Exception):
    """An exception no step of ragjudge plans for."""


def test_a_transport_that_raises_something_unplanned_fails_only_that_row(run_score, judge, tmp_path, monkeypatch):
    real = judge.complete

    async def flaky(request):
        if "landmark 1?" in str(request.messages):
            raise _Odd("the socket library changed its mind")
        return await real(request)

    monkeypatch.setattr(judge, "complete", flaky)
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), metric=["sufficiency"], output=str(out), min_pass_rate=["0"],
                    max_error_rate=["0.5"])
    rows = read_jsonl(out)
    assert run.code == 0 and [r["sufficiency_status"] for r in rows] == ["ok", "error", "ok"]
    assert rows[1]["sufficiency_error"] == "unexpected _Odd: the socket library changed its mind"


def test_a_parser_that_raises_something_unplanned_fails_only_that_row(run_score, judge, tmp_path, monkeypatch):
    from ragjudge.judges.completeness import CompletenessJudge

    real = CompletenessJudge.parse

    def parse(self, reply, call):
        if "city 2" in str(call.messages):
            raise KeyError("statements")
        return real(self, reply, call)

    monkeypatch.setattr(CompletenessJudge, "parse", parse)
    rows = [{**row, "response": row["expected_response"]} for row in ROWS]
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["completeness"], output=str(out), min_pass_rate=["0"],
                    max_error_rate=["0.5"])
    written = read_jsonl(out)
    assert run.code == 0 and [r["completeness_status"] for r in written] == ["ok", "ok", "error"]
    assert written[2]["completeness_error"] == "unexpected KeyError: 'statements'"


def test_a_judge_step_before_any_call_that_raises_fails_only_that_row(run_score, tmp_path, monkeypatch):
    from ragjudge.judges.sufficiency import SufficiencyJudge

    real = SufficiencyJudge.prepare

    def prepare(self, record):
        if record.id == "r0":
            raise ZeroDivisionError("division by zero")
        return real(self, record)

    monkeypatch.setattr(SufficiencyJudge, "prepare", prepare)
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", ROWS), metric=["sufficiency"], output=str(out), min_pass_rate=["0"],
                    max_error_rate=["0.5"])
    written = read_jsonl(out)
    assert run.code == 0 and [r["sufficiency_status"] for r in written] == ["error", "ok", "ok"]
    assert written[0]["sufficiency_error"] == "unexpected ZeroDivisionError: division by zero"


@pytest.mark.parametrize("after, step, waited", [
    (None, 0.5, 0.5),          # no header: the backoff
    (0.0, 0.5, 0.5),           # Retry-After: 0 (or a date in the past, read as 0)
    (-3.0, 0.5, 0.5),          # below zero
    (float("nan"), 0.5, 0.5),  # unreadable
    (0.2, 0.5, 0.5),           # shorter than the backoff's next step
    (7.0, 0.5, 7.0),           # longer: honoured
    (10_000.0, 0.5, RETRY_AFTER_MAX_S),  # up to the cap
])
def test_a_servers_wait_never_shortens_the_backoff(after, step, waited):
    assert asked_wait(after, step) == waited


def test_a_grounded_call_asks_for_a_reply_budget_that_fits_its_facts(run_score, judge, tmp_path):
    facts = [f"Landmark 1 has property {i} of the city" for i in range(60)]
    rows = [{"id": "many", "request": "What is landmark 1 like?", "context": [" ".join(facts)], "expected_facts": facts},
            {"id": "few", "request": "What is landmark 1 like?", "context": [" ".join(facts)], "expected_facts": facts[:3]}]
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], output=str(out), min_pass_rate=["0"])
    assert run.code == 0 and [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok", "ok"]
    budgets = sorted(request.max_tokens for request in judge.sent)
    assert budgets == [1024, 150 + 60 * 60]  # a row of a few facts keeps judge.max_tokens (and its cache key)
    judge.sent.clear()
    run_score(write_jsonl(tmp_path / "in2.jsonl", rows[:1]), metric=["sufficiency"], min_pass_rate=["0"], no_cache=True,
              set_=["judge.max_tokens=8000"])
    assert [request.max_tokens for request in judge.sent] == [8000]  # a larger judge.max_tokens wins

"""Every judge call's reply budget grows with what the reply must write (issue 60 item 22; issue
44's rule, first made for grounded sufficiency, for every call): with the embedded judge's
``judge.max_tokens`` of 512, 4 of 30 held-out SQuALITY rows ended "reply truncated at
max_tokens=512", the statements call writing a long ground truth again. The in-process fake
cuts a reply at max_tokens as a provider does (4 characters a token)."""

from __future__ import annotations

import json

from conftest import read_jsonl, shared_file, write_jsonl
from ragjudge.config import JudgeSettings
from ragjudge.judges import completeness
from ragjudge.judges.completeness import CompletenessJudge
from ragjudge.records import EvalRecord

LOCAL = "configs/local.yaml"  # the embedded judge's bundled settings: judge.max_tokens 512


def _longest_squality_rows(count: int) -> list[dict]:
    """The ``count`` SQuALITY rows of the shared data with the longest ground truths, one per truth."""
    rows = read_jsonl(shared_file("squality_completeness_dev.jsonl"))
    seen: set[str] = set()
    picked = []
    for row in sorted(rows, key=lambda r: (-len(r["expected_response"]), r["id"])):
        if row["expected_response"] not in seen:
            seen.add(row["expected_response"])
            picked.append({k: row[k] for k in ("id", "request", "response", "expected_response")})
    return picked[:count]


def _statements_requests(judge) -> list[dict]:
    return [r for r in judge.requests if r["response_format"]["json_schema"]["name"] == "completeness_statements"]


def test_the_longest_ground_truths_are_judged_at_the_embedded_judges_budget(run_score, judge, tmp_path):
    # the statements reply to a 2,858-character truth (28 sentences) was cut at 512: an error row
    rows = _longest_squality_rows(3)
    assert [len(r["expected_response"]) for r in rows] == [2858, 2699, 2645]
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["completeness"], config=LOCAL, output=str(out),
                    min_pass_rate=["0"])
    scored = read_jsonl(out)
    assert run.code == 0, run.error
    assert [r["completeness_status"] for r in scored] == ["ok"] * 3, [r["completeness_error"] for r in scored]
    # each statements call asked for 100 + 1.5 x its truth's UTF-8 bytes / 4 (2,874, 2,699 and 2,645 bytes), the 512 of the config below it
    assert [r["max_tokens"] for r in _statements_requests(judge)] == [1178, 1113, 1092]
    # every sentence came back as a statement (28, 18 and 16), the 28 judged in two coverage calls (20 + 8): 150 + 20 a statement
    coverage = [r for r in judge.requests if r["response_format"]["json_schema"]["name"] == "completeness"]
    assert sorted(r["max_tokens"] for r in coverage) == [512, 512, 512, 550]


def test_a_short_ground_truth_keeps_its_request_and_cache_key(run_score, judge, tmp_path):
    # the budget only ever raises judge.max_tokens: a truth of a few sentences asks for 512, as before
    row = {"id": "short", "request": "Who wrote it?", "expected_response": "Ann wrote it. She wrote it in 1900.",
           "response": "Ann wrote it in 1900."}
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [row]), metric=["completeness"], config=LOCAL, min_pass_rate=["0"])
    assert run.code == 0, run.error
    assert [r["max_tokens"] for r in judge.requests] == [512, 512]


def test_twenty_statements_in_one_coverage_call_are_judged_under_a_small_budget(run_score, judge, tmp_path):
    # the second shape: the coverage call writes a mark per statement; 20 expected facts under
    # judge.max_tokens 100 were cut (the fake's reply: 205 tokens)
    words = ("apple bridge castle donkey engine falcon garden harbor island jungle kettle ladder meadow needle orchard parrot quarry "
             "river saddle temple valley walrus yellow zipper anchor barrel candle desert feather glacier hammer iceberg jacket kitten "
             "lantern marble nectar oyster pepper quartz rabbit").split()
    facts = [f"The {words[2 * i]} and the {words[2 * i + 1]}" for i in range(20)]
    row = {"id": "facts", "request": "What is the tower like?", "expected_facts": facts, "response": " ".join(facts[:10])}
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [row]), metric=["completeness"], set_=["judge.max_tokens=100"], output=str(out),
                    min_pass_rate=["0"])
    scored = read_jsonl(out)[0]
    assert run.code == 0, run.error
    assert scored["completeness_status"] == "ok", scored["completeness_error"]
    assert scored["completeness_score"] == 3.0 and len(scored["completeness_missing"]) == 10
    assert [r["max_tokens"] for r in judge.requests] == [550]


def test_the_statements_budget_counts_bytes_so_other_scripts_get_theirs():
    # a truth in a script of 3-byte characters has about 3 times the tokens of its length in characters / 4
    judge = CompletenessJudge(JudgeSettings())
    english = judge.prepare(EvalRecord(index=0, request="q", response="r", expected_response="a" * 400))
    chinese = judge.prepare(EvalRecord(index=0, request="q", response="r", expected_response="\u5b57" * 400))
    assert (english.reply_tokens, chinese.reply_tokens) == (250, 550)
    assert completeness.statements_budget("") == 100


def test_a_claims_judge_on_the_longest_response_is_judged_at_the_embedded_judges_budget(run_score, judge, tmp_path):
    # the bundled groundedness judge writes the response again, claim by claim, each with a reason:
    # the longest SQuALITY response (3,019 characters) as its own passage was cut at 512
    rows = read_jsonl(shared_file("squality_completeness_dev.jsonl"))
    response = max(rows, key=lambda r: (len(r["response"]), r["id"]))["response"]
    row = {"id": "long", "request": "What happens in the story?", "context": [response], "response": response}
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [row]), metric=["groundedness"], config=LOCAL, output=str(out), min_pass_rate=["0"])
    scored = read_jsonl(out)[0]
    assert run.code == 0, run.error
    assert (scored["groundedness_status"], scored["groundedness_score"]) == ("ok", 1.0), scored["groundedness_error"]
    # 150 + 1.5 x 3,019 bytes / 4 + 40 x its 37 sentences (a reason each)
    assert [r["max_tokens"] for r in judge.requests] == [2763]


def test_the_dry_runs_most_output_tokens_count_each_calls_own_budget(run_score, judge, tmp_path):
    # the upper bound was calls x judge.max_tokens: 2 x 512 for a statements call that may write 1,178
    row = _longest_squality_rows(1)[0]
    summary = tmp_path / "dry.json"
    dry = run_score(write_jsonl(tmp_path / "in.jsonl", [row]), metric=["completeness"], config=LOCAL, dry_run=True,
                    summary_json=str(summary))
    assert dry.code == 0 and judge.calls == 0
    figures = json.loads(summary.read_text())["dry_run"]["metrics"]["completeness"]
    # the statements call's 1,178 and the coverage call's 512 (rendered from 8 of the truth's sentences: 150 + 8 x 20 = 310 < 512)
    assert (figures["calls"], figures["max_completion_tokens"]) == (2, 1178 + 512)

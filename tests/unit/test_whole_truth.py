"""A response that states the whole ground truth is complete (issue 44 item 9): ground truth and
response both "quantum electrodynamics" scored 2.3 with the offline judge, failed, its "missing"
statements made of the request's words. Whatever the statements call adds from the request, a
response holding the ground truth word for word scores 5; statements that share no word with
the ground truth are not judged."""

from __future__ import annotations

import json

from conftest import read_jsonl, write_jsonl

ROW = {"id": "qed", "request": "What electromagnetic theory finally led to the unification of light and matter?",
       "expected_response": "quantum electrodynamics", "response": "quantum electrodynamics"}


def _statements(*items):
    return json.dumps({"statements": list(items)})


def _coverage(covered, score):
    return json.dumps({"statements": [{"statement": i + 1, "covered": flag} for i, flag in enumerate(covered)], "rationale": "r",
                       "score": score})


def test_a_response_identical_to_the_ground_truth_scores_5(run_score, judge, tmp_path):
    # the statements call took words of the request; the coverage call marked them missing
    judge.replies.extend([_statements("quantum electrodynamics", "electromagnetic theory", "finally led to"), _coverage([False], 2)])
    out = tmp_path / "out.jsonl"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [ROW]), metric=["completeness"], output=str(out), min_pass_rate=["1"])
    row = read_jsonl(out)[0]
    assert run.code == 0 and (row["completeness_score"], row["completeness_passed"], row["completeness_missing"]) == (5.0, True, [])
    assert row["completeness_rationale"] == ("2 statement(s) the statements call wrote share no word with the ground truth (taken from "
                                             "the request, say) and were not judged. the response states the whole ground truth word "
                                             "for word, so 5. r")
    coverage = judge.requests[-1]["messages"][-1]["content"]
    listed = coverage.split("<statements>")[1].split("</statements>")[0]
    assert listed.strip() == "[1] quantum electrodynamics"  # only the truth's statement judged


def test_every_fact_word_for_word_scores_5_and_a_paraphrase_or_negation_does_not(run_score, judge, tmp_path):
    facts = ["The tower is in Paris", "It was built in 1889"]
    rows = [{"id": "all", "request": "Tell me about the tower.", "expected_facts": facts,
             "response": "Well: the tower is in Paris, and it was built in 1889!"},
            {"id": "not", "request": "Tell me about the tower.", "expected_facts": facts,
             "response": "The tower is not in Paris, and it was built in 1889."}]
    judge.replies.extend([_coverage([True, False], 3), _coverage([True, False], 3)])
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["completeness"], output=str(out), min_pass_rate=["0"])
    written = {r["id"]: r for r in read_jsonl(out)}
    assert written["all"]["completeness_score"] == 5.0
    assert written["not"]["completeness_score"] == 3.0 and written["not"]["completeness_missing"] == ["It was built in 1889"]


def test_statements_sharing_no_word_with_the_truth_are_left_out_unless_all_would_be():
    from ragjudge.judges.completeness import grounded

    assert grounded(["quantum electrodynamics", "electromagnetic theory"], "quantum electrodynamics") == (["quantum electrodynamics"], 1)
    assert grounded(["Paris", "France"], "The capital is Paris.") == (["Paris"], 1)
    assert grounded(["unrelated words"], "quantum electrodynamics") == (["unrelated words"], 0)  # never none at all

"""The judges' own probabilities (issue 61 item 4): the embedded judge and a chat judge whose reply
carries log-probabilities fill ``Verdict.probability`` (sufficiency: P(yes); completeness: P(pass)
and the level distribution read at the score token), so ``M_probability`` is in the table;
``sufficiency_p_yes``, its older name, keeps its values."""

from __future__ import annotations

import pytest

from conftest import read_jsonl, write_jsonl
from helpers import GROUNDED, REF_FREE
from ragjudge.judges.completeness import score_probabilities


def _config(tmp_path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return str(path)


def test_a_reference_free_p_yes_is_the_verdicts_probability_and_keeps_its_older_column(run_score, tmp_path, judge):
    judge.p_yes = 0.73
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [REF_FREE]), metric=["sufficiency"], min_pass_rate=["0"], output=str(out),
                       config=_config(tmp_path, "sufficiency:\n  yes_threshold: 0.7\n"))
    assert result.code == 0, result.text
    row = read_jsonl(out)[0]
    assert row["sufficiency_probability"] == pytest.approx(0.73)
    assert row["sufficiency_p_yes"] == pytest.approx(0.73)
    assert row["sufficiency_score"] == 1.0  # 0.73 >= yes_threshold 0.7


def test_the_probability_is_read_again_from_the_cache_under_another_threshold(run_score, tmp_path, judge):
    judge.p_yes = 0.73
    source = write_jsonl(tmp_path / "in.jsonl", [REF_FREE])
    first = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "a.jsonl"),
                      config=_config(tmp_path, "sufficiency:\n  yes_threshold: 0.7\n"))
    again = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "b.jsonl"),
                      set_=["sufficiency.yes_threshold=0.9"])
    assert (first.code, again.code) == (0, 0)
    assert judge.calls == 1  # the second run is answered by the cache
    row = read_jsonl(tmp_path / "b.jsonl")[0]
    assert (row["sufficiency_probability"], row["sufficiency_score"]) == (pytest.approx(0.73), 0.0)


def test_grounded_with_fact_threshold_gives_the_least_p_supported(run_score, tmp_path, judge):
    judge.p_true = 0.64
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [GROUNDED]), metric=["sufficiency"], min_pass_rate=["0"], output=str(out),
                       config=_config(tmp_path, "sufficiency:\n  fact_threshold: 0.5\n  ground_truth: facts\n"))
    assert result.code == 0, result.text
    row = read_jsonl(out)[0]
    assert (row["sufficiency_mode"], row["sufficiency_probability"], row["sufficiency_score"]) == ("grounded", pytest.approx(0.64), 1.0)


def test_without_a_probability_setting_a_chat_judge_asks_no_log_probabilities_and_leaves_it_null(run_score, tmp_path, judge):
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [REF_FREE]), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    assert "logprobs" not in judge.requests[0]
    assert read_jsonl(out)[0]["sufficiency_probability"] is None


def test_completeness_gives_p_pass_and_the_level_distribution_from_the_score_token(run_score, tmp_path, judge):
    judge.p_scores = {2: 0.1, 3: 0.2, 4: 0.5, 5: 0.2}
    out = tmp_path / "out.jsonl"
    row = {**GROUNDED, "response": "It stands somewhere in Europe."}
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [row]), metric=["completeness"], min_pass_rate=["0"], output=str(out),
                       config=_config(tmp_path, "completeness:\n  expected_score: true\nthresholds:\n  completeness: 4\n"))
    assert result.code == 0, result.text
    got = read_jsonl(out)[0]
    assert got["completeness_distribution"] == pytest.approx([0.0, 0.1, 0.2, 0.5, 0.2])
    assert got["completeness_probability"] == pytest.approx(0.7)  # P(4) + P(5), the pass mark 4
    assert got["completeness_score"] == pytest.approx(3.8)  # the expected score, G-Eval


def test_score_probabilities_of_cached_string_levels():
    distribution, p_pass = score_probabilities({"1": 0.25, "3": 0.25, "5": 0.5}, 2.9)
    assert distribution == (0.25, 0.0, 0.25, 0.0, 0.5)
    assert p_pass == pytest.approx(0.75)

"""The word rules the checks after the cache share (ragjudge/judges/words.py, issue 32): one
module, imported by both judges; the quote match and what quotes nothing."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl
from ragjudge.judges import completeness, sufficiency, words

PASSAGES = ["Steam engines burned coal.", "The Eiffel Tower, in Paris, was completed in 1889 for the World's Fair."]


def test_both_judges_use_the_one_set_of_word_rules():
    assert sufficiency.evidence_share is words.evidence_share and sufficiency.evidence_shares is words.evidence_shares
    assert completeness.evidence_shares is words.evidence_shares
    assert words.evidence_shares(["She lived in Paris", "Ann wrote the book"], ["Ann wrote the book in Paris."]) == [0.5, 1.0]


@pytest.mark.parametrize("quote, match", [
    ("was completed in 1889", 1.0),                                          # a stretch of one passage, word for word
    ("THE EIFFEL TOWER in Paris was completed in 1889 for the World’s Fair!", 1.0),  # case, quotation marks, punctuation aside
    ("The Eiffel Tower in Paris was finished in 1889 for the World's Fair", 2 * 13 / 28),  # one word of 14 changed
    ("completed in 1889 for the Olympic Games", 2 * 5 / 14),                 # 5 of 7 words against the best 7-word stretch
    ("The Eiffel Tower was built in 1889 for the Olympic Games", 2 * 8 / 22),  # 8 of 11 in order (the eiffel tower was in 1889 for the)
    ("burned coal. The Eiffel Tower", 1.0),                                  # running on into the next passage
    ("Steam engines burned coal. The Eiffel Tower was completed", 2 * 7 / 18),  # of 9 words, 7 in the best 9-word stretch
    ("...", 0.0),
])
def test_quote_match_is_the_word_level_partial_ratio(quote, match):
    assert words.quote_match(quote, PASSAGES) == match


def test_a_quote_longer_than_the_passages_is_compared_whole():
    assert words.quote_match("Steam engines burned coal and wood.", ["Steam engines burned coal."]) == 2 * 4 / 10
    assert words.quote_match("anything", []) == 0.0


@pytest.mark.parametrize("quote, nothing", [(None, True), ("", True), ("NONE", True), (" none. ", True), ("N/A", True), ('"None"', True),
                                            ("null", True), ("No", False), ("None of the passages", False), ("1889", False)])
def test_quotes_nothing(quote, nothing):
    assert words.quotes_nothing(quote) is nothing


def test_check_statements_turns_only_covered_statements_below_the_share():
    from ragjudge.types import OK, Verdict

    verdict = Verdict(metric="completeness", status=OK, score=5.0, rationale="r", details={"covered": [True, False, True], "p_covered": [0.9, 0.2, 0.8]})
    turned = completeness.check_statements(verdict, ["a", "b", "c"], [0.4, 0.0, 0.5], 0.5)
    assert turned == 1
    assert verdict.details == {"covered": [False, False, True], "p_covered": [0.0, 0.2, 0.8]}
    assert verdict.missing == ["a", "b"] and verdict.rationale.endswith("so missing. r")
    assert completeness.blended_share(verdict.details, [0.4, 0.0, 0.5], 0.5) == pytest.approx((0.2 + 0.1 + 0.65) / 3)
    assert completeness.blended_share({"covered": [None, None]}, [1.0, 1.0], 0.5) is None  # nothing marked: the written score stands


# peer report (issue 20 item 8): the evidence check speaks only English
def test_the_evidence_share_drops_the_detected_languages_stop_words():
    from ragjudge.judges.sufficiency import detect_language, evidence_share, stop_words

    assert detect_language("La biblioteca fue financiada por la ciudad.") == "es"
    assert {"la", "por", "fue"} <= stop_words("es") and not stop_words("xx")
    assert evidence_share("La biblioteca fue financiada por la ciudad.", ["La biblioteca abre de lunes a viernes."]) == pytest.approx(1 / 3)


# peer report (issue 21)
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

"""``ragjudge.evaluate`` refuses an unknown keyword itself: named, with where a config setting
goes and the nearest keyword, never ``ScoreRequest.__init__``'s TypeError."""

from __future__ import annotations

from dataclasses import fields

import pytest

import ragjudge
from ragjudge.run import ScoreRequest

SAMPLE = "sample_data/rag_eval.jsonl"


@pytest.mark.parametrize("keyword, value, where", [
    ("at_k", [1, 3], 'config={"passage_relevance": {"at_k": [1, 3]}}'),
    ("metrics", ["passage_relevance"], 'the second argument, config={"metrics"'),
    ("max_rate", {"x": 0.1}, 'config={"gate": {"max_rate": '),
    ("min_pass_rate", {"sufficiency": 0.8}, 'config={"gate": {"min_pass_rate": '),
    ("gate_on", {"sufficiency": "judge"}, 'config={"gate": {"gate_on": '),
    ("correction", "bh", "ragjudge compare's (--correction)"),
])
def test_a_config_setting_given_as_a_keyword_says_where_it_goes(keyword, value, where):
    with pytest.raises(TypeError) as err:
        ragjudge.evaluate(SAMPLE, None, **{keyword: value})
    message = str(err.value)
    assert f"unknown keyword argument '{keyword}'" in message and where in message
    assert "ScoreRequest" not in message


def test_a_misspelt_keyword_names_the_nearest():
    with pytest.raises(TypeError, match="'junitt'.*the nearest keyword is 'junit'"):
        ragjudge.evaluate(SAMPLE, None, junitt="junit.xml")


def test_help_names_every_keyword():
    doc = ragjudge.evaluate.__doc__
    for field in fields(ScoreRequest):
        if field.name not in ("source", "row_events", "flagged"):  # source: the first argument; row_events: on_event's; flagged: request_of's
            assert field.name in doc.split("Keyword arguments:")[1], field.name

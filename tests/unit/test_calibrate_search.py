"""``ragjudge calibrate``'s search, in-process: the rounds it repeats and the bounds of the settings
it moves (the command itself: tests/test_calibrate_command.py)."""

from __future__ import annotations



def test_the_search_repeats_its_rounds_until_knobs_that_act_together_settle():
    # one round of the coordinate search left the grounded slice at fact_threshold 0.66 and
    # fact_evidence 0.9 from a neutral start (0.89 out of fold), where the two knobs together
    # reach 0.98 (bench/quality.py, 2026-12-05): the first knob was chosen before the second moved
    from ragjudge.calibrate import Knob, _search

    agreeing = {(0, 0): 1, (1, 0): 2, (2, 0): 3, (0, 1): 6, (1, 1): 0, (2, 1): 4}  # rows agreeing, of 6, per (a, b)
    labels = [True] * 6

    def decisions(key):
        setting = dict(key)
        return [i < agreeing[(setting["a"], setting["b"])] for i in range(6)]

    knobs = [Knob("a", (0, 1, 2)), Knob("b", (0, 1))]
    # round 1: a -> 2 (3 agree), b -> 1 (4); round 2: a -> 0 (6), b stays; round 3 changes nothing
    assert _search(decisions, knobs, {"a": 1, "b": 0}, labels, list(range(6))) == {"a": 0, "b": 1}


def test_the_searched_settings_state_the_bounds_their_judge_options_take():
    # the other shape, for every setting calibrate moves: the bounds it measures within are values the judge's options accept,
    # and a step past them is refused there (so a figure for it would be of a setting no config can hold)
    import pydantic
    import pytest

    from ragjudge.calibrate import knobs_of
    from ragjudge.judges.completeness import CompletenessSettings
    from ragjudge.judges.sufficiency import SufficiencySettings

    for metric, options in (("sufficiency", SufficiencySettings), ("completeness", CompletenessSettings)):
        for knob in knobs_of(metric):
            if knob.key == "threshold":
                assert knob.bounds == (1.0, 5.0)  # the 1..5 scale
                continue
            low, high = knob.bounds
            options(**{knob.key: low}), options(**{knob.key: high})
            for beyond in (round(low - 0.01, 2), round(high + 0.01, 2)):
                with pytest.raises(pydantic.ValidationError):
                    options(**{knob.key: beyond})

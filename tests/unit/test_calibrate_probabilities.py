"""``ragjudge calibrate`` and the thresholds on a judge that gives its probability itself (issue 61
item 5): a verdict whose ``probability`` came from the judge's reply (a decision model's predicate,
no token log-probabilities in ``details``) is decided by ``sufficiency.yes_threshold`` as the
embedded judge's P(yes) is, so calibrate's search fits it; and a panel mixing a member with probabilities and one without still decides every row."""

from __future__ import annotations

import pandas as pd

from conftest import read_jsonl, write_jsonl
from helpers import REF_FREE
from ragjudge import Scorer
from ragjudge.calibrate import Cached, Decisions, _key, _search, knobs_of
from ragjudge.judges import judge_class
from ragjudge.types import OK, Verdict


def _calls(judge, n: int):
    """``n`` reference-free sufficiency calls, as prepare makes them, and the judge."""
    frame = pd.DataFrame([{"request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."]} for i in range(n)])
    with Scorer(metrics=["sufficiency"], model="openai/fake", transport=judge) as scorer:
        made = scorer.judges[0]
        return made, [made.prepare(record) for record in scorer.records(frame, scorer.resolve(frame))]


def _given(p: float, written: float = 1.0) -> Verdict:
    """A raw verdict as a decision model's parse gives it: the written verdict and P(yes), no log-probabilities."""
    return Verdict("sufficiency", OK, score=written, probability=p, mode="reference_free")


def test_yes_threshold_decides_a_verdict_that_carries_its_own_probability(judge):
    made, (call,) = _calls(judge, 1)
    strict = judge_class("sufficiency")(made.settings, options=made.options.model_copy(update={"yes_threshold": 0.7}))
    decided = strict.decide(_given(0.6), call)
    assert (decided.score, decided.passed, decided.probability) == (0.0, False, 0.6)
    assert decided.rationale.startswith("probability check: P(yes) 0.60 < yes_threshold 0.7, so no (the judge wrote yes)")
    assert strict.decide(_given(0.75, written=0.0), call).score == 1.0
    assert made.decide(_given(0.6), call).score == 1.0  # no yes_threshold: the written verdict, as before


def test_calibrates_search_fits_yes_threshold_on_such_probabilities(judge):
    made, calls = _calls(judge, 40)
    # the labels say yes above P 0.62: the written verdicts (all yes) agree with 20 of 40
    ps = [0.30 + 0.6 * i / 39 for i in range(40)]
    labels = [p >= 0.62 for p in ps]
    rows = [Cached(i, made, call, _given(p)) for i, (call, p) in enumerate(zip(calls, ps))]
    decisions = Decisions(rows, _config(), "sufficiency")
    knob = next(k for k in knobs_of("sufficiency") if k.key == "yes_threshold")
    start = {k.key: None for k in knobs_of("sufficiency")}
    chosen = _search(decisions, [knob], start, labels, list(range(40)))
    passes = decisions(_key(chosen))
    assert passes == labels  # every label met
    assert 0.60 < chosen["yes_threshold"] <= 0.62
    assert sum(decisions(_key(start))) == 40  # the written verdicts, before: every row yes


def _config():
    from ragjudge.settings import load_config

    return load_config(None, {"judge": {"model": "openai/fake"}, "metrics": ["sufficiency"]})


def test_a_panel_mixing_a_member_with_probabilities_and_one_without_decides_every_row(run_score, judge, tmp_path):
    import dataclasses

    judge.p_yes = 0.6  # below yes_threshold 0.7: the member read by its P(yes) says no, the written verdicts say yes
    made = judge.for_model

    def for_model(provider_model):
        member = made(provider_model)
        if provider_model.endswith("plain"):  # a provider that returns no log-probabilities
            complete = member.complete

            async def without(request):
                return dataclasses.replace(await complete(request), logprobs=None)

            member.complete = without
        return member

    judge.for_model = for_model
    out = tmp_path / "out.jsonl"
    rows = [{**REF_FREE, "id": f"r{i}"} for i in range(3)]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out),
                       set_=['judge.panel=["openai/fake-judge", "openai/fake-plain"]', "judge.panel_rule=any", "sufficiency.yes_threshold=0.7"])
    assert result.code == 0, result.text
    for row in read_jsonl(out):
        assert row["sufficiency_status"] == "ok"
        assert (row["sufficiency_panel_fake_judge_score"], row["sufficiency_panel_fake_plain_score"]) == (0.0, 1.0)
        assert row["sufficiency_score"] == 1.0  # any: the member without probabilities said yes


"""A cascade of judges (issue 62): a cheap first stage decides the rows it is sure of, the next
stage the rest (``judge.cascade``, ``judge.cascade_band``).

The first stage here is a chat judge read with log-probabilities: the in-process fake transport,
whose P(yes) is set per row from the row's number (``ROWS``), so that which rows fall in the band
is known before the run; each stage's own transport counts the calls it saw."""

from __future__ import annotations

import json
import re

import pytest
from conftest import read_jsonl, write_jsonl
from helpers import CHEAP, STRONG, PerRow, cascade, p_of, rows

from ragjudge import Scorer
from ragjudge.cascade import CascadeCounts, decide, in_band
from ragjudge.errors import ConfigError
from ragjudge.types import Usage, Verdict

def test_exactly_the_rows_in_the_band_reach_the_second_stage(tmp_path):
    scored, transport = cascade(tmp_path, (0.3, 0.7))
    frame = scored.frame
    band = [i for i in range(400) if 0.3 <= p_of(i) <= 0.7]
    assert 100 < len(band) < 300  # both stages decide a good share
    cheap, strong = transport.members[CHEAP], transport.members[STRONG]
    assert cheap.calls == 400
    assert strong.calls == len(band)
    asked = sorted(int(re.search(r"question (\d+)", json.dumps(r["messages"])).group(1)) for r in strong.requests)
    assert asked == band  # exactly the rows in the band, each once
    assert all(r["logprobs"] for r in cheap.requests) and not any(r.get("logprobs") for r in strong.requests)
    assert frame["sufficiency_status"].tolist() == ["ok"] * 400
    assert frame["sufficiency_cascade_fake_cheap_probability"].tolist() == pytest.approx([p_of(i) for i in range(400)])
    assert frame["sufficiency_stage"].tolist() == ["fake_strong" if i in band else "fake_cheap" for i in range(400)]
    reached = frame["sufficiency_cascade_fake_strong_status"]
    assert reached.isna().tolist() == [i not in band for i in range(400)]
    for i in (band[0], next(i for i in range(400) if i not in band)):
        rationale = frame["sufficiency_rationale"][i]
        if i in band:
            assert rationale.startswith(f"[fake_strong, after fake_cheap P(yes) {p_of(i):.2f} in the band [0.3, 0.7]] ")
            assert frame["sufficiency_score"][i] == frame["sufficiency_cascade_fake_strong_score"][i]
        else:
            assert rationale.startswith("[fake_cheap] ")
            assert frame["sufficiency_score"][i] == frame["sufficiency_cascade_fake_cheap_score"][i]
    counts = scored.summary.metrics["sufficiency"].cascade
    assert counts.escalated == len(band) and counts.escalated_fraction == pytest.approx(len(band) / 400)
    assert (counts.stages["fake_cheap"].calls, counts.stages["fake_strong"].calls) == (400, len(band))
    assert (counts.stages["fake_cheap"].decided, counts.stages["fake_strong"].decided) == (400 - len(band), len(band))
    for name in ("fake_cheap", "fake_strong"):  # each stage's cost: its calls' own, as its column adds them
        assert counts.stages[name].cost_usd == pytest.approx(frame[f"sufficiency_cascade_{name}_cost_usd"].sum()) and counts.stages[name].cost_usd > 0
    assert frame["sufficiency_cost_usd"].sum() == pytest.approx(sum(s.cost_usd for s in counts.stages.values()))
    assert scored.summary.metrics["sufficiency"].to_dict()["cascade"]["escalated"] == len(band)


def test_a_wider_band_pays_only_for_the_newly_escalated_rows(tmp_path):
    cascade(tmp_path, (0.4, 0.6))
    scored, transport = cascade(tmp_path, (0.2, 0.8))
    new = [i for i in range(400) if 0.2 <= p_of(i) <= 0.8 and not 0.4 <= p_of(i) <= 0.6]
    assert transport.members[CHEAP].calls == 0  # the first stage's replies are all cached
    assert transport.members[STRONG].calls == len(new)
    counts = scored.summary.metrics["sufficiency"].cascade
    assert counts.stages["fake_strong"].calls == len(new)
    assert counts.escalated == sum(0.2 <= p_of(i) <= 0.8 for i in range(400))


def test_a_first_stage_error_goes_to_the_next_stage(tmp_path):
    transport = PerRow()
    transport.model_faults = {"fake-cheap": (3, ["401"])}  # the first stage answers 3 rows, then its key is refused
    scored, _ = cascade(tmp_path, (0.45, 0.55), transport, count=12, concurrency=1)
    frame = scored.frame
    assert frame["sufficiency_status"].tolist() == ["ok"] * 12  # every row decided: the strong stage took the rest
    stages = frame["sufficiency_stage"].tolist()
    assert stages[:3] == ["fake_strong" if 0.45 <= p_of(i) <= 0.55 else "fake_cheap" for i in range(3)]
    assert stages[3:] == ["fake_strong"] * 9
    assert "after fake_cheap error:" in frame["sufficiency_rationale"][5]


def test_a_panel_as_last_stage_marks_its_split_rows_to_label(tmp_path):
    scored, transport = cascade(tmp_path, (0.3, 0.7), stages=(CHEAP, "panel"), count=60,
                                panel=["openai/fake-judge", "openai/fake-lenient", "openai/fake-strict"])
    frame = scored.frame
    escalated = frame["sufficiency_stage"] == "panel"
    assert escalated.sum() == sum(0.3 <= p_of(i) <= 0.7 for i in range(60)) > 0
    split = frame["sufficiency_panel_agreement"] < 1.0
    assert frame["sufficiency_to_label"].tolist() == (escalated & split.fillna(False)).tolist()
    assert frame["sufficiency_to_label"].sum() > 0
    assert transport.members["openai/fake-lenient"].calls == escalated.sum()
    assert scored.summary.metrics["sufficiency"].cascade.to_label == frame["sufficiency_to_label"].sum()


def test_max_cost_covers_every_stage(tmp_path):
    scored, transport = cascade(tmp_path, (0.0, 1.0), count=40, concurrency=1, max_cost=0.002,
                                price={"input_per_mtok": 1.0, "output_per_mtok": 1.0})
    spent = sum(member.calls for member in transport.members.values())
    assert 0 < spent < 80
    assert (scored.frame["sufficiency_error"].fillna("").str.contains("budget reached")).any()


@pytest.mark.parametrize("judge, said", [
    ({"cascade": [CHEAP]}, "at least 2 stages"),
    ({"cascade": ["panel", STRONG], "panel": ["openai/a", "openai/b"]}, "last stage"),
    ({"cascade": [CHEAP, "panel"]}, "set judge.panel"),
    ({"cascade": [CHEAP, "local/qwen2.5-coder-1.5b"]}, "first stage"),
    ({"cascade": [CHEAP, "other/fake-cheap"]}, "both 'fake_cheap'"),
    ({"cascade": [CHEAP, STRONG], "batch": True}, "batch API"),
    ({"cascade": [CHEAP, STRONG], "cascade_band": "0.8,0.2"}, "no band"),
    ({"cascade": [CHEAP, STRONG], "cascade_band": "0.5"}, "LO,HI"),
])
def test_a_cascade_that_cannot_run_is_refused(judge, said):
    with pytest.raises(ConfigError) as caught:
        Scorer(metrics=["sufficiency"], judge=judge, cache={"enabled": False}, transport=PerRow())
    assert said in str(caught.value)


def test_the_command_line_takes_the_stages_and_band(run_score, tmp_path, judge):
    source = write_jsonl(tmp_path / "in.jsonl", rows(30))
    out = tmp_path / "out.jsonl"
    judge.p_yes = 0.5
    result = run_score(source, metric=["sufficiency"], output=str(out), min_pass_rate=["0"], set_=[
        f"judge.cascade={CHEAP},{STRONG}", "judge.cascade_band=0.45,0.55"])
    assert result.code == 0, result.text
    written = read_jsonl(out)
    assert {row["sufficiency_stage"] for row in written} == {"fake_strong"}  # P(yes) 0.5 for every row: all escalated
    assert written[0]["judge_model"] == f"cascade: {CHEAP} -> {STRONG}"


def test_decide_names_the_stage_and_counts_its_cost():
    first = Verdict("sufficiency", "ok", score=1.0, passed=True, rationale="r1", probability=0.55, cached=False,
                    usage=Usage(10, 2, 0.001, 1))
    second = Verdict("sufficiency", "ok", score=0.0, passed=False, rationale="r2", cached=False, usage=Usage(100, 20, 0.01, 1))
    out = decide("sufficiency", [("a", "x/a", first), ("b", "x/b", second)], (0.4, 0.6), True)
    assert (out.score, out.rationale) == (0.0, "[b, after a P(yes) 0.55 in the band [0.4, 0.6]] r2")
    assert out.usage.cost_usd == pytest.approx(0.011) and out.usage.calls == 2
    counts = CascadeCounts()
    counts.add(out.details["cascade"])
    assert (counts.both, counts.agreed, counts.escalated, counts.to_label) == (1, 0, 1, 0)
    assert in_band(0.4, (0.4, 0.6)) and in_band(0.6, (0.4, 0.6)) and not in_band(0.61, (0.4, 0.6)) and not in_band(None, (0, 1))


def test_to_label_writes_the_rows_the_last_stage_is_unsure_of(run_score, tmp_path, judge):
    source = write_jsonl(tmp_path / "in.jsonl", rows(30))
    out, to_label = tmp_path / "out.jsonl", tmp_path / "label.csv"
    judge.p_yes = 0.5  # every stage unsure: the last stage's P(yes) lies in the band too, when it is read
    result = run_score(source, metric=["sufficiency"], output=str(out), to_label=str(to_label), min_pass_rate=["0"],
                       set_=[f"judge.cascade={CHEAP},{STRONG}", "judge.cascade_band=0.45,0.55", "sufficiency.yes_threshold=0.5"])
    assert result.code == 0, result.text
    import pandas as pd

    written = pd.read_csv(to_label)
    assert written["id"].tolist() == [f"r{i}" for i in range(30)]
    assert written["sufficiency_label"].isna().all() and (written["sufficiency_stage"] == "fake_strong").all()
    assert f"wrote {to_label}: 30 row(s) still uncertain" in result.text
    judge.p_yes = 0.9  # the last stage sure of every row: nothing to label
    result = run_score(source, metric=["sufficiency"], to_label=str(to_label), min_pass_rate=["0"], no_cache=True,
                       set_=[f"judge.cascade={CHEAP},{STRONG}", "judge.cascade_band=0.45,0.55", "sufficiency.yes_threshold=0.5"])
    assert result.code == 0 and f"wrote {to_label}: 0 row(s)" in result.text, result.text


def test_to_label_without_a_cascade_and_a_cascade_on_ray_are_refused(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", rows(3))
    result = run_score(source, metric=["sufficiency"], to_label=str(tmp_path / "l.csv"))
    assert result.code == 2 and "--to-label" in result.error and "--cascade FIRST,THEN" in result.error
    result = run_score(source, metric=["sufficiency"], engine="ray", output=str(tmp_path / "o.parquet"),
                       set_=[f"judge.cascade={CHEAP},{STRONG}"])
    assert result.code == 2 and "--engine local" in result.error, result.error


PRICED = "judge.price={input_per_mtok: 1.0, output_per_mtok: 2.0}"


def test_the_dry_run_prices_the_later_stages_on_the_escalated_share(run_score, tmp_path, judge):
    source = write_jsonl(tmp_path / "in.jsonl", rows(30))
    stages = [f"judge.cascade={CHEAP},{STRONG}", PRICED]
    guess = run_score(source, metric=["sufficiency"], dry_run=True, set_=[*stages, "judge.cascade_band=0.2,0.8"])
    assert guess.code == 0, guess.text
    members = guess.result["members"]
    assert guess.result["cascade_escalated"] == pytest.approx(0.6)  # nothing cached: the band's width, said as a guess
    assert "a guess: the band [0.2, 0.8]'s width" in guess.text
    assert "cascade stage fake_strong (openai/fake-strong): 0 cache hits; 18 calls to make" in guess.text
    assert members["fake_cheap"]["total"]["calls"] == 30 and members["fake_strong"]["total"]["calls"] == 18
    assert guess.result["total"]["cost_high"] == pytest.approx(members["fake_cheap"]["total"]["cost_high"]
                                                               + members["fake_strong"]["total"]["cost_high"])
    judge.p_yes = 0.9
    scored = run_score(source, metric=["sufficiency"], limit=10, min_pass_rate=["0"], set_=[*stages, "judge.cascade_band=0.3,0.7"])
    assert scored.code == 0, scored.text
    sampled = run_score(source, metric=["sufficiency"], dry_run=True, set_=[*stages, "judge.cascade_band=0.3,0.7"])
    assert sampled.result["cascade_escalated"] == 0.0  # the 10 cached first-stage replies: P(yes) 0.9, none in the band
    assert "the share of the 10 row(s) with a cached first-stage P(yes) in the band [0.3, 0.7]" in sampled.text
    assert sampled.result["members"]["fake_cheap"]["total"]["calls"] == 20 and sampled.result["members"]["fake_strong"]["total"]["calls"] == 0
    wider = run_score(source, metric=["sufficiency"], dry_run=True, set_=[*stages, "judge.cascade_band=0.1,0.95"])
    assert wider.result["cascade_escalated"] == 1.0 and wider.result["members"]["fake_strong"]["total"]["calls"] == 30


def test_max_cost_needs_every_stage_priced(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", rows(3))
    result = run_score(source, metric=["sufficiency"], max_cost=1.0, set_=[f"judge.cascade=openai/gpt-4o-mini,{STRONG}"])
    assert result.code == 2 and "openai/fake-strong has no price" in result.error, result.error


def test_corrected_rates_and_the_gate_read_the_final_verdicts(run_score, tmp_path, judge):
    labelled = [{**row, "human": "yes" if i % 2 else "no"} for i, row in enumerate(rows(40))]
    source, out = write_jsonl(tmp_path / "in.jsonl", labelled), tmp_path / "out.jsonl"
    judge.p_yes = 0.5  # every row escalated: the final verdict is the strong stage's
    result = run_score(source, metric=["sufficiency"], output=str(out), labels=["sufficiency=human"], min_pass_rate=["0.99"],
                       set_=[f"judge.cascade={CHEAP},{STRONG}", "judge.cascade_band=0.4,0.6"])
    written = read_jsonl(out)
    final = [row["sufficiency_passed"] for row in written]
    assert {row["sufficiency_stage"] for row in written} == {"fake_strong"}
    metric = result.result.summary.metrics["sufficiency"]
    assert metric.passed == sum(final) and metric.corrected()["pass_rate"].agreement == pytest.approx(
        sum(p == (i % 2 == 1) for i, p in enumerate(final)) / 40)
    assert result.code == (0 if sum(final) / 40 >= 0.99 else 1)


def test_fit_band_picks_the_narrowest_band_that_holds_the_first_stage_mistakes():
    from ragjudge.cascade import fit_band

    probability = [0.1, 0.2, 0.45, 0.5, 0.55, 0.8, 0.9] * 5
    first_right = [p not in (0.45, 0.5, 0.55) for p in probability]  # the first stage errs on its unsure rows only
    found = fit_band(probability, first_right, [True] * 35, max_escalate=0.6)  # room on every fold's training rows
    assert found.band == (0.45, 0.55) and found.agreement == 1.0 and found.escalated == pytest.approx(3 / 7)
    assert found.first_alone == pytest.approx(4 / 7) and found.assumed == 0 and found.met
    assert found.oof_agreement == 1.0 and found.oof_escalated == pytest.approx(3 / 7)
    assert found.oof_interval[0] < 1.0 <= found.oof_interval[1] + 1e-9
    tight = fit_band(probability, first_right, [True] * 35, max_escalate=0.2)  # one of the three fits in 20%
    assert tight.escalated == pytest.approx(1 / 7) and tight.agreement == pytest.approx(5 / 7)
    reached = fit_band(probability, first_right, [None] * 35, target=5 / 7)  # later verdicts unknown: counted right, and said
    assert reached.escalated == pytest.approx(1 / 7) and reached.assumed == 5 and reached.met
    assert not fit_band(probability, first_right, [False] * 35, target=0.9).met
    with pytest.raises(ValueError):
        fit_band(probability, first_right, [True] * 35)


def test_a_band_without_a_cascade_is_said(tmp_path):
    with Scorer(metrics=["sufficiency"], judge={"cascade_band": [0.1, 0.9]}, cache={"enabled": False}, transport=PerRow()) as scorer:
        assert any("judge.cascade_band decides which rows a cascade sends on" in note for note in scorer.notes)


def test_the_markdown_summary_has_the_cascade_lines(run_score, tmp_path, judge):
    source, markdown = write_jsonl(tmp_path / "in.jsonl", rows(10)), tmp_path / "summary.md"
    judge.p_yes = 0.5
    result = run_score(source, metric=["sufficiency"], markdown=str(markdown), min_pass_rate=["0"], step_summary=False,
                       set_=[f"judge.cascade={CHEAP},{STRONG}", "judge.cascade_band=0.4,0.6"])
    assert result.code == 0, result.text
    text = markdown.read_text()
    assert "sufficiency: cascade fake_cheap judged 10, decided 0 (10 calls" in text
    assert "sufficiency: cascade escalated 10 of 10 rows (1.00)" in text


def test_to_label_naming_the_input_is_refused_before_any_call(run_score, tmp_path, judge):
    # a bad-input trial's find: --to-label naming the input emptied it, exit 0
    source = write_jsonl(tmp_path / "victim.jsonl", rows(6))
    before = open(source, "rb").read()
    out = tmp_path / "out.jsonl"
    result = run_score(str(source), metric=["sufficiency"], output=str(out), to_label=str(source),
                       set_=[f"judge.cascade={CHEAP},{STRONG}"])
    assert result.code == 2
    assert result.error == f"--to-label {source} is also the input; the rows to label would replace it: give it another name"
    assert open(source, "rb").read() == before and not out.exists() and judge.calls == 0


def test_to_label_and_an_output_are_compared_as_resolved_paths(run_score, tmp_path, judge, monkeypatch):
    # a bad-input trial's find: --to-label ./out6.jsonl -o out6.jsonl passed (strings compared) and wiped the table
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "in.jsonl", rows(6))
    for to_label, output in (("./out6.jsonl", "out6.jsonl"), (str(tmp_path / "out6.jsonl"), "out6.jsonl")):
        result = run_score("in.jsonl", metric=["sufficiency"], output=output, to_label=to_label, set_=[f"judge.cascade={CHEAP},{STRONG}"])
        assert result.code == 2 and result.error == f"--to-label {to_label} is also -o; one would replace the other: give it another name"
    result = run_score("in.jsonl", metric=["sufficiency"], output="out.jsonl", to_label="./in.jsonl", set_=[f"judge.cascade={CHEAP},{STRONG}"])
    assert result.code == 2 and "is also the input" in result.error
    assert judge.calls == 0 and not (tmp_path / "out6.jsonl").exists()


def test_same_file_follows_links_and_resolves_paths_not_yet_written(tmp_path, monkeypatch):
    import os

    from ragjudge.run.checks import same_file

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_text("{}\n")
    os.symlink(tmp_path / "a.jsonl", tmp_path / "link.jsonl")
    os.link(tmp_path / "a.jsonl", tmp_path / "hard.jsonl")
    assert same_file("link.jsonl", "a.jsonl") and same_file("hard.jsonl", "./a.jsonl")
    assert same_file("./new.jsonl", str(tmp_path / "new.jsonl")) and not same_file("new.jsonl", "a.jsonl")


def test_a_panel_the_cascade_does_not_name_is_said_to_be_ignored():
    # a bad-input trial's find: --panel A,B with --cascade FIRST,THEN (no panel stage) was dropped in silence
    panel = ["openai/fake-a", "openai/fake-b"]
    with Scorer(metrics=["sufficiency"], judge={"cascade": [CHEAP, STRONG], "panel": panel}, cache={"enabled": False},
                transport=PerRow()) as scorer:
        assert (f"note: judge.panel (openai/fake-a, openai/fake-b) is not asked: the cascade's stages judge ({CHEAP}, {STRONG}); name "
                "panel as its last stage (--cascade FIRST,panel) to have the panel decide the rows it sends on, or leave --panel out"
                ) in scorer.notes
    with Scorer(metrics=["sufficiency"], judge={"cascade": [CHEAP, "panel"], "panel": panel}, cache={"enabled": False},
                transport=PerRow()) as scorer:
        assert not any("is not asked" in note for note in scorer.notes)


def test_a_band_that_is_not_two_numbers_names_the_value_once(run_score, tmp_path):
    # a bad-input trial's find: "--cascade-band: ... e.g. 0.2,0.8 ('abc') (got 'abc')"
    source = write_jsonl(tmp_path / "in.jsonl", rows(3))
    result = run_score(source, metric=["sufficiency"], cascade=f"{CHEAP},{STRONG}", cascade_band="abc")
    assert result.code == 2 and result.error == "--cascade-band: a cascade band is LO,HI, two probabilities, e.g. 0.2,0.8 ('abc')"

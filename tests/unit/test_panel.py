"""A panel of judges (issue 49): several judge models decide each row together (``judge.panel``).

The in-process fake judge leans by model name (``ragjudge.transports.fake_rule.leaning``):
``fake-judge`` is the plain word-overlap rule, ``fake-lenient`` says yes more often, ``fake-strict``
less, and ``model_faults`` makes one member fail (401, timeouts) from its Nth call on. Each rule is
checked against the members' own verdicts: every member is also run alone, and the panel's score
on each row must be the rule applied to those."""

from __future__ import annotations

import json
import statistics

import pytest

from conftest import SAMPLE, read_jsonl
from ragjudge.judges.panel_rule import decide
from ragjudge.panel import PanelCounts, fleiss_kappa
from ragjudge.types import Verdict

SOURCE = str(SAMPLE / "rag_eval.jsonl")
MEMBERS = ["openai/fake-judge", "openai/fake-lenient", "openai/fake-strict"]
NAMES = ["fake_judge", "fake_lenient", "fake_strict"]


def _panel(members=MEMBERS, **extra) -> list[str]:
    sets = [f"judge.panel={json.dumps(members)}"]
    sets += [f"judge.{key}={value}" for key, value in extra.items()]
    return sets


def _alone(run_score, tmp_path, model: str, metric: str) -> list[dict]:
    out = tmp_path / f"{model.replace('/', '_')}-{metric}.jsonl"
    result = run_score(SOURCE, metric=[metric], model=model, output=str(out), min_pass_rate=["0"], no_cache=True)
    assert result.code == 0, result.text
    return read_jsonl(out)


def _rule(rule: str, scores: list[float]) -> float:
    if rule == "all":
        return min(scores)
    if rule == "any":
        return max(scores)
    return statistics.median_low(scores)


@pytest.mark.parametrize("rule", ["majority", "all", "any", "mean"])
@pytest.mark.parametrize("metric", ["sufficiency", "completeness"])
def test_each_rule_gives_the_members_own_verdicts_combined(run_score, tmp_path, rule, metric):
    alone = {name: _alone(run_score, tmp_path, model, metric) for name, model in zip(NAMES, MEMBERS)}
    out = tmp_path / "panel.jsonl"
    result = run_score(SOURCE, metric=[metric], output=str(out), min_pass_rate=["0"], set_=_panel(panel_rule=rule))
    assert result.code == 0, result.text
    rows = read_jsonl(out)
    judged = [i for i, row in enumerate(rows) if row[f"{metric}_status"] == "ok"]
    assert len(judged) == (24 if metric == "sufficiency" else 8)
    differ = 0
    threshold = 0.5 if metric == "sufficiency" else 3
    for i in judged:
        scores = [alone[name][i][f"{metric}_score"] for name in NAMES]
        assert [rows[i][f"{metric}_panel_{name}_score"] for name in NAMES] == scores  # each member's column: its own verdict
        assert rows[i][f"{metric}_score"] == _rule(rule, scores), (i, scores)
        passes = [s >= threshold for s in scores]
        assert rows[i][f"{metric}_passed"] == (rows[i][f"{metric}_score"] >= threshold)
        agreeing = sum(p == rows[i][f"{metric}_passed"] for p in passes)
        assert rows[i][f"{metric}_panel_agreement"] == pytest.approx(agreeing / 3)
        assert rows[i][f"{metric}_rationale"].startswith(f"{agreeing} of 3 judges: ")
        differ += len(set(passes)) > 1
    assert differ >= 5  # the members really disagree on the sample data


def test_the_rules_on_known_votes():
    def votes(*scores, status=None):
        return [Verdict("m", "ok", score=s, passed=s >= 0.5, rationale=f"r{i}") for i, s in enumerate(scores)]

    names, models = ["a", "b", "c", "d"], ["x/a", "x/b", "x/c", "x/d"]
    tie = decide("m", votes(1.0, 1.0, 0.0, 0.0), names, models, "majority", 3, 0.5, True)
    assert (tie.score, tie.passed, tie.rationale) == (0.0, False, "2 of 4 judges: no. r2")  # a tie is no
    assert decide("m", votes(1.0, 1.0, 1.0, 0.0), names, models, "majority", 3, 0.5, True).rationale == "3 of 4 judges: yes. r0"
    assert decide("m", votes(1.0, 1.0, 1.0, 0.0), names, models, "all", 3, 0.5, True).score == 0.0
    assert decide("m", votes(0.0, 0.0, 1.0, 0.0), names, models, "any", 3, 0.5, True).score == 1.0
    scale = [Verdict("m", "ok", score=s, passed=s >= 3, rationale=f"r{s:g}") for s in (2.0, 5.0, 4.0, 1.0)]
    mean = decide("m", scale, names, models, "mean", 3, 3, False)
    assert (mean.score, mean.passed) == (2.0, False)  # the lower middle of 1, 2, 4, 5
    assert mean.rationale == "2 of 4 judges: 2, fails (scores 2, 5, 4, 1). r2"
    assert decide("m", scale[:3], names[:3], models[:3], "mean", 2, 3, False).score == 4.0


def test_a_failing_member_leaves_the_row_to_the_others_and_below_the_quorum_it_is_an_error():
    failed = Verdict.failed("m", "authentication failed for x/c")
    answered = [Verdict("m", "ok", score=1.0, passed=True, rationale="fine"), Verdict("m", "ok", score=0.0, passed=False, rationale="no")]
    held = decide("m", [*answered, failed], ["a", "b", "c"], ["x/a", "x/b", "x/c"], "any", 2, 0.5, True)
    assert held.status == "ok" and held.score == 1.0
    assert held.rationale == "1 of 2 judges: yes; c did not answer (authentication failed for x/c). fine"
    lost = decide("m", [answered[0], failed, failed], ["a", "b", "c"], ["x/a", "x/b", "x/c"], "majority", 2, 0.5, True)
    assert lost.status == "error"
    assert lost.error == ("panel quorum not met: 1 of 3 judges answered (quorum 2); b: authentication failed for x/c; "
                          "c: authentication failed for x/c")


def test_fleiss_kappa_of_the_worked_example():
    # Fleiss' kappa's worked example (Wikipedia, "Fleiss' kappa"): 10 subjects, 14 raters, 5
    # categories; P_bar = 0.378, P_e = 0.213, kappa = 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.2099, abs=5e-4)
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # every rating in one category: undefined
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 1], [1, 1]])


def test_panel_counts_give_the_kappa_of_their_rows_and_add_up_over_chunks():
    rows = [[True, True, False], [True, True, True], [False, False, False], [True, False, False], [False, True, True]]

    def members(flags):
        return [{"name": n, "model": n, "status": "ok", "score": float(f), "passed": f, "error": None, "cost_usd": 0.5, "calls": 1}
                for n, f in zip("abc", flags)]

    whole, first, second = PanelCounts(), PanelCounts(), PanelCounts()
    for i, flags in enumerate(rows):
        whole.add(members(flags))
        (first if i < 2 else second).add(members(flags))
    table = [[sum(flags), 3 - sum(flags)] for flags in rows]
    assert whole.kappa == pytest.approx(fleiss_kappa(table))
    merged = first.merge(second)
    assert merged.to_dict() == whole.to_dict()
    assert whole.agreement() == {"a|b": 0.6, "a|c": 0.4, "b|c": 0.8}
    assert whole.split == 3
    assert whole.members["a"].cost_usd == 2.5 and whole.members["a"].pass_rate == 0.6


def test_a_member_failing_with_401_from_the_start_leaves_every_row_to_the_others(run_score, tmp_path, judge):
    judge.model_faults = {"fake-broken": (0, ["401"])}
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    members = ["openai/fake-judge", "openai/fake-lenient", "openai/fake-broken"]
    result = run_score(SOURCE, metric=["sufficiency"], output=str(out), summary_json=str(summary), min_pass_rate=["0"], set_=_panel(members))
    assert result.code == 0, result.text
    rows = [r for r in read_jsonl(out) if r["sufficiency_status"] != "skipped"]
    assert len(rows) == 24 and {r["sufficiency_status"] for r in rows} == {"ok"}
    assert {r["sufficiency_panel_fake_broken_status"] for r in rows} == {"error"}
    errors = [r["sufficiency_panel_fake_broken_error"] for r in rows]
    assert errors[0].startswith("authentication failed for openai/fake-broken")  # the probe; the member asks no more
    assert all(e.removeprefix("not run: ") == errors[0] for e in errors[1:])
    assert all(f"fake_broken did not answer ({e})" in r["sufficiency_rationale"] for r, e in zip(rows, errors))
    for r in rows:  # majority of the two that answered: a tie is no
        votes = [r["sufficiency_panel_fake_judge_score"], r["sufficiency_panel_fake_lenient_score"]]
        assert r["sufficiency_score"] == (1.0 if sum(votes) == 2 else 0.0)
    panel = json.loads(summary.read_text())["metrics"]["sufficiency"]["panel"]
    assert (panel["members"]["fake_broken"]["ok"], panel["members"]["fake_broken"]["error"]) == (0, 24)
    assert judge.members["openai/fake-broken"].calls == 1  # the probe: its 401 stops that member only


def test_a_member_failing_mid_run_401_then_timeouts_holds_with_the_quorum_and_fails_below_it(run_score, tmp_path, judge):
    members = ["openai/fake-judge", "openai/fake-lenient", "openai/fake-flaky"]
    judge.model_faults = {"fake-flaky": (5, ["timeout", "timeout", "401"])}
    out = tmp_path / "out.jsonl"
    result = run_score(SOURCE, metric=["sufficiency"], output=str(out), min_pass_rate=["0"], max_retries=1, concurrency=1,
                       set_=_panel(members))
    assert result.code == 0, result.text
    rows = [r for r in read_jsonl(out) if r["sufficiency_status"] != "skipped"]
    assert {r["sufficiency_status"] for r in rows} == {"ok"}  # every row decided: by 3 judges, then by 2
    statuses = [r["sufficiency_panel_fake_flaky_status"] for r in rows]
    assert statuses == ["ok"] * 5 + ["error"] * 19
    errors = [r["sufficiency_panel_fake_flaky_error"] for r in rows[5:]]
    assert errors[0] == "judge call failed: no answer within 120 s"  # a timeout and its retry's
    assert errors[1].startswith("authentication failed for openai/fake-flaky")  # then the 401: that member stops
    assert all(e.removeprefix("not run: ") == errors[1] for e in errors[2:])  # calls already waiting for a slot, then none
    assert [r["sufficiency_rationale"].split(":")[0] for r in rows[:5]] == [f"{n} of 3 judges" for n in
                                                                              [sum(r[f"sufficiency_panel_{m}_passed"] == r["sufficiency_passed"]
                                                                                   for m in ("fake_judge", "fake_lenient", "fake_flaky"))
                                                                               for r in rows[:5]]]

    judge.model_faults = {"fake-flaky": (5, ["401"])}
    strict = tmp_path / "strict.jsonl"
    result = run_score(SOURCE, metric=["sufficiency"], output=str(strict), min_pass_rate=["0"], concurrency=1, no_cache=True,
                       set_=_panel(members, panel_quorum=3))
    assert result.code == 3, result.text  # below the quorum: error rows, and the panel cannot go on
    rows = [r for r in read_jsonl(strict) if r["sufficiency_status"] != "skipped"]
    assert [r["sufficiency_status"] for r in rows] == ["ok"] * 5 + ["error"] * 19
    assert rows[5]["sufficiency_error"].startswith("panel quorum not met: 2 of 3 judges answered (quorum 3); fake_flaky: authentication")
    assert "the panel is below its quorum of 3: fake_flaky: authentication failed" in result.text


def test_a_member_timing_out_mid_run_is_that_row_s_member_error(run_score, tmp_path, judge):
    members = ["openai/fake-judge", "openai/fake-lenient", "openai/fake-slow"]
    judge.model_faults = {"fake-slow": (3, ["timeout"])}
    out = tmp_path / "out.jsonl"
    result = run_score(SOURCE, metric=["sufficiency"], output=str(out), min_pass_rate=["0"], max_retries=0, concurrency=1,
                       set_=_panel(members))
    assert result.code == 0, result.text
    rows = [r for r in read_jsonl(out) if r["sufficiency_status"] != "skipped"]
    assert [r["sufficiency_panel_fake_slow_status"] for r in rows] == ["ok"] * 3 + ["error"] * 21
    assert {r["sufficiency_panel_fake_slow_error"] for r in rows[3:]} == {"judge call failed: no answer within 120 s"}
    assert {r["sufficiency_status"] for r in rows} == {"ok"}


def test_each_member_is_cached_under_its_own_model_and_a_new_member_pays_alone(run_score, tmp_path, judge):
    first = run_score(SOURCE, metric=["sufficiency"], min_pass_rate=["0"], set_=_panel(MEMBERS[:2]))
    assert first.code == 0, first.text
    assert [judge.members[m].calls for m in MEMBERS[:2]] == [24, 24]
    again = run_score(SOURCE, metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "o.jsonl"), set_=_panel(MEMBERS))
    assert again.code == 0, again.text
    assert [judge.members[m].calls for m in MEMBERS] == [0, 0, 24]  # only the new member is asked
    rows = [r for r in read_jsonl(tmp_path / "o.jsonl") if r["sufficiency_status"] == "ok"]
    assert {r["sufficiency_cached"] for r in rows} == {False}  # one member paid for each row
    assert {r["sufficiency_panel_fake_judge_cost_usd"] for r in rows} == {0.0}  # cached members cost nothing
    judge.calls = 0
    alone = run_score(SOURCE, metric=["sufficiency"], min_pass_rate=["0"], model="openai/fake-strict")
    assert alone.code == 0, alone.text
    assert judge.calls == 0  # the member's replies serve that model alone too


def test_samples_are_drawn_per_member_then_the_panel_decides(run_score, tmp_path, judge):
    out = tmp_path / "out.jsonl"
    members = [{"model": "openai/fake-judge"}, {"model": "openai/fake-strict", "temperature": 0.2}]
    result = run_score(SOURCE, metric=["sufficiency"], output=str(out), min_pass_rate=["0"], samples=3, set_=_panel(members))
    assert result.code == 0, result.text
    plain, strict = judge.members["openai/fake-judge"], judge.members["openai/fake-strict"]
    assert (plain.calls, strict.calls) == (72, 72)  # 24 rows x 3 samples each
    assert {r["temperature"] for r in plain.requests} == {0.7} and {r["temperature"] for r in strict.requests} == {0.2}
    rows = [r for r in read_jsonl(out) if r["sufficiency_status"] == "ok"]
    assert all(r["sufficiency_agreement"] is not None and r["sufficiency_panel_agreement"] is not None for r in rows)


@pytest.mark.parametrize("sets, message", [
    pytest.param(['judge.panel=["openai/a"]'], "judge.panel: a panel needs at least 2 members; for one judge set judge.model instead",
                 id="one_member"),
    pytest.param(['judge.panel=["openai/a", "other/a"]'], "judge.panel.name: two members are named 'a' (members 1 and 2); give one a "
                 "name of its own in the config's judge.panel, e.g. - {model: other/a, name: a_2} (--panel lists models, not names)",
                 id="same_name"),  # it said "e.g. name: a_2", which --panel cannot give (a breaker's find)
    pytest.param(['judge.panel=["openai/a", "openai/b"]', "judge.panel_quorum=3"],
                 "judge.panel_quorum: 3 is more than the panel's 2 members; set it to 1..2", id="quorum_too_high"),
    pytest.param(["judge.panel_rule=most"], "judge.panel_rule", id="unknown_rule"),
    # the breaker's trial: "--panel ," ran the single default judge; a name with a space said "should not be empty or blank"
    pytest.param(["judge.panel=','"], "a panel lists its members' models, comma-separated (',' names none)", id="no_member"),
    pytest.param(['judge.panel=[{model: "openai/a", name: "a b/c"}, "openai/b"]'], "should be lower-case letters, digits and _ only "
                 "(got 'a b/c')", id="bad_name"),
])
def test_a_bad_panel_is_a_config_error_naming_the_key_and_the_fix(run_score, sets, message):
    result = run_score(SOURCE, metric=["sufficiency"], set_=sets)
    assert result.code == 2
    assert message in result.error


def test_the_dry_run_counts_each_member_and_its_own_cache(run_score, tmp_path, judge):
    first = run_score(SOURCE, metric=["sufficiency"], min_pass_rate=["0"], set_=_panel(MEMBERS[:2]))
    assert first.code == 0, first.text
    dry = run_score(SOURCE, metric=["sufficiency"], dry_run=True, set_=_panel(MEMBERS))
    assert dry.code == 0, dry.text
    lines = [line for line in dry.text.splitlines() if line.startswith("panel member")]
    assert lines[:2] == ["panel member fake_judge (openai/fake-judge): 24 cache hits; 0 calls to make; prompt tokens 0; cost unknown (no price for this model)",
                         "panel member fake_lenient (openai/fake-lenient): 24 cache hits; 0 calls to make; prompt tokens 0; cost unknown (no price for this model)"]
    assert lines[2].startswith("panel member fake_strict (openai/fake-strict): 0 cache hits; 24 calls to make; prompt tokens ")
    assert [judge.members[m].calls for m in MEMBERS[:2]] == [24, 24]  # those of the first run: the dry run asks no member
    assert dry.result["members"]["fake_strict"]["metrics"]["sufficiency"]["calls"] == 24
    assert (dry.result["metrics"]["sufficiency"]["calls"], dry.result["metrics"]["sufficiency"]["cache_hits"]) == (24, 48)


def test_each_member_s_cost_is_counted_and_the_budget_is_the_whole_panel_s(run_score, tmp_path, judge):
    judge.price_per_token = 1e-6  # USD per token, prompt and completion alike
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(SOURCE, metric=["sufficiency"], output=str(out), summary_json=str(summary), min_pass_rate=["0"], set_=_panel(MEMBERS))
    assert result.code == 0, result.text
    rows = [r for r in read_jsonl(out) if r["sufficiency_status"] == "ok"]
    for r in rows:
        assert r["sufficiency_cost_usd"] == pytest.approx(sum(r[f"sufficiency_panel_{n}_cost_usd"] for n in NAMES))
    document = json.loads(summary.read_text())
    members = document["metrics"]["sufficiency"]["panel"]["members"]
    assert sum(m["cost_usd"] for m in members.values()) == pytest.approx(document["metrics"]["sufficiency"]["cost_usd"])
    assert all(m["cost_usd"] > 0 and m["calls"] == 24 for m in members.values())

    spent = document["metrics"]["sufficiency"]["cost_usd"]
    capped = run_score(SOURCE, metric=["sufficiency"], min_pass_rate=["0"], no_cache=True, concurrency=1,
                       set_=[*_panel(MEMBERS), "judge.price={input_per_mtok: 1, output_per_mtok: 1}", f"judge.max_cost={spent / 3}"])
    assert capped.code == 3  # one budget for every member: about a third of the rows are judged, then 'budget reached'
    metric = capped.result.summary.metrics["sufficiency"]
    assert 0 < metric.ok < 24 and metric.unpaid > 0


def test_a_model_given_beside_a_panel_is_named_as_not_asked():
    # --panel A,B --model X dropped --model without a word (a new user's trial)
    from ragjudge import Config
    from ragjudge.scoring import Scorer

    panel = ["openai/fake-judge", "openai/fake-strict"]
    with Scorer(Config(judge={"model": "openai/gpt-4o", "panel": panel}, cache={"enabled": False})) as scorer:
        assert "note: judge.model openai/gpt-4o is not asked: the panel's members judge (openai/fake-judge, openai/fake-strict)" in scorer.notes
    with Scorer(Config(judge={"panel": panel}, cache={"enabled": False})) as scorer:
        assert not [note for note in scorer.notes if "is not asked" in note]


def test_a_panel_rule_without_a_panel_is_named():
    # --panel-rule and --panel-quorum without --panel were passed over without a word
    from ragjudge import Config
    from ragjudge.scoring import Scorer

    with Scorer(Config(judge={"model": "openai/fake-judge", "panel_rule": "all"}, cache={"enabled": False})) as scorer:
        assert ("note: judge.panel_rule and judge.panel_quorum decide a panel's verdicts; this run has one judge (openai/fake-judge): give "
                "--panel MODEL,MODEL,... (judge.panel)") in scorer.notes

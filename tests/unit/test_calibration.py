"""Label-corrected rates (``ragjudge.corrected_rates``): the same figures as the reference
implementation (ppi_py), an interval that covers the true rate where the judge's own rate does
not, narrower than the labels alone give; chunks add up."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragjudge.corrected_rates import MIN_LABELS, RateStats

REFERENCE = json.loads((Path(__file__).parent.parent / "data" / "ppi_reference.json").read_text())


def _stats(labels, judged, unlabelled) -> RateStats:
    stats = RateStats()
    for y, h in zip(labels, judged):
        stats.add(h, y)
    for h in unlabelled:
        stats.add(h, None)
    return stats


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=lambda c: f"n{len(c['labels'])}-N{len(c['unlabelled'])}")
def test_the_corrected_mean_and_interval_are_ppi_pys(case):
    found = _stats(case["labels"], case["judged"], case["unlabelled"]).corrected()
    assert found.estimate == pytest.approx(case["estimate"], abs=1e-9)
    assert (found.low, found.high) == (pytest.approx(case["low"], abs=1e-9), pytest.approx(case["high"], abs=1e-9))


def _simulated(rng: random.Random, n: int = 150, big_n: int = 1500, truth: float = 0.6) -> tuple[RateStats, float]:
    """A table whose true pass rate is ``truth`` (in expectation), judged by a judge that says yes
    too easily (on 90% of true yes rows, 35% of true no rows: 0.68 in expectation); the first
    ``n`` rows labelled. Returns the sums and the table's own true rate."""
    stats, passes = RateStats(), 0
    for i in range(n + big_n):
        y = 1.0 if rng.random() < truth else 0.0
        h = 1.0 if rng.random() < (0.9 if y else 0.35) else 0.0
        passes += y
        stats.add(h, y if i < n else None)
    return stats, passes / (n + big_n)


def test_the_interval_covers_the_true_rate_and_the_judges_rate_does_not():
    rng = random.Random(11)
    runs, covered, judge_near, narrower = 400, 0, 0, 0
    for _ in range(runs):
        stats, truth = _simulated(rng)
        found = stats.corrected()
        covered += found.low <= truth <= found.high
        total = found.labelled + found.unlabelled
        judge_spread = 1.96 * (found.judge * (1 - found.judge) / total) ** 0.5  # the judge's own rate and its binomial interval
        judge_near += abs(found.judge - truth) <= judge_spread
        narrower += (found.high - found.low) < (found.labels_interval[1] - found.labels_interval[0])
    assert covered / runs >= 0.93  # 95% intervals, measured over 400 tables
    assert judge_near / runs <= 0.01  # the judge alone is off by its bias (0.08) on every table
    assert narrower == runs  # a judge that agrees with people most of the time narrows the interval


def test_chunks_add_up_and_too_few_labels_say_how_many_more():
    rng = random.Random(5)
    whole, _ = _simulated(rng, 60, 300)
    rng = random.Random(5)
    first, _ = _simulated(rng, 60, 0)
    second = RateStats()
    for _ in range(300):
        y = 1.0 if rng.random() < 0.6 else 0.0
        second.add(1.0 if rng.random() < (0.9 if y else 0.35) else 0.0, None)
    assert first.merge(second).corrected().to_dict() == whole.corrected().to_dict()
    few = _stats([1.0] * 10, [1.0] * 10, [0.0] * 50).corrected()
    assert not few.valid and few.needed == MIN_LABELS - 10 and few.labelled == 10 and few.judge == 10 / 60
    assert few.agreement == 1.0 and few.labels_only == 1.0


def test_a_judge_unrelated_to_the_labels_falls_back_to_the_labels_alone():
    # lam is clipped at 0 when the judge carries no information: the estimate is the labels' mean
    labels = [1.0, 0.0] * 20
    judged = [1.0, 1.0, 0.0, 0.0] * 10  # uncorrelated with the labels
    found = _stats(labels, judged, [1.0] * 100).corrected()
    assert found.lam == 0.0 and found.estimate == pytest.approx(0.5) and found.labels_interval == (found.low, found.high)


# -- the gate on the corrected pass rate -------------------------------------------------------

def _labelled_summary(case, min_pass_rate, gate_on="corrected", few_labels="fail"):
    from ragjudge.gate import MetricSummary, Summary
    from ragjudge.types import Verdict

    metric = MetricSummary("sufficiency", 0.5, min_pass_rate=min_pass_rate, label_column="human", gate_on=gate_on,
                           few_labels=few_labels, bounds=("min_pass_rate",))
    rows = [(h, y) for y, h in zip(case["labels"], case["judged"])] + [(h, None) for h in case["unlabelled"]]
    for i, (h, y) in enumerate(rows):
        verdict = Verdict("sufficiency", "ok", score=h, passed=bool(h), rationale="r")
        metric.add(verdict, f"r{i}", i)
        metric.add_label(verdict, None if y is None else ("yes" if y else "no"))
    return Summary(rows=len(rows), metrics={"sufficiency": metric})


def test_a_gate_on_the_corrected_rate_passes_and_fails_at_its_lower_bound():
    from ragjudge.gate import check_gate
    from ragjudge.reports.gate_text import line

    case = REFERENCE["cases"][1]  # 100 labelled of 1000: ppi_py's interval [0.5081, 0.6841] around 0.5961; the judge says 0.687
    passing = check_gate(_labelled_summary(case, 0.50))
    (check,) = [c for c in passing.checks if c.check.value == "corrected_pass_rate"]
    assert check.passed and check.value == pytest.approx(case["low"], abs=1e-9)
    assert line(check) == ("PASS sufficiency: corrected pass rate 0.60 [0.51, 0.68], lower bound 0.51 >= 0.50 "
                           "(100 labelled of 1000 ok rows; the judge's own 0.69)")
    failing = check_gate(_labelled_summary(case, 0.51))
    assert failing.exit_code == 1 and not [c for c in failing.checks if c.check.value == "corrected_pass_rate"][0].passed
    judge = check_gate(_labelled_summary(case, 0.65, gate_on="judge"))  # the judge's own 0.687 passes 0.65; corrected would not
    assert judge.exit_code == 0 and check_gate(_labelled_summary(case, 0.65)).exit_code == 1


def test_too_few_labels_fail_the_corrected_gate_unless_the_judge_is_allowed():
    from ragjudge.gate import check_gate
    from ragjudge.reports.gate_text import line

    case = {"labels": [1.0] * 12, "judged": [1.0] * 12, "unlabelled": [1.0] * 200}
    refused = check_gate(_labelled_summary(case, 0.5))
    (check,) = [c for c in refused.checks if c.check.value == "corrected_pass_rate"]
    assert refused.exit_code == 1 and line(check).startswith(
        "FAIL sufficiency: too few labels for a corrected pass rate (12 labelled ok rows in 'human', 18 more needed)")
    fallback = check_gate(_labelled_summary(case, 0.5, few_labels="judge"))
    (check,) = [c for c in fallback.checks if c.check.value == "pass_rate"]
    assert fallback.exit_code == 0 and line(check) == ("PASS sufficiency: pass rate 1.00 >= 0.50 (212 of 212 ok rows passed; the judge's "
                                                       "rate: 12 labelled rows, 18 more give a corrected one (gate.few_labels: judge))")


def test_labels_that_all_agree_get_the_wilson_interval_and_rates_stay_within_0_and_1():
    # 40 of 40 labels yes gave [1.00, 1.00] and passed a 0.97 gate; 39 of 40 gave [0.92, 1.02]
    from scipy.stats import binomtest

    from ragjudge.corrected_rates import RateStats

    stats = RateStats()
    for i in range(120):
        stats.add(1.0, 1.0 if i < 40 else None)
    found = stats.corrected()
    wilson = binomtest(40, 40).proportion_ci(confidence_level=0.95, method="wilson")
    assert (found.estimate, found.low, found.high, found.lam) == (1.0, float(wilson.low), float(wilson.high), 0.0)
    assert round(found.low, 3) == 0.912
    mixed = RateStats()
    for i in range(120):
        mixed.add(1.0 if i else 0.0, (0.0 if i == 1 else 1.0) if i < 40 else None)
    found = mixed.corrected()
    assert found.valid and 0.0 <= found.low <= found.estimate <= found.high <= 1.0


def test_a_zero_floor_holds_on_the_corrected_gate_without_labels():
    # a breaker's find: --gate-on corrected --min-pass-rate 0 failed for "too few labels", a bound no rate can be below
    from ragjudge.gate import check_gate
    from ragjudge.reports.gate_text import line

    case = {"labels": [1.0] * 3, "judged": [1.0] * 3, "unlabelled": [0.0] * 7}
    zero = check_gate(_labelled_summary(case, 0.0))
    (check,) = [c for c in zero.checks if c.check.value == "pass_rate"]
    assert zero.exit_code == 0 and line(check) == "PASS sufficiency: pass rate 0.30 >= 0.00 (3 of 10 ok rows passed)"
    assert check_gate(_labelled_summary(case, 0.01)).exit_code == 1  # any floor above it still needs the labels


# -- degenerate tables (issue 60, item 1): ppi_py's values, or the documented rule where it gives none --------

DEGENERATE = {case["name"]: case for case in REFERENCE["degenerate"]}


def _width(found) -> float:
    return found.high - found.low


@pytest.mark.parametrize("name", ["perfect agreement", "one disagreement", "perfect disagreement", "the judge yes on every row",
                                  "the judge yes on every labelled row"])
def test_degenerate_tables_with_an_interval_get_ppi_pys(name):
    # a judge agreeing with 40 of 40 labels (22 yes) gave the labels' Wilson 0.550 [0.398, 0.693] with lam 0; ppi_py 0.650 [0.620, 0.680]
    case = DEGENERATE[name]
    found = _stats(case["labels"], case["judged"], case["unlabelled"]).corrected()
    assert found.estimate == pytest.approx(case["tuned"]["estimate"], abs=1e-9)
    assert (found.low, found.high) == (pytest.approx(case["tuned"]["low"], abs=1e-9), pytest.approx(case["tuned"]["high"], abs=1e-9))
    if name == "perfect agreement":
        assert found.lam == 1.0 and (round(found.estimate, 3), round(found.low, 3), round(found.high, 3)) == (0.65, 0.62, 0.68)


def test_a_judge_of_one_verdict_gets_the_labels_alone_where_ppi_py_gives_nan():
    # both all yes: ppi_py's tuned lam is 0/0 (NaN); ragjudge takes lam 0, ppi_py's own labels-alone figure, then Wilson for its zero width
    from scipy.stats import binomtest

    case = DEGENERATE["both all yes"]
    assert case["tuned"]["low"] is None and case["labels_alone"] == {"estimate": 1.0, "low": 1.0, "high": 1.0}
    found = _stats(case["labels"], case["judged"], case["unlabelled"]).corrected()
    wilson = binomtest(40, 40).proportion_ci(confidence_level=0.95, method="wilson")
    assert (found.lam, found.estimate, found.low, found.high) == (0.0, 1.0, float(wilson.low), 1.0)


def test_labels_all_the_same_get_their_wilson_interval_whatever_the_judge():
    # ppi_py: [1, 1] for both judges (lam 0: the labels carry no covariance); the rule: the labels' Wilson, the same for both
    agreeing, one_off = DEGENERATE["labels all yes, the judge agreeing"], DEGENERATE["labels all yes"]
    assert agreeing["tuned"]["low"] == agreeing["tuned"]["high"] == one_off["tuned"]["low"] == one_off["tuned"]["high"] == 1.0
    better = _stats(agreeing["labels"], agreeing["judged"], agreeing["unlabelled"]).corrected()
    worse = _stats(one_off["labels"], one_off["judged"], one_off["unlabelled"]).corrected()
    assert better.to_dict() == {**worse.to_dict(), "agreement": 1.0, "judge": better.judge} and round(better.low, 3) == 0.912 and better.high == 1.0


def _flip(labels, judged, label):
    """``judged`` with the verdict on the first row labelled ``label`` that agrees turned against it."""
    out = list(judged)
    i = next(i for i, (y, h) in enumerate(zip(labels, judged)) if y == label and h == y)
    out[i] = 1.0 - label
    return out


def test_a_judge_agreeing_with_every_label_never_gets_a_wider_interval_than_one_that_does_not():
    # ppi_py gives no width where the judge agrees and every unlabelled row is yes: the rule (narrowest one disagreement away)
    for name in ("perfect agreement", "perfect agreement, every unlabelled row yes"):
        case = DEGENERATE[name]
        labels, judged, unlabelled = case["labels"], case["judged"], case["unlabelled"]
        best = _stats(labels, judged, unlabelled).corrected()
        assert best.low <= best.estimate <= best.high and _width(best) > 0.0
        for first in (1.0, 0.0):
            once = _flip(labels, judged, first)
            assert _width(best) <= _width(_stats(labels, once, unlabelled).corrected()) + 1e-12
    case = DEGENERATE["perfect agreement, every unlabelled row yes"]
    assert case["tuned"] == {"estimate": 1.0, "low": 1.0, "high": 1.0}
    found = _stats(case["labels"], case["judged"], case["unlabelled"]).corrected()
    assert (found.estimate, found.high, found.lam) == (1.0, 1.0, 1.0) and 0.95 < found.low < 1.0


def test_a_gate_on_the_corrected_rate_passes_a_judge_that_agrees_with_every_label():
    # issue 60: 40 of 40 agreeing gave 0.550 [0.398, 0.693] and failed --gate-on corrected at 0.6; ppi_py's lower bound is 0.620
    from ragjudge.gate import check_gate

    case = DEGENERATE["perfect agreement"]
    (check,) = [c for c in check_gate(_labelled_summary(case, 0.6)).checks if c.check.value == "corrected_pass_rate"]
    assert check.passed and check.value == pytest.approx(case["tuned"]["low"], abs=1e-9)


def test_labels_lost_to_errors_are_said_where_they_leave_too_few_for_an_interval():
    # issue 60 item 4, another shape: 35 labelled rows, 10 of them errored, gave "25 labelled ok rows: 5 more give ..." and no word of the 10
    from ragjudge.gate import MetricSummary, Summary
    from ragjudge.reports.console import corrected_lines
    from ragjudge.types import Verdict

    metric = MetricSummary("sufficiency", 0.5, label_column="human")
    for i in range(60):
        verdict = Verdict.failed("sufficiency", "HTTP 400") if 25 <= i < 35 else Verdict("sufficiency", "ok", score=1.0, passed=True, rationale="r")
        metric.add(verdict, f"r{i}", i)
        metric.add_label(verdict, "yes" if i < 35 else ("" if i < 40 else None))  # blank and missing cells are no labels
    found = metric.corrected()["pass_rate"]
    assert (found.labelled, found.on_errors, found.on_skipped, found.needed) == (25, 10, 0, 5)
    (line,) = corrected_lines(Summary(rows=60, metrics={"sufficiency": metric}))
    assert line == ("sufficiency: 25 labelled ok rows in 'human': 5 more give a corrected pass rate (the judge's 1.00, agreement 1.00); "
                    "10 labelled row(s) without an ok verdict left out (10 error)")


def test_one_labelled_row_is_one_row_in_the_lines():
    # "1 labelled ok rows in 'human'" (issue 60 item 23's "1 rows", in the label lines): the count and its noun agree
    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.console import corrected_lines
    from ragjudge.types import Verdict
    from ragjudge.reports.gate_text import line

    case = {"labels": [1.0], "judged": [1.0], "unlabelled": [1.0] * 20}
    (check,) = [c for c in check_gate(_labelled_summary(case, 0.5)).checks if c.check.value == "corrected_pass_rate"]
    assert line(check).startswith("FAIL sufficiency: too few labels for a corrected pass rate (1 labelled ok row in 'human', 29 more needed)")
    (check,) = [c for c in check_gate(_labelled_summary(case, 0.5, few_labels="judge")).checks if c.check.value == "pass_rate"]
    assert line(check) == ("PASS sufficiency: pass rate 1.00 >= 0.50 (21 of 21 ok rows passed; the judge's rate: 1 labelled row, 29 more "
                           "give a corrected one (gate.few_labels: judge))")
    metric = MetricSummary("sufficiency", 0.5, label_column="human")
    metric.add(Verdict("sufficiency", "ok", score=1.0, passed=True, rationale="r"), "r0", 0)
    metric.add_label(Verdict("sufficiency", "ok", score=1.0, passed=True, rationale="r"), "yes")
    (text,) = corrected_lines(Summary(rows=1, metrics={"sufficiency": metric}))
    assert text.startswith("sufficiency: 1 labelled ok row in 'human': 29 more give a corrected pass rate")

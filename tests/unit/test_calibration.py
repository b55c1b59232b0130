"""Label-corrected rates (``ragjudge.calibration``): the same figures as the reference
implementation (ppi_py), an interval that covers the true rate where the judge's own rate does
not, narrower than the labels alone give; chunks add up."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragjudge.calibration import MIN_LABELS, RateStats

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

    from ragjudge.calibration import RateStats

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

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

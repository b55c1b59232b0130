"""The summary of a pairwise metric (``--pairwise A,B``, ``ragjudge.judges.pairwise``): rows won by
A and by B, ties, the judge's position inconsistency and B's win rate with its interval. Counts
only, so that chunks and Ray batches add up (``merge``).

- ``win_rate_b``: ``(B's wins + ties / 2) / rows judged``, a tie half a win (AlpacaEval's and
  Chatbot Arena's convention; a tie marked inconsistent counts as a tie), 0..1; 0.5 is no
  difference. Its 95% interval is scipy's percentile bootstrap (``scipy.stats.bootstrap``,
  ``RESAMPLES`` resamples, seed ``SEED``, as ``ragjudge.significance``'s intervals) of the mean of
  the rows' values 1 (B), 0.5 (tie), 0 (A), rebuilt from the counts (the rows' order does not
  change the mean, and the bootstrap draws rows with replacement).
- ``inconsistency_rate``: the share of rows judged in both orders whose two verdicts disagreed
  (0..1; 1.0: the judge followed the position, not the responses). A row of two equal responses
  (no call) counts among the rows, not among those judged in both orders.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import Any

from ragjudge.significance import RESAMPLES, SEED, mean_interval

DETAILS = "pairwise"  # the key of a pairwise verdict's details: {"ab", "ba", "inconsistent"}


@dataclass
class PairwiseCounts:
    """One pairwise metric's rows by outcome. ``a`` / ``b``: rows whose response A / B contains
    more of the ground truth in both orders; ``ties``: the others judged ok (``inconsistent`` of
    them because the orders disagreed); ``asked_both``: rows judged in both orders (the
    denominator of the inconsistency rate)."""

    a: int = 0
    b: int = 0
    ties: int = 0
    inconsistent: int = 0
    asked_both: int = 0

    def add(self, score: float, pair: dict[str, Any] | None) -> None:
        """Count one ok row: its ``score`` (-1 A, 0 tie, 1 B) and its orders (``pair``: the
        verdict's ``details["pairwise"]``, None when not known)."""
        if score < 0:
            self.a += 1
        elif score > 0:
            self.b += 1
        else:
            self.ties += 1
        if pair and pair.get("ab") is not None and pair.get("ba") is not None:
            self.asked_both += 1
            self.inconsistent += bool(pair.get("inconsistent"))

    def merge(self, other: "PairwiseCounts") -> "PairwiseCounts":
        return PairwiseCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    @property
    def rows(self) -> int:
        return self.a + self.b + self.ties

    def win_rate(self) -> float | None:
        """B's win rate, a tie half a win; None without rows."""
        return (self.b + self.ties / 2) / self.rows if self.rows else None

    def interval(self) -> list[float] | None:
        """The 95% percentile bootstrap interval of ``win_rate`` (module docstring); None below 2
        rows, and ``[rate, rate]`` when every row has one outcome (no spread to resample)."""
        return win_rate_interval(self.a, self.ties, self.b)

    def to_dict(self) -> dict[str, Any]:
        """``rows``, ``wins_a``, ``wins_b``, ``ties``, ``inconsistent`` (ties because the orders
        disagreed), ``asked_both``, ``inconsistency_rate`` (0..1, None when no row was asked in
        both orders), ``win_rate_b`` (0..1) and its 95% ``win_rate_b_interval``."""
        return {"rows": self.rows, "wins_a": self.a, "wins_b": self.b, "ties": self.ties, "inconsistent": self.inconsistent,
                "asked_both": self.asked_both,
                "inconsistency_rate": self.inconsistent / self.asked_both if self.asked_both else None,
                "win_rate_b": self.win_rate(), "win_rate_b_interval": self.interval()}


@functools.lru_cache(maxsize=64)
def win_rate_interval(a: int, ties: int, b: int, resamples: int = RESAMPLES, seed: int = SEED) -> list[float] | None:
    """The 95% percentile bootstrap interval of B's win rate over ``a`` rows won by A, ``ties``
    and ``b`` won by B: ``ragjudge.significance.mean_interval`` of the values 0, 0.5 and 1, one a
    row; None below 2 rows; ``[rate, rate]`` when every row has one outcome."""
    import numpy as np

    return mean_interval(np.repeat([0.0, 0.5, 1.0], [a, ties, b]), resamples=resamples, seed=seed)


def figures(summary: Any) -> dict[str, Any] | None:
    """A pairwise metric's figures from its ``MetricSummary`` (``summary.pairwise``: the counts;
    None for another metric): ``PairwiseCounts.to_dict``, and with labels (``--labels
    pairwise=COLUMN``, -1/0/1) ``labels``: ``agreement`` (the share of labelled ok rows whose
    verdict equals the label, 0..1), ``labelled`` and ``corrected_win_rate_b`` with its
    ``interval``: the label-corrected mean score (``ragjudge.corrected_rates``, PPI++) as a win
    rate, ``(mean + 1) / 2``; None below the labels an interval needs."""
    counts = getattr(summary, "pairwise", None)
    if counts is None:
        return None
    out = counts.to_dict()
    corrected = summary.corrected() if getattr(summary, "label_column", None) else None
    if corrected is not None:
        stats, mean = summary.label_score, corrected.get("mean_score")
        out["labels"] = {"column": summary.label_column, "labelled": stats.n, "agreement": stats.agree / stats.n if stats.n else None,
                         "corrected_win_rate_b": None if mean is None or mean.estimate is None else (mean.estimate + 1) / 2,
                         "interval": None if mean is None or mean.low is None else [(mean.low + 1) / 2, (mean.high + 1) / 2],
                         "labels_needed": None if mean is None else mean.needed}
    return out


def line(metric: str, figures: dict[str, Any]) -> str:
    """The summary's line of a pairwise metric: B's win rate with its interval, the outcomes and
    the position inconsistency."""
    rate, low_high = figures.get("win_rate_b"), figures.get("win_rate_b_interval")
    shown = "n/a" if rate is None else f"{rate:.2f}" + (f" [{low_high[0]:.2f}, {low_high[1]:.2f}]" if low_high else "")
    incons = figures.get("inconsistency_rate")
    return (f"{metric}: B's win rate {shown} (a tie half a win; 95% bootstrap interval) over {figures['rows']} pairs: "
            f"B {figures['wins_b']}, A {figures['wins_a']}, ties {figures['ties']} ({figures['inconsistent']} because the orders disagreed); "
            f"position inconsistency {'n/a' if incons is None else f'{incons:.2f}'} of {figures['asked_both']} pairs asked in both orders"
            + _labelled(figures.get("labels")))


def _labelled(labels: dict[str, Any] | None) -> str:
    if not labels:
        return ""
    agreement = "n/a" if labels["agreement"] is None else f"{labels['agreement']:.2f}"
    text = f"; against '{labels['column']}' ({labels['labelled']} labelled pairs): exact agreement (A, tie, B) {agreement}"
    if labels["interval"] is None:
        return text + (f", {labels['labels_needed']} more labels give a corrected win rate" if labels.get("labels_needed") else "")
    low, high = labels["interval"]
    return text + f", corrected win rate of B {labels['corrected_win_rate_b']:.2f} [{low:.2f}, {high:.2f}]"

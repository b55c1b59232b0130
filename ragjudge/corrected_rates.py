"""Label-corrected rates: a judge's pass rate (or mean score) corrected by the team's own labels
on some of the rows, with a 95% interval, by prediction-powered inference.

Source: Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered inference", Science
382 (2023); the power-tuned form PPI++ (Angelopoulos, Duchi, Zrnic, arXiv:2311.01453, 2023), as
``ppi_py.ppi_mean_pointestimate`` / ``ppi_mean_ci`` compute it (``lam=None``: tuned, clipped to
0..1). For a mean, with ``n`` labelled rows (label ``Y``, the judge's ``Yhat``) and ``N``
unlabelled rows (the judge's ``Yhat_u``):

    estimate = lam * mean(Yhat_u) + mean(Y - lam * Yhat)
    variance = lam^2 * var(Yhat_u) / N + var(Y - lam * Yhat) / n          (var: ddof 0)
    lam      = cov(Y, Yhat) / ((1 + n/N) * var(Yhat and Yhat_u together, ddof 1)), clipped to 0..1

and the interval is estimate +- z(0.975) * sqrt(variance). ``lam`` = 0 is the labels alone (the
classical interval); 1 is plain PPI. Everything is computed from running sums (``RateStats``),
so chunks of a table add up (``merge``) and no row is kept: the figures are the library's, the
code ours because ``ppi-python`` needs every row in memory and brings numba, statsmodels,
scikit-learn and gdown with it (tests check this module against its values).

Where PPI++'s pass-rate interval has no width (its variance is 0 up to rounding), a rule
stands in under which a better judge never gets a wider interval (issue 60): every label the
same (``lam`` is then 0 whatever the judge, and ppi_py gives [1.00, 1.00] or, with a judge of one
verdict, NaN): the labels' own Wilson interval, for every judge alike; the judge agreeing with
every label and giving every unlabelled row one verdict: the narrowest of the intervals of the
tables one disagreement away (``_one_disagreement_away``). A judge of one verdict on every row
(no variance: ppi_py's ``lam`` is 0/0) gets ``lam`` 0, the labels alone, as ppi_py's ``lam=0``.
Everywhere else, perfect agreement and perfect disagreement included, the figures are ppi_py's.

The interval assumes the labelled rows are a random sample of the rows judged (label a random
subset, not the hard ones). Below ``MIN_LABELS`` labelled rows (or with no unlabelled row) no
interval is given: the normal approximation is not trusted there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from statistics import NormalDist
from typing import Any

MIN_LABELS = 30  # labelled rows below which no interval is given (the normal approximation)


@dataclass
class RateStats:
    """Running sums of one measured quantity (a pass: 0/1; or a score) over the rows a metric
    judged ok: on labelled rows the label ``y`` and the judge's ``h``, on the others ``h`` only.
    ``add`` one row, ``merge`` two chunks; ``corrected`` gives the figures."""

    n: int = 0  # labelled rows
    sy: float = 0.0
    sh: float = 0.0
    syy: float = 0.0
    shh: float = 0.0
    syh: float = 0.0
    agree: int = 0  # labelled rows whose judge value equals the label (for 0/1: the verdict matches)
    big_n: int = 0  # unlabelled rows
    uh: float = 0.0
    uhh: float = 0.0
    unreadable: int = 0  # rows whose label cell held something that is no label (text, a rating off the scale): left out
    on_errors: int = 0  # labelled rows the metric gave no verdict (status error): left out, and counted
    on_skipped: int = 0  # labelled rows the metric skipped (nothing to judge, not sampled): left out, and counted

    def add(self, judged: float, label: float | None) -> None:
        """One row judged ok: the judge's ``judged`` value and the row's ``label`` (None: unlabelled)."""
        h = float(judged)
        if label is None:
            self.big_n += 1
            self.uh += h
            self.uhh += h * h
            return
        y = float(label)
        self.n += 1
        self.sy += y
        self.sh += h
        self.syy += y * y
        self.shh += h * h
        self.syh += y * h
        self.agree += y == h

    def merge(self, other: "RateStats") -> "RateStats":
        return RateStats(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def corrected(self, alpha: float = 0.05) -> "Corrected":
        """The label-corrected mean (module docstring), the judge's own over every row, the labels'
        alone, with their intervals at level ``1 - alpha``."""
        n, big_n = self.n, self.big_n
        total = n + big_n
        judge = (self.sh + self.uh) / total if total else None
        labels_mean = self.sy / n if n else None
        out = Corrected(labelled=n, unlabelled=big_n, judge=judge, labels_only=labels_mean,
                        agreement=self.agree / n if n else None, unreadable=self.unreadable, on_errors=self.on_errors,
                        on_skipped=self.on_skipped)
        if n < MIN_LABELS:
            out.needed = MIN_LABELS - n
            return out
        z = NormalDist().inv_cdf(1 - alpha / 2)
        if big_n == 0:  # every row labelled: the labels' own mean is the rate, with its classical interval
            mean_y = self.sy / n
            spread = z * math.sqrt(max(self.syy / n - mean_y ** 2, 0.0) / n)
            out.estimate, out.low, out.high, out.lam, out.standard_error = mean_y, mean_y - spread, mean_y + spread, 0.0, spread / z
            out.labels_interval = (out.low, out.high)
            if self.syy == self.sy:  # 0/1 labels: a pass rate
                _bounded(out, self.sy, n, spread, max(self.syy / n - mean_y ** 2, 0.0), alpha)
            return out
        mean_y, mean_h, mean_u = self.sy / n, self.sh / n, self.uh / big_n
        var_y = max(self.syy / n - mean_y ** 2, 0.0)
        var_h = max(self.shh / n - mean_h ** 2, 0.0)
        cov_yh = self.syh / n - mean_y * mean_h
        var_u = max(self.uhh / big_n - mean_u ** 2, 0.0)
        all_mean = (self.sh + self.uh) / total
        var_all = max((self.shh + self.uhh - total * all_mean ** 2) / (total - 1), 0.0)  # ddof 1, as numpy's cov
        lam = cov_yh / ((1 + n / big_n) * var_all) if var_all > 0 else 0.0
        lam = min(max(lam, 0.0), 1.0)
        estimate = lam * mean_u + (mean_y - lam * mean_h)
        rectifier = max(var_y + lam ** 2 * var_h - 2 * lam * cov_yh, 0.0)
        spread = z * math.sqrt(lam ** 2 * var_u / big_n + rectifier / n)
        labels_spread = z * math.sqrt(var_y / n)
        out.estimate, out.low, out.high, out.lam = estimate, estimate - spread, estimate + spread, lam
        out.standard_error = spread / z
        out.labels_interval = (mean_y - labels_spread, mean_y + labels_spread)
        if self.syy == self.sy and 0.0 <= mean_y <= 1.0:  # 0/1 labels: a pass rate
            if spread <= _NO_WIDTH and var_y > 0.0:
                _one_disagreement_away(out, self, alpha)
            else:
                _bounded(out, self.sy, n, spread, var_y, alpha)
        return out

    def _flipped(self, label: float) -> "RateStats":
        """These sums with the judge's verdict on one labelled row whose label is ``label`` (0/1)
        turned against it (the row agreed): the table one disagreement away."""
        h = 1.0 - label
        return RateStats(**{**{f.name: getattr(self, f.name) for f in fields(self)}, "sh": self.sh - label + h,
                            "shh": self.shh - label + h, "syh": self.syh - label, "agree": self.agree - 1})


_NO_WIDTH = 1e-12  # a spread at or below it is an interval with no width (0 up to rounding)


def _one_disagreement_away(out: "Corrected", stats: RateStats, alpha: float) -> None:
    """A pass rate whose PPI++ interval has no width though the labels vary: the judge agreed
    with every label (``lam`` 1) and gave every unlabelled row the same verdict, so neither part
    of the variance sees anything (ppi_py: [1.00, 1.00] for 22 of 40 labels yes, all agreed, and
    1,000 unlabelled rows all yes). The interval is the narrowest (within 0..1) of those the same
    table gets with one labelled row's verdict turned against its label (a yes label judged no,
    or a no label judged yes): every table that agrees one label less gets one at least as wide,
    so a better judge never gets a wider interval. The estimate stays PPI++'s, which each of
    those intervals holds (from 2 labelled rows on, z * sqrt((n - 1) / n^2) > 1 / n)."""
    candidates = []
    for label in (1.0, 0.0):
        found = stats._flipped(label).corrected(alpha)
        if found.low is not None and found.high is not None:
            candidates.append((min(found.high, 1.0) - max(found.low, 0.0), max(found.low, 0.0), min(found.high, 1.0), found.standard_error))
    _, low, high, standard_error = min(candidates)
    assert out.estimate is not None
    out.low, out.high, out.standard_error = min(low, out.estimate), max(high, out.estimate), standard_error
    if out.labels_interval is not None:
        out.labels_interval = (max(out.labels_interval[0], 0.0), min(out.labels_interval[1], 1.0))


def _bounded(out: "Corrected", passed: float, n: int, spread: float, var_y: float, alpha: float) -> None:
    """A pass rate's interval kept where the normal approximation holds: where every label is the
    same, the variance PPI++ sees is 0 whatever the judge (``lam`` 0: the judge cannot be told
    from the labels) and the interval would have no width (40 of 40 labels yes gave [1.00,
    1.00]); the labels' own Wilson interval (scipy) stands in, with the labels' mean, for every
    judge alike. Every interval is then kept within 0..1."""
    if spread <= _NO_WIDTH and var_y == 0.0:
        from scipy.stats import binomtest

        wilson = binomtest(int(round(passed)), n).proportion_ci(confidence_level=1 - alpha, method="wilson")
        mean = passed / n
        out.estimate, out.low, out.high, out.lam = mean, float(wilson.low), float(wilson.high), 0.0
        out.standard_error = (float(wilson.high) - float(wilson.low)) / (2 * NormalDist().inv_cdf(1 - alpha / 2))  # for differences
        out.labels_interval = (float(wilson.low), float(wilson.high))
    out.low, out.high = max(out.low or 0.0, 0.0), min(out.high if out.high is not None else 1.0, 1.0)
    if out.labels_interval is not None:
        out.labels_interval = (max(out.labels_interval[0], 0.0), min(out.labels_interval[1], 1.0))


@dataclass
class Corrected:
    """A label-corrected mean (a pass rate 0..1, or a mean score) of one metric: ``estimate`` with
    its interval ``low``..``high`` (None below ``MIN_LABELS`` labelled rows or with no unlabelled
    row: ``needed`` says how many more labels give one), ``labelled`` / ``unlabelled`` rows, the
    ``judge``'s own mean over every row, the labels' own mean (``labels_only``) and interval
    (``labels_interval``, what the labels alone give), the judge's ``agreement`` with the labels
    (share of labelled rows), PPI++'s tuning ``lam`` (0: the labels alone; 1: plain PPI), and the
    estimate's ``standard_error``; ``unreadable``, ``on_errors`` and ``on_skipped``: the label
    cells left out for holding no label, or for rows whose verdict is an error or a skip."""

    labelled: int
    unlabelled: int
    judge: float | None
    labels_only: float | None
    agreement: float | None
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    lam: float | None = None
    labels_interval: tuple[float, float] | None = None
    needed: int | None = None
    standard_error: float | None = None  # of ``estimate``: the interval is estimate +- z * standard_error
    unreadable: int = 0  # label cells that held no readable label (left out, as unlabelled rows are not)
    on_errors: int = 0  # labelled rows whose verdict is an error (left out: no verdict to correct)
    on_skipped: int = 0  # labelled rows the metric skipped (left out likewise)

    @property
    def valid(self) -> bool:
        """Whether an interval was given."""
        return self.low is not None

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "interval": None if self.low is None else [self.low, self.high],
                "labelled": self.labelled, "unlabelled": self.unlabelled, "judge": self.judge, "labels_only": self.labels_only,
                "labels_interval": None if self.labels_interval is None else list(self.labels_interval), "agreement": self.agreement,
                "lam": self.lam, "labels_needed": self.needed, "standard_error": self.standard_error, "labels_unreadable": self.unreadable,
                "labels_on_errors": self.on_errors, "labels_on_skipped": self.on_skipped}


def difference(before: Corrected, after: Corrected, alpha: float = 0.05) -> dict[str, Any]:
    """``after``'s corrected estimate less ``before``'s (two runs, e.g. a baseline and this run),
    with a ``1 - alpha`` interval: ``{"change", "interval", "labelled": [before's, after's],
    "labels_needed"}``; change and interval None when either run has no interval (``needed``: the
    more labels the run with fewer needs). The two estimates are taken as independent (their
    variances add): where both runs judged the same rows and labelled the same ones, the errors
    are positively correlated and this interval is wider than it need be (conservative), never
    narrower."""
    out: dict[str, Any] = {"change": None, "interval": None, "labelled": [before.labelled, after.labelled], "labels_needed": None}
    if not (before.valid and after.valid):
        out["labels_needed"] = max(before.needed or 0, after.needed or 0) or None
        return out
    assert before.estimate is not None and after.estimate is not None
    change = after.estimate - before.estimate
    spread = NormalDist().inv_cdf(1 - alpha / 2) * math.sqrt((before.standard_error or 0.0) ** 2 + (after.standard_error or 0.0) ** 2)
    out["change"], out["interval"] = change, [change - spread, change + spread]
    return out


def label_pass(value: Any, binary: bool, threshold: float, scale: tuple[float, float] | None = None) -> float | None:
    """A label cell as a pass (1.0) or a fail (0.0), None when the row has no label: for a
    yes/no metric (``binary``) yes/true/1 or no/false/0 (any case; 1.0 and 0.0 as a CSV holds
    them); for a scale, a rating (within ``scale``, low..high, where given) passes at
    ``threshold`` or above. A cell that is neither (text, a list, a rating off the scale) counts as
    no label; ``blank`` tells it from an empty cell."""
    if binary:
        found = label_yes_no(value)
        return None if found is None else float(found)
    rating = label_rating(value, scale)
    return None if rating is None else float(rating >= threshold)


def blank(value: Any) -> bool:
    """Whether a label cell is empty: None, NaN, or blank text (a row nobody labelled)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return not value.strip()
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not hasattr(value, "__len__") else False
    except (TypeError, ValueError):
        return False


def label_rating(value: Any, scale: tuple[float, float] | None = None) -> float | None:
    """A label cell as a finite number (a 1..5 rating) within ``scale`` (low..high) where given,
    None otherwise (booleans and text too)."""
    if hasattr(value, "item") and not isinstance(value, str):
        if getattr(value, "ndim", 0):
            return None
        value = value.item()
    if value is None or isinstance(value, (bool, list, tuple, dict)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number) or (scale is not None and not scale[0] <= number <= scale[1]):
        return None
    return number


def label_yes_no(value: Any) -> bool | None:
    """A label cell as yes (True) / no (False): a bool, 1/0, or yes/no/true/false/1/0 in any case; None otherwise."""
    if hasattr(value, "item") and not isinstance(value, str) and not getattr(value, "ndim", 0):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    found = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(text)
    if found is None:
        try:
            number = float(text)  # "1.0" / "0.0": a 0/1 column with gaps, as a CSV holds it
        except ValueError:
            return None
        found = {1.0: True, 0.0: False}.get(number)
    return found


CURVE_BINS = 10  # the calibration curve's equal-width bins of P over 0..1


@dataclass
class ProbabilityStats:
    """Running sums of a metric's verdict probabilities (``Verdict.probability``: P(yes) of a
    binary metric, P(pass) of a scored one, 0..1) over the rows judged ok with one: their count
    and sum (the mean), and on the rows with a readable label the calibration curve's sums per
    equal-width bin (``bins``, default ``CURVE_BINS``, bins of P; a P of 1.0 falls in the last) and the Brier score's
    sum of squared errors (P against the labelled pass, 0/1). Chunks add up (``merge``); no row is
    kept. The curve is the reliability diagram of DeGroot and Fienberg (1983) / Niculescu-Mizil and
    Caruana (2005), binned as scikit-learn's ``calibration_curve(strategy="uniform")``; the Brier
    score is Brier (1950)'s mean squared error of the probabilities."""

    n: int = 0  # ok rows with a probability
    sp: float = 0.0
    labelled: int = 0  # of them, rows with a readable label
    brier: float = 0.0  # the sum of (P - label)^2 over the labelled rows
    bin_n: list[int] = field(default_factory=list)
    bin_p: list[float] = field(default_factory=list)
    bin_yes: list[int] = field(default_factory=list)
    bins: int = CURVE_BINS  # equal-width bins of P over 0..1

    def __post_init__(self) -> None:
        self.bin_n = self.bin_n or [0] * self.bins
        self.bin_p = self.bin_p or [0.0] * self.bins
        self.bin_yes = self.bin_yes or [0] * self.bins

    def add(self, p: float) -> None:
        """One ok row's probability ``p`` (0..1)."""
        self.n += 1
        self.sp += float(p)

    def add_label(self, p: float, label: float) -> None:
        """One ok row's probability ``p`` and its labelled pass ``label`` (1.0 yes / pass, 0.0 no / fail)."""
        p, y = float(p), float(label)
        at = min(int(p * self.bins), self.bins - 1)
        self.labelled += 1
        self.brier += (p - y) ** 2
        self.bin_n[at] += 1
        self.bin_p[at] += p
        self.bin_yes[at] += int(y)

    def merge(self, other: "ProbabilityStats") -> "ProbabilityStats":
        return ProbabilityStats(self.n + other.n, self.sp + other.sp, self.labelled + other.labelled, self.brier + other.brier,
                                [a + b for a, b in zip(self.bin_n, other.bin_n)], [a + b for a, b in zip(self.bin_p, other.bin_p)],
                                [a + b for a, b in zip(self.bin_yes, other.bin_yes)], self.bins)

    @property
    def mean(self) -> float | None:
        """The mean probability over the ok rows with one; None without such rows."""
        return self.sp / self.n if self.n else None

    def curve(self) -> list[dict[str, Any]]:
        """The calibration curve: per non-empty bin, ``low`` and ``high`` (its edges), ``rows``
        (labelled rows in it), ``mean_probability`` (their mean P), ``observed`` (the share labelled
        yes / pass) and ``interval`` (its Wilson 95% interval, scipy's ``binomtest``)."""
        from scipy.stats import binomtest

        out = []
        for at, count in enumerate(self.bin_n):
            if not count:
                continue
            ci = binomtest(self.bin_yes[at], count).proportion_ci(confidence_level=0.95, method="wilson")
            out.append({"low": at / self.bins, "high": (at + 1) / self.bins, "rows": count, "mean_probability": self.bin_p[at] / count,
                        "observed": self.bin_yes[at] / count, "interval": [float(ci.low), float(ci.high)]})
        return out

    def to_dict(self) -> dict[str, Any]:
        """``rows`` and ``mean``; with labelled rows, ``labelled``, ``brier`` (0..1, lower is better;
        always saying the base rate scores base x (1 - base)) and ``curve``."""
        out: dict[str, Any] = {"rows": self.n, "mean": self.mean}
        if self.labelled:
            out.update(labelled=self.labelled, brier=self.brier / self.labelled, curve=self.curve())
        return out




def ppi_binary_mean(n: Any, sy: Any, sh: Any, syh: Any, big_n: Any, uh: Any) -> Any:
    """PPI++'s point estimate (module docstring: tuned ``lam``, clipped to 0..1) of the mean of a 0/1
    quantity from its sums: ``n`` labelled rows with ``sy`` labels 1, ``sh`` judge values 1 and
    ``syh`` rows where both are 1, ``big_n`` unlabelled rows with ``uh`` judge values 1 (for 0/1 the
    sums of squares are the sums). Works on numbers or numpy arrays alike (one estimate per entry);
    NaN where ``n`` is 0. With no unlabelled row it is the labels' mean (lam 0, as ``corrected``)."""
    import numpy as np

    n, sy, sh, syh, big_n, uh = (np.asarray(v, dtype=float) for v in (n, sy, sh, syh, big_n, uh))
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_y, mean_h = sy / n, sh / n
        mean_u = np.where(big_n > 0, uh / np.where(big_n > 0, big_n, 1.0), 0.0)
        cov_yh = syh / n - mean_y * mean_h
        total = n + big_n
        all_mean = (sh + uh) / total
        var_all = np.maximum((sh + uh - total * all_mean ** 2) / (total - 1), 0.0)  # ddof 1, as numpy's cov
        ratio = np.where(big_n > 0, n / np.where(big_n > 0, big_n, 1.0), 0.0)
        lam = np.where((var_all > 0) & (big_n > 0), cov_yh / ((1 + ratio) * np.where(var_all > 0, var_all, 1.0)), 0.0)
        lam = np.clip(lam, 0.0, 1.0)
        out = lam * mean_u + (mean_y - lam * mean_h)
    return out if out.ndim else float(out)


@dataclass
class RatioCorrected:
    """A label-corrected ratio of two 0/1 means (``ratio_corrected``): ``estimate`` with its 95%
    interval ``low``..``high`` (None below ``MIN_LABELS`` labelled rows: ``needed`` more give one),
    ``labelled`` / ``unlabelled`` rows."""

    labelled: int
    unlabelled: int
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    needed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "interval": None if self.low is None else [self.low, self.high], "labelled": self.labelled,
                "unlabelled": self.unlabelled, "labels_needed": self.needed}


RESAMPLES = 2000  # bootstrap resamples of ``ratio_corrected``'s interval
SEED = 0  # its generator's seed: the same rows give the same interval


def ratio_corrected(labelled: Any, unlabelled: Any, alpha: float = 0.05, resamples: int = RESAMPLES, seed: int = SEED) -> RatioCorrected:
    """The label-corrected ratio mean(a) / mean(b) of two 0/1 quantities per row (the abstention
    audit's rates: a row answered with insufficient context, over a row with insufficient context).
    ``labelled``: rows as ``(a label, b label, a judged, b judged)``; ``unlabelled``: rows as
    ``(a judged, b judged)`` (0/1 each). The estimate is the ratio of the two PPI++ means
    (``ppi_binary_mean``) over the same rows; its ``1 - alpha`` interval the percentile interval of
    a bootstrap that resamples the labelled and the unlabelled rows apart (each with replacement,
    their own count; drawn as multinomial counts of the rows' distinct 0/1 patterns, which is the
    same resample; numpy's ``default_rng(seed)``), resamples whose denominator is 0 left out; where
    that interval has no width (every resample gives the same ratio: no labelled row counted, or
    every one), the labelled rows' own Wilson interval (count among rows, by the labels) stands in, as
    ``_bounded`` does for a pass rate, so a rate seen 0 times is not known to be exactly 0. No
    interval below ``MIN_LABELS`` labelled rows (``needed``), nor when the denominator's estimate is
    not above 0 (estimate None)."""
    import numpy as np

    lab = np.asarray(labelled, dtype=float).reshape(-1, 4)
    unl = np.asarray(unlabelled, dtype=float).reshape(-1, 2)
    n, big_n = len(lab), len(unl)
    out = RatioCorrected(labelled=n, unlabelled=big_n)
    if n < MIN_LABELS:
        out.needed = MIN_LABELS - n
        return out

    def means(lab_counts: Any, lab_patterns: Any, unl_counts: Any, unl_patterns: Any) -> tuple[Any, Any]:
        ya, yb, ha, hb = (lab_counts @ lab_patterns[:, k] for k in range(4))
        ua, ub = (unl_counts @ unl_patterns[:, k] for k in range(2)) if len(unl_patterns) else (0.0, 0.0)
        return (ppi_binary_mean(n, ya, ha, lab_counts @ (lab_patterns[:, 0] * lab_patterns[:, 2]), big_n, ua),
                ppi_binary_mean(n, yb, hb, lab_counts @ (lab_patterns[:, 1] * lab_patterns[:, 3]), big_n, ub))

    lab_patterns, lab_counts = np.unique(lab, axis=0, return_counts=True)
    unl_patterns, unl_counts = np.unique(unl, axis=0, return_counts=True) if big_n else (np.zeros((0, 2)), np.zeros(0))
    top, bottom = means(lab_counts.astype(float), lab_patterns, unl_counts.astype(float), unl_patterns)
    if not bottom > 0:
        return out
    out.estimate = float(top / bottom)
    rng = np.random.default_rng(seed)
    lab_draws = rng.multinomial(n, lab_counts / n, size=resamples).astype(float)
    unl_draws = rng.multinomial(big_n, unl_counts / big_n, size=resamples).astype(float) if big_n else np.zeros((resamples, 0))
    tops, bottoms = means(lab_draws, lab_patterns, unl_draws, unl_patterns)
    kept = bottoms > 0
    ratios = tops[kept] / bottoms[kept]
    low, high = np.percentile(ratios, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    counted, rows = int(lab[:, 0].sum()), int(lab[:, 1].sum())
    if high - low <= _NO_WIDTH and rows:  # every resample the same (e.g. no labelled row counted): the labels' own Wilson interval
        from scipy.stats import binomtest

        wilson = binomtest(counted, rows).proportion_ci(confidence_level=1 - alpha, method="wilson")
        low, high = min(float(wilson.low), low), max(float(wilson.high), high)
    out.low, out.high = float(min(max(low, 0.0), out.estimate)), float(max(min(high, 1.0), out.estimate))
    return out


__all__ = ["MIN_LABELS", "Corrected", "ProbabilityStats", "RateStats", "RatioCorrected", "blank", "difference", "label_pass", "label_rating",
           "label_yes_no", "ppi_binary_mean", "ratio_corrected"]

"""The statistics of a paired comparison of two runs (``ragjudge.compare``, issue 64): a
seeded paired bootstrap interval of a change (scipy's ``bootstrap``) and p-values adjusted for
testing several slices together (Holm's step-down, Benjamini-Hochberg). McNemar's and
Wilcoxon's tests themselves are ``ragjudge.compare``'s.
"""

from __future__ import annotations

from typing import Any

CONFIDENCE = 0.95  # the intervals' level
RESAMPLES = 9999  # bootstrap resamples per interval (scipy's default)
SEED = 0  # the bootstrap's seed: the same tables give the same intervals
CORRECTIONS = ("holm", "bh")  # across the slices of --by: Holm's step-down (the family-wise error), Benjamini-Hochberg (the false discovery rate)
ALPHA = 0.05  # the level a slice's change is called significant at when --alpha is not given


def generator(function: Any, seed: int) -> dict[str, Any]:
    """``function``'s keyword for a seeded ``numpy.random.Generator``: ``rng`` from scipy 1.15 (SPEC 7),
    ``random_state`` before it (scipy 1.13 and 1.14, which the declared range allows)."""
    import inspect

    import numpy as np

    name = "rng" if "rng" in inspect.signature(function).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def paired_interval(before: list[float], after: list[float], *, resamples: int = RESAMPLES, seed: int = SEED) -> list[float] | None:
    """The ``CONFIDENCE`` (95%) bootstrap interval ``[low, high]`` of the paired change
    ``mean(after) - mean(before)``: ``before[i]`` and ``after[i]`` are one row's values in the
    two runs (1.0 / 0.0 for passed / failed, or scores), resampled together (rows, not runs).
    scipy's ``bootstrap`` (``paired=True``, percentile method, ``resamples`` resamples, the
    generator ``numpy.random.default_rng(seed)``), so the same tables give the same interval.
    None with fewer than two pairs (no spread to resample); ``[d, d]`` when every row changed
    by the same ``d`` (no change at all included)."""
    if len(before) < 2:
        return None
    import numpy as np

    x, y = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    # the rows' differences as one sample: the same resampled rows as bootstrap((x, y), ..., paired=True) draws with the
    # same generator (scipy resamples the row indices of paired samples as one sample), half the indexing
    return mean_interval(y - x, resamples=resamples, seed=seed)


def mean_interval(values: Any, *, resamples: int = RESAMPLES, seed: int = SEED) -> list[float] | None:
    """The ``CONFIDENCE`` (95%) percentile bootstrap interval ``[low, high]`` of the mean of
    ``values`` (one per row): scipy's ``bootstrap`` (``resamples`` resamples, vectorised, the
    generator ``numpy.random.default_rng(seed)``). None below two values; ``[v, v]`` when every
    value is ``v`` (a degenerate resampling: every resample has the same mean)."""
    import numpy as np
    from scipy.stats import bootstrap

    sample = np.asarray(values, dtype=float)
    if len(sample) < 2:
        return None
    if np.all(sample == sample[0]):
        return [float(sample[0]), float(sample[0])]
    found = bootstrap((sample,), np.mean, vectorized=True, n_resamples=resamples, batch=max(1, 2_000_000 // len(sample)),
                      confidence_level=CONFIDENCE, method="percentile", **generator(bootstrap, seed))
    return [float(found.confidence_interval.low), float(found.confidence_interval.high)]


def adjusted(pvalues: list[float | None], correction: str = "holm") -> list[float | None]:
    """``pvalues`` (one per slice; None: a slice with no test, left out of the family and
    kept None) adjusted for testing them together: ``holm``, Holm's step-down (Holm 1979,
    "A simple sequentially rejective multiple test procedure"; controls the family-wise error
    rate), or ``bh``, Benjamini-Hochberg's step-up (1995; controls the false discovery rate,
    ``scipy.stats.false_discovery_control``). The values of ``statsmodels.stats.multitest.
    multipletests(method='holm' / 'fdr_bh')``. Raises ``ValueError`` for another correction."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r}: give one of {', '.join(CORRECTIONS)}")
    tested = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if not tested:
        return out
    ps = [float(pvalues[i]) for i in tested]  # type: ignore[arg-type]
    if correction == "bh":
        from scipy.stats import false_discovery_control

        found = [float(p) for p in false_discovery_control(ps, method="bh")]
    else:
        m, running, found = len(ps), 0.0, [0.0] * len(ps)
        for rank, k in enumerate(sorted(range(m), key=lambda k: ps[k])):  # smallest first: times m, m - 1, ..., kept monotone
            running = max(running, min(1.0, (m - rank) * ps[k]))
            found[k] = running
    for i, p in zip(tested, found):
        out[i] = p
    return out


__all__ = ["adjusted", "paired_interval", "ALPHA", "CONFIDENCE", "CORRECTIONS", "RESAMPLES", "SEED"]

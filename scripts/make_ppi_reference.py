"""Write tests/data/ppi_reference.json: label-corrected means computed by the reference implementation,
ppi_py (ppi-python on PyPI), for tests/unit/test_calibration.py to check ragjudge.corrected_rates against.

Run it where ppi-python is installed (it is no ragjudge dependency: it brings numba, statsmodels,
scikit-learn and gdown):

    python -m venv /tmp/vppi && /tmp/vppi/bin/pip install ppi-python && /tmp/vppi/bin/python scripts/make_ppi_reference.py
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "ppi_reference.json"


def binary(rng: random.Random, n: int, big_n: int, p: float = 0.6, tp: float = 0.9, fp: float = 0.35):
    """A judge that says yes too easily: yes on 90% of true yes rows and 35% of true no rows."""
    labels, judged, unlabelled = [], [], []
    for i in range(n + big_n):
        y = 1.0 if rng.random() < p else 0.0
        h = 1.0 if rng.random() < (tp if y else fp) else 0.0
        if i < n:
            labels.append(y)
            judged.append(h)
        else:
            unlabelled.append(h)
    return labels, judged, unlabelled


def _table(yes: int, n: int, agree: str, yes_u: int, big_n: int):
    """``n`` labelled rows, ``yes`` of them labelled yes, and ``big_n`` unlabelled rows the judge
    says yes on ``yes_u`` of; on the labelled rows the judge ``agree``s: "all" (its verdict is the
    label), "none" (the opposite), "yes" (yes on every row), or "all but one" (one yes label judged no)."""
    labels = [1.0] * yes + [0.0] * (n - yes)
    judged = {"all": list(labels), "none": [1.0 - y for y in labels], "yes": [1.0] * n,
              "all but one": [0.0] + labels[1:]}[agree]
    return labels, judged, [1.0] * yes_u + [0.0] * (big_n - yes_u)


# Degenerate tables (issue 60, item 1): the labels' variance zero, the judge's, both; the judge
# agreeing with every label, with none. ppi_py's interval there is NaN (the judge's verdicts have
# no variance: lam is 0/0) or has no width; ragjudge's rule for those is documented in
# ragjudge.corrected_rates and checked by tests/unit/test_calibration.py.
DEGENERATE = {
    "labels all yes": (40, 40, "all but one", 650, 1000),
    "labels all yes, the judge agreeing": (40, 40, "all", 650, 1000),
    "the judge yes on every row": (22, 40, "yes", 1000, 1000),
    "the judge yes on every labelled row": (22, 40, "yes", 650, 1000),
    "both all yes": (40, 40, "all", 1000, 1000),
    "perfect agreement": (22, 40, "all", 650, 1000),
    "one disagreement": (22, 40, "all but one", 650, 1000),
    "perfect disagreement": (22, 40, "none", 650, 1000),
    "perfect agreement, every unlabelled row yes": (22, 40, "all", 1000, 1000),
}


def _ci(y, h, u, lam=None) -> dict:
    """ppi_py's estimate and 95% interval (None for NaN) and its tuned ``lam`` (``lam``: fixed)."""
    y, h, u = np.array(y), np.array(h), np.array(u)
    with np.errstate(all="ignore"):
        estimate = float(np.ravel(ppi_mean_pointestimate(y, h, u, lam=lam))[0])
        low, high = ppi_mean_ci(y, h, u, alpha=0.05, lam=lam)
    found = {"estimate": estimate, "low": float(np.ravel(low)[0]), "high": float(np.ravel(high)[0])}
    return {key: None if math.isnan(value) else value for key, value in found.items()}


def main() -> None:
    rng = random.Random(7)
    cases = [binary(rng, n, big_n) for n, big_n in ((40, 400), (100, 900), (30, 60))]
    scores = random.Random(3)
    labels = [float(scores.randint(1, 5)) for _ in range(35)]
    judged = [min(5.0, y + scores.choice([0, 0, 1])) for y in labels]  # a judge that scores a point high a third of the time
    cases.append((labels, judged, [float(scores.randint(2, 5)) for _ in range(120)]))
    out = []
    for y, h, u in cases:
        estimate = float(np.ravel(ppi_mean_pointestimate(np.array(y), np.array(h), np.array(u)))[0])
        low, high = ppi_mean_ci(np.array(y), np.array(h), np.array(u), alpha=0.05)
        out.append({"labels": y, "judged": h, "unlabelled": u, "estimate": estimate, "low": float(np.ravel(low)[0]),
                    "high": float(np.ravel(high)[0])})
    degenerate = []
    for name, table in DEGENERATE.items():
        y, h, u = _table(*table)
        degenerate.append({"name": name, "labels": y, "judged": h, "unlabelled": u, "tuned": _ci(y, h, u),
                           "labels_alone": _ci(y, h, u, lam=0.0), "plain": _ci(y, h, u, lam=1.0)})
    source = "ppi_py 0.2.3 (ppi-python on PyPI): ppi_mean_pointestimate and ppi_mean_ci(alpha=0.05), lam=None (PPI++, tuned and clipped)"
    OUT.write_text(json.dumps({"source": source, "cases": out, "degenerate": degenerate}) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

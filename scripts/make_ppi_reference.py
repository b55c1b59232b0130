"""Write tests/data/ppi_reference.json: label-corrected means computed by the reference implementation,
ppi_py (ppi-python on PyPI), for tests/unit/test_calibration.py to check ragjudge.calibration against.

Run it where ppi-python is installed (it is no ragjudge dependency: it brings numba, statsmodels,
scikit-learn and gdown):

    python -m venv /tmp/vppi && /tmp/vppi/bin/pip install ppi-python && /tmp/vppi/bin/python scripts/make_ppi_reference.py
"""

from __future__ import annotations

import json
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
    source = "ppi_py 0.2.3 (ppi-python on PyPI): ppi_mean_pointestimate and ppi_mean_ci(alpha=0.05), lam=None (PPI++, tuned and clipped)"
    OUT.write_text(json.dumps({"source": source, "cases": out}) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

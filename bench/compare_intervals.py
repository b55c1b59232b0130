"""Figure C: what the 95% paired bootstrap intervals of ``ragjudge compare`` (issue 64) cost:
``compare`` of two scored tables of N rows, one metric on a 1..5 scale (a pass-rate interval and
a mean-score interval), without and with ``--by`` over four slices (each slice's two intervals
too). Prints seconds per call, best of 3; nothing is asserted.

    python bench/compare_intervals.py [--rows 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from ragjudge.compare import compare


def tables(rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    source = rng.choice(list("abcd"), rows)
    ids = [f"r{i}" for i in range(rows)]

    def table(drift: float) -> pd.DataFrame:
        score = np.clip(np.round(rng.normal(3.4 - drift, 1.2, rows)), 1, 5)
        return pd.DataFrame({"id": ids, "source": source, "completeness_status": "ok", "completeness_passed": score >= 3,
                             "completeness_score": score})

    return table(0.0), table(0.1)


def best(call, times: int = 3) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        spent.append(time.perf_counter() - start)
    return min(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000,10000,100000")
    args = parser.parse_args()
    compare(*tables(100))  # scipy's import, once
    for rows in map(int, args.rows.split(",")):
        base, cur = tables(rows)
        whole = best(lambda base=base, cur=cur: compare(base, cur))
        sliced = best(lambda base=base, cur=cur: compare(base, cur, by="source"))
        none = best(lambda base=base, cur=cur: compare(base, cur, resamples=2))
        print(f"{rows:>7} rows: compare {whole:.2f} s, --by source (4 slices) {sliced:.2f} s; with 2 resamples (the rest of compare) {none:.2f} s")


if __name__ == "__main__":
    main()

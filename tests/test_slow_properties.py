"""Slow in-process checks, outside the unit tier (marked slow: `make test` runs them, `make check`
leaves them out): the significance gate's rate of failing tables with no change, over 300 of them;
a new stdin told from an old one whose id it reuses, over 50 full garbage collections."""

from __future__ import annotations

import gc
import io
import sys

import numpy as np
import pandas as pd
import pytest

from ragjudge.io.formats import stdin_head


def _no_change(rng: np.random.Generator, rows: int = 90) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A table scored twice with no change: each row passes at its slice's rate, independently each time."""
    source = rng.choice(["a", "b", "c"], rows)
    rate = np.select([source == "a", source == "b"], [0.8, 0.6], 0.4)
    ids = [f"r{i}" for i in range(rows)]

    def table() -> pd.DataFrame:
        return pd.DataFrame({"id": ids, "source": source, "sufficiency_status": "ok", "sufficiency_passed": rng.random(rows) < rate})

    return table(), table()


@pytest.mark.slow  # 300 comparisons: 2 to 10 s
def test_a_no_change_table_fails_the_significance_gate_no_more_often_than_alpha():
    from ragjudge.compare import checks, compare
    from ragjudge.gate import exit_code

    rng = np.random.default_rng(64)
    alpha, tables = 0.05, 300
    failed = failed_by_the_bound = 0
    for _ in range(tables):
        base, cur = _no_change(rng)
        report = compare(base, cur, by="source", alpha=alpha, resamples=99)  # few resamples: the gate reads the p-values alone
        failed += exit_code(checks(report, max_drop=0.0, alpha=alpha)) == 1  # the metric's drop and each slice's, Holm-adjusted
        failed_by_the_bound += exit_code(checks(report, max_drop=0.0)) == 1
    # McNemar's exact test and Holm's correction hold the error at alpha or less (measured: 6 of 300, 0.02)
    assert failed / tables <= alpha
    # without --alpha, --max-drop 0 fails 131 of these 300 noisy runs (0.44): what the significance gate is for
    assert failed_by_the_bound / tables > 0.3


def _stdin(data: bytes):
    return io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding="utf-8")


@pytest.mark.slow  # 50 full garbage collections: seconds in a test process holding the whole suite
def test_a_new_stdin_is_looked_at_again_even_where_python_reuses_the_old_ones_id(monkeypatch):
    # found in the full suite: the head was kept by id(sys.stdin), and a stream made after the
    # last one was freed can get its id, so a later test's stdin was told by an earlier one's bytes
    monkeypatch.setattr(sys, "stdin", _stdin(b'{"request": "first"}\n'))
    assert stdin_head() == b'{"request": "first"}\n'
    for attempt in range(50):  # a freed stream's memory is usually handed to the next one made
        monkeypatch.setattr(sys, "stdin", None)
        gc.collect()
        monkeypatch.setattr(sys, "stdin", _stdin(b"second %d\n" % attempt))
        assert stdin_head() == b"second %d\n" % attempt

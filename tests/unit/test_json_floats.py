"""JSON Lines and JSON outputs keep every float exactly: pandas' JSON writer keeps 15 decimals,
so a property test drew 1.00713108221e-05, written as 1.0071310822e-05 (and 1e-20 became 0.0)."""

from __future__ import annotations

import pandas as pd
import pytest

from ragjudge.io import read_table, write_table


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_small_and_long_floats_are_written_exactly(tmp_path, fmt):
    values = [1.00713108221e-05, 1e-20, float("nan"), 0.5, 1.2345678901234567e-12, -3.3e-300, 123456789.123456789]
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(len(values))], "float": values, "score": [1.0] * len(values)})
    path = tmp_path / f"t.{fmt}"
    write_table(frame, str(path))
    back = read_table(str(path))["float"].tolist()
    assert back[:2] == [1.00713108221e-05, 1e-20]
    assert back[2] is None or pd.isna(back[2])
    assert back[3:] == values[3:]
    assert '"float":1e-20' in path.read_text().replace(" ", "")  # a number, not a string


def test_a_chunk_with_no_such_float_is_written_as_before(tmp_path):
    frame = pd.DataFrame({"id": ["a"], "score": [0.25], "url": ["http://x/y"]})
    path = tmp_path / "t.jsonl"
    write_table(frame, str(path))
    assert path.read_text() == '{"id":"a","score":0.25,"url":"http://x/y"}\n'

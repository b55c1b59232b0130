"""Slow in-process checks, outside the unit tier (marked slow: `make test` runs them, `make check`
leaves them out): a new stdin told from an old one whose id it reuses, over 50 full garbage
collections. (The significance gate's rate of failing tables with no change is in the unit tier:
tests/unit/test_compare_significance.py.)"""

from __future__ import annotations

import gc
import io
import sys

import pytest

from ragjudge.io.formats import stdin_head


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

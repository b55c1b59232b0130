"""Reading stdin: the first bytes looked at to tell its format (``io.stdin_head``) and the copy
made to count its rows (``io.spool_stdin``) belong to the stream they were read from."""

import gc
import io
import os
import sys

import pytest

from ragjudge.io.formats import spool_stdin, stdin_head


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


def test_a_new_stdin_is_spooled_again(monkeypatch):
    monkeypatch.setattr(sys, "stdin", _stdin(b"a\nb\n"))
    first = spool_stdin()
    assert spool_stdin() == first  # the same stream: the same copy
    monkeypatch.setattr(sys, "stdin", _stdin(b"c\n"))
    second = spool_stdin()
    assert second != first
    with open(second, "rb") as handle:
        assert handle.read() == b"c\n"


def test_a_copy_of_stdin_that_stdin_no_longer_is_is_closed(monkeypatch):
    # the copy was left open when a caller (a test's monkeypatch) put its own stdin back:
    # "ResourceWarning: unclosed file .ragjudge-stdin.*" when it was freed
    from ragjudge.io import formats

    monkeypatch.setattr(sys, "stdin", _stdin(b"a\n"))
    spool_stdin()
    first = formats._stdin()  # the copy the readers read as stdin (sys.stdin itself is never replaced)
    monkeypatch.setattr(sys, "stdin", _stdin(b"b\n"))
    path = spool_stdin()
    copy = formats._stdin()
    assert first.closed and not copy.closed
    formats._remove_spooled(copy, path)  # what the exit does
    assert copy.closed and not os.path.exists(path)

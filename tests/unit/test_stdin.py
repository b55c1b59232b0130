"""Reading stdin: the first bytes looked at to tell its format (``io.stdin_head``) and the copy
made to count its rows (``io.spool_stdin``) belong to the stream they were read from."""

import io
import os
import sys

from ragjudge.io.formats import spool_stdin


def _stdin(data: bytes):
    return io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding="utf-8")


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

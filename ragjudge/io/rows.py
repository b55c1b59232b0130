"""JSON Lines rows as read, before pandas: the reader behind both the local engine's JSON Lines
input and ``readers.iter_chunks`` for that format, and ``RowChunk``, a chunk of those rows.

A local run reads a JSON Lines file's chunks as ``RowChunk``s and plans and judges them from
the rows themselves; the pandas DataFrame of a chunk (``RowChunk.frame``) is made only when the
chunk's verdicts are framed. So a run's first calls go out before pandas is imported (about a
third of a second of start-up on a 2-core machine), and the import happens while they are in
flight (issue 51; bench/README.md, figure 1c). ``RowChunk.frame`` is the very DataFrame
``readers.iter_chunks`` yields for the same rows: Python objects, every key of the chunk a
column in the order first seen, a missing key NaN. This module imports no pandas.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ragjudge.errors import InputError
from ragjudge.io.formats import _name, _open_binary, is_stdin
from ragjudge.types import clean


def json_error(exc: json.JSONDecodeError) -> str:
    """What is wrong with a JSON text and where, as a message says it: ``Expecting ',' delimiter
    at column 17``; json's own messages that end in "at" (``Unterminated string starting at``)
    say it once."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


NAN = float("nan")  # what a DataFrame of Python objects holds for a key a row lacks


def jsonl_rows(path: str, chunk_size: int) -> Iterator[list[dict[str, Any]]]:
    """The JSON Lines file at ``path`` (``-``: stdin) as lists of at most ``chunk_size`` row
    dicts, as ``json`` reads each line (blank lines skipped; an unpaired surrogate escape becomes
    U+FFFD). Raises ``InputError`` naming the line for
    text that is not UTF-8, a line that is not JSON, or JSON that is not an object, with the fix."""
    stream = _open_binary(path)
    rows: list[dict[str, Any]] = []
    try:
        for lineno, raw in enumerate(stream, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{_name(path)}: line {lineno}: not UTF-8 text (byte {exc.start + 1} of the line); save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except RecursionError:
                raise InputError(f"{_name(path)}: line {lineno}: JSON nested too deeply to read") from None
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{_name(path)}: line {lineno}: not valid JSON ({json_error(exc)}); "
                    "each line must hold one JSON object"
                ) from None
            if not isinstance(obj, dict):
                raise InputError(
                    f"{_name(path)}: line {lineno}: expected a JSON object, got {type(obj).__name__}; "
                    "each line must hold one JSON object"
                )
            if "\\ud" in line.lower():
                obj = clean(obj)  # an unpaired surrogate escape (half an emoji) becomes U+FFFD: every output is UTF-8
            rows.append(obj)
            if len(rows) == chunk_size:
                yield rows
                rows = []
        if rows:
            yield rows
    finally:
        if not is_stdin(path):
            stream.close()


def jsonl_chunks(path: str, chunk_size: int) -> Iterator["RowChunk"]:
    """``jsonl_rows`` as ``RowChunk``s (each chunk's own columns, as a DataFrame of it would have)."""
    for rows in jsonl_rows(path, chunk_size):
        yield RowChunk(rows)


def columns_of(rows: list[dict[str, Any]]) -> list[str]:
    """Every key of ``rows``, in the order first seen: a DataFrame of ``rows``' columns."""
    return list(dict.fromkeys(key for row in rows for key in row))


class RowChunk:
    """Rows of a table as dicts (``rows``, as read), with the frame operations a run's plan and
    the local engine make on a chunk before its verdicts are framed: ``columns``, ``len``,
    ``head(n)``, ``to_dict("records")``, ``chunk[column].tolist()`` and ``iloc[a:b]``, each giving
    what the same operation on ``frame()`` gives. ``offset``: the position of the first row in the
    chunk it was sliced from (the DataFrame's index starts there, as ``iloc`` slices keep it)."""

    __slots__ = ("rows", "columns", "offset")

    def __init__(self, rows: list[dict[str, Any]], columns: list[str] | None = None, offset: int = 0) -> None:
        self.rows = rows
        self.columns = columns_of(rows) if columns is None else columns
        self.offset = offset

    def __len__(self) -> int:
        return len(self.rows)

    def head(self, n: int = 5) -> "RowChunk":
        return RowChunk(self.rows[:n], self.columns, self.offset)

    def to_dict(self, orient: str = "records") -> list[dict[str, Any]]:
        """The rows as ``DataFrame.to_dict("records")`` gives them: new dicts, every column in
        order, NaN where a row lacks the key."""
        if orient != "records":
            raise ValueError("a RowChunk gives its rows as records only")
        columns = self.columns
        return [{c: row.get(c, NAN) for c in columns} for row in self.rows]

    def __getitem__(self, column: str) -> "_Column":
        if column not in self.columns:
            raise KeyError(column)
        return _Column([row.get(column, NAN) for row in self.rows])

    @property
    def iloc(self) -> "_Slicer":
        return _Slicer(self)

    def frame(self) -> Any:
        """The pandas DataFrame of these rows (imports pandas): ``readers.iter_chunks``' frame of
        the same rows, with the index from ``offset``."""
        import pandas as pd

        index = pd.RangeIndex(self.offset, self.offset + len(self.rows))
        if not self.columns:  # rows of {}: rows without columns, as the reader's frame has them
            return pd.DataFrame(index=index, columns=pd.Index([], dtype=object))
        return pd.DataFrame(self.rows, columns=self.columns, dtype=object, index=index)


class _Column:
    __slots__ = ("values",)

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    def tolist(self) -> list[Any]:
        return self.values


class _Slicer:
    __slots__ = ("chunk",)

    def __init__(self, chunk: RowChunk) -> None:
        self.chunk = chunk

    def __getitem__(self, key: slice) -> RowChunk:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a RowChunk is sliced by a range of rows, iloc[a:b]")
        start, stop, _ = key.indices(len(self.chunk.rows))
        return RowChunk(self.chunk.rows[start:stop], self.chunk.columns, self.chunk.offset + start)

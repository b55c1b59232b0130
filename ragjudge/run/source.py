"""A run's input as one value: ``Source.of`` is called once, at the edge (``ragjudge.run.run``),
and the engines (local, Ray, the dry run, batch) read the ``Source``, never ``-``, ``sys.stdin``
or a trace source's columns.

    source = Source.of("rows.jsonl", input_format=None, sample=None)
    try:
        for chunk in source.chunks(1_000): ...
    finally:
        source.close()                                # removes a temporary copy it owns
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ragjudge.io import count_records, detect_format, is_many, readable, spool_stdin
from ragjudge.io.formats import Copy, is_stdin
from ragjudge.scoring import as_frame
from ragjudge.traces import open_source
from ragjudge.traces.spans import reader_notes



@dataclass
class Source:
    """The rows of one run and how to read them.

    ``given``: what the caller named (a path, a folder or glob, ``-``, a trace source such as
    ``mlflow:EXP``, a DataFrame); ``name``: how every message names it (the path as given,
    ``<stdin>``, ``DataFrame``); ``format``: the table format read (``jsonl``, ``csv``,
    ``parquet``, ``json``; None for rows in memory); ``path``: what the readers open (the file,
    folder or glob; ``-`` for stdin read as it comes; a temporary copy it owns, ``owned``, for a
    pipe or stdin whose rows must be counted or that is read by seeking: the copy's messages
    name ``name``); ``frame``: rows in memory (a DataFrame given, or a trace source's rows);
    ``traces``: the trace source read (its rows are grouped by trace: a trace's later rows read
    its first row's verdicts), None for a table; ``notes``: what reading the traces found."""

    given: Any
    name: str
    format: str | None = None
    path: str | None = None
    frame: Any = None
    traces: Any = None
    notes: list[str] = field(default_factory=list)
    owned: str | None = None

    @classmethod
    def of(cls, given: Any, input_format: str | None = None, sample: int | None = None, traces: Any = None) -> Source:
        """The ``Source`` of ``given``: a trace source is read into its rows (``traces``, a
        ``ragjudge.traces.TraceOptions``); a table's format is told (``input_format``, else the
        suffix, else stdin's first bytes); a pipe or stdin is copied to a temporary file when
        ``sample`` must count its rows first or its format is read by seeking (Parquet). Raises
        ``InputError`` / ``ConfigError`` (exit 2) for a source that cannot be read."""
        rows = open_source(given, input_format, traces)  # a trace source: its rows, before anything else
        if rows is not None:
            return cls(given, str(given), frame=rows, traces=traces, notes=reader_notes(rows))
        if isinstance(given, list):
            given = as_frame(given)
        if not isinstance(given, (str, os.PathLike)):
            return cls(given, "DataFrame", frame=as_frame(given))  # columns the scorer can name, or InputError with the fix
        path = os.fspath(given)
        fmt = detect_format(path, input_format)
        if is_stdin(path):
            name = "<stdin>"
            copy = Copy(spool_stdin(), name) if sample is not None else None  # counted first: stdin is read once
            return cls(given, name, fmt, copy or path)
        copy = readable(path, fmt, sample)  # likewise a pipe (<(command)) to count or to seek
        if copy is not path:
            return cls(given, path, fmt, Copy(copy, path), owned=copy)
        return cls(given, path, fmt, path)

    @property
    def in_memory(self) -> bool:
        """Whether the rows are a DataFrame (given, or a trace source's)."""
        return self.frame is not None

    @property
    def given_frame(self) -> bool:
        """Whether the caller gave a DataFrame (its index is kept in the scored table)."""
        return self.in_memory and self.traces is None and not isinstance(self.given, str)

    @property
    def json_lines(self) -> bool:
        """Whether the rows are one JSON Lines file (or stdin) read as dicts (``io.jsonl_rows``)."""
        return not self.in_memory and self.format == "jsonl" and not is_many(self.path or "")

    @property
    def grouped(self) -> bool:
        """Whether the rows are grouped by trace (a trace source's)."""
        return self.in_memory and self.traces is not None

    def chunks(self, size: int) -> Iterator[Any]:
        """The rows as DataFrames of at most ``size`` rows, in order."""
        if self.in_memory:
            return (self.frame.iloc[start:start + size] for start in range(0, len(self.frame), size))
        from ragjudge.io import iter_chunks  # pandas

        return iter_chunks(self.path or "", self.format, size)

    def count(self) -> int | None:
        """The number of rows, where it is known without reading the table (``io.count_records``)."""
        if self.in_memory:
            return len(self.frame)
        return count_records(self.path or "", self.format or "")

    def selection(self, chunk_size: int, limit: int | None = None, sample: int | None = None, seed: int = 0) -> range | set[int] | None:
        """The rows (positions from 0) a run judges: the first ``limit``, or a random ``sample``
        (reproducible with ``seed``; needs the row count: a JSON array is counted by reading
        it), None for every row (``choose``)."""
        if limit is None and sample is None:
            return None
        if limit is not None:
            return choose(None, limit, None)
        total = self.count()
        if total is None:
            total = sum(len(chunk) for chunk in self.chunks(chunk_size))
        return choose(total, None, sample, seed)

    def close(self) -> None:
        """Remove the temporary copy this source owns, if any (stdin's copy is removed at exit)."""
        if self.owned is not None and os.path.exists(self.owned):
            os.unlink(self.owned)


def choose(total: int | None, limit: int | None, sample: int | None, seed: int = 0) -> range | set[int] | None:
    """The positions (from 0) judged among ``total`` rows: the first ``limit`` (a range: no
    count needed), a random ``sample`` of them (``random.Random(seed)``: the same rows on every
    engine), or None for every row."""
    import random

    if limit is not None:
        return range(limit)  # not a set: --limit 100000000 on a small file must cost nothing
    if sample is None:
        return None
    assert total is not None
    return set(random.Random(seed).sample(range(total), min(sample, total)))


def by_trace(chunk: Any) -> bool:
    """Whether ``chunk`` holds rows read from traces (``trace_id``, ``trace_first_row``: a saved
    trace run's rows too): a trace's later rows read its first row's verdicts, so its jobs must
    not overlap."""
    return {"trace_id", "trace_first_row"} <= set(map(str, getattr(chunk, "columns", ())))

"""``--pairwise A,B`` where a side names a table file rather than a column: the two responses
come from two tables joined by id (issue 64 item 4), e.g. the scored table of the main branch and
the one of a pull request.

A side that is a path to a table (``.jsonl``, ``.csv``, ``.parquet``, ``.json``; the file must
exist) is read whole; its rows are matched to the input's by the id column (``--map id=...``,
else ``id``), and its response column (``--map response=...``, else ``response`` or one of its
aliases, ``answer``...: ``ragjudge.records.ALIASES``) joins the
input as a column named ``a_response`` / ``b_response`` (``_2``, ``_3``... when the input has
one), which the pairwise judge then reads. An input row with no row of its id in that table keeps
no response on that side and is skipped (``no response in b_response``), with a note counting
such rows (and another for the table's rows the input lacks, not judged). A note names which
column is A and which B. The input is read whole too, once a side is a table (both are held in
memory).
"""

from __future__ import annotations

import os
from typing import Any

from ragjudge.errors import InputError
from ragjudge import io as table_io  # its readers (pandas) loaded at the first read, not at import (tests/test_startup.py)
from ragjudge.io.formats import suffix_format
from ragjudge.records import ALIASES, MORE_ALIASES
from ragjudge.run.source import Source


def is_table(side: str) -> bool:
    """Whether a side of ``--pairwise`` names a table file (a known table suffix), not a column."""
    return suffix_format(side) is not None


def _key(value: Any) -> str:
    """An id as the join compares it: its text, a whole number written without a decimal point,
    so that 7 in a JSON Lines file meets "7" in a CSV file and 7.0 in a Parquet file."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def join_tables(source: Source, config: Any) -> tuple[Source, Any]:
    """``source`` and ``config`` unchanged when no side of ``pairwise.responses`` is a table;
    else a ``Source`` of the input with each table side joined as a column, the config naming
    those columns; the notes to say (which column is A and which B, the rows without a pair) are
    the returned source's. Raises ``InputError`` (exit 2) for a table that does not
    exist or cannot be read, an id column missing from either table, or an id twice in a side's
    table."""
    responses = list(getattr(getattr(config, "pairwise", None), "responses", None) or [])
    tables = [i for i, side in enumerate(responses) if is_table(side)]
    if not responses:
        return source, config
    mapped = config.columns.response
    if mapped and "response" in responses and mapped in responses:
        raise InputError(f"--pairwise {','.join(responses)}: 'response' is the column {mapped} (--map response={mapped}), so A and B "
                         "would be one column: name two different columns")
    sides = list(responses)
    if not tables:
        source.notes.append(f"note: pairwise compares A = {responses[0]} with B = {responses[1]}")
        return source, config
    ident = config.columns.id or "id"
    frame = source.frame.copy() if source.frame is not None else table_io.read_table(source.path, source.format)
    if ident not in frame.columns:
        raise InputError(f"--pairwise {','.join(responses)}: joining a table by id needs an id column in {source.name}, and it has "
                         f"none named '{ident}' (its columns: {', '.join(map(str, frame.columns))}); name it with --map id=COLUMN")
    notes = []
    keys = [_key(key) for key in frame[ident].tolist()]  # the input's ids as the join compares them
    for i in tables:
        path = responses[i]
        if not os.path.isfile(path):
            raise InputError(f"--pairwise: {path} is no file (a side of --pairwise is a column of the input, or a table of the same rows "
                             "to join by id)")
        if source.path and os.path.isfile(source.path) and os.path.samefile(path, source.path):
            raise InputError(f"--pairwise: {path} is the input itself: its responses would be compared with themselves; name the other "
                             "version's table")
        other = table_io.read_table(path)
        answer = config.columns.response or next((name for name in ("response", *ALIASES["response"], *MORE_ALIASES["response"])
                                                  if name in other.columns), "response")
        for needed, flag in ((ident, "id"), (answer, "response")):
            if needed not in other.columns:
                raise InputError(f"--pairwise: {path} has no column '{needed}' (its columns: {', '.join(map(str, other.columns))}); "
                                 f"its rows are joined to {source.name}'s by '{ident}' and its '{answer}' compared: name the "
                                 f"{flag} column of both tables with --map {flag}=COLUMN")
        twice = other[ident][other[ident].duplicated()]
        if len(twice):
            raise InputError(f"--pairwise: {path} holds id {twice.iloc[0]!r} more than once; each row of a joined table needs its own id")
        base = column = "ab"[i] + "_response"
        while column in frame.columns:
            column = f"{base}_{2 if column == base else int(column.rsplit('_', 1)[1]) + 1}"
        found = dict(zip(map(_key, other[ident].tolist()), other[answer].tolist()))
        frame[column] = [found.get(key) for key in keys]
        lost = sum(1 for key in keys if key not in found)
        if lost:
            notes.append(f"note: {lost} row(s) of {source.name} have no row of the same {ident} in {path}: skipped (no response in {column})")
        mine = set(keys)
        only = sum(1 for key in found if key not in mine)
        if only:
            notes.append(f"note: {only} row(s) of {path} have no row of the same {ident} in {source.name}: not judged (the rows judged are "
                         f"{source.name}'s)")
        responses[i] = column
        sides[i] = f"{column} ({path}'s {answer}, joined by {ident})"
    notes.insert(0, f"note: pairwise compares A = {sides[0]} with B = {sides[1]}")
    joined = Source(source.given, source.name, frame=frame, traces=source.traces, notes=[*source.notes, *notes])
    source.close()
    return joined, config.updated({"pairwise": {"responses": responses}})

"""Where to fix a row: its ``diagnosis``, from its sufficiency and completeness verdicts.

| sufficiency | completeness | ``diagnosis`` | meaning |
|---|---|---|---|
| passed | passed | ``ok`` | |
| passed | failed | ``generation`` | the context held the answer; the response missed it |
| failed | failed | ``retrieval`` | the context did not hold it |
| failed | passed | ``beyond_context`` | the response states what the context does not: parametric knowledge, or unsupported claims (judge ``groundedness``) |

A row gets a diagnosis only when both verdicts have status ``ok``; any other row (a skipped or
error verdict of either metric) gets null: nothing is inferred from a verdict not given.

Traces (a table with ``trace_id`` and ``span_id`` columns, one row per retriever span,
``ragjudge.traces.spans``): sufficiency is judged per span, completeness once per trace. The
trace's sufficiency is *passed* when any of its spans' verdicts is ok and passed, *failed*
when every span's verdict is ok and failed, and unknown otherwise (a span skipped or in error,
and none sufficient). The trace's diagnosis is written on its first row (``trace_first_row``;
without that column, the trace's first row in the table), crossed with that row's
completeness verdict; the trace's other rows get null, so that each trace counts once.
"""

from __future__ import annotations

from typing import Any, Sequence

CELLS = ("ok", "generation", "retrieval", "beyond_context")
SUFFICIENCY, COMPLETENESS = "sufficiency", "completeness"
COLUMN = "diagnosis"
TRACE_COLUMNS = ("trace_id", "trace_first_row")  # a table read from traces, as ragjudge.counting tells one


def cell(sufficient: bool, complete: bool) -> str:
    """The diagnosis of a row whose context was ``sufficient`` and whose response ``complete``."""
    if sufficient:
        return "ok" if complete else "generation"
    return "beyond_context" if complete else "retrieval"


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or (not isinstance(value, (list, dict, tuple)) and bool(pd.isna(value)))


def _verdict(status: Any, passed: Any) -> bool | None:
    """A verdict as passed (True) / failed (False), or None when its status is not ok."""
    if _missing(status) or str(status).strip() != "ok" or _missing(passed):
        return None
    if isinstance(passed, str):  # a table read back from CSV
        text = passed.strip().lower()
        return True if text in ("true", "1", "1.0") else False if text in ("false", "0", "0.0") else None
    return bool(passed)


def diagnose(sufficiency: Sequence[tuple[Any, Any]], completeness: Sequence[tuple[Any, Any]],
             trace_ids: Sequence[Any] | None = None, first_rows: Sequence[Any] | None = None) -> list[str | None]:
    """Each row's diagnosis (one of ``CELLS``, or None).

    ``sufficiency``, ``completeness``: per row, the metric's ``(status, passed)``. ``trace_ids``:
    per row, its trace (given for a traces table: the trace rule of the module docstring);
    ``first_rows``: per row, ``trace_first_row``."""
    suff = [_verdict(s, p) for s, p in sufficiency]
    comp = [_verdict(s, p) for s, p in completeness]
    if trace_ids is None:
        return [None if s is None or c is None else cell(s, c) for s, c in zip(suff, comp)]
    spans: dict[Any, list[bool | None]] = {}
    first: dict[Any, int] = {}
    previous: Any = object()
    for i, trace in enumerate(trace_ids):
        spans.setdefault(trace, []).append(suff[i])
        # the trace's first row as ragjudge.counting.first_of_trace tells it: marked (a missing mark counts), or after another trace
        flag = None if first_rows is None else first_rows[i]
        flagged = _missing(flag) or bool(_verdict("ok", flag)) or str(trace) != previous
        if flagged:
            first.setdefault(trace, i)
        previous = str(trace)
    out: list[str | None] = [None] * len(suff)
    for trace, row in first.items():
        verdicts = spans[trace]
        sufficient = True if any(v is True for v in verdicts) else False if all(v is False for v in verdicts) else None
        if sufficient is not None and comp[row] is not None:
            out[row] = cell(sufficient, comp[row])
    return out


def of_frame(frame: Any, source: Any = None) -> list[str | None] | None:
    """The diagnosis of each row of a scored table (pandas DataFrame with ``sufficiency_status``,
    ``sufficiency_passed``, ``completeness_status``, ``completeness_passed``); None when the
    table lacks a metric's columns. A table with ``trace_id`` and ``trace_first_row`` columns is
    read as traces, as ``ragjudge.counting`` reads it (``trace_first_row`` marks each trace's first row). ``source``: the input rows
    of ``frame`` (same index), where the trace columns are when ``frame`` holds the verdicts only."""
    columns = [f"{m}_{c}" for m in (SUFFICIENCY, COMPLETENESS) for c in ("status", "passed")]
    if not all(name in frame.columns for name in columns):
        return None
    if source is not None:
        import pandas as pd

        traces = [c for c in TRACE_COLUMNS if c in source.columns and c not in frame.columns]
        frame = pd.concat([source[traces], frame], axis=1) if traces else frame
    pairs = [list(zip(frame[f"{m}_status"].tolist(), frame[f"{m}_passed"].tolist())) for m in (SUFFICIENCY, COMPLETENESS)]
    traces = all(name in frame.columns for name in TRACE_COLUMNS)
    return diagnose(pairs[0], pairs[1], frame["trace_id"].tolist() if traces else None,
                    frame["trace_first_row"].tolist() if traces else None)


def of_table(frame: Any) -> list[str | None] | None:
    """Each row's diagnosis in a scored table read back: its ``diagnosis`` column, else worked
    out from its sufficiency and completeness columns (``of_frame``: a table scored before the
    column existed); None when it has neither."""
    if COLUMN in frame.columns:
        return [None if _missing(v) else str(v) for v in frame[COLUMN].tolist()]
    return of_frame(frame)


def counts(values: Sequence[Any]) -> dict[str, int]:
    """Rows per diagnosis (every one of ``CELLS``, zero included; nulls are not counted)."""
    out = dict.fromkeys(CELLS, 0)
    for value in values:
        if not _missing(value) and str(value) in out:
            out[str(value)] += 1
    return out


def shares(counted: dict[str, int]) -> dict[str, float | None]:
    """Each diagnosis's share among the rows that have one (None for every one when none has)."""
    total = sum(counted.values())
    return {name: (counted.get(name, 0) / total if total else None) for name in CELLS}


def parse_bounds(value: Any) -> dict[str, float]:
    """``gate.max_diagnosis`` checked: diagnosis -> the highest share (0..1) that passes.
    Raises ``ValueError`` naming an unknown diagnosis or a share out of range."""
    return share_bounds(value, CELLS, "diagnosis")


def share_bounds(value: Any, names: tuple[str, ...], what: str) -> dict[str, float]:
    """``value`` (a mapping of name -> bound) checked as upper bounds on shares: each name one of
    ``names`` (else ``ValueError`` "unknown WHAT 'NAME'; use one of: ..."), each bound in 0..1;
    the bounds as floats. ``gate.max_diagnosis`` (``parse_bounds``) and the audit's
    ``gate.max_rate`` (``ragjudge.audit.parse_bounds``) are read by it."""
    out: dict[str, float] = {}
    for name, bound in dict(value or {}).items():
        if name not in names:
            raise ValueError(f"unknown {what} '{name}'; use one of: {', '.join(names)}")
        if not 0.0 <= float(bound) <= 1.0:
            raise ValueError(f"{name}: {bound} is not between 0 and 1")
        out[name] = float(bound)
    return out

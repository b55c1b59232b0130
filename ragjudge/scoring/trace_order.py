"""Rows read from traces (``ragjudge.traces``: one row per retriever span): a trace's rows judged
together, its trace-level metrics once on its first row and copied to the others."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ragjudge.records import EvalRecord
from ragjudge.types import SPAN, Reason, Usage, Verdict


class TraceOrder:
    """The ``Scorer``'s part that keeps a trace's rows together (``_trace``: the last trace's id and
    its first row's verdicts)."""

    _trace: tuple[str | None, list[Verdict] | None]

    def _trace_order(self, record: EvalRecord) -> None:
        """A trace's rows come together: a row whose trace's first row was not seen (filtered
        out) becomes the first, so its trace-level metrics are judged."""
        trace = record.trace
        if trace is None:
            return
        if not trace.first and trace.trace_id != self._trace[0]:
            record.trace = replace(trace, first=True)
        if record.trace.first:
            self._trace = (trace.trace_id, None)

    def _same_trace(self, records: list[EvalRecord], out: list[list[Verdict]]) -> None:
        """The trace-level verdicts of a trace's other rows: copies of its first row's (no call,
        no usage: ``M_cached`` true), counted once in the summary (``_summary``)."""
        for record, row in zip(records, out):
            if record.trace is None:
                continue
            if record.trace.first:
                self._trace = (record.trace.trace_id, row)
                continue
            first = self._trace[1] if self._trace[0] == record.trace.trace_id else None
            for position, verdict in enumerate(row):
                if verdict.reason is Reason.SAME_TRACE and first is not None:
                    source = first[position]
                    row[position] = source.copy(usage=Usage(), cached=None if source.cached is None else True)


def _span_level(judge: Any) -> bool:
    """Whether ``judge`` judges a retriever span (it reads the context), not the whole trace."""
    return judge.level == SPAN


def _trace_held(judge: Any, record: EvalRecord) -> Verdict | None:
    """The verdict a row read from a trace gets without a call (``types.TraceStatus``): a
    trace-level metric on a trace's other rows waits for the first row's (``Reason.SAME_TRACE``); a
    trace skipped (its state) skips every metric; a span-level metric is skipped for a trace
    without a retriever span and an error naming a span without usable text. None: judge it."""
    trace = record.trace
    if trace is None:
        return None
    if not _span_level(judge) and not trace.first:
        return Verdict.skipped(judge.name, Reason.SAME_TRACE)
    if trace.skip_all:
        return Verdict.skipped(judge.name, trace.skip_all)
    if _span_level(judge) and trace.span_skip:
        return Verdict.skipped(judge.name, trace.span_skip)
    if _span_level(judge) and trace.span_error:
        return Verdict.failed(judge.name, trace.span_error, input_error=True)
    return None

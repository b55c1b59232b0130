"""The local engine: ``score_source`` reads a table in chunks, scores each chunk with one
``Scorer``, writes the scored chunks, adds up the chunks' summaries (``Summary.merge``) and
applies the gate. It never prints: progress and notes go to callbacks. ``ragjudge.run.run`` calls
it (``ragjudge.evaluate`` and ``ragjudge score`` go through ``run``), after checking the options.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ragjudge.counting import IdWatch, id_column, row_ids
from ragjudge.gate import GateResult, Summary, check_gate
from ragjudge.options import run_record
from ragjudge.plan import Event, Note, Progress, Row, RunPlan, Start
from ragjudge.records import Mapping
from ragjudge.settings import Config
from ragjudge.errors import InputError
from ragjudge.scoring import INTERRUPT_GRACE_S, Scorer, removed_note
from ragjudge.io import jsonl_chunks, RowChunk, TableWriter
from ragjudge.run.request import Outputs, Selection, Wishes
from ragjudge.run.source import Source, by_trace


@dataclass
class RunResult:
    """What ``evaluate`` returns: the ``summary``, the ``gate`` verdict, the column
    ``mapping`` used, the scored ``table`` (with ``keep_table``) and the ``notes`` shown."""

    summary: Summary
    gate: GateResult
    mapping: Mapping | None
    table: Any = None
    notes: list[str] = field(default_factory=list)
    sinks: dict[str, Any] = field(default_factory=dict)  # what sinks after the run did (``mlflow``: feedback logged), in the summary JSON

    @property
    def exit_code(self) -> int:
        """The exit code ``ragjudge score`` would end with: the gate's (0 passed, 1 failed, 3 the judge failed)."""
        return self.gate.exit_code


def selection(source: Any, fmt: str | None, chunk_size: int, limit: int | None = None, sample: int | None = None,
              seed: int = 0) -> range | set[int] | None:
    """The rows (positions from 0) a run judges of the table file at ``source`` in ``fmt``
    (``Source.selection``). Raises ``InputError`` for a limit or sample below 1."""
    if (limit is not None and limit < 1) or (sample is not None and sample < 1):
        raise InputError("--limit and --sample take a number of rows, at least 1")
    return Source(source, source, fmt, source).selection(chunk_size, limit, sample, seed)


JOB_ROWS_MIN = 1_000


def job_rows(config: Config) -> int:
    """Rows a job of the local engine judges (``score_source``): enough for four rounds of every
    call slot (``judge.concurrency`` x ``judge.samples`` x 4), at least ``JOB_ROWS_MIN``, at most
    ``chunk_size``. Two jobs ahead then keep every slot busy while the oldest is framed and written."""
    judge = config.judge
    return max(1, min(config.chunk_size, max(JOB_ROWS_MIN, 4 * judge.concurrency * judge.samples)))


def _no_rows() -> Any:
    import pandas as pd

    return pd.DataFrame()


@dataclass
class ReadAhead:
    """What the local engine does ahead of need (issue 51; bench/README.md, figures 1c and 4), in
    one place. ``start`` reads a JSON Lines file as rows, chunk by chunk (``jsonl_chunks``), with
    no pandas. ``score_source`` keeps ``jobs_ahead`` jobs started beyond the one being finished
    and written, so that the next rows' calls never wait for a job's stragglers, its framing, its
    writing or the next chunk's reading. (The first row's call made ahead of the rest of the
    first chunk is gone, issue 65: no call-rate gain in paired runs, bench/README.md figure 1c;
    with it went the first chunk read as its first rows and the rest.)"""

    jobs_ahead: int = 2

    def start(self, source: Source, size: int) -> Iterator[Any]:
        """A JSON Lines file's chunks of ``size`` rows (``jsonl_chunks``)."""
        return jsonl_chunks(source.path or "", size)


READ_AHEAD = ReadAhead()  # the engine's


def to_label_rows(frame: Any, metrics: list[str]) -> Any:
    """The rows of a scored ``frame`` that a cascade left uncertain for some metric of
    ``metrics`` (``M_to_label`` true: its last stage's P(yes) in the band, or its panel split),
    every column kept, with an empty label column ``M_label`` per metric (yes/no, or a rating) to
    fill and give back with ``--labels M=M_label``."""
    flags = [frame[f"{metric}_to_label"].fillna(False).astype(bool) for metric in metrics if f"{metric}_to_label" in frame.columns]
    if not flags:
        rows = frame.iloc[:0].copy()
    else:
        mask = flags[0]
        for more in flags[1:]:
            mask = mask | more
        rows = frame[mask].copy()
    for metric in metrics:
        if f"{metric}_label" not in rows.columns:
            rows[f"{metric}_label"] = None
    return rows


class _Outputs:
    """The tables a run writes as its jobs finish: the scored table (``output``), the rows a
    cascade left uncertain (``to_label``), and the frames kept for the caller (``keep``)."""

    def __init__(self, scorer: Scorer, output: str | None, output_format: str | None, to_label: str | None, keep: bool) -> None:
        # the output's path is checked (a folder, say) before any call, the first row's included
        self.writer = TableWriter(output, output_format, scorer.column_types()) if output else None
        self.labeller = TableWriter(to_label) if to_label else None
        self.to_label, self.labelled, self.kept = to_label, 0, [] if keep else None
        self.metrics = [judge.name for judge in scorer.judges]

    def write(self, frame: Any) -> None:
        if self.writer:
            self.writer.write(frame)
        if self.labeller is not None:
            rows = to_label_rows(frame, self.metrics)
            self.labelled += len(rows)
            self.labeller.write(rows)
        if self.kept is not None:
            self.kept.append(frame)

    def close(self) -> list[str]:
        """Close the files; returns the notes they leave."""
        notes = []
        if self.writer:
            self.writer.close()
            notes.extend(self.writer.notes)
        if self.labeller is not None:
            self.labeller.close()
            names = self.metrics
            notes.append(f"wrote {self.to_label}: {self.labelled} row(s) still uncertain after the cascade's last stage; label them in "
                         f"{', '.join(f'{name}_label' for name in names)} and give them back with "
                         f"{' '.join(f'--labels {name}={name}_label' for name in names)} (corrected pass rates, ragjudge calibrate --cascade)")
        return notes

    def table(self, first: Any, given_frame: bool) -> Any:
        """The frames kept, as one table (``first``, the plan's first chunk, for no row; the
        index of a DataFrame given is kept)."""
        import pandas as pd

        kept = self.kept or [first.frame() if isinstance(first, RowChunk) else first]
        return pd.concat(kept, ignore_index=not given_frame) if len(kept) > 1 else kept[0]

    def abort(self) -> None:
        for writer in (self.writer, self.labeller):
            if writer is not None:
                writer.abort()


def _on_signals(scorer: Scorer, say: Callable[..., None]) -> list[tuple[int, Any]]:
    """Ctrl-C and SIGTERM stop the run and keep every row (the first: the calls in flight get a
    grace, ``Scorer.interrupt``; the next: at once). Returns the handlers replaced, to put back."""
    if threading.current_thread() is not threading.main_thread():
        return []

    def stop(*_: Any) -> None:
        first = not scorer.interrupted
        in_flight = scorer.model.on_wire
        scorer.interrupt()
        if first and in_flight:
            say(f"interrupted: no new call starts; waiting up to {INTERRUPT_GRACE_S:g} s for the {in_flight} call(s) in flight, "
                "whose replies are counted and cached (interrupt again to stop at once)", warning=True)

    return [(sig, signal.signal(sig, stop)) for sig in (signal.SIGINT, signal.SIGTERM)]


def _closing_notes(scorer: Scorer, summary: Summary) -> list[tuple[str, bool]]:
    """The notes said after the judging: replies a full disk kept out of the cache (a warning),
    instructions removed from rows, and each metric that judged none of the rows chosen."""
    notes = [(note, True) for note in scorer.cache_notes()]  # their verdicts stand (shown with -q too)
    if summary.rows_with_removed_instructions:
        notes.append((removed_note(summary.rows_with_removed_instructions), False))
    for name, metric in summary.metrics.items():
        chosen_rows = summary.rows - metric.unsampled  # the rows --limit / --sample chose (all of them without)
        if chosen_rows and metric.ok + metric.error == 0 and not summary.interrupted:
            reasons = ", ".join(f"{count} '{reason}'" for reason, count in sorted(metric.skipped_by.items(), key=lambda item: -item[1]))
            of = f"{chosen_rows} chosen ({metric.unsampled} not sampled)" if metric.unsampled else str(chosen_rows)
            notes.append((f"note: {name} judged no row of {of} ({reasons or 'none skipped'})", False))
    return notes


EVERY_ROW, NO_OUTPUT, HEAR_ROWS = Selection(), Outputs(), Wishes(row_events=True)


def score_source(source: Source, config: Config, selection: Selection = EVERY_ROW, outputs: Outputs = NO_OUTPUT,
                 wishes: Wishes = HEAR_ROWS, *, flag_fields: frozenset[str] = frozenset(),
                 on_event: Callable[[Event], None] | None = None, transport: Any = None, recorded: dict[str, Any] | None = None) -> RunResult:
    """Score ``source`` (a ``Source``: ``ragjudge.run.source``) with ``config`` on this machine,
    the options already checked (``ragjudge.run.checks``): the rows of ``selection``, written to
    ``outputs`` (the scored table; ``to_label``: the rows a cascade's last stage is still unsure of,
    ``to_label_rows``), as the caller ``wishes`` (``row_events``: ``on_event`` hears a ``Row`` as
    each row's verdicts land; ``keep_table``; ``handle_signals``); ``ragjudge.run.evaluate``
    describes the rest. ``recorded``: more of the run's settings for a Parquet output to record
    beside the config's (``options.run_record``): the regression gates of ``--baseline``.
    Returns a ``RunResult``.

    A JSON Lines file is read as ``io.RowChunk``s: its rows are planned and judged as read, and
    each chunk becomes a DataFrame when its verdicts are framed, so the first calls go out before
    pandas is imported (issue 51); the output is the same as from ``io.iter_chunks``' frames.

    A chunk is judged as jobs of ``job_rows`` rows, and up to ``READ_AHEAD.jobs_ahead`` jobs are started
    before the oldest is finished and written: the calls of the next rows never wait for a job's
    stragglers, its framing, its writing or the next chunk's reading, and after the last reply
    only the last job is left to frame (issue 51). Jobs finish in order, so the output's order is
    the input's. A trace's rows go one job at a time (see ``Scorer.submit``)."""
    hear, scorer = on_event, Scorer(config, transport=transport)
    jobs: list[Any] = []  # jobs submitted and not finished yet
    written = None
    installed: list[tuple[int, Any]] = []
    notes: list[str] = []

    def say(note: str, warning: bool = False) -> None:
        notes.append(note)
        if hear:
            hear(Note(note, warning))

    try:
        for note in [*scorer.notes, *source.notes]:  # said before the input is read, as before
            say(note)
        written = _Outputs(scorer, outputs.output, outputs.table_format, outputs.to_label, wishes.keep_table)
        chunks = READ_AHEAD.start(source, config.chunk_size) if source.json_lines else source.chunks(config.chunk_size)
        plan = RunPlan.of(scorer, chunks, source.name, flag_fields, scorer_notes=False,
                          empty=source.frame.iloc[:0] if source.in_memory else RowChunk([]) if source.json_lines else _no_rows())
        # from here (before the mapping is said) a Ctrl-C ends the run with every row written; before, it
        # stops at once (a pipe may hold the first chunk back)
        installed = _on_signals(scorer, say) if wishes.handle_signals else []
        for note in plan.notes:
            say(note)
        mapping = plan.mapping
        chosen = source.selection(scorer.config.chunk_size, selection.limit, selection.sample, selection.seed)
        if written.writer is not None:
            written.writer.record = {**run_record(scorer.config, id_column(mapping), written.metrics), **(recorded or {})}  # report, compare
        if hear:
            rows = source.count()
            hear(Start(rows if chosen is None else len(chosen) if rows is None else min(len(chosen), rows)))  # the rows to judge
        on_rows = (lambda rows, cost: hear(Progress(rows, cost))) if hear else None
        on_verdicts = (lambda position, ident, verdicts: hear(Row(position, ident, verdicts))) if hear and wishes.row_events else None
        summary = scorer.new_summary()

        def finished(job: Any) -> None:
            nonlocal summary
            scored = scorer.finish(job)
            summary = summary.merge(scored.summary)
            for note in scored.notes:
                if note not in notes:
                    say(note)
            written.write(scored.frame)

        overlap = not source.grouped and not by_trace(plan.first)
        step = job_rows(scorer.config) if overlap else None
        ids, start = IdWatch(id_column(mapping)), 0
        if source.json_lines and hasattr(scorer.model, "prepare"):
            scorer.model.prepare()
        for chunk in plan.chunks():
            ids.add(row_ids(chunk, ids.column), start)
            pieces = [chunk] if step is None or len(chunk) <= step else [chunk.iloc[at:at + step] for at in range(0, len(chunk), step)]
            for piece in pieces:
                skip = None if chosen is None else {i for i in range(len(piece)) if start + i not in chosen}
                jobs.append(scorer.submit(piece, mapping, on_rows, start, skip, on_verdicts, in_turn=True))
                start += len(piece)
                while len(jobs) > (READ_AHEAD.jobs_ahead if overlap else 0):
                    finished(jobs.pop(0))
        while jobs:
            finished(jobs.pop(0))
        for note in [*written.close(), *([ids.note()] if ids.note() else [])]:
            say(note)
        summary.fatal = str(scorer.model.fatal) if scorer.model.fatal is not None else None
        summary.interrupted = scorer.interrupted
        summary.budget_reached = scorer.model.budget_reached
    except BaseException as exc:
        _stop(exc, jobs, scorer, written)
        raise
    finally:
        for sig, previous in installed:
            signal.signal(sig, previous)
        scorer.close()
    for note, warning in _closing_notes(scorer, summary):
        say(note, warning)
    table = written.table(plan.first, source.given_frame) if wishes.keep_table else None
    return RunResult(summary, check_gate(summary), mapping, table, notes)


def _stop(exc: BaseException, jobs: list[Any], scorer: Scorer, written: _Outputs | None) -> None:
    """A run stopped by ``exc``: the jobs in flight still land in the cache for bad input further on, or are
    cancelled for Ctrl-C in a script; the files begun are removed."""
    for job in jobs:
        if isinstance(exc, Exception):
            try:
                scorer.finish(job)
            except BaseException:
                job.cancel()
        else:
            job.cancel()
    if written is not None:
        written.abort()

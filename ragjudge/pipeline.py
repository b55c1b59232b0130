"""The local engine: ``score_source`` reads a table in chunks, scores each chunk with one
``Scorer``, writes the scored chunks, adds up the chunks' summaries (``Summary.merge``) and
applies the gate. It never prints: progress and notes go to callbacks. ``ragjudge.run.run`` calls
it (``ragjudge.evaluate`` and ``ragjudge score`` go through ``run``), after checking the options.
"""

from __future__ import annotations

import os
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
from ragjudge.errors import ConfigError, InputError
from ragjudge.traces import open_source
from ragjudge.scoring import INTERRUPT_GRACE_S, Scorer, as_frame, removed_note
from ragjudge.traces.spans import reader_notes
from ragjudge.io import count_records, detect_format, is_many, jsonl_chunks, jsonl_rows, raise_as_given, readable, RowChunk, spool_stdin, TableWriter


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


def count_rows(source: str, fmt: str) -> int | None:
    """The number of records at ``source`` (``io.count_records``: records, not lines), or None
    where it is unknown without reading the table (stdin, JSON arrays)."""
    return count_records(source, fmt)


def selection(source: Any, fmt: str | None, chunk_size: int, limit: int | None = None, sample: int | None = None,
              seed: int = 0) -> range | set[int] | None:
    """The rows (positions from 0) a run judges: the first ``limit``, or a random ``sample``
    (reproducible with ``seed``; needs the row count, so JSON arrays are counted by reading
    them, and stdin is first copied to a temporary file, ``io.spool_stdin``); None for every row
    (``choose``). Raises ``InputError`` for a limit or sample below 1."""
    if limit is None and sample is None:
        return None
    if (limit is not None and limit < 1) or (sample is not None and sample < 1):
        raise InputError("--limit and --sample take a number of rows, at least 1")
    if limit is not None:
        return choose(None, limit, None)
    if isinstance(source, str) and source == "-":
        source = spool_stdin()  # counted from a copy; stdin then reads from it again
    total = len(source) if not isinstance(source, str) else count_rows(source, fmt or "")
    if total is None:
        from ragjudge.io import iter_chunks

        total = sum(len(chunk) for chunk in iter_chunks(source, fmt, chunk_size))
    return choose(total, None, sample, seed)


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


HEAD_ROWS = 100  # a JSON Lines file's rows read before its first row's calls go ahead (they hold the 50 the mapping looks at)
# seconds the reading waits once the first row's calls are handed to the loop thread, unless the
# first is answered (or needs no call) sooner: sending it takes the loop thread 7 ms alone, and 60 to 90 ms while the
# rest of the chunk was read beside it, the two threads taking turns for the interpreter (2 cores;
# bench/README.md, figure 1c). Within the probe's round trip, so no later than the reading before it
FIRST_SEND_S = 0.03
JOBS_AHEAD = 2  # jobs started beyond the one being finished and written
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


def _trace_rows(chunk: Any) -> bool:
    """Whether ``chunk`` holds rows read from traces (a trace's later rows read its first row's
    verdicts, so its jobs must not overlap)."""
    return {"trace_id", "trace_first_row"} <= set(map(str, getattr(chunk, "columns", ())))


def _read_ahead(scorer: Scorer, source: str, name: str, flag_fields: frozenset[str], sample: int | None) -> tuple[Iterator[Any], Any]:
    """A JSON Lines file's chunks (as ``jsonl_chunks`` gives them), and the job started on its
    first row (``Scorer.submit(ahead=True)``) once its first ``HEAD_ROWS`` rows are read and
    planned: the run's first call, the probe, then goes out while the rest of the first chunk is
    read, and the first row takes its verdict when its own job makes the same call (issue 51).
    The reading waits ``FIRST_SEND_S`` for the loop thread to send that call alone.
    The job is None, and nothing goes ahead, with ``--sample`` (its rows are chosen from the
    count), labels (checked on the whole first chunk), a batch or a panel, and when the first
    rows' plan fails (the whole chunk's plan then says why, before any call). A malformed line
    after the first ``HEAD_ROWS`` rows, or a mapping the whole chunk refuses, is said at once: the
    call made ahead is then cancelled (a reply already in is cached), and so it is by a Ctrl-C
    before the whole first chunk is planned, which stops the run at once as before."""
    config = scorer.config
    size = config.chunk_size
    labelled = any(column and metric in config.metrics for metric, column in (config.labels or {}).items())
    if sample is not None or labelled or config.judge.batch or size <= HEAD_ROWS or not hasattr(scorer.model, "prepare"):
        return jsonl_chunks(source, size), None
    lists = jsonl_rows(source, size, first=HEAD_ROWS)
    head = next(lists, [])
    job = None
    try:
        plan = RunPlan.of(scorer, RowChunk(head), name, flag_fields, scorer_notes=False) if head else None
    except (InputError, ConfigError):
        plan = None
    if plan is not None and plan.mapping is not None and not _trace_rows(plan.first):
        scorer.model.prepare()
        job = scorer.submit(RowChunk(head[:1], plan.first.columns), plan.mapping, ahead=True)
        scorer.until_answered(job, FIRST_SEND_S)  # the loop thread sends it alone

    def chunks() -> Iterator[Any]:
        rest = next(lists, []) if len(head) == HEAD_ROWS else []
        if head:
            yield RowChunk(head + rest)
        for rows in lists:
            yield RowChunk(rows)

    return chunks(), job


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


def _frame_chunks(frame: Any, size: int) -> Iterator[Any]:
    for start in range(0, len(frame), size):
        yield frame.iloc[start:start + size]


def score_source(
    source: Any,
    config: Config,
    output: str | None = None,
    input_format: str | None = None,
    output_format: str | None = None,
    flag_fields: frozenset[str] = frozenset(),
    on_event: Callable[[Event], None] | None = None,
    keep_table: bool = False,
    handle_signals: bool = False,
    transport: Any = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    *,
    traces: Any = None,
    row_events: bool = True,
    recorded: dict[str, Any] | None = None,
    to_label: str | None = None,
) -> RunResult:
    """Score ``source`` (a path, ``-`` for stdin, a pandas DataFrame, or a trace source read
    with ``traces``, a ``ragjudge.traces.TraceOptions``) with ``config`` on this machine, the
    options already checked (``ragjudge.run.ScoreRequest.check``): ``ragjudge.run.evaluate``
    describes the arguments. Writes ``output``; returns a ``RunResult``. ``row_events``:
    ``on_event`` hears a ``Row`` as each row's verdicts land. ``recorded``: more of the run's
    settings for a Parquet output to record beside the config's (``options.run_record``): the
    regression gates of ``--baseline``. ``to_label``: where to write the rows a cascade's last
    stage is still unsure of (``to_label_rows``), each with an empty label column per metric.

    A JSON Lines file is read as ``io.RowChunk``s: its rows are planned and judged as read, and
    each chunk becomes a DataFrame when its verdicts are framed, so the first calls go out before
    pandas is imported (issue 51); the output is the same as from ``io.iter_chunks``' frames."""
    opened = open_source(source, input_format, traces)  # a trace source: its rows, before anything else
    read_notes: list[str] = []
    if opened is not None:
        source, input_format, read_notes = opened, None, reader_notes(opened)

    hear = on_event
    if isinstance(source, list):
        source = as_frame(source)
    if isinstance(source, (str, os.PathLike)):  # a file: pandas need not be imported yet
        is_frame = False
    else:  # waits for an import of pandas another thread has begun (sys.modules may hold it half made)
        import pandas as pd

        is_frame = isinstance(source, pd.DataFrame)
    if is_frame:
        as_frame(source)  # columns the scorer can name, or InputError with the fix
    fmt = None if is_frame else detect_format(source, input_format)
    as_rows = opened is None and not is_frame and fmt == "jsonl" and not is_many(source)
    if not is_frame and source == "-" and sample is not None:
        spool_stdin()  # --sample counts the rows first; stdin is read once, into a copy
    given = source
    if not is_frame:
        source = readable(source, fmt, sample)  # likewise a pipe (<(command)) to count or to seek
    scorer = Scorer(config, transport=transport)
    jobs: list[Any] = []  # chunks submitted and not finished yet
    ahead = None  # the job made on a JSON Lines file's first row while the rest of its first chunk is read
    writer = None
    labeller = None
    labelled = 0
    installed: list[tuple[int, Any]] = []
    notes: list[str] = []

    def say(note: str, warning: bool = False) -> None:
        notes.append(note)
        if hear:
            hear(Note(note, warning))

    try:
        if not is_frame and source == "-" and sample is not None:  # stdin is read once: to count its rows for a sample, keep it
            import pandas as pd

            from ragjudge.io import iter_chunks

            source = pd.concat(list(iter_chunks(source, fmt, scorer.config.chunk_size)) or [pd.DataFrame()], ignore_index=True)
            is_frame, as_rows = True, False
        name = "DataFrame" if is_frame else ("<stdin>" if source == "-" else given)
        for note in [*scorer.notes, *read_notes]:  # said before the input is read, as before
            say(note)
        # the output's path is checked (a folder, say) before any call, the first row's included
        writer = TableWriter(output, output_format, scorer.column_types()) if output else None
        labeller = TableWriter(to_label) if to_label else None
        if is_frame:
            chunks = _frame_chunks(source, scorer.config.chunk_size)
        elif as_rows:
            chunks, ahead = _read_ahead(scorer, source, name, flag_fields, sample)
        else:
            from ragjudge.io import iter_chunks

            chunks = iter_chunks(source, fmt, scorer.config.chunk_size)
        plan = RunPlan.of(scorer, chunks, name, flag_fields, scorer_notes=False,
                          empty=source.iloc[:0] if is_frame else RowChunk([]) if as_rows else _no_rows())
        # from here (before the mapping is said) a Ctrl-C ends the run with every row written; before, it
        # stops at once (a pipe may hold the first chunk back), the first row's call made ahead with it
        if handle_signals and threading.current_thread() is threading.main_thread():
            def stop(*_: Any) -> None:  # the first: the requests in flight get a grace (Scorer.interrupt); the next: at once
                first = not scorer.interrupted
                in_flight = scorer.model.on_wire
                scorer.interrupt()
                if first and in_flight:
                    say(f"interrupted: no new call starts; waiting up to {INTERRUPT_GRACE_S:g} s for the {in_flight} call(s) in flight, "
                        "whose replies are counted and cached (interrupt again to stop at once)", warning=True)

            for sig in (signal.SIGINT, signal.SIGTERM):
                installed.append((sig, signal.signal(sig, stop)))
        for note in plan.notes:
            say(note)
        mapping = plan.mapping
        chosen = selection(source, fmt, scorer.config.chunk_size, limit, sample, seed)
        if writer is not None:
            writer.record = {**run_record(scorer.config, id_column(mapping), [judge.name for judge in scorer.judges]),  # report, compare
                             **(recorded or {})}
        if hear:
            rows = len(source) if is_frame else count_rows(source, fmt)
            if chosen is not None:  # --limit / --sample: the rows to judge, not the rows read
                rows = len(chosen) if rows is None else min(len(chosen), rows)
            hear(Start(rows))
        on_rows = (lambda rows, cost: hear(Progress(rows, cost))) if hear else None
        on_verdicts = (lambda position, ident, verdicts: hear(Row(position, ident, verdicts))) if hear and row_events else None
        summary = scorer.new_summary()
        kept = []
        start = 0

        def finished(job: Any) -> None:
            nonlocal summary
            scored = scorer.finish(job)
            summary = summary.merge(scored.summary)
            for note in scored.notes:
                if note not in notes:
                    say(note)
            if writer:
                writer.write(scored.frame)
            if labeller is not None:
                nonlocal labelled
                rows = to_label_rows(scored.frame, [judge.name for judge in scorer.judges])
                labelled += len(rows)
                labeller.write(rows)
            if keep_table:
                kept.append(scored.frame)

        # A chunk is judged as jobs of ``job_rows`` rows, and up to ``JOBS_AHEAD`` jobs are started
        # before the oldest is finished and written: the calls of the next rows never wait for a
        # job's stragglers, its framing, its writing or the next chunk's reading, and after the
        # last reply only the last job is left to frame (issue 51). Jobs finish in order, so the
        # output's order is the input's. A trace's chunks go one by one (see Scorer.submit).
        overlap = opened is None and not _trace_rows(plan.first)
        step = job_rows(scorer.config) if overlap else None
        ids = IdWatch(id_column(mapping))
        if as_rows and hasattr(scorer.model, "prepare"):
            scorer.model.prepare()
        for chunk in plan.chunks():
            ids.add(row_ids(chunk, ids.column), start)
            pieces = [chunk] if step is None or len(chunk) <= step else [chunk.iloc[at:at + step] for at in range(0, len(chunk), step)]
            for piece in pieces:
                skip = None if chosen is None else {i for i in range(len(piece)) if start + i not in chosen}
                job = scorer.submit(piece, mapping, on_rows, start, skip, on_verdicts, in_turn=True)
                jobs.append(job)
                start += len(piece)
                while len(jobs) > (JOBS_AHEAD if overlap else 0):
                    finished(jobs[0])
                    jobs.pop(0)
        while jobs:
            finished(jobs[0])
            jobs.pop(0)
        if ahead is not None:
            for note in scorer.drop(ahead):
                say(note)
        if writer:
            writer.close()
            for note in writer.notes:
                say(note)
        if labeller is not None:
            labeller.close()
            names = [judge.name for judge in scorer.judges]
            say(f"wrote {to_label}: {labelled} row(s) still uncertain after the cascade's last stage; label them in "
                f"{', '.join(f'{name}_label' for name in names)} and give them back with "
                f"{' '.join(f'--labels {name}={name}_label' for name in names)} (corrected pass rates, ragjudge calibrate --cascade)")
        if ids.note():
            say(ids.note())
        summary.fatal = str(scorer.model.fatal) if scorer.model.fatal is not None else None
        summary.interrupted = scorer.interrupted
        summary.budget_reached = scorer.model.budget_reached
    except BaseException as exc:
        if ahead is not None:  # the first row's call made ahead: the error is not kept waiting for it
            ahead.cancel()
        for job in jobs:
            if isinstance(exc, Exception):  # bad input further on: the chunk in flight still lands in the cache
                try:
                    scorer.finish(job)
                except BaseException:
                    job.cancel()
            else:  # Ctrl-C in a script: stop at once
                job.cancel()
        if writer:
            writer.abort()
        if labeller is not None:
            labeller.abort()
        raise_as_given(exc, source, given)  # the pipe the user named, not its copy
        raise
    finally:
        for sig, previous in installed:
            signal.signal(sig, previous)
        scorer.close()
    for note in scorer.cache_notes():  # replies a full disk kept out of the cache: their verdicts stand (shown with -q too)
        say(note, warning=True)
    if summary.rows_with_removed_instructions:
        say(removed_note(summary.rows_with_removed_instructions))
    for name, metric in summary.metrics.items():
        chosen_rows = summary.rows - metric.unsampled  # the rows --limit / --sample chose (all of them without)
        if chosen_rows and metric.ok + metric.error == 0 and not summary.interrupted:
            reasons = ", ".join(f"{count} '{reason}'" for reason, count in sorted(metric.skipped_by.items(), key=lambda item: -item[1]))
            of = f"{chosen_rows} chosen ({metric.unsampled} not sampled)" if metric.unsampled else str(chosen_rows)
            say(f"note: {name} judged no row of {of} ({reasons or 'none skipped'})")
    table = None
    if keep_table:
        import pandas as pd

        first = plan.first.frame() if isinstance(plan.first, RowChunk) else plan.first
        table = pd.concat(kept, ignore_index=not is_frame) if len(kept) > 1 else (kept[0] if kept else first)
    return RunResult(summary, check_gate(summary), mapping, table, notes)

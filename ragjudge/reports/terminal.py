"""The run on the terminal (stderr): the console, the progress bar or log lines, the rows'
verdicts as they land (``--verbose``), and the end of a run (the summary table, the gate's
lines, the failing rows, GitHub annotations and the closing line of an interrupted run). Rich
is imported only when a console is made."""

from __future__ import annotations

from ragjudge.reports.gate_text import marked
from ragjudge.types import count_of, Reason, score_text

import sys
from typing import Any
from ragjudge.gate import row_name
from ragjudge.reports.console import _one_line, failing_lines, print_summary
from ragjudge.io.atomic import to_stdout


class _Stderr:
    """stderr for the console, which a closed pipe (``2>&1 | head``), a full disk
    (``2>/dev/full``) or no stderr at all (``2>&-``: ``sys.stderr`` is None) must not turn into a
    failed run: what cannot be written is dropped, and the run writes its outputs."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError, AttributeError):  # a closed pipe or stream, a full disk (2>/dev/full), none (2>&-)
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError, AttributeError):
            pass

    def isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (OSError, ValueError, AttributeError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", "utf-8")


def say(text: str) -> None:
    """One line on stderr, dropped where stderr cannot take it (``_Stderr``: a closed pipe, a full
    disk, ``2>/dev/full``, or no stderr at all, ``2>&-``), so that the exit code still says it."""
    _Stderr(sys.stderr).write(text + "\n")


def make_console() -> Any:
    """A rich console on stderr (a closed pipe drops what cannot be written); 110 columns at
    least when stderr is not a terminal (CI logs). Made when first used: a ``-q`` run that
    prints nothing until its end does not import rich before its first judge call (11 ms on a
    2-core machine, issue 51)."""
    return _LazyConsole()


class _LazyConsole:
    """``make_console``'s console, made on its first use (any attribute)."""

    def __init__(self) -> None:
        self._console: Any = None

    def made(self) -> Any:
        """The rich console itself, made now if it was not yet."""
        if self._console is None:
            from rich.console import Console

            console = Console(file=_Stderr(sys.stderr), force_terminal=None)
            if not console.is_terminal:
                console.width = max(console.width, 110)
            self._console = console
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.made(), name)


def made(console: Any) -> Any:
    """The rich console behind ``console`` (``make_console``'s, or one given as it is): for rich's
    own classes, which use it as a context manager."""
    return console.made() if isinstance(console, _LazyConsole) else console


def verdict_printer(console: Any, progress: Any) -> Any:
    """``--verbose``: one line per row as its verdicts land, above the progress bar."""
    def show(position: int, ident: Any, verdicts: list[Any]) -> None:
        if verdicts and all(v.reason is Reason.NOT_SAMPLED for v in verdicts):
            return  # left out by --limit / --sample: not a verdict
        parts = []
        for v in verdicts:
            if v.status == "ok":
                mark = "passed" if v.passed else "FAILED"
                why = _one_line(v.rationale, 90)
                parts.append(f"{v.metric} {score_text(v.score)} {mark}" + (f" ({why})" if why else ""))
            else:
                parts.append(f"{v.metric} {v.status}: {_one_line(v.error, 200)}")
        target = progress.bar.console if progress is not None and progress.bar is not None else console
        try:
            target.print(f"{_one_line(row_name(ident, position))}: " + "; ".join(parts), highlight=False, soft_wrap=True, markup=False)
        except OSError:  # stderr closed (| head): the run goes on, and writes its outputs
            pass

    return show


def report(console: Any, result: Any, done: Any, wanted: Any, quiet: bool, cache: bool = True) -> bool:
    """Print the end of a run: the table (unless quiet), the gate's lines, the failing rows on a
    failing gate, the GitHub annotations, and the closing line of an interrupted run (``cache``:
    the run used the response cache). Returns whether it printed that closing line."""
    if not quiet:
        for line in done.comparison_lines:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        print_summary(console, result.summary, done.gate)
    else:  # quiet: no table, but a failing gate still says why, and a metric that judged nothing says so
        for passed, line in marked(done.gate):
            if passed is None or (not done.gate.passed and not passed):
                console.print(line, highlight=False, markup=False, soft_wrap=True)
    if not done.gate.passed and not result.summary.interrupted:
        for line in failing_lines(result.summary, wanted.output, wanted.summary_json, gate=done.gate, comparison=done.comparison):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    if done.annotations:  # workflow commands: on stdout, unless the scored table goes there
        stream = sys.stderr if to_stdout(wanted.output) or to_stdout(wanted.summary_json) else sys.stdout
        print("\n".join(done.annotations), file=stream, flush=True)
    if result.summary.interrupted:
        console.print(interrupted_line(result.summary, wanted.output, cache), highlight=False, markup=False, soft_wrap=True)
        return True
    return False


def interrupted_line(summary: Any, output: str | None, cache: bool = True) -> str:
    """The one closing line of an interrupted run: what was written, what is left (rows left out
    by --limit / --sample are neither done nor unfinished), and how to finish (``cache``: the
    run read and wrote the response cache, so a re-run pays only for the unfinished rows)."""
    parts = []
    for name, m in summary.metrics.items():
        part = f"{name} {m.rows - m.interrupted - m.unsampled} done, {m.interrupted} unfinished"
        parts.append(part + (f", {m.unsampled} not sampled" if m.unsampled else ""))
    done = ", ".join(parts)
    where = f"{'all ' if summary.rows != 1 else 'the '}{count_of(summary.rows)} {'were' if summary.rows != 1 else 'was'} written to {'stdout' if output == '-' else output}" if output else "no table was asked for (-o)"
    if not any(m.interrupted for m in summary.metrics.values()):
        return f"interrupted: {where} ({done}: every row was judged before the interrupt); nothing is left to judge"
    again = ("run the same command again to judge only those (finished calls come from the cache)" if cache else
              "run the same command again to judge every row again (--no-cache: no verdict was kept in the cache)")
    return f"interrupted: {where} ({done}; unfinished rows have status error, reason 'interrupted'); {again}"


def _rate(per_second: float) -> str:
    """A rate with the digits that show it: 12, 3.4, 0.083 (never 0.0 for a slow one)."""
    return f"{per_second:.0f}" if per_second >= 10 else (f"{per_second:.1f}" if per_second >= 1 else f"{per_second:.2g}")


def waited_for_model() -> float:
    """Seconds this process has waited for another process's turn at the embedded model
    (``ragjudge.local.TURNS``; 0 when it never loaded it)."""
    local = sys.modules.get("ragjudge.local")
    return local.TURNS.waited if local is not None else 0.0


class Progress:
    """Progress on stderr: a rich bar (rows done, rows per second, time left) on a terminal;
    elsewhere (CI logs, pipes) a plain line at most every ``LOG_EVERY_S`` seconds."""

    LOG_EVERY_S = 15.0

    def __init__(self, console: Any) -> None:
        self.console = console
        self.bar = None
        self.task = None
        self.total: int | None = None
        self.done = 0
        self.spent = 0.0
        self.unpriced = False
        self.started = self.logged = 0.0
        self._batch_bar: Any = None
        self._batch_task: Any = None

    def start(self, total: int | None) -> None:
        import time

        if self._batch_bar is not None:  # --batch-wait's bar ends where the judging starts
            self._batch_bar.stop()
            self._batch_bar = None
        self.total = total
        self.started = self.logged = time.monotonic()
        self.started -= waited_for_model()  # waits before this run are not this run's
        if not self.console.is_terminal:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        self.bar = Bar(
            TextColumn("judging"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]} rows/s, {task.fields[spent]}, elapsed"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=made(self.console),
            transient=False,
        )
        self.bar.start()
        self.task = self.bar.add_task("rows", total=total, rate="-", spent="$0.0000")

    def advance(self, rows: int, cost: float | None = 0.0) -> None:
        """``rows`` more rows done, which cost ``cost`` USD (None: a price is unknown)."""
        import time

        self.done += rows
        if cost is None:
            self.unpriced = True
        else:
            self.spent += cost
        spent = "cost unknown" if self.unpriced else f"${self.spent:.4f}"
        if self.bar is not None:
            self.bar.advance(self.task, rows)
            speed = self.bar.tasks[0].speed
            self.bar.update(self.task, rate=_rate(speed) if speed else "-", spent=spent)
            return
        now = time.monotonic()
        if now - self.logged >= self.LOG_EVERY_S:
            self.logged = now
            rate = self.done / max(now - self.started - waited_for_model(), 1e-9)  # the time spent judging, not waiting for a turn
            of = f"/{self.total}" if self.total else ""
            left = f", about {(self.total - self.done) / rate / 60:.1f} min left" if self.total and rate > 0 else ""
            self.console.print(f"judged {self.done}{of} {'row' if (self.total or self.done) == 1 else 'rows'} ({_rate(rate)} rows/s{left}; {spent} so far)", highlight=False)

    def batch(self, done: int, total: int, status: str) -> None:
        """``--batch-wait``: the open batches' calls ``done`` of ``total`` as the provider counts
        them, and their ``status``: a bar of its own on a terminal, else a line per poll."""
        if not self.console.is_terminal:
            self.console.print(f"batch: {done}/{total} calls done ({status})", highlight=False)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        if self._batch_bar is None:
            self._batch_bar = Bar(TextColumn("batch"), BarColumn(), MofNCompleteColumn(), TextColumn("calls, {task.fields[status]}, elapsed"),
                                  TimeElapsedColumn(), console=made(self.console), transient=True)
            self._batch_bar.start()
            self._batch_task = self._batch_bar.add_task("calls", total=total, status=status)
        self._batch_bar.update(self._batch_task, completed=done, total=total, status=status)

    def stop(self) -> None:
        if self._batch_bar is not None:
            self._batch_bar.stop()
            self._batch_bar = None
        if self.bar is not None:
            self.bar.stop()

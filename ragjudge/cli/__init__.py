"""The ``ragjudge`` command line (Typer). Each command parses options, calls the library and
maps the result to an exit code; errors print one line (``RAGJUDGE_DEBUG=1`` shows the
traceback). Neither ``ragjudge --help`` nor this package imports litellm or pandas.

The package, by concern: ``app`` (the Typer apps, the root callback), ``score`` (the score
command, its options, ``--help-all`` and what the terminal shows of a run), ``calibrate`` (the
calibrate command) and ``tools`` (agreement, compare, report, judges, render, config, batch,
cache); here ``main`` and ``console``, the process's way in and out (exit codes, interrupts,
errors as one line).

The project's own modules are imported at the top; only ``ragjudge.io`` (pandas, pyarrow) is
imported inside the commands that read or write a table, so ``ragjudge --help`` loads neither.
The price of one place for the imports: ``ragjudge --help`` takes 0.45 s (median of 15 on 2 cores,
2026-12-04), against 0.18 s when every command imported the library inside it; a run imports all
of it either way."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

import typer

from ragjudge import options
from ragjudge.cli import calibrate as _calibrate, score as _score, tools as _tools
from ragjudge.cli.app import _SAID, app, batch_app, cache_app, config_app
from ragjudge.cli.score import SCORE_EPILOG, _progress as _progress  # tests set _progress.LOG_EVERY_S through this name
from ragjudge.errors import EXIT_USAGE, RagjudgeError
from ragjudge.http_errors import redact
from ragjudge.reports.terminal import say as _say

__all__ = ["COMMANDS", "SCORE_EPILOG", "app", "batch_app", "cache_app", "config_app", "console", "main"]

# `ragjudge --help` lists the commands in this order, whichever module declares them
COMMANDS = (_score.score, _tools.agreement_command, _tools.compare_command, _calibrate.calibrate, _tools.report, _tools.judges,
            _tools.render)
app.registered_commands.sort(key=lambda info: COMMANDS.index(info.callback))


def _exit(code: int) -> None:
    """``sys.exit``, except while an embedded-judge call still runs in its native thread
    (an interrupted run): interpreter shutdown under a running llama.cpp call can crash
    (SIGSEGV), so flush and leave at once. Every output was written and closed before."""
    local = sys.modules.get("ragjudge.local")
    if local is not None and local.busy():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def console() -> None:
    """The ``ragjudge`` command and ``python -m ragjudge``: ``main``, then the process ends as soon
    as its work is done. The interpreter's own shutdown (freeing every module and object: about
    0.08 s after a 10,000-row run on a 2-core machine) is skipped, once the atexit handlers have run
    and stdout and stderr are flushed, where the command is the process's own program (not run by a
    profiler, ``runpy`` from other code, or ``python -i``) and no thread but daemons is left; else
    it exits as Python does. ``main`` itself, called from Python, raises ``SystemExit`` as before."""
    outermost = _outermost(sys._getframe(1))
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if not (outermost and _leave_at_once()):
        sys.exit(code)  # Python's own exit, with the same code
    if not isinstance(code, int):  # as Python's exit: None is 0, anything else is printed and 1
        if code is not None and sys.stderr is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None:
        sys.exit(code)
    run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # closed when the process started (``>&-``): Python has nothing to flush either
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stderr:  # full (2>/dev/full): its text cannot be written, and the exit code says how the run went
                continue
            sys.exit(code)  # stdout, a closed pipe: Python's own exit handles and reports it
    os._exit(code)


def _outermost(frame: Any) -> bool:
    """Whether ``frame`` (``console``'s caller) and every frame above it are the process's own way
    in: the console script, ``python -m`` (runpy) or ragjudge itself; a profiler, a debugger, a test
    or a program running ragjudge with ``runpy`` is not, and gets Python's exit back."""
    if sys.flags.interactive:
        return False
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # ragjudge/, above this package
    while frame is not None:
        name = frame.f_code.co_filename
        if name != "<frozen runpy>" and os.path.basename(name) != "runpy.py":
            absolute = os.path.abspath(name)
            if absolute != script and not absolute.startswith(here + os.sep):
                return False
        frame = frame.f_back
    return True


def _leave_at_once() -> bool:
    """Whether ``console`` may end the process without the interpreter's shutdown: only daemon
    threads besides this one (a thread of the user's would be joined by it)."""
    return all(thread.daemon or thread is threading.current_thread() for thread in threading.enumerate())


# an option users try for one of ours, by what it does rather than how it is spelt (click's own
# "did you mean" goes by spelling: --report got --format): the first of ours the command has
MEANT_OPTIONS = {"--report": ("--html", "--output"), "--html-report": ("--html", "--output"), "--html": ("--output",),
                 "--report-html": ("--html", "--output")}


def _meant_option(exc: Exception) -> None:
    """Point click's "no such option" error ``exc`` at the option meant (``MEANT_OPTIONS``) where
    the command has one; any other error is left as it is."""
    # Typer's own copy of click raises it (typer._click): known by its name and attributes
    if type(exc).__name__ != "NoSuchOption" or getattr(exc, "ctx", None) is None or getattr(exc, "option_name", None) not in MEANT_OPTIONS:
        return
    have = {name for param in exc.ctx.command.params for name in getattr(param, "opts", [])}
    meant = [name for name in MEANT_OPTIONS[exc.option_name] if name in have][:1]
    if meant:
        exc.possibilities = meant  # type: ignore[attr-defined]


def main() -> None:
    """Console entry point: run the app, map ``RagjudgeError`` to one line and its exit code."""
    _SAID.clear()  # what an earlier call in this process said is not this one's
    try:
        code = app(standalone_mode=False)
    except RagjudgeError as exc:
        if os.environ.get("RAGJUDGE_DEBUG"):
            raise
        if isinstance(exc, options.OptionError):  # an option refused below a request (ragjudge report's): named as flags
            exc.named(options.CLI)
        _say(f"error: {exc}")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        _exit(exc.exit_code)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # usage errors from Typer's click and the like
        _meant_option(exc)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            try:
                if sys.stderr is not None:  # click would write to stdout instead
                    exc.show()
            except (OSError, ValueError, AttributeError):  # stderr full or gone: the exit code still says it
                pass
            sys.exit(EXIT_USAGE)
        if type(exc).__name__ == "Abort":
            _say("aborted")
            sys.exit(130)
        if os.environ.get("RAGJUDGE_DEBUG"):
            raise
        _say(f"error: unexpected {type(exc).__name__}: {redact(str(exc))} (set RAGJUDGE_DEBUG=1 for the traceback)")
        sys.exit(EXIT_USAGE)
    if code == 130 and not _SAID.get("interrupted"):  # a Ctrl-C outside judging (the score command says its own line)
        _say("interrupted: nothing more was written (a Ctrl-C while judging still writes every row)")
    _exit(code if isinstance(code, int) else 0)

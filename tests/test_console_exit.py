"""The ``ragjudge`` command ends its process as soon as its work is done (``cli.console``, issue
51): the exit code, everything written to stdout and stderr, and every atexit handler are what
Python's own exit gives; only the interpreter's freeing of its modules is skipped."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, write_jsonl

pytestmark = pytest.mark.integration  # ragjudge in its own process

ROWS = [{"id": i, "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}." if i % 2 else "The weather was mild."]}
        for i in range(30)]  # half of them sufficient: a bound of 1 fails


def _console(tmp_path, server, args, extra=""):
    marker = tmp_path / "atexit.txt"
    script = textwrap.dedent(f"""
        import atexit, sys, threading
        atexit.register(lambda: open({str(marker)!r}, "a").write("ran\\n"))
        {extra}
        from ragjudge.cli import console
        sys.stdout.write("wrapper\\n")  # still in stdout's buffer (a pipe) when the command ends
        sys.argv = ["ragjudge", *{args!r}, "--model", "openai/fake-judge", "--api-base", {server.url!r},
                    "--cache-dir", {str(tmp_path / "cache")!r}]
        console()
        print("not reached")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path)})
    return done, (marker.read_text() if marker.exists() else "")


@pytest.mark.parametrize("bound, code", [("0", 0), ("1", 1)])
def test_the_command_keeps_its_exit_code_its_whole_output_and_the_atexit_handlers(server, tmp_path, bound, code):
    source = write_jsonl(tmp_path / "in.jsonl", ROWS)
    done, ran = _console(tmp_path, server, ["score", str(source), "-m", "sufficiency", "-o", "-", "--min-pass-rate", bound])
    assert done.returncode == code, done.stderr
    assert ran == "ran\n"
    lines = done.stdout.splitlines()
    assert "wrapper" in lines and "not reached" not in lines  # (the table goes to stdout's bytes, around the text buffer)
    assert [json.loads(line)["id"] for line in lines if line != "wrapper"] == list(range(30))  # to its last row
    assert ("gate failed (exit 1)" in done.stderr) == (code == 1)


def test_an_input_error_exits_2_through_the_same_door(server, tmp_path):
    done, ran = _console(tmp_path, server, ["score", str(tmp_path / "missing.jsonl"), "-m", "sufficiency"])
    assert (done.returncode, ran) == (2, "ran\n")
    assert done.stderr.strip() == f"error: input file not found: {tmp_path / 'missing.jsonl'}"


def test_a_thread_of_the_callers_is_waited_for_as_python_does(server, tmp_path):
    # a non-daemon thread still running: the interpreter's own exit joins it, so console leaves that to it
    late = tmp_path / "late.txt"
    extra = (f"threading.Thread(target=lambda: (__import__('time').sleep(1.0), open({str(late)!r}, 'w').write('done'))).start()")
    source = write_jsonl(tmp_path / "in.jsonl", ROWS[:3])
    done, ran = _console(tmp_path, server, ["score", str(source), "-m", "sufficiency", "-q", "--min-pass-rate", "0"], extra)
    assert (done.returncode, ran) == (0, "ran\n"), done.stderr
    assert late.read_text() == "done"



@pytest.mark.parametrize("closed", [">&-", "2>&- >/dev/null"])
def test_a_stream_closed_when_the_command_starts_is_no_fault(closed):
    # a breaker's find: sys.stdout (or sys.stderr) is None then, and the exit's flush raised (exit 1, a traceback)
    done = subprocess.run(["bash", "-c", f"{sys.executable} -m ragjudge judges {closed}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_profiler_or_a_program_running_the_command_gets_pythons_exit_back(tmp_path):
    # a breaker's find: `python -m cProfile -o prof -m ragjudge` wrote no profile, and runpy's caller never got its SystemExit
    profile = tmp_path / "prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "ragjudge", "judges"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert profile.stat().st_size > 0
    script = ("import runpy, sys\nsys.argv = ['ragjudge', 'judges']\ntry:\n    runpy.run_module('ragjudge', run_name='__main__')\n"
              "except SystemExit as exc:\n    print('SystemExit', exc.code)\nprint('after')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-2:] == ["SystemExit 0", "after"], done.stderr


def test_on_a_terminal_the_progress_bar_and_the_gate_lines_are_drawn(server, tmp_path):
    """The console is made when first used (``reports.terminal.make_console``); on a terminal rich's
    progress bar still gets the console itself and draws, and the gate's lines follow."""
    import os
    import pty

    source = write_jsonl(tmp_path / "in.jsonl", ROWS)
    primary, secondary = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "ragjudge", "score", str(source), "-m", "sufficiency", "-o", str(tmp_path / "o.jsonl"),
                                "--min-pass-rate", "0", "--model", "openai/fake-judge", "--api-base", server.url, "--cache-dir", str(tmp_path / "c")],
                               cwd=ROOT, stdin=secondary, stdout=secondary, stderr=secondary, close_fds=True,
                               env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path), "TERM": "xterm", "COLUMNS": "150"})
    os.close(secondary)
    seen = b""
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # the terminal's other end closed: the process is gone
            break
        if not data:
            break
        seen += data
    os.close(primary)
    assert process.wait(timeout=60) == 0
    text = seen.decode(errors="replace")
    assert "judging" in text and "30/30" in text  # the bar, drawn by rich on the terminal
    assert "PASS sufficiency: pass rate" in text


def test_a_quiet_run_makes_its_first_call_before_rich_is_imported(server, tmp_path):
    """With -q nothing is printed before the run's end, so rich (11 ms to import) is not imported
    before the first judge call (issue 51)."""
    source = write_jsonl(tmp_path / "in.jsonl", ROWS[:3])
    marker = tmp_path / "rich.txt"
    extra = textwrap.dedent(f"""
        import ragjudge.transports.openai_http as http
        complete = http.OpenAIHTTPTransport.complete
        async def first(self, request):
            if not {str(marker)!r} in sys.modules:
                sys.modules[{str(marker)!r}] = None
                open({str(marker)!r}, "w").write(str("rich.console" in sys.modules))
            return await complete(self, request)
        http.OpenAIHTTPTransport.complete = first
    """)
    done, _ = _console(tmp_path, server, ["score", str(source), "-m", "sufficiency", "-o", str(tmp_path / "o.jsonl"), "-q", "--min-pass-rate", "0"],
                       extra.replace("\n", "\n        "))
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "False"  # rich was not imported when the first call went out


@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full"])
@pytest.mark.parametrize("bound, code", [("0", 0), ("1.5", 2)])
def test_a_closed_or_full_stderr_keeps_the_run_and_its_exit_code(server, tmp_path, redirect, bound, code):
    """The console's first note raised (OSError: no space left; AttributeError: no stderr) and the
    run ended with exit 1 before judging, no output written; a usage error's line did the same."""
    import shlex

    source = write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "ragjudge", "score", str(source), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", bound,
               "--model", "openai/fake-judge", "--api-base", server.url, "--cache-dir", str(tmp_path / "c")]
    done = subprocess.run(["bash", "-c", f"{shlex.join(command)} {redirect}"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path)})
    assert done.returncode == code
    assert done.stdout == ""
    if code == 0:
        assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == list(range(30))


# a breaker's find: Ctrl-C in the first second of `python -m ragjudge score ...` (while ragjudge.cli is imported, before the
# command's own handlers) printed a KeyboardInterrupt traceback from inside pydantic's import and died by SIGINT
BREAK_IN_IMPORT = """
import os, runpy, signal, sys
class Interrupt:
    def find_spec(self, name, path, target=None):
        if name == "ragjudge.cli":
            {how}
        return None
sys.meta_path.insert(0, Interrupt())
sys.argv = ["ragjudge", "judges"]
runpy.run_module("ragjudge", run_name="__main__")
"""


@pytest.mark.parametrize("how", ["raise KeyboardInterrupt",  # Ctrl-C
                                 "os.kill(os.getpid(), signal.SIGTERM); [None for _ in range(1000)]"])  # a second shape: SIGTERM
def test_an_interrupt_while_the_command_starts_is_one_line_and_exit_130(tmp_path, how):
    script = BREAK_IN_IMPORT.replace("{how}", how)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "interrupted while ragjudge was starting: nothing was read, called or written\n"
    assert done.stdout == ""

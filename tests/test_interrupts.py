"""Ctrl-C (exit 130): what an interrupted run has written, and the one line it ends with, which
says so and what running the command again does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, read_jsonl, write_jsonl
from helpers import GROUNDED, _ok, _summary
from helpers import LANDMARK_ROW as ROW
from ragjudge.gate import check_gate
from ragjudge.reports.gate_text import failures_of, lines_of
from ragjudge.types import Reason, Verdict

pytestmark = pytest.mark.integration  # Ctrl-C sent to ragjudge in its own process


# peer report (issue 20 item 10): after Ctrl-C while judging
def test_ctrl_c_while_judging_ends_with_one_line_that_says_what_was_written(tmp_path):
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i}."], "expected_response": f"city {i}"} for i in range(6)]
    out = tmp_path / "out.jsonl"
    returncode, stderr = _interrupted_at_the_first_call(tmp_path, rows, out)
    assert returncode == 130
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: all 6 rows were written to {out} (sufficiency 0 done, 6 unfinished;"), last
    assert "nothing more was written" not in stderr
    assert len(read_jsonl(out)) == 6


# peer report (issue 20 item 10): after Ctrl-C while judging
def test_ctrl_c_before_judging_still_says_nothing_was_written(run_cli, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("ragjudge.run.score_source", interrupted)
    import ragjudge.cli

    monkeypatch.setattr(ragjudge.cli, "_SAID", {})
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}])])
    assert result.code == 130 and result.stderr.strip().startswith("interrupted: nothing more was written")


def test_what_an_earlier_call_of_main_said_is_not_carried_into_the_next(run_cli, tmp_path, monkeypatch):
    # cli._SAID outlived main(): after one interrupted run in a process, a later Ctrl-C before judging printed nothing
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("ragjudge.run.score_source", interrupted)
    import ragjudge.cli

    ragjudge.cli._SAID["interrupted"] = True  # as the earlier run left it
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}])])
    assert result.code == 130 and result.stderr.strip().startswith("interrupted: nothing more was written")


# peer report (issue 29 item 15): Ctrl-C wording
def test_the_closing_line_counts_unsampled_rows_apart_and_tells_no_cache_runs_the_truth():
    from ragjudge.reports.terminal import interrupted_line

    summary = _summary(_ok(), _ok(), Verdict.failed("sufficiency", Reason.INTERRUPTED), *[Verdict.skipped("sufficiency", Reason.NOT_SAMPLED)] * 3)
    line = interrupted_line(summary, "out.jsonl", cache=True)
    assert line.startswith("interrupted: all 6 rows were written to out.jsonl (sufficiency 2 done, 1 unfinished, 3 not sampled; ")
    assert line.endswith("run the same command again to judge only those (finished calls come from the cache)")
    uncached = interrupted_line(summary, "out.jsonl", cache=False)
    assert "finished calls come from the cache" not in uncached
    assert uncached.endswith("run the same command again to judge every row again (--no-cache: no verdict was kept in the cache)")


# peer report (issue 29 item 15): Ctrl-C wording
def test_an_interrupt_after_the_last_verdict_says_no_row_is_unfinished():
    from ragjudge.reports.terminal import interrupted_line

    summary = _summary(_ok(), _ok())
    gate = check_gate(summary)
    assert gate.exit_code == 130
    assert lines_of(gate)[0] == "FAIL interrupted: every row was judged before the interrupt; no row is unfinished"
    assert not any("unfinished rows" in line for line in [*lines_of(gate), *failures_of(gate)])
    assert interrupted_line(summary, "out.jsonl") == ("interrupted: all 2 rows were written to out.jsonl (sufficiency 2 done, 0 unfinished: "
                                                       "every row was judged before the interrupt); nothing is left to judge")
    unfinished = check_gate(_summary(_ok(), Verdict.failed("sufficiency", Reason.INTERRUPTED)))
    assert lines_of(unfinished)[0] == "FAIL interrupted: unfinished rows have status error (reason 'interrupted')"


# peer report (issue 29 item 15): Ctrl-C wording
def test_ctrl_c_during_the_final_write_keeps_every_row_and_says_none_is_unfinished(run_cli, tmp_path, monkeypatch):
    import signal

    from ragjudge import io

    close = io.TableWriter.close

    def interrupted_close(self):  # Ctrl-C lands while the table is being finished
        signal.raise_signal(signal.SIGINT)
        close(self)

    monkeypatch.setattr(io.TableWriter, "close", interrupted_close)
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": f"r{i}"} for i in range(3)]), "-m", "sufficiency",
                      "-o", str(out)])
    assert result.code == 130 and len(read_jsonl(out)) == 3
    assert "unfinished rows" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (f"interrupted: all 3 rows were written to {out} (sufficiency 3 done, 0 unfinished: "
                                                      "every row was judged before the interrupt); nothing is left to judge")


# peer report (issue 29 item 15): Ctrl-C wording
def test_ctrl_c_under_no_cache_and_sample_says_what_is_true(tmp_path):
    rows = [{**GROUNDED, "id": f"r{i}"} for i in range(6)]
    out = tmp_path / "out.jsonl"
    returncode, stderr = _interrupted_at_the_first_call(tmp_path, rows, out, "--sample", "2")
    assert returncode == 130
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: all 6 rows were written to {out} (sufficiency 0 done, 2 unfinished, 4 not sampled;"), last
    assert "finished calls come from the cache" not in stderr and "(--no-cache: no verdict was kept in the cache)" in last


# bad-input review (tests/test_bad_input.py): it ended with exit 130 and no word at all
def test_ctrl_c_before_judging_says_nothing_was_written(run_cli, tmp_path, monkeypatch):
    # it ended with exit 130 and no word at all
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("ragjudge.run.score_source", interrupted)
    out = tmp_path / "o.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [ROW]), "-o", str(out)])
    assert result.code == 130 and not out.exists()
    assert result.stderr.strip() == "interrupted: nothing more was written (a Ctrl-C while judging still writes every row)"


def _interrupted_at_the_first_call(tmp_path, rows, out, *options: str) -> tuple[int, str]:
    """``ragjudge score`` on ``rows`` as a process against a fake judge that answers in 30 s, sent
    Ctrl-C while its first call (it goes alone) is in flight, once the input's first chunk is
    planned (the mapping said): its exit code and stderr. (A Ctrl-C before the first chunk is read
    stops the run at once, as ``test_a_ctrl_c_while_a_pipe_holds_the_first_chunk_back_stops_at_once``.)"""
    import signal
    import time

    from ragjudge.fakeserver import FakeJudgeServer

    with FakeJudgeServer(latency=30) as server:
        process = subprocess.Popen([sys.executable, "-m", "ragjudge", "score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency",
                                    "-o", str(out), "--model", "openai/fake", "--api-base", server.url, "--no-cache", *options],
                                   cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 180  # starting the command (imports) takes long on a loaded machine
        while server.in_flight < 1 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert server.in_flight == 1  # the run's first call (it goes alone, and takes 30 s): Ctrl-C while it is in flight
        said = []
        for line in process.stderr:  # type: ignore[union-attr]
            said.append(line)
            if line.startswith("columns:"):
                break
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    return process.returncode, "".join(said) + stderr


def test_a_ctrl_c_while_a_pipe_holds_the_first_chunk_back_stops_at_once(tmp_path):
    # a breaker's find: with the signal handlers set before the first chunk was read, a Ctrl-C
    # while stdin or a pipe held back the rest of the first chunk only marked the run interrupted, and
    # the run waited for the writer of the pipe (forever, for one that never ends)
    import signal
    import threading
    import time

    from ragjudge.fakeserver import FakeJudgeServer

    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    rows = [{"id": i, "request": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(150)]
    done, fed = threading.Event(), threading.Event()

    def feed():  # the first 150 rows, then the pipe stays open, without an end, until the test is over
        with open(fifo, "w", encoding="utf-8") as handle:  # opens once ragjudge opens the pipe to read it
            handle.writelines(json.dumps(row) + "\n" for row in rows)
            handle.flush()
            fed.set()
            done.wait(120)

    threading.Thread(target=feed, daemon=True).start()
    try:
        with FakeJudgeServer() as server:
            process = subprocess.Popen([sys.executable, "-m", "ragjudge", "score", str(fifo), "-m", "sufficiency", "-o", str(tmp_path / "out.jsonl"),
                                        "--model", "openai/fake", "--api-base", server.url, "--no-cache"],
                                       cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, stderr=subprocess.PIPE, text=True)
            assert fed.wait(180)  # ragjudge reads the pipe; it now waits for the rest of the first chunk
            time.sleep(0.5)
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
    finally:
        done.set()
    assert process.returncode == 130
    assert stderr.strip().splitlines()[-1] == "interrupted: nothing more was written (a Ctrl-C while judging still writes every row)"
    assert not (tmp_path / "out.jsonl").exists()


# peer report (issue 60 item 17): SIGTERM cancelled the calls already sent, so their replies were paid again on the
# re-run (44 calls for 40 rows)
@pytest.mark.slow  # starts two ragjudge processes against a judge at 1 s a call
def test_sigterm_lets_the_calls_in_flight_answer_and_the_rerun_pays_no_call_twice(tmp_path):
    import signal
    import time

    from ragjudge.fakeserver import FakeJudgeServer

    source = write_jsonl(tmp_path / "in.jsonl", [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."]}
                                                         for i in range(40)])
    command = [sys.executable, "-m", "ragjudge", "score", source, "-m", "sufficiency", "-o", str(tmp_path / "out.jsonl"), "--model",
               "openai/fake", "--cache-dir", str(tmp_path / "cache"), "--concurrency", "2", "--summary-json", str(tmp_path / "summary.json"), "--min-pass-rate", "0"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}
    with FakeJudgeServer(latency=1.0) as server:
        process = subprocess.Popen([*command, "--api-base", server.url], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 180
        while not (server.calls >= 3 and server.in_flight == 2) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        assert server.in_flight == 2  # the probe answered, two calls out
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        first = server.calls
        summary = json.loads((tmp_path / "summary.json").read_text())
        assert process.returncode == 130
        done = [row for row in read_jsonl(tmp_path / "out.jsonl") if row["sufficiency_status"] == "ok"]
        assert len(done) == first == summary["provider_calls"]  # each request sent brought its verdict, counted
        assert "waiting up to 5 s for the 2 call(s) in flight" in stderr
        again = subprocess.run([*command, "--api-base", server.url], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert server.calls == 40  # the re-run paid only for the rows not judged: no reply paid twice

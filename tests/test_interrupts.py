"""Ctrl-C (exit 130): what an interrupted run has written, and the one line it ends with, which
says so and what running the command again does."""

from __future__ import annotations

from conftest import read_jsonl
from conftest import write_jsonl


# peer report (issue 20 item 10): After Ctrl-C while judging
def test_ctrl_c_while_judging_ends_with_one_line_that_says_what_was_written(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT
    from ragjudge.fakeserver import FakeJudgeServer

    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i}."], "expected_response": f"city {i}"} for i in range(6)]
    out = tmp_path / "out.jsonl"
    with FakeJudgeServer(latency=30) as server:
        process = subprocess.Popen([sys.executable, "-m", "ragjudge", "score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency",
                                    "-o", str(out), "--model", "openai/fake", "--api-base", server.url, "--no-cache"],
                                   cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 180  # starting the command (imports) takes long on a loaded machine
        while server.in_flight < 1 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert server.in_flight == 1  # the run's first call (it goes alone, and takes 30 s): Ctrl-C while it is in flight
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: all 6 rows were written to {out} (sufficiency 0 done, 6 unfinished;"), last
    assert "nothing more was written" not in stderr
    assert len(read_jsonl(out)) == 6


# peer report (issue 20 item 10): After Ctrl-C while judging
def test_ctrl_c_before_judging_still_says_nothing_was_written(run_cli, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("ragjudge.run.score_source", interrupted)
    import ragjudge.cli

    monkeypatch.setattr(ragjudge.cli, "_SAID", {})
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}])])
    assert result.code == 130 and result.stderr.strip().startswith("interrupted: nothing more was written")

"""ragjudge score end to end (issue 2): the run's exit codes, errors and notes through ``run_score``
(the in-process fake judge); the command's contract (flags, stdin/stdout, printed lines, provider
faults over both transports) through ``run_cli`` against the local fake judge server."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import SAMPLE, read_jsonl, write_jsonl
from helpers import GROUNDED_ROW


def test_gate_passes_exit_0(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW])
    result = run_score(source, metric=["sufficiency"])
    assert result.code == 0, result.text
    assert "gate passed" in result.text


def test_missing_column_error_lists_available(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"question": "q", "docs": ["d"], "answer": "a"}])
    result = run_score(source, map=["context=contexts"])
    assert result.code == 2
    assert result.error == (  # the command prints it after "error: "
        f"column 'contexts' (for context) not found in {source}; available: question, docs, answer; "
        "set --map context=COLUMN"
    )


def test_missing_column_from_config_names_config_key(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"question": "q", "docs": ["d"]}])
    config = tmp_path / "c.yaml"
    config.write_text("columns:\n  context: passages\n")
    result = run_score(source, config=str(config))
    assert result.code == 2
    assert "set columns.context in the config" in result.error


def test_malformed_jsonl_names_line(run_score, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GROUNDED_ROW) + "\n\n{\"id\": 2, \"request\": \"x\",\n")
    result = run_score(str(path))
    assert result.code == 2
    assert result.error.startswith(f"{path}: line 3: not valid JSON")  # the command prints it after "error: "
    assert "each line must hold one JSON object" in result.error


def test_jsonl_line_that_is_not_an_object(run_score, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GROUNDED_ROW) + "\n[1, 2]\n")
    result = run_score(str(path))
    assert result.code == 2
    assert f"{path}: line 2: expected a JSON object, got list" in result.error


def test_unknown_config_key_is_named(run_score, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  modle: openai/gpt-4o\n")
    source = write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW])
    result = run_score(source, config=str(config))
    assert result.code == 2
    assert result.error == f"{config}: unknown key 'judge.modle'; `ragjudge config show` lists every key"


def test_input_not_found_exit_2(run_score, tmp_path):
    result = run_score(str(tmp_path / "nope.jsonl"))
    assert result.code == 2
    assert "input file not found" in result.error


def test_auth_error_exit_3_after_one_call(run_cli, tmp_path, server, transport):
    server.auth_error = True
    rows = [{**GROUNDED_ROW, "id": f"r{i}"} for i in range(40)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", source, "-m", "sufficiency", "--concurrency", "16", "-o", str(out)])
    assert result.code == 3
    assert server.calls == 1
    assert "authentication failed for openai/fake-judge" in result.stderr
    assert "sk-te" not in result.stderr and "sk-test" not in result.stderr
    written = read_jsonl(out)
    assert len(written) == 40  # every row is still in the output, with a status
    assert {r["sufficiency_status"] for r in written} == {"error"}


def test_quota_error_is_fatal(run_cli, tmp_path, server, transport):
    server.quota_error = True
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED_ROW, "id": f"r{i}"} for i in range(5)])
    result = run_cli(["score", source, "-m", "sufficiency"])
    assert result.code == 3
    assert server.calls == 1
    assert "quota exhausted" in result.stderr


def test_error_rate_gate_exit_3(run_cli, tmp_path, server, transport):
    server.rate_500 = 1.0
    source = write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW])
    result = run_cli(["score", source, "-m", "sufficiency", "--max-retries", "1"])
    assert result.code == 3
    assert "FAIL sufficiency: error rate 1.00 > 0.00 (1 of 1 judged rows)" in result.stderr
    assert server.calls == 2  # the call and one retry


def test_connection_refused_is_one_line_exit_3(run_cli, tmp_path, transport):
    source = write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2"}])
    result = run_cli(
        ["score", source, "-m", "sufficiency", "--api-base", "http://127.0.0.1:9/v1", "--max-retries", "1", "--cache-dir", str(tmp_path / "c"), "--model", "openai/x"],
        judge=False,
    )
    assert result.code == 3
    assert "cannot connect to openai/x at http://127.0.0.1:9/v1" in result.stderr
    assert "Traceback" not in result.stderr


def test_context_objects_without_text_key_are_one_passage_of_json_text_with_a_note(run_score, tmp_path, judge):
    # issue 27: MLflow judges str(context); ragjudge judges the object's JSON text and says so (was: a row error)
    rows = [{"id": "a", "request": "q?", "context": [{"body": "text", "url": "u"}], "expected_response": "x"}]
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), output=str(out), metric=["sufficiency"], min_pass_rate=["0"])
    row = read_jsonl(out)[0]
    assert row["sufficiency_status"] == "ok" and judge.calls == 1
    assert "note: a context item has no text under content, page_content, text (keys: body, url)" in result.text


def test_ambiguous_alias_is_an_error(run_score, tmp_path):
    rows = [{"question": "q", "query": "q2", "context": ["c"]}]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows))
    assert result.code == 2
    assert "columns 'question', 'query'" in result.error and "--map request=COLUMN" in result.error


def test_stdin_to_stdout_pipeline(run_cli, tmp_path):
    data = (SAMPLE / "rag_eval.jsonl").read_bytes()
    result = run_cli(["score", "-", "-o", "-", "--format", "csv", "--min-pass-rate", "0", "-q"], stdin=data)
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("id,request,context")
    table = pd.read_csv(__import__("io").StringIO(result.stdout))
    assert len(table) == 32


def test_summary_json_to_stdout_only_data(run_cli, tmp_path):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW]), "-m", "sufficiency", "--summary-json", "-"])
    doc = json.loads(result.stdout)
    assert doc["exit_code"] == result.code == 0
    assert doc["metrics"]["sufficiency"]["ok"] == 1
    assert doc["metrics"]["sufficiency"]["threshold"] == 0.5


def test_bad_flag_values_exit_2(run_cli, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW])
    assert "--map expects KEY=VALUE" in run_cli(["score", source, "--map", "request"]).stderr
    result = run_cli(["score", source, "-m", "faithfulness"])
    assert result.code == 2 and "unknown metric 'faithfulness'; use sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise, groundedness or a judge defined in the config" in result.stderr
    result = run_cli(["score", source, "--min-pass-rate", "1.5"])
    assert result.code == 2 and "--min-pass-rate: sufficiency: 1.5 is not between 0 and 1" in result.stderr


def test_output_is_atomic_on_input_error(run_score, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert run_score(str(bad), output=str(out)).code == 2
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.jsonl")] == []


def test_version_and_unknown_command_are_plain_usage_errors(run_cli):
    assert run_cli(["--version"], judge=False).stdout.strip() == "ragjudge 0.1.0"
    result = run_cli(["agreemnt"], judge=False)
    assert result.code == 2
    assert "No such command 'agreemnt'" in result.stderr and "unexpected" not in result.stderr


def test_missing_api_key_is_fatal_and_said_under_quiet(run_cli, tmp_path, monkeypatch, cache_dir):
    monkeypatch.delenv("OPENAI_API_KEY")
    source = write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2"}])
    result = run_cli(
        ["score", source, "-m", "sufficiency", "-q", "--model", "openai/gpt-4o-mini", "--cache-dir", cache_dir, "--max-retries", "2"],
        judge=False,
    )
    assert result.code == 3
    assert "FAIL judge stopped: no API key for openai/gpt-4o-mini" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr


def test_progress_lines_in_logs_when_not_a_terminal(run_cli, tmp_path, server, monkeypatch):
    monkeypatch.setattr("ragjudge.cli._progress.LOG_EVERY_S", 0.0)
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2"}]), "-m", "sufficiency"])
    assert "judged 1/2 rows (" in result.stderr and "judged 2/2 rows (" in result.stderr


def test_summary_lines_do_not_wrap_in_logs(run_cli, tmp_path):
    long_name = "the_users_question_as_typed_into_the_support_widget_" * 3
    row = {long_name: "Where is landmark 1?", "context": ["Landmark 1 stands in city 1."], "expected_response": "city 1"}
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [row]), "-m", "sufficiency", "--map", f"request={long_name}"])
    assert result.code == 0, result.stderr
    columns = [line for line in result.stderr.splitlines() if line.startswith("columns:")]
    assert len(columns) == 1 and f"request={long_name}" in columns[0] and columns[0].endswith("response=(none)")


def test_verbose_prints_each_rows_verdicts_as_they_land(run_cli, tmp_path):
    rows = [GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2", "expected_response": "Rome, Italy"}]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "-v", "--min-pass-rate", "0"])
    lines = result.stderr.splitlines()
    assert any(line.startswith("r1: sufficiency 1 passed (") for line in lines)
    assert any(line.startswith("r2: sufficiency 0 FAILED (") for line in lines)


def test_verbose_with_quiet_prints_only_the_verdicts(run_cli, tmp_path):
    # -q dropped -v without a word, where docs/offline-judge.md shows -v -q
    rows = [GROUNDED_ROW, {**GROUNDED_ROW, "id": "r2", "expected_response": "Rome, Italy"}]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "-v", "-q", "--min-pass-rate", "0"])
    lines = result.stderr.splitlines()
    assert result.code == 0
    assert [line.split(" (")[0] for line in lines] == ["r1: sufficiency 1 passed", "r2: sufficiency 0 FAILED"]


def test_verbose_leaves_out_the_rows_not_sampled(run_cli, tmp_path):
    # -v --limit 2 printed a "skipped: not sampled" line for each of the other rows, first
    rows = [{**GROUNDED_ROW, "id": f"r{i}"} for i in range(6)]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "-v", "-q", "--limit", "2", "--min-pass-rate", "0"])
    assert result.code == 0
    assert [line.split(":")[0] for line in result.stderr.splitlines()] == ["r0", "r1"]


def test_the_summary_says_how_many_rows_limit_left_out_of_its_counts(run_cli, tmp_path):
    # a new user's find: "ragjudge: 6 rows" over a table counting 2 (ok 2, skipped 0) while the file marks 4 more skipped
    rows = [{**GROUNDED_ROW, "id": f"r{i}"} for i in range(6)]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "--limit", "2", "--min-pass-rate", "0"])
    assert result.code == 0
    title = next(line for line in result.stderr.splitlines() if line.startswith("ragjudge: "))
    assert title.startswith("ragjudge: 6 rows (2 chosen by --limit / --sample; the other 4 are in the output as skipped, 'not sampled', "
                            "and in no count below), judge ")
    whole = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "--min-pass-rate", "0"])
    assert next(line for line in whole.stderr.splitlines() if line.startswith("ragjudge: ")).startswith("ragjudge: 6 rows, judge ")


def test_a_closed_stderr_does_not_lose_the_output(tmp_path, server):
    # `ragjudge score ... 2>&1 | head -1`: the notes could not be printed, the run stopped and wrote nothing
    import os
    import subprocess
    import sys

    from conftest import ROOT

    out = tmp_path / "out.jsonl"
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED_ROW, "id": f"r{i}"} for i in range(20)])
    command = (f"{sys.executable} -m ragjudge score {source} -m sufficiency -v -o {out} --model openai/fake --api-base {server.url} "
               f"--cache-dir {tmp_path / 'c'} 2>&1 | head -1")
    subprocess.run(command, shell=True, cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, timeout=60)
    assert len(read_jsonl(out)) == 20


@pytest.mark.parametrize("extra, judged", [([], 25), (["--sample", "7"], 7), (["--dry-run", "--sample", "7"], None)])
def test_a_pipe_as_input_is_read_once(run_cli, tmp_path, extra, judged):
    """``ragjudge score <(command)``: a pipe can be read once. Counting its rows for the progress
    bar read it empty past the first chunk ("line 11: not valid JSON", exit 2), and ``--sample``
    counted what was left of it (no row judged); a pipe is now not counted, and copied to a
    temporary file where its rows must be counted."""
    import os

    filler = "The weather in the old town was mild that spring. " * 1000  # 50 KB a row: more than a reader's buffer
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}. {filler}"]} for i in range(25)]
    pipe = tmp_path / "rows.pipe"
    os.mkfifo(pipe)
    stop = _feed(pipe, "".join(json.dumps(row) + "\n" for row in rows).encode())
    config = tmp_path / "c.yaml"
    config.write_text("chunk_size: 10\n")
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_cli(["score", str(pipe), "--input-format", "jsonl", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0",
                      "--config", str(config), "--summary-json", str(summary), *extra])
    stop()
    assert result.code == 0, result.stderr
    if judged is None:  # the dry run: its figures count the sampled rows
        figures = json.loads(summary.read_text())["dry_run"]["metrics"]["sufficiency"]
        assert (figures["rows"], figures["to_judge"]) == (25, 7)
        return
    assert [row["id"] for row in read_jsonl(out)] == [f"r{i}" for i in range(25)]
    assert json.loads(summary.read_text())["metrics"]["sufficiency"]["ok"] == judged
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".ragjudge")]


def _feed(pipe, data: bytes):
    """Write ``data`` into the named pipe ``pipe`` from a thread, then answer every later open with
    an empty pipe (as a shell's ``<(command)`` does once the command is done), not a wait for
    ever. Returns the function that stops the thread."""
    import os
    import threading

    done = threading.Event()

    def feed() -> None:
        pipe.write_bytes(data)
        while not done.is_set():
            with open(pipe, "wb"):
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()

    def stop() -> None:
        done.set()
        os.close(os.open(pipe, os.O_RDONLY | os.O_NONBLOCK))  # the feeder's last open returns
        feeder.join(timeout=10)

    return stop


@pytest.mark.parametrize("extra", [[], ["--sample", "3"], ["--dry-run", "--sample", "3"]])
def test_a_bad_line_in_a_pipe_is_named_by_the_pipe_and_parquet_can_come_through_one(run_cli, tmp_path, extra):
    """A pipe copied to a temporary file (``--sample``) was named by its copy in the error, a file
    the user never named and that is gone at exit; and a Parquet file through a pipe failed
    ("lseek failed") unless ``--sample`` copied it."""
    import os

    pipe = tmp_path / "rows.pipe"
    os.mkfifo(pipe)
    stop = _feed(pipe, b'{"request": "q", "context": ["c"]}\n{"request": "q2", "context": ["c"\n')
    result = run_cli(["score", str(pipe), "--input-format", "jsonl", "-m", "sufficiency", "-o", str(tmp_path / "o.jsonl"), *extra])
    stop()
    assert result.code == 2
    assert result.stderr.strip().startswith(f"error: {pipe}: line 2: not valid JSON"), result.stderr

    rows = pd.DataFrame([{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."]} for i in range(6)])
    rows.to_parquet(tmp_path / "rows.parquet")
    os.unlink(pipe)
    os.mkfifo(pipe)
    stop = _feed(pipe, (tmp_path / "rows.parquet").read_bytes())
    out = tmp_path / "o.jsonl"
    result = run_cli(["score", str(pipe), "--input-format", "parquet", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0", *extra])
    stop()
    assert result.code == 0, result.stderr
    if "--dry-run" not in extra:
        assert [row["id"] for row in read_jsonl(out)] == [f"r{i}" for i in range(6)]

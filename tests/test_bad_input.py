"""Bad input: a clear error naming the fix, or every row kept with a status (regressions
found by trying to break ragjudge)."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl
from helpers import LANDMARK_ROW as ROW


def test_csv_rows_with_one_field_too_many_do_not_shift_columns(run_score, tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("id,request,context\na,q,c,X\nb,q2,c2,Y\n")
    out = tmp_path / "o.jsonl"
    result = run_score(str(path), output=str(out), metric=["sufficiency"])
    assert result.code == 2
    assert f"{path}: line 2 (record 1): malformed CSV: 4 fields where the header has 3" in result.error  # the line is named (issue 20)


@pytest.mark.parametrize("args, message", [
    pytest.param(["--model", "nosuchprovider/x"], "unknown provider in model 'nosuchprovider/x'", id="unknown_provider"),
    pytest.param(["--timeout", "inf"], "--timeout: should be a finite number (got inf)", id="infinite_timeout"),
    pytest.param(["--summary-json", "/nonexistent-folder/s.json"], "--summary-json: folder does not exist", id="summary_folder"),
    # a breaker's find: with --batch the folder was made and a paid batch submitted; a direct run judged before it failed
    pytest.param(["-o", "/nonexistent-folder/out.parquet"], "-o: output folder does not exist: /nonexistent-folder", id="output_folder"),
    pytest.param(["-o", "/nonexistent-folder/out.parquet", "--batch"], "-o: output folder does not exist", id="output_folder_batch"),
    pytest.param(["-o", "-", "--summary-json", "-"], "would both write to stdout", id="stdout_twice"),
    pytest.param(["-o", "x.jsonl", "--format", "bogus"], "unknown format 'bogus'", id="bogus_format"),
])
def test_bad_options_fail_before_judging(run_cli, tmp_path, server, args, message):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [ROW]), "-m", "sufficiency", *args])
    assert result.code == 2
    assert message in result.stderr
    assert server.calls == 0


def test_unknown_input_suffix_names_the_right_flag(run_score, tmp_path):
    path = tmp_path / "data.txt"
    path.write_text(json.dumps(ROW) + "\n")
    result = run_score(str(path))
    assert result.code == 2 and "--input-format" in result.error
    assert run_score(str(path), input_format="jsonl", metric=["sufficiency"]).code == 0


def test_damaged_cache_is_a_clear_error(run_score, tmp_path):
    cache = tmp_path / "badcache"
    (cache / "responses").mkdir(parents=True)
    (cache / "responses" / "cache.db").write_bytes(b"this is not a database" * 100)
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [ROW]), metric=["sufficiency"], cache_dir=str(cache))
    assert result.code == 2
    assert f"cannot use the cache folder {cache}" in result.error and "--no-cache" in result.error


def test_jsonl_with_bom_is_read_and_bad_bytes_name_the_line(run_score, tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(ROW).encode() + b"\n")
    assert run_score(str(path), metric=["sufficiency"]).code == 0
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps(ROW).encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    result = run_score(str(bad), metric=["sufficiency"])
    assert result.code == 2
    assert f"{bad}: line 2: not UTF-8 text" in result.error


def test_parquet_integers_too_large_for_floats_become_text(tmp_path):
    from ragjudge.io import TableWriter

    out = tmp_path / "o.parquet"
    writer = TableWriter(str(out))
    for chunk in ({"a": [2**60], "b": [1]}, {"a": [1.5], "b": [2.5]}, {"a": [None], "b": [None]}):
        writer.write(pd.DataFrame(chunk, dtype=object))
    writer.close()
    table = pd.read_parquet(out)
    assert table["a"].tolist() == ["1152921504606846976", "1.5", None]
    assert table["b"].tolist()[:2] == [1.0, 2.5] and str(table["b"].dtype) == "float64"
    assert len(writer.notes) == 1 and "column 'a' holds values of different types" in writer.notes[0]


@pytest.mark.integration  # ragjudge in its own process (a pipe)
def test_chunked_parquet_to_stdout_widens_too(tmp_path):
    import io as _io
    import subprocess
    import sys

    code = (
        "import pandas as pd\n"
        "from ragjudge.io import TableWriter\n"
        "w = TableWriter('-', 'parquet')\n"
        "w.write(pd.DataFrame({'a': [[1]]}))\n"
        "w.write(pd.DataFrame({'a': ['x']}))\n"
        "w.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert pd.read_parquet(_io.BytesIO(done.stdout))["a"].tolist() == ["[1]", "x"]


def test_every_row_with_an_unusable_context_is_an_input_error_not_a_judge_failure(run_score, tmp_path, judge):
    # exit 3 says the judges could not run; here no judge was called: the input is unusable
    rows = [{**ROW, "id": f"r{i}", "context": [{"id": "x", "content": None}]} for i in range(3)]  # passage objects, none with text
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), output=str(out), summary_json=str(summary), min_pass_rate=["0"])
    assert result.code == 2, result.text
    assert judge.calls == 0
    assert "nothing could be judged: every judged row has an unusable input (3 rows" in result.text
    scored = read_jsonl(out)
    assert [r["sufficiency_status"] for r in scored] == ["error"] * 3 and "none has text under content" in scored[0]["sufficiency_error"]
    document = json.loads(summary.read_text())
    assert document["metrics"]["sufficiency"]["input_errors"] == 3 and document["exit_code"] == 2
    # one usable row: the judge ran, and the unusable rows break the error-rate gate, as input
    # errors (exit 2, not 3: no judge failed)
    rows.append({**ROW, "id": "good"})
    mixed = run_score(write_jsonl(tmp_path / "in2.jsonl", rows), output=str(out), min_pass_rate=["0"])
    assert mixed.code == 2 and judge.calls == 1
    assert "FAIL sufficiency: error rate 0.75 > 0.00 (3 of 4 judged rows; 3 from unusable input)" in mixed.text
    # allowed by the gate: they no longer fail the run
    allowed = run_score(write_jsonl(tmp_path / "in2.jsonl", rows), min_pass_rate=["0"], max_error_rate=["0.8"])
    assert allowed.code == 0, allowed.text


def test_summary_json_may_not_replace_the_scored_table_or_the_input(run_cli, tmp_path, server):
    source = write_jsonl(tmp_path / "in.jsonl", [ROW])
    before = (tmp_path / "in.jsonl").read_bytes()
    out = tmp_path / "x.jsonl"
    same_as_output = run_cli(["score", source, "-o", str(out), "--summary-json", str(out)])
    assert same_as_output.code == 2 and f"--summary-json {out} is also -o" in same_as_output.stderr
    same_as_input = run_cli(["score", source, "--summary-json", str(tmp_path / "." / "in.jsonl")])
    assert same_as_input.code == 2 and "is also the input" in same_as_input.stderr
    assert (tmp_path / "in.jsonl").read_bytes() == before and not out.exists() and server.calls == 0


def test_parquet_with_a_duplicate_column_name_is_a_clear_input_error(run_score, tmp_path, judge):
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["q"]), pa.array([["c"]]), pa.array(["x"]), pa.array(["y"])],
                                        names=["request", "context", "dup", "dup"]), source)
    result = run_score(str(source), output=str(tmp_path / "o.jsonl"))
    assert result.code == 2 and judge.calls == 0
    assert result.error == f"{source}: column 'dup' appears 2 times; rename all but one (a row cannot hold two values under one name)"


def test_a_full_disk_is_a_clear_error(run_score, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [ROW]), output="/dev/full", output_format="jsonl", metric=["sufficiency"], min_pass_rate=["0"])
    assert result.code == 2 and result.error == "cannot write /dev/full: No space left on device"  # the command prints it after "error: "


def test_chunk_size_has_an_upper_bound(tmp_path):
    from ragjudge import load_config
    from ragjudge.errors import ConfigError

    with pytest.raises(ConfigError, match="chunk_size"):
        load_config(None, {"chunk_size": 10**20})


def test_jsonl_with_a_byte_order_mark_on_stdin_is_read_as_jsonl(run_cli, tmp_path):
    # stdin was sniffed as CSV ("malformed CSV: Expected 21 fields")
    rows = [{**ROW, "id": f"r{i}"} for i in range(3)]
    data = b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in rows).encode()
    out = tmp_path / "o.jsonl"
    result = run_cli(["score", "-", "-o", str(out), "-m", "sufficiency", "--min-pass-rate", "0"], stdin=data)
    assert result.code == 0, result.stderr
    assert [r["id"] for r in read_jsonl(out)] == ["r0", "r1", "r2"]


def test_csv_that_is_not_utf8_says_to_save_it_as_utf8(run_score, tmp_path):
    source = tmp_path / "latin1.csv"
    source.write_bytes("request,context\nCaf\u00e9 au lait?,\"Served in caf\u00e9s.\"\n".encode("latin-1"))
    result = run_score(str(source))
    assert result.code == 2
    assert result.error == f"{source}: not UTF-8 text; save the CSV as UTF-8 (in a spreadsheet: CSV UTF-8)"


def test_csv_with_a_nul_byte_names_the_line(run_score, tmp_path, judge):
    # pandas ended the cell at the NUL and judged "c" instead of "c\0d more text", silently
    source = tmp_path / "nul.csv"
    source.write_bytes(b'request,context\nq1,"fine"\nq2,"c\x00d more text"\n')
    result = run_score(str(source))
    assert result.code == 2 and judge.calls == 0
    assert result.error == f"{source}: line 3: a NUL byte inside the text; remove it (or save the file as UTF-8 if it is UTF-16)"
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes("request,context\nq,c\n".encode("utf-16"))
    assert "save the file as UTF-8 if it is UTF-16" in run_score(str(utf16)).error


def test_csv_header_naming_a_column_twice_is_refused(run_score, tmp_path, judge):
    # pandas renamed the second one 'request.1', silently
    source = tmp_path / "dup.csv"
    source.write_text("request,context,request\nq,c,r\n")
    result = run_score(str(source))
    assert result.code == 2 and judge.calls == 0
    assert result.error == f"{source}: the header names column 'request' twice; rename one of them"


def test_jsonl_writes_slashes_plainly_and_reads_back_the_same_values(tmp_path):
    # pandas wrote every '/' as '\/' ("http:\/\/x.org")
    from ragjudge.io import TableWriter

    values = ["http://x.org/a/b", "back\\slash/", "\\\\/", "a\\/b", "/", "\\"]
    out = tmp_path / "o.jsonl"
    writer = TableWriter(str(out))
    writer.write(pd.DataFrame({"v": values, "nested": [[{"u": v}] for v in values]}))
    writer.close()
    text = out.read_text()
    assert '"v":"http://x.org/a/b"' in text and "\\/" not in text.replace("\\\\", "")
    back = [json.loads(line) for line in text.splitlines()]
    assert [r["v"] for r in back] == values and [r["nested"][0]["u"] for r in back] == values


def test_parquet_decimals_stay_decimals_across_chunks(tmp_path):
    # chunks inferred decimal128 types of different precision, and the column became the
    # quoted text '"1.50"'
    from decimal import Decimal

    from ragjudge.io import TableWriter

    out = tmp_path / "o.parquet"
    writer = TableWriter(str(out))
    for value in (Decimal("1.50"), Decimal("123.45"), None, Decimal("7")):
        writer.write(pd.DataFrame({"d": [value]}, dtype=object))
    writer.close()
    import pyarrow.parquet as pq

    column = pq.read_table(out).column("d")
    assert str(column.type).startswith("decimal128") and column.to_pylist() == [Decimal("1.50"), Decimal("123.45"), None, Decimal("7.00")]
    assert writer.notes == []


def test_a_full_disk_during_csv_or_parquet_leaves_no_temporary_file(tmp_path, monkeypatch):
    # abort() flushed the spool, hit the full disk again, and left .o.csv.XXXX.tmp behind
    from ragjudge.errors import OutputError
    from ragjudge.io import TableWriter

    for suffix in ("csv", "parquet", "jsonl"):
        writer = TableWriter(str(tmp_path / f"o.{suffix}"))
        writer.write(pd.DataFrame({"a": ["x" * 100] * 10}))

        def full(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(writer, "_close", full)
        monkeypatch.setattr(writer._buffer, "close", full)
        if writer._spool is not None:
            monkeypatch.setattr(writer._spool, "close", full)
        with pytest.raises(OutputError, match="No space left on device"):
            writer.close()
        writer.abort()
        assert [p.name for p in tmp_path.iterdir()] == [], suffix


def test_input_errors_that_break_the_gate_are_exit_2_even_beside_a_few_judge_errors():
    # 19 unusable contexts and 1 judge error in 100 rows, max error rate 0.1: the judge's own
    # error rate (0.01) is within the gate, so the failure is the input's (exit 2, was 3)
    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.judges.base import Verdict
    from ragjudge.reports.gate_text import lines_of

    metric = MetricSummary("sufficiency", 0.5, min_pass_rate=0.0, max_error_rate=0.1)
    for i in range(100):
        if i < 19:
            metric.add(Verdict.failed("sufficiency", "context item 1 has no text", input_error=True))
        elif i == 19:
            metric.add(Verdict.failed("sufficiency", "unreadable reply"))
        else:
            metric.add(Verdict(metric="sufficiency", status="ok", score=1.0, passed=True))
    gate = check_gate(Summary(rows=100, metrics={"sufficiency": metric}))
    assert gate.exit_code == 2
    assert "FAIL sufficiency: error rate 0.20 > 0.10 (20 of 100 judged rows; 19 from unusable input)" in lines_of(gate)
    metric.add(Verdict.failed("sufficiency", "unreadable reply"))
    for _ in range(12):
        metric.add(Verdict.failed("sufficiency", "unreadable reply"))
    assert check_gate(Summary(rows=113, metrics={"sufficiency": metric})).exit_code == 3  # 14/113 judge errors > 0.1


def test_header_check_reads_only_a_whole_header():
    # a first block that ended inside a long header made "...,ab" + "c" look like a second 'ab'
    import io as _io

    from ragjudge.errors import InputError
    from ragjudge.io.readers import _check_header, _NulGuard

    def guard(data: bytes) -> _NulGuard:
        g = _NulGuard(_io.BytesIO(data), "in.csv")
        g.read(len(data))
        return g

    _check_header(guard(b"request,ab,context,ab"), 5)  # cut inside the header: not checked
    _check_header(guard(b"request,ab,context,abc\nq,1,c,2\n"), 4)  # no repeat
    with pytest.raises(InputError, match="names column 'ab' twice"):
        _check_header(guard(b"request,ab,context,ab\nq,1,c,2\n"), 4)
    with pytest.raises(InputError, match=r"names column 'a\\nb' twice"):
        _check_header(guard(b'request,"a\nb",context,"a\nb"\nq,1,c,2\n'), 4)


@pytest.mark.integration  # ragjudge in its own process (a pipe)
def test_a_closed_stdout_pipe_is_said_plainly(tmp_path):
    import subprocess
    import sys

    from ragjudge.fakeserver import FakeJudgeServer

    source = write_jsonl(tmp_path / "in.jsonl", [{**ROW, "id": f"r{i}", "request": f"q{i} " + "x" * 200} for i in range(300)])
    with FakeJudgeServer() as server:
        command = [sys.executable, "-m", "ragjudge", "score", source, "-o", "-", "--format", "csv", "-m", "sufficiency", "--model", "openai/fake",
                   "--api-base", server.url, "--no-cache", "-q", "--min-pass-rate", "0"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"})
        process.stdout.read(100)
        process.stdout.close()  # the reader stops early, as `| head -c 100` does
        stderr = process.stderr.read().decode()
        process.wait(timeout=60)
    assert process.returncode == 2
    assert stderr.strip() == "error: stdout was closed before the output was complete (the command reading the pipe stopped early)"


# issue 44 item 8: a CSV record with fewer fields than the header (the unit tier: tests/unit/test_csv_records.py)
def test_a_csv_record_cut_short_is_exit_2_naming_its_line(run_score, tmp_path):
    path = tmp_path / "cut.csv"
    path.write_text("id,request,context,expected_response,response\n" + "my-01,Who?,A passage.,Ann,Ann\nmy-02,When did the Gener")
    result = run_score(str(path), metric=["sufficiency"])
    assert result.code == 2 and "line 3 (record 2): malformed CSV: 2 fields where the header has 5" in result.error


# peer report (issue 20 item 7): CSV errors name the wrong line
def test_a_csv_error_names_the_physical_line_where_quoted_cells_span_lines(run_score, tmp_path):
    lines = ["id,request,context"] + [f'{i},"q{i}","first line\nsecond line of row {i}"' for i in range(1, 81)]
    lines.append('81,q8"1,"a stray ""quote""" extra, field')
    path = tmp_path / "in.csv"
    path.write_text("\n".join(lines) + "\n")
    result = run_score(str(path), metric=["sufficiency"])
    assert result.code == 2
    assert f"{path}: line 162 (record 81): malformed CSV:" in result.error  # pandas said "line 82", the record


# peer report (issue 20 item 7): CSV errors name the wrong line
def test_every_malformed_csv_names_its_line_from_stdin_too(run_cli, tmp_path):
    text = "id,request,context\n" + "".join(f'{i},"q","a\nb"\n' for i in range(1, 6)) + "6,q,c,EXTRA\n"
    result = run_cli(["score", "-", "--input-format", "csv", "-m", "sufficiency"], stdin=text.encode())
    assert result.code == 2
    assert "<stdin>: line 12 (record 6): malformed CSV: 4 fields where the header has 3" in result.stderr


@pytest.mark.parametrize("bad", ['{not json\n', None], ids=["malformed-line", "no-such-column"])
def test_a_run_that_fails_before_its_first_row_writes_nothing_to_stdout(run_cli, tmp_path, bad):
    # a breaker's find: -o - --format json printed the array's "[" before the error, once the writer was made before the input was read
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "request": "q", "context": ["c"]}\n' + (bad or ""), encoding="utf-8")
    mapped = [] if bad else ["--map", "request=nosuch"]
    result = run_cli(["score", str(source), "-m", "sufficiency", "-o", "-", "--format", "json", *mapped])
    assert result.code == 2 and ("line 2: not valid JSON" if bad else "nosuch") in result.stderr
    assert result.stdout == ""


def test_a_json_table_with_no_row_is_still_an_empty_array(tmp_path):
    from ragjudge.io import TableWriter

    out = tmp_path / "out.json"
    writer = TableWriter(str(out), "json")
    writer.close()
    assert out.read_text(encoding="utf-8") == "[\n]\n"

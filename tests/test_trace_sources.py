"""Trace inputs in the forms users have them, and faults found by a bad-input review (each
test fails on the code before its fix):

- OTLP as a JSON array of requests, a folder or glob of the Collector's (rotated) files, and
  on stdin; Phoenix span tables the same;
- ``--input-format otlp`` on a Parquet file, a folder, or a path that does not exist;
- a span exported twice counts once (Phoenix keeps the first copy of a span id);
- numeric Phoenix ids, which pandas widens to float where ``parent_id`` has a null;
- a zero-row Phoenix Parquet is "no span", not "not a Phoenix table";
- a Parquet struct ``input.value`` does not gain the other rows' keys;
- a trace's text-less passages are not told to "map context to a column";
- ``--set judge=4`` beside ``--model`` is refused, not dropped unsaid;
- and what a second review found: a folder whose first file is a table, or that holds a CSV or
  a Phoenix table beside OTLP files, names the odd file instead of dropping traces; an empty
  file (the Collector's active file, just rotated) is passed over; a glob is filtered by suffix
  as a folder is; stdin is told by its first 64 KiB however slowly they come, and a Parquet
  file on stdin is read; a pretty-printed Phoenix array and blank lines before OTLP are traces;
  Phoenix ids made of digits stay as written; a failed dry run leaves no folder behind; an
  error inside a JSON array names its item's line; the wrong ``--input-format`` names the
  right one.
"""

from __future__ import annotations

import io
import os
import subprocess
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from helpers import RETRIEVER_ID, ROOT_ID, TRACE, _request, _span, needs_mlflow
from ragjudge.errors import ConfigError, InputError
from ragjudge.traces import otel, source_kind
from ragjudge.traces.spans import SpanView, TraceView, trace_rows

ROW_ID = f"{TRACE}/{RETRIEVER_ID}"


ROOT = _span(ROOT_ID, "chain", "CHAIN", input__value="When was the Eiffel Tower built?", output__value="1887-1889")
RETRIEVER = _span(RETRIEVER_ID, "retriever", "RETRIEVER", parent=ROOT_ID, start=1000, input__value="eiffel tower",
                  retrieval__documents__0__document__content="The Eiffel Tower was built from 1887 to 1889.")
PASSAGE = "The Eiffel Tower was built from 1887 to 1889."


def _lines(*requests):
    return "".join(json.dumps(r) + "\n" for r in requests)


def _one_row(frame):
    (row,) = frame.to_dict("records")
    return row


def test_a_json_array_of_otlp_requests_is_read_as_traces(tmp_path):
    flat = tmp_path / "array.json"
    flat.write_text(json.dumps([_request(ROOT), _request(RETRIEVER)]))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps([_request(ROOT, RETRIEVER)], indent=2))
    for path in (flat, pretty):
        assert otel.is_otlp_file(path) and source_kind(str(path)).name == "otlp"
        row = _one_row(otel.read_otlp_file(path))
        assert (row["id"], row["request"], row["response"]) == (ROW_ID, "eiffel tower", "1887-1889")
        assert [p["content"] for p in row["context"]] == [PASSAGE]


def test_a_folder_or_glob_of_otlp_files_is_one_set_of_spans(tmp_path):
    folder = tmp_path / "export"
    (folder / "older").mkdir(parents=True)
    (folder / "older" / "traces-1.jsonl").write_text(_lines(_request(ROOT)))  # the trace split across rotated files
    (folder / "traces-2.json").write_text(_lines(_request(RETRIEVER)))
    (folder / "notes.txt").write_text("not a trace file")  # other suffixes are not read
    for source in (str(folder), str(folder / "**" / "traces-*.json*")):
        assert source_kind(source).name == "otlp"
        row = _one_row(otel.read_otlp_file(source))
        assert (row["id"], row["request"], row["response"]) == (ROW_ID, "eiffel tower", "1887-1889")
    (folder / "zz.jsonl").write_text('{"request": "a table row"}\n')
    with pytest.raises(InputError, match=r"zz\.jsonl is not OTLP JSON \(line 1\)"):
        otel.read_otlp_file(folder)


def test_a_span_exported_twice_counts_once(tmp_path):
    path = tmp_path / "retried.jsonl"
    changed = json.loads(json.dumps(RETRIEVER))
    changed["attributes"][-1]["value"]["stringValue"] = "a later copy"
    path.write_text(_lines(_request(ROOT, RETRIEVER), _request(RETRIEVER), _request(changed)))
    row = _one_row(otel.read_otlp_file(path))
    assert row["id"] == ROW_ID and [p["content"] for p in row["context"]] == [PASSAGE]  # the first copy


def test_input_format_otlp_on_the_wrong_kind_of_path_says_what_it_is(tmp_path):
    table = tmp_path / "spans.parquet"
    pd.DataFrame({"context.span_id": ["a"], "context.trace_id": ["b"]}).to_parquet(table)
    with pytest.raises(InputError, match=r"spans\.parquet is a Parquet file, not OTLP JSON: a Phoenix span table saved to "
                                         r"Parquet is read with --input-format phoenix"):
        otel.read_otlp_file(table)
    with pytest.raises(InputError, match=r"^input file not found: .*nothing\.jsonl$"):
        otel.read_otlp_file(tmp_path / "nothing.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty: no trace file \(\.json, \.jsonl, \.ndjson, \.parquet, \.pq, \.csv, not empty\) in it"):
        otel.read_otlp_file(tmp_path / "empty")


def test_otlp_and_phoenix_spans_on_stdin_are_scored_as_traces(run_cli, tmp_path, server):
    out = tmp_path / "scored.jsonl"
    result = run_cli(["score", "-", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"],
                     stdin=_lines(_request(ROOT, RETRIEVER)).encode())
    assert result.code == 0, result.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["id"], row["request"], row["sufficiency_status"]) == (ROW_ID, "eiffel tower", "ok")
    phoenix = pd.DataFrame([
        {"name": "chain", "span_kind": "CHAIN", "parent_id": None, "context.span_id": ROOT_ID, "context.trace_id": TRACE,
         "attributes.input.value": "q?", "attributes.output.value": "a", "attributes.retrieval.documents": None},
        {"name": "retriever", "span_kind": "RETRIEVER", "parent_id": ROOT_ID, "context.span_id": RETRIEVER_ID,
         "context.trace_id": TRACE, "attributes.input.value": "eiffel", "attributes.output.value": None,
         "attributes.retrieval.documents": [{"document.content": PASSAGE}]}]).to_json(orient="records", lines=True)
    result = run_cli(["score", "-", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"], stdin=phoenix.encode())
    assert result.code == 0, result.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["id"], row["request"], row["sufficiency_status"]) == (ROW_ID, "eiffel", "ok")
    assert server.calls == 2
    table = (tmp_path / "table.jsonl")  # a table on stdin is still a table
    table.write_text(json.dumps({"id": "t1", "request": "q", "context": ["passage"]}) + "\n")
    result = run_cli(["score", "-", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"], stdin=table.read_bytes())
    assert result.code == 0, result.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["t1"]


def _phoenix_rows(**retriever):
    return [
        {"name": "chain", "span_kind": "CHAIN", "parent_id": None, "context.span_id": 1, "context.trace_id": 10,
         "attributes.input.value": "When was it built?", "attributes.output.value": "1887-1889"},
        {"name": "retriever", "span_kind": "RETRIEVER", "parent_id": 1, "context.span_id": 2, "context.trace_id": 10,
         "attributes.input.value": "eiffel", "attributes.retrieval.documents": [{"document.content": PASSAGE}], **retriever}]


def test_numeric_phoenix_ids_widened_to_float_still_find_the_parent(tmp_path):
    path = tmp_path / "spans.jsonl"
    pd.DataFrame(_phoenix_rows()).to_json(path, orient="records", lines=True)
    assert pd.read_json(path, lines=True)["parent_id"].dtype == float  # the null root parent widens 1 to 1.0
    row = _one_row(otel.read_phoenix_file(path))
    assert (row["id"], row["span_skip_reason"], row["request"]) == ("10/2", None, "eiffel")


def test_a_zero_row_phoenix_parquet_holds_no_span(tmp_path):
    path = tmp_path / "spans.parquet"
    pd.DataFrame(_phoenix_rows()).iloc[:0].to_parquet(path)
    assert source_kind(str(path)).name == "phoenix"
    with pytest.raises(InputError, match=r"spans\.parquet holds no span: query Phoenix"):
        otel.read_phoenix_file(path)


def test_a_parquet_struct_input_value_keeps_its_own_keys(tmp_path):
    rows = _phoenix_rows()
    rows[0]["attributes.input.value"] = {"query": "When was it built?"}
    rows[1]["attributes.input.value"] = {"question": "eiffel"}  # the struct column holds both keys, null where absent
    path = tmp_path / "spans.parquet"
    pd.DataFrame(rows).to_parquet(path)
    row = _one_row(otel.read_phoenix_file(path))
    assert row["request"] == "eiffel"  # not '{"query": null, "question": "eiffel"}'


def test_a_folder_of_phoenix_tables_is_read_as_one(tmp_path):
    rows = _phoenix_rows()
    pd.DataFrame(rows[:1]).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame(rows[1:]).to_parquet(tmp_path / "b.parquet")
    assert source_kind(str(tmp_path)).name == "phoenix"
    row = _one_row(otel.read_phoenix_file(tmp_path))
    assert (row["id"], row["response"], [p["content"] for p in row["context"]]) == ("10/2", "1887-1889", [PASSAGE])


def test_a_trace_s_passages_without_text_name_the_retriever_not_a_column():
    trace = TraceView("t", "OK", [SpanView("root", None, "rag", "CHAIN", {"q": "q?"}, {"a": "a"}),
                                  SpanView("r", "root", "search", "RETRIEVER", outputs=[{"page_content": None, "metadata": {}}])])
    notes: list[str] = []
    (row,) = trace_rows(trace, notes)
    assert row["context"] == [] and row["span_error"] is None  # judged "no", as MLflow judges it (issue 45 item 3)
    assert notes == ["note: retriever span 'search' (r): context holds 1 passage(s) and none has text under content, "
                     "page_content, text; the retriever should return each passage's text (a Document's page_content, or a "
                     "string); judged as a retrieval that found nothing (\"no\"), as MLflow's RetrievalSufficiency judges it"]


def test_set_a_section_to_a_value_beside_a_named_option_is_refused(run_cli, tmp_path):
    table = tmp_path / "t.jsonl"
    table.write_text(json.dumps({"request": "q", "context": ["p"]}) + "\n")
    result = run_cli(["score", str(table), "--set", "judge=4", "--model", "openai/x", "--dry-run"], judge=False)
    assert result.code == 2
    assert "--set judge: judge is a section of the config (keys such as model), not a value; set one of its keys" in result.stderr


# -- a second review ---------------------------------------------------------------------------


def _table_line():
    return json.dumps({"id": "t1", "request": "q", "context": ["p"]}) + "\n"


@pytest.mark.parametrize("table_name", ["a_table.jsonl", ".hidden.jsonl", "z_table.jsonl", "b.csv"])
def test_a_folder_of_traces_with_a_table_in_it_names_the_table(run_score, tmp_path, table_name):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "b_traces.jsonl").write_text(_lines(_request(ROOT, RETRIEVER)))
    (folder / table_name).write_text(_table_line() if table_name.endswith("jsonl") else "id,request\nt1,q\n")
    assert source_kind(str(folder)).name == "otlp"  # whichever file sorts first
    result = run_score(str(folder), metric=["sufficiency"], dry_run=True)
    assert result.code == 2
    assert f"{table_name} is not OTLP JSON (line 1" in result.error
    assert "a folder or glob read as traces holds trace files of one kind only" in result.error


def test_a_folder_of_otlp_files_with_a_phoenix_table_names_it(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a.jsonl").write_text(_lines(_request(ROOT, RETRIEVER)))
    pd.DataFrame(_phoenix_rows()).to_parquet(folder / "b.parquet")
    with pytest.raises(InputError, match=r"b\.parquet is a Parquet file, not OTLP JSON: a Phoenix span table saved to Parquet is read "
                                         r"with --input-format phoenix"):
        otel.read_otlp_file(folder)
    pd.DataFrame(_phoenix_rows()).to_json(folder / "b.parquet", orient="records", lines=True)  # the same as JSONL, misnamed
    (folder / "b.parquet").rename(folder / "b.jsonl")
    with pytest.raises(InputError, match=r"b\.jsonl is a Phoenix span table, not OTLP JSON: read it with --input-format phoenix"):
        otel.read_otlp_file(folder)
    with pytest.raises(InputError, match=r"a\.jsonl is OTLP JSON, not a Phoenix span table: read it with --input-format otlp"):
        otel.read_phoenix_file(folder)


def test_empty_files_in_a_folder_or_glob_are_passed_over(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "a-empty.jsonl").write_text("")  # sorts first
    (folder / "b-traces-1.jsonl").write_text(_lines(_request(ROOT, RETRIEVER)))
    (folder / "traces.jsonl").write_text("\n")  # the Collector's active file, just rotated: sorts last
    for source in (str(folder), str(folder / "*")):
        assert source_kind(source).name == "otlp"
        assert _one_row(otel.read_otlp_file(source))["id"] == ROW_ID


def test_a_glob_is_filtered_by_suffix_as_a_folder_is(tmp_path):
    (tmp_path / "a.txt").write_text("notes")
    (tmp_path / "b.jsonl").write_text(_lines(_request(ROOT, RETRIEVER)))
    source = str(tmp_path / "*")
    assert source_kind(source).name == "otlp"
    assert _one_row(otel.read_otlp_file(source))["id"] == ROW_ID


class _Trickle(io.RawIOBase):
    """A pipe whose writer is slow: a few bytes a read."""

    def __init__(self, data: bytes, step: int = 5) -> None:
        self.data, self.step = data, step

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(self.step, len(buffer), len(self.data))
        buffer[:n], self.data = self.data[:n], self.data[n:]
        return n


def _trickle(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_Trickle(data), 16), encoding="utf-8"))


def test_stdin_is_told_by_its_first_bytes_however_slowly_they_come(monkeypatch):
    _trickle(monkeypatch, _lines(_request(ROOT, RETRIEVER)).encode())
    assert source_kind("-").name == "otlp"
    assert _one_row(otel.read_otlp_file("-"))["id"] == ROW_ID
    table = _table_line().encode()
    _trickle(monkeypatch, table)
    assert source_kind("-") is None
    from ragjudge.io.formats import _stdin

    assert _stdin().read() == table  # a table on stdin is read whole after the look


def test_a_phoenix_table_whose_ids_come_after_a_long_value_is_told_on_stdin(run_cli, tmp_path, server):
    rows = _phoenix_rows()
    rows = [{"events": "e" * 7000, **row} for row in rows]  # 'context.span_id' comes after byte 7000
    out = tmp_path / "scored.jsonl"
    result = run_cli(["score", "-", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"],
                     stdin=pd.DataFrame(rows).to_json(orient="records", lines=True).encode())
    assert result.code == 0, result.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["10/2"]


def test_a_phoenix_parquet_on_stdin_is_read(run_cli, tmp_path, server):
    buffer = io.BytesIO()
    pd.DataFrame(_phoenix_rows()).to_parquet(buffer)
    out = tmp_path / "scored.jsonl"
    for extra in ([], ["--input-format", "phoenix"]):
        result = run_cli(["score", "-", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0", *extra], stdin=buffer.getvalue())
        assert result.code == 0, result.stderr
        assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["10/2"]
    buffer = io.BytesIO()
    pd.DataFrame([{"id": "t1", "request": "q", "context": ["p"]}]).to_parquet(buffer)  # a Parquet table on stdin is still a table
    result = run_cli(["score", "-", "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"], stdin=buffer.getvalue())
    assert result.code == 0, result.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["t1"]


def test_a_closed_stdin_is_named(run_cli, monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    result = run_cli(["score", "-", "--dry-run"], judge=False)
    assert result.code == 2 and "stdin is closed" in result.stderr and "AttributeError" not in result.stderr


def test_a_pretty_printed_phoenix_array_and_blank_lines_before_otlp_are_traces(tmp_path):
    pretty = tmp_path / "spans.json"
    pretty.write_text(pd.DataFrame(_phoenix_rows()).to_json(orient="records", indent=2))
    assert pretty.read_text().startswith("[\n")
    assert source_kind(str(pretty)).name == "phoenix"
    assert _one_row(otel.read_phoenix_file(pretty))["id"] == "10/2"
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n" + _lines(_request(ROOT, RETRIEVER)))
    assert source_kind(str(blank)).name == "otlp"
    array = tmp_path / "blank.json"
    array.write_text("\n  \n" + json.dumps([_request(ROOT, RETRIEVER)], indent=2))
    assert source_kind(str(array)).name == "otlp"


def test_phoenix_ids_made_of_digits_stay_as_written(tmp_path):
    rows = _phoenix_rows()
    rows[0]["context.span_id"] = rows[1]["parent_id"] = "0123456789012345"  # a leading zero
    rows[1]["context.span_id"] = "9876543210987653"  # above 2**53: a float would round it
    for row in rows:
        row["context.trace_id"] = "01234567890123456789012345678901"
    path = tmp_path / "spans.jsonl"
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    row = _one_row(otel.read_phoenix_file(path))
    assert (row["id"], row["span_skip_reason"]) == ("01234567890123456789012345678901/9876543210987653", None)


def test_a_dry_run_on_traces_that_cannot_be_read_leaves_no_folder(run_score, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([_request(ROOT, RETRIEVER), None]))
    result = run_score(str(bad), dry_run=True)
    assert result.code == 2 and "item 2 of the array" in result.error
    assert list(scratch.iterdir()) == []


def test_an_error_inside_a_json_array_names_its_item_and_line(tmp_path):
    path = tmp_path / "array.json"
    broken = json.loads(json.dumps(RETRIEVER))
    del broken["traceId"]
    path.write_text(json.dumps([_request(ROOT), _request(broken)], indent=2))
    line = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text == "  {"][1]  # where item 2 starts
    with pytest.raises(InputError, match=rf"array\.json line {line}, item 2 of the array: span 'retriever' has no traceId"):
        otel.read_otlp_file(path)
    path.write_text(json.dumps([_request(ROOT), {"request": "a table row"}]))
    with pytest.raises(InputError, match=r"array\.json is not OTLP JSON \(line 1, item 2 of the array\)"):
        otel.read_otlp_file(path)


def test_a_trace_input_of_unknown_suffix_is_told_the_trace_formats(run_score, tmp_path):
    path = tmp_path / "traces.txt"
    path.write_text(_lines(_request(ROOT, RETRIEVER)))
    result = run_score(str(path), dry_run=True)
    assert result.code == 2 and "(traces: --input-format otlp|phoenix|mlflow-traces)" in result.error
    assert run_score(str(path), input_format="otlp", dry_run=True).code == 0


def test_a_table_with_phoenix_id_columns_is_told_to_read_as_a_table(run_score, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"context.span_id": "a", "context.trace_id": "b", "request": "q", "context": ["p"]}) + "\n")
    result = run_score(str(path), dry_run=True)
    assert result.code == 2
    assert "no attributes.* column" in result.error and "read as a table with --input-format jsonl, csv or parquet" in result.error
    assert run_score(str(path), input_format="jsonl", dry_run=True).code == 0


SHAPE = "one Trace.to_json() per line, or a JSON array of them"


# review of the traces pages and readers (p4-fixb) item 2: install lines: from the checkout, never the PyPI name (another project's)
def test_the_missing_mlflow_error_names_the_checkout_install(monkeypatch):
    import ragjudge.traces.mlflow as mt

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    with pytest.raises(ConfigError) as err:
        mt._mlflow()
    assert str(err.value) == 'reading or writing MLflow traces needs MLflow: pip install ".[mlflow]" in a ragjudge checkout'


# review of the traces pages and readers (p4-fixb) item 3: --input-format mlflow-traces on what is not a trace file: say what it is
@needs_mlflow
@pytest.mark.parametrize("name, text, said", [
    ("a.jsonl", '{"request": "q", "context": ["c"]}\n{"request": "r", "response": "s"}\n',
     "a.jsonl is a table (2 row(s); columns request, context, response), not an MLflow trace file "
     f"({SHAPE}); to score it as a table, drop --input-format mlflow-traces"),
    ("empty.jsonl", "", f"empty.jsonl is empty: no MLflow traces in it (a trace file holds {SHAPE})"),
    ("garbage.json", '[1,"x",null,{}]',
     "garbage.json: item 1 is 1, not an MLflow trace (Trace.to_json()'s object, with info.trace_id and data.spans; "
     f"a trace file holds {SHAPE})"),
])
def test_a_forced_trace_format_on_another_file_says_what_the_file_is(run_score, tmp_path, monkeypatch, name, text, said):
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, encoding="utf-8")
    result = run_score(name, input_format="mlflow-traces", output="out.jsonl")
    assert result.code == 2 and "Traceback" not in result.error
    assert result.error == said  # the command prints it after "error: "
    assert not Path("out.jsonl").exists()


# review of the traces pages and readers (p4-fixb) item 3: --input-format mlflow-traces on what is not a trace file: say what it is
@needs_mlflow
def test_read_traces_names_the_first_item_that_is_not_a_trace(tmp_path):
    from ragjudge.errors import InputError
    from ragjudge.traces import mlflow as mt

    cases = {
        "rows.json": ('[{"request": "q"}, {"x": 1}]', "rows.json is a table (2 row(s); columns request, x), not an MLflow trace file"),
        "lines.jsonl": ('\n"x"\n{"request": "q"}\n', 'lines.jsonl: line 2 is "x", not an MLflow trace'),
        "empty.json": ("[]\n", "empty.json is an empty JSON array: no MLflow traces in it"),
        "blank.jsonl": ("\n  \n", "blank.jsonl is empty: no MLflow traces in it"),
        "nulls.json": ("[null, 1]", "nulls.json: item 1 is null, not an MLflow trace"),
        "keys.json": ('[{"info": {}, "x": 2}, 3]', "keys.json: item 1 is an object with keys info, x, not an MLflow trace"),
        "notes.txt": ("some notes\n", f"notes.txt is neither an MLflow trace file ({SHAPE}) nor a table: line 1 is not JSON"),
        "t.csv": ("a,b\n1,2\n", "t.csv is a table (.csv file), not an MLflow trace file"),
    }
    for name, (text, said) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as err:
            mt.read_traces(str(path))
        assert str(err.value).startswith(f"{path}{said[len(name):]}" if said.startswith(name) else said), (name, str(err.value))


@pytest.mark.integration  # a fresh Python process without MLflow
@pytest.mark.parametrize("extra", [[], ["--dry-run"], ["--batch"]])
def test_mlflow_traces_without_mlflow_installed_say_how_to_install_it(tmp_path, extra):
    # a breaker's find: "error: unexpected ModuleNotFoundError: No module named 'mlflow'" (exit 2; exit 1 with RAGJUDGE_DEBUG=1)
    code = ("import sys\nsys.modules['mlflow'] = None  # as where the [mlflow] extra is not installed\n"
            "from ragjudge.cli import main\n"
            f"sys.argv = ['ragjudge', 'score', 'mlflow:exp1', '--model', 'openai/fake-judge', '--cache-dir', {str(tmp_path)!r}, *{extra!r}]\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "OPENAI_API_KEY": "x"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == 'error: reading or writing MLflow traces needs MLflow: pip install ".[mlflow]" in a ragjudge checkout'

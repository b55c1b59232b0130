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
- ``--set judge=4`` beside ``--model`` is refused, not dropped unsaid.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ragjudge.errors import InputError
from ragjudge.traces import otel, source_kind
from ragjudge.traces.spans import SpanView, TraceView, trace_rows

TRACE = "8bb01460217f871cbe0ae8fa1ceac2cc"
ROOT_ID, RETRIEVER_ID = "b64ba4fd98e616ec", "39f5c88e2d94628b"
ROW_ID = f"{TRACE}/{RETRIEVER_ID}"


def _kv(key, value):
    return {"key": key, "value": {"stringValue": value}}


def _span(span_id, name, kind, parent=None, start=0, **attributes):
    span = {"traceId": TRACE, "spanId": span_id, "name": name, "startTimeUnixNano": str(1767225600000000000 + start),
            "attributes": [_kv("openinference.span.kind", kind), *(_kv(k.replace("__", "."), v) for k, v in attributes.items())]}
    if parent:
        span["parentSpanId"] = parent
    return span


def _request(*spans):
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


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
    with pytest.raises(InputError, match=r"empty: the folder holds no trace file \(\.json, \.jsonl, \.ndjson\)"):
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
    (row,) = trace_rows(trace)
    assert row["span_error"] == ("retriever span 'search' (r): context holds 1 passage(s) and none has text under content, "
                                 "page_content, text; the retriever should return each passage's text (a Document's "
                                 "page_content, or a string)")


def test_set_a_section_to_a_value_beside_a_named_option_is_refused(run_cli, tmp_path):
    table = tmp_path / "t.jsonl"
    table.write_text(json.dumps({"request": "q", "context": ["p"]}) + "\n")
    result = run_cli(["score", str(table), "--set", "judge=4", "--model", "openai/x", "--dry-run"], judge=False)
    assert result.code == 2
    assert "--set judge: judge is a section of the config (keys such as model), not a value; set one of its keys" in result.stderr

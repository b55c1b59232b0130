"""Trace ids as exporters write them (issue 44 items 5 and 6): OpenTelemetry's invalid id (all
zeros, in hex or base64, or empty) means "no parent" wherever ids are read (wandb/weave#7126),
and a trace or span read twice, in one file or across the files of a folder, is one row and one
annotation, with a note (langwatch/langwatch#3912)."""

from __future__ import annotations

import json

from conftest import ROOT
from helpers import RETRIEVER_ID, ROOT_ID, TRACE, _kv, _rag, _request, _span, _write, needs_mlflow  # noqa: F401
from ragjudge.traces import otel
from ragjudge.traces.spans import SpanView, TraceView, invalid_id, reader_notes, trace_rows

OTHER = "0af7651916cd43dd8448eb211c80319c"


def test_a_root_whose_parent_id_is_all_zeros_is_a_root(run_score, tmp_path):
    # 0 of 2 traces judged, exit 2, and the message blamed a partial export
    hex_zero = _rag(root_parent="0000000000000000")
    base64_zero = _rag(root_parent="AAAAAAAAAAA=", trace=OTHER)
    path = _write(tmp_path / "zeros.jsonl", hex_zero, base64_zero)
    frame = otel.read_otlp_file(path)
    assert list(frame["request"]) == ["eiffel tower"] * 2 and frame["span_skip_reason"].isna().all()
    out = tmp_path / "scored.jsonl"
    result = run_score(str(path), metric=["sufficiency"], output=str(out), min_pass_rate=["0"])
    assert result.code == 0, result.text
    assert [json.loads(line)["sufficiency_status"] for line in out.read_text().splitlines()] == ["ok", "ok"]


def test_invalid_ids_mean_none_in_every_form():
    for value in (None, "", "0000000000000000", "00000000000000000000000000000000", "AAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAA==", 0,
                  b"\0" * 8, "None", "null"):
        assert invalid_id(value), value
    for value in ("b64ba4fd98e616ec", "AAAAAAAAAAE=", 7, "1"):
        assert not invalid_id(value), value
    # a source that builds its own views (MLflow, a Phoenix frame): the same rule
    root = SpanView("r", "0000000000000000", "app", "CHAIN", {"q": "When?"}, {"a": "Then."})
    (row,) = trace_rows(TraceView("t", "OK", [root, SpanView("s", "r", "search", "RETRIEVER", outputs=["a passage"])]))
    assert row["request"] == "When?" and row["span_skip_reason"] is None


def test_a_trace_in_two_files_of_a_folder_is_one_row_and_one_annotation(run_score, tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    _write(folder / "a.jsonl", _rag())
    _write(folder / "b.jsonl", _rag())  # the same trace and spans again: an export retried into a second file
    annotations = tmp_path / "annotations.jsonl"
    result = run_score(str(folder), metric=["sufficiency"], min_pass_rate=["0"], annotations=str(annotations),
                       summary_json=str(tmp_path / "s.json"))
    assert result.code == 0, result.text
    assert "note: 2 span(s) were read more than once (the same trace and span id); each is judged and annotated once" in result.text
    assert json.loads((tmp_path / "s.json").read_text())["rows"] == 1
    assert len(annotations.read_text().splitlines()) == 1


def test_a_span_appended_twice_to_one_file_is_read_once_with_a_note(tmp_path):
    path = _write(tmp_path / "twice.jsonl", _rag(), _rag())
    frame = otel.read_otlp_file(path)
    assert len(frame) == 1 and reader_notes(frame) == [
        "note: 2 span(s) were read more than once (the same trace and span id); each is judged and annotated once, its first copy"]


def test_a_scored_table_holding_a_span_twice_gives_one_annotation_each():
    import pandas as pd

    row = {"trace_id": TRACE, "span_id": RETRIEVER_ID, "trace_first_row": True, "sufficiency_status": "ok", "sufficiency_score": 1.0,
           "sufficiency_passed": True, "sufficiency_rationale": "r", "completeness_status": "ok", "completeness_score": 4.0,
           "completeness_passed": True, "completeness_rationale": "c", "judge_model": "openai/x"}
    spans, traces = otel.annotation_frames(pd.DataFrame([row, row]))
    assert list(spans["name"]) == ["sufficiency"] and list(traces["name"]) == ["completeness"]


# review of the traces pages and readers (p4-fixb) item 5: trace rows are named by trace and span in every report
def test_trace_rows_carry_an_id_of_trace_and_span():
    from ragjudge.traces.spans import COLUMNS, SpanView, TraceView, rows_frame

    with_two = TraceView("tr-1", "OK", [SpanView("root", None, "app", "CHAIN", {"query": "q"}, {"response": "r"}, 0),
                                        SpanView("s1", "root", "retrieve", "RETRIEVER", None, ["a"], 1),
                                        SpanView("s2", "root", "rerank", "RETRIEVER", None, ["b"], 2)])
    without = TraceView("tr-2", "OK", [SpanView("root", None, "app", "CHAIN", {"query": "q"}, {"response": "r"}, 0)])
    frame = rows_frame([with_two, without])
    assert frame["id"].tolist() == ["tr-1/s1", "tr-1/s2", "tr-2"]
    assert list(frame.columns) == list(COLUMNS) and list(COLUMNS)[:4] == ["trace_id", "span_id", "span_name", "id"]


# review of the traces pages and readers (p4-fixb) item 5: trace rows are named by trace and span in every report
@needs_mlflow
def test_the_failing_rows_and_junit_name_a_trace_row_by_trace_and_span(run_cli, tmp_path):
    import xml.etree.ElementTree as ET

    traces = [json.loads(line) for line in (ROOT / "sample_data" / "mlflow_traces.jsonl").read_text().splitlines() if line.strip()]
    result = run_cli(["score", str(ROOT / "sample_data" / "mlflow_traces.jsonl"), "-m", "sufficiency", "-o", str(tmp_path / "s.jsonl"),
                      "--junit", str(tmp_path / "junit.xml")])
    assert result.code == 1, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"{r['trace_id']}/{r['span_id']}" for r in rows]
    assert {r["trace_id"] for r in rows} == {t["info"]["trace_id"] for t in traces}
    (failing,) = [r for r in rows if r["sufficiency_score"] == 0.0]
    assert f"sufficiency {failing['trace_id']}/{failing['span_id']}: score 0" in result.stderr
    assert "row 2" not in result.stderr
    names = sorted(case.get("name") for case in ET.parse(tmp_path / "junit.xml").iter("testcase") if case.get("classname") != "gate")
    assert names == sorted(r["id"] for r in rows)

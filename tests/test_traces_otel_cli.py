"""``ragjudge score`` on OpenTelemetry traces, end to end (issue 28): an OTLP JSON file and a
saved Phoenix span table of the same traces, judged by the fake server, verdicts written as
Phoenix's annotation tables or sent to a real Phoenix server (the fixture in
tests/conftest.py: arize-phoenix from its own venv, SQLite, loopback).

The spans are made by opentelemetry-sdk with OpenInference's attribute names and exported with
OpenTelemetry's OTLP encoder (``make_spans``/``otlp_json_lines`` in tests/helpers.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
pytest.importorskip("openinference.semconv.trace")

from conftest import read_jsonl  # noqa: E402
from helpers import free_port as _free_port  # noqa: E402
from helpers import make_spans, otlp_json_lines, phoenix_like_frame  # noqa: E402

from ragjudge.traces import otel  # noqa: E402
from ragjudge.traces import phoenix as phoenix_reader  # noqa: E402

FACTS = ["--expected-facts-attribute", "metadata.expected_facts", "--expected-response-attribute", "metadata.expected_response"]
KEYS = ("trace_id", "span_id", "span_name", "request", "context", "response", "expected_facts", "expected_response",
        "trace_first_row", "sufficiency_status", "sufficiency_score", "completeness_status", "completeness_score")


def _score(run_cli, source, tmp_path, *extra, name="scored.jsonl"):
    out, summary = tmp_path / name, tmp_path / f"{name}.summary.json"
    result = run_cli(["score", str(source), "-o", str(out), "--summary-json", str(summary), *extra])
    rows = read_jsonl(out) if out.exists() else None
    return result, rows, (json.loads(summary.read_text()) if summary.exists() else None)


def _picked(rows):
    return [tuple(json.dumps(r[k], sort_keys=True) for k in KEYS) for r in rows]


# -- the same traces, in either form, give the same rows ------------------------------------------
def test_an_otlp_file_and_a_phoenix_span_file_give_the_same_rows(run_cli, tmp_path, spans, otlp_file):
    result, from_otlp, summary = _score(run_cli, otlp_file, tmp_path, *FACTS)
    assert result.code in (0, 1) and result.code == summary["exit_code"], result.stderr
    assert len(from_otlp) == 3 and list(from_otlp[0])[:2] == ["trace_id", "span_id"]
    eiffel, hamlet, small_talk = from_otlp
    assert eiffel["request"] == "eiffel tower construction" and eiffel["expected_facts"] == ["built 1887-1889"]
    assert [p["content"] for p in eiffel["context"]][0] == "The Eiffel Tower was built from 1887 to 1889."
    assert eiffel["response"] == "It was built from 1887 to 1889." and eiffel["sufficiency_status"] == "ok"
    assert hamlet["request"] == "Hamlet author" and hamlet["expected_facts"] is None
    assert (small_talk["span_id"], small_talk["sufficiency_status"]) == (None, "skipped")  # no retriever: one row kept
    frame = phoenix_like_frame(spans)
    parquet, jsonl = tmp_path / "spans.parquet", tmp_path / "spans.jsonl"
    frame.to_parquet(parquet)
    frame.to_json(jsonl, orient="records", lines=True)
    for path in (parquet, jsonl):
        got, rows, _ = _score(run_cli, path, tmp_path, *FACTS, name=f"{path.suffix[1:]}.jsonl")
        assert got.code == result.code, got.stderr
        assert _picked(rows) == _picked(from_otlp), path.name
    # --input-format forces either reader whatever the file's name
    odd_otlp, odd_phoenix = tmp_path / "otlp.txt", tmp_path / "phoenix.txt"
    odd_otlp.write_text(otlp_file.read_text())
    odd_phoenix.write_text(jsonl.read_text())
    for path, kind in ((odd_otlp, "otlp"), (odd_phoenix, "phoenix")):
        got, rows, _ = _score(run_cli, path, tmp_path, *FACTS, "--input-format", kind, name=f"{kind}-forced.jsonl")
        assert got.code == result.code and _picked(rows) == _picked(from_otlp), got.stderr
    # without the attribute options the rows are reference-free
    _, bare, _ = _score(run_cli, otlp_file, tmp_path, "-m", "sufficiency", name="bare.jsonl")
    assert [r["expected_facts"] for r in bare] == [None, None, None]


def test_the_sample_traces_are_what_the_script_writes():
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    sample = root / "sample_data" / "otlp_traces.jsonl"
    assert otel.is_otlp_file(sample)
    rows = otel.read_otlp_file(sample, "metadata.expected_facts")
    assert list(rows["request"]) == ["eiffel tower construction dates", "hamlet author date", "hello"]
    assert rows["span_id"].isna().tolist() == [False, False, True]
    assert rows["expected_facts"][1] == ["Hamlet was written by William Shakespeare", "Hamlet was written around 1600"]
    spec = importlib.util.spec_from_file_location("otel_sample_traces", root / "scripts" / "otel_sample_traces.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert "".join(line + "\n" for line in script.otlp_lines(script.spans())) == sample.read_text()  # fixed ids and times


# -- annotations as a table ----------------------------------------------------------------------
def test_annotations_file_is_what_phoenixs_client_accepts(run_cli, tmp_path, otlp_file):
    pytest.importorskip("phoenix.client")
    from phoenix.client.utils.annotation_helpers import (_chunk_span_annotations_dataframe,
                                                         _chunk_trace_annotations_dataframe,
                                                         _validate_span_annotations_dataframe,
                                                         _validate_trace_annotations_dataframe)

    for suffix, reader in ((".parquet", pd.read_parquet), (".jsonl", lambda p: pd.read_json(p, lines=True))):
        path = tmp_path / f"annotations{suffix}"
        result, rows, summary = _score(run_cli, otlp_file, tmp_path, *FACTS, "--annotations", str(path), name=f"s{suffix}.jsonl")
        assert result.code in (0, 1), result.stderr
        judged = [r for r in rows if r["sufficiency_status"] == "ok"]
        completed = [r for r in rows if r["completeness_status"] == "ok" and r["trace_first_row"]]
        done = summary["phoenix"]["annotations_file"]
        assert (done["spans"], done["traces"]) == (len(judged), len(completed)) == (2, 1)
        assert done["paths"] == [str(path), str(otel.trace_annotations_path(path))]
        assert f"phoenix: 2 span and 1 trace annotation(s) written to {path}" in result.stderr
        span_table, trace_table = reader(path), reader(otel.trace_annotations_path(path))
        _validate_span_annotations_dataframe(dataframe=span_table)
        _validate_trace_annotations_dataframe(dataframe=trace_table)
        (items,) = list(_chunk_span_annotations_dataframe(dataframe=span_table))
        assert [(i["span_id"], i["name"], i["result"]["label"], i["result"]["score"], i["result"]["explanation"],
                 i["identifier"], i["annotator_kind"]) for i in items] == \
            [(r["span_id"], "sufficiency", "yes" if r["sufficiency_score"] == 1 else "no", r["sufficiency_score"],
              r["sufficiency_rationale"], "ragjudge", "LLM") for r in judged]
        (traces,) = list(_chunk_trace_annotations_dataframe(dataframe=trace_table))
        assert [(t["trace_id"], t["name"], t["result"]["score"]) for t in traces] == \
            [(r["trace_id"], "completeness", r["completeness_score"]) for r in completed]


# -- bad input: exit 2 naming the fix ------------------------------------------------------------
def test_bad_input_exits_2_naming_the_fix(run_cli, tmp_path, otlp_file, server, monkeypatch):
    monkeypatch.delenv(otel.ENDPOINT_ENV, raising=False)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"resourceSpans": []}) + "\n")
    other = tmp_path / "genai.jsonl"
    other.write_text(otlp_json_lines(make_spans(other_convention=True)))
    table = tmp_path / "table.jsonl"
    table.write_text(json.dumps({"request": "q", "context": ["c"]}) + "\n")
    dead = f"http://127.0.0.1:{_free_port()}"
    cases = [
        (["score", str(empty)], "holds OTLP requests but no span"),
        (["score", str(other)], "attributes found: gen_ai.*, traceloop.*"),
        (["score", str(otlp_file), "--phoenix-endpoint", dead, "--phoenix-log-annotations"], f"Phoenix at {dead} cannot be reached"),
        # issue 60 item 12: an address alone asks nothing of a trace file; writing back is asked for by name
        (["score", str(otlp_file), "--phoenix-endpoint", dead], "add --phoenix-log-annotations"),
        (["score", str(table), "--phoenix-log-annotations"], "--phoenix-log-annotations works on OpenTelemetry traces"),
        (["score", str(table), "--phoenix-endpoint", dead], "--phoenix-endpoint works on OpenTelemetry traces"),
        (["score", str(table), "--annotations", "a.parquet"], "--annotations works on OpenTelemetry traces"),
        (["score", str(table), "--expected-facts-attribute", "metadata.x"], "--expected-facts-attribute works on OpenTelemetry"),
        (["score", str(table), "--input-format", "otlp"], "is not OTLP JSON"),
        (["score", str(table), "--input-format", "phoenix"], "is not a Phoenix span DataFrame"),
        (["score", str(otlp_file), "--annotations", str(tmp_path / "a.txt")], "should end in .parquet, .jsonl or .csv"),
        (["score", str(otlp_file), "--mlflow-log-feedback"], "works on MLflow traces"),
        (["score", str(otlp_file), "--engine", "ray"], "--engine local"),
    ]
    for args, said in cases:
        result = run_cli(args)
        assert result.code == 2 and said in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert server.calls == 0  # every case refused before any judging
    monkeypatch.setenv(otel.ENDPOINT_ENV, dead)  # the environment's endpoint is checked as the option is, when logging is asked
    result = run_cli(["score", str(otlp_file), "--phoenix-log-annotations"])
    assert result.code == 2 and f"Phoenix at {dead} cannot be reached" in result.stderr and server.calls == 0
    table_run = run_cli(["score", str(table), "-m", "sufficiency"])  # a table run ignores the environment's endpoint
    assert table_run.code in (0, 1) and server.calls == 1, table_run.stderr
    # issue 60 item 12: nor does a trace run that does not ask to log: the environment names a server, it asks for nothing
    quiet = run_cli(["score", str(otlp_file), "-m", "sufficiency", "--min-pass-rate", "0"])
    assert quiet.code == 0 and "phoenix:" not in quiet.stderr and server.calls == 3, quiet.stderr


def test_phoenix_going_away_after_the_check_loses_no_verdict(run_cli, tmp_path, otlp_file, monkeypatch):
    pytest.importorskip("phoenix.client")
    monkeypatch.delenv(otel.ENDPOINT_ENV, raising=False)
    dead = f"http://127.0.0.1:{_free_port()}"
    monkeypatch.setattr(phoenix_reader, "probe", lambda url, timeout=5.0: None)  # answered the check, then went away
    result, rows, summary = _score(run_cli, otlp_file, tmp_path, *FACTS, "--phoenix-endpoint", dead, "--phoenix-log-annotations",
                                   "--annotations", str(tmp_path / "a.parquet"))
    assert result.code == summary["exit_code"] and result.code in (0, 1), result.stderr
    assert len(rows) == 3 and sum(r["sufficiency_status"] == "ok" for r in rows) == 2  # every verdict kept
    sink = summary["phoenix"]
    assert (sink["endpoint"], sink["annotations_logged"], sink["annotations_failed"]) == (dead, 0, 3)
    assert sink["annotations_failures"] and sink["annotations_file"]["spans"] == 2  # the file is written all the same
    assert "phoenix: 0 annotation(s) logged" in result.stderr and "3 not logged" in result.stderr


# -- a real Phoenix server ----------------------------------------------------------------------
@pytest.mark.slow  # a Phoenix server
def test_two_runs_leave_one_ragjudge_annotation_per_judged_span(run_cli, tmp_path, phoenix, in_phoenix, otlp_file,
                                                                 monkeypatch):
    from phoenix.client import Client

    monkeypatch.delenv(otel.ENDPOINT_ENV, raising=False)
    saved = tmp_path / "from-phoenix.parquet"
    in_phoenix.to_parquet(saved)  # the server's own span DataFrame, saved
    first, rows, summary = _score(run_cli, otlp_file, tmp_path, *FACTS, "--phoenix-endpoint", phoenix, "--phoenix-log-annotations")
    assert first.code in (0, 1), first.stderr
    judged = [r["span_id"] for r in rows if r["sufficiency_status"] == "ok"]
    traces = [r["trace_id"] for r in rows if r["completeness_status"] == "ok" and r["trace_first_row"]]
    assert len(judged) == 2 and len(traces) == 1
    sink = summary["phoenix"]
    assert (sink["endpoint"], sink["annotations_logged"], sink["annotations_failed"]) == (phoenix, 3, 0), sink
    assert f"phoenix: 3 annotation(s) logged to {phoenix}" in first.stderr
    # the second run reads Phoenix's own span table and finds the endpoint in the environment
    monkeypatch.setenv(otel.ENDPOINT_ENV, phoenix + "/v1/traces")
    second, again, summary = _score(run_cli, saved, tmp_path, *FACTS, "--phoenix-log-annotations", name="again.jsonl")
    assert second.code == first.code and summary["phoenix"]["annotations_logged"] == 3, second.stderr
    assert _picked(again) == _picked(rows)
    client = Client(base_url=phoenix)
    found = client.spans.get_span_annotations_dataframe(span_ids=[s for s in in_phoenix["context.span_id"]],
                                                        project_identifier="default").reset_index()
    mine = found[found["annotation_name"] == "sufficiency"]
    assert sorted(mine["span_id"]) == sorted(judged)  # one per judged span, on the right spans
    by_span = mine.set_index("span_id")
    for row in rows:
        if row["span_id"] in judged:
            assert by_span.loc[row["span_id"], "result.score"] == row["sufficiency_score"]
            assert by_span.loc[row["span_id"], "result.explanation"] == row["sufficiency_rationale"]
    assert set(mine["annotator_kind"]) == {"LLM"}
    import httpx  # Phoenix's client has no getter of trace annotations: its REST route

    listed = httpx.get(f"{phoenix}/v1/projects/default/trace_annotations", timeout=10,
                       params={"trace_ids": [r["trace_id"] for r in rows], "identifier": ["ragjudge"], "limit": 100})
    listed.raise_for_status()
    assert [(a["trace_id"], a["name"], a["result"]["score"], a["annotator_kind"]) for a in listed.json()["data"]] == \
        [(rows[0]["trace_id"], "completeness", rows[0]["completeness_score"], "LLM")]  # one, after two runs

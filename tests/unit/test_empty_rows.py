"""A row with no fields (``{}``, or every cell null) is kept, as an input error row for every
metric: alone in its chunk (a DataFrame with no columns, whose rows ``to_dict("records")``
drops), past a chunk boundary, on stdin and in a JSON array; the outputs are written."""

from __future__ import annotations

import io
import json
import sys

import pandas as pd

from conftest import SAMPLE, read_jsonl, write_jsonl
from ragjudge.records import EMPTY_ROW

METRICS = ("sufficiency", "completeness")


def _empty(row: dict) -> bool:
    return all(row[f"{m}_status"] == "error" and row[f"{m}_error"] == EMPTY_ROW for m in METRICS)


def test_a_file_of_empty_rows_gives_an_input_error_row_each_and_writes_the_outputs(run_score, tmp_path):
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    source = tmp_path / "e.jsonl"
    source.write_text("{}\n{}\n")
    run = run_score(str(source), output=str(out), summary_json=str(summary))
    assert run.code == 2  # nothing could be judged: the input is unusable
    written = read_jsonl(out)
    assert len(written) == 2 and all(_empty(row) for row in written)
    doc = json.loads(summary.read_text())
    assert doc["rows"] == 2
    assert {m: (doc["metrics"][m]["error"], doc["metrics"][m]["input_errors"]) for m in METRICS} == {m: (2, 2) for m in METRICS}


def test_an_empty_row_past_a_chunk_boundary_is_the_row_it_is_in_one_chunk(run_score, tmp_path):
    rows = read_jsonl(SAMPLE / "rag_whole.jsonl")[:3] + [{}]
    source = write_jsonl(tmp_path / "t.jsonl", rows)
    chunked, whole = tmp_path / "chunked.csv", tmp_path / "whole.csv"
    summary = tmp_path / "s.json"
    run = run_score(source, set_=["chunk_size=3"], output=str(chunked), summary_json=str(summary), no_cache=True)
    one = run_score(source, output=str(whole), no_cache=True)
    assert run.code == one.code == 2  # the error rate's only failures are the empty row's own input
    assert pd.read_csv(chunked).equals(pd.read_csv(whole))
    written = pd.read_csv(chunked)
    assert list(written["id"].iloc[:3]) == [r["id"] for r in rows[:3]] and pd.isna(written["id"].iloc[3])
    assert _empty(written.iloc[3].to_dict()) and not _empty(written.iloc[0].to_dict())
    doc = json.loads(summary.read_text())
    assert doc["rows"] == 4 and doc["metrics"]["sufficiency"]["input_errors"] == 1


def test_a_row_with_every_cell_null_is_an_empty_row_too(run_score, tmp_path):
    out = tmp_path / "out.jsonl"
    rows = [{"id": "a", "request": "Where is it?", "context": ["It is here."], "expected_response": "here"},
            {"id": None, "request": None, "context": None, "expected_response": None}]
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], output=str(out), min_pass_rate=["0"])
    written = read_jsonl(out)
    assert [r["sufficiency_status"] for r in written] == ["ok", "error"]
    assert written[1]["sufficiency_error"] == EMPTY_ROW


def test_empty_rows_on_stdin(run_score, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}\n{}\n{}\n"), encoding="utf-8"))
    out = tmp_path / "out.jsonl"
    run = run_score("-", output=str(out))
    written = read_jsonl(out)
    assert run.code == 2 and len(written) == 3 and all(_empty(row) for row in written)


def test_an_empty_object_in_a_json_array(run_score, tmp_path):
    source = tmp_path / "a.json"
    source.write_text("[{}]")
    out = tmp_path / "out.parquet"
    run = run_score(str(source), output=str(out))
    written = pd.read_parquet(out)
    assert run.code == 2 and len(written) == 1 and _empty(written.iloc[0].to_dict())


def test_the_scorer_keeps_the_rows_of_a_frame_with_no_columns(judge):
    from ragjudge.scoring import Scorer

    with Scorer(model="openai/fake-judge", cache={"enabled": False}, transport=judge) as scorer:  # metrics not asked for: no refusal
        scored = scorer.score(pd.DataFrame(index=range(2)))
    assert list(scored.frame["sufficiency_status"]) == ["error", "error"]
    assert list(scored.frame["sufficiency_error"]) == [EMPTY_ROW, EMPTY_ROW]
    assert scored.summary.rows == 2 and scored.summary.metrics["sufficiency"].input_errors == 2
    assert judge.calls == 0

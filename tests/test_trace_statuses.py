"""The statuses of rows read from traces (``ragjudge.traces.spans`` columns), in the scorer:
a trace's skip reason skips every metric, a span's skip reason or error stops sufficiency,
completeness is judged once per trace and counted once. Plain DataFrames, no MLflow."""

from __future__ import annotations

import pandas as pd

import ragjudge
from ragjudge.traces.spans import SpanView, TraceView, rows_frame

FACTS = ["Paris is the capital of France"]


def _trace(trace_id, spans=2, state="OK", textless=False):
    root = SpanView("r", None, "app", "CHAIN", {"question": "What is the capital of France?"}, {"response": f"Paris is the capital ({trace_id})."})
    views = [root]
    for i in range(spans):
        outputs = [{"score": 1}] if textless else [{"page_content": f"Paris is the capital of France ({i})."}]
        views.append(SpanView(f"s{i}", "r", f"retrieve_{i}", "RETRIEVER", {"q": "x"}, outputs, start=i + 1))
    return TraceView(trace_id, state, views, {"expected_facts": FACTS})


def _rows():
    return rows_frame([_trace("t1"), _trace("t2", spans=0), _trace("t3", state="ERROR"), _trace("t4", spans=1, textless=True),
                       _trace("t5", spans=3)])


def _score(frame, server, tmp_path, **settings):
    return ragjudge.score(frame, metrics=["sufficiency", "completeness"], model="openai/fake-judge", api_base=server.url,
                          cache={"dir": str(tmp_path / "c")}, **settings)


def test_trace_statuses_become_verdicts_and_completeness_counts_once(server, tmp_path):
    scored = _score(_rows(), server, tmp_path)
    frame, summary = scored.frame, scored.summary
    assert len(frame) == 9  # 2 + 1 + 2 (ERROR: its spans) + 1 + 3: every trace read is in the output
    by = {t: frame[frame["trace_id"] == t].reset_index(drop=True) for t in ("t1", "t2", "t3", "t4", "t5")}
    assert list(by["t2"]["sufficiency_status"]) == ["skipped"] and by["t2"].loc[0, "sufficiency_error"] == "no retriever span"
    assert by["t2"].loc[0, "completeness_status"] == "ok"  # a trace without retriever still has its completeness
    assert set(by["t3"]["sufficiency_status"]) == set(by["t3"]["completeness_status"]) == {"skipped"}
    assert set(by["t3"]["sufficiency_error"]) == set(by["t3"]["completeness_error"]) == {"trace state ERROR"}
    # a retriever whose outputs hold no text: "no", as MLflow judges it (it was a row error: issue 45 item 3)
    assert (by["t4"].loc[0, "sufficiency_status"], by["t4"].loc[0, "sufficiency_score"]) == ("ok", 0.0)
    assert by["t4"].loc[0, "completeness_status"] == "ok"
    five = by["t5"]
    assert list(five["sufficiency_status"]) == ["ok"] * 3 and len(set(five["span_id"])) == 3
    assert five["completeness_score"].nunique() == 1 and five["completeness_rationale"].nunique() == 1
    assert list(five["completeness_cached"])[1:] == [True, True] and list(five["completeness_prompt_tokens"])[1:] == [0, 0]
    assert five.loc[0, "completeness_prompt_tokens"] > 0
    # counted once: completeness per trace (5), sufficiency per row (9)
    assert summary.metrics["completeness"].rows == 5 and summary.metrics["sufficiency"].rows == 9
    assert (summary.metrics["completeness"].ok, summary.metrics["completeness"].skipped) == (4, 1)
    assert (summary.metrics["sufficiency"].ok, summary.metrics["sufficiency"].skipped, summary.metrics["sufficiency"].error) == (6, 3, 0)  # t4: "no" now, not an error
    assert server.calls == summary.provider_calls  # no call for a copied verdict


def test_a_trace_split_across_chunks_or_filtered_keeps_one_completeness(server, tmp_path):
    rows = _rows()
    config = ragjudge.load_config(None, {"metrics": ["sufficiency", "completeness"], "chunk_size": 2,
                                         "judge": {"model": "openai/fake-judge", "api_base": server.url},
                                         "cache": {"dir": str(tmp_path / "c")}})
    result = ragjudge.evaluate(rows, config, keep_table=True)  # chunks of 2 rows: t5's rows are split
    five = result.table[result.table["trace_id"] == "t5"]
    assert five["completeness_status"].tolist() == ["ok"] * 3 and five["completeness_score"].nunique() == 1
    assert result.summary.metrics["completeness"].rows == 5
    # the trace's first row filtered out: the next row of the trace is judged as its first
    later = rows[~((rows["trace_id"] == "t5") & rows["trace_first_row"])].reset_index(drop=True)
    scored = _score(later, server, tmp_path / "fresh")  # a fresh cache: the first row is judged, not read back
    five = scored.frame[scored.frame["trace_id"] == "t5"]
    assert five["completeness_status"].tolist() == ["ok", "ok"] and five["completeness_prompt_tokens"].iloc[0] > 0
    assert scored.summary.metrics["completeness"].rows == 5


def test_a_table_without_trace_columns_is_scored_as_before(server, tmp_path):
    plain = pd.DataFrame({"trace_id": ["t1", "t1"], "request": ["q", "q"], "context": [["Paris."], ["Paris."]],
                          "response": ["Paris.", "Paris."], "expected_facts": [FACTS, FACTS]})
    summary = _score(plain, server, tmp_path).summary  # no trace_first_row: each row counts
    assert summary.metrics["completeness"].rows == 2 and summary.metrics["sufficiency"].rows == 2

"""Trace files that are malformed, partial or odd, read by the trace readers (``ragjudge.traces``):
every one ends, with a row status or one line naming where the fault is and the fix. (Origin: faults
found by feeding the readers bad input; this file was tests/test_trace_faults.py.) The OTLP helpers
(``_span``, ``_rag``...) are in tests/helpers.py.

- a cycle of parent ids (a span its own parent, or two spans each other's) ends, and the
  retriever's row says why it is not counted (MLflow's walk would never leave such a loop);
- a retriever whose parent span is not in the file (a partial export) is skipped with that
  reason, not "no retriever span";
- half an emoji (a lone surrogate escape) in a span becomes U+FFFD, as in a table, and the run
  writes its outputs;
- documents in a shape ragjudge does not read are a row error naming the span, not an empty
  retrieval judged "no";
- a span without a trace id is refused naming the line (spans of different requests would be
  merged into one trace);
- a request not shaped as the OTLP/JSON encoding writes one names its line, span and attribute;
- a dry run on traces leaves no copy of them behind and names the user's file;
- a trace file that starts with a byte-order mark is read as traces;
- an expectation attribute that no span has is an error listing the attributes found;
- an input without rows (zero-row Parquet, ``[]``, blank lines) says so, not that a column is missing.
"""

from __future__ import annotations

import json
import threading

import pandas as pd
import pytest

from helpers import RETRIEVER_ID, ROOT_ID, TRACE, _kv, _rag, _request, _span, _write
from ragjudge.errors import InputError
from ragjudge.traces import otel
from ragjudge.traces.spans import SpanView, TraceView, trace_rows

def _ends(work, seconds=20):
    """``work()``'s result, failing (not hanging) when it does not end within ``seconds``."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "did not end: a loop over parent ids that never leaves"
    return out[0]


def test_a_cycle_of_parent_ids_ends_and_says_where_it_is():
    looped = SpanView("a", "b", "chain a", "CHAIN")
    other = SpanView("b", "a", "chain b", "CHAIN")
    retriever = SpanView("r", "a", "search", "RETRIEVER", outputs=["passage"])
    (row,) = _ends(lambda: trace_rows(TraceView("t", "OK", [looped, other, retriever])))
    assert row["span_skip_reason"] == ("retriever span 'search' (r): the parent ids above it form a cycle at span 'chain a' (a) "
                                       "in trace t; fix the exporter's parent ids")
    alone = SpanView("s", "s", "self", "CHAIN")  # a span that is its own parent: no root, the retriever not counted
    (row,) = _ends(lambda: trace_rows(TraceView("t", "OK", [alone, SpanView("r", "s", "search", "RETRIEVER", outputs=["p"])])))
    assert "form a cycle at span 'self' (s)" in row["span_skip_reason"] and row["request"] is None


def test_a_self_parent_root_in_an_otlp_file_ends_with_its_row_skipped(run_score, tmp_path, judge):
    path = _write(tmp_path / "loop.jsonl", _rag(root_parent=ROOT_ID))
    frame = _ends(lambda: otel.read_otlp_file(path))
    assert list(frame["span_skip_reason"]) == [f"retriever span 'retriever' ({RETRIEVER_ID}): the parent ids above it form a cycle "
                                               f"at span 'chain' ({ROOT_ID}) in trace {TRACE}; fix the exporter's parent ids"]
    out = tmp_path / "scored.jsonl"
    result = _ends(lambda: run_score(str(path), metric=["sufficiency"], output=str(out)))
    assert result.code == 2 and "form a cycle" in result.text and judge.calls == 0  # every row skipped: nothing judged
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["sufficiency_status"] == "skipped"


def test_a_retriever_whose_parent_is_not_in_the_file_is_skipped_saying_so(tmp_path):
    path = _write(tmp_path / "partial.jsonl", _request(
        _span(RETRIEVER_ID, "retriever", "RETRIEVER", parent="ffffffffffffffff", input__value="q",
              retrieval__documents__0__document__content="text")))
    (reason,) = otel.read_otlp_file(path)["span_skip_reason"]
    assert reason == (f"retriever span 'retriever' ({RETRIEVER_ID}): its parent span ffffffffffffffff is not in trace {TRACE}, "
                      "so it is not counted as a top-level retriever (as MLflow counts it); export or select the whole trace")


def test_half_an_emoji_in_a_trace_becomes_u_fffd_and_the_outputs_are_written(run_score, tmp_path, judge):
    path = tmp_path / "surrogate.jsonl"
    path.write_text(json.dumps(_rag(content="built 1887 \ud83d half")) + "\n", encoding="utf-8")  # json writes the escape \ud83d
    assert "\\ud83d" in path.read_text()
    (context,) = otel.read_otlp_file(path)["context"]
    assert context[0]["content"] == "built 1887 \ufffd half"
    out = tmp_path / "scored.parquet"
    result = run_score(str(path), metric=["sufficiency"], output=str(out), min_pass_rate=["0"])
    assert result.code == 0, result.text
    scored = pd.read_parquet(out)
    assert scored["context"][0][0]["content"] == "built 1887 \ufffd half" and list(scored["sufficiency_status"]) == ["ok"]
    assert judge.calls == 1


def test_documents_in_a_shape_not_read_are_a_row_error_naming_the_span(tmp_path):
    said = "its documents are not in a shape ragjudge reads (retrieval.documents = \"[{\\\"document.content\\\": \\\"text\\\"}]\")"
    path = _write(tmp_path / "docs.jsonl", _rag(retrieval__documents="[{\"document.content\": \"text\"}]"))
    frame = otel.read_otlp_file(path)
    (error,) = frame["span_error"]
    assert error.startswith(f"retriever span 'retriever' ({RETRIEVER_ID}): {said}"), error
    assert frame["context"][0] is None  # not an empty retrieval, which would be judged "no"


@pytest.mark.parametrize("documents, kind", [
    ({"retrieval__documents__0__document__content": {"intValue": "42"}}, "int"),
    ({"retrieval__documents__0__document__content": {"arrayValue": {"values": [{"stringValue": "a"}]}}}, "list"),
])
def test_documents_that_hold_no_text_are_judged_no_with_a_note(tmp_path, documents, kind):
    # they were a row error, and one such span broke the error-rate gate with exit 2 (issue 45 item 3); MLflow judges it "no"
    from ragjudge.traces.spans import reader_notes

    frame = otel.read_otlp_file(_write(tmp_path / "docs.jsonl", _rag(**documents)))
    assert frame["context"][0] == [] and frame["span_error"][0] is None
    assert reader_notes(frame) == [f"note: retriever span 'retriever' ({RETRIEVER_ID}): none of its 1 documents has text content "
                                   f"(document.content is {kind}); judged as a retrieval that found nothing (\"no\"); OpenInference "
                                   "writes each document's text as a string in retrieval.documents.N.document.content"]


def test_phoenix_documents_given_as_json_text_are_a_row_error(tmp_path):
    frame = pd.DataFrame([
        {"name": "rag", "span_kind": "CHAIN", "parent_id": None, "context.span_id": ROOT_ID, "context.trace_id": TRACE,
         "attributes.openinference.span.kind": "CHAIN", "attributes.input.value": "q", "attributes.output.value": "a",
         "attributes.retrieval.documents": None},
        {"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": ROOT_ID, "context.span_id": RETRIEVER_ID, "context.trace_id": TRACE,
         "attributes.openinference.span.kind": "RETRIEVER", "attributes.input.value": "q", "attributes.output.value": None,
         "attributes.retrieval.documents": "just a string"}])
    (error,) = otel.read_phoenix_frame(frame)["span_error"]
    assert error.startswith(f"retriever span 'retrieve' ({RETRIEVER_ID}): its documents are not in a shape ragjudge reads "
                            "(retrieval.documents = \"just a string\")")
    frame.at[1, "attributes.retrieval.documents"] = []  # no documents at all: the retriever found nothing, judged "no"
    found = otel.read_phoenix_frame(frame)
    assert (found["context"][0], found["span_error"][0]) == ([], None)
    frame.loc[1, "context.trace_id"] = None
    with pytest.raises(InputError, match=r"^this DataFrame row 2: span 'retrieve' has no context.trace_id; "):
        otel.read_phoenix_frame(frame)


def test_a_span_without_a_trace_id_is_refused_naming_its_line(tmp_path):
    path = _write(tmp_path / "no_trace_id.jsonl", _rag(), _rag(trace=None))
    with pytest.raises(InputError) as caught:
        otel.read_otlp_file(path)
    assert str(caught.value).startswith(f"{path} line 2: span 'chain' has no traceId; ")


@pytest.mark.parametrize("change, said", [
    (lambda s: s["attributes"].append({"value": {"stringValue": "v"}}), "span 'retriever' has an attribute without a key"),
    (lambda s: s["attributes"].append(_kv("document.score", {"intValue": "abc"})),
     "span 'retriever', attribute 'document.score': {\"intValue\": \"abc\"} is not an OTLP AnyValue"),
    (lambda s: s["attributes"].append(_kv("tags", {"arrayValue": [{"stringValue": "a"}]})), "span 'retriever', attribute 'tags'"),
    (lambda s: s["attributes"].append(_kv("meta", {"kvlistValue": {"values": None}})), "span 'retriever', attribute 'meta'"),
    (lambda s: s.update(startTimeUnixNano="yesterday"), "span 'retriever': startTimeUnixNano 'yesterday' is not a whole number"),
    (lambda s: s.update(attributes={"k": "v"}), "attributes is dict, not a list"),
])
def test_a_request_not_shaped_as_otlp_json_names_its_line_span_and_attribute(tmp_path, change, said):
    bad = _rag()
    change(bad["resourceSpans"][0]["scopeSpans"][0]["spans"][1])
    path = _write(tmp_path / "bad.jsonl", _rag(), bad)
    with pytest.raises(InputError) as caught:
        otel.read_otlp_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path} line 2 is not OTLP JSON as the OTLP/JSON encoding writes it (") and said in message, message


def test_a_null_span_or_scope_names_its_line(tmp_path):
    for spans, said in (([None], "a span is NoneType, not an object"), ("x", "spans is str, not a list")):
        request = _rag()
        request["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans
        with pytest.raises(InputError, match=f"line 1 is not OTLP JSON as the OTLP/JSON encoding writes it \\({said}\\)"):
            otel.read_otlp_file(_write(tmp_path / "null.jsonl", request))


def test_the_line_named_is_the_line_at_fault(tmp_path):
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps(_rag()) + "\n" + json.dumps(_rag())[:-40] + "\n", encoding="utf-8")  # line 2 cut short
    with pytest.raises(InputError, match=r"is not OTLP JSON \(line 2: "):
        otel.read_otlp_file(cut)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(_rag()) + "\n" + json.dumps({"foo": 1}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"is not OTLP JSON \(line 2\): each line should be an ExportTraceServiceRequest"):
        otel.read_otlp_file(other)


def test_a_dry_run_on_traces_leaves_no_copy_behind_and_names_the_users_file(run_score, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = _write(tmp_path / "traces.jsonl", _rag())
    result = run_score(str(path), dry_run=True, quiet=True)
    assert result.code == 0 and "dry run: 1 row," in result.text, result.text
    config = tmp_path / "c.yaml"
    config.write_text("columns:\n  request: user_question\n")
    result = run_score(str(path), config=str(config), dry_run=True)
    assert result.code == 2 and f"column 'user_question' (for request) not found in {path}; " in result.error, result.text
    assert list((tmp_path / "tmp").iterdir()) == []


def test_trace_files_with_a_byte_order_mark_are_read_as_traces(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(_rag()) + "\n").encode("utf-8"))
    assert otel.is_otlp_file(path)
    (request,) = otel.read_otlp_file(path)["request"]
    assert request == "eiffel tower"


def _zero_row_parquet(path):
    pd.DataFrame({"request": pd.Series([], dtype=object), "context": pd.Series([], dtype=object)}).to_parquet(path)


@pytest.mark.parametrize("name, write", [
    ("empty.parquet", _zero_row_parquet),
    ("empty.json", lambda p: p.write_text("[]")),
    ("empty.jsonl", lambda p: p.write_text("\n  \n")),
], ids=["zero-row parquet with the columns", "empty JSON array", "whitespace-only JSONL"])
def test_an_input_without_rows_says_so_not_that_a_column_is_missing(run_score, tmp_path, name, write):
    path = tmp_path / name
    write(path)
    result = run_score(str(path), metric=["sufficiency"], output=str(tmp_path / "out.jsonl"))
    assert result.code == 2 and "nothing was judged: the input has no rows" in result.text, result.text
    assert "needs a request column" not in result.text


def test_an_expectation_attribute_no_span_has_is_an_error_naming_what_was_found(tmp_path):
    path = _write(tmp_path / "t.jsonl", _rag())
    with pytest.raises(InputError) as caught:
        otel.read_otlp_file(path, expected_facts="metadata.nope")
    assert str(caught.value).startswith(f"--expected-facts-attribute metadata.nope: no span of any trace in {path} has that "
                                        "attribute (attributes found: input.value, output.value); ")
    one = _rag()
    one["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(_kv("metadata", json.dumps({"expected_facts": ["f"]})))
    other = _rag(trace="0" * 31 + "1")
    frame = otel.read_otlp_file(_write(tmp_path / "two.jsonl", one, other), expected_facts="metadata.expected_facts")
    found = dict(zip(frame["trace_id"], frame["expected_facts"]))
    assert found == {TRACE: ["f"], "0" * 31 + "1": None}  # a trace without it is judged reference-free

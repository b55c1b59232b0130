"""MLflow traces in, feedback out (issue 26), against a real tracking store: a SQLite tracking
URI in a temporary folder, traces made the reference's way (``@mlflow.trace`` on a traced app
calling ``@mlflow.trace(span_type="RETRIEVER")`` retrievers that return ``Document``s,
expectations logged as assessments). Nothing about MLflow is mocked.

Skipped only where the [mlflow] extra is not installed; under CI (CI=true) a missing extra is
a failure. One store, made once for the module (MLflow's import and schema set-up are slow).
"""

from __future__ import annotations

import json
import os

import pytest

from helpers import HAVE_MLFLOW

if not HAVE_MLFLOW and os.environ.get("CI") == "true":
    raise RuntimeError('CI must install the [mlflow] extra: pip install -e ".[test,mlflow]"')
if not HAVE_MLFLOW:
    pytest.skip("the [mlflow] extra is not installed", allow_module_level=True)

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no call home from a test
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")  # a trace is in the store when its call returns

import mlflow  # noqa: E402
import pandas as pd  # noqa: E402
from mlflow.entities import Document, SpanType  # noqa: E402

from helpers import free_port as _free_port  # noqa: E402
from ragjudge.errors import ConfigError, InputError  # noqa: E402
from ragjudge.traces import mlflow as mt  # noqa: E402
from ragjudge.traces.spans import COLUMNS  # noqa: E402

pytestmark = pytest.mark.integration  # MLflow stores (seconds to import and set up)

FACTS = ["Paris is the capital of France", "Paris lies on the Seine"]


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_docs(query):
    return [Document(page_content="Paris is the capital of France.", metadata={"doc_uri": "wiki/paris"}, id="d1"),
            Document(page_content="The Seine flows through Paris.", metadata={"doc_uri": "wiki/seine"}, id="d2")]


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_more(query):
    return [Document(page_content="France is in Europe.", metadata={})]


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_dicts(query):
    return [{"content": "Berlin is the capital of Germany.", "doc_uri": "kb/berlin"}]


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_strings(query):
    return ["Rome is the capital of Italy.", "The Tiber flows through Rome."]


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_inner(query):
    return [Document(page_content="inner passage")]


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_outer(query):
    retrieve_inner(query)  # a retriever inside a retriever: part of the outer one's work
    return [Document(page_content="Madrid is the capital of Spain.")]


@mlflow.trace(span_type=SpanType.CHAIN)
def chain(query):
    return retrieve_docs(query)  # a retriever under a chain span: top-level all the same


@mlflow.trace(span_type=SpanType.RETRIEVER)
def retrieve_textless(query):
    return [{"score": 0.3, "metadata": {"doc_uri": "x"}}]


@mlflow.trace
def app_two(question):
    retrieve_docs(question)
    retrieve_more(question)
    return {"response": "Paris, on the Seine."}


@mlflow.trace
def app_nested(question):
    retrieve_outer(question)
    chain(question)
    return "Madrid."


@mlflow.trace
def app_dicts(query):
    retrieve_dicts(query)
    retrieve_strings(query)
    return "Berlin and Rome."


@mlflow.trace
def app_plain(question, user):
    return "I know no documents."


@mlflow.trace
def app_fails(question):
    retrieve_docs(question)
    raise RuntimeError("the model timed out")


@mlflow.trace
def app_textless(messages):
    retrieve_textless(messages)
    return "?"


def _made(call):
    """Run a traced app call; the id of the trace it made (an ERROR trace for a raise)."""
    try:
        call()
    except RuntimeError:
        pass
    return mlflow.get_last_active_trace_id()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A SQLite tracking store with one experiment holding one trace of each case."""
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    exp = mlflow.MlflowClient(uri).create_experiment("rag-app", artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    ids = {
        "two": _made(lambda: app_two("What is the capital of France?")),
        "nested": _made(lambda: app_nested("Capital of Spain?")),
        "dicts": _made(lambda: app_dicts("Capitals of Germany and Italy?")),
        "plain": _made(lambda: app_plain("Hello?", "ann")),
        "error": _made(lambda: app_fails("Capital of France?")),
        "textless": _made(lambda: app_textless([{"role": "user", "content": "hi"}])),
    }
    mlflow.log_expectation(trace_id=ids["two"], name="expected_facts", value=FACTS)
    mlflow.log_expectation(trace_id=ids["two"], name="expected_response", value="Paris is the capital; it lies on the Seine.")
    mlflow.log_expectation(trace_id=ids["nested"], name="expected_response", value="Madrid.")
    yield {"uri": uri, "experiment": exp, "ids": ids, "folder": folder}
    mlflow.set_tracking_uri(before)


@pytest.fixture(scope="module")
def rows(store):
    return mt.read_traces("mlflow:rag-app", tracking_uri=store["uri"])


def _of(rows, store, case):
    return rows[rows["trace_id"] == store["ids"][case]].reset_index(drop=True)


def test_every_trace_is_read_once_with_the_columns_in_order(rows, store):
    assert list(rows.columns) == list(COLUMNS)
    assert set(rows["trace_id"]) == set(store["ids"].values())
    assert rows.groupby("trace_id")["trace_first_row"].sum().eq(1).all()  # completeness: once per trace
    assert list(rows["trace_id"].drop_duplicates()) == list(store["ids"].values())  # oldest trace first


def test_two_retriever_spans_are_two_rows_with_the_root_request_response_and_expectations(rows, store):
    two = _of(rows, store, "two")
    assert list(two["span_name"]) == ["retrieve_docs", "retrieve_more"]
    assert list(two["trace_first_row"]) == [True, False]
    assert list(two["request"]) == ["What is the capital of France?"] * 2  # one key: its value
    assert list(two["response"]) == ["Paris, on the Seine."] * 2  # {"response": ...}: its value
    assert two.loc[0, "expected_facts"] == FACTS
    assert two.loc[0, "expected_response"] == "Paris is the capital; it lies on the Seine."
    assert two.loc[0, "context"] == [{"content": "Paris is the capital of France.", "doc_uri": "wiki/paris", "id": "d1"},
                                     {"content": "The Seine flows through Paris.", "doc_uri": "wiki/seine", "id": "d2"}]
    assert two.loc[1, "context"] == [{"content": "France is in Europe.", "doc_uri": None, "id": None}]
    trace = mlflow.get_trace(store["ids"]["two"])
    retrievers = {s.name: s.span_id for s in trace.data.spans if s.span_type == "RETRIEVER"}
    assert list(two["span_id"]) == [retrievers["retrieve_docs"], retrievers["retrieve_more"]]
    assert two[["trace_skip_reason", "span_skip_reason", "span_error"]].isna().all().all()


def test_a_retriever_inside_a_retriever_is_no_row_of_its_own_but_one_under_a_chain_is(rows, store):
    nested = _of(rows, store, "nested")
    assert list(nested["span_name"]) == ["retrieve_outer", "retrieve_docs"]  # not retrieve_inner
    assert nested.loc[0, "context"] == [{"content": "Madrid is the capital of Spain.", "doc_uri": None, "id": None}]
    assert nested.loc[0, "expected_response"] == "Madrid." and nested.loc[0, "expected_facts"] is None
    # MLflow's own choice: the same spans
    from mlflow.genai.utils.trace_utils import extract_retrieval_context_from_trace

    assert list(extract_retrieval_context_from_trace(mlflow.get_trace(store["ids"]["nested"]))) == list(nested["span_id"])


def test_retrievers_returning_dicts_or_strings_give_passages_and_no_expectations_is_reference_free(rows, store):
    dicts = _of(rows, store, "dicts")
    assert list(dicts["context"]) == [
        [{"content": "Berlin is the capital of Germany.", "doc_uri": "kb/berlin", "id": None}],
        [{"content": "Rome is the capital of Italy.", "doc_uri": None, "id": None},
         {"content": "The Tiber flows through Rome.", "doc_uri": None, "id": None}],
    ]
    assert dicts["expected_facts"].isna().all() and dicts["expected_response"].isna().all()
    assert dicts["request"].iloc[0] == "Capitals of Germany and Italy?"


def test_a_trace_without_a_retriever_is_one_row_skipped_for_sufficiency(rows, store):
    plain = _of(rows, store, "plain")
    assert len(plain) == 1
    assert plain.loc[0, "span_skip_reason"] == "no retriever span"
    assert plain.loc[0, "span_id"] is None and plain.loc[0, "context"] is None
    assert json.loads(plain.loc[0, "request"]) == {"question": "Hello?", "user": "ann"}  # two keys: their JSON
    assert plain.loc[0, "response"] == "I know no documents." and bool(plain.loc[0, "trace_first_row"])


def test_an_error_trace_is_skipped_with_its_state(rows, store):
    failed = _of(rows, store, "error")
    assert list(failed["trace_state"]) == ["ERROR"]
    assert list(failed["trace_skip_reason"]) == ["trace state ERROR"]
    ok = rows[rows["trace_id"] != store["ids"]["error"]]
    assert ok["trace_skip_reason"].isna().all() and set(ok["trace_state"]) == {"OK"}


def test_a_retriever_span_without_text_is_judged_no_with_a_note_naming_it(rows, store):
    # it was a row error, and one such span ended the run with exit 2, where MLflow judges it "no" (issue 45 item 3)
    from ragjudge.traces.spans import reader_notes

    textless = _of(rows, store, "textless")
    assert textless.loc[0, "context"] == [] and textless.loc[0, "span_error"] is None
    (note,) = [n for n in reader_notes(rows) if "retrieve_textless" in n]
    assert note.startswith(f"note: retriever span 'retrieve_textless' ({textless.loc[0, 'span_id']})") and "score" in note
    assert note.endswith('judged as a retrieval that found nothing ("no"), as MLflow\'s RetrievalSufficiency judges it')


def test_an_exported_file_a_trace_list_and_the_search_frame_give_the_stores_rows(rows, store, tmp_path):
    traces = mt.search("rag-app", store["uri"])
    lines = tmp_path / "traces.jsonl"
    lines.write_text("".join(t.to_json() + "\n" for t in traces))
    array = tmp_path / "traces.json"
    array.write_text(json.dumps([json.loads(t.to_json()) for t in traces]))
    for path in (lines, array):
        assert mt.is_trace_file(path)
        pd.testing.assert_frame_equal(mt.read_traces(str(path)), rows)
    pd.testing.assert_frame_equal(mt.read_traces(traces), rows)
    frame = mlflow.search_traces(locations=[store["experiment"]], order_by=["timestamp_ms ASC"])
    pd.testing.assert_frame_equal(mt.read_traces(frame), rows)


def test_a_filter_and_a_maximum_count_are_applied_and_the_experiment_may_be_given_by_id(rows, store):
    by_id = mt.read_traces(f"mlflow:{store['experiment']}", tracking_uri=store["uri"])
    pd.testing.assert_frame_equal(by_id, rows)
    assert mt.read_traces("mlflow:rag-app", tracking_uri=store["uri"], max_traces=2)["trace_id"].nunique() == 2
    errors = mt.read_traces("mlflow:rag-app", tracking_uri=store["uri"], filter_string="trace.status = 'ERROR'")
    assert list(errors["trace_id"]) == [store["ids"]["error"]]


def test_bad_sources_name_the_fix(store, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="no MLflow experiment 'nope'.*rag-app"):
        mt.read_traces("mlflow:nope", tracking_uri=store["uri"])
    with pytest.raises(InputError, match="cannot be reached.*MLFLOW_TRACKING_URI"):
        mt.read_traces("mlflow:rag-app", tracking_uri=f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(InputError, match="cannot be reached"):
        mt.read_traces("mlflow:rag-app", tracking_uri=f"sqlite:///{tmp_path}/no/such/folder/m.db")
    with pytest.raises(InputError, match="the MLflow filter 'status ==== 1' is invalid"):
        mt.read_traces("mlflow:rag-app", tracking_uri=store["uri"], filter_string="status ==== 1")
    table = tmp_path / "rows.jsonl"
    table.write_text(json.dumps({"request": "q", "context": ["c"]}) + "\n")
    assert not mt.is_trace_file(table)
    with pytest.raises(InputError, match=r"is a table \(1 row\(s\); columns request, context\), not an MLflow trace file"):
        mt.read_traces(str(table))
    with pytest.raises(InputError, match="mlflow.search_traces"):
        mt.read_traces(pd.DataFrame({"request": ["q"]}))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr("mlflow.tracking._tracking_service.utils._tracking_uri", None)
    with pytest.raises(InputError, match="no trace_id column"):
        mt.log_feedback(pd.DataFrame({"request": ["q"], "sufficiency_status": ["ok"]}), store["uri"])
    with pytest.raises(ConfigError, match="logging feedback to MLflow needs a tracking store"):
        mt.log_feedback(pd.DataFrame({"trace_id": ["t"]}))


def _scored(rows, server, tmp_path):
    """The rows judged by ragjudge against the fake server (the lead wires the skip flags into
    the statuses later; here the judge sees the rows that have a context)."""
    import ragjudge

    judged = rows[rows["trace_skip_reason"].isna()].reset_index(drop=True)
    return ragjudge.score(judged, metrics=["sufficiency", "completeness"], model="openai/fake-judge",
                          api_base=server.url, cache={"dir": str(tmp_path / "c")})


def _ours(trace_id):
    info = mlflow.MlflowClient().get_trace(trace_id, display=False).info
    return [a for a in info.assessments if a.feedback is not None and a.valid is not False]


def test_feedback_lands_on_each_span_and_a_rerun_replaces_it(rows, store, server, tmp_path):
    scored = _scored(rows, server, tmp_path)
    frame = scored.frame
    versions = {name: m.prompt_version for name, m in scored.summary.metrics.items()}
    first = mt.log_feedback(frame, store["uri"], summary=scored.summary)  # the versions and the model from the summary
    assert first.failed == 0 and first.replaced == 0 and first.failures == []
    two = frame[frame["trace_id"] == store["ids"]["two"]].reset_index(drop=True)
    feedback = _ours(store["ids"]["two"])
    by_span = {(a.name, a.span_id): a for a in feedback}
    assert len(feedback) == len(by_span) == 3  # sufficiency on each of 2 spans, completeness once on the trace
    for _, row in two.iterrows():
        mine = by_span[("retrieval_sufficiency", row["span_id"])]  # MLflow's own scorer's name (issue 45)
        assert mine.value == ("yes" if row["sufficiency_score"] == 1.0 else "no")
        assert mine.rationale == row["sufficiency_rationale"]
        assert (mine.source.source_type, mine.source.source_id) == ("LLM_JUDGE", "openai:/fake-judge")  # MLflow's model URI form
        assert mine.metadata["prompt_version"] == versions["sufficiency"] and mine.metadata["mode"] == row["sufficiency_mode"]
        assert json.loads(mine.metadata["missing"]) == list(row["sufficiency_missing"])
        assert int(mine.metadata["prompt_tokens"]) == row["sufficiency_prompt_tokens"]
    completeness = by_span[("response_completeness", None)]
    assert completeness.value == int(two.loc[0, "completeness_score"]) and 1 <= completeness.value <= 5
    # with an error feedback on a judged trace without a retriever span, as MLflow's scorer logs one (issue 45 item 3)
    no_retriever = sum(1 for _, r in frame.iterrows() if r["span_id"] is None and r["sufficiency_status"] == "skipped")
    assert no_retriever == 1
    expected = sum(1 for _, r in frame.iterrows() if r["sufficiency_status"] in ("ok", "error")) + no_retriever + \
        sum(1 for _, r in frame.iterrows() if r["trace_first_row"] and r["completeness_status"] in ("ok", "error"))
    assert first.logged == expected

    from ragjudge.io import read_table, write_table

    write_table(frame, str(tmp_path / "scored.parquet"))  # a re-run from the written table: cells as Parquet gives them back
    again = mt.log_feedback(read_table(str(tmp_path / "scored.parquet")), store["uri"], prompt_versions=versions)
    assert (again.logged, again.replaced, again.failed) == (0, expected, 0)
    assert sorted((a.name, a.span_id or "") for a in _ours(store["ids"]["two"])) == sorted((a.name, a.span_id or "") for a in feedback)
    # a new judge model: the old feedback is overridden (kept, marked invalid), still one valid per span;
    # in 4 threads, one trace each
    third = mt.log_feedback(frame, store["uri"], model="openai/other-judge", prompt_versions=versions, workers=4)
    assert (third.logged, third.replaced) == (0, expected)
    now = _ours(store["ids"]["two"])
    assert len(now) == 3 and {a.source.source_id for a in now} == {"openai:/other-judge"}


# issue 60 item 14: what a sink logs of a metric comes from the metric's definition, not from a list of names: the
# binary groundedness (it reads the context) went to MLflow as 1/0, on the trace (SPAN_METRICS and a test of
# metric == "sufficiency" decided the level and the yes/no value)
def test_a_binary_metric_that_reads_the_context_is_a_yes_no_feedback_on_each_span(rows, store, server, tmp_path):
    import ragjudge

    nested = rows[rows["trace_id"] == store["ids"]["nested"]].reset_index(drop=True)
    scored = ragjudge.score(nested, metrics=["groundedness"], model="openai/fake-judge", api_base=server.url,
                            cache={"dir": str(tmp_path / "c")})
    frame = scored.frame
    assert list(frame["groundedness_status"]) == ["ok", "ok"] and set(frame["groundedness_score"]) <= {0.0, 1.0}
    log = mt.log_feedback(frame, store["uri"], summary=scored.summary)
    assert (log.logged, log.failed) == (2, 0)
    mine = {a.span_id: a for a in _ours(store["ids"]["nested"]) if a.name == "retrieval_groundedness"}  # MLflow's scorer's name
    assert set(mine) == set(frame["span_id"]) and len(mine) == 2  # one per retriever span, none on the trace
    for _, row in frame.iterrows():
        assert mine[row["span_id"]].value == ("yes" if row["groundedness_score"] == 1.0 else "no")


# issue 60 item 14, a second shape: a metric of the config's own (a 1..5 scale that reads the passages, no MLflow name)
# was logged once per trace; it is a number on each span, named after the metric
def test_a_config_metric_is_logged_as_its_definition_says(rows, store, server, tmp_path):
    import ragjudge
    from helpers import SCALE, config_file

    config = ragjudge.load_config(config_file(tmp_path, SCALE), metrics=["faithful_1to5"], model="openai/fake-judge",
                                  api_base=server.url, cache={"dir": str(tmp_path / "c")})
    nested = rows[rows["trace_id"] == store["ids"]["nested"]].reset_index(drop=True)
    frame = ragjudge.score(nested, config=config).frame
    assert list(frame["faithful_1to5_status"]) == ["ok", "ok"]
    log = mt.log_feedback(frame, store["uri"], config=config)
    assert (log.logged, log.failed) == (2, 0)
    mine = {a.span_id: a for a in _ours(store["ids"]["nested"]) if a.name == "faithful_1to5"}
    assert set(mine) == set(frame["span_id"])
    for _, row in frame.iterrows():
        assert mine[row["span_id"]].value == int(row["faithful_1to5_score"]) and 1 <= mine[row["span_id"]].value <= 5
    with pytest.raises(ConfigError, match="faithful_1to5"):  # without the config that defines it: said, nothing logged
        mt.log_feedback(frame, store["uri"])


# issue 60 item 13: read_traces(EvaluationDataset) raised TypeError. A dataset made from traces is read as those traces,
# with the dataset's expectations; one with records made from no trace is refused by name, nothing judged
def test_an_evaluation_dataset_made_from_traces_reads_its_traces(rows, store):
    from mlflow.genai.datasets import create_dataset

    two, nested = store["ids"]["two"], store["ids"]["nested"]
    dataset = create_dataset(name="from-traces", experiment_id=[store["experiment"]])
    dataset.merge_records([mlflow.get_trace(two), mlflow.get_trace(nested)])
    dataset.merge_records([{"inputs": {"question": "Capital of Spain?"}, "expectations": {"expected_response": "Madrid."},
                            "source": {"source_type": "TRACE", "source_data": {"trace_id": nested}}}])
    got = mt.read_traces(dataset, store["uri"])
    expected = rows[rows["trace_id"].isin([two, nested])]
    assert sorted(zip(got["trace_id"], got["span_id"])) == sorted(zip(expected["trace_id"], expected["span_id"]))
    assert set(got.loc[got["trace_id"] == two, "expected_facts"].map(tuple)) == {tuple(FACTS)}  # the trace's, kept in the record
    assert set(got.loc[got["trace_id"] == nested, "expected_response"]) == {"Madrid."}  # the dataset's expectation
    # a second shape: a record made from no trace; and an object that is no trace source at all
    dataset.merge_records([{"inputs": {"question": "Hello?"}, "expectations": {"expected_response": "Hi."}}])
    with pytest.raises(InputError, match=r"holds 1 of its \d+ record\(s\) made from no trace"):
        mt.read_traces(dataset, store["uri"])
    with pytest.raises(InputError, match="a int is no trace source"):
        mt.read_traces(42, store["uri"])


# issue 60 item 13, a second shape of the unlinked run: linking from Python, past MLflow's 100 ids a call, twice (one link
# each), and to a store that does not answer (said, not raised)
def test_link_traces_links_each_trace_once_past_mlflows_100_a_call(store):
    run_id = mt.start_run(store["uri"], store["experiment"])
    real = [store["ids"][k] for k in ("two", "nested", "dicts")]
    padded = [*real, *(f"tr-{i:032x}" for i in range(147)), real[0]]  # 150 ids with a repeat: two calls of at most 100
    assert mt.link_traces(run_id, padded, store["uri"]) == (150, None)
    assert mt.link_traces(run_id, real, store["uri"]) == (3, None)  # again: no second link
    found = mlflow.search_traces(run_id=run_id, return_type="list")
    assert sorted(t.info.trace_id for t in found) == sorted(real)
    dead = f"http://127.0.0.1:{_free_port()}"
    linked, why = mt.link_traces(run_id, real, dead)
    assert linked == 0 and why and dead in why


def test_an_error_row_logs_its_error_and_a_dead_store_loses_no_verdict(rows, store, server, tmp_path):
    frame = _scored(rows, server, tmp_path).frame
    textless = frame[frame["trace_id"] == store["ids"]["textless"]].copy()
    textless["sufficiency_status"] = "error"
    textless["sufficiency_error"] = "the judge did not answer"
    result = mt.log_feedback(textless, store["uri"], metrics=["sufficiency"])
    assert (result.written, result.failed) == (1, 0)
    (logged,) = [a for a in _ours(store["ids"]["textless"]) if a.name == "retrieval_sufficiency"]
    assert logged.value is None and logged.error.error_message == "the judge did not answer"

    # a trace gone from the store: its feedback fails with the reason, the others are logged
    gone = store["ids"]["dicts"]
    mlflow.MlflowClient(store["uri"]).delete_traces(store["experiment"], trace_ids=[gone])
    part = mt.log_feedback(frame, store["uri"], metrics=["sufficiency"])  # (this module's last test of the store's traces)
    dicts = int((frame["trace_id"] == gone).sum())
    plain = int((frame["span_id"].isna() & (frame["sufficiency_status"] == "skipped")).sum())  # its error feedback: no retriever span
    assert part.failed == dicts == 2 and part.written == int(frame["sufficiency_status"].isin(["ok", "error"]).sum()) + plain - dicts
    assert len(part.failures) == 1 and part.failures[0].startswith(f"{gone}: trace not readable")

    dead = mt.log_feedback(frame, f"http://127.0.0.1:{_free_port()}")
    assert dead.written == 0 and dead.failed > 0 and "cannot be reached" in dead.failures[0]


def test_the_run_summary_is_an_mlflow_run_of_the_experiment_with_its_artifacts(rows, store, server, tmp_path):
    scored = _scored(rows, server, tmp_path)
    from ragjudge.io import write_table

    table = tmp_path / "scored.parquet"
    write_table(scored.frame, str(table))
    report = tmp_path / "report.html"
    report.write_text("<html></html>")
    summary = {"rows": 9, "judge_model": "openai/fake-judge", "cost_usd": None, "exit_code": 1, "provider_calls": 12,
               "gate": {"passed": False}, "metrics": {"sufficiency": scored.summary.metrics["sufficiency"].to_dict()}}
    run_id = mt.log_run(summary, store["uri"], "rag-app", scored_path=str(table), report_path=str(report),
                        feedback=mt.FeedbackLog(logged=5, failed=1))
    client = mlflow.MlflowClient(store["uri"])
    run = client.get_run(run_id)
    assert run.info.experiment_id == store["experiment"] and run.info.status == "FINISHED"
    assert run.data.metrics["exit_code"] == 1 and run.data.metrics["feedback.failed"] == 1
    assert run.data.metrics["sufficiency.pass_rate"] == summary["metrics"]["sufficiency"]["pass_rate"]
    assert run.data.params["sufficiency.prompt_version"] == summary["metrics"]["sufficiency"]["prompt_version"]
    assert run.data.tags["ragjudge.gate"] == "failed"
    assert {a.path for a in client.list_artifacts(run_id)} == {"scored.parquet", "report.html", "summary.json"}
    by_trace = mt.log_run(scored.summary, store["uri"], trace_id=store["ids"]["two"])
    assert client.get_run(by_trace).info.experiment_id == store["experiment"]


@pytest.mark.slow  # 2,000 traces in an MLflow store
def test_two_thousand_traces_are_read_page_by_page_each_once(tmp_path, monkeypatch):
    """One trace made the reference's way, then 1,999 copies of its spans (new ids, new
    question) logged through the store's own ``log_spans`` in batches: tracing 2,000 app
    calls one by one takes minutes on SQLite, the copies seconds."""
    import base64
    import secrets

    from mlflow.entities import Span
    from mlflow.tracing.client import TracingClient

    uri = f"sqlite:///{tmp_path / 'big.db'}"
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        exp = mlflow.MlflowClient(uri).create_experiment("big", artifact_location=(tmp_path / "a").as_uri())
        mlflow.set_experiment(experiment_id=exp)
        made = [_made(lambda: app_two("q0"))]
    finally:
        mlflow.set_tracking_uri(before)
    template = [s.to_dict() for s in TracingClient(uri).get_trace(made[0]).data.spans]
    store, batch = TracingClient(uri).store, []
    for i in range(1, 2000):
        otel_id = secrets.token_bytes(16)
        made.append("tr-" + otel_id.hex())
        new_ids = {d["span_id"]: base64.b64encode(secrets.token_bytes(8)).decode() for d in template}
        for d in template:
            attributes = {**d["attributes"], "mlflow.traceRequestId": json.dumps(made[-1])}
            if not d["parent_span_id"]:
                attributes["mlflow.spanInputs"] = json.dumps({"question": f"q{i}"})
            batch.append(Span.from_dict({**d, "trace_id": base64.b64encode(otel_id).decode(), "span_id": new_ids[d["span_id"]],
                                         "parent_span_id": new_ids.get(d["parent_span_id"]), "attributes": attributes}))
        if len(batch) >= 1000 or i == 1999:
            store.log_spans(exp, batch)
            batch = []
    pages = []  # MLflow's own search_traces, each call recorded (a count, not a time limit: a loaded machine is slow)
    search_traces = mlflow.MlflowClient.search_traces
    monkeypatch.setattr(mlflow.MlflowClient, "search_traces", lambda self, *a, **k: pages.append(k.get("max_results")) or search_traces(self, *a, **k))
    frame = mt.read_experiment("big", uri, page_size=300)  # 7 pages
    assert pages == [300] * 7
    assert len(frame) == 4000 and frame["trace_id"].nunique() == 2000 and set(frame["trace_id"]) == set(made)
    assert sorted(frame["request"].drop_duplicates()) == sorted(f"q{i}" for i in range(2000))
    assert {tuple(names) for names in frame.groupby("trace_id")["span_name"].apply(list)} == {("retrieve_docs", "retrieve_more")}
    assert len(mt.read_experiment("big", uri, max_traces=1234, page_size=500).drop_duplicates("trace_id")) == 1234


def test_importing_the_trace_layer_or_telling_a_trace_file_imports_no_mlflow(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"info": {"trace_id": "tr-1"}, "data": {"spans": []}}) + "\n")
    code = ("import sys, ragjudge, ragjudge.traces.mlflow as mt\n"
            f"assert mt.is_trace_file({str(path)!r})\n"
            "print(sorted(m for m in ('mlflow', 'pandas', 'litellm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_span_cells_in_every_shape():
    from ragjudge.traces.spans import SpanView, TraceView, one_value, span_context, trace_rows

    assert one_value({"messages": [{"role": "user", "content": "hi"}]}) == '[{"role": "user", "content": "hi"}]'
    assert one_value({"question": "q", "k": 3}) == '{"question": "q", "k": 3}'
    assert (one_value("plain"), one_value({"answer": 42}), one_value(None), one_value({})) == ("plain", "42", None, None)
    span = SpanView("s1", "root", "search", "RETRIEVER")
    for outputs, error in ((None, "its outputs hold no text"), ("  ", "its outputs hold no text"),
                           ([{"metadata": {"doc_uri": "a"}}], "none has text")):
        span.outputs = outputs
        context, why = span_context(span)
        assert context is None and why.startswith("retriever span 'search' (s1): ") and error in why
    span.outputs = []
    assert span_context(span) == ([], None)  # the retriever found nothing: judged "no", not an error
    span.outputs = '[{"text": "t", "metadata": {"doc_uri": "u"}}]'  # outputs kept as JSON text
    assert span_context(span) == ([{"content": "t", "doc_uri": "u", "id": None}], None)
    orphan = SpanView("s2", "gone", "lost", "RETRIEVER", outputs=["x"])  # its parent is not in the trace: not top-level, as in MLflow
    root = SpanView("root", None, "app", "CHAIN", {"q": "Q"}, {"a": "A"})
    (row,) = trace_rows(TraceView("t", "IN_PROGRESS", [root, orphan], {"expected_facts": "one fact"}))
    assert (row["span_skip_reason"], row["trace_skip_reason"], row["expected_facts"]) == \
        ("retriever span 'lost' (s2): its parent span gone is not in trace t, so it is not counted as a top-level retriever "
         "(as MLflow counts it); export or select the whole trace", "trace state IN_PROGRESS", ["one fact"])


# -- issue 44 items 4 and 5: expectations as MLflow reads them; a trace read twice is one -----------

@pytest.fixture(scope="module")
def corrected(store):
    """A trace of its own experiment whose expected facts were logged twice: Lyon, then the correction Paris."""
    exp = mlflow.MlflowClient(store["uri"]).create_experiment("corrections", artifact_location=(store["folder"] / "c").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    trace_id = _made(lambda: app_two("What is the capital of France?"))
    mlflow.log_expectation(trace_id=trace_id, name="expected_facts", value=["Lyon is the capital of France"])
    mlflow.log_expectation(trace_id=trace_id, name="expected_facts", value=["Paris is the capital of France"])
    mlflow.set_experiment(experiment_id=store["experiment"])
    return trace_id


def test_the_newer_expectation_is_judged_as_mlflows_scorer_reads_it(store, corrected):
    # the older one (Lyon) was judged, and the verdict flipped
    from mlflow.genai.utils.trace_utils import extract_expectations_from_trace

    rows = mt.read_traces("mlflow:corrections", tracking_uri=store["uri"])
    theirs = extract_expectations_from_trace(mlflow.get_trace(corrected))
    assert theirs["expected_facts"] == ["Paris is the capital of France"]
    assert list(rows["expected_facts"]) == [theirs["expected_facts"]] * 2


@pytest.mark.parametrize("case", ["two", "nested", "corrections"])
def test_what_ragjudge_reads_from_a_trace_is_what_mlflows_scorer_uses(rows, store, corrected, case):
    """MLflow's own extraction (``mlflow.genai.utils.trace_utils``, which ``RetrievalSufficiency``
    uses) on the same trace: the request, the response, the expectations and each top-level
    retriever's passages. Two deliberate differences (docs/from-mlflow.md): inputs or outputs of
    one key are that key's value (MLflow 3.17 judges the dict's text, ``{'question': '...'}``),
    and a retriever's plain-string items are kept (MLflow drops them)."""
    from mlflow.genai.utils.trace_utils import (
        extract_expectations_from_trace,
        extract_request_from_trace,
        extract_response_from_trace,
        extract_retrieval_context_from_trace,
    )

    trace_id = corrected if case == "corrections" else store["ids"][case]
    ours = mt.read_traces(f"mlflow:{'corrections' if case == 'corrections' else 'rag-app'}", tracking_uri=store["uri"])
    ours = ours[ours["trace_id"] == trace_id].reset_index(drop=True)
    trace = mlflow.get_trace(trace_id)

    def one_key(text):  # the documented difference: a dict of one key is its value
        import ast

        for read in (json.loads, ast.literal_eval):
            try:
                value = read(text)
            except (ValueError, SyntaxError):
                continue
            return next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else text
        return text

    assert set(ours["request"]) == {one_key(extract_request_from_trace(trace))}
    assert set(ours["response"]) == {one_key(extract_response_from_trace(trace))}
    expected = extract_expectations_from_trace(trace) or {}
    for name in ("expected_facts", "expected_response"):
        assert all((value if value is not None else None) == expected.get(name) for value in ours[name])
    contexts = extract_retrieval_context_from_trace(trace)
    assert list(ours["span_id"]) == list(contexts)
    for span_id, context in zip(ours["span_id"], ours["context"]):
        assert [(p["content"], p.get("doc_uri")) for p in context] == [(d["content"], d.get("doc_uri")) for d in contexts[span_id]]


def test_a_trace_exported_twice_is_one_row_and_one_feedback(run_cli, store, corrected, tmp_path, server):
    # appended twice to an export file: 2 rows, and 2 valid sufficiency feedbacks on the same span
    trace = mlflow.get_trace(corrected)
    path = tmp_path / "exported.jsonl"
    path.write_text(trace.to_json() + "\n" + trace.to_json() + "\n")
    rows = mt.read_traces(str(path))
    assert len(rows) == 2 and rows["span_id"].is_unique  # its two retriever spans, once each
    result = run_cli(["score", str(path), "-m", "sufficiency", "--min-pass-rate", "0", "--mlflow-log-feedback", "--mlflow-tracking-uri",
                      store["uri"]])
    assert result.code == 0, result.stderr
    assert "note: 1 trace(s) were read more than once (the same trace id); each is judged and logged once, its first copy" in result.stderr
    mine = [a for a in _ours(corrected) if a.name == "retrieval_sufficiency"]
    assert len(mine) == 2 and len({a.span_id for a in mine}) == 2  # one per span
    doubled = pd.concat([rows, rows], ignore_index=True)  # a scored table holding a span twice: still one feedback each
    import ragjudge

    scored = ragjudge.score(doubled, metrics=["sufficiency"], model="openai/fake-judge", api_base=server.url,
                            cache={"dir": str(tmp_path / "c")})
    again = mt.log_feedback(scored.frame, store["uri"], summary=scored.summary)
    assert again.logged + again.replaced == 2 and again.failed == 0
    assert len([a for a in _ours(corrected) if a.name == "retrieval_sufficiency"]) == 2


# -- issue 45 item 3: one reading of a trace, as MLflow's scorer reads it -----------------------------

@mlflow.trace
def chat_app(messages, model="gpt-4o-mini"):
    retrieve_docs(messages[-1]["content"])
    return {"id": "chatcmpl-1", "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris."}}]}


@pytest.fixture(scope="module")
def read_three_ways(store):
    """Its own experiment: a chat-shaped trace, an ERROR trace and one without a retriever span."""
    exp = mlflow.MlflowClient(store["uri"]).create_experiment("three-ways", artifact_location=(store["folder"] / "t").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    ids = {
        "chat": _made(lambda: chat_app([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}])),
        "error": _made(lambda: app_fails("Capital of France?")),
        "plain": _made(lambda: app_plain("Hello?", "ann")),
    }
    mlflow.set_experiment(experiment_id=store["experiment"])
    return ids


def test_a_chat_trace_is_judged_on_the_users_question_and_the_assistants_reply(store, read_three_ways):
    # it was judged on the raw JSON of the messages and of the choices
    from mlflow.genai.utils.trace_utils import extract_response_from_trace

    rows = mt.read_traces("mlflow:three-ways", tracking_uri=store["uri"])
    (chat,) = rows[rows["trace_id"] == read_three_ways["chat"]].to_dict("records")
    trace = mlflow.get_trace(read_three_ways["chat"])
    assert chat["response"] == "Paris." == extract_response_from_trace(trace)  # MLflow's own reading of choices
    assert chat["request"] == "Capital of France?"  # the question asked (MLflow: the conversation's JSON; docs/from-mlflow.md)


def test_an_error_trace_is_judged_when_asked_as_mlflow_judges_it(run_cli, store, read_three_ways, tmp_path):
    common = ["score", "mlflow:three-ways", "--mlflow-tracking-uri", store["uri"], "-m", "sufficiency", "--min-pass-rate", "0"]
    default = run_cli([*common, "-o", str(tmp_path / "d.jsonl")])
    asked = run_cli([*common, "-o", str(tmp_path / "a.jsonl"), "--judge-error-traces"])
    assert default.code == asked.code == 0, default.stderr + asked.stderr
    by = {r["trace_id"]: r for r in _jsonl(tmp_path / "d.jsonl")}
    assert (by[read_three_ways["error"]]["sufficiency_status"], by[read_three_ways["error"]]["sufficiency_error"]) == \
        ("skipped", "trace state ERROR")
    by = {r["trace_id"]: r for r in _jsonl(tmp_path / "a.jsonl")}
    assert by[read_three_ways["error"]]["sufficiency_status"] == "ok"


def test_a_trace_without_a_retriever_gets_an_error_feedback_as_mlflow_logs_one(run_cli, store, read_three_ways, tmp_path):
    # MLflow's scorer raises "No retrieval context found" (an error feedback); ragjudge logged nothing
    from mlflow.genai.utils.trace_utils import extract_retrieval_context_from_trace

    plain = read_three_ways["plain"]
    assert extract_retrieval_context_from_trace(mlflow.get_trace(plain)) == {}
    result = run_cli(["score", "mlflow:three-ways", "--mlflow-tracking-uri", store["uri"], "-m", "sufficiency", "--min-pass-rate", "0",
                      "--mlflow-log-feedback"])
    assert result.code == 0, result.stderr
    (feedback,) = [a for a in _ours(plain) if a.name == "retrieval_sufficiency"]
    assert feedback.value is None and feedback.error.error_message == "no retriever span" and feedback.span_id is None
    assert [a for a in _ours(read_three_ways["error"]) if a.name == "retrieval_sufficiency"] == []  # skipped by its state: nothing


def test_the_compat_scorer_reads_a_trace_without_expectations_as_the_command_does(store, read_three_ways, server, tmp_path):
    # the command judged it reference-free; ragjudge.compat's scorer returned an error: ragjudge disagreed with itself
    from ragjudge import compat
    from ragjudge.compat.mlflow import RetrievalSufficiency

    compat.configure(model="openai/fake-judge", api_base=server.url, cache={"dir": str(tmp_path / "c")})
    try:
        (feedback,) = RetrievalSufficiency()(trace=mlflow.get_trace(read_three_ways["chat"]))
    finally:
        compat.configure()  # the defaults again, for the tests after this one
    assert feedback.error is None and feedback.value in ("yes", "no") and feedback.metadata["mode"] == "reference_free"


# issue 60 item 13: compat judged ERROR traces while the command skipped them: one default, the command's; asked, both judge
def test_the_compat_scorers_skip_an_error_trace_as_the_command_does(store, read_three_ways, server, tmp_path):
    from ragjudge import compat
    from ragjudge.compat.mlflow import RetrievalSufficiency, response_completeness

    compat.configure(model="openai/fake-judge", api_base=server.url, cache={"dir": str(tmp_path / "c")})
    try:
        trace = mlflow.get_trace(read_three_ways["error"])
        before = server.calls
        (skipped,) = RetrievalSufficiency()(trace=trace)
        unrated = response_completeness(trace=trace, expectations={"expected_facts": ["Paris is the capital of France."]})
        assert server.calls == before  # no judge call for either
        (judged,) = RetrievalSufficiency(judge_error_traces=True)(trace=trace)
    finally:
        compat.configure()
    assert skipped.value is None and skipped.error.error_message.startswith("trace state ERROR: skipped, as ragjudge score skips it")
    assert skipped.span_id == trace.search_spans(span_type="RETRIEVER")[0].span_id
    assert unrated.value is None and unrated.error.error_message.startswith("trace state ERROR: skipped")  # a second shape: per trace
    assert judged.error is None and judged.value in ("yes", "no")


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- issue 45 item 4: a scorer MLflow can register, serialize and run -----------------------------

def test_the_scorers_register_serialize_and_run_as_mlflow_loads_them(store, corrected, server, tmp_path, monkeypatch):
    # RetrievalSufficiency().register() failed: "Scorer must be a builtin or decorator scorer ... Got ScorerKind.CLASS"
    from mlflow.genai.scorers import get_scorer, list_scorers

    from ragjudge import compat
    from ragjudge.compat.mlflow import RetrievalSufficiency, response_completeness

    monkeypatch.setenv("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", "true")  # MLflow's opt-in for code scorers on a local store
    exp = mlflow.MlflowClient(store["uri"]).get_experiment_by_name("corrections").experiment_id
    registered = RetrievalSufficiency().register(experiment_id=exp)
    response_completeness.register(experiment_id=exp)
    assert registered.name == "retrieval_sufficiency"
    assert {s.name for s in list_scorers(experiment_id=exp)} >= {"retrieval_sufficiency", "response_completeness"}
    loaded = get_scorer(name="retrieval_sufficiency", experiment_id=exp)  # rebuilt from its serialized code, as monitoring runs it
    compat.configure(model="openai/fake-judge", api_base=server.url, cache={"dir": str(tmp_path / "c")})
    try:
        trace = mlflow.get_trace(corrected)
        feedbacks = loaded(trace=trace)
        complete = get_scorer(name="response_completeness", experiment_id=exp)(trace=trace)
    finally:
        compat.configure()
    assert len(feedbacks) == 2 and all(f.value in ("yes", "no") and f.span_id for f in feedbacks)  # one per retriever span
    assert complete.name == "response_completeness" and complete.value in (1, 2, 3, 4, 5) and complete.error is None


# issue 60 item 13: RetrievalSufficiency(model=...).register() dropped the model: the registered scorer judged with the
# default. It is kept in what MLflow serializes, and the scorer MLflow rebuilds judges with it
def test_a_registered_scorer_keeps_its_model(store, corrected, server, tmp_path, monkeypatch):
    from mlflow.genai.scorers import get_scorer

    from ragjudge import compat
    from ragjudge.compat.mlflow import RetrievalSufficiency

    monkeypatch.setenv("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", "true")
    exp = mlflow.MlflowClient(store["uri"]).get_experiment_by_name("corrections").experiment_id
    RetrievalSufficiency(model="openai:/kept-judge").register(name="sufficiency_kept", experiment_id=exp)
    RetrievalSufficiency().register(name="sufficiency_default", experiment_id=exp)  # a second shape: no model, the default
    compat.configure(model="openai/fake-judge", api_base=server.url, cache={"dir": str(tmp_path / "c")})
    try:
        trace = mlflow.get_trace(corrected)
        kept = get_scorer(name="sufficiency_kept", experiment_id=exp)(trace=trace)
        default = get_scorer(name="sufficiency_default", experiment_id=exp)(trace=trace)
    finally:
        compat.configure()
    assert len(kept) == 2 and {f.source.source_id for f in kept} == {"openai:/kept-judge"}
    assert {f.metadata["judge_model"] for f in kept} == {"openai/kept-judge"}
    assert len(default) == 2 and {f.source.source_id for f in default} == {"openai:/fake-judge"}


# issue 60 item 13: .start() is refused by open-source MLflow; the limit is documented with MLflow's own message
# (docs/from-mlflow.md), which this holds true: a change in MLflow fails here and the page is revisited
def test_monitoring_a_registered_scorer_is_refused_as_the_page_says(store, corrected, monkeypatch):
    from mlflow.exceptions import MlflowException
    from mlflow.genai.scorers import ScorerSamplingConfig

    from ragjudge.compat.mlflow import RetrievalSufficiency

    monkeypatch.setenv("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", "true")
    exp = mlflow.MlflowClient(store["uri"]).get_experiment_by_name("corrections").experiment_id
    registered = RetrievalSufficiency(model="openai:/gpt-4o-mini").register(name="sufficiency_monitor", experiment_id=exp)
    with pytest.raises(MlflowException) as refused:
        registered.start(experiment_id=exp, sampling_config=ScorerSamplingConfig(sample_rate=0.5))
    message = str(refused.value)
    assert message == ("Scorer 'sufficiency_monitor' does not use a gateway model. Automatic evaluation is only supported for "
                       "scorers that use gateway models.")
    from conftest import ROOT

    page = (ROOT / "docs" / "from-mlflow.md").read_text()
    assert message.replace("sufficiency_monitor", "retrieval_sufficiency") in page


# issue 61 item 4: a verdict's probability goes to MLflow as feedback metadata, under the keys MLflow itself
# writes for its decision-model judges (make_jev_scorer: jev.*; OpenAI Decisions judges: openai.decisions.*)
# where the judge is one, else under ragjudge.*
@pytest.mark.parametrize("model, prefix", [("openai/fake-judge", "ragjudge"), ("systemone/jev-latest", "jev"),
                                           ("openai-decisions/gpt-6-luna", "openai.decisions")])
def test_a_verdicts_probability_is_feedback_metadata_under_mlflows_own_keys(rows, store, server, tmp_path, model, prefix):
    import ragjudge

    server.p_yes, server.p_true = 0.8, 0.7  # P(yes) of a reference-free row, P(supported) of each fact of a grounded one
    server.p_scores = {3: 0.25, 4: 0.75}
    judged = rows[rows["trace_skip_reason"].isna()].reset_index(drop=True)
    scored = ragjudge.score(judged, metrics=["sufficiency", "completeness"], model="openai/fake-judge", api_base=server.url,
                            cache={"dir": str(tmp_path / "c")}, yes_threshold=0.5, fact_threshold=0.5, expected_score=True)
    frame = scored.frame
    frame = frame[frame["trace_id"] == store["ids"]["two"]].reset_index(drop=True)  # a trace no other test removes
    versions = {name: m.prompt_version for name, m in scored.summary.metrics.items()}
    logged = mt.log_feedback(frame, store["uri"], model=model, prompt_versions=versions)
    assert logged.failed == 0, logged.failures
    two = frame[frame["trace_id"] == store["ids"]["two"]].reset_index(drop=True)
    by_span = {(a.name, a.span_id): a for a in _ours(store["ids"]["two"])}
    for _, row in two.iterrows():
        metadata = by_span[("retrieval_sufficiency", row["span_id"])].metadata
        p = 0.7 if row["sufficiency_mode"] == "grounded" else 0.8
        assert row["sufficiency_probability"] == pytest.approx(p)
        assert json.loads(metadata[f"{prefix}.probability"]) == pytest.approx(p)
        assert metadata.get(f"{prefix}.model") == (None if prefix == "ragjudge" else model.split("/", 1)[1])
    completeness = by_span[("response_completeness", None)].metadata
    assert json.loads(completeness[f"{prefix}.probabilities"]) == pytest.approx({"0": 0.0, "1": 0.0, "2": 0.25, "3": 0.75, "4": 0.0})
    assert json.loads(completeness[f"{prefix}.probability"]) == pytest.approx(two.loc[0, "completeness_probability"])
    others = {"ragjudge", "jev", "openai.decisions"} - {prefix}
    assert not [key for key in completeness if "." in key and key.rsplit(".", 1)[0] in others]  # no other judge kind's keys

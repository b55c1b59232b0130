"""``ragjudge score mlflow:EXP`` and trace files, end to end (issue 26), against a real tracking
store: a SQLite tracking URI in a temporary folder holding the traces of MLflow's own
``RetrievalSufficiency`` example (docs/from-mlflow.md), made the reference's way, judged by the
fake server. Nothing about MLflow is mocked.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from helpers import HAVE_MLFLOW

if not HAVE_MLFLOW and os.environ.get("CI") == "true":
    raise RuntimeError('CI must install the [mlflow] extra: pip install -e ".[test,mlflow]"')
if not HAVE_MLFLOW:
    pytest.skip("the [mlflow] extra is not installed", allow_module_level=True)

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")

import mlflow  # noqa: E402
from mlflow.entities import Document  # noqa: E402

from conftest import ROOT, read_jsonl  # noqa: E402
from helpers import needs_mlflow  # noqa: E402

PAGE = ROOT / "docs" / "from-mlflow.md"
FRANCE = ["Paris is the capital of France."]
COMPONENTS = ["MLflow has four main components", "Components include Tracking", "Components include Projects",
              "Components include Models", "Components include Registry"]


# -- the reference's example (MLflow's RetrievalSufficiency docs), as docs/from-mlflow.md has it --
@mlflow.trace(span_type="RETRIEVER")
def retrieve_docs(query: str) -> list[Document]:
    if "france" in query.lower():
        return [Document(id="doc_1", page_content="Paris is the capital of France.", metadata={"doc_uri": "geography.txt"}),
                Document(id="doc_2", page_content="France is a country in Western Europe.", metadata={"doc_uri": "countries.txt"})]
    return [Document(id="doc_3", page_content="MLflow has several components, among them Tracking and Projects.",
                     metadata={"doc_uri": "mlflow_intro.txt"})]


@mlflow.trace(span_type="RETRIEVER")
def rerank_docs(query: str) -> list[Document]:
    return [Document(id="doc_9", page_content="Paris lies on the Seine.", metadata={})]


@mlflow.trace
def rag_app(query: str) -> dict:
    context = "\n".join(doc.page_content for doc in retrieve_docs(query))
    return {"response": f"From the context: {context}"}


@mlflow.trace
def two_retrievers(question: str) -> dict:
    retrieve_docs(question)
    rerank_docs(question)
    return {"response": "Paris, on the Seine."}


@mlflow.trace
def fails(query: str) -> dict:
    retrieve_docs(query)
    raise RuntimeError("the model timed out")


def _trace(call) -> str:
    try:
        call()
    except RuntimeError:
        pass
    return mlflow.get_last_active_trace_id()


def _make_store(folder: Path) -> dict:
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    exp = mlflow.MlflowClient(uri).create_experiment("rag-app", artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    ids = {"france": _trace(lambda: rag_app("What is the capital of France?")),
           "components": _trace(lambda: rag_app("What are all the MLflow components?")),
           "two": _trace(lambda: two_retrievers("Where is Paris?")),
           "error": _trace(lambda: fails("What is the capital of France?"))}
    mlflow.log_expectation(trace_id=ids["france"], name="expected_facts", value=FRANCE)
    mlflow.log_expectation(trace_id=ids["components"], name="expected_facts", value=COMPONENTS)
    mlflow.log_expectation(trace_id=ids["two"], name="expected_facts", value=["Paris lies on the Seine"])
    return {"uri": uri, "experiment": exp, "ids": ids, "folder": folder}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    before = mlflow.get_tracking_uri()
    made = _make_store(tmp_path_factory.mktemp("mlflow-cli"))
    yield made
    mlflow.set_tracking_uri(before)


def _ours(uri: str, trace_id: str) -> list:
    info = mlflow.MlflowClient(uri).get_trace(trace_id, display=False).info
    return [a for a in info.assessments if a.feedback is not None and a.valid is not False and "ragjudge" in (a.metadata or {})]


def _score(run_cli, store, tmp_path, *extra, name="scored.jsonl"):
    out, summary = tmp_path / name, tmp_path / f"{name}.summary.json"
    result = run_cli(["score", "mlflow:rag-app", "--mlflow-tracking-uri", store["uri"], "-o", str(out),
                      "--summary-json", str(summary), *extra])
    return result, (read_jsonl(out) if out.exists() else None), (json.loads(summary.read_text()) if summary.exists() else None)


def test_an_experiment_is_one_row_per_retriever_span_and_its_feedback_lands_once_per_span(run_cli, store, tmp_path):
    result, rows, summary = _score(run_cli, store, tmp_path, "--mlflow-log-feedback")
    assert result.code == summary["exit_code"] and result.code in (0, 1), result.stderr
    ids = store["ids"]
    assert [r["trace_id"] for r in rows].count(ids["two"]) == 2 and len(rows) == 5  # every trace read is in the output
    assert list(rows[0])[:3] == ["trace_id", "span_id", "span_name"]
    france = next(r for r in rows if r["trace_id"] == ids["france"])
    assert france["request"] == "What is the capital of France?" and france["span_name"] == "retrieve_docs"
    assert [p["content"] for p in france["context"]] == ["Paris is the capital of France.", "France is a country in Western Europe."]
    assert france["context"][0]["doc_uri"] == "geography.txt" and france["expected_facts"] == FRANCE
    assert france["response"].startswith("From the context: Paris is the capital of France.")
    components = next(r for r in rows if r["trace_id"] == ids["components"])
    assert components["expected_facts"] == COMPONENTS
    for row in rows:
        assert row["sufficiency_status"] in ("ok", "skipped") and row["completeness_status"] in ("ok", "skipped")
    # the ERROR trace: every metric skipped with its state
    (error,) = [r for r in rows if r["trace_id"] == ids["error"]]
    assert (error["sufficiency_status"], error["sufficiency_error"]) == ("skipped", "trace state ERROR")
    assert (error["completeness_status"], error["completeness_error"]) == ("skipped", "trace state ERROR")
    # completeness: judged once per trace, the trace's other rows carry the same verdict, counted once
    first, second = [r for r in rows if r["trace_id"] == ids["two"]]
    assert first["trace_first_row"] and not second["trace_first_row"]
    assert second["completeness_score"] == first["completeness_score"] and second["completeness_rationale"] == first["completeness_rationale"]
    assert second["completeness_cached"] is True and second["completeness_prompt_tokens"] == 0
    assert summary["metrics"]["completeness"]["rows"] == 4 and summary["metrics"]["sufficiency"]["rows"] == 5
    assert summary["metrics"]["completeness"]["ok"] == 3 and summary["metrics"]["sufficiency"]["ok"] == 4

    judged = [r for r in rows if r["sufficiency_status"] == "ok"]
    assert summary["mlflow"]["feedback_logged"] == len(judged) + 3 and summary["mlflow"]["feedback_failed"] == 0
    assert re.fullmatch(r"[0-9a-f]{32}", summary["mlflow"]["run_id"])
    assert "mlflow: 7 feedback(s) logged" in result.stderr  # the console (stderr), after the summary table
    for trace_id in (ids["france"], ids["components"], ids["two"]):
        mine = _ours(store["uri"], trace_id)
        spans = [r for r in rows if r["trace_id"] == trace_id]
        assert sorted(a.span_id or "" for a in mine if a.name == "retrieval_sufficiency") == sorted(r["span_id"] for r in spans)
        for row in spans:
            (feedback,) = [a for a in mine if a.name == "retrieval_sufficiency" and a.span_id == row["span_id"]]
            assert feedback.value == ("yes" if row["sufficiency_score"] == 1.0 else "no")
            assert feedback.rationale == row["sufficiency_rationale"] and feedback.source.source_id == "openai:/fake-judge"
        (complete,) = [a for a in mine if a.name == "response_completeness"]
        assert complete.span_id is None and complete.value == int(spans[0]["completeness_score"])
    assert _ours(store["uri"], ids["error"]) == []  # skipped: nothing logged

    # the run: summary, table and report as artifacts, in the experiment
    client = mlflow.MlflowClient(store["uri"])
    run = client.get_run(summary["mlflow"]["run_id"])
    assert run.info.experiment_id == store["experiment"] and run.data.metrics["feedback.logged"] == 7
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"scored.jsonl", "report.html", "summary.json"}

    # a second run: every feedback replaced, still exactly one per span
    again, rows_again, summary_again = _score(run_cli, store, tmp_path, "--mlflow-log-feedback", name="again.jsonl")
    assert again.code == result.code
    assert (summary_again["mlflow"]["feedback_logged"], summary_again["mlflow"]["feedback_replaced"]) == (0, 7)
    for trace_id in (ids["france"], ids["components"], ids["two"]):
        names = [(a.name, a.span_id) for a in _ours(store["uri"], trace_id)]
        assert len(names) == len(set(names)) == 1 + sum(1 for r in rows if r["trace_id"] == trace_id)


def test_the_feedback_and_the_run_are_where_mlflows_own_views_look(run_cli, store, tmp_path):
    """Issue 45 item 2: the feedback was named ``sufficiency`` (MLflow's scorer writes
    ``retrieval_sufficiency``), its source ``openai/gpt-4o-mini`` (MLflow: ``openai:/...``), with no
    link to the run, which MLflow's evaluation-runs view did not list, and a cached re-run wrote
    0 tokens and cost over the first run's. Checked with MLflow's own queries."""
    first, rows, summary = _score(run_cli, store, tmp_path, "--mlflow-log-feedback", "--model", "openai/gpt-4o-mini")
    assert first.code in (0, 1), first.stderr
    run_id, ids = summary["mlflow"]["run_id"], store["ids"]
    client = mlflow.MlflowClient(store["uri"])
    found = mlflow.search_traces(locations=[store["experiment"]], filter_string="feedback.retrieval_sufficiency = 'yes'", return_type="list")
    yes = {r["trace_id"] for r in rows if r["sufficiency_status"] == "ok" and r["sufficiency_score"] == 1.0}
    assert yes and {t.info.trace_id for t in found} == yes
    for trace_id in yes:
        for feedback in _ours(store["uri"], trace_id):
            assert feedback.source.source_id == "openai:/gpt-4o-mini" and feedback.run_id == run_id  # mlflow.assessment.sourceRunId
            assert feedback.metadata["judged_by"].startswith("ragjudge ")
    runs = client.search_runs([store["experiment"]], filter_string="tags.`mlflow.runType` = 'genai_evaluate'")
    assert run_id in {r.info.run_id for r in runs}
    # issue 60 item 13: the run listed no trace in MLflow's UI (search_traces(run_id=...) gave 0; MLflow's own evaluate
    # links every trace it judged): each trace read is linked, the error trace too (its row is in the table)
    linked = mlflow.search_traces(run_id=run_id, return_type="list")
    assert sorted(t.info.trace_id for t in linked) == sorted(ids.values()) and summary["mlflow"]["traces_linked"] == 4
    assert "4 trace(s) linked" in first.stderr
    history = client.get_metric_history(run_id, "retrieval_sufficiency/mean")
    assert [m.value for m in history] == [summary["metrics"]["sufficiency"]["mean_score"]]
    assert client.get_metric_history(run_id, "response_completeness/mean")[0].value == summary["metrics"]["completeness"]["mean_score"]
    france = ids["france"]
    (before,) = [a for a in _ours(store["uri"], france) if a.name == "retrieval_sufficiency"]
    assert int(before.metadata["prompt_tokens"]) > 0
    again, rows_again, _ = _score(run_cli, store, tmp_path, "--mlflow-log-feedback", "--model", "openai/gpt-4o-mini", name="again.jsonl")
    assert all(r["sufficiency_cached"] for r in rows_again if r["sufficiency_status"] == "ok")
    (after,) = [a for a in _ours(store["uri"], france) if a.name == "retrieval_sufficiency"]
    assert {k: after.metadata[k] for k in ("prompt_tokens", "completion_tokens", "cost_usd")} == \
        {k: before.metadata[k] for k in ("prompt_tokens", "completion_tokens", "cost_usd")}  # the cached re-run kept them


def test_a_feedback_name_of_ones_own_and_a_misspelt_metric_in_it(run_cli, store, tmp_path):
    result, rows, _ = _score(run_cli, store, tmp_path, "-m", "sufficiency", "--mlflow-log-feedback", "--mlflow-feedback-name",
                             "sufficiency=context_enough")
    assert result.code in (0, 1), result.stderr
    names = {a.name for a in _ours(store["uri"], store["ids"]["france"])}
    assert "context_enough" in names
    bad, _, _ = _score(run_cli, store, tmp_path, "-m", "sufficiency", "--mlflow-log-feedback", "--mlflow-feedback-name", "sufficency=x",
                       name="bad.jsonl")
    assert bad.code == 2 and "--mlflow-feedback-name sufficency=...: this run does not judge 'sufficency'" in bad.stderr


def test_an_exported_trace_file_gives_the_stores_rows(run_cli, store, tmp_path):
    traces = mlflow.MlflowClient(store["uri"]).search_traces(locations=[store["experiment"]], max_results=100)
    exported = tmp_path / "traces.jsonl"
    exported.write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
    array = tmp_path / "traces.json"
    array.write_text(json.dumps([json.loads(t.to_json()) for t in traces]), encoding="utf-8")
    _, from_store, _ = _score(run_cli, store, tmp_path, "-m", "sufficiency")
    keys = ("trace_id", "span_id", "span_name", "request", "context", "response", "expected_facts", "sufficiency_status",
            "sufficiency_score")
    want = sorted(tuple(json.dumps(r[k]) for k in keys) for r in from_store)
    for path in (exported, array):
        out = tmp_path / f"{path.name}.scored.jsonl"
        result = run_cli(["score", str(path), "-m", "sufficiency", "-o", str(out)])
        assert result.code in (0, 1), result.stderr
        assert sorted(tuple(json.dumps(r[k]) for k in keys) for r in read_jsonl(out)) == want
    # --input-format mlflow-traces forces a file whatever its suffix
    odd = tmp_path / "traces.txt"
    odd.write_text(exported.read_text())
    forced = run_cli(["score", str(odd), "--input-format", "mlflow-traces", "-m", "sufficiency", "-o", str(tmp_path / "f.jsonl")])
    assert forced.code in (0, 1) and len(read_jsonl(tmp_path / "f.jsonl")) == len(from_store)


def test_limit_filter_and_max_traces_keep_their_meaning(run_cli, store, tmp_path):
    _, rows, _ = _score(run_cli, store, tmp_path, "-m", "sufficiency", "--limit", "1")
    assert len(rows) == 5 and [r["sufficiency_status"] for r in rows][1:].count("skipped") == 4
    assert rows[1]["sufficiency_error"] == "not sampled"
    _, rows, _ = _score(run_cli, store, tmp_path, "-m", "sufficiency", "--mlflow-max-traces", "2", name="two.jsonl")
    assert {r["trace_id"] for r in rows} == {store["ids"]["france"], store["ids"]["components"]}
    _, rows, _ = _score(run_cli, store, tmp_path, "-m", "sufficiency", "--mlflow-filter", "attributes.status = 'ERROR'",
                        name="error.jsonl")
    assert [r["trace_id"] for r in rows] == [store["ids"]["error"]]
    by_id = run_cli(["score", f"mlflow:{store['experiment']}", "--mlflow-tracking-uri", store["uri"], "-m", "sufficiency",
                     "-o", str(tmp_path / "id.jsonl")])
    assert by_id.code in (0, 1) and len(read_jsonl(tmp_path / "id.jsonl")) == 5
    env = run_cli(["score", "mlflow:rag-app", "-m", "sufficiency", "-o", str(tmp_path / "env.jsonl")]) \
        if os.environ.get("MLFLOW_TRACKING_URI") else None
    assert env is None or env.code in (0, 1)


@pytest.mark.slow  # an MLflow store taken away mid-run
def test_the_store_going_away_before_the_feedback_loses_no_verdict(run_cli, tmp_path, monkeypatch):
    import ragjudge.traces.mlflow as mt

    before = mlflow.get_tracking_uri()
    try:
        own = _make_store(tmp_path / "store") if (tmp_path / "store").mkdir() is None else None
    finally:
        mlflow.set_tracking_uri(before)
    real = mt.log_feedback
    db = own["folder"] / "mlflow.db"

    def store_gone(*args, **kwargs):  # between judging and logging, the store's file is removed
        db.unlink()
        return real(*args, **kwargs)

    monkeypatch.setattr(mt, "log_feedback", store_gone)
    out, summary_path = tmp_path / "scored.jsonl", tmp_path / "summary.json"
    result = run_cli(["score", "mlflow:rag-app", "--mlflow-tracking-uri", own["uri"], "--mlflow-log-feedback", "-o", str(out),
                      "--summary-json", str(summary_path)])
    summary = json.loads(summary_path.read_text())
    rows = read_jsonl(out)
    assert result.code == summary["exit_code"] and result.code in (0, 1)  # the gate's, as for a table run
    assert len(rows) == 5 and sum(r["sufficiency_status"] == "ok" for r in rows) == 4  # every verdict kept
    assert summary["mlflow"]["feedback_logged"] == 0 and summary["mlflow"]["feedback_failed"] == 7
    assert "cannot be reached" in summary["mlflow"]["feedback_failures"][0] and "no SQLite file" in summary["mlflow"]["feedback_failures"][0]
    assert "7 not logged" in result.stderr and "the run was not logged" in result.stderr
    assert "run_error" in summary["mlflow"]


def test_bad_trace_input_exits_2_naming_the_fix(run_cli, store, tmp_path, monkeypatch):
    import mlflow.tracking._tracking_service.utils as tracking

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(tracking, "_tracking_uri", None)  # as in a fresh process: no store set
    cases = [
        (["score", "mlflow:rag-app", "--mlflow-tracking-uri", f"sqlite:///{tmp_path}/none.db"], "cannot be reached"),
        (["score", "mlflow:rag-app", "--mlflow-tracking-uri", "http://127.0.0.1:9"], "cannot be reached"),
        (["score", "mlflow:no-such-app", "--mlflow-tracking-uri", store["uri"]], "no MLflow experiment 'no-such-app'"),
        (["score", "mlflow:rag-app"], "needs a tracking store"),
    ]
    table = tmp_path / "table.jsonl"
    table.write_text(json.dumps({"request": "q", "context": ["c"]}) + "\n")
    neither = tmp_path / "notes.txt"
    neither.write_text("just some notes\n")
    traces = mlflow.MlflowClient(store["uri"]).search_traces(locations=[store["experiment"]], max_results=1)
    exported = tmp_path / "t.jsonl"
    exported.write_text(traces[0].to_json() + "\n")
    cases += [
        (["score", str(neither), "--input-format", "mlflow-traces"], "neither an MLflow trace file"),
        (["score", str(table), "--input-format", "mlflow-traces"], "is a table (1 row(s); columns request, context), not an MLflow "
         "trace file (one Trace.to_json() per line, or a JSON array of them); to score it as a table, drop --input-format mlflow-traces"),
        (["score", str(exported), "--mlflow-log-feedback"], "--mlflow-log-feedback needs a tracking store"),
        (["score", str(table), "--mlflow-log-feedback", "--mlflow-tracking-uri", store["uri"]], "works on traces"),
        (["score", str(table), "--mlflow-filter", "x"], "works on traces"),
        (["score", str(table), "--mlflow-filter", "x", "--mlflow-max-traces", "3"], "--mlflow-filter, --mlflow-max-traces work on traces"),
        (["score", str(exported), "--engine", "ray"], "--engine local"),
    ]
    for args, said in cases:
        result = run_cli(args)
        assert result.code == 2 and said in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


@pytest.mark.slow  # the page's Python examples against an MLflow store
def test_the_python_examples_of_the_page_run(server, tmp_path):
    """docs/from-mlflow.md: its Python blocks marked runnable run in order, as a notebook would: in a
    fresh process whose environment is a user's, so without ``MLFLOW_ENABLE_ASYNC_TRACE_LOGGING``
    (this module sets it for its own process; MLflow then writes traces in the background, and the
    page must wait for them before logging expectations on them)."""
    import subprocess
    import sys

    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- runnable -->\s*```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    check = ('import json\nprint("RESULT " + json.dumps({"rows": len(scored.frame), '
             '"status": sorted(set(scored.frame["sufficiency_status"])), "failed": logged.failed, "written": logged.written}))\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-test-not-a-real-key", RAGJUDGE_CACHE_DIR=str(tmp_path / "cache"),
               MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    assert "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING" not in env
    result = subprocess.run([sys.executable, "-c", "\n".join(blocks) + "\n" + check], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    got = json.loads(line.removeprefix("RESULT "))
    assert got["rows"] == 2 and got["status"] == ["ok"]
    assert got["failed"] == 0 and got["written"] == 4  # sufficiency and completeness on each of 2 traces


@pytest.fixture
def stores(tmp_path):
    """A new SQLite store with an empty experiment and one holding one OK trace."""
    import mlflow

    before = mlflow.get_tracking_uri()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    client.create_experiment("empty-exp", artifact_location=(tmp_path / "a1").as_uri())
    full = client.create_experiment("full-exp", artifact_location=(tmp_path / "a2").as_uri())
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment_id=full)

    @mlflow.trace
    def app(query: str) -> dict:
        return {"response": "Paris"}

    try:
        app("What is the capital of France?")
        mlflow.flush_trace_async_logging()
    finally:
        mlflow.set_tracking_uri(before)
    return uri


# review of the traces pages and readers (p4-fixb) item 4: an experiment with nothing to judge: exit 2 saying so
@needs_mlflow
def test_an_empty_experiment_exits_2_saying_it_holds_no_traces(run_cli, stores, tmp_path):
    result = run_cli(["score", "mlflow:empty-exp", "--mlflow-tracking-uri", stores, "-o", str(tmp_path / "out.jsonl")], judge=False)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().startswith(f"error: the MLflow experiment 'empty-exp' in {stores} holds no traces: nothing to judge")
    assert "the input has no rows" not in result.stderr and not (tmp_path / "out.jsonl").exists()


# review of the traces pages and readers (p4-fixb) item 4: an experiment with nothing to judge: exit 2 saying so
@needs_mlflow
def test_a_filter_that_matches_no_trace_says_so_and_the_library_raises(run_cli, stores, tmp_path):
    from ragjudge.errors import InputError
    from ragjudge.traces import mlflow as mt

    result = run_cli(["score", "mlflow:full-exp", "--mlflow-tracking-uri", stores, "--mlflow-filter", "attributes.status = 'ERROR'",
                      "-o", str(tmp_path / "out.jsonl")], judge=False)
    assert result.code == 2
    assert result.stderr.strip() == (f"error: no trace of the MLflow experiment 'full-exp' in {stores} matched the filter "
                                     "\"attributes.status = 'ERROR'\": nothing to judge; loosen the filter (--mlflow-filter)")
    with pytest.raises(InputError, match="'empty-exp' in .* holds no traces"):
        mt.read_traces("mlflow:empty-exp", tracking_uri=stores)
    assert len(mt.read_traces("mlflow:full-exp", tracking_uri=stores)) == 1  # the store is read: one trace, one row


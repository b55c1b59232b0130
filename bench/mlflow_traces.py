"""Figure 6b: MLflow traces in, feedback out. ragjudge against `mlflow.genai.evaluate` with
`RetrievalSufficiency` on the same N traces of a local SQLite tracking store.

Set-up (not timed): N traces made the reference's way (a traced app calling a
`span_type="RETRIEVER"` retriever that returns `Document`s, `expected_facts` logged as an
expectation), in bench/_work/traces/mlflow.db. Each tool then gets a fresh copy of that store
and its own fake server (100 ms latency, as figure 6).

- ragjudge: `read_traces("mlflow:EXP")` (MLflow's client, paginated), `evaluate` of the rows
  (sufficiency, concurrency C, no cache), `log_feedback` (one Feedback per span) and `log_run`
  (the summary as an MLflow run): what `ragjudge score mlflow:EXP --mlflow-log-feedback`
  does, timed part by part, so the share spent in MLflow's client calls is measured.
- MLflow: `mlflow.genai.evaluate(data=mlflow.search_traces(...), scorers=[RetrievalSufficiency(...)])`,
  which judges each trace's retriever spans and logs its feedback on them, with figure 6's
  documented settings (MLFLOW_GENAI_EVAL_MAX_WORKERS = C, rate limits off, NullPool, bundled
  catalogs, telemetry off) and an untimed warm-up evaluate over 5 traces of its own.

Runs in the project's environment with the [mlflow] extra (mlflow-skinny 3.17.2).

    nice python bench/mlflow_traces.py [--traces 200] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, WORK, fake_server, machine  # noqa: E402

os.environ.update({
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
    "MLFLOW_SQLALCHEMYSTORE_POOLCLASS": "NullPool",
    "MLFLOW_MODEL_CATALOG_URI": "",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_GENAI_EVAL_PREDICT_RATE_LIMIT": "0",
    "MLFLOW_GENAI_EVAL_SCORER_RATE_LIMIT": "0",
})
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
sys.path.insert(0, str(ROOT))


def make_store(folder: Path, n: int) -> str:
    import mlflow
    from mlflow.entities import Document

    @mlflow.trace(span_type="RETRIEVER")
    def retrieve(query: str) -> list:
        return [Document(id=f"d{len(query)}", page_content=f"Passage about {query}: the answer is in paragraph two.",
                         metadata={"doc_uri": "kb/doc.txt"})]

    @mlflow.trace
    def app(query: str) -> dict:
        retrieve(query)
        return {"response": f"An answer to {query}."}

    folder.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient(uri)
    for name in ("bench-traces", "bench-warmup"):  # artifacts (the runs' reports) under bench/_work, not the working folder
        client.create_experiment(name, artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment("bench-traces")
    for i in range(n):
        app(f"question {i} about topic {i % 37}")
        mlflow.log_expectation(trace_id=mlflow.get_last_active_trace_id(), name="expected_facts",
                               value=[f"the answer to question {i}"])
    mlflow.set_experiment("bench-warmup")
    for i in range(5):
        app(f"warm-up question {i}")
    return uri


def copy_store(source: Path, name: str) -> str:
    target = WORK / "traces" / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(source / "mlflow.db", target / "mlflow.db")
    return f"sqlite:///{target / 'mlflow.db'}"


def run_ragjudge(uri: str, url: str, concurrency: int) -> dict:
    import ragjudge
    from ragjudge.traces import mlflow as mt

    parts: dict[str, float] = {}
    start = time.perf_counter()
    rows = mt.read_traces("mlflow:bench-traces", tracking_uri=uri)
    parts["read_traces"] = time.perf_counter() - start
    t = time.perf_counter()
    config = ragjudge.load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/gpt-4o-mini", "api_base": url,
                                                                               "concurrency": concurrency},
                                         "cache": {"enabled": False}})
    result = ragjudge.evaluate(rows, config, keep_table=True)
    parts["judge"] = time.perf_counter() - t
    t = time.perf_counter()
    log = mt.log_feedback(result.table, uri, summary=result.summary)
    parts["log_feedback"] = time.perf_counter() - t
    t = time.perf_counter()
    mt.log_run({"rows": result.summary.rows, "exit_code": result.gate.exit_code,
                "metrics": {k: m.to_dict() for k, m in result.summary.metrics.items()}}, uri, "bench-traces", feedback=log)
    parts["log_run"] = time.perf_counter() - t
    seconds = time.perf_counter() - start
    mlflow_s = parts["read_traces"] + parts["log_feedback"] + parts["log_run"]
    return {"rows": len(rows), "seconds": seconds, "parts": parts, "mlflow_share": mlflow_s / seconds,
            "feedback_written": log.written, "feedback_failed": log.failed,
            "ok": result.summary.metrics["sufficiency"].ok}


def run_mlflow(uri: str, url: str, concurrency: int) -> dict:
    import mlflow
    from mlflow.genai.scorers import RetrievalSufficiency

    os.environ["OPENAI_API_BASE"] = url
    os.environ["MLFLOW_GENAI_EVAL_MAX_WORKERS"] = str(concurrency)
    mlflow.set_tracking_uri(uri)
    scorer = RetrievalSufficiency(model="openai:/gpt-4o-mini")
    mlflow.set_experiment("bench-warmup")
    mlflow.genai.evaluate(data=mlflow.search_traces(), scorers=[scorer])  # one-time costs, not timed
    mlflow.set_experiment("bench-traces")
    start = time.perf_counter()
    traces = mlflow.search_traces(max_results=100000)
    read = time.perf_counter() - start
    result = mlflow.genai.evaluate(data=traces, scorers=[scorer])
    seconds = time.perf_counter() - start
    frame = result.result_df
    column = next((c for c in frame.columns if "retrieval_sufficiency" in c and c.endswith("value")), None)
    ok = int(frame[column].isin(["yes", "no"]).sum()) if column else 0
    return {"rows": len(traces), "seconds": seconds, "search_traces": read, "ok": ok}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    base = WORK / "traces" / "base"
    shutil.rmtree(base, ignore_errors=True)
    t = time.perf_counter()
    make_store(base, args.traces)
    made = time.perf_counter() - t
    with fake_server(args.latency) as url:
        ours = run_ragjudge(copy_store(base, "ragjudge"), url, args.concurrency)
    with fake_server(args.latency) as url:
        theirs = run_mlflow(copy_store(base, "mlflow"), url, args.concurrency)
    print(json.dumps({"machine": machine(), "traces": args.traces, "store_made_s": made, "ragjudge": ours, "mlflow": theirs}, indent=1))
    p = ours["parts"]
    print(f"ragjudge: {ours['rows'] / ours['seconds']:.1f} rows/s ({ours['rows']} spans, {ours['seconds']:.1f} s: read "
          f"{p['read_traces']:.1f} s, judge {p['judge']:.1f} s, feedback {p['log_feedback']:.1f} s, run {p['log_run']:.1f} s; "
          f"MLflow client calls {100 * ours['mlflow_share']:.0f}% of the time; {ours['feedback_written']} feedbacks logged)")
    print(f"mlflow.genai.evaluate + RetrievalSufficiency: {theirs['rows'] / theirs['seconds']:.1f} rows/s "
          f"({theirs['rows']} traces, {theirs['seconds']:.1f} s, search_traces {theirs['search_traces']:.1f} s; {theirs['ok']} judged)")
    print(f"ratio: {(ours['rows'] / ours['seconds']) / (theirs['rows'] / theirs['seconds']):.1f}x")


if __name__ == "__main__":
    main()

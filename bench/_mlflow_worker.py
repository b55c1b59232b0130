"""Runs inside the separate MLflow environment (bench/_work/mlflow-venv): scores the rows with
MLflow's `is_context_sufficient` judge through `mlflow.genai.evaluate`, whose parallelism is
MLflow's documented setting MLFLOW_GENAI_EVAL_MAX_WORKERS. Prints one JSON line.

    python _mlflow_worker.py ROWS.jsonl MODEL_URI [WARMUP_ROWS]

The settings (tracking store, rate limits, offline catalogs) come from the environment that
mlflow_side_by_side.py sets. With WARMUP_ROWS > 0, a first evaluate() over that many rows
(its own MLflow run) pays MLflow's one-time costs -- creating the tracking database's schema,
lazy imports (litellm, the Databricks SDK), the first connection -- outside the timed run,
just as ragjudge's side excludes process start-up. The timed run then scores all rows.
"""

from __future__ import annotations

import json
import os
import sys
import time

rows_path, model = sys.argv[1], sys.argv[2]
warmup_rows = int(sys.argv[3]) if len(sys.argv) > 3 else 0

start_import = time.perf_counter()
import mlflow  # noqa: E402
from mlflow.genai.judges import is_context_sufficient  # noqa: E402
from mlflow.genai.scorers import scorer  # noqa: E402

import_seconds = time.perf_counter() - start_import


@scorer
def context_sufficiency(inputs, outputs, expectations):
    return is_context_sufficient(
        request=inputs["query"],
        context=outputs["retrieved_context"],
        expected_facts=expectations.get("expected_facts"),
        expected_response=expectations.get("expected_response"),
        model=model,
    )


def scored(result) -> tuple[int, int]:
    """(rows with a yes/no value, rows whose judge call failed)."""
    frame = result.result_df
    column = next((c for c in frame.columns if c.startswith("context_sufficiency") and c.endswith("value")), None)
    if column is None:
        return 0, len(frame)
    ok = int(frame[column].isin(["yes", "no"]).sum())
    return ok, len(frame) - ok


data = []
with open(rows_path, encoding="utf-8") as handle:
    for line in handle:
        row = json.loads(line)
        data.append({
            "inputs": {"query": row["request"]},
            "outputs": {"retrieved_context": [{"content": c} for c in row["context"]]},
            "expectations": {"expected_response": row["expected_response"]},
        })

start = time.perf_counter()
mlflow.set_experiment("ragjudge-side-by-side")  # creates the tracking database on first use
setup_seconds = time.perf_counter() - start
warmup_seconds = 0.0
if warmup_rows:
    start = time.perf_counter()
    mlflow.genai.evaluate(data=data[:warmup_rows], scorers=[context_sufficiency])
    warmup_seconds = time.perf_counter() - start

start, cpu = time.perf_counter(), time.process_time()
result = mlflow.genai.evaluate(data=data, scorers=[context_sufficiency])
seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu  # CPU: all threads
ok, failed = scored(result)
settings = {k: v for k, v in sorted(os.environ.items())
            if k.startswith(("MLFLOW_", "LITELLM_")) or k in ("OPENAI_API_BASE", "OPENAI_BASE_URL")}
print(json.dumps({"rows": len(data), "seconds": seconds, "cpu_seconds": cpu_seconds, "ok": ok, "failed": failed,
                  "warmup_rows": min(warmup_rows, len(data)), "warmup_seconds": warmup_seconds,
                  "import_seconds": import_seconds, "setup_seconds": setup_seconds,
                  "metrics": dict(result.metrics), "settings": settings}))

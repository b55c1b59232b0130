"""Runs inside the separate MLflow environment (bench/_work/mlflow-venv): scores the rows with
MLflow's `is_context_sufficient` judge through `mlflow.genai.evaluate`, whose parallelism is
MLflow's documented setting MLFLOW_GENAI_EVAL_MAX_WORKERS. Prints one JSON line."""

from __future__ import annotations

import json
import sys
import time

rows_path, model = sys.argv[1], sys.argv[2]

import mlflow  # noqa: E402
from mlflow.genai.judges import is_context_sufficient  # noqa: E402
from mlflow.genai.scorers import scorer  # noqa: E402


@scorer
def context_sufficiency(inputs, outputs, expectations):
    return is_context_sufficient(
        request=inputs["query"],
        context=outputs["retrieved_context"],
        expected_facts=expectations.get("expected_facts"),
        expected_response=expectations.get("expected_response"),
        model=model,
    )


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
result = mlflow.genai.evaluate(data=data, scorers=[context_sufficiency])
seconds = time.perf_counter() - start
print(json.dumps({"rows": len(data), "seconds": seconds, "metrics": {k: v for k, v in result.metrics.items()}}))

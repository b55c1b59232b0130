"""Write sample_data/mlflow_traces.jsonl: the traces of MLflow's own RetrievalSufficiency
example (docs/from-mlflow.md), made the reference's way in a throw-away SQLite store and
exported as MLflow serialises them (one ``Trace.to_json()`` per line). Needs the [mlflow] extra.

    python scripts/mlflow_sample_traces.py
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    import mlflow

    page = (ROOT / "docs" / "from-mlflow.md").read_text(encoding="utf-8")
    app = re.findall(r"<!-- runnable -->\s*```python\n(.*?)```", page, re.S)[0]  # the app and its dataset, as the page has them
    namespace: dict = {}
    exec(compile(app, "docs/from-mlflow.md", "exec"), namespace)  # noqa: S102
    with tempfile.TemporaryDirectory() as folder:
        mlflow.set_tracking_uri(f"sqlite:///{folder}/mlflow.db")
        mlflow.set_experiment("rag-app")
        lines = []
        for item in namespace["eval_dataset"]:
            namespace["rag_app"](**item["inputs"])
            trace_id = mlflow.get_last_active_trace_id()
            for name, value in item["expectations"].items():
                mlflow.log_expectation(trace_id=trace_id, name=name, value=value)
            lines.append(mlflow.get_trace(trace_id).to_json())
    out = ROOT / "sample_data" / "mlflow_traces.jsonl"
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"wrote {out} ({len(lines)} traces)")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Figure 6: make MLflow's separate environment once, then run the side-by-side benchmark.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-../.venv/bin/python}"
VENV=_work/mlflow-venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import mlflow.genai" 2>/dev/null; then
  mkdir -p _work
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "mlflow==3.17.2" "litellm==1.108.14"
fi
"$PY" mlflow_side_by_side.py "$@"

#!/usr/bin/env bash
# `make bench`: every benchmark figure, one after the other. They print; they do not assert.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-../.venv/bin/python}"
"$PY" startup.py
"$PY" throughput.py
"$PY" client_cpu.py --warm
"$PY" transport_cpu.py
"$PY" scale.py
"$PY" instruction_removal.py
"$PY" warm_floor.py
"$PY" ray_scale.py
"$PY" corrected_rates.py
"$PY" batch.py --rows 1000
"$PY" decisions.py
"$PY" embedded.py
bash mlflow_side_by_side.sh --rows 5000 --timeout 1200
"$PY" mlflow_traces.py --traces 200

#!/usr/bin/env bash
# Reproduce the README's judge-quality figures with the embedded judge (slow on a CPU:
# about 10 s a row on 2 cores). Extra arguments go to agreement.py (e.g. --rows 60).
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-../.venv/bin/python}"
"$PY" agreement.py "$@"

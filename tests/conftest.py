"""Shared fixtures: a local fake OpenAI-compatible judge server, an isolated cache folder,
and ``run_cli`` which runs ``ragjudge`` in-process and returns (exit code, stdout, stderr);
for the unit tier (tests/unit/), ``judge`` (the in-process fake transport, no sockets) and
``run_score``, which makes ``ragjudge score``'s run through the library against it.
No test reaches the network."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# property tests draw the same examples on every run (a CI run must not find a new one by chance:
# it did, a float that JSON Lines rounded); hypothesis's own database is not written either
hypothesis_settings.register_profile("ragjudge", derandomize=True, database=None)
hypothesis_settings.load_profile("ragjudge")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
SHARED_DATA = Path(os.environ.get("RAGJUDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


IN_PROCESS_WHERE = ("not in-process: mark the test or its module integration (pytestmark = pytest.mark.integration  # why; "
                    "tests/tiers.py, CONTRIBUTING.md, Tests)")


def pytest_collection_modifyitems(config, items):
    """Every test that takes a fixture of ``tiers.INTEGRATION_FIXTURES`` (run_cli, server,
    transport, phoenix) or needs MLflow (``helpers.needs_mlflow``) is an ``integration`` test:
    ``make check`` leaves it out."""
    from tiers import INTEGRATION_FIXTURES, MLFLOW_MISSING

    for item in items:
        mlflow = any(mark.kwargs.get("reason") == MLFLOW_MISSING for mark in item.iter_markers("skipif"))  # helpers.needs_mlflow
        if (mlflow or INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ()))) and not item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _fonts_read_once():
    from tiers import read_fonts_once

    read_fonts_once()


@pytest.fixture(autouse=True)
def _in_process_tier_guard(request, monkeypatch):
    """A test of the in-process tier (not marked integration, slow or local_model; tests/unit/ has
    its own guard) runs no command, opens no network socket and starts no process (tests/tiers.py)."""
    node = request.node
    if ROOT / "tests" / "unit" in Path(str(node.fspath)).parents or any(
            node.get_closest_marker(name) for name in ("integration", "slow", "local_model")):
        return
    from tiers import guard

    guard(monkeypatch, IN_PROCESS_WHERE)


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    for name in list(os.environ):  # an endpoint from the environment is part of the cache key
        if name.endswith(("_API_BASE", "_BASE_URL")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("ragjudge.model.retry.BACKOFF_INITIAL_S", 0.01)
    monkeypatch.setattr("ragjudge.model.retry.BACKOFF_MAX_S", 0.05)


@pytest.fixture
def server():
    from ragjudge.fakeserver import FakeJudgeServer

    with FakeJudgeServer() as fake:
        yield fake


@pytest.fixture
def cache_dir(tmp_path):
    return str(tmp_path / "cache")


@pytest.fixture(params=["auto", "litellm"])
def transport(request):
    """Both transports: a test that takes this fixture runs once over ragjudge's aiohttp
    client (``auto``) and once through litellm; ``run_cli`` passes it as ``--transport``.
    For tests of how a provider behaves (statuses, headers, bodies, usage); a test of a
    decision runs once, in the unit tier."""
    return request.param


@pytest.fixture
def run_cli(request, capsys, monkeypatch, cache_dir):
    """run_cli(args, stdin=None, judge=True) -> CliResult. With judge=True the fake server's
    URL, a fake model name and the test cache folder are added (and ``--transport`` when the
    test takes the ``transport`` fixture)."""
    chosen = request.getfixturevalue("transport") if "transport" in request.fixturenames else None

    def run(args: list[str], stdin: bytes | None = None, judge: bool = True) -> CliResult:
        from ragjudge.cli import main

        argv = ["ragjudge", *args]
        server = request.getfixturevalue("server") if judge and args and args[0] == "score" else None  # started when a run needs it
        if chosen and args and args[0] == "score":
            argv += ["--transport", chosen]
        if judge and args and args[0] == "score":
            argv += ["--api-base", server.url, "--cache-dir", cache_dir]
            if "--model" not in args:
                argv += ["--model", "openai/fake-judge"]
        monkeypatch.setattr(sys, "argv", argv)
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        capsys.readouterr()
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run


@pytest.fixture
def judge():
    """The unit tier's judge: ``ragjudge.transports.fake.FakeTransport``, in-process (no
    sockets), with the ``server`` fixture's knobs (``replies``, ``errors``, ``p_yes``,
    ``p_true``, ``p_scores``, ``truncate``, ``usage``) and records (``calls``, ``requests``)."""
    from ragjudge.transports.fake import FakeTransport

    return FakeTransport()


@dataclass
class UnitRun:
    """A run through the library as ``ragjudge score`` makes it, less Typer and the terminal:
    ``code`` the exit code the command would return, ``result`` the ``RunResult`` (None when
    the options or input were refused; a dry run's estimate dict), ``gate`` the final gate (regression gates joined),
    ``notes`` the notes the command prints, ``lines`` the gate's printed lines, ``error`` the
    one line of a refused run."""

    code: int
    result: object = None
    gate: object = None
    notes: list = None
    lines: list = None
    error: str = ""

    @property
    def text(self) -> str:
        """The notes, the gate's lines and the refusal, one a line: what the command prints from them."""
        return "\n".join([*(self.notes or []), *(self.lines or []), *([self.error] if self.error else [])])


@pytest.fixture
def run_score(judge, cache_dir):
    """run_score(source, **options) -> UnitRun: ``ragjudge score SOURCE`` as the command runs it
    (``options.load_layers``, ``run.request_of``, ``run.run``: the one function behind the
    command, ``evaluate``, the dry run and Ray) against the in-process ``judge``. ``options`` are
    the command's parameters by name (``metric=["sufficiency"]``, ``min_pass_rate=["0"]``,
    ``config=path``, ``set_=[...]``, ``output``, ``summary_json``, ``junit``, ``markdown``,
    ``html``, ``baseline``, ``max_regressions``, ``max_drop``, ``limit``, ``sample``, ``seed``,
    ``samples``, ``no_cache``...; ``step_summary=False`` for ``--no-step-summary``); the model
    defaults to openai/fake-judge and the cache folder to the test's, as ``run_cli`` adds them."""

    def run(source: str, **given) -> UnitRun:
        from ragjudge import options
        from ragjudge.errors import RagjudgeError
        from ragjudge.reports.gate_text import lines_of
        from ragjudge.run import request_of
        from ragjudge.run import run as run_request
        from ragjudge.transports import resolve_model

        given.setdefault("model", "openai/fake-judge")
        given.setdefault("cache_dir", cache_dir)
        given["no_step_summary"] = not given.pop("step_summary", True)
        try:
            loaded = options.load_layers(given.get("config"), given, given.get("set_", ()))
            judge.provider_model = resolve_model(loaded.config.judge)
            request = request_of({**given, "input": source}, flag_fields=loaded.mapped)
            outcome = run_request(request, loaded.config, transport=judge)
        except RagjudgeError as exc:
            return UnitRun(exc.exit_code, notes=[], lines=[], error=str(exc))
        if outcome.result is None:  # a dry run: ``result`` is its estimate, ``lines`` what it prints
            from ragjudge.run.estimate import render

            return UnitRun(outcome.exit_code, outcome.estimate, notes=list(outcome.estimate["notes"]), lines=render(outcome.estimate))
        done = outcome.finished
        return UnitRun(outcome.exit_code, outcome.result, done.gate, list(outcome.result.notes), [*done.comparison_lines, *lines_of(done.gate)])

    return run


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_jsonl(path, rows) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return str(path)


def shared_missing(name: str) -> str:
    """Why a test that reads the shared data file ``name`` is skipped (pytest's ``-rs``, on in
    pyproject.toml's addopts, prints it in the summary): the file it looked for and where the
    folder comes from."""
    return (f"shared data not present: {SHARED_DATA / name} (the folder RAGJUDGE_SHARED_DATA names, else shared/data beside "
            "the checkout; not part of the repository)")


def shared_file(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.exists():
        raise pytest.skip.Exception(shared_missing(name), _use_item_location=True)  # -rs names the test, not this line
    return path


# -- OpenTelemetry spans and a real Phoenix server (tests/test_traces_otel.py, test_traces_otel_cli.py) ----------

PHOENIX_VENV = Path(os.environ.get("RAGJUDGE_PHOENIX_VENV", ROOT / ".venv-phoenix"))


@pytest.fixture(scope="module")
def spans():
    from helpers import make_spans

    return make_spans()


@pytest.fixture
def otlp_file(tmp_path, spans):
    from helpers import otlp_json_lines

    path = tmp_path / "traces.json"
    path.write_text(otlp_json_lines(spans, per_line=2))
    return path


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    """A Phoenix server (arize-phoenix from .venv-phoenix) on loopback, SQLite in a temporary
    folder; yields its base URL."""
    from helpers import free_port as _free_port
    from ragjudge.traces import otel

    server = PHOENIX_VENV / "bin" / "phoenix"
    if not server.exists():
        message = f"no Phoenix server venv at {PHOENIX_VENV}: make it with scripts/phoenix_server.sh (make install-phoenix)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    pytest.importorskip("phoenix.client")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env.update(PHOENIX_WORKING_DIR=str(work), PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(grpc),
               PHOENIX_HOST="127.0.0.1", PHOENIX_TELEMETRY_ENABLED="false")
    log = open(work / "server.log", "wb")
    process = subprocess.Popen([str(server), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while otel.probe(url, timeout=1) is not None:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not start: {(work / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="module")
def in_phoenix(phoenix, spans):
    """The fixture spans sent to the server with OpenTelemetry's OTLP/HTTP exporter; returns
    the span DataFrame Phoenix gives back."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from phoenix.client import Client

    exporter = OTLPSpanExporter(endpoint=phoenix + "/v1/traces")
    assert exporter.export(spans).name == "SUCCESS"
    client = Client(base_url=phoenix)
    deadline = time.monotonic() + 30
    while True:  # Phoenix inserts spans in the background
        frame = client.spans.get_spans_dataframe(project_identifier="default")
        if len(frame) >= len(spans) or time.monotonic() > deadline:
            return frame
        time.sleep(0.5)

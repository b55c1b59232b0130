"""ragjudge beside the versions its ranges allow (issue 60 item 11): a retried call on the tenacity
Phoenix's server keeps, and the check that `make unit-lowest` installs every direct dependency at its
declared lower bound (scripts/lower_bounds.py). The unit tier itself runs there (make unit-lowest)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from packaging.version import Version

from conftest import PHOENIX_VENV, ROOT, write_jsonl

pytestmark = pytest.mark.integration  # pip and uv in processes

BESIDE_PHOENIX = """
import importlib.metadata, json
import tenacity
from ragjudge import _loop, load_config, model as m
from ragjudge.model import retry
from ragjudge.transports import base
from ragjudge.transports.base import TransportError
from ragjudge.transports.fake import FakeTransport
from ragjudge.types import Call, Verdict

retry.BACKOFF_INITIAL_S, retry.BACKOFF_MAX_S = 0.01, 0.05
fake = FakeTransport()
fake.errors.extend([TransportError(base.RATE_LIMIT, "HTTP 429", 0.0, 429), TransportError(base.SERVER, "HTTP 500", 0.0, 500),
                    TransportError(base.TIMEOUT, "timed out", 0.0, None)])
fake.replies.append('{"verdict": "yes"}')
model = m.Model(load_config(None, {"judge": {"model": "openai/fake-judge"}}).judge, None, fake)
call = Call(metric="m", version="v", mode=None, messages=[{"role": "user", "content": "q"}], response_format=None)
verdict = _loop.run(model.call(call, lambda reply, _: Verdict(metric="m", status="ok", score=1.0)))
_loop.run(model.aclose())
print(json.dumps({"tenacity": importlib.metadata.version("tenacity"), "from": tenacity.__file__, "status": verdict.status,
                  "score": verdict.score, "calls": verdict.usage.calls, "retries": verdict.usage.retries}))
"""


@pytest.mark.slow
def test_a_retried_call_on_phoenixs_tenacity_gets_its_verdict(tmp_path):
    """Issue 60 item 11: arize-phoenix keeps tenacity 9.1.4, where ``wait_exponential_jitter`` has no
    ``multiplier=``: every 429, 500 or timeout retried through tenacity became a row error. With the
    tenacity of Phoenix's own server environment (.venv-phoenix, first on the path) a call that met a
    429, a 500 and a timeout is an ok verdict of score 1, four calls, three retries."""
    site = next((PHOENIX_VENV / "lib").glob("python3*/site-packages"), None)
    found = sorted(site.glob("tenacity-*.dist-info")) if site else []
    if not found:
        message = f"no Phoenix server venv at {PHOENIX_VENV}: make it with scripts/phoenix_server.sh (make install-phoenix)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    first = tmp_path / "phoenix-tenacity"
    first.mkdir()
    for item in (site / "tenacity", found[-1]):  # the package and its metadata, nothing else of Phoenix's
        (first / item.name).symlink_to(item)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(first), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", BESIDE_PHOENIX], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["from"].startswith(str(first)) and result["tenacity"] == found[-1].name.removeprefix("tenacity-").removesuffix(".dist-info")
    assert Version(result["tenacity"]) < Version("9.2")  # one without multiplier=, as Phoenix's
    assert (result["status"], result["score"], result["calls"], result["retries"]) == ("ok", 1.0, 4, 3)


def _lower_bounds():
    spec = importlib.util.spec_from_file_location("lower_bounds", ROOT / "scripts" / "lower_bounds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lower_bound_check_names_a_bound_installed_above_and_passes_one_installed_at_it():
    """A requirement whose installed version is above its lower bound is one no test ran at its bound
    (pydantic>=2.6 where litellm needs 2.11 installed 2.11.0): named with both versions; one at its
    bound passes; a requirement with no lower bound or not installed is refused, not passed."""
    from importlib.metadata import version

    check = _lower_bounds().check
    pytest_version = version("pytest")
    at, above, broken = check([f"pytest>={pytest_version},<99", "pytest>=1.0,<99", "pytest<99", "no-such-package-ragjudge>=1",
                               "pytest>=1.0; sys_platform == 'nonesuch'"])
    assert at == [f"pytest {pytest_version}"]
    assert above == [f"pytest: {pytest_version} installed, 1.0 declared ('pytest>=1.0,<99')"]
    assert broken == ["pytest: no lower bound in 'pytest<99'", "no-such-package-ragjudge: not installed"]


def test_the_lowest_install_takes_pyprojects_own_test_tools():
    """`make unit-lowest` installs the test extra's pytest, hypothesis and markdown-it-py (the unit tier
    reads the Markdown summary with it) at their bounds, as pyproject
    declares them (not its lint tools: import-linter's rich>=14.2 would hold up the core's rich>=13)."""
    import tomllib

    printed = subprocess.run([sys.executable, str(ROOT / "scripts" / "lower_bounds.py"), "--print"], capture_output=True, text=True, check=True)
    test = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert printed.stdout.split() == [text for text in test if text.startswith(("pytest>", "hypothesis>", "markdown-it-py>"))]


def test_a_command_runs_and_only_version_prints_the_version(run_cli, tmp_path):
    """Issue 60 item 11: typer 0.12 beside click 8.5.1 (both inside the old ranges) ran ``--version``'s
    callback for every command: ``ragjudge score`` printed 'ragjudge 0.1.0', judged nothing, wrote
    nothing and exited 0. typer>=0.16 (make unit-lowest runs this file at 0.16.0): two rows scored ok
    and written, the version only when asked, ``score --help`` listing its options."""
    rows = [{"id": f"r{i}", "request": "Where is the tower?", "context": ["The tower is in Paris."]} for i in (1, 2)]
    source, out = write_jsonl(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"
    result = run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert result.code == 0 and "ragjudge 0.1.0" not in result.stdout, result.stdout + result.stderr
    assert [(row["id"], row["sufficiency_status"]) for row in map(json.loads, out.read_text().splitlines())] == [("r1", "ok"), ("r2", "ok")]
    assert run_cli(["--version"], judge=False).stdout.strip() == "ragjudge 0.1.0"
    shown = run_cli(["score", "--help"], judge=False)
    assert shown.code == 0 and "--model" in shown.stdout and "--min-pass-rate" in shown.stdout

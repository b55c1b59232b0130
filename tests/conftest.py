"""Shared fixtures: a local fake OpenAI-compatible judge server, an isolated cache folder,
and ``run_cli`` which runs ``ragjudge`` in-process and returns (exit code, stdout, stderr).
No test reaches the network."""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
SHARED_DATA = Path(os.environ.get("RAGJUDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


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
    monkeypatch.setattr("ragjudge.model.BACKOFF_INITIAL_S", 0.01)
    monkeypatch.setattr("ragjudge.model.BACKOFF_MAX_S", 0.05)


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
    client (``auto``) and once through litellm; ``run_cli`` passes it as ``--transport``."""
    return request.param


@pytest.fixture
def run_cli(request, capsys, monkeypatch, server, cache_dir):
    """run_cli(args, stdin=None, judge=True) -> CliResult. With judge=True the fake server's
    URL, a fake model name and the test cache folder are added (and ``--transport`` when the
    test takes the ``transport`` fixture)."""
    chosen = request.getfixturevalue("transport") if "transport" in request.fixturenames else None

    def run(args: list[str], stdin: bytes | None = None, judge: bool = True) -> CliResult:
        from ragjudge.cli import main

        argv = ["ragjudge", *args]
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


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_jsonl(path, rows) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return str(path)


def shared_file(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    return path

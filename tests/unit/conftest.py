"""The unit tier's guard: a test here runs in-process and in well under a second, so it never
runs a command through Typer or Click (``run_cli``, ``CliRunner``, ``ragjudge.cli.main``), opens
a network socket (the fake server, Phoenix, GitHub's fake) or starts a process (``subprocess``,
``os.system``), nor is it marked ``slow``. Each of these fails the test, naming what it did and
where such a test goes: ``tests/`` (tests/tiers.py; CONTRIBUTING.md, Tests)."""

from __future__ import annotations

import pytest

from tiers import TierError, guard, read_fonts_once

WHERE = "not in the unit tier: move this test to tests/ (CONTRIBUTING.md, Tests)"


@pytest.fixture(scope="session", autouse=True)
def _fonts_read_once():
    read_fonts_once()


@pytest.fixture(autouse=True)
def _unit_tier_guard(request, monkeypatch):
    if request.node.get_closest_marker("slow"):
        raise TierError(f"a test marked slow: {WHERE}")
    guard(monkeypatch, WHERE)

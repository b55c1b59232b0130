"""The unit tier's guard: a test here runs in-process and in well under a second, so it never
runs a command through Typer or Click (``run_cli``, ``CliRunner``, ``ragjudge.cli.main``), opens
a network socket (the fake server, Phoenix, GitHub's fake) or starts a process (``subprocess``,
``os.system``), nor is it marked ``slow``. Each of these fails the test, naming what it did and where such a test goes:
``tests/`` (see CONTRIBUTING.md, Tests). The guard is an autouse fixture, so it holds for a
test's own fixtures too; asyncio's own socket pair (AF_UNIX) is allowed."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

WHERE = "not in the unit tier: move this test to tests/ (CONTRIBUTING.md, Tests)"
NETWORK = (socket.AF_INET, socket.AF_INET6)


class TierError(AssertionError):
    """A unit test did what the unit tier leaves to tests/: a command, a socket, a process."""


def _refuse(what: str):
    def refused(*args, **kwargs):
        raise TierError(f"{what}: {WHERE}")

    return refused


def _commands():
    """(class, method) pairs through which a command runs: Typer's app, its commands (Typer
    vendors Click as typer._click), Click's own, and both CliRunners."""
    import typer.core
    import typer.main
    import typer.testing
    from typer import _click

    found = [(typer.main.Typer, "__call__"), (typer.core.TyperCommand, "main"), (typer.core.TyperGroup, "main"),
             (_click.core.Command, "main"), (typer.testing.CliRunner, "invoke")]
    try:
        import click.testing
    except ImportError:
        return found
    return [*found, (click.core.Command, "main"), (click.testing.CliRunner, "invoke")]


@pytest.fixture(scope="session", autouse=True)
def _fonts_read_once():
    """matplotlib (the HTML report's charts) lists the system's fonts with ``fc-list`` the first
    time it is imported in a process where its cache folder is new, and each test has its own
    (XDG_CACHE_HOME, tests/conftest.py): import it here, before the guard, with the user's cache."""
    try:
        import matplotlib.font_manager  # noqa: F401
    except ImportError:
        pass


@pytest.fixture(autouse=True)
def _unit_tier_guard(request, monkeypatch):
    if request.node.get_closest_marker("slow"):
        raise TierError(f"a test marked slow: {WHERE}")
    for owner, method in _commands():
        monkeypatch.setattr(owner, method, _refuse("a command run through Typer/Click (run_cli, CliRunner)"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("a subprocess started"))
    monkeypatch.setattr(os, "system", _refuse("a process started with os.system"))

    for method in ("connect", "connect_ex", "bind"):
        original = getattr(socket.socket, method)

        def guarded(self, *args, _original=original, _method=method, **kwargs):
            if self.family in NETWORK:
                raise TierError(f"a network socket ({_method} {args[0] if args else ''}): {WHERE}")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(socket.socket, method, guarded)

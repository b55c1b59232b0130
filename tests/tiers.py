"""The test tiers and their guard (CONTRIBUTING.md, Tests).

- ``tests/unit/``: in-process and fast (the whole tier under 30 s on 2 cores); no test marked slow.
- the in-process tier: every other test not marked ``integration``, ``slow`` or ``local_model``.
  ``make check`` runs these two after lint.
- ``integration``: a test that runs ragjudge's command through Typer (``run_cli``), starts a
  server (the fake judge, Phoenix, GitHub's fake), a process, a browser, Ray or MLflow. Set by
  hand (``pytestmark = pytest.mark.integration  # why``), and by ``tests/conftest.py`` on every
  test that takes one of ``INTEGRATION_FIXTURES`` or needs MLflow (``helpers.needs_mlflow``). ``make test`` (CI) runs every tier.

``guard`` holds the first two tiers to their word: a command run through Typer or Click, a
network socket (connect, bind) or a process started (``subprocess``, ``os.system``) fails the
test with ``TierError``, naming what it did. asyncio's own socket pair (AF_UNIX) is allowed."""

from __future__ import annotations

import os
import socket
import subprocess

INTEGRATION_FIXTURES = frozenset({"run_cli", "server", "transport", "phoenix"})
MLFLOW_MISSING = "the [mlflow] extra is not installed"  # the reason of helpers.needs_mlflow: such a test is integration
NETWORK = (socket.AF_INET, socket.AF_INET6)


class TierError(AssertionError):
    """A test of an in-process tier did what only ``integration`` tests do: a command, a socket, a process."""


def _commands() -> list[tuple[type, str]]:
    """(class, method) pairs through which a command runs: Typer's app and its commands, the Click
    they run on (newer Typers vendor it as typer._click; older ones run on Click itself), and
    both CliRunners."""
    import typer.core
    import typer.main
    import typer.testing

    found = [(typer.main.Typer, "__call__"), (typer.core.TyperCommand, "main"), (typer.core.TyperGroup, "main"),
             (typer.testing.CliRunner, "invoke")]
    try:
        from typer import _click
    except ImportError:  # a Typer that runs on Click itself (make unit-lowest)
        pass
    else:
        found.append((_click.core.Command, "main"))
    try:
        import click.testing
    except ImportError:
        return found
    return [*found, (click.core.Command, "main"), (click.testing.CliRunner, "invoke")]


def guard(monkeypatch, where: str) -> None:
    """Make a command, a network socket or a process fail the running test with ``TierError``
    ("what it did: ``where``"); ``monkeypatch`` undoes it after the test."""

    def refuse(what: str):
        def refused(*args, **kwargs):
            raise TierError(f"{what}: {where}")

        return refused

    for owner, method in _commands():
        monkeypatch.setattr(owner, method, refuse("a command run through Typer/Click (run_cli, CliRunner)"))
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("a subprocess started"))
    monkeypatch.setattr(os, "system", refuse("a process started with os.system"))
    for method in ("connect", "connect_ex", "bind"):
        original = getattr(socket.socket, method)

        def guarded(self, *args, _original=original, _method=method, **kwargs):
            if self.family in NETWORK:
                raise TierError(f"a network socket ({_method} {args[0] if args else ''}): {where}")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(socket.socket, method, guarded)


def read_fonts_once() -> None:
    """matplotlib (the HTML report's charts) lists the system's fonts with ``fc-list`` the first
    time it is imported in a process whose cache folder is new, and each test has its own
    (XDG_CACHE_HOME, tests/conftest.py): import it before any guard, with the user's cache."""
    try:
        import matplotlib.font_manager  # noqa: F401
    except ImportError:
        pass

"""`import ragjudge` and `ragjudge --help` stay light: no litellm, no pandas."""

from __future__ import annotations

import subprocess
import sys


def test_import_and_help_do_not_import_litellm_or_pandas():
    code = (
        "import sys, ragjudge, ragjudge.cli\n"
        "from typer.testing import CliRunner\n"
        "r = CliRunner().invoke(ragjudge.cli.app, ['score', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = [m for m in ('litellm', 'pandas', 'pyarrow') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_python_m_ragjudge_works():
    result = subprocess.run([sys.executable, "-m", "ragjudge", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "score" in result.stdout


def test_help_shows_no_value_placeholder_on_flags():
    # typer 0.29 printed "--quiet <bool>", as if the flag took a value; pinned below it
    env = {"COLUMNS": "120", "PATH": "/usr/bin:/bin", "TERM": "dumb"}
    for command in (["--help"], ["score", "--help"], ["cache", "info", "--help"]):
        result = subprocess.run([sys.executable, "-m", "ragjudge", *command], capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr
        assert "--help" in result.stdout and "<bool>" not in result.stdout
    score = subprocess.run([sys.executable, "-m", "ragjudge", "score", "--help"], capture_output=True, text=True, env=env).stdout
    assert "--quiet" in score and "--no-cache" in score

"""`import ragjudge` and `ragjudge --help` stay light: no litellm, no pandas; a dry run counts tokens without importing litellm."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLE


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


# new user's first hour (issue 44 item 13): a dry run that took 8.9 s where the run took 3.5 s (it imported litellm to count tokens)
@pytest.mark.slow  # a ragjudge process, timed against a run
def test_a_dry_run_of_an_openai_model_counts_tokens_without_importing_litellm(tmp_path):
    code = ("import sys\nfrom ragjudge.cli import main\n"
            f"sys.argv = ['ragjudge', 'score', {str(SAMPLE / 'rag_eval.jsonl')!r}, '--model', 'openai/gpt-4o-mini', '--dry-run', '-q', "
            f"'--cache-dir', {str(tmp_path / 'c')!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    print('exit', exc.code)\n"
            "print('litellm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-2:] == ["exit 0", "False"], done.stdout + done.stderr
    assert "(counted with the model's tokenizer)" in done.stderr

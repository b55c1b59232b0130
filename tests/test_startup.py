"""`import ragjudge` and `ragjudge --help` stay light: no litellm, no pandas; a dry run counts tokens without importing litellm."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT, SAMPLE
from helpers import HEAVY_OF

pytestmark = pytest.mark.integration  # fresh Python processes: what an import loads


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


def test_a_run_of_a_built_in_metric_parses_no_yaml_and_loads_no_json_repair(tmp_path, server):
    """YAML (the bundled definitions) and json-repair (damaged replies only) cost a small run
    ~40 ms of start-up; a clean run of sufficiency needs neither. A config file or a damaged
    reply still loads them (the config tests and the parser tests cover those)."""
    import subprocess
    import sys

    from conftest import ROOT, write_jsonl

    source = write_jsonl(tmp_path / "in.jsonl", [{"request": "When was it built?", "context": ["It was built in 1889."]}])
    code = ("import sys\nfrom ragjudge.cli import main\n"
            f"sys.argv = ['ragjudge', 'score', {str(source)!r}, '-m', 'sufficiency', '--model', 'openai/fake', '--api-base', "
            f"{server.url!r}, '-q', '--min-pass-rate', '0', '-o', {str(tmp_path / 'out.csv')!r}, '--cache-dir', {str(tmp_path / 'c')!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    print('exit', exc.code)\n"
            "print('loaded', sorted(m for m in ('yaml', 'json_repair') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "OPENAI_API_KEY": "sk-test"})
    assert done.stdout.splitlines()[-2:] == ["exit 0", "loaded []"], done.stdout + done.stderr
    assert (tmp_path / "out.csv").read_text().count("\n") == 2  # the header and the one row: it was judged




LIGHT_IO = ("ragjudge.io", "ragjudge.io.formats", "ragjudge.io.rows", "ragjudge.io.atomic", "ragjudge.io.writers")


@pytest.mark.parametrize("module, heavy", list(HEAVY_OF.items()))
def test_each_module_imported_late_loads_a_heavy_library(module, heavy):
    # the exemption holds only while the module is heavy: were it light, it belongs at the top
    pytest.importorskip(heavy)  # make test also runs where the [mlflow] extra is not installed (unit-newest)
    code = f"import sys, {module}\nprint({heavy!r} in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "True", f"{module} does not load {heavy}: import it at the top where it is used"


@pytest.mark.parametrize("module", LIGHT_IO)
def test_the_modules_a_json_lines_run_reads_its_first_rows_with_load_no_pandas(module):
    # the local engine plans and judges a JSON Lines file's first rows before pandas is imported
    # (issue 51): the package and these modules must not import it
    code = f"import sys, {module}\nprint(sorted(m for m in ('pandas', 'numpy', 'pyarrow') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"{module} loads {loaded}"

"""The documentation says what the code does: generated pages match their source."""

import re
from pathlib import Path

import pytest
import yaml

from ragjudge import Config, configdoc, load_config

ROOT = Path(__file__).resolve().parent.parent


def test_default_yaml_is_generated_from_the_settings():
    path = ROOT / "ragjudge" / "configs" / "default.yaml"
    assert path.read_text(encoding="utf-8") == configdoc.default_yaml(), "run: python scripts/gen_docs.py"


def test_default_yaml_loads_to_the_defaults():
    path = ROOT / "ragjudge" / "configs" / "default.yaml"
    assert load_config(path) == Config()
    assert set(yaml.safe_load(path.read_text())) == set(Config.model_fields)


def test_configuration_page_is_generated_from_the_settings():
    path = ROOT / "docs" / "configuration.md"
    text = path.read_text(encoding="utf-8")
    assert text == configdoc.markdown(), "run: python scripts/gen_docs.py"
    for name, model, _ in configdoc.SECTIONS:
        if model is not None:
            for key in model.model_fields:
                assert f"`{name}.{key}`" in text
                for sub in configdoc._entries(model.model_fields[key].annotation):  # a list of settings: each entry's keys (judge.panel)
                    assert f"`{name}.{key}[].{sub}`" in text


# -- every command and option is documented, and its --help shows an example -------------

DOC_FILES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def _commands():
    """(path words, click command) for every leaf command of the CLI."""
    import typer

    from ragjudge.cli import app

    def walk(command, path):
        if hasattr(command, "commands"):  # a group
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])
        else:
            yield path, command

    found = list(walk(typer.main.get_command(app), []))
    assert len(found) >= 9 and ["score"] in [path for path, _ in found]
    return found


def test_the_readme_fits_on_a_screen():
    # issue 46: at most 120 lines (what it is, install, a first run, exit codes, Python, CI, links); figures live in docs/
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 120


def test_every_command_and_option_is_in_the_docs():
    text = "\n".join(path.read_text(encoding="utf-8") for path in DOC_FILES)
    missing = []
    for path, command in _commands():
        if f"ragjudge {' '.join(path)}" not in text:
            missing.append(f"ragjudge {' '.join(path)}")
        for param in command.params:
            for option in param.opts:
                if option.startswith("--") and option != "--help" and option not in text:
                    missing.append(f"ragjudge {' '.join(path)} {option}")
    assert missing == []


@pytest.mark.integration  # the command's --help through Typer
def test_every_command_help_has_an_example():
    from typer.testing import CliRunner

    from ragjudge.cli import app

    for path, _ in _commands():
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, path
        after = result.output.split("Examples:", 1)
        assert len(after) == 2 and f"ragjudge {' '.join(path)}" in after[1], f"ragjudge {' '.join(path)} --help shows no example"


# -- shell examples that use only the sample data and the fake server run as shown --------

_EXIT = re.compile(r"#\s*exit (\d+)\b")


def _blocks(text: str):
    """(language, body, the text right after the block) for each fenced block."""
    for match in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
        yield match.group(1), match.group(2), text[match.end():]


def _shell_commands(body: str):
    """Logical lines of a shell block (continuations joined)."""
    line = ""
    for raw in body.splitlines():
        line += raw.rstrip()
        if line.endswith("\\"):
            line = line[:-1] + " "
            continue
        if line.strip():
            yield line.strip()
        line = ""


def _runs_offline(command: str) -> bool:
    """A ragjudge command that reads only the sample data (or what an earlier example of the
    page wrote) and needs no judge but the fake server: not the embedded model, not Ray."""
    return (command.startswith("ragjudge ") and "sample_data/" in command and "-c local" not in command
            and "local/" not in command and "--engine ray" not in command)


def _examples():
    found = []
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        steps = []
        for language, body, after in _blocks(text):
            if language != "sh":
                continue
            for command in _shell_commands(body):
                expected = _EXIT.search(command)
                if _runs_offline(command):
                    assert expected, f"{path.name}: give the exit code (# exit N) of: {command}"
                if command.startswith("ragjudge ") and expected:
                    shown = None
                    following = re.match(r"\s*```text\n(.*?)```", after, re.S)
                    if following and command == list(_shell_commands(body))[-1]:
                        shown = following.group(1)
                    steps.append((command.split("#", 1)[0].strip(), int(expected.group(1)), shown))
        if steps:
            found.append(pytest.param(path, steps, id=path.name))
    return found


def _lines(text: str) -> list[str]:
    """Non-blank lines, spaces collapsed; rule lines of tables left out."""
    out = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and re.search(r"[A-Za-z0-9]", line):
            out.append(line)
    return out


@pytest.mark.slow  # runs every example of the pages as a command (seconds each)
@pytest.mark.parametrize("page, steps", _examples())
def test_shell_examples_run_and_exit_as_shown(page, steps, tmp_path, server):
    import os
    import shutil
    import subprocess
    import sys

    shutil.copytree(ROOT / "sample_data", tmp_path / "sample_data")
    env = dict(os.environ, OPENAI_BASE_URL=server.url + "", OPENAI_API_KEY="sk-test-not-a-real-key", COLUMNS="80",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("GITHUB_ACTIONS", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    for command, code, shown in steps:
        result = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == code, f"{page.name}: {command}\n{result.stderr[-2000:]}"
        if shown is not None:
            got = _lines(result.stdout + result.stderr)
            assert [line for line in _lines(shown) if line not in got] == [], f"{page.name}: {command} printed\n{result.stderr}"


def test_the_readme_row_is_what_the_first_run_writes(tmp_path, server):
    # the README shows one scored row of the first run; it must be the row that run writes
    import os
    import shutil
    import subprocess
    import sys

    import pandas as pd

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- row (\d+) of scored.parquet \(counting from 1, as ragjudge names rows\): ([\w, ]+) -->\s*```text\n(.*?)```", text, re.S)
    assert match, "README: the first run's row is not marked"
    shutil.copytree(ROOT / "sample_data", tmp_path / "sample_data")
    env = dict(os.environ, OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-test-not-a-real-key")
    subprocess.run([sys.executable, "-m", "ragjudge", "score", "sample_data/rag_eval.jsonl", "-o", "scored.parquet", "-q"],
                   cwd=tmp_path, env=env, capture_output=True, check=False, timeout=120)
    row = pd.read_parquet(tmp_path / "scored.parquet").iloc[int(match.group(1)) - 1]
    columns = [c.strip() for c in match.group(2).split(",")]
    assert _lines(row[columns].to_string()) == _lines(match.group(3))


# -- the reference pages' Python examples run against the fake server (issue 27) -----------

REFERENCE_PAGES = ["from-mlflow.md", "from-azure.md", "from-axion.md"]
_RUN_MARK = "<!-- run: fake server -->"


def _python_examples():
    found = []
    for name in REFERENCE_PAGES:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        blocks = []
        for match in re.finditer(re.escape(_RUN_MARK) + r"\s*```python\n(.*?)```", text, re.S):
            shown = re.match(r"\s*```text\n(.*?)```", text[match.end():], re.S)
            blocks.append((match.group(1), shown.group(1) if shown else None))
        assert blocks, f"docs/{name}: no Python example marked {_RUN_MARK}"
        for number, (body, shown) in enumerate(blocks, 1):
            found.append(pytest.param(name, body, shown, id=f"{name}-{number}"))
    return found


def test_every_reference_page_ends_with_what_differs():
    for name in [*REFERENCE_PAGES, "from-phoenix.md"]:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        last = text.rsplit("\n## ", 1)[-1]
        # the trace sources' pages: what the system's own tool does, what ragjudge does, the setting that changes it (issue 45)
        column = "| setting |" if name in ("from-mlflow.md", "from-phoenix.md") else "| why |"
        assert last.startswith("What differs") and column in last.lower(), f"docs/{name} must end with its table of what differs ({column})"


@pytest.mark.slow  # runs every example of the pages as a command (seconds each)
@pytest.mark.parametrize("page, body, shown", _python_examples())
def test_reference_page_examples_run_as_shown(page, body, shown, tmp_path, server):
    import os
    import subprocess
    import sys

    env = dict(os.environ, OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-test-not-a-real-key", MLFLOW_DISABLE_TELEMETRY="true",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", None)  # a user's environment: set by other test modules for their own process
    if "import mlflow" in body:
        pytest.importorskip("mlflow")
    result = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{page}:\n{result.stderr[-3000:]}"
    if shown is not None:
        got = _lines(result.stdout)
        assert [line for line in _lines(shown) if line not in got] == [], f"{page} printed\n{result.stdout}"


# review of main (fixa) item 8: score --help tells the truth
@pytest.mark.integration  # the command's --help through Typer
def test_score_help_names_every_kind_of_metric_every_gate_exiting_1_and_a_real_example_file():
    import re

    from typer.testing import CliRunner

    from conftest import ROOT
    from ragjudge.cli import SCORE_EPILOG, app

    text = " ".join(re.sub("[│╭╮╰╯─]", " ", CliRunner().invoke(app, ["score", "--help"], terminal_width=400).output).split())
    assert "repeat for both" not in text and "groundedness" in text and "a judge defined in the config" in text
    assert "1 a pass-rate gate failed" not in text and "1 a gate failed (pass rate, skip rate, diagnosis share" in text
    assert "regressions, pass-rate drop" in text
    for path in re.findall(r"ragjudge score (\S+\.jsonl)", SCORE_EPILOG):
        if path not in ("data.jsonl",):
            assert (ROOT / path).is_file(), path
    assert "sample_data/rag_eval.mlflow.jsonl" in SCORE_EPILOG and "mlflow_records.jsonl" not in SCORE_EPILOG


# review of the traces pages and readers (p4-fixb) item 2: install lines: from the checkout, never the PyPI name (another project's)
def test_no_page_installs_the_pypi_name_with_an_extra():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.name}: {m.group(0)}" for p in pages for m in re.finditer(r"ragjudge\[\w+\]", p.read_text(encoding="utf-8"))]
    assert found == []
    assert 'pip install ".[mlflow]"' in (ROOT / "docs" / "from-mlflow.md").read_text(encoding="utf-8")
    assert 'pip install ".[phoenix]"' in (ROOT / "docs" / "from-phoenix.md").read_text(encoding="utf-8")


def test_contributings_map_of_the_tests_names_every_test_file_and_only_those():
    # review of main (issue 65 item 6): eight test files were missing from the map
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("### Map of the tests"):text.index("\n## ", text.index("### Map of the tests"))]
    named = set(re.findall(r"`((?:unit/)?test_\w+\.py)`", section))
    files = {path.relative_to(ROOT / "tests").as_posix() for path in (ROOT / "tests").rglob("test_*.py")}
    assert sorted(files - named) == [], "test files CONTRIBUTING.md's map of the tests does not name: add each to its subject's row"
    assert sorted(named - files) == [], "files CONTRIBUTING.md's map of the tests names that are not in tests/"


# issue 65 item 6: score --help was 285 lines at 100 columns
@pytest.mark.integration  # the command's --help through Typer
def test_score_help_shows_the_common_options_in_under_160_lines_and_help_all_every_option():
    from typer.main import get_command
    from typer.testing import CliRunner

    from ragjudge.cli import app

    command = get_command(app).commands["score"]
    options = [option for param in command.params for option in param.opts if option.startswith("--")]
    short = CliRunner().invoke(app, ["score", "--help"], env={"COLUMNS": "100"})
    full = CliRunner().invoke(app, ["score", "--help-all"], env={"COLUMNS": "100"})
    assert short.exit_code == full.exit_code == 0
    assert len(short.output.splitlines()) < 160 and "--help-all" in short.output
    left_out = [option for option in options if option not in short.output]
    assert left_out and [option for option in options if option not in full.output] == []

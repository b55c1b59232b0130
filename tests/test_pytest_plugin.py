"""The pytest plugin (issue 47, part 2), run through pytester against the loopback fake judge:
the assert helpers' pass and fail (the failure shows the verdict and rationale), a table collected
as one item per row and metric (names, outcomes, JUnit, one scoring call per table), ``-k``, the
shared cache (a second session makes no judge call), the config from ``[tool.ragjudge]`` and from
``--ragjudge-config``, and the terminal summary.

The inner sessions load the plugin with ``-p ragjudge.pytest_plugin`` and plugin autoloading off:
an installed ``pytest11`` entry point would load the same module a second time under its own
name. ``pytester`` runs them in this process and drops the modules a run imported when it ends,
so the module fixture ``_imported`` first imports all that a judged session does (numpy cannot
be imported twice in one process)."""

from __future__ import annotations

import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT
from helpers import FRANCE
import ragjudge
import ragjudge.pytest_plugin  # noqa: F401 - kept across pytester's inline runs
import ragjudge.scoring
import ragjudge.testing  # noqa: F401

pytest_plugins = ["pytester"]

ROWS = [
    # r1: the context answers the request, the response holds the ground truth: both metrics pass
    '{"id": "r1", "request": "What is the capital of France?", "context": ["Paris is the capital of France."], '
    '"expected_response": "Paris is the capital of France.", "response": "The capital of France is Paris."}',
    # r2: neither: both fail
    '{"id": "r2", "request": "What is the capital of Spain?", "context": ["Paris is the capital of France."], '
    '"expected_response": "Madrid is the capital of Spain.", "response": "I do not know."}',
    # r3: sufficient, and no response: completeness skips it
    '{"id": "r3", "request": "Where is the Eiffel Tower?", "context": ["The Eiffel Tower is in Paris."]}',
]
HELPERS = f"""
from ragjudge.testing import assert_complete, assert_sufficient

def test_sufficient():
    assert_sufficient(request="What is the capital of France?", context=["{FRANCE}"])

def test_insufficient():
    assert_sufficient(request="What is the capital of Spain?", context=["{FRANCE}"], expected_facts=["Madrid is the capital of Spain"])

def test_complete():
    assert_complete(response="The capital of France is Paris.", expected_response="{FRANCE}")

def test_incomplete():
    assert_complete(response="I do not know.", expected_response="Madrid is the capital of Spain.")
"""


@pytest.fixture(scope="module", autouse=True)
def _imported(tmp_path_factory):
    """One table read and one row judged in this process, before any inner session."""
    from ragjudge.fakeserver import FakeJudgeServer
    from ragjudge.io import read_table

    folder = tmp_path_factory.mktemp("imported")
    (folder / "t.jsonl").write_text(ROWS[0] + "\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch, FakeJudgeServer() as fake:
        patch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        ragjudge.score(read_table(str(folder / "t.jsonl")), model="openai/fake-judge", api_base=fake.url, cache={"dir": str(folder / "c")})


@pytest.fixture
def project(pytester, server, cache_dir, monkeypatch):
    """project(section="", table=True, helpers=False) writes a project: pyproject.toml with
    ``[tool.pytest.ini_options] testpaths = ["tests"]`` and ``[tool.ragjudge]`` (the fake judge,
    the test's cache folder, ``tables = ["evals/eval.jsonl"]`` with ``table``, then ``section``),
    evals/eval.jsonl (``ROWS``, outside testpaths) and tests/test_helpers.py (``HELPERS``) or an
    empty test."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def make(section: str = "", table: bool = True, helpers: bool = False) -> Path:
        tables = 'tables = ["evals/eval.jsonl"]\n' if table else ""
        pytester.makefile(".toml", pyproject=f'[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n[tool.ragjudge]\n{tables}{section}\n'
                                             f'[tool.ragjudge.judge]\nmodel = "openai/fake-judge"\napi_base = "{server.url}"\n'
                                             f'[tool.ragjudge.cache]\ndir = "{cache_dir}"\n')
        (pytester.path / "evals").mkdir(exist_ok=True)
        (pytester.path / "evals" / "eval.jsonl").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
        (pytester.path / "tests").mkdir(exist_ok=True)
        (pytester.path / "tests" / "test_helpers.py").write_text(HELPERS if helpers else "def test_nothing():\n    pass\n", encoding="utf-8")
        return pytester.path

    return make


def run(pytester, *args):
    return pytester.runpytest("-p", "ragjudge.pytest_plugin", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


@pytest.fixture
def score_calls(monkeypatch):
    """Every ``Scorer.score`` call of the inner sessions: (rows, metrics)."""
    calls = []
    original = ragjudge.scoring.Scorer.score

    def counted(self, frame, *args, **kwargs):
        calls.append((len(frame), [j.name for j in self.judges]))
        return original(self, frame, *args, **kwargs)

    monkeypatch.setattr(ragjudge.scoring.Scorer, "score", counted)
    return calls


@pytest.mark.integration  # pytest in its own process
def test_the_entry_point_loads_the_plugin_and_no_ragjudge_turns_it_off(tmp_path):
    import os
    import subprocess
    import sys

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]["pytest11"]
    assert declared == {"ragjudge": "ragjudge.pytest_plugin"}
    # the entry point as an installed ragjudge declares it (the venv's ragjudge may be installed from another checkout)
    dist = tmp_path / "site" / "ragjudge_entry_point-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ragjudge-entry-point\nVersion: 0.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()), encoding="utf-8")
    # autoloading off (the environment's other plugins are slow to load): `-p ragjudge` loads the entry point of that name, and
    # without it the plugin is not there; with autoloading on, pytest loads it under that name (`-p no:ragjudge` blocks it)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(ROOT), os.environ.get("PYTHONPATH", "")]),
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")

    def options(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pytest", *args, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    loaded = options("-p", "ragjudge")
    assert "--ragjudge=TABLE" in loaded and "--ragjudge-config=PATH" in loaded
    assert "--ragjudge" not in options()


def test_the_helpers_pass_and_fail_showing_the_verdict_and_rationale(project, pytester, server):
    project(table=False, helpers=True)
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "E *VerdictError: sufficiency failed: score 0 (passes at 0.5), passed False: Checked each fact's words against the passages.; "
        "missing: Madrid is the capital of Spain",
        "E *VerdictError: completeness failed: score 1 (passes at 3), passed False: 0% of the ground truth's statements appear "
        "in the response.; missing: Madrid is the capital of Spain.",
    ])
    assert server.calls > 0


def test_a_table_is_one_item_per_row_and_metric_scored_in_one_call(project, pytester, score_calls):
    project()
    collected = run(pytester, "--collect-only", "-q")
    assert [line for line in collected.outlines if "::" in line] == [
        "tests/test_helpers.py::test_nothing",  # testpaths first, then the tables
        "evals/eval.jsonl::r1::sufficiency", "evals/eval.jsonl::r1::completeness",
        "evals/eval.jsonl::r2::sufficiency", "evals/eval.jsonl::r2::completeness",
        "evals/eval.jsonl::r3::sufficiency", "evals/eval.jsonl::r3::completeness",
    ]
    result = run(pytester, "-rA", "--junitxml=junit.xml")
    result.assert_outcomes(passed=4, failed=2, skipped=1)
    result.stdout.fnmatch_lines_random([
        "PASSED evals/eval.jsonl::r1::sufficiency", "PASSED evals/eval.jsonl::r1::completeness",
        "PASSED evals/eval.jsonl::r3::sufficiency",
        "SKIPPED [[]1[]] evals/eval.jsonl:3: completeness skipped this row: no response",  # at the row: the table's row 3
        "FAILED evals/eval.jsonl::r2::sufficiency - sufficiency failed on r2*", "FAILED evals/eval.jsonl::r2::completeness - *",
        # the failures' own sections: the verdict, the rationale and the missing facts or statements
        "sufficiency failed on r2 (eval.jsonl row 2): score 0 (passes at 0.5), passed False: Checked each fact's words against the "
        "passages.; missing: Madrid is the capital of Spain.",
        "completeness failed on r2 (eval.jsonl row 2): score 1 (passes at 3), passed False: 0% of the ground truth's statements "
        "appear in the response.; missing: Madrid is the capital of Spain.",
    ])
    assert score_calls == [(3, ["sufficiency", "completeness"])]  # the whole table, once: not one call per item
    cases = {(case.get("classname"), case.get("name")): case for case in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    assert set(cases) == {("evals.eval.jsonl.r1", "sufficiency"), ("evals.eval.jsonl.r1", "completeness"),
                          ("evals.eval.jsonl.r2", "sufficiency"), ("evals.eval.jsonl.r2", "completeness"),
                          ("evals.eval.jsonl.r3", "sufficiency"), ("evals.eval.jsonl.r3", "completeness"),
                          ("tests.test_helpers", "test_nothing")}
    failure = cases[("evals.eval.jsonl.r2", "completeness")].find("failure")
    assert "0% of the ground truth's statements appear in the response" in failure.get("message")
    assert cases[("evals.eval.jsonl.r3", "completeness")].find("skipped") is not None


def test_k_selects_rows_and_metrics_and_only_those_are_judged(project, pytester, server, score_calls):
    project()
    result = run(pytester, "-k", "r2 and sufficiency")
    result.assert_outcomes(failed=1, deselected=6)
    assert score_calls == [(1, ["sufficiency"])]
    assert server.calls == 1
    result = run(pytester, "-m", "ragjudge", "-k", "completeness and not r2")  # every item carries the marker
    result.assert_outcomes(passed=1, skipped=1, deselected=5)


def test_a_second_session_reads_every_verdict_from_the_cache(project, pytester, server):
    project(helpers=True)
    first = run(pytester)
    first.assert_outcomes(passed=5, failed=4, skipped=1)
    made = server.calls
    assert made > 0
    second = run(pytester)
    second.assert_outcomes(passed=5, failed=4, skipped=1)
    assert server.calls == made  # no judge call: one cache for the session, on disk between sessions
    second.stdout.fnmatch_lines(["judge openai/fake-judge: 0 provider call(s), 9 verdict(s) from the cache, cost $0.0000"])


def test_the_terminal_summary_gives_pass_rates_per_metric_and_the_cost(project, pytester):
    project(helpers=True)
    result = run(pytester)
    result.stdout.fnmatch_lines([
        "=*= ragjudge =*=",
        "sufficiency: pass rate 0.60 (3 of 5 ok rows passed)",
        "completeness: pass rate 0.50 (2 of 4 ok rows passed, 1 skipped)",
        "judge openai/fake-judge: * provider call(s), 0 verdict(s) from the cache, cost unknown (no price for openai/fake-judge: set judge.price)",
    ])


def test_config_from_the_section_and_the_yaml_it_names(project, pytester):
    (pytester.path / "ragjudge.yaml").write_text("thresholds:\n  completeness: 1\n", encoding="utf-8")  # every score passes
    project('config = "ragjudge.yaml"\nmetrics = ["completeness"]\n')
    result = run(pytester, "-rA")
    result.assert_outcomes(passed=3, skipped=1)  # r2's score 1 passes at 1; no sufficiency item
    result.stdout.fnmatch_lines_random(["PASSED evals/eval.jsonl::r2::completeness"])
    result.stdout.no_fnmatch_line("*::sufficiency*")


def test_ragjudge_config_lays_its_keys_over_the_section_and_ragjudge_adds_a_table(project, pytester):
    project('metrics = ["completeness"]\n')
    (pytester.path / "ci.yaml").write_text("metrics: [sufficiency]\n", encoding="utf-8")
    (pytester.path / "other.jsonl").write_text(ROWS[0] + "\n", encoding="utf-8")
    result = run(pytester, "--ragjudge-config", "ci.yaml", "--ragjudge", "other.jsonl", "-rA")
    result.assert_outcomes(passed=4, failed=1)  # 3 + 1 sufficiency items, the empty test; no completeness
    result.stdout.fnmatch_lines_random(["PASSED other.jsonl::r1::sufficiency", "FAILED evals/eval.jsonl::r2::sufficiency*"])
    result.stdout.no_fnmatch_line("*::completeness*")
    # paths given: the section's tables are left out, --ragjudge's are not
    given = run(pytester, "tests/test_helpers.py", "--ragjudge", "other.jsonl", "-rA")
    given.assert_outcomes(passed=2)
    given.stdout.no_fnmatch_line("*evals/eval.jsonl*")


def test_a_bad_section_is_a_usage_error_naming_the_key(project, pytester):
    project('judge = {modle = "x"}\n'.replace("judge", "columns"))
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ragjudge: pyproject.toml [[]tool.ragjudge[]]: unknown key 'columns.modle'*"])


def test_a_table_that_cannot_be_read_is_a_collection_error(project, pytester):
    project()
    (pytester.path / "evals" / "eval.jsonl").write_text('{"id": "r1", "request": \n', encoding="utf-8")
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["ragjudge: *eval.jsonl: line 1: not valid JSON*"])


def test_without_config_the_plugin_judges_nothing_and_prints_nothing(pytester, monkeypatch, score_calls):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*ragjudge*")
    assert score_calls == []


def _reruns():
    """``-p pytest_rerunfailures`` (the inner sessions load no plugin by themselves), the plugin installed: a test dependency."""
    pytest.importorskip("pytest_rerunfailures", reason="pytest-rerunfailures is not installed (pip install '.[test]')")
    return ("-p", "pytest_rerunfailures")


def test_a_rerun_of_an_item_whose_judge_erred_judges_it_again(project, pytester, server):
    # issue 60 item 16: the rerun read the stored error and made no call, so `--reruns` could not retry a judge error
    project()
    server.errors.append((400, "invalid_request_error", "The model is overloaded, try again.", {}))  # not retried by the client
    result = run(pytester, *_reruns(), "--reruns", "1", "-k", "r1 and sufficiency", "-rA")
    result.assert_outcomes(passed=1, deselected=6)
    assert result.parseoutcomes()["rerun"] == 1
    result.stdout.fnmatch_lines_random(["PASSED evals/eval.jsonl::r1::sufficiency"])
    assert server.calls == 2  # the error, then the rerun's call
    # each row counts once, with its last verdict; the failed call still counts among the calls
    result.stdout.fnmatch_lines(["sufficiency: pass rate 1.00 (1 of 1 ok rows passed)",
                                 "judge openai/fake-judge: 2 provider call(s), 0 verdict(s) from the cache, *"])


def test_a_rerun_after_the_retries_ran_out_judges_the_row_again_and_junit_shows_the_last_verdict(project, pytester, server):
    # a second shape: a transient fault (429s) outlasts the client's retries (judge.max_retries, 6), so the row's verdict is an
    # error; the rerun judges it again, and the item's properties are the rerun's verdict alone
    project('metrics = ["sufficiency"]\n')
    server.errors.extend([(429, "rate_limit_exceeded", "Rate limit reached.", {"Retry-After": "0"})] * 7)
    result = run(pytester, *_reruns(), "--reruns", "2", "-k", "r1", "-rA", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, deselected=3)
    assert result.parseoutcomes()["rerun"] == 1
    assert server.calls == 7 + 1
    result.stdout.fnmatch_lines(["sufficiency: pass rate 1.00 (1 of 1 ok rows passed)",
                                 "judge openai/fake-judge: 8 provider call(s), 0 verdict(s) from the cache, *"])
    # JUnit: one case per attempt, each with its own verdict's properties (not the last attempt's added to the first's)
    attempts = [[(p.get("name"), p.get("value")) for p in case.iter("property")] for case in ET.parse(pytester.path / "junit.xml").iter("testcase")]
    assert [[name for name, _ in shown] for shown in attempts] == [["metric", "status", "score", "passed", "rationale", "cached"]] * 2
    assert [(dict(shown)["status"], dict(shown)["passed"]) for shown in attempts] == [("error", "None"), ("ok", "True")]


def test_without_a_rerun_an_errored_item_fails_and_stays_one_error(project, pytester, server):
    project('metrics = ["sufficiency"]\n')
    server.errors.append((400, "invalid_request_error", "The model is overloaded, try again.", {}))
    result = run(pytester, "-k", "r1")
    result.assert_outcomes(failed=1, deselected=3)
    assert server.calls == 1
    result.stdout.fnmatch_lines(["sufficiency: pass rate - (0 of 0 ok rows passed, 1 error(s))"])

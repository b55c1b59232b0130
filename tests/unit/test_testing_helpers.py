"""``ragjudge.testing`` without pytest's plugin (issue 47, part 2): the assert helpers against
the in-process fake judge, ``Scorer.only`` (one model, cache and limit for other metrics), the
project's config layers (``project_config``) and a table's item names. The plugin itself is
tested through pytester in tests/test_pytest_plugin.py."""

from __future__ import annotations

import pandas as pd
import pytest

from ragjudge import testing
from ragjudge.errors import ConfigError
from ragjudge.scoring import Scorer
from ragjudge.testing import VerdictError, assert_complete, assert_passes, assert_sufficient
from helpers import FRANCE


@pytest.fixture
def scorer(judge, cache_dir):
    with Scorer(judge={"model": "openai/fake-judge"}, cache={"dir": cache_dir}, transport=judge) as made:
        yield made


@pytest.fixture
def session(scorer):
    """The helpers' current session, judging with ``scorer`` (as the plugin makes one current)."""
    made = testing.Session(scorer=scorer)
    testing.activate(made)
    yield made
    testing.deactivate(made)


def test_assert_sufficient_returns_the_verdict_or_raises_with_the_rationale_and_missing_facts(session, judge):
    verdict = assert_sufficient(request="What is the capital of France?", context=[FRANCE])
    assert (verdict.status, verdict.score, verdict.passed) == ("ok", 1.0, True)
    with pytest.raises(VerdictError) as failed:
        assert_sufficient(request="What is the capital of Spain?", context=FRANCE, expected_facts=["Madrid is the capital of Spain"])
    assert isinstance(failed.value, AssertionError)
    assert str(failed.value) == ("sufficiency failed: score 0 (passes at 0.5), passed False: Checked each fact's words against the "
                                 "passages.; missing: Madrid is the capital of Spain")
    assert [v.missing for v in failed.value.verdicts] == [["Madrid is the capital of Spain"]]
    assert judge.calls == 2 and session.summary.metrics["sufficiency"].ok == 2  # one call a row; the session counts both


def test_assert_complete_judges_completeness_alone_and_shows_the_score_and_threshold(session, judge):
    verdict = assert_complete(response="The capital of France is Paris.", expected_response=FRANCE, request="capital of France?")
    assert (verdict.metric, verdict.score, verdict.passed) == ("completeness", 5.0, True)
    calls = judge.calls
    with pytest.raises(VerdictError, match=r"^completeness failed: score 1 \(passes at 3\), passed False: 0% of the ground truth's "
                                           r"statements appear in the response\.; missing: Madrid is the capital of Spain\.$"):
        assert_complete(response="I do not know.", expected_response="Madrid is the capital of Spain.")
    assert judge.calls > calls
    assert list(session.summary.metrics) == ["completeness"]  # no sufficiency verdict: the row has no context, and none was asked


def test_a_row_not_judged_fails_the_assertion_with_its_reason(session):
    with pytest.raises(VerdictError, match=r"^sufficiency was not judged: skipped: no context$"):
        assert_sufficient(request="What is the capital of France?", context="")
    with pytest.raises(VerdictError, match=r"^sufficiency failed: score 0 \(passes at 0.5\), passed False: no passages retrieved$"):
        assert_sufficient(request="What is the capital of France?", context=[])


@pytest.mark.parametrize("call, said", [
    (lambda: assert_sufficient(request=" ", context=FRANCE), "assert_sufficient needs a request"),
    (lambda: assert_sufficient(request="Where?", context=None), "assert_sufficient needs a context"),
    (lambda: assert_complete(response="Paris."), "assert_complete needs a ground truth"),
    (lambda: assert_complete(response="", expected_response=FRANCE), "assert_complete needs a response"),
])
def test_bad_arguments_are_value_errors_not_failed_assertions(session, judge, call, said):
    with pytest.raises(ValueError, match=said):
        call()
    assert judge.calls == 0


def _frame() -> pd.DataFrame:
    return pd.DataFrame([
        {"id": "r1", "request": "What is the capital of France?", "context": [FRANCE]},
        {"id": "r2", "request": "What is the capital of Spain?", "context": [FRANCE]},
        {"id": "r3", "request": "Who wrote Hamlet?", "context": ["Hamlet was written by William Shakespeare."]},
        {"id": "r4", "request": "Where is Paris?", "context": ["Paris is in France."]},
    ])


def test_assert_passes_names_each_failing_row_with_its_verdict_and_rationale(session, judge):
    scored = assert_passes(_frame(), metrics="sufficiency", min_pass_rate=0.5)
    assert list(scored.frame["sufficiency_passed"]) == [True, False, False, True]
    assert judge.calls == 4
    with pytest.raises(VerdictError) as failed:
        assert_passes(_frame(), metrics=["sufficiency"], min_pass_rate={"sufficiency": 0.75})
    assert str(failed.value).splitlines() == [
        "FAIL sufficiency: pass rate 0.50 < 0.75 (2 of 4 ok rows passed)",
        "  r2 sufficiency: score 0 (passes at 0.5), passed False: No passage covers the request.",
        "  r3 sufficiency: score 0 (passes at 0.5), passed False: No passage covers the request.",
    ]
    assert judge.calls == 4  # the second assertion read the first's replies
    assert [v.passed for v in failed.value.verdicts] == [False, False] and len(failed.value.scored.frame) == 4


def test_assert_passes_takes_the_config_floor_and_refuses_a_rate_off_the_scale(judge, cache_dir):
    with Scorer(judge={"model": "openai/fake-judge"}, cache={"dir": cache_dir}, gate={"min_pass_rate": 0.5}, transport=judge) as scorer:
        assert_passes(_frame(), metrics=["sufficiency"], scorer=scorer)  # gate.min_pass_rate 0.5: 2 of 4 pass
        with pytest.raises(VerdictError, match="pass rate 0.50 < 1.00"):
            assert_passes(_frame(), metrics=["sufficiency"], min_pass_rate=1, scorer=scorer)
        with pytest.raises(ValueError, match="between 0 and 1"):
            assert_passes(_frame(), metrics=["sufficiency"], min_pass_rate=1.5, scorer=scorer)
        with pytest.raises(ValueError, match="names 'completeness'"):
            assert_passes(_frame(), metrics=["sufficiency"], min_pass_rate={"completeness": 0.5}, scorer=scorer)


def test_only_shares_the_model_cache_and_limit_and_closes_nothing(judge, cache_dir):
    with Scorer(metrics=["completeness"], judge={"model": "openai/fake-judge"}, cache={"dir": cache_dir}, thresholds={"sufficiency": 1.0},
                transport=judge) as scorer:
        view = scorer.only("sufficiency")
        assert [j.name for j in view.judges] == ["sufficiency"] and [j.name for j in scorer.judges] == ["completeness"]
        assert view.model is scorer.model and view.cache is scorer.cache and view.judges[0].threshold == 1.0
        first = view.score(_frame())
        view.close()  # closes nothing: the scorer's model and cache go on
        again = scorer.only(["sufficiency"]).score(_frame())
        assert judge.calls == 4 and list(again.frame["sufficiency_cached"]) == [True] * 4
        assert list(first.summary.metrics) == ["sufficiency"]
        with pytest.raises(ConfigError, match="unknown metric 'nope'"):
            scorer.only("nope")


def test_only_keeps_whether_a_missing_column_is_an_error(judge, cache_dir):
    from ragjudge.errors import InputError

    with Scorer(judge={"model": "openai/fake-judge"}, cache={"dir": cache_dir}, transport=judge) as scorer:
        with pytest.raises(InputError, match="completeness needs a response"):
            scorer.only(["completeness"]).score(_frame())
        scored = scorer.only(["completeness"], asked=False).score(_frame())
    assert set(scored.frame["completeness_status"]) == {"skipped"}


# -- the project's config ------------------------------------------------------------------------


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_project_config_layers_defaults_file_section_then_the_option(tmp_path):
    _write(tmp_path / "base.yaml", "judge:\n  model: openai/from-file\n  concurrency: 3\nthresholds:\n  completeness: 4\n")
    _write(tmp_path / "ci.yaml", "judge:\n  concurrency: 7\n")
    (tmp_path / "evals").mkdir()
    _write(tmp_path / "evals" / "a.jsonl", '{"request": "q"}\n')
    pyproject = _write(tmp_path / "pyproject.toml", '[tool.ragjudge]\nconfig = "base.yaml"\ntables = ["evals/a.jsonl"]\n'
                                                  'metrics = ["sufficiency"]\n[tool.ragjudge.judge]\nconcurrency = 5\n')
    project = testing.project_config(pyproject)
    config = project.config
    assert (config.judge.model, config.judge.concurrency, config.metrics, config.threshold("completeness")) == (
        "openai/from-file", 5, ["sufficiency"], 4.0)
    assert project.tables == [(tmp_path / "evals" / "a.jsonl").resolve()] and project.set
    assert project.sources == ["base.yaml", "pyproject.toml [tool.ragjudge]"]
    over = testing.project_config(pyproject, "ci.yaml", cwd=tmp_path).config  # --ragjudge-config: over the section, key by key
    assert (over.judge.model, over.judge.concurrency, over.metrics) == ("openai/from-file", 7, ["sufficiency"])


def test_nothing_configured_loads_nothing(tmp_path):
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    project = testing.project_config(tmp_path / "pyproject.toml")
    assert (project.config, project.tables, project.set) == (None, [], False)
    assert testing.project_config(None).config is None


@pytest.mark.parametrize("section, said", [
    ('[tool.ragjudge]\njudge = {modle = "x"}\n', "pyproject.toml [tool.ragjudge]: unknown key 'judge.modle'"),
    ('[tool.ragjudge]\ntables = "a.jsonl"\n', "pyproject.toml [tool.ragjudge]: tables must be a list of paths"),
    ('[tool.ragjudge]\ntables = ["gone.jsonl"]\n', "pyproject.toml [tool.ragjudge] tables: no table at"),
    ('[tool.ragjudge]\nconfig = "gone.yaml"\n', "cannot read config gone.yaml"),
    ('[tool.ragjudge]\nmetrics = ["nope"]\n', "pyproject.toml [tool.ragjudge]: unknown metric 'nope'"),
    ("[tool.ragjudge\n", "cannot read [tool.ragjudge]"),
])
def test_a_bad_project_config_names_where(tmp_path, section, said):
    _write(tmp_path / "pyproject.toml", section)
    with pytest.raises(ConfigError) as err:
        testing.project_config(tmp_path / "pyproject.toml")
    assert said in str(err.value)


def test_a_table_names_its_items_by_id_else_row_n(tmp_path):
    path = _write(tmp_path / "t.jsonl", '{"id": "a::b", "request": "q"}\n{"request": "q"}\n{"id": "r7", "request": "q"}\n'
                                        '{"id": "r7", "request": "q"}\n')
    from ragjudge.settings import load_config

    table = testing.Table.read(path, load_config(metrics=["sufficiency"]))
    assert table.names == ["a:b", "row 2", "r7", "r7#2"]
    assert table.metrics == ["sufficiency"] and table.asked

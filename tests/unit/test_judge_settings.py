"""Judges own their settings (issue 30, item 3): each built-in metric's knobs are its judge's
own settings model, read from the config section named after the metric; the old keys under
``judge:`` still load, with a note naming the new place; where a knob is set changes no
verdict and no cache key."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT, read_jsonl, write_jsonl
from helpers import REF_FREE
from ragjudge import Config, load_config
from ragjudge.config import MOVED, JudgeSettings
from ragjudge.errors import ConfigError


def test_judge_settings_hold_no_metric_knob_and_each_judge_declares_its_section():
    from ragjudge.judges import BUILT_IN, judge_class

    assert not set(MOVED) & set(JudgeSettings.model_fields)
    for name in BUILT_IN:
        settings = judge_class(name).Settings
        assert Config.model_fields[name].annotation is settings
    # the keys of the metrics that had flat keys before their sections; later metrics' keys live in their sections only
    assert set(MOVED) == {key for name in ("sufficiency", "completeness") for key in judge_class(name).Settings.model_fields}
    assert {MOVED[key] for key in ("yes_threshold", "fact_threshold", "fact_evidence", "reasoning_first")} == {"sufficiency"}
    assert {MOVED[key] for key in ("expected_score", "coverage_score")} == {"completeness"}


@pytest.mark.parametrize("text", ["sufficiency:\n  yes_threshold: 0.9\n", "judge:\n  yes_threshold: 0.9\n"], ids=["section", "old_key"])
def test_a_knob_decides_the_same_from_its_section_or_its_old_place(run_score, tmp_path, judge, text):
    judge.p_yes = 0.8
    config = tmp_path / "c.yaml"
    config.write_text(text)
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [REF_FREE]), metric=["sufficiency"], min_pass_rate=["0"], output=str(out), config=str(config))
    assert result.code == 0, result.text
    row = read_jsonl(out)[0]
    assert (row["sufficiency_score"], row["sufficiency_p_yes"]) == (0.0, pytest.approx(0.8))
    assert row["sufficiency_rationale"].startswith("probability check: P(yes) 0.80 < yes_threshold 0.9, so no (the judge wrote yes). ")
    note = "note: judge.yes_threshold is now sufficiency.yes_threshold (the old key still works)"
    assert (note in result.text) == text.startswith("judge:")


def test_the_old_keys_load_into_their_sections_with_a_note_each():
    config = load_config(None, {"judge": {"model": "openai/gpt-4o-mini", "fact_threshold": 0.3, "coverage_score": True}})
    assert (config.sufficiency.fact_threshold, config.completeness.coverage_score, config.judge.model) == (0.3, True, "openai/gpt-4o-mini")
    assert config.notes == ["note: judge.fact_threshold is now sufficiency.fact_threshold (the old key still works)",
                            "note: judge.coverage_score is now completeness.coverage_score (the old key still works)"]
    assert load_config(None, {"sufficiency": {"fact_threshold": 0.3}}).notes == []
    both = load_config(None, {"judge": {"fact_threshold": 0.3}, "sufficiency": {"fact_threshold": 0.4}})
    assert both.sufficiency.fact_threshold == 0.4  # the section wins
    assert load_config(None, fact_evidence=0.5).sufficiency.fact_evidence == 0.5  # a flat keyword goes to its section
    assert config.updated({"concurrency": 4}).notes == config.notes


def test_the_scorer_shows_the_note_with_its_other_notes():
    from ragjudge.scoring import Scorer

    with Scorer(load_config(None, {"judge": {"model": "openai/fake", "api_base": "http://127.0.0.1:9/v1", "expected_score": True},
                                   "cache": {"enabled": False}})) as scorer:
        assert "note: judge.expected_score is now completeness.expected_score (the old key still works)" in scorer.notes
        judge = next(j for j in scorer.judges if j.name == "completeness")
        assert judge.options.expected_score is True


@pytest.mark.parametrize("text, message", [
    pytest.param("sufficiency:\n  fact_treshold: 0.3\n", "unknown key 'sufficiency.fact_treshold'", id="unknown_in_section"),
    pytest.param("completeness:\n  coverage_score: 3\n", "invalid value for 'completeness.coverage_score'", id="bad_in_section"),
    pytest.param("judge:\n  fact_threshold: 2\n", "invalid value for 'judge.fact_threshold': should be less than 1", id="bad_old_key"),
])
def test_a_bad_knob_is_a_config_error_naming_where_it_was_written(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value) and info.value.exit_code == 2


@pytest.mark.parametrize("name", ["gate", "cache", "judge", "columns", "thresholds"])
def test_a_custom_judge_may_not_take_the_name_of_a_config_section(run_score, tmp_path, name):
    path = tmp_path / "c.yaml"
    path.write_text(f"judges:\n  - name: {name}\n    needs: [response]\n    prompt: 'Is it right? {{{{ response }}}}'\n")
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "response": "r"}]), config=str(path))
    assert result.code == 2
    assert f"judges: '{name}' is a section of the config ({name}:); give your judge another name" in result.text


def test_cache_keys_do_not_depend_on_where_a_knob_was_set():
    from helpers import CACHE_KEY_ROWS as ROWS
    from helpers import _Resolved
    from ragjudge.judges import make_judges
    from ragjudge.model import Model
    from ragjudge.records import Columns, resolve_mapping, to_records
    from ragjudge.types import Verdict

    knobs = {"yes_threshold": 0.84, "fact_threshold": 0.55, "fact_evidence": 0.5, "reasoning_first": False}
    judge = {"model": "openai/fake-judge", "api_base": "http://127.0.0.1:9/v1"}

    def keys(config):
        model = Model(config.judge, None, _Resolved(config.judge))
        found = {}
        for row_name, row in ROWS.items():
            record = to_records([row], resolve_mapping(list(row), [row], Columns()), 0, True)[0]
            for made in make_judges(config):
                call = made.prepare(record)
                if not isinstance(call, Verdict):
                    found[(row_name, made.name)] = (model.key(call), call.logprobs)
        return found

    old = keys(load_config(None, {"judge": {**judge, **knobs, "coverage_score": True}}))
    new = keys(load_config(None, {"judge": judge, "sufficiency": knobs, "completeness": {"coverage_score": True}}))
    assert old == new and len(old) >= 6
    assert all(logprobs for (_, metric), (_, logprobs) in old.items() if metric == "sufficiency")  # the knobs were read


def test_an_extension_example_is_checked_against_the_fields_its_judge_declares(tmp_path):
    from ragjudge.judges import judge_class

    path = tmp_path / "c.yaml"
    path.write_text("extend:\n  completeness:\n    examples:\n      - inputs: {context: [a]}\n        verdict: 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert f"completeness reads {', '.join(judge_class('completeness').inputs)}" in str(info.value)
    assert "extend.completeness: example 1 gives unknown field(s) context" in str(info.value)


def test_the_judges_do_not_import_the_config():
    # the definitions and the metrics' settings live with the judges: no cycle config <-> judges
    for path in sorted((ROOT / "ragjudge" / "judges").glob("*.py")):
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert "ragjudge.config" not in imported, path.name


def test_the_bundled_configs_use_the_new_keys():
    import yaml

    for path in sorted((ROOT / "ragjudge" / "configs").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        assert not set(data.get("judge") or {}) & set(MOVED), path.name
        assert load_config(path).notes == [], path.name
    local = load_config(ROOT / "ragjudge" / "configs" / "local.yaml")
    assert (local.sufficiency.yes_threshold, local.sufficiency.fact_threshold, local.sufficiency.fact_evidence) == (0.85, 0.3, 0.7)
    assert local.completeness.coverage_score is True


def test_the_config_imports_no_judge():
    # issue 30 item 3: the judges' sections are raw data in ragjudge.config; ragjudge.settings types them
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in sorted((ROOT / "ragjudge" / "config").glob("*.py"))]  # the package's modules
    imported = {node.module for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for tree in trees for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert sorted(m for m in imported if m and m.startswith("ragjudge.") and not m.startswith("ragjudge.config")) == ["ragjudge.audit", "ragjudge.diagnosis", "ragjudge.errors",
                                                                              "ragjudge.panel", "ragjudge.strict"]  # plain values below it only
    from ragjudge.config import METRICS
    from ragjudge.judges import BUILT_IN

    assert METRICS == tuple(BUILT_IN)  # the config's sections are the built-in metrics, in their order


def test_the_raw_config_leaves_the_judges_sections_raw_and_ragjudge_load_config_checks_them():
    from ragjudge.config import RawConfig
    from ragjudge.config import read_raw_config as load_raw

    raw = load_raw(None, metrics=["nope"], fact_threshold=0.3, extend={"completeness": {"examples": [{"inputs": {"context": ["a"]}, "verdict": 3}]}})
    assert type(raw) is RawConfig and raw.metrics == ["nope"] and raw.sufficiency == {"fact_threshold": 0.3}
    with pytest.raises(ConfigError) as info:
        load_config(None, metrics=["nope"])
    assert str(info.value) == "unknown metric 'nope'; use sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise, groundedness or a judge defined in the config"
    with pytest.raises(ConfigError) as info:
        Config.of(raw)
    assert str(info.value) == "config: unknown metric 'nope'; use sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise, groundedness or a judge defined in the config"
    typed = load_config(None, fact_threshold=0.3)
    assert type(typed) is Config and typed.sufficiency.fact_threshold == 0.3 and typed.threshold("completeness") == 3


def test_a_raw_config_gives_the_same_judges_as_the_typed_one():
    from ragjudge.config import read_raw_config as load_raw
    from ragjudge.judges import make_judges
    from ragjudge.scoring import Scorer

    keys = {"judge": {"model": "openai/gpt-4o-mini", "fact_threshold": 0.3}, "metrics": ["sufficiency", "completeness", "groundedness", "mine"],
            "judges": [{"name": "mine", "prompt": "Is {{ response }} polite?"}], "thresholds": {"completeness": 4},
            "extend": {"sufficiency": {"instructions": "Dates matter."}}, "cache": {"enabled": False}}
    raw, typed = load_raw(None, keys), load_config(None, keys)
    shape = [(j.name, j.version, j.threshold, getattr(j, "options", None)) for j in make_judges(raw)]
    assert shape == [(j.name, j.version, j.threshold, getattr(j, "options", None)) for j in make_judges(typed)]
    assert [s[2] for s in shape] == [0.5, 4, 0.5, 0.5] and shape[0][3].fact_threshold == 0.3
    assert Config.of(raw).notes == raw.notes == ["note: judge.fact_threshold is now sufficiency.fact_threshold (the old key still works)"]
    with Scorer(raw) as scorer:  # a raw config is typed and checked by the scorer
        assert type(scorer.config) is Config and scorer.notes == raw.notes
        assert [j.version for j in scorer.judges] == [s[1] for s in shape]


def test_the_bundled_model_without_its_config_gets_its_reply_budget_and_wait(run_score, judge, tmp_path, monkeypatch):
    # --model local/qwen2.5-coder-1.5b without -c local kept max_tokens 1024 and timeout 120, where
    # configs/local.yaml sets 512 and 600 (a long row on a slow CPU can take a minute)
    from ragjudge import local
    from ragjudge.configdoc import effective
    from ragjudge.options import load_layers
    from ragjudge.scoring import Scorer

    monkeypatch.delenv("RAGJUDGE_LOCAL_MODEL", raising=False)
    printed = effective(load_layers(None, {"model": local.DEFAULT_MODEL}))
    assert "  max_tokens: 512                           # embedded judge (ragjudge config show local)" in printed.splitlines()
    assert "  timeout: 600.0                            # embedded judge (ragjudge config show local)" in printed.splitlines()
    chosen = effective(load_layers(None, {"model": local.DEFAULT_MODEL, "timeout": 30.0}, ["judge.max_tokens=300"]))
    assert "  max_tokens: 300                           # --set judge.max_tokens" in chosen.splitlines()
    assert "  timeout: 30.0                             # --timeout" in chosen.splitlines()
    with Scorer(load_config(None, {"judge": {"model": local.DEFAULT_MODEL}}), transport=judge) as scorer:
        assert (scorer.config.judge.max_tokens, scorer.config.judge.timeout) == (512, 600.0)
        assert (scorer.model.settings.max_tokens, scorer.model.settings.timeout) == (512, 600.0)
        assert any("judge.max_tokens=512, judge.timeout=600" in note for note in scorer.notes)
    run_score(write_jsonl(tmp_path / "in.jsonl", [REF_FREE]), model=local.DEFAULT_MODEL, metric=["sufficiency"], min_pass_rate=["0"])
    assert judge.requests and {r["max_tokens"] for r in judge.requests} == {512}  # what the run asks of the judge

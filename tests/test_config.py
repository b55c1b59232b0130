"""Config files: the shipped ones load, flags override, unknown keys are named."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from ragjudge import load_config
from ragjudge.errors import ConfigError


@pytest.mark.parametrize("name", ["default.yaml", "mlflow.yaml"])
def test_shipped_configs_load(name):
    config = load_config(ROOT / "configs" / name)
    assert config.metrics == ["sufficiency", "completeness"]


def test_default_yaml_holds_every_key_at_its_default():
    from ragjudge import Config

    assert load_config(ROOT / "configs" / "default.yaml") == Config()


def test_flags_override_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("judge:\n  model: openai/gpt-4o\n  concurrency: 4\n")
    config = load_config(path, {"judge": {"concurrency": 32}})
    assert config.judge.model == "openai/gpt-4o"
    assert config.judge.concurrency == 32


def test_scalar_min_pass_rate_applies_to_every_metric():
    config = load_config(None, {"gate": {"min_pass_rate": 0.8}})
    assert config.gate.min_pass_rate == {"sufficiency": 0.8, "completeness": 0.8, "passage_relevance": 0.8, "sufficient_k": 0.8,
                                         "abstention": 0.8, "pairwise": 0.8}  # every built-in metric, those judged only when named too


@pytest.mark.parametrize(
    "text, message",
    [
        pytest.param("gate:\n  max_eror_rate: 0.1\n", "unknown key 'gate.max_eror_rate'", id="nested_unknown"),
        pytest.param("colums: {}\n", "unknown key 'colums'", id="top_unknown"),
        pytest.param("thresholds:\n  completeness: 7\n", "completeness threshold must be between 1 and 5", id="threshold_range"),
        pytest.param("- a\n- b\n", "the config must be a mapping", id="not_mapping"),
        pytest.param("judge: [\n", "is not valid YAML", id="bad_yaml"),
    ],
)
def test_bad_config_is_config_error(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value)
    assert info.value.exit_code == 2


@pytest.mark.parametrize("text, key", [("judge:\n  workers: true\n", "judge.workers"), ("judge:\n  fact_evidence: false\n", "judge.fact_evidence")])
def test_yaml_booleans_are_not_numbers(tmp_path, text, key):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"'{key}'.*not true/false"):
        load_config(path)
    path.write_text("cache:\n  enabled: false\n")
    assert load_config(path).cache.enabled is False


def test_bundled_model_gets_the_calibrated_settings_unless_the_config_sets_them(tmp_path, monkeypatch):
    from ragjudge import local

    monkeypatch.delenv("RAGJUDGE_LOCAL_MODEL", raising=False)
    shipped = load_config(ROOT / "configs" / "local.yaml")
    from dataclasses import replace

    from ragjudge import metrics

    calibrated = local.calibrated_settings()
    assert {m: {k: getattr(getattr(shipped, m), k) for k in s} for m, s in calibrated.items()} == calibrated  # the YAML explains these values
    assert {k: shipped.threshold(k) for k in local.calibrated_thresholds()} == local.calibrated_thresholds()
    monkeypatch.setattr(metrics, "BUILT_IN", tuple(replace(m, embedded_threshold=3.8) if m.name == "completeness" else m for m in metrics.BUILT_IN))
    bundled = {"judge": {"model": local.DEFAULT_MODEL}}
    bare, filled = local.calibrated(load_config(None, bundled))
    assert filled == [f"{m}.{k}={v}" for m, s in sorted(calibrated.items()) for k, v in sorted(s.items())] + ["thresholds.completeness=3.8"]
    assert bare.sufficiency.yes_threshold == 0.85 and bare.sufficiency.fact_evidence == 0.7
    assert (bare.threshold("completeness"), bare.threshold("sufficiency")) == (3.8, 0.5)
    path = tmp_path / "c.yaml"
    path.write_text(f"judge:\n  model: {local.DEFAULT_MODEL}\n  yes_threshold: null\nthresholds:\n  completeness: 3\n")
    chosen, filled = local.calibrated(load_config(path))
    assert chosen.sufficiency.yes_threshold is None and "sufficiency.yes_threshold=0.85" not in filled  # an explicit null is kept
    assert chosen.threshold("completeness") == 3 and "thresholds.completeness=3.8" not in filled  # a threshold set is kept
    flagged, _ = local.calibrated(load_config(None, {**bundled, "thresholds": {"sufficiency": 1.0}}))
    assert (flagged.threshold("completeness"), flagged.threshold("sufficiency")) == (3.8, 1.0)  # another metric's threshold set
    other, filled = local.calibrated(load_config(None, {"judge": {"model": local.DEFAULT_MODEL, "local_model_path": "/m.gguf"}}))
    assert filled == [] and other.sufficiency.yes_threshold is None and other.threshold("completeness") == 3  # another model file
    hosted, filled = local.calibrated(load_config(None))
    assert filled == [] and hosted.sufficiency.fact_evidence is None and hosted.threshold("completeness") == 3


def test_a_threshold_set_for_one_metric_leaves_the_others_at_their_defaults():
    config = load_config(None, {"thresholds": {"sufficiency": 1.0}})
    assert (config.threshold("sufficiency"), config.threshold("completeness")) == (1.0, 3.0)
    assert config.threshold_set("sufficiency") and not config.threshold_set("completeness")
    assert not load_config(None).threshold_set("completeness")


def test_bundled_configs_ship_in_the_package_and_load_by_name(run_score, tmp_path, monkeypatch):
    # pip-installed users have no configs/ folder: -c NAME reads the copy inside the package
    from ragjudge.config import BUNDLED, bundled_config

    assert (ROOT / "configs").resolve() == (ROOT / "ragjudge" / "configs").resolve()
    for name in BUNDLED:
        assert bundled_config(name).is_file() and bundled_config(f"{name}.yaml") == bundled_config(name)
    monkeypatch.chdir(tmp_path)  # no configs/ here
    mlflow_row = {"inputs": {"query": "Where is landmark 1?"}, "outputs": {"retrieved_context": [{"content": "Landmark 1 stands in city 1."}]},
                  "expectations": {"expected_response": "city 1"}}
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(mlflow_row) + "\n")
    result = run_score(str(source), config="mlflow", metric=["sufficiency"], min_pass_rate=["0"])
    assert result.code == 0, result.text
    assert "request=inputs.query" in result.text


def test_a_file_named_like_a_bundled_config_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlflow").write_text("judge:\n  concurrency: 3\n")
    assert load_config("mlflow").judge.concurrency == 3
    assert load_config("mlflow.yaml").columns.request == "inputs.query"  # no such file here: the bundled one
    with pytest.raises(ConfigError, match="cannot read config sub/mlflow.yaml"):
        load_config("sub/mlflow.yaml")  # a path with a folder is never a bundled name


def test_config_show_prints_the_bundled_yaml(run_cli):
    shown = run_cli(["config", "show"], judge=False)
    assert shown.code == 0 and shown.stdout == (ROOT / "configs" / "default.yaml").read_text(encoding="utf-8")
    assert run_cli(["config", "show", "local"], judge=False).stdout == (ROOT / "configs" / "local.yaml").read_text(encoding="utf-8")
    unknown = run_cli(["config", "show", "nope"], judge=False)
    assert unknown.code == 2 and unknown.stderr.strip() == "error: no bundled config 'nope'; bundled: default, local, mlflow"
    missing = run_cli(["score", "in.jsonl", "-c", "nope.yml"], judge=False)
    assert missing.code == 2 and "bundled configs: -c default | local | mlflow" in missing.stderr


def test_a_key_given_twice_is_an_error_naming_the_line(tmp_path):
    # PyYAML kept the last value silently
    path = tmp_path / "c.yaml"
    path.write_text("judge:\n  concurrency: 4\n  model: openai/gpt-4o\n  concurrency: 8\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: line 4 is not valid YAML: key 'concurrency' appears twice in one mapping"
    assert load_config(ROOT / "configs" / "local.yaml").judge.model == "local/qwen2.5-coder-1.5b"


def test_merge_keys_still_work_and_an_unhashable_key_is_a_clear_error(tmp_path):
    # the duplicate-key check broke YAML merge keys and turned [a, b] keys into a TypeError
    path = tmp_path / "c.yaml"
    path.write_text("judge:\n  <<: {temperature: 0.5, max_retries: 2}\n  max_retries: 1\n")
    config = load_config(path)
    assert (config.judge.temperature, config.judge.max_retries) == (0.5, 1)
    path.write_text("? [a, b]\n: 1\n")
    with pytest.raises(ConfigError, match="is not valid YAML: found unhashable key"):
        load_config(path)


def test_the_bundled_model_passes_completeness_at_its_calibrated_mark(run_cli, tmp_path, monkeypatch):
    # a config that names the bundled model and sets no threshold gets the calibrated pass mark;
    # one that sets it keeps its own
    from ragjudge import local

    monkeypatch.delenv("RAGJUDGE_LOCAL_MODEL", raising=False)
    mark = local.calibrated_thresholds()["completeness"]
    bare = tmp_path / "bare.yaml"
    bare.write_text(f"judge:\n  model: {local.DEFAULT_MODEL}\n")
    shown = run_cli(["judges", "-c", str(bare)], judge=False)
    assert f"completeness (built-in, default): 1..5, pass at >= {mark:g};" in shown.stdout
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"judge:\n  model: {local.DEFAULT_MODEL}\nthresholds:\n  completeness: 2.5\n")
    assert "completeness (built-in, default): 1..5, pass at >= 2.5;" in run_cli(["judges", "-c", str(mine)], judge=False).stdout
    hosted = run_cli(["judges"], judge=False)
    assert "completeness (built-in, default): 1..5, pass at >= 3;" in hosted.stdout


# peer report (issue 20 item 16): internal paths leak into messages
def test_config_file_messages_name_the_key_without_list_indices(tmp_path):
    from ragjudge import load_config
    from ragjudge.errors import ConfigError

    path = tmp_path / "c.yaml"
    path.write_text("metrics: [sufficiency, 3]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: invalid value for 'metrics item 2': should be a valid string (got 3)"


# fix b item 3: a model string with no model name after its provider is a usage error (exit 2), never a request
@pytest.mark.parametrize(("flags", "message"), [
    (["--model", "openai-decisions/"], "--model: no model name after 'openai-decisions/': give one, e.g. openai-decisions/gpt-6-luna"),
    (["--model", "systemone/"], "--model: no model name after 'systemone/': give one, e.g. systemone/jev-latest"),
    (["--model", "systemone/ "], "--model: no model name after 'systemone/': give one, e.g. systemone/jev-latest"),
    (["--model", "openai/"], "--model: no model name after 'openai/': give one, e.g. openai/gpt-4o-mini"),
    (["--panel", "openai/fake-judge,openai-decisions/"], "--panel: no model name after 'openai-decisions/': give one, e.g. "
                                                         "openai-decisions/gpt-6-luna"),
    (["--cascade", "openai/fake-judge,systemone/"], "no model name after 'systemone/': give one, e.g. systemone/jev-latest"),
], ids=["openai-decisions", "systemone", "systemone-blank", "openai", "panel-member", "cascade-stage"])
def test_a_model_string_without_a_model_name_is_a_usage_error_before_any_call(run_cli, server, tmp_path, flags, message):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "request": "Where?", "context": ["Paris."], "response": "Paris."}\n')
    result = run_cli(["score", str(source), *flags, "-o", str(tmp_path / "out.jsonl")])
    assert result.code == 2, result.stderr
    assert message in result.stderr and server.calls == 0 and server.decision_calls == 0
    assert not (tmp_path / "out.jsonl").exists()
    if flags[0] == "--cascade":
        assert result.stderr.startswith("error: --cascade")

"""The config's layers (the file, ``--set``, the named options) and what their messages say:
the all-metrics key ``*`` where it means something and a clean refusal where it does not,
``--print-config`` read back by ``-c``, ``--set`` laid over ``--set`` as over the file, a bound
on a metric the run does not judge refused however it was set, the hint for such a metric, and
a bad value named where it came from."""

from __future__ import annotations

import pytest

from conftest import write_jsonl
from helpers import TOWER_ROW as GOOD


# -- --print-config is a config -c reads back ------------------------------------------------------

@pytest.mark.parametrize("options, sets", [
    ({"max_error_rate": ["completeness=0.1", "0.05"]}, []),
    ({}, ["gate.max_error_rate={'*': 0.5}"]),
    ({}, ["gate.max_skip_rate={'*': 0.5, completeness: 0.2}", "gate.allow_unjudged=['*']"]),
])
def test_the_printed_config_with_the_all_metrics_key_reads_back_as_the_same_config(tmp_path, options, sets):
    # the key '*' was printed bare (`*: 0.05`), which YAML reads as an alias: -c refused the file ("found ':'")
    from ragjudge.configdoc import effective
    from ragjudge.options import load_layers

    loaded = load_layers(None, options, sets)
    printed = effective(loaded)
    assert "'*': " in printed and "\n    *:" not in printed
    saved = tmp_path / "effective.yaml"
    saved.write_text(printed)
    again = load_layers(str(saved), {})
    assert again.config.model_dump() == loaded.config.model_dump()


def test_the_printed_config_shows_the_default_floor_of_a_metric_the_flags_leave_out(tmp_path):
    # a new user's find: --min-pass-rate sufficiency=0.9 printed only sufficiency's floor; completeness was still gated at 1.0
    from ragjudge.configdoc import effective
    from ragjudge.options import load_layers

    loaded = load_layers(None, {"min_pass_rate": ["sufficiency=0.9"]})
    printed = effective(loaded)
    assert "    sufficiency: 0.9                        # --min-pass-rate\n    completeness: 1.0                       # default" in printed
    saved = tmp_path / "effective.yaml"
    saved.write_text(printed)
    again = load_layers(str(saved), {}).config
    assert [again.min_pass_rate(m) for m in ("sufficiency", "completeness")] == [loaded.config.min_pass_rate(m) for m in ("sufficiency", "completeness")] == [0.9, 1.0]


# -- '*' is the all-metrics key of the gate's rate maps, and no metric ----------------------------

ONLY = "'*' is allowed only as the all-metrics key of gate.min_pass_rate / max_error_rate / max_skip_rate"
NOT_A_THRESHOLD = ("'*' in thresholds is not a metric; give each metric its own threshold (thresholds.sufficiency, thresholds.completeness); "
                   + ONLY)
NOT_A_METRIC = "'*' in metrics is not a metric; name each metric to judge (-m sufficiency -m completeness, or metrics: [sufficiency, completeness]); " + ONLY


@pytest.mark.parametrize("given, message", [
    ({"threshold": ["*=0.5"]}, f"--threshold: {NOT_A_THRESHOLD}"),
    ({"set_": ["thresholds.*=0.5"]}, f"--set thresholds.*: {NOT_A_THRESHOLD}"),
    ({"metric": ["*"]}, f"-m/--metric: {NOT_A_METRIC}"),
    ({"set_": ["metrics=['*']"]}, f"--set metrics: {NOT_A_METRIC}"),
])
def test_star_as_a_metric_is_a_config_error_naming_where_it_was_set(run_score, judge, tmp_path, given, message):
    # it was "unexpected KeyError: '*'" (exit 2 with a crash's line), from the threshold's scale of a metric '*'
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), **given)
    assert run.code == 2 and run.error == message and judge.calls == 0


@pytest.mark.parametrize("text, message", [("thresholds: {'*': 0.5}\n", NOT_A_THRESHOLD), ("metrics: ['*']\n", NOT_A_METRIC)])
def test_star_as_a_metric_in_a_config_file_is_named_as_the_file(run_score, tmp_path, text, message):
    config = tmp_path / "c.yaml"
    config.write_text(text)
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), config=str(config))
    assert run.code == 2 and run.error == f"{config}: {message}"


def test_star_as_a_threshold_is_refused_by_every_command_that_loads_the_config():
    from ragjudge.errors import ConfigError
    from ragjudge.options import load

    with pytest.raises(ConfigError) as info:  # ragjudge report X --set 'thresholds.*=0.5', render, compare
        load(None, {"map": []}, ["thresholds.*=0.5"])
    assert str(info.value) == f"--set thresholds.*: {NOT_A_THRESHOLD}"


def test_star_keeps_meaning_every_metric_under_the_gate(run_score, tmp_path):
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), set_=["gate.min_pass_rate.*=0.5", "gate.max_error_rate={'*': 0.5}"])
    assert run.code == 0 and run.result.summary.metrics["completeness"].min_pass_rate == 0.5


# -- a bad value is named where it came from ------------------------------------------------------

@pytest.mark.parametrize("given, message", [
    ({"set_": ["gate.max_error_rate={completeness: x}"]},
     "--set gate.max_error_rate.completeness: should be a valid number, unable to parse string as a number (got 'x')"),
    ({"set_": ["gate.max_error_rate=x"]}, "--set gate.max_error_rate: should be a valid number, unable to parse string as a number (got 'x')"),
    ({"set_": ["gate={max_error_rate: {completeness: 3}}"]}, "--set gate.max_error_rate.completeness: 3.0 is not between 0 and 1"),
    ({"threshold": ["completeness=nan"]}, "--threshold: completeness threshold must be between 1 and 5 (got nan)"),
    ({"set_": ["thresholds.completeness=9"]}, "--set thresholds.completeness: completeness threshold must be between 1 and 5 (got 9)"),
    ({"max_error_rate": ["completeness=2"]}, "--max-error-rate: completeness: 2.0 is not between 0 and 1"),
    ({"max_diagnosis": ["retrieval=2"]}, "--max-diagnosis: retrieval: 2.0 is not between 0 and 1"),
    ({"metric": ["faithfulness"]}, "-m/--metric: unknown metric 'faithfulness'; use sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise, groundedness or a judge defined in the config"),
    ({"set_": ["judge.nope=1"]}, "--set judge.nope: unknown key 'judge.nope'; `ragjudge config show` lists every key"),
])
def test_a_bad_value_from_an_option_is_named_as_the_option_not_the_config_file(run_score, tmp_path, given, message):
    # with -c g1.yaml each was "g1.yaml: ..." (and "invalid value for 'gate.max_error_rate.float'": pydantic's union branch)
    config = tmp_path / "g1.yaml"
    config.write_text("gate:\n  min_pass_rate: {completeness: 0.5}\n  max_error_rate: 0.1\n")
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), config=str(config), **given)
    assert run.code == 2 and run.error == message


def test_a_bad_value_of_the_file_is_named_as_the_file_whatever_the_options_set_beside_it(run_score, tmp_path):
    # --max-error-rate sufficiency=0.1 took the blame for the file's completeness entry
    config = tmp_path / "g1.yaml"
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}])
    config.write_text("gate:\n  max_error_rate: {completeness: 2}\n")
    run = run_score(source, config=str(config), max_error_rate=["sufficiency=0.1"])
    assert run.error == f"{config}: invalid value for 'gate.max_error_rate.completeness': 2.0 is not between 0 and 1"
    config.write_text("gate:\n  max_skip_rate: {completeness: x}\n")
    run = run_score(source, config=str(config), max_skip_rate=["sufficiency=0.1"])
    assert run.error == f"{config}: invalid value for 'gate.max_skip_rate.completeness': should be a valid number, unable to parse string as a number (got 'x')"
    config.write_text("thresholds: {completeness: 9}\n")
    assert run_score(source, config=str(config), threshold=["sufficiency=1"]).error == f"{config}: completeness threshold must be between 1 and 5 (got 9)"


# -- --set over --set is laid as every layer is -----------------------------------------------------

@pytest.mark.parametrize("key", ["min_pass_rate", "max_error_rate", "max_skip_rate"])
def test_a_metrics_own_rate_set_over_a_single_number_keeps_the_number_for_the_others_in_every_layering(tmp_path, key):
    # --set gate.K=0.5 --set gate.K.completeness=0.8 was refused ("gate.K was set to a value, so it has no keys") while a file
    # under --set, or --set under the option, merged the same two into {'*': 0.5, completeness: 0.8}
    from ragjudge.options import load_layers, set_overrides

    def rates(loaded):
        value = getattr(loaded.config.gate, key)
        return {m: value[m] for m in ("sufficiency", "completeness")} if key == "min_pass_rate" else value

    sets = [f"gate.{key}=0.5", f"gate.{key}.completeness=0.8"]
    merged = {"sufficiency": 0.5, "completeness": 0.8} if key == "min_pass_rate" else {"*": 0.5, "completeness": 0.8}
    assert rates(load_layers(None, {}, sets)) == merged
    assert set_overrides(sets) == {"gate": {key: {"*": 0.5, "completeness": 0.8}}}
    config = tmp_path / "c.yaml"
    config.write_text(f"gate:\n  {key}: 0.5\n")
    assert rates(load_layers(str(config), {}, sets[1:])) == merged
    assert rates(load_layers(None, {key: ["completeness=0.8"]}, sets[:1])) == merged
    # and a single number laid over a metric's own replaces the map, as the option over the file does
    every = {"sufficiency": 0.5, "completeness": 0.5} if key == "min_pass_rate" else 0.5
    assert rates(load_layers(None, {}, sets[::-1])) == every
    config.write_text(f"gate:\n  {key}: {{completeness: 0.8}}\n")
    assert rates(load_layers(str(config), {}, sets[:1])) == every


def test_set_over_set_reaches_the_gate(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}, {**GOOD, "id": "b", "response": "I do not know."}])
    run = run_score(source, metric=["completeness"], set_=["gate.min_pass_rate=0.1", "gate.min_pass_rate.completeness=0.8"])
    assert run.code == 1 and "FAIL completeness: pass rate 0.50 < 0.80 (1 of 2 ok rows passed)" in run.lines


def test_a_key_below_a_value_set_before_is_refused_naming_both():
    from ragjudge.errors import ConfigError
    from ragjudge.options import set_overrides

    with pytest.raises(ConfigError) as info:
        set_overrides(["judge.concurrency=4", "judge.concurrency.x=1"])
    assert str(info.value) == "--set judge.concurrency.x: judge.concurrency was set to a value by --set judge.concurrency, so it has no key x"
    with pytest.raises(ConfigError) as info:
        set_overrides(["judge=4", "judge.model=x"])
    assert str(info.value).startswith("--set judge: judge is a section of the config (keys such as model), not a value")


@pytest.mark.parametrize("sets, named", [
    (["gate.min_pass_rate={groundedness: 0.5}"], "--set gate.min_pass_rate"),
    (["gate.min_pass_rate.groundedness=0.5"], "--set gate.min_pass_rate.groundedness"),
    (["gate={max_error_rate: {groundedness: 0.5}}"], "--set gate"),
    (["thresholds={groundedness: 1}"], "--set thresholds"),
])
def test_a_bound_on_a_metric_the_run_does_not_judge_is_refused_however_set_sets_it(run_score, judge, tmp_path, sets, named):
    # the whole map (--set 'gate.min_pass_rate={groundedness: 0.5}') was accepted, its bound gating nothing; the dotted form was refused
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), set_=sets)
    assert run.code == 2 and run.error == (f"{named}: this run does not judge 'groundedness'; it judges sufficiency, completeness, and -m "
                                           "replaces the default list: to judge groundedness too, give -m sufficiency -m completeness -m groundedness")
    assert judge.calls == 0
    assert run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), set_=sets, metric=["groundedness"]).error == ""


# -- the fix a bound on a metric the run does not judge is told --------------------------------------

ADD_GROUNDEDNESS = ("it judges sufficiency, completeness, and -m replaces the default list: to judge groundedness too, give -m sufficiency "
                    "-m completeness -m groundedness")


@pytest.mark.parametrize("given, where", [
    ({"max_skip_rate": ["{}=0.1"]}, "--max-skip-rate {}=..."),
    ({"min_pass_rate": ["{}=0.5"]}, "--min-pass-rate {}=..."),
    ({"max_error_rate": ["{}=0.1"]}, "--max-error-rate {}=..."),
    ({"threshold": ["{}=1"]}, "--threshold {}=..."),
    ({"set_": ["gate.max_skip_rate.{}=0.1"]}, "--set gate.max_skip_rate.{}"),
    ({"set_": ["gate.min_pass_rate={{{}: 0.5}}"]}, "--set gate.min_pass_rate"),
])
@pytest.mark.parametrize("metric, fix", [
    # it said "(a metric of its own is added with -m sufficency)", which is an unknown metric
    ("sufficency", "; did you mean 'sufficiency'? (it judges sufficiency, completeness)"),
    # it said "(a metric of its own is added with -m groundedness)": that run judges groundedness alone, and its other bounds fail
    ("groundedness", f"; {ADD_GROUNDEDNESS}"),
    ("groundednes", f"; did you mean 'groundedness'? {ADD_GROUNDEDNESS[0].upper()}{ADD_GROUNDEDNESS[1:]}"),
    ("faithfulness", ", and no metric has that name; it judges sufficiency, completeness (known metrics: sufficiency, completeness, "
                  "passage_relevance, sufficient_k, abstention, pairwise, groundedness or a judge defined in the config)"),
    # issue 63: a built-in metric the default list leaves out is added with -m, as a bundled one is
    ("relevance", "; did you mean 'passage_relevance'? It judges sufficiency, completeness, and -m replaces the default list: to judge "
                  "passage_relevance too, give -m sufficiency -m completeness -m passage_relevance"),
])
def test_a_bound_on_a_metric_not_judged_names_the_fix_that_works(run_score, tmp_path, given, where, metric, fix):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}])
    options = {name: [item.format(metric) for item in items] for name, items in given.items()}
    run = run_score(source, **options)
    assert run.code == 2 and run.error == f"{where.format(metric)}: this run does not judge '{metric}'{fix}"


def test_the_fix_for_a_metric_not_asked_for_is_a_run_that_works(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}])
    refused = run_score(source, metric=["sufficiency"], min_pass_rate=["groundedness=0.5"])
    assert refused.error.endswith("it judges sufficiency, and -m replaces that list: to judge groundedness too, give -m sufficiency -m groundedness")
    run = run_score(source, metric=["sufficiency", "groundedness"], min_pass_rate=["groundedness=0.5"])
    assert run.code == 0 and set(run.result.summary.metrics) == {"sufficiency", "groundedness"}


# issue 60 item 23: -m sufficency got no "did you mean" (the gate flags did)
def test_a_misspelt_metric_gets_the_closest_name(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    assert run_score(source, metric=["sufficency"]).error == (
        "-m/--metric: unknown metric 'sufficency'; did you mean 'sufficiency'? (known metrics: sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise, groundedness "
        "or a judge defined in the config)")
    # a second shape: two metrics in one -m, and a misspelt metric under a config's thresholds
    assert "one metric per -m: -m sufficiency -m completeness" in run_score(source, metric=["sufficiency,completeness"]).error
    config = tmp_path / "c.yaml"
    config.write_text("thresholds:\n  completness: 2\n", encoding="utf-8")
    assert "unknown metric 'completness' in thresholds; this run judges sufficiency, completeness; did you mean 'completeness'? (known" \
        in run_score(source, config=str(config)).error
    assert run_score(source, metric=["nothing_like_it"]).error == (
        "-m/--metric: unknown metric 'nothing_like_it'; use sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise, groundedness or a judge defined in the config")


# issue 60 item 23: a config with two typos named one per run
def test_every_unknown_key_of_a_config_is_named_in_one_run(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  modle: x\ncache:\n  dri: y\n", encoding="utf-8")
    assert run_score(source, config=str(config)).error == (
        f"{config}: unknown keys 'judge.modle', 'cache.dri'; `ragjudge config show` lists every key")
    # a second shape: two typos in one section, beside a --set of a third: the file's two in one message, named by the file
    config.write_text("judge:\n  modle: x\n  concurency: 4\n", encoding="utf-8")
    assert run_score(source, config=str(config), set_=["cache.dri=y"]).error.startswith(
        f"{config}: unknown keys 'judge.modle', 'judge.concurency';")


def test_every_unknown_metric_of_a_config_is_named_in_one_run(run_score, tmp_path):
    # item 23's two typos, in metric names: metrics and thresholds each misspell one; the run named the first alone
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    config = tmp_path / "c.yaml"
    config.write_text("metrics: [sufficency]\nthresholds:\n  completness: 2\n", encoding="utf-8")
    assert run_score(source, config=str(config)).error == (
        f"{config}: unknown metric 'sufficency'; did you mean 'sufficiency'? (known metrics: sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise, groundedness or a "
        "judge defined in the config); also unknown: 'completness' in thresholds (did you mean 'completeness'?)")


# a hostile -m: a comma list with a typo in it, a quoted "-m a -m b", a list with a non-metric;
# before, the first got "did you mean 'sufficiency'?" (dropping completeness), the second no hint
def test_a_metric_list_with_a_typo_gets_one_m_each_with_the_typo_named(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    assert run_score(source, metric=["sufficiency,completness"]).error == (
        "-m/--metric: unknown metric 'sufficiency,completness'; one metric per -m: -m sufficiency -m completeness (metrics: "
        "[sufficiency, completeness] in a config); 'completness' read as 'completeness' (known metrics: sufficiency, completeness, "
        "passage_relevance, sufficient_k, abstention, pairwise, groundedness or a judge defined in the config)")
    assert "; one metric per -m: -m sufficiency -m completeness (metrics: [sufficiency, completeness] in a config); 'sufficency' read " \
        "as 'sufficiency' (known" in run_score(source, metric=["sufficency -m completeness"]).error
    assert "; one metric per -m; 'xyzzy' is not a metric (known" in run_score(source, metric=["sufficiency,xyzzy"]).error

"""Custom judges: a team's own criteria as a metric defined in YAML (issue 15), the bundled
groundedness judge, extensions of the built-ins, `ragjudge judges` and `ragjudge render`."""

from __future__ import annotations

import json

import pytest
from conftest import read_jsonl, write_jsonl
from helpers import BINARY, SCALE, config_file, judge_with
from helpers import CUSTOM_ROWS as ROWS


def test_judges_lists_built_in_bundled_and_configured_metrics(run_cli, tmp_path):
    result = run_cli(["judges", "-c", config_file(tmp_path, SCALE)], judge=False)
    assert result.code == 0
    assert "sufficiency (built-in, default): yes/no, pass at >= 0.5; needs request, context" in result.stdout
    assert "completeness (built-in, default): 1..5, pass at >= 3; needs response, expected_response|expected_facts" in result.stdout
    assert "groundedness (bundled): yes/no, pass at >= 0.5; needs context, response" in result.stdout
    assert "passage_relevance (built-in): 0..1, pass at >= 0.5; needs request, context" in result.stdout  # judged when named (issue 63)
    assert "sufficient_k (built-in): yes/no, pass at >= 0.5; needs request, context" in result.stdout
    assert "faithful_1to5 (config): 1..5, pass at >= 4; needs context, response" in result.stdout


def test_render_prints_the_exact_messages_with_no_call(run_cli, tmp_path, server):
    config = config_file(tmp_path, BINARY)
    source = write_jsonl(tmp_path / "in.jsonl", ROWS)
    result = run_cli(["render", source, "-m", "cites_sources", "--row", "2", "-c", config], judge=False)
    assert result.code == 0, result.stderr
    assert "--- system ---\nYou are a strict, impartial judge." in result.stdout
    assert '--- user ---\nDoes the response name the document titled below as its source?\n<data name="source_title">\nParis guide\n</data>' in result.stdout
    assert "The Colosseum is in Rome. It was built by Romans." in result.stdout
    skipped = run_cli(["render", source, "-m", "cites_sources", "--row", "3", "-c", config], judge=False)
    assert "# no call: skipped: no response" in skipped.stdout
    out_of_range = run_cli(["render", source, "-m", "cites_sources", "--row", "9", "-c", config], judge=False)
    assert out_of_range.code == 2 and "--row 9: the input has 3 row(s)" in out_of_range.stderr
    assert server.calls == 0
    # the messages shown are those sent
    server.keep_requests = True
    run_cli(["score", write_jsonl(tmp_path / "one.jsonl", ROWS[1:2]), "-c", config, "-m", "cites_sources", "--no-cache", "--min-pass-rate", "0"])
    sent = server.requests[0]["messages"]
    assert all(message["content"] in result.stdout for message in sent)


def _load(config: str) -> list:
    """What `ragjudge judges -c CONFIG` does before it prints: load the config (its judges checked)
    and describe the metrics."""
    from ragjudge.catalog import describe
    from ragjudge.settings import load_config

    return describe(load_config(config))


def _refused(config: str) -> str:
    """The one line `ragjudge judges -c CONFIG` prints after "error: ", checked to be an exit 2."""
    from ragjudge.errors import RagjudgeError

    with pytest.raises(RagjudgeError) as caught:
        _load(config)
    assert caught.value.exit_code == 2
    return str(caught.value)


# -- faults found by an adversarial tester ---------------------------------------------------


NESTED_4 = "{% for _ in response %}" * 4 + "x" + "{% endfor %}" * 4
DOUBLING = "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(16) }}"


@pytest.mark.parametrize("prompt, message", [
    pytest.param(NESTED_4, "judge 'cites_sources': the prompt nests for-loops 4 deep; at most 2 may be nested (a loop inside a loop)",
                 id="four_nested_loops"),
    pytest.param("{% for a in [1] %}{% for b in [2] %}{% for c in [3] %}{{ response }}{% endfor %}{% endfor %}{% endfor %}",
                 "judge 'cites_sources': the prompt nests for-loops 3 deep; at most 2 may be nested", id="three_nested_loops"),
    pytest.param("{% for i in range(5000) %}{% endfor %}{{ response }}",
                 "judge 'cites_sources': the prompt goes past a template limit on sample values: range() of 5,000 numbers is over the "
                 "limit of 1,000; simplify the template", id="range"),
    pytest.param("{% for c in response %}{{ c }}{% endfor %}",
                 "judge 'cites_sources': the prompt goes past a template limit on sample values: a text field cannot be looped over "
                 "character by character; use it whole, or loop over its words or lines (response.split(), response.splitlines())",
                 id="characters_of_a_text"),
    pytest.param("{{ response|list|length }}", "a text field cannot be looped over character by character", id="text_as_a_list"),
    pytest.param("{{ response * 10**6 }}", "the prompt goes past a template limit on sample values: '*' would make a value of size 16,000,000, "
                 "over the limit of 10,000,000 (a character counts 1, an item of a list 100); simplify the template", id="text_times_a_large_number"),
    pytest.param("{{ 'x' * 10**8 }}", "'*' would make a value of size 100,000,000, over the limit of 10,000,000", id="x_times_10_8"),
    pytest.param("{{ 7 ** 100000 }}{{ response }}", "'**' would make a number over 10,000 bits", id="power"),
    pytest.param("{{ response|center(10**8) }}", "the filter center would make a value of size 100,000,000, over the limit of 10,000,000",
                 id="center"),
    pytest.param("{{ response.ljust(10**8) }}", "ljust() is given 100,000,000, over the limit of 10,000,000", id="ljust"),
    pytest.param(DOUBLING, "the template runs more than 20,000 loop iterations and calls", id="macro_calls_doubling"),
    pytest.param("{{ 5|round(-100000) }}{{ response }}", "round(): precision must be at most 1,000 (either sign)", id="round"),
    pytest.param("{{ [1]|tojson(indent=10**6) }}{{ response }}", "tojson(): indent must be at most 100 (either sign)", id="tojson_indent"),
    pytest.param("{{ response.encode() }}", "the prompt reaches for something a template may not use (access to attribute 'encode'",
                 id="bytes"),
    pytest.param("{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}",
                 "judge 'cites_sources': the prompt has a recursive for-loop; a judge's template may not use them", id="recursive_loop"),
    # found by a second adversarial review: calls made inside map/sum were not counted (84 s a
    # render), a dict view printed by repr weighed 1 (3.6 GB), and a text made from a field
    # (response.lower(), response[:]) could be looped over character by character
    pytest.param("{% set r = range(1000) %}{% for i in range(19) %}{% for j in r %}{{ r|map('abs')|sum }}{% endfor %}{% endfor %}"
                 "{{ response }}", "the template runs more than 20,000 loop iterations and calls", id="calls_inside_map"),
    pytest.param("{% set d = {1: '\U000e0001' * 9990000} %}{{ d.items() }}{{ response }}",
                 "printing a value would make a value of size 99,9", id="dict_view_printed_by_repr"),
    pytest.param("{% set s = '\U000e0001' * 2000000 %}{{ [s] }}{{ response }}", "printing a value would make a value of size", id="list_printed_by_repr"),
    pytest.param("{% for c in response.lower() %}[{{ c }}]{% endfor %}", "a text field cannot be looped over character by character",
                 id="characters_of_a_method_result"),
    pytest.param("{% for c in response[:] %}[{{ c }}]{% endfor %}", "a text field cannot be looped over character by character",
                 id="characters_of_a_slice"),
    pytest.param("{% for c in response|lower %}[{{ c }}]{% endfor %}", "a text field cannot be looped over character by character",
                 id="characters_of_a_filter_result"),
])
def test_a_template_past_a_limit_exits_2_when_the_config_loads(tmp_path, prompt, message):
    config = config_file(tmp_path, judge_with(prompt))
    error = _refused(config)  # `ragjudge judges` loads the config too
    assert message in error, error
    assert "unexpected" not in error and "Traceback" not in error


def test_sensible_templates_stay_within_the_limits(run_cli, tmp_path):
    prompt = ("{% set words = response.split() %}{% for w in words[1:4] %}[{{ w|upper }}]{% endfor %} {{ words|length }} words\n"
              "{% for i in range(2) %}{% for j in ['a', 'b'] %}{{ i }}{{ j }} {% endfor %}{% endfor %}\n"
              "{{ '%s|%s'|format(response|wordcount, source_title|length) }} {{ 'Paris' in response }} {{ response|truncate(20) }}\n"
              "{{ response|replace('Paris', 'PARIS') ~ '!' }} {{ '{}-{}'.format(1, 2) }} {{ ['x', 'y']|join('+') }} {{ 2 ** 10 }}")
    config = config_file(tmp_path, judge_with(prompt))
    result = run_cli(["render", write_jsonl(tmp_path / "in.jsonl", ROWS), "-m", "cites_sources", "--row", "1", "-c", config], judge=False)
    assert result.code == 0, result.stderr
    assert "[THE][EIFFEL][TOWER] 8 words\n0a 0b 1a 1b \n8|46 True <response>\nThe...\n" in result.stdout
    assert "<response>\nThe Eiffel Tower is in PARIS.\n</response>! 1-2 x+y 1024" in result.stdout


@pytest.mark.parametrize("text, message", [
    pytest.param(SCALE.replace("min: 1", "min: .nan"), "judge 'faithful_1to5': min must be a finite number (got nan)", id="min_nan"),
    pytest.param(SCALE.replace("max: 5", "max: .inf"), "judge 'faithful_1to5': max must be a finite number (got inf)", id="max_inf"),
    pytest.param(SCALE.replace("min: 1", "min: -.inf"), "judge 'faithful_1to5': min must be a finite number (got -inf)", id="min_minus_inf"),
    pytest.param(SCALE.replace("threshold: 4", "threshold: .nan"), "judge 'faithful_1to5': threshold must be a finite number (got nan)",
                 id="threshold_nan"),
    pytest.param(BINARY.replace("kind: binary", "kind: binary\n    threshold: .inf"),
                 "judge 'cites_sources': threshold must be a finite number (got inf)", id="binary_threshold_inf"),
])
def test_scale_bounds_and_thresholds_must_be_finite(tmp_path, text, message):
    error = _refused(config_file(tmp_path, text))
    assert message in error, error


def binary_example(verdict: str) -> str:
    return BINARY + f"    examples:\n      - inputs: {{response: It is in Paris., source_title: Paris guide}}\n        verdict: {verdict}\n"


@pytest.mark.parametrize("text, message", [
    pytest.param(SCALE.replace("verdict: 5", "verdict: great"),
                 "judge 'faithful_1to5': example 1 has verdict 'great'; a scale judge takes a number from 1 to 5", id="scale_word"),
    pytest.param(SCALE.replace("verdict: 5", "verdict: 42"),
                 "judge 'faithful_1to5': example 1 has verdict 42; a scale judge takes a number from 1 to 5", id="scale_outside"),
    pytest.param(SCALE + "      - inputs: {response: x}\n        verdict: .nan\n",
                 "judge 'faithful_1to5': example 2 has verdict nan; a scale judge takes a number from 1 to 5", id="scale_nan_second"),
    pytest.param(binary_example("maybe"),
                 "judge 'cites_sources': example 1 has verdict 'maybe'; a binary judge takes yes or no (true or false)", id="binary_maybe"),
    pytest.param(binary_example("7"),
                 "judge 'cites_sources': example 1 has verdict 7; a binary judge takes yes or no (true or false)", id="binary_number"),
])
def test_example_verdicts_are_checked_when_the_config_loads(tmp_path, text, message):
    error = _refused(config_file(tmp_path, text))
    assert message in error, error


@pytest.mark.parametrize("text", [binary_example("yes"), binary_example('"no"'), binary_example("false"), SCALE.replace("verdict: 5", "verdict: 2.5"),
                                  SCALE.replace("verdict: 5", 'verdict: "4"')])
def test_example_verdicts_that_suit_the_judge_load(tmp_path, text):
    assert _load(config_file(tmp_path, text))  # no ConfigError: `ragjudge judges` exits 0


def extension(metric: str, inputs: str, verdict: str) -> str:
    return f"extend:\n  {metric}:\n    examples:\n      - inputs: {{{inputs}}}\n        verdict: {verdict}\n"


@pytest.mark.parametrize("text, message", [
    pytest.param(extension("sufficiency", "request: Where, foo: bar", "yes"),
                 "extend.sufficiency: example 1 gives unknown field(s) foo; sufficiency reads request, context, passages, expected_facts, "
                 "expected_response", id="unknown_field"),
    pytest.param(extension("sufficiency", "request: Where", "banana"),
                 "extend.sufficiency: example 1 has verdict 'banana'; sufficiency takes yes or no (true or false)", id="banana"),
    pytest.param(extension("sufficiency", "request: Where", "0.3"),
                 "extend.sufficiency: example 1 has verdict 0.3; sufficiency takes yes or no (true or false)", id="a_number_for_yes_no"),
    pytest.param(extension("completeness", "response: Paris., expected_response: Paris.", "7"),
                 "extend.completeness: example 1 has verdict 7; completeness takes a number from 1 to 5", id="completeness_outside"),
    pytest.param(extension("completeness", "response: Paris., expected_response: Paris.", "yes"),
                 "extend.completeness: example 1 has verdict yes; completeness takes a number from 1 to 5", id="completeness_yes"),
    pytest.param(extension("completeness", "response: Paris., context: [x]", "5"),
                 "extend.completeness: example 1 gives unknown field(s) context; completeness reads request, response, expected_response, "
                 "expected_facts", id="completeness_context"),
])
def test_extension_examples_are_checked_when_the_config_loads(tmp_path, text, message):
    error = _refused(config_file(tmp_path, text))
    assert message in error, error


@pytest.mark.parametrize("name, shown", [("ünï", "'ünï'"), ('"foo\\n"', "'foo\\n'"), ("Foo", "'Foo'"), ("1abc", "'1abc'"), ('""', "''")])
def test_a_judge_name_outside_the_pattern_is_told_the_pattern(tmp_path, name, shown):
    error = _refused(config_file(tmp_path, BINARY.replace("name: cites_sources", f"name: {name}")))
    assert ("invalid value for 'judges item 1.name': should be 1 to 40 characters: lower case letters a-z, digits and _, starting with "
            f"a letter (got {shown})") in error, error


def test_an_example_fences_a_column_as_a_row_does(run_cli, tmp_path):
    # the few-shot turn fenced source_title as <data>, the row as <data name="source_title">
    config = config_file(tmp_path, binary_example("yes"))
    result = run_cli(["render", write_jsonl(tmp_path / "in.jsonl", ROWS), "-m", "cites_sources", "--row", "1", "-c", config], judge=False)
    assert result.code == 0, result.stderr
    users = [part for part in result.stdout.split("--- user ---\n")[1:]]
    assert len(users) == 2  # the example's turn, then the row's
    assert '<data name="source_title">\nParis guide\n</data>' in users[0].split("--- assistant ---")[0]
    assert '<data name="source_title">\nParis guide\n</data>' in users[1]


def test_a_render_past_its_time_is_stopped(monkeypatch):
    # whatever the counts let through, a render stops at MAX_SECONDS (here 0: at its first step)
    from ragjudge.judges import sandbox

    template = sandbox.compile_template("timed", "{% for w in response.split() %}{{ w }}{% endfor %}")
    assert sandbox.render(template, {"response": sandbox.Text("a b c")}) == "abc"
    monkeypatch.setattr(sandbox, "MAX_SECONDS", 0.0)
    with pytest.raises(sandbox.TemplateLimitError, match="the template takes more than 0 s of CPU to render"):
        sandbox.render(template, {"response": sandbox.Text("a b c")})


def test_a_renders_time_is_its_own_cpu_time_not_the_machines_load(monkeypatch):
    # under load (CI with other jobs) a render waiting for the CPU hit the 2 s wall-clock limit
    # before the step limit it was written to show: the budget counts the render's own CPU time
    import time

    from ragjudge.judges import sandbox

    monkeypatch.setattr(sandbox, "MAX_SECONDS", 0.05)
    budget = sandbox._Budget()
    time.sleep(0.2)  # waiting, as a render does while other processes hold the CPU
    budget.step()  # not stopped: it has used almost no CPU
    deadline = time.thread_time() + 0.1
    while time.thread_time() < deadline:  # working: 0.1 s of this thread's CPU
        pass
    with pytest.raises(sandbox.TemplateLimitError, match="more than 0.05 s of CPU"):
        budget.step()


def test_report_of_a_parquet_table_reads_the_judges_its_run_defined(run_cli, tmp_path):
    # the scored Parquet file records the run's gate, which names the config's own metric: without the
    # judge's definition recorded too, `report` (no -c) refused "unknown metric 'cites_sources'"
    import json as _json

    import pyarrow.parquet as pq

    config = config_file(tmp_path, BINARY)
    scored = tmp_path / "run.parquet"
    ran = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-c", config, "-m", "cites_sources", "--min-pass-rate", "0.4",
                   "-o", str(scored), "-q"])
    assert ran.code == 1 and "FAIL cites_sources: pass rate 0.00 < 0.40 (0 of 2 ok rows passed)" in ran.stderr
    record = _json.loads(pq.read_schema(scored).metadata[b"ragjudge.run"])
    assert [judge["name"] for judge in record["judges"]] == ["cites_sources"] and record["metrics"] == ["cites_sources"]
    report = run_cli(["report", str(scored), "-o", str(tmp_path / "r.html")], judge=False)
    assert report.code == 0 and report.stderr == ""
    assert "FAIL cites_sources: pass rate 0.00 &lt; 0.40 (0 of 2 ok rows passed)" in (tmp_path / "r.html").read_text()  # the run's line
    # a record this version cannot read (another version's keys, say) falls back to the defaults, and says so
    table = pq.read_table(scored)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, b"ragjudge.run": b'{"gate": {"min_pass_rat": 1}}'}), scored)
    unreadable = run_cli(["report", str(scored), "-o", str(tmp_path / "r.html"), "-c", config], judge=False)
    assert unreadable.code == 0 and unreadable.stderr == ""  # -c: the record is not read
    fallback = run_cli(["report", str(scored), "-o", str(tmp_path / "r.html")], judge=False)
    assert fallback.stderr.startswith(f"note: the run's settings recorded in {scored} cannot be read (")


def test_custom_metrics_take_samples_and_the_agreement_command(run_score, run_cli, tmp_path, judge):
    config = config_file(tmp_path, SCALE)
    out = tmp_path / "out.jsonl"
    rows = [{**row, "human": human} for row, human in zip(ROWS[:2], (5, 2))]
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["faithful_1to5"], min_pass_rate=["0"], config=config, output=str(out), samples=3)
    assert result.code == 0, result.text
    assert [r["faithful_1to5_agreement"] for r in read_jsonl(out)] == [1.0, 1.0]
    report = run_cli(["agreement", str(out), "-m", "faithful_1to5", "--labels", "human", "-c", config, "--json"], judge=False)
    assert json.loads(report.stdout)["overall"]["n"] == 2


def test_extending_a_built_in_changes_its_prompt_and_its_version(run_score, run_cli, tmp_path, judge):
    judge.keep_requests = True
    rows = [{"id": "a", "request": "Where is it?", "context": ["It is in Paris."], "expected_response": "Paris"}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    run_score(source, metric=["sufficiency"], min_pass_rate=["0"])
    extended = config_file(tmp_path, "extend:\n  sufficiency:\n    instructions: A city named alone counts as its country's city too.\n"
                                     "    examples:\n      - inputs:\n          request: Where?\n          context: [In Lyon.]\n"
                                     "          expected_facts: [Lyon]\n        verdict: yes\n        rationale: Lyon is stated.\n")
    result = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], config=extended)
    assert result.code == 0, result.text
    assert judge.calls == 2  # a new prompt: not answered from the cache
    plain, more = (body["messages"][-1]["content"] for body in judge.requests)
    assert "Instructions for this domain:\nA city named alone counts as its country's city too." in more and "Instructions" not in plain
    assert "<example>\n<request>\nWhere?\n</request>\n<context>\n[1] In Lyon.\n</context>" in more and "Verdict: yes. Why: Lyon is stated." in more
    listed = {item["name"]: item["version"] for item in json.loads(run_cli(["judges", "-c", extended, "--json"], judge=False).stdout)}
    assert listed["sufficiency"].startswith("sufficiency-2026-11-30.1+") and len(listed["sufficiency"]) == len("sufficiency-2026-11-30.1+") + 8


def test_the_docs_per_passage_judge_runs_against_the_fake_server(run_cli, tmp_path):
    # the fake answers a per-passage judge in its shape: one verdict a passage, not the binary reply
    import re
    from pathlib import Path

    docs = (Path(__file__).parent.parent / "docs" / "custom-judges.md").read_text()
    example = next(block for block in re.findall(r"```yaml\n(.*?)```", docs, re.S) if "per: passage" in block)
    config = config_file(tmp_path, example)
    summary = tmp_path / "summary.json"
    result = run_cli(["score", "sample_data/rag_eval.jsonl", "-c", config, "-m", "names_founder", "--limit", "4", "-o", str(tmp_path / "o.jsonl"),
                      "--summary-json", str(summary), "--min-pass-rate", "names_founder=0"])
    assert result.code == 0, result.stderr
    rows = read_jsonl(tmp_path / "o.jsonl")[:4]
    assert [row["names_founder_status"] for row in rows] == ["ok"] * 4
    assert all(set(row["names_founder_verdicts"]) <= {"yes", "no"} and row["names_founder_verdicts"] for row in rows)

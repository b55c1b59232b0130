"""Custom judges: a team's own criteria as a metric defined in YAML (issue 15), the bundled
groundedness judge, extensions of the built-ins, `ragjudge judges` and `ragjudge render`."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl

BINARY = """\
judges:
  - name: cites_sources
    description: does the response name the source it relies on
    needs: [response, source_title]
    kind: binary
    prompt: |
      Does the response name the document titled below as its source?
      {{ source_title }}
      {{ response }}
"""

SCALE = """\
judges:
  - name: faithful_1to5
    description: how much of the response the passages support, 1..5
    needs: [context, response]
    kind: scale
    min: 1
    max: 5
    threshold: 4
    prompt: |
      Rate from 1 to 5 how much of the response the passages support.
      {{ passages }}
      {{ response }}
    examples:
      - inputs: {passages: ["Paris is the capital of France."], response: "Paris is the capital of France."}
        verdict: 5
        rationale: Every sentence is stated.
"""

ROWS = [
    {"id": "a", "request": "Where is the Eiffel Tower?", "context": ["The Eiffel Tower is in Paris. It opened in 1889."],
     "response": "The Eiffel Tower is in Paris.", "source_title": "Paris guide"},
    {"id": "b", "request": "Where is the Eiffel Tower?", "context": ["The Eiffel Tower is in Paris. It opened in 1889."],
     "response": "The Colosseum is in Rome. It was built by Romans.", "source_title": "Paris guide"},
    {"id": "c", "request": "Where?", "context": ["Text."], "response": None, "source_title": "Paris guide"},
]


def config_file(tmp_path, text: str, name: str = "judges.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_binary_custom_metric_end_to_end(run_cli, tmp_path, server):
    config = config_file(tmp_path, BINARY)
    source = write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    summary = tmp_path / "s.json"
    result = run_cli(["score", source, "-c", config, "-m", "cites_sources", "-o", str(out), "--summary-json", str(summary)])
    written = read_jsonl(out)
    assert [r["cites_sources_status"] for r in written] == ["ok", "ok", "skipped"]
    assert written[2]["cites_sources_error"] == "no response"
    assert {"cites_sources_score", "cites_sources_passed", "cites_sources_rationale", "cites_sources_cached"} <= set(written[0])
    assert all(r["cites_sources_score"] in (0.0, 1.0) for r in written[:2])
    doc = json.loads(summary.read_text())
    assert doc["metrics"]["cites_sources"]["ok"] == 2 and doc["metrics"]["cites_sources"]["skipped"] == 1
    assert result.code == (0 if all(r["cites_sources_passed"] for r in written[:2]) else 1)
    calls = server.calls
    again = run_cli(["score", source, "-c", config, "-m", "cites_sources", "-o", str(out), "--min-pass-rate", "0"])
    assert again.code == 0 and server.calls == calls  # every verdict from the cache
    assert [r["cites_sources_cached"] for r in read_jsonl(out)] == [True, True, None]
    # the column a judge reads reaches it fenced as data
    server.keep_requests = True
    run_cli(["score", source, "-c", config, "-m", "cites_sources", "--no-cache", "--min-pass-rate", "0"])
    prompt = server.requests[0]["messages"][-1]["content"]
    assert '<data name="source_title">\nParis guide\n</data>' in prompt and "<response>\nThe Eiffel Tower is in Paris.\n</response>" in prompt


def test_a_1_to_5_custom_metric_end_to_end(run_cli, tmp_path, server):
    server.keep_requests = True
    config = config_file(tmp_path, SCALE)
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-c", config, "-m", "faithful_1to5", "-o", str(out)])
    written = read_jsonl(out)
    # row a: its one sentence is in the passages (5); row b: none of its two (1); row c: no response
    assert [(r["faithful_1to5_status"], r["faithful_1to5_score"], r["faithful_1to5_passed"]) for r in written] == [
        ("ok", 5.0, True), ("ok", 1.0, False), ("skipped", None, None)]
    assert result.code == 1 and "FAIL faithful_1to5: pass rate 0.50 < 1.00 (1 of 2 ok rows passed)" in result.stderr
    body = server.requests[0]
    assert body["response_format"]["json_schema"]["schema"]["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # the few-shot example, as an earlier turn
    assert json.loads(body["messages"][2]["content"]) == {"rationale": "Every sentence is stated.", "score": 5.0}


def test_custom_metrics_take_samples_and_the_agreement_command(run_cli, tmp_path, server):
    config = config_file(tmp_path, SCALE)
    out = tmp_path / "out.jsonl"
    rows = [{**row, "human": human} for row, human in zip(ROWS[:2], (5, 2))]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-c", config, "-m", "faithful_1to5", "-o", str(out),
                      "--samples", "3", "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    assert [r["faithful_1to5_agreement"] for r in read_jsonl(out)] == [1.0, 1.0]
    report = run_cli(["agreement", str(out), "-m", "faithful_1to5", "--labels", "human", "-c", config, "--json"], judge=False)
    assert json.loads(report.stdout)["overall"]["n"] == 2


def test_groundedness_works_with_no_config_of_ones_own(run_cli, tmp_path, server):
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-m", "groundedness", "-o", str(out)])
    written = read_jsonl(out)
    assert [r["groundedness_status"] for r in written] == ["ok", "ok", "skipped"]
    assert written[0]["groundedness_score"] == 1.0 and written[0]["groundedness_missing"] == []
    assert written[1]["groundedness_score"] == 0.0
    assert written[1]["groundedness_missing"] == ["The Colosseum is in Rome.", "It was built by Romans."]  # the unsupported claims
    assert result.code == 1


def test_an_unjudged_claim_is_never_a_yes(run_cli, tmp_path, server):
    bad = json.dumps({"claims": [{"claim": "It is in Paris.", "reason": "r", "supported": "probably"}], "rationale": "r", "verdict": "yes"})
    server.replies.extend([bad, bad])
    out = tmp_path / "out.jsonl"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS[:1]), "-m", "groundedness", "-o", str(out), "--max-error-rate", "1"])
    row = read_jsonl(out)[0]
    assert row["groundedness_status"] == "error" and row["groundedness_error"] == "unreadable judge reply: claim(s) 1 not judged"


@pytest.mark.parametrize("text, message", [
    pytest.param(BINARY.replace("{{ source_title }}", "{{ source_titel }}"),
                 "judge 'cites_sources': the prompt names unknown field(s) source_titel; available: request, passages, context, response, "
                 "expected_response, expected_facts, id, source_title", id="unknown_field"),
    pytest.param(BINARY.replace("name: cites_sources", "name: sufficiency"),
                 "judges: 'sufficiency' is a metric that ships with ragjudge; give your judge another name; to add instructions or "
                 "examples to it, use extend.sufficiency", id="clash_with_built_in"),
    pytest.param(BINARY.replace("name: cites_sources", "name: groundedness"),
                 "judges: 'groundedness' is a metric that ships with ragjudge; give your judge another name", id="clash_with_bundled"),
    pytest.param(BINARY.replace("kind: binary", "kind: likert"), "invalid value for 'judges item 1.kind': should be 'binary' or 'scale'",
                 id="unknown_kind"),
    pytest.param(SCALE.replace("min: 1", "min: 5"), "judge 'faithful_1to5': min (5) must be below max (5)", id="min_not_below_max"),
    pytest.param(SCALE.replace("threshold: 4", "threshold: 7"), "judge 'faithful_1to5': threshold 7 is outside its scale 1..5",
                 id="threshold_outside"),
    pytest.param(BINARY.replace("{{ response }}", "{{ response }"), "judge 'cites_sources': prompt line 3: unexpected '}'",
                 id="template_syntax"),
])
def test_a_bad_definition_exits_2_with_the_fix(run_cli, tmp_path, text, message):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-c", config_file(tmp_path, text)])
    assert result.code == 2
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("expression", [
    "{{ response.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ ''.__class__.__base__ }}",
])
def test_a_template_that_reaches_for_python_internals_fails_cleanly(run_cli, tmp_path, expression):
    text = BINARY.replace("{{ response }}", "{{ response }} " + expression)
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-c", config_file(tmp_path, text)])
    assert result.code == 2
    assert "the prompt reaches for something a template may not use" in result.stderr and "Traceback" not in result.stderr


def test_extending_a_built_in_changes_its_prompt_and_its_version(run_cli, tmp_path, server):
    server.keep_requests = True
    rows = [{"id": "a", "request": "Where is it?", "context": ["It is in Paris."], "expected_response": "Paris"}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    run_cli(["score", source, "-m", "sufficiency", "--min-pass-rate", "0"])
    extended = config_file(tmp_path, "extend:\n  sufficiency:\n    instructions: A city named alone counts as its country's city too.\n"
                                     "    examples:\n      - inputs:\n          request: Where?\n          context: [In Lyon.]\n"
                                     "          expected_facts: [Lyon]\n        verdict: yes\n        rationale: Lyon is stated.\n")
    result = run_cli(["score", source, "-m", "sufficiency", "-c", extended, "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    assert server.calls == 2  # a new prompt: not answered from the cache
    plain, more = (body["messages"][-1]["content"] for body in server.requests)
    assert "Instructions for this domain:\nA city named alone counts as its country's city too." in more and "Instructions" not in plain
    assert "<example>\n<request>\nWhere?\n</request>\n<context>\n[1] In Lyon.\n</context>" in more and "Verdict: yes. Why: Lyon is stated." in more
    listed = {item["name"]: item["version"] for item in json.loads(run_cli(["judges", "-c", extended, "--json"], judge=False).stdout)}
    assert listed["sufficiency"].startswith("sufficiency-2026-11-30.1+") and len(listed["sufficiency"]) == len("sufficiency-2026-11-30.1+") + 8


def test_judges_lists_built_in_bundled_and_configured_metrics(run_cli, tmp_path):
    result = run_cli(["judges", "-c", config_file(tmp_path, SCALE)], judge=False)
    assert result.code == 0
    assert "sufficiency (built-in, default): yes/no, pass at >= 0.5; needs request, context" in result.stdout
    assert "completeness (built-in, default): 1..5, pass at >= 3; needs response, expected_response|expected_facts" in result.stdout
    assert "groundedness (bundled): yes/no, pass at >= 0.5; needs context, response" in result.stdout
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


def test_a_needed_column_that_is_missing_exits_2(run_cli, tmp_path):
    rows = [{k: v for k, v in row.items() if k != "source_title"} for row in ROWS]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-c", config_file(tmp_path, BINARY), "-m", "cites_sources"])
    assert result.code == 2
    assert "cites_sources needs a column 'source_title' and the input has none; columns: id, request, context, response" in result.stderr


# -- faults found by an adversarial tester ---------------------------------------------------

def judge_with(prompt: str, extra: str = "") -> str:
    """BINARY with another prompt (indented as a YAML block) and extra keys."""
    body = "".join(f"      {line}\n" for line in prompt.splitlines())
    return BINARY.split("    prompt: |\n")[0] + extra + "    prompt: |\n" + body


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
def test_a_template_past_a_limit_exits_2_when_the_config_loads(run_cli, tmp_path, prompt, message):
    config = config_file(tmp_path, judge_with(prompt))
    result = run_cli(["judges", "-c", config], judge=False)  # `ragjudge judges` loads the config too
    assert result.code == 2
    assert message in result.stderr, result.stderr
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("prompt, extra, message", [
    pytest.param("{{ 1/0 }}{{ response }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: ZeroDivisionError: division by zero; fix the template so "
                 "that it renders for any row", id="zero_division"),
    pytest.param("{{ response|truncate(-1) }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: AssertionError: expected length >= 3, got -1", id="assertion"),
    pytest.param("{{ '%s%s'|format(response) }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: TypeError: not enough arguments for format string", id="type_error"),
    pytest.param("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "",
                 "judge 'cites_sources': the prompt fails on sample values: RecursionError: maximum recursion depth exceeded",
                 id="recursion"),
    pytest.param("{{ response }}", "    system: \"{{ 1/0 }}\"\n",
                 "judge 'cites_sources': the system fails on sample values: ZeroDivisionError: division by zero", id="system"),
    pytest.param("{{ response }}", "    system: \"{{ 'x' * 10**8 }}\"\n",
                 "judge 'cites_sources': the system goes past a template limit on sample values: '*' would make a value of size 100,000,000",
                 id="system_limit"),
])
def test_a_template_that_raises_on_sample_values_is_a_config_error(run_cli, tmp_path, prompt, extra, message):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-c", config_file(tmp_path, judge_with(prompt, extra))])
    assert result.code == 2
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "unexpected" not in result.stderr


IF_B = "{% if 'Colosseum' in response %}"  # true for row b only, never for the sample values checked at load


@pytest.mark.parametrize("prompt, extra, error", [
    pytest.param(IF_B + "{{ 1/0 }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: ZeroDivisionError: division by zero", id="zero_division"),
    pytest.param("{% macro m() %}{{ m() }}{% endmacro %}" + IF_B + "{{ m() }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: RecursionError: maximum recursion depth exceeded",
                 id="recursion"),
    pytest.param(IF_B + "{{ response|truncate(-1) }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: AssertionError: expected length >= 3, got -1",
                 id="assertion"),
    pytest.param(IF_B + "{{ '%s%s'|format(response) }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: TypeError: not enough arguments for format string",
                 id="type_error"),
    pytest.param(IF_B + "{{ 'x' * 10**8 }}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: TemplateLimitError: '*' would make a value of size "
                 "100,000,000, over the limit of 10,000,000 (a character counts 1, an item of a list 100)", id="limit"),
    pytest.param(IF_B + "{% for a in response %}{% for b in response %}{{ a }}{% endfor %}{% endfor %}{% endif %}{{ response }}", "",
                 "judge 'cites_sources': the prompt template failed on this row: TemplateLimitError: a text field cannot be looped "
                 "over character by character; use it whole, or loop over its words or lines (response.split(), response.splitlines())",
                 id="characters_of_a_text"),
    pytest.param("{{ response }}", f"    system: \"{IF_B}{{{{ 1/0 }}}}{{% endif %}}You judge.\"\n",
                 "judge 'cites_sources': the system template failed on this row: ZeroDivisionError: division by zero", id="system"),
])
def test_a_template_that_fails_on_one_row_fails_that_row_only(run_cli, tmp_path, server, prompt, extra, error):
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", ROWS), "-c", config_file(tmp_path, judge_with(prompt, extra)),
                      "-m", "cites_sources", "-o", str(out), "--max-error-rate", "1", "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    written = read_jsonl(out)
    assert [r["cites_sources_status"] for r in written] == ["ok", "error", "skipped"]
    if "RecursionError" in error:
        assert written[1]["cites_sources_error"].startswith(error)
    else:
        assert written[1]["cites_sources_error"] == error
    assert server.calls == 1  # row a judged; row b never reached the judge


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


def test_a_judge_may_need_and_read_the_id(run_cli, tmp_path, server):
    server.keep_requests = True
    text = BINARY.replace("needs: [response, source_title]", "needs: [id, response]").replace("{{ source_title }}", "Row {{ id }}")
    rows = [*ROWS, {**ROWS[0], "id": ""}]
    out = tmp_path / "out.jsonl"
    run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-c", config_file(tmp_path, text), "-m", "cites_sources", "-o", str(out),
             "--min-pass-rate", "0"])
    written = read_jsonl(out)
    assert [(r["cites_sources_status"], r["cites_sources_error"]) for r in written] == [
        ("ok", None), ("ok", None), ("skipped", "no response"), ("skipped", "no id")]
    assert 'Row <data name="id">\na\n</data>' in server.requests[0]["messages"][-1]["content"]


@pytest.mark.parametrize("text, message", [
    pytest.param(SCALE.replace("min: 1", "min: .nan"), "judge 'faithful_1to5': min must be a finite number (got nan)", id="min_nan"),
    pytest.param(SCALE.replace("max: 5", "max: .inf"), "judge 'faithful_1to5': max must be a finite number (got inf)", id="max_inf"),
    pytest.param(SCALE.replace("min: 1", "min: -.inf"), "judge 'faithful_1to5': min must be a finite number (got -inf)", id="min_minus_inf"),
    pytest.param(SCALE.replace("threshold: 4", "threshold: .nan"), "judge 'faithful_1to5': threshold must be a finite number (got nan)",
                 id="threshold_nan"),
    pytest.param(BINARY.replace("kind: binary", "kind: binary\n    threshold: .inf"),
                 "judge 'cites_sources': threshold must be a finite number (got inf)", id="binary_threshold_inf"),
])
def test_scale_bounds_and_thresholds_must_be_finite(run_cli, tmp_path, text, message):
    result = run_cli(["judges", "-c", config_file(tmp_path, text)], judge=False)
    assert result.code == 2
    assert message in result.stderr, result.stderr


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
def test_example_verdicts_are_checked_when_the_config_loads(run_cli, tmp_path, text, message):
    result = run_cli(["judges", "-c", config_file(tmp_path, text)], judge=False)
    assert result.code == 2
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("text", [binary_example("yes"), binary_example('"no"'), binary_example("false"), SCALE.replace("verdict: 5", "verdict: 2.5"),
                                  SCALE.replace("verdict: 5", 'verdict: "4"')])
def test_example_verdicts_that_suit_the_judge_load(run_cli, tmp_path, text):
    assert run_cli(["judges", "-c", config_file(tmp_path, text)], judge=False).code == 0


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
def test_extension_examples_are_checked_when_the_config_loads(run_cli, tmp_path, text, message):
    result = run_cli(["judges", "-c", config_file(tmp_path, text)], judge=False)
    assert result.code == 2
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("name, shown", [("ünï", "'ünï'"), ('"foo\\n"', "'foo\\n'"), ("Foo", "'Foo'"), ("1abc", "'1abc'"), ('""', "''")])
def test_a_judge_name_outside_the_pattern_is_told_the_pattern(run_cli, tmp_path, name, shown):
    result = run_cli(["judges", "-c", config_file(tmp_path, BINARY.replace("name: cites_sources", f"name: {name}"))], judge=False)
    assert result.code == 2
    assert ("invalid value for 'judges item 1.name': should be 1 to 40 characters: lower case letters a-z, digits and _, starting with "
            f"a letter (got {shown})") in result.stderr, result.stderr


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
    with pytest.raises(sandbox.TemplateLimitError, match="the template takes more than 0 s to render"):
        sandbox.render(template, {"response": sandbox.Text("a b c")})

"""One run request, one way to count (issue 43): what a run is asked is checked once
(``ragjudge.run.ScoreRequest.check``), flags override the file key by key, every metric name is
checked, a bound that measured nothing fails, and every output counts and names the rows as the
run does. Each runs as ``ragjudge score`` does (``run_score``: the one run function) against the
in-process fake judge."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from conftest import write_jsonl
from helpers import TOWER_ROW as GOOD
from ragjudge.errors import ConfigError
from ragjudge.traces.spans import SpanView, TraceView, rows_frame

POOR = {**GOOD, "response": "I do not know."}


def _rows(path, passed: int, failed: int, **extra):
    rows = [{**GOOD, "id": f"r{i}", **extra} for i in range(passed)] + [{**POOR, "id": f"r{passed + i}", **extra} for i in range(failed)]
    return write_jsonl(path, rows)


# -- flags override the file, for every key -----------------------------------------------------

def test_a_pass_rate_flag_replaces_the_files_per_metric_map(run_score, tmp_path):
    # the file's {completeness: 0.5} survived --min-pass-rate 0 (exit 1 at 0.40 < 0.50)
    source = _rows(tmp_path / "in.jsonl", 2, 3)
    config = tmp_path / "c.yaml"
    config.write_text("gate:\n  min_pass_rate: {completeness: 0.5}\n")
    file_only = run_score(source, config=str(config), metric=["completeness"])
    assert file_only.code == 1 and "FAIL completeness: pass rate 0.40 < 0.50 (2 of 5 ok rows passed)" in file_only.lines
    flag = run_score(source, config=str(config), metric=["completeness"], min_pass_rate=["0"])
    assert flag.code == 0 and "PASS completeness: pass rate 0.40 >= 0.00 (2 of 5 ok rows passed)" in flag.lines
    one = run_score(source, config=str(config), metric=["completeness"], min_pass_rate=["completeness=0.3"])
    assert one.code == 0 and "PASS completeness: pass rate 0.40 >= 0.30 (2 of 5 ok rows passed)" in one.lines


def test_a_files_bound_on_a_metric_the_run_leaves_out_is_named_as_not_checked(run_score, tmp_path):
    # a shared config's completeness bounds were dropped without a word on a -m sufficiency run (the gate passed)
    source = _rows(tmp_path / "in.jsonl", 2, 3)
    config = tmp_path / "c.yaml"
    config.write_text("gate:\n  min_pass_rate: {completeness: 0.9, sufficiency: 0}\n  max_skip_rate: {completeness: 0.2}\n")
    run = run_score(source, config=str(config), metric=["sufficiency"])
    assert run.code == 0
    assert ("note: gate.min_pass_rate.completeness, gate.max_skip_rate.completeness are not checked: this run judges sufficiency "
            "(add -m METRIC, or metrics: in the config, to judge and gate it)") in run.notes
    plain = run_score(source, metric=["sufficiency"], min_pass_rate=["0"])  # the defaults' bounds on every metric are no such note
    assert plain.code == 0 and not [note for note in plain.notes if "not checked" in note]


def test_set_and_the_named_flags_compose_in_one_order():
    from ragjudge.options import load_layers

    # --set gate.min_pass_rate=0 with --min-pass-rate completeness=0.8 was refused as "a section, not a value"
    loaded = load_layers(None, {"min_pass_rate": ["completeness=0.8"]}, ["gate.min_pass_rate=0"])
    assert loaded.config.gate.min_pass_rate == {"sufficiency": 0.0, "completeness": 0.8, "passage_relevance": 0.0, "sufficient_k": 0.0,
                                                "abstention": 0.0, "pairwise": 0.0}  # a number: every built-in metric
    assert loaded.source("gate.min_pass_rate.completeness") == "--min-pass-rate"
    assert loaded.source("gate.min_pass_rate.sufficiency") == "--set gate.min_pass_rate"
    assert loaded.source("judge.timeout") == "default"
    # a single number and a metric's own in one option: the number first, whatever the order given
    assert load_layers(None, {"min_pass_rate": ["completeness=0.8", "0.5"]}).config.gate.min_pass_rate == {"sufficiency": 0.5,
                                                                                                           "completeness": 0.8,
                                                                                                           "passage_relevance": 0.5,
                                                                                                           "sufficient_k": 0.5,
                                                                                                           "abstention": 0.5, "pairwise": 0.5}
    # a later --set of a key replaces an earlier one's section
    assert load_layers(None, {}, ["judge.concurrency=3", "judge={model: openai/x}"]).config.judge.concurrency == 16


def test_a_file_section_keeps_what_the_flag_does_not_set(tmp_path):
    from ragjudge.options import load_layers

    config = tmp_path / "c.yaml"
    config.write_text("gate:\n  max_diagnosis: {retrieval: 0.1, generation: 0.2}\n  max_error_rate: {completeness: 0.1}\n")
    loaded = load_layers(str(config), {"max_diagnosis": ["retrieval=0.3"], "max_error_rate": ["0.05"]})
    assert loaded.config.gate.max_diagnosis == {"retrieval": 0.3, "generation": 0.2}  # the entry replaced, the other kept
    assert loaded.config.gate.max_error_rate == 0.05  # one number for every metric replaces the file's map
    assert loaded.source("gate.max_diagnosis.generation") == f"-c {config}"


# -- every metric name checked ---------------------------------------------------------------------

@pytest.mark.parametrize("option", ["max_skip_rate", "max_error_rate", "min_pass_rate", "threshold"])
def test_a_misspelt_metric_in_any_gate_option_is_exit_2_naming_the_runs_metrics(run_score, tmp_path, option):
    # --max-skip-rate sufficency=0.1 and --max-error-rate sufficency=0.1 exited 0
    run = run_score(_rows(tmp_path / "in.jsonl", 1, 0), **{option: ["sufficency=0.1"]})
    flag = "--" + option.replace("_", "-")
    assert run.code == 2 and run.error == (f"{flag} sufficency=...: this run does not judge 'sufficency'; did you mean 'sufficiency'? "
                                           "(it judges sufficiency, completeness)")


@pytest.mark.parametrize("key", ["max_skip_rate", "max_error_rate", "min_pass_rate", "allow_unjudged"])
def test_a_misspelt_metric_under_a_gate_key_of_the_file_is_exit_2(run_score, tmp_path, key):
    config = tmp_path / "c.yaml"
    config.write_text(f"gate:\n  {key}: {'[sufficency]' if key == 'allow_unjudged' else '{sufficency: 0.1}'}\n")
    run = run_score(_rows(tmp_path / "in.jsonl", 1, 0), config=str(config), metric=["sufficiency"])
    assert run.code == 2 and f"unknown metric 'sufficency' in gate.{key}; this run judges sufficiency" in run.error


# -- a bound that measured nothing fails -----------------------------------------------------------

def test_a_pass_rate_bound_on_a_metric_that_judged_no_row_fails(run_score, tmp_path):
    # no row has a context: "SKIP sufficiency: no row judged", exit 0
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a", "context": None}])
    run = run_score(source, min_pass_rate=["sufficiency=0.9"])  # completeness judges the row: the run itself worked
    assert run.code == 1
    assert ("FAIL sufficiency: no row judged (1 skipped): no context, so the bound set on it (gate.min_pass_rate 0.9) measured "
            "nothing; fix the input or the column mapping, or allow it: gate.allow_unjudged: [sufficiency]") in run.lines
    allowed = run_score(source, min_pass_rate=["sufficiency=0.9"], set_=["gate.allow_unjudged=[sufficiency]"])
    assert allowed.code == 0 and "SKIP sufficiency: no row judged (1 skipped): no context" in allowed.lines
    # with nothing judged at all, the input is unusable: exit 2, as before
    assert run_score(source, metric=["sufficiency"], min_pass_rate=["sufficiency=0.9"]).code == 2


def test_a_renamed_response_column_fails_a_completeness_bound(run_score, tmp_path):
    # `answer` renamed upstream to `model_reply`: completeness judged nothing, and CI went green
    rows = [{"id": f"r{i}", "request": "Where is the tower?", "context": ["The tower is in Paris."], "expected_response": "In Paris.",
             "model_reply": "In Paris."} for i in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    run = run_score(source, min_pass_rate=["sufficiency=0.5", "completeness=0.8"])
    assert run.code == 1
    assert any(line.startswith("FAIL completeness: no row judged (3 skipped): no response, so the bound set on it "
                               "(gate.min_pass_rate 0.8)") for line in run.lines)
    # a metric run by default with no bound of its own keeps its SKIP line
    default = run_score(source, min_pass_rate=["sufficiency=0.5"])
    assert default.code == 0 and "SKIP completeness: no row judged (3 skipped): no response" in default.lines


def test_a_pass_rate_bound_on_a_metric_whose_every_row_is_an_error_fails(run_score, tmp_path, judge):
    judge.replies.extend(["not json"] * 4)
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), metric=["sufficiency"], min_pass_rate=["0.9"],
                    max_error_rate=["1"])
    assert run.code == 1 and any(line.startswith("FAIL sufficiency: no row ok (1 error(s)), so the bound set on it") for line in run.lines)


def test_bounds_that_cannot_fail_or_were_not_set_measure_nothing_and_pass(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q?", "context": None, "response": "x", "expected_response": "x"}])
    assert run_score(source, min_pass_rate=["0"], max_error_rate=["1"]).code == 0  # 0 and 1 are no bounds
    assert run_score(source, metric=["completeness"]).code == 0  # defaults are not the user's bounds


# -- every output counts the same way, and names the rows by the mapped id -------------------------

def _traces(two_passing: bool):
    """Two traces of two retriever spans each; completeness (per trace) passes on t0, and on t1 when ``two_passing``."""
    traces = []
    for t, passes in (("t0", True), ("t1", two_passing)):
        root = SpanView("root", None, "app", "CHAIN", {"question": "Where is the tower?"},
                        {"response": "The tower is in Paris." if passes else "I do not know."})
        spans = [SpanView(f"s{i}", "root", f"retrieve_{i}", "RETRIEVER", {"q": "x"}, [{"page_content": "The tower is in Paris."}],
                          start=i + 1) for i in range(2)]
        traces.append(TraceView(t, "OK", [root, *spans], {"expected_facts": ["The tower is in Paris"]}))
    return rows_frame(traces)


def test_a_trace_level_verdict_counts_once_per_trace_in_every_output(run_score, tmp_path):
    # the summary said 1 of 2; the report said 0.25 (1 of 4), JUnit 4 tests with 3 failures, compare 3 regressions
    from ragjudge import load_config
    from ragjudge.reports.html import from_table

    base_in, cur_in = tmp_path / "base.jsonl", tmp_path / "cur.jsonl"
    base_in.write_text(_traces(True).to_json(orient="records", lines=True))
    cur_in.write_text(_traces(False).to_json(orient="records", lines=True))
    base = run_score(str(base_in), output=str(tmp_path / "base.parquet"), metric=["completeness"], min_pass_rate=["0"])
    assert base.code == 0
    junit = tmp_path / "junit.xml"
    run = run_score(str(cur_in), output=str(tmp_path / "cur.parquet"), metric=["completeness"], min_pass_rate=["0"], junit=str(junit),
                    baseline=str(tmp_path / "base.parquet"), max_regressions=1)
    m = run.result.summary.metrics["completeness"]
    assert (m.rows, m.ok, m.passed) == (2, 2, 1)
    assert "PASS completeness: 1 regressed row(s) <= 1 (passed in the baseline, fail now; 0 improved)" in run.lines and run.code == 0
    suite = next(s for s in ET.parse(junit).getroot().iter("testsuite") if s.get("name") == "completeness")
    cases = list(suite.iter("testcase"))
    assert [c.get("name") for c in cases] == ["t0/s0", "t1/s0"] and sum(c.find("failure") is not None for c in cases) == 1
    report = from_table(pd.read_parquet(tmp_path / "cur.parquet"), load_config(None, {"metrics": ["completeness"]}))
    data = json.loads(report.split('<script type="application/json" id="report-data">')[1].split("</script>")[0])
    assert data["counts"]["completeness"] == {"rows": 2, "ok": 2, "error": 0, "skipped": 0, "passed": 1, "pass_rate": 0.5,
                                              "mean_score": data["counts"]["completeness"]["mean_score"]}


def test_compare_of_trace_tables_counts_a_regressed_trace_once(run_score, tmp_path):
    from ragjudge import load_config
    from ragjudge.compare import compare
    from ragjudge.counting import levels_of_config

    for name, passing in (("base", True), ("cur", False)):
        source = tmp_path / f"{name}.jsonl"
        source.write_text(_traces(passing).to_json(orient="records", lines=True))
        run_score(str(source), output=str(tmp_path / f"{name}.parquet"), min_pass_rate=["0"])
    config = load_config(None)
    base, cur = pd.read_parquet(tmp_path / "base.parquet"), pd.read_parquet(tmp_path / "cur.parquet")
    report = compare(base, cur, levels=levels_of_config(config, ["sufficiency", "completeness"]))
    assert report["metrics"]["completeness"]["regressed"] == 1 and report["metrics"]["completeness"]["regressed_ids"] == ["t1/s0"]
    assert report["metrics"]["sufficiency"]["pairs"] == 4  # a span-level metric: per row
    assert compare(base, cur)["metrics"]["completeness"]["regressed"] == 2  # counted per row, as before: the fault


def test_a_mapped_id_names_the_rows_in_junit_and_the_html_report(run_score, tmp_path):
    # with --map id=qid the console, Markdown and summary JSON said my-00; JUnit and the HTML report said "row 1"
    rows = [{"qid": f"my-{i:02d}", **(GOOD if i % 2 else POOR)} for i in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    junit, html = tmp_path / "j.xml", tmp_path / "r.html"
    run = run_score(source, map=["id=qid"], junit=str(junit), html=str(html), output=str(tmp_path / "o.parquet"), min_pass_rate=["0"])
    assert run.code == 0
    names = {c.get("name") for c in ET.parse(junit).getroot().iter("testcase") if c.get("classname") != "gate"}
    assert names == {"my-00", "my-01", "my-02"}
    data = json.loads(html.read_text().split('<script type="application/json" id="report-data">')[1].split("</script>")[0])
    assert [row["id"] for row in data["rows"]] == ["my-00", "my-01", "my-02"]
    assert run.result.summary.metrics["completeness"].ids["failed"] == ["my-00", "my-02"]


def test_a_baseline_is_matched_by_the_mapped_id(run_score, tmp_path):
    # with --map id=qid the baseline had no "id" column, so rows were matched by position (with a warning)
    rows = [{"qid": f"my-{i:02d}", **GOOD} for i in range(3)]
    run_score(write_jsonl(tmp_path / "b.jsonl", rows), map=["id=qid"], output=str(tmp_path / "b.parquet"), min_pass_rate=["0"])
    current = [rows[2], rows[0], {**rows[1], "response": "I do not know."}]  # another order, one row worse
    run = run_score(write_jsonl(tmp_path / "c.jsonl", current), map=["id=qid"], baseline=str(tmp_path / "b.parquet"), max_regressions=0,
                    min_pass_rate=["0"])
    assert run.code == 1 and "FAIL completeness: 1 regressed row(s) > 0 (passed in the baseline, fail now; 0 improved)" in run.lines
    assert not any("matched by position" in line for line in run.lines)


# -- the request's checks ---------------------------------------------------------------------------

@pytest.mark.parametrize("fields, message, keywords", [
    ({"seed": 3}, "--seed chooses the rows of --sample", "seed= chooses the rows of sample=: give sample=N with it, or leave seed= out"),
    ({"ray_actors": 2}, "--ray-actors works with --engine ray", "ray_actors=2 works with engine='ray'; add it, or leave it out"),
    ({"format": "csv"}, "--format csv is the format of the scored table, and no table is written",
     "format='csv' is the format of the scored table, and no table is written: give output=FILE (or output='-' for stdout)"),
    ({"output": "o.parquet", "format": "csv"}, "--format csv: -o o.parquet is parquet by its suffix",
     "format='csv': output='o.parquet' is parquet by its suffix; to write csv under that name give output_format='csv'"),
    ({"engine": "ray", "row_events": True}, "-v/--verbose prints each row's verdicts", "row_events=True: each row's verdicts are heard"),
    ({"engine": "ray", "junit": "j.xml"}, "--junit with --engine ray read the scored table back: give -o FILE or FOLDER",
     "junit='j.xml' with engine='ray' read the scored table back: give output=FILE or FOLDER"),
    ({"engine": "ray", "mlflow_filter": "x"}, "--mlflow-filter: trace sources are scored with --engine local",
     "mlflow_filter='x': trace sources are scored with engine='local'"),
    ({"engine": "ray", "output": ".", "output_format": "csv"}, "--engine ray writes the folder . as Parquet files",
     "engine='ray' writes the folder . as Parquet files; to write csv, name a file: output='..csv'"),
])
def test_an_option_an_engine_cannot_honour_is_refused_by_check(tmp_path, fields, message, keywords, monkeypatch):
    # the command line's request names its flags; one made in Python named them too ("--seed ..."), not its keyword arguments
    from ragjudge import load_config
    from ragjudge.run import ScoreRequest

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text(json.dumps(GOOD) + "\n")
    with pytest.raises(ConfigError) as info:
        ScoreRequest("in.jsonl", cli=True, **fields).check(load_config(None))
    assert str(info.value).startswith(message)
    with pytest.raises(ConfigError) as info:
        ScoreRequest("in.jsonl", **fields).check(load_config(None))
    assert str(info.value).startswith(keywords)


def test_evaluate_names_its_keyword_arguments_and_the_command_its_flags(run_score, judge, tmp_path):
    # ragjudge.evaluate(..., limit=5, sample=3) raised "--limit and --sample both choose the rows to judge"
    from ragjudge import evaluate, load_config

    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}])
    with pytest.raises(ConfigError) as info:
        evaluate(source, load_config(None, model="openai/fake-judge"), transport=judge, limit=5, sample=3)
    assert str(info.value) == "limit= and sample= both choose the rows to judge: give one of them"
    with pytest.raises(ConfigError) as info:
        evaluate(source, load_config(None, model="openai/fake-judge"), transport=judge, max_regressions=0)
    assert str(info.value) == "max_regressions= and max_drop= compare with a baseline: give baseline=SCORED_TABLE"
    with pytest.raises(ConfigError) as info:
        evaluate(source, load_config(None, model="openai/fake-judge"), transport=judge, junit="-")
    assert str(info.value) == "junit='-' writes a file, not stdout: give a file name"
    assert judge.calls == 0
    assert run_score(source, limit=5, sample=3).error == "--limit and --sample both choose the rows to judge: give one of them"
    assert run_score(source, max_regressions=0).error == "--max-regressions and --max-drop compare with a baseline: give --baseline SCORED_TABLE"
    assert run_score(source, junit="-").error == "--junit writes a file, not stdout: give a file name"


def test_a_budget_with_no_price_names_the_config_key_in_python_and_the_flag_on_the_command_line(run_score, tmp_path):
    from ragjudge import Scorer, load_config

    with pytest.raises(ConfigError) as info:
        Scorer(load_config(None, model="openai/fake-judge", max_cost=1.0))
    assert str(info.value).startswith("judge.max_cost: openai/fake-judge has no price in litellm's price table")
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}]), max_cost=1.0)
    assert run.code == 2 and run.error.startswith("--max-cost: openai/fake-judge has no price in litellm's price table")


def test_every_field_of_the_request_is_checked_or_used_by_run():
    """A new field must be honoured by every engine or refused: each is named in the run package beyond its declaration."""
    from dataclasses import fields
    from pathlib import Path

    import ragjudge.run as module
    from ragjudge.run import ScoreRequest

    text = "".join(path.read_text(encoding="utf-8") for path in Path(module.__file__).parent.glob("*.py"))
    for item in fields(ScoreRequest):
        uses = text.count(f"request.{item.name}") + text.count(f"self.{item.name}") + text.count(f'"{item.name}"')
        assert uses >= 1, item.name


def test_a_trace_option_on_a_table_is_named_as_the_caller_gave_it(tmp_path):
    # the messages named command-line flags (--mlflow-log-feedback, --input-format) to a Python caller of evaluate
    from ragjudge import Config
    from ragjudge.run import evaluate

    source = _rows(tmp_path / "in.jsonl", 1, 0)
    with pytest.raises(ConfigError) as feedback:
        evaluate(source, Config(), mlflow_log_feedback=True)
    assert str(feedback.value) == ("mlflow_log_feedback= works on traces: give mlflow:EXPERIMENT or a file of exported MLflow traces "
                                   "(or input_format='mlflow-traces'), not a table")
    with pytest.raises(ConfigError) as annotations:
        evaluate(source, Config(), annotations=str(tmp_path / "a.csv"))
    assert str(annotations.value) == ("annotations= works on OpenTelemetry traces: give an OTLP JSON file or a saved Phoenix span table "
                                      "(or input_format='otlp' / phoenix), not a table (a table's columns are mapped with columns: in "
                                      "the config)")


def test_alpha_without_a_baseline_is_said_to_be_ignored(run_score, tmp_path):
    # a bad-input trial's find: score --alpha 0.05 with no --baseline was dropped in silence
    source = _rows(tmp_path / "in.jsonl", 2, 1)
    done = run_score(source, metric=["groundedness"], min_pass_rate=["0"], alpha=0.05)
    assert done.code == 0, done.error
    assert ("note: --alpha tests the drop from a baseline's pass rate; this run has no baseline and it is ignored: give "
            "--baseline SCORED_TABLE with --max-drop, or leave it out") in done.notes
    assert not any("--alpha" in note for note in run_score(source, metric=["groundedness"], min_pass_rate=["0"]).notes)


def test_alpha_with_a_baseline_and_no_max_drop_is_said_to_be_ignored(run_score, tmp_path):
    # --baseline with --alpha and no --max-drop: alpha tests nothing, and the run said nothing of it
    source = _rows(tmp_path / "in.jsonl", 2, 1)
    baseline = tmp_path / "b.parquet"
    assert run_score(source, metric=["groundedness"], min_pass_rate=["0"], output=str(baseline)).code == 0
    done = run_score(source, metric=["groundedness"], min_pass_rate=["0"], baseline=str(baseline), max_regressions=3, alpha=0.05)
    assert done.code == 0, done.error
    assert ("note: --alpha tests a drop in pass rate past --max-drop; this run has no --max-drop and it is ignored: give "
            "--max-drop DROP (0.05: five points), or leave it out") in done.notes
    gated = run_score(source, metric=["groundedness"], min_pass_rate=["0"], baseline=str(baseline), max_drop=0.5, alpha=0.05)
    assert gated.code == 0, gated.error
    assert not any("--alpha" in note for note in gated.notes)


def test_at_k_without_a_per_passage_metric_is_said_to_be_ignored(run_score, tmp_path):
    # score --at-k 1,3 --dry-run without -m passage_relevance was accepted in silence
    source = _rows(tmp_path / "in.jsonl", 2, 1)
    note = ("note: --at-k sets the ks of passage_relevance's precision@k columns; this run judges neither passage_relevance nor a "
            "per-passage judge, and it is ignored: add -m passage_relevance, or leave it out")
    for dry_run in (True, False):
        done = run_score(source, at_k="1,3", dry_run=dry_run, min_pass_rate=["0"])
        assert done.code == 0, done.error
        assert note in done.notes
    assert not any("--at-k" in n for n in run_score(source, at_k="1,3", metric=["passage_relevance"], dry_run=True).notes)
    assert not any("--at-k" in n for n in run_score(source, dry_run=True).notes)
    judges = tmp_path / "j.yaml"
    judges.write_text("judges:\n  - name: marks\n    needs: [request, context]\n    per: passage\n    prompt: |\n"
                      "      Is the passage about the request?\n      {{ request }}\n      {{ passages }}\n")
    assert not any("--at-k" in n for n in run_score(source, config=str(judges), at_k="1,3", metric=["marks"], dry_run=True).notes)

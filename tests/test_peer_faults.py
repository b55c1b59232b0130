"""Faults found by replaying peers' bug reports and a new user's trial (issue 20). Each kind
of fault has the example's right value as a test, and a second test of the same kind."""

from __future__ import annotations

import json

import pytest

from conftest import read_jsonl, write_jsonl
from ragjudge.config import JudgeSettings
from ragjudge.judges import sufficiency
from ragjudge.judges.sufficiency import SufficiencyJudge, SufficiencySettings
from ragjudge.records import EvalRecord, Passage
from ragjudge.types import ParseError

FACTS = ["The treaty was signed in Lisbon.", "It was signed in March 1911.", "Portugal and Spain signed it."]
PASSAGES = [Passage("The treaty was signed in Lisbon in March 1911.")]


def grounded_call(settings: JudgeSettings | None = None, options: SufficiencySettings | None = None):
    judge = SufficiencyJudge(settings or JudgeSettings(), options=options)
    return judge, judge.prepare(EvalRecord(index=0, request="Where and when was the treaty signed?", passages=PASSAGES, expected_facts=FACTS))


def reply(facts: list[dict], verdict: str = "yes") -> str:
    return json.dumps({"facts": facts, "rationale": "r", "verdict": verdict})


# 1. Per-fact verdicts decide grounded sufficiency

def test_a_fact_judged_unsupported_decides_no_whatever_the_overall_verdict():
    _, call = grounded_call()
    verdict = sufficiency.parse(reply([{"fact": 1, "supported": False}, {"fact": 2, "supported": True}]), call)  # fact 3 omitted
    assert (verdict.score, verdict.missing) == (0.0, ["The treaty was signed in Lisbon."])


@pytest.mark.parametrize("facts", [
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}], id="omitted"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}, {"fact": 7, "supported": True}], id="numbered_outside"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}, {"fact": 2, "supported": True}], id="duplicated"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 2, "supported": True}, {"fact": 3, "supported": "maybe"}], id="not_boolean"),
    pytest.param([{"fact": 1, "supported": True}, {"fact": 1, "supported": False}, {"fact": 2, "supported": True},
                  {"fact": 3, "supported": True}], id="contradicted"),
])
def test_an_unjudged_fact_is_never_a_yes(facts):
    _, call = grounded_call()
    with pytest.raises(ParseError, match="not judged"):
        sufficiency.parse(reply(facts), call)


# 2. Reasoning before the verdict, for hosted judges

def test_the_embedded_judge_keeps_its_measured_order_under_its_own_prompt_version():
    local_judge, local_call = grounded_call(JudgeSettings(model="local/qwen2.5-coder-1.5b"))
    hosted_judge, hosted_call = grounded_call(JudgeSettings(model="openai/gpt-4o-mini"))
    local_fact = local_call.response_format["json_schema"]["schema"]["properties"]["facts"]["items"]["properties"]
    assert list(local_fact) == ["fact", "supported", "passages", "reason"]
    assert local_call.version == sufficiency.PROMPT_VERSION != hosted_call.version == sufficiency.REASONING_FIRST_VERSION
    chosen, _ = grounded_call(JudgeSettings(model="openai/gpt-4o-mini"), SufficiencySettings(reasoning_first=False))
    assert chosen.version == sufficiency.PROMPT_VERSION


# 5. Parquet contexts hide unknown chunk keys

def _parquet(tmp_path, rows) -> str:
    import pandas as pd

    path = tmp_path / "in.parquet"
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def test_a_context_item_with_an_unknown_key_is_the_same_passage_in_parquet_as_in_jsonl(run_cli, tmp_path):
    # Arrow merges the items' structs, so "content" exists and is null: the body-only row was
    # skipped as "no context", and the mixed row judged on its first item alone. Since issue 27
    # such an item is one passage holding its JSON text (as MLflow judges str(context)), not an error
    rows = [{"id": "body-only", "request": "q?", "context": [{"body": "The treaty was signed in Lisbon."}], "expected_response": "Lisbon"},
            {"id": "mixed", "request": "q?", "context": [{"content": "Signed in 1911."}, {"body": "It was signed in Lisbon."}],
             "expected_response": "Lisbon"}]
    errors = {}
    for source in (write_jsonl(tmp_path / "in.jsonl", rows), _parquet(tmp_path, rows)):
        out = tmp_path / "out.jsonl"
        run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "--max-error-rate", "1"])
        errors[source] = [(r["sufficiency_status"], r["sufficiency_score"]) for r in read_jsonl(out)]
    jsonl, parquet = errors.values()
    assert jsonl == parquet == [("ok", 1.0), ("ok", 1.0)]  # "Lisbon" is in the body's JSON text, read as a passage


# 6. Lists written by pandas into CSV

# 7. CSV errors name the wrong line

def test_a_csv_error_names_the_physical_line_where_quoted_cells_span_lines(run_cli, tmp_path):
    lines = ["id,request,context"] + [f'{i},"q{i}","first line\nsecond line of row {i}"' for i in range(1, 81)]
    lines.append('81,q8"1,"a stray ""quote""" extra, field')
    path = tmp_path / "in.csv"
    path.write_text("\n".join(lines) + "\n")
    result = run_cli(["score", str(path), "-m", "sufficiency"])
    assert result.code == 2
    assert f"{path}: line 162 (record 81): malformed CSV:" in result.stderr  # pandas said "line 82", the record


def test_every_malformed_csv_names_its_line_from_stdin_too(run_cli, tmp_path):
    text = "id,request,context\n" + "".join(f'{i},"q","a\nb"\n' for i in range(1, 6)) + "6,q,c,EXTRA\n"
    result = run_cli(["score", "-", "--input-format", "csv", "-m", "sufficiency"], stdin=text.encode())
    assert result.code == 2
    assert "<stdin>: line 12 (record 6): malformed CSV: 4 fields where the header has 3" in result.stderr


# 13. A broken retriever passes the gate

def test_a_metric_asked_for_whose_field_maps_to_no_column_exits_2(run_cli, tmp_path):
    rows = [{"id": "a", "request": "q?", "retrieved_passages_v2": ["c"]}]
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "-q"])
    assert result.code == 2
    assert ("sufficiency needs a context column and none was found; columns not read: retrieved_passages_v2; "
            "if 'retrieved_passages_v2' holds it, set --map context=retrieved_passages_v2") in result.stderr


def test_a_default_metric_that_judged_no_row_is_named(run_cli, tmp_path):
    rows = [{"id": "a", "request": "q?", "retrieved_passages_v2": ["c"], "expected_response": "x", "response": "x"}]
    summary = tmp_path / "s.json"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-q", "--summary-json", str(summary)])
    assert "SKIP sufficiency: no row judged (1 skipped): no context" in result.stderr  # printed with -q too
    doc = json.loads(summary.read_text())
    assert doc["metrics_not_judged"] == ["sufficiency"] and doc["metrics"]["sufficiency"]["skipped_by"] == {"no context": 1}
    verbose = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows)])
    assert "note: sufficiency needs a context column and none was found" in verbose.stderr
    assert "note: sufficiency judged no row of 1 (1 'no context')" in verbose.stderr


# 14. Suggest the mapping

# 8. The evidence check speaks only English

def test_the_evidence_share_drops_the_detected_languages_stop_words():
    from ragjudge.judges.sufficiency import detect_language, evidence_share, stop_words

    assert detect_language("La biblioteca fue financiada por la ciudad.") == "es"
    assert {"la", "por", "fue"} <= stop_words("es") and not stop_words("xx")
    assert evidence_share("La biblioteca fue financiada por la ciudad.", ["La biblioteca abre de lunes a viernes."]) == pytest.approx(1 / 3)


# 9. One bad character must not lose the run

def test_a_surrogate_pair_written_as_two_escapes_stays_one_character():
    from ragjudge.judges.base import load_reply

    assert load_reply('{"rationale": "ok \\ud83d\\ude00 and \\udc00 alone"}')["rationale"] == "ok \U0001f600 and \ufffd alone"


# 10. After Ctrl-C while judging

def test_ctrl_c_while_judging_ends_with_one_line_that_says_what_was_written(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT
    from ragjudge.fakeserver import FakeJudgeServer

    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i}."], "expected_response": f"city {i}"} for i in range(6)]
    out = tmp_path / "out.jsonl"
    with FakeJudgeServer(latency=30) as server:
        process = subprocess.Popen([sys.executable, "-m", "ragjudge", "score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency",
                                    "-o", str(out), "--model", "openai/fake", "--api-base", server.url, "--no-cache"],
                                   cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 180  # starting the command (imports) takes long on a loaded machine
        while server.in_flight < 1 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert server.in_flight == 1  # the run's first call (it goes alone, and takes 30 s): Ctrl-C while it is in flight
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: all 6 rows were written to {out} (sufficiency 0 done, 6 unfinished;"), last
    assert "nothing more was written" not in stderr
    assert len(read_jsonl(out)) == 6


def test_ctrl_c_before_judging_still_says_nothing_was_written(run_cli, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("ragjudge.run.score_source", interrupted)
    import ragjudge.cli

    monkeypatch.setattr(ragjudge.cli, "_SAID", {})
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}])])
    assert result.code == 130 and result.stderr.strip().startswith("interrupted: nothing more was written")


# 11. Printed comparisons round the numbers they compare

def test_a_gate_line_shows_the_digits_that_make_it_true():
    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.gate_text import lines_of

    m = MetricSummary("sufficiency", 0.5, rows=40, ok=40, passed=38, score_thousandths=38000, min_pass_rate=0.951)
    lines = lines_of(check_gate(Summary(rows=40, metrics={"sufficiency": m})))
    assert "FAIL sufficiency: pass rate 0.950 < 0.951 (38 of 40 ok rows passed)" in lines  # it read "0.95 < 0.95"


# 15. The summary table at 80 columns hides its numbers

def test_the_summary_table_at_80_columns_keeps_every_count():
    import io

    from rich.console import Console

    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.console import print_summary

    metrics = {name: MetricSummary(name, 0.5, rows=300, ok=275, error=12, skipped=13, passed=200, cached=275, score_thousandths=200_000)
               for name in ("sufficiency", "completeness")}
    summary = Summary(rows=300, metrics=metrics, judge_model="openai/gpt-4o-mini")
    for width in (80, 60):
        buffer = io.StringIO()
        print_summary(Console(file=buffer, width=width), summary, check_gate(summary))
        table = buffer.getvalue()
        assert "…" not in table
        assert all(line.count("275") == 1 and "12" in line and "13" in line for line in table.splitlines() if "sufficiency" in line and "│" in line)
        assert max(len(line) for line in table.splitlines() if "│" in line) <= width


def test_the_summary_leaves_no_trailing_spaces_in_a_log():
    # rich padded the table's title to the table's width: a CI log had 'judge openai/gpt-4o-mini        '
    import io

    from rich.console import Console

    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.console import print_summary

    metrics = {"sufficiency": MetricSummary("sufficiency", 0.5, rows=3, ok=3, passed=2, score_thousandths=2000)}
    summary = Summary(rows=3, metrics=metrics, judge_model="openai/gpt-4o-mini")
    buffer = io.StringIO()
    print_summary(Console(file=buffer, width=120), summary, check_gate(summary))
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "ragjudge: 3 rows, judge openai/gpt-4o-mini"
    assert [line for line in lines if line != line.rstrip()] == []


# 16. Internal paths leak into messages

def test_an_unknown_metric_is_named_plainly(run_cli, tmp_path):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}]), "-m", "faithfulness"])
    assert result.code == 2
    assert result.stderr.strip() == ("error: -m/--metric: unknown metric 'faithfulness'; use sufficiency, completeness, groundedness or a judge "
                                     "defined in the config")  # named where it was set, as a --set or a file is


@pytest.mark.parametrize("args, message", [
    (["--concurrency", "0"], "error: --concurrency: should be greater than or equal to 1 (got 0)"),
    (["--samples", "99"], "error: --samples: should be less than or equal to 15 (got 99)"),
    (["--transport", "http"], "error: --transport: should be 'auto' or 'litellm' (got 'http')"),
    (["--cache-dir", " "], "error: --cache-dir: should not be empty or blank (got ' ')"),
])
def test_config_messages_name_the_option_and_no_internal_path(run_cli, tmp_path, args, message):
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "q", "context": ["c"]}]), *args], judge=False)
    assert result.code == 2 and result.stderr.strip() == message


def test_config_file_messages_name_the_key_without_list_indices(tmp_path):
    from ragjudge import load_config
    from ragjudge.errors import ConfigError

    path = tmp_path / "c.yaml"
    path.write_text("metrics: [sufficiency, 3]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: invalid value for 'metrics item 2': should be a valid string (got 3)"


def test_render_refuses_a_metric_whose_column_is_missing_as_score_does(run_cli, tmp_path):
    # render printed "no call: skipped: no context" (exit 0) where score -m exits 2
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "Where was it signed?", "response": "In Lisbon."}])
    for command in (["render", source, "-m", "sufficiency"], ["score", source, "-m", "sufficiency", "--dry-run"]):
        result = run_cli(command, judge=False)
        assert result.code == 2, command
        assert "sufficiency needs a context column and none was found" in result.stderr, command


def test_a_missing_expected_response_column_reads_as_english(run_cli, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "request": "Where was it signed?", "response": "In Lisbon."}])
    result = run_cli(["score", source, "-m", "completeness", "--dry-run"], judge=False)
    assert result.code == 2
    assert "completeness needs an expected_response or expected_facts column and none was found" in result.stderr


@pytest.mark.parametrize("expectations, note", [
    ({"expected_facts": None, "expected_response": "Lisbon"},
     "note: 'expectations.expected_facts' (for expected_facts) is null or empty in each of the first 2 rows"),
    ({"expected_response": "Lisbon"},
     "note: 'expectations.expected_facts' (for expected_facts) has no value in the first 2 rows (keys seen under 'expectations': "
     "expected_response)"),
])
def test_a_nested_column_with_no_value_says_whether_its_key_is_there(run_cli, tmp_path, expectations, note):
    # the note listed expected_facts among the keys seen while saying it had no value
    rows = [{"id": f"r{i}", "inputs": {"request": "Where was it signed?"}, "context": ["It was signed in Lisbon."],
             "expectations": expectations} for i in range(2)]
    config = tmp_path / "c.yaml"
    config.write_text("columns:\n  request: inputs.request\n  expected_facts: expectations.expected_facts\n")
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-c", str(config), "-m", "sufficiency", "--dry-run"], judge=False)
    assert note in result.stderr, result.stderr

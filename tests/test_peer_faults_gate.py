"""Issue 29 items 9, 15, 16 and 17 (each with the issue's case and a second shape), and issue 30's
typed gate results, row reasons, option checks and ``--set`` (items 2, 3 and 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, read_jsonl, write_jsonl
from ragjudge.errors import ConfigError, InputError
from ragjudge.gate import Check, Kind, MetricSummary, Summary, check_gate, exit_code, with_regressions
from ragjudge.reports.gate_text import failures_of, lines_of, marked
from ragjudge.types import Reason, Verdict

GROUNDED = {"request": "Where is the Eiffel Tower?", "context": ["The Eiffel Tower is in Paris."],
            "expected_facts": ["The Eiffel Tower is in Paris."], "expected_response": "Paris"}


def _scored(ids, passed):
    return pd.DataFrame({"id": ids, "sufficiency_status": ["ok"] * len(ids), "sufficiency_passed": passed,
                         "sufficiency_score": [1.0 if p else 0.0 for p in passed]})


# -- 9. one null id switches compare to matching by position --------------------------------------

def test_compare_with_one_null_id_is_exit_2_naming_the_row_not_two_false_regressions(run_cli, tmp_path):
    # the case: the same verdicts, reordered, one id null; matching by position made two
    # false regressions and exit 1
    base = _scored(["a", "b", "c", "d"], [True, True, False, True])
    current = _scored(["d", None, "b", "a"], [True, False, True, True])  # c (null id) failed in both
    base.to_parquet(tmp_path / "base.parquet")
    current.to_parquet(tmp_path / "cur.parquet")
    result = run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "cur.parquet"), "--max-regressions", "0"], judge=False)
    assert result.code == 2
    assert "the current table has no id on row(s) 2; every row needs an id to match rows (or match them by position: --by-position)" in result.stderr
    # by position only when asked for: then row 2 (b -> null) passed and fails: one regression, no warning
    asked = run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "cur.parquet"), "--max-regressions", "0", "--by-position",
                     "--json"], judge=False)
    report = json.loads(asked.stdout)
    assert asked.code == 1 and report["matched_by"] == "position" and report["warnings"] == []
    assert report["metrics"]["sufficiency"]["regressed_ids"] == ["row 2"]
    # the ids all there: matched by id, nothing regressed
    current.assign(id=["d", "c", "b", "a"]).to_parquet(tmp_path / "ids.parquet")
    assert run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "ids.parquet"), "--max-regressions", "0"], judge=False).code == 0


def test_a_null_id_in_a_baseline_or_a_pair_table_is_exit_2_naming_the_rows(run_cli, tmp_path):
    from ragjudge.agreement import agreement
    from ragjudge.compare import compare

    with pytest.raises(InputError, match=r"the baseline table has no id on row\(s\) 1, 3;"):
        compare(_scored([None, "b", float("nan"), "d"], [True] * 4), _scored(["a", "b", "c", "d"], [True] * 4))
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": i} for i in ("a", "b")])
    baseline = tmp_path / "base.jsonl"
    assert run_cli(["score", source, "-m", "sufficiency", "-o", str(baseline), "-q"]).code == 0
    rows = read_jsonl(baseline)
    rows[1]["id"] = None
    write_jsonl(baseline, rows)
    result = run_cli(["score", source, "-m", "sufficiency", "--baseline", str(baseline), "-q"])
    assert result.code == 2 and "the baseline table has no id on row(s) 2; every row needs an id to match rows" in result.stderr
    table = pd.DataFrame({"id": ["x", "y"], "completeness_status": ["ok", "ok"], "completeness_score": [2.0, 4.0], "pref": [1, -1]})
    with pytest.raises(InputError, match=r"the pair table has no id on row\(s\) 2;"):
        agreement(table, "completeness", "pref", pair=table.assign(id=["x", None]))


# -- 15. Ctrl-C wording ---------------------------------------------------------------------------

def _summary(*verdicts: Verdict, interrupted: bool = True) -> Summary:
    m = MetricSummary("sufficiency", 0.5)
    for i, verdict in enumerate(verdicts):
        m.add(verdict, f"r{i}", i)
    return Summary(rows=len(verdicts), metrics={"sufficiency": m}, interrupted=interrupted, judge_model="fake")


def _ok() -> Verdict:
    return Verdict(metric="sufficiency", status="ok", score=1.0, passed=True)


def test_the_closing_line_counts_unsampled_rows_apart_and_tells_no_cache_runs_the_truth():
    from ragjudge.reports.terminal import interrupted_line

    summary = _summary(_ok(), _ok(), Verdict.failed("sufficiency", Reason.INTERRUPTED), *[Verdict.skipped("sufficiency", Reason.NOT_SAMPLED)] * 3)
    line = interrupted_line(summary, "out.jsonl", cache=True)
    assert line.startswith("interrupted: all 6 rows were written to out.jsonl (sufficiency 2 done, 1 unfinished, 3 not sampled; ")
    assert line.endswith("run the same command again to judge only those (finished calls come from the cache)")
    uncached = interrupted_line(summary, "out.jsonl", cache=False)
    assert "finished calls come from the cache" not in uncached
    assert uncached.endswith("run the same command again to judge every row again (--no-cache: no verdict was kept in the cache)")


def test_an_interrupt_after_the_last_verdict_says_no_row_is_unfinished():
    from ragjudge.reports.terminal import interrupted_line

    summary = _summary(_ok(), _ok())
    gate = check_gate(summary)
    assert gate.exit_code == 130
    assert lines_of(gate)[0] == "FAIL interrupted: every row was judged before the interrupt; no row is unfinished"
    assert not any("unfinished rows" in line for line in [*lines_of(gate), *failures_of(gate)])
    assert interrupted_line(summary, "out.jsonl") == ("interrupted: all 2 rows were written to out.jsonl (sufficiency 2 done, 0 unfinished: "
                                                       "every row was judged before the interrupt); nothing is left to judge")
    unfinished = check_gate(_summary(_ok(), Verdict.failed("sufficiency", Reason.INTERRUPTED)))
    assert lines_of(unfinished)[0] == "FAIL interrupted: unfinished rows have status error (reason 'interrupted')"


def test_ctrl_c_during_the_final_write_keeps_every_row_and_says_none_is_unfinished(run_cli, tmp_path, monkeypatch):
    import signal

    from ragjudge import io

    close = io.TableWriter.close

    def interrupted_close(self):  # Ctrl-C lands while the table is being finished
        signal.raise_signal(signal.SIGINT)
        close(self)

    monkeypatch.setattr(io.TableWriter, "close", interrupted_close)
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": f"r{i}"} for i in range(3)]), "-m", "sufficiency",
                      "-o", str(out)])
    assert result.code == 130 and len(read_jsonl(out)) == 3
    assert "unfinished rows" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (f"interrupted: all 3 rows were written to {out} (sufficiency 3 done, 0 unfinished: "
                                                      "every row was judged before the interrupt); nothing is left to judge")


def test_ctrl_c_under_no_cache_and_sample_says_what_is_true(tmp_path):
    import signal
    import time

    from ragjudge.fakeserver import FakeJudgeServer

    rows = [{**GROUNDED, "id": f"r{i}"} for i in range(6)]
    out = tmp_path / "out.jsonl"
    with FakeJudgeServer(latency=30) as server:
        process = subprocess.Popen([sys.executable, "-m", "ragjudge", "score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency",
                                    "-o", str(out), "--model", "openai/fake", "--api-base", server.url, "--no-cache", "--sample", "2"],
                                   cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 180  # starting the command (imports) takes long on a loaded machine
        while server.in_flight < 1 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert server.in_flight == 1  # the run's first call (it goes alone, and takes 30 s): Ctrl-C while it is in flight
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: all 6 rows were written to {out} (sufficiency 0 done, 2 unfinished, 4 not sampled;"), last
    assert "finished calls come from the cache" not in stderr and "(--no-cache: no verdict was kept in the cache)" in last


# -- 16. terminal escapes in annotations and the step summary --------------------------------------

EVIL_ID = "row\x1b]0;owned\x07\x1b[2J\x9b31m"


def test_control_characters_never_reach_annotations_or_the_markdown_raw():
    from ragjudge.reports import annotations, markdown

    m = MetricSummary("sufficiency", 0.5, min_pass_rate=1.0)
    m.add(Verdict(metric="sufficiency", status="ok", score=0.0, passed=False, rationale="bad\x1b[31m red\x00", missing=["fact\x1b[0m"]),
          EVIL_ID, 0)
    summary = Summary(rows=1, metrics={"sufficiency": m}, judge_model="fake\x1b[1m")
    lines = annotations.commands(summary, "-", None)
    assert lines[0] == ("::error title=ragjudge sufficiency failed%3A row\ufffd]0;owned\ufffd\ufffd[2J\ufffd31m::"
                        "score 0 (threshold 0.5). bad\ufffd[31m red\ufffd Missing: fact\ufffd[0m")
    text = markdown.render(summary, check_gate(summary), "in\x1b.jsonl")
    assert not any(ch in text for ch in "\x1b\x07\x00\x9b")
    assert "| sufficiency | row\ufffd]0;owned\ufffd\ufffd[2J\ufffd31m | 0 | bad\ufffd[31m red\ufffd | fact\ufffd[0m |" in text
    assert "judge `fake\ufffd[1m`, input `in\ufffd.jsonl`" in text


def test_an_escape_in_a_row_id_stays_out_of_a_ci_run_log_and_job_summary(run_cli, tmp_path, monkeypatch):
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    row = {**GROUNDED, "id": EVIL_ID, "context": ["Nothing about towers."]}  # the fake judge says no: a failing row
    result = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", [row]), "-m", "sufficiency", "-q"])
    assert result.code == 1
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "title=ragjudge sufficiency failed%3A row\ufffd]0;owned\ufffd\ufffd[2J\ufffd31m" in errors[0]
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout
    text = step.read_text(encoding="utf-8")
    assert "row\ufffd]0;owned" in text and "\x1b" not in text and "\x9b" not in text


# -- 17. make test names the browser tests it skipped ------------------------------------------------

def test_without_chromium_the_test_command_names_what_it_skipped_and_how_to_install_it(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()  # a PATH with no chromium, no chromedriver, no apt-get
    check = subprocess.run(["/bin/bash", str(ROOT / "scripts" / "browser.sh"), "check"], env={"PATH": str(empty)}, capture_output=True, text=True)
    assert check.returncode == 0
    assert check.stderr.strip() == ("make test: skipped the browser tests of tests/test_report.py (the HTML report in headless Chromium): "
                                    "chromium and chromedriver are not installed; install them with: "
                                    "sudo apt-get install -y chromium chromium-driver (then run make test again)")
    install = subprocess.run(["/bin/bash", str(ROOT / "scripts" / "browser.sh"), "install"], env={"PATH": str(empty)}, capture_output=True,
                             text=True)
    assert install.returncode == 0  # not root, no apt-get: nothing installed, the check after the tests says so


def test_ci_runs_the_readmes_test_command_and_it_installs_the_browser_first():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert run[-1] == "make test" and "make test" in (ROOT / "README.md").read_text(encoding="utf-8")
    planned = subprocess.run(["make", "-n", "test", "BIN=/nonexistent/bin"], cwd=ROOT, capture_output=True, text=True).stdout.splitlines()
    install = next(i for i, line in enumerate(planned) if line == "bash scripts/browser.sh install")
    tests = next(i for i, line in enumerate(planned) if "-m pytest -q" in line)
    assert install < tests and "bash scripts/browser.sh check" in planned[tests]


# -- issue 30 item 2: typed gate results, reasons --------------------------------------------------

def test_the_exit_code_comes_from_the_checks_not_their_text(monkeypatch):
    import ragjudge.reports.gate_text as gate  # the gate's words, apart from its decisions (ragjudge.gate)

    m = MetricSummary("sufficiency", 0.5, min_pass_rate=0.9, max_error_rate=0.1)
    for i in range(10):
        m.add(Verdict(metric="sufficiency", status="ok", score=1.0 if i < 8 else 0.0, passed=i < 8), f"r{i}", i)
    result = check_gate(Summary(rows=10, metrics={"sufficiency": m}))
    assert [(c.metric, c.check, c.passed, c.value, c.bound) for c in result.checks] == [
        ("sufficiency", Kind.SKIP_RATE, True, 0.0, 1.0), ("sufficiency", Kind.ERROR_RATE, True, 0.0, 0.1),
        ("sufficiency", Kind.PASS_RATE, False, 0.8, 0.9)]
    assert result.exit_code == 1 and lines_of(result)[-2:] == ["FAIL sufficiency: pass rate 0.80 < 0.90 (8 of 10 ok rows passed)", "gate failed (exit 1)"]
    monkeypatch.setattr(gate, "_text", lambda check: "reworded: PASS gate passed")  # any wording: the same decisions
    again = check_gate(Summary(rows=10, metrics={"sufficiency": m}))
    assert again.exit_code == 1 and not again.passed and marked(again)[-2] == (False, "FAIL reworded: PASS gate passed")


def test_regression_checks_join_the_gate_by_kind():
    passed = check_gate(_summary(_ok(), interrupted=False))
    worse = [Check("sufficiency", Kind.REGRESSIONS, False, 2, 0, {"regressed": 2, "improved": 0})]
    joined = with_regressions(passed, worse)
    assert (passed.exit_code, joined.exit_code) == (0, 1)
    assert lines_of(joined)[-2:] == ["FAIL sufficiency: 2 regressed row(s) > 0 (passed in the baseline, fail now; 0 improved)", "gate failed (exit 1)"]
    stopped = check_gate(Summary(rows=1, metrics=_summary(_ok()).metrics, fatal="bad key"))
    assert with_regressions(stopped, worse).exit_code == 3 == exit_code(stopped.checks)


def test_row_reasons_are_values_carried_on_the_verdict_not_their_text():
    counted = _summary(Verdict.skipped("sufficiency", Reason.NOT_SAMPLED), Verdict.failed("sufficiency", Reason.INTERRUPTED),
                       Verdict.failed("sufficiency", Reason.BUDGET_REACHED)).metrics["sufficiency"]
    assert (counted.unsampled, counted.interrupted, counted.unpaid, counted.skipped) == (1, 1, 1, 0)
    assert Verdict.failed("sufficiency", Reason.BUDGET_REACHED).error == "budget reached"  # the text shown stays the same
    # a judge's own message that reads like a reason is not one
    lookalike = _summary(Verdict.skipped("sufficiency", "not sampled"), Verdict.failed("sufficiency", "interrupted")).metrics["sufficiency"]
    assert (lookalike.unsampled, lookalike.interrupted, lookalike.skipped, lookalike.error) == (0, 0, 1, 1)
    assert Reason.read("skipped", "not sampled") is Reason.NOT_SAMPLED and Reason.read("error", "not sampled") is None
    assert Reason.read("error", "interrupted") is Reason.INTERRUPTED and Reason.read("error", "judge call failed") is None


def test_a_scored_run_carries_the_reasons_it_acted_on(server, tmp_path):
    from ragjudge import load_config
    from ragjudge.run import evaluate

    settings = load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "api_base": server.url},
                                  "cache": {"dir": str(tmp_path / "c")}})
    seen: dict[str, Verdict] = {}
    result = evaluate(pd.DataFrame([{**GROUNDED, "id": f"r{i}"} for i in range(3)]), settings, limit=1,
                      on_row=lambda position, ident, verdicts: seen.update({ident: verdicts[0]}))
    assert seen["r0"].reason is None and seen["r1"].reason is seen["r2"].reason is Reason.NOT_SAMPLED
    assert result.summary.metrics["sufficiency"].unsampled == 2 and result.gate.exit_code == 0


# -- issue 30 items 3 and 4: --set and the option checks as library functions -----------------------

def test_set_sets_any_config_key_with_yaml_values_and_the_named_options_win():
    from ragjudge.options import load, set_overrides

    assert set_overrides(["judge.concurrency=4", "gate.min_pass_rate.sufficiency=0.3", "judge.api_base=", "metrics=[sufficiency]"]) == {
        "judge": {"concurrency": 4, "api_base": None}, "gate": {"min_pass_rate": {"sufficiency": 0.3}}, "metrics": ["sufficiency"]}
    settings, _ = load(None, {}, ["judge.concurrency=4", "thresholds.completeness=4", "judge.timeout=2.5"])
    assert (settings.judge.concurrency, settings.thresholds["completeness"], settings.judge.timeout) == (4, 4.0, 2.5)
    named, _ = load(None, {"concurrency": 8}, ["judge.concurrency=4"])
    assert named.judge.concurrency == 8
    with pytest.raises(ConfigError, match="unknown key 'judge.nope'"):
        load(None, {}, ["judge.nope=1"])
    with pytest.raises(ConfigError, match=r"^--set judge.concurrency: should be"):
        load(None, {}, ["judge.concurrency=many"])
    for bad in ("judge.concurrency", "=4", "judge..model=x"):
        with pytest.raises(ConfigError, match="--set expects KEY=VALUE"):
            set_overrides([bad])


def test_set_on_the_command_line_reaches_the_run_and_names_a_bad_key(run_cli, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": "a"}])
    summary = tmp_path / "s.json"
    result = run_cli(["score", source, "-m", "sufficiency", "--summary-json", str(summary), "-q",
                      "--set", "thresholds.sufficiency=0.9", "--set", "gate.max_skip_rate=0.5"])
    assert result.code == 0
    figures = json.loads(summary.read_text())["metrics"]["sufficiency"]
    assert (figures["threshold"], figures["max_skip_rate"]) == (0.9, 0.5)
    unknown = run_cli(["score", source, "--set", "gate.nope=1"])
    assert unknown.code == 2 and "unknown key 'gate.nope'" in unknown.stderr
    from typer.testing import CliRunner

    from ragjudge.cli import app

    shown = CliRunner().invoke(app, ["score", "--help"], env={"COLUMNS": "300"}).output
    assert "--set judge.concurrency=4" in shown


def test_the_option_checks_are_library_functions_raising_config_errors(tmp_path):
    from ragjudge import load_config
    from ragjudge.options import check_budget, check_engine, check_outputs, check_regression_gates, check_selection

    with pytest.raises(ConfigError, match="--limit and --sample both choose the rows to judge"):
        check_selection(5, 3)
    with pytest.raises(ConfigError, match="at least 1"):
        check_selection(0, None)
    check_selection(5, None)
    with pytest.raises(ConfigError, match="has no price in litellm's price table"):
        check_budget(load_config(None, {"judge": {"model": "openai/fake-judge", "max_cost": 1.0}}))
    check_budget(load_config(None, {"judge": {"model": "openai/fake-judge", "max_cost": 1.0, "price": {"input_per_mtok": 1, "output_per_mtok": 2}}}))
    with pytest.raises(ConfigError, match="--engine spark: use local or ray"):
        check_engine("spark")
    with pytest.raises(ConfigError, match="--max-drop 2.0"):
        check_regression_gates(None, 2.0)
    with pytest.raises(ConfigError, match="would both write to stdout"):
        check_outputs("in.jsonl", "-", "-")
    with pytest.raises(ConfigError, match="--junit writes a file, not stdout"):
        check_outputs("in.jsonl", None, None, junit="-")


def test_one_table_drives_the_flags_and_the_overrides():
    from ragjudge.options import FLAG_TABLE, FLAGS, overrides

    over, mapped = overrides({"model": "openai/x", "max_cost": 2.0, "metric": ["sufficiency"], "map": ["context=docs"],
                              "threshold": ["sufficiency=0.7"], "min_pass_rate": ["0.9", "completeness=0.5"], "no_cache": True,
                              "cache_dir": "c", "max_error_rate": 0.1})
    assert over == {"judge": {"model": "openai/x", "max_cost": 2.0}, "metrics": ["sufficiency"], "columns": {"context": "docs"},
                    "thresholds": {"sufficiency": 0.7}, "gate": {"min_pass_rate": {"*": 0.9, "completeness": 0.5}, "max_error_rate": 0.1},
                    "cache": {"enabled": False, "dir": "c"}}
    assert mapped == frozenset({"context"})
    assert {flag.key for flag in FLAG_TABLE if flag.kind == "value"} <= set(FLAGS) and FLAGS["judge.max_cost"] == "--max-cost"
    assert Path(ROOT / "ragjudge" / "cli.py").read_text(encoding="utf-8").count('"judge.model"') == 0  # no second list in the CLI

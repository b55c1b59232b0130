"""The gate (``ragjudge.gate``): its typed checks, per-metric bounds, the lines it prints and the
exit code it decides."""

from __future__ import annotations

import json

import pandas as pd

from conftest import write_jsonl
from helpers import GROUNDED, _ok, _summary
from ragjudge.gate import Check, Kind, MetricSummary, Summary, check_gate, exit_code, with_regressions
from ragjudge.reports.gate_text import lines_of, marked
from ragjudge.types import Reason, Verdict


# peer report (issue 20 item 11): printed comparisons round the numbers they compare
def test_a_gate_line_shows_the_digits_that_make_it_true():
    from ragjudge.gate import MetricSummary, Summary, check_gate
    from ragjudge.reports.gate_text import lines_of

    m = MetricSummary("sufficiency", 0.5, rows=40, ok=40, passed=38, score_thousandths=38000, min_pass_rate=0.951)
    lines = lines_of(check_gate(Summary(rows=40, metrics={"sufficiency": m})))
    assert "FAIL sufficiency: pass rate 0.950 < 0.951 (38 of 40 ok rows passed)" in lines  # it read "0.95 < 0.95"


# issue 30 item 2: typed gate results, reasons
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


# issue 30 item 2: typed gate results, reasons
def test_regression_checks_join_the_gate_by_kind():
    passed = check_gate(_summary(_ok(), interrupted=False))
    worse = [Check("sufficiency", Kind.REGRESSIONS, False, 2, 0, {"regressed": 2, "improved": 0})]
    joined = with_regressions(passed, worse)
    assert (passed.exit_code, joined.exit_code) == (0, 1)
    assert lines_of(joined)[-2:] == ["FAIL sufficiency: 2 regressed row(s) > 0 (passed in the baseline, fail now; 0 improved)", "gate failed (exit 1)"]
    stopped = check_gate(Summary(rows=1, metrics=_summary(_ok()).metrics, fatal="bad key"))
    assert with_regressions(stopped, worse).exit_code == 3 == exit_code(stopped.checks)


# issue 30 item 2: typed gate results, reasons
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


# issue 30 item 2: typed gate results, reasons
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


# review of main (fixa) item 5: --max-error-rate and --max-skip-rate per metric
def test_max_skip_rate_takes_metric_equals_rate_and_gates_only_that_metric(run_score, tmp_path):
    # no response: completeness skips every row; sufficiency judges them
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": i, "request": "Where?", "context": ["In Paris."]} for i in "ab"])
    failed = run_score(source, max_skip_rate=["completeness=0.25"], summary_json=str(tmp_path / "s.json"), quiet=True)
    assert failed.code == 1, failed.text
    metrics = json.loads((tmp_path / "s.json").read_text())["metrics"]
    assert metrics["completeness"]["max_skip_rate"] == 0.25 and metrics["sufficiency"]["max_skip_rate"] == 1.0
    passed = run_score(source, max_skip_rate=["sufficiency=0.25"], min_pass_rate=["0"])
    assert passed.code == 0, passed.text
    every = run_score(source, max_skip_rate=["0.25"], min_pass_rate=["0"], quiet=True)  # one number: every metric
    assert every.code == 1


# review of main (fixa) item 5: --max-error-rate and --max-skip-rate per metric
def test_max_error_rate_per_metric_from_the_flag_and_the_config(run_cli, tmp_path):
    from ragjudge import load_config

    source = write_jsonl(tmp_path / "in.jsonl", [{**GROUNDED, "id": "a", "response": "Paris is the capital of France."}])
    assert run_cli(["score", source, "--max-error-rate", "completeness=0.33", "--max-error-rate", "sufficiency=0.5", "--summary-json",
                    str(tmp_path / "s.json"), "-q", "--min-pass-rate", "0"]).code == 0
    metrics = json.loads((tmp_path / "s.json").read_text())["metrics"]
    assert (metrics["completeness"]["max_error_rate"], metrics["sufficiency"]["max_error_rate"]) == (0.33, 0.5)
    bad = run_cli(["score", source, "--max-error-rate", "completeness=1.5"])
    assert bad.code == 2 and "--max-error-rate" in bad.stderr and "1.5 is not between 0 and 1" in bad.stderr
    config = load_config(None, **{"gate": {"max_error_rate": {"completeness": 0.2, "*": 0.1}, "max_skip_rate": 0.5}})
    assert config.gate.error_ceiling("completeness") == 0.2 and config.gate.error_ceiling("sufficiency") == 0.1
    assert config.gate.skip_ceiling("groundedness") == 0.5


def test_a_skip_rate_line_names_each_reason_when_they_tie(run_cli, tmp_path):
    # a new user's find: "2 of 14 rows skipped; most for 'no context' (1)" when 'no request' counted 1 too
    rows = [{"id": "a", "request": "Where?"}, {"id": "b", "context": ["In Paris."]}, {"id": "c", "request": "Where?", "context": ["In Paris."]}]
    tied = run_cli(["score", write_jsonl(tmp_path / "in.jsonl", rows), "-m", "sufficiency", "--max-skip-rate", "0.1", "--min-pass-rate", "0", "-q"])
    line = next(line for line in tied.stderr.splitlines() if "skip rate" in line)
    assert line.endswith("(2 of 3 rows skipped); 1 for 'no context', 1 for 'no request'"), line
    more = run_cli(["score", write_jsonl(tmp_path / "in2.jsonl", [*rows, {"id": "d", "request": "When?"}]), "-m", "sufficiency",
                    "--max-skip-rate", "0.1", "--min-pass-rate", "0", "-q"])
    line = next(line for line in more.stderr.splitlines() if "skip rate" in line)
    assert line.endswith("(3 of 4 rows skipped); most for 'no context' (2)"), line

"""JUnit carries the gate: a suite ``gate`` whose failures are the gate's failed checks, so a CI
test view is red exactly when the run's exit code says the gate failed (a new-user trial found a
bound that measured nothing failing the run while every JUnit suite was green)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conftest import write_jsonl
from helpers import TOWER_ROW as ROW


def _suites(path):
    return {suite.get("name"): suite for suite in ET.parse(path).getroot().iter("testsuite")}


def test_a_bound_that_measured_nothing_is_a_failing_gate_test(run_score, tmp_path):
    # no context in any row: sufficiency judges nothing, and the bound set on it fails the run
    source = write_jsonl(tmp_path / "in.jsonl", [{k: v for k, v in ROW.items() if k != "context"} | {"id": f"r{i}"} for i in range(3)])
    junit = tmp_path / "j.xml"
    config = tmp_path / "g.yaml"
    config.write_text("gate: {min_pass_rate: {sufficiency: 0.9, completeness: 0}}\n")
    run = run_score(source, config=str(config), junit=str(junit))
    assert run.code == 1
    gate = _suites(junit)["gate"]
    failed = {case.get("name"): case.find("failure").get("message") for case in gate.iter("testcase") if case.find("failure") is not None}
    assert list(failed) == ["sufficiency: no_row_judged"]
    assert failed["sufficiency: no_row_judged"] == next(line for line in run.lines if line.startswith("FAIL "))[len("FAIL "):]
    assert gate.get("failures") == "1" and _suites(junit)["sufficiency"].get("failures") == "0"


def test_a_passing_gate_is_a_green_gate_suite_and_properties_come_first(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**ROW, "id": f"r{i}"} for i in range(4)])
    junit = tmp_path / "j.xml"
    run = run_score(source, junit=str(junit), min_pass_rate=["0"], limit=2)
    assert run.code == 0
    suites = _suites(junit)
    assert suites["gate"].get("failures") == "0" and suites["gate"].get("tests") == str(len(run.lines) - 1)  # every check line, not the verdict
    for name in ("sufficiency", "completeness"):
        suite = suites[name]
        assert list(suite)[0].tag == "properties"  # JUnit's schema: properties before the testcases
        assert {p.get("name"): p.get("value") for p in suite.iter("property")}["not_sampled"] == "2"
        # rows left out by --limit are no test of this run: the summary counts them apart, not as skipped
        assert [case.get("name") for case in suite.iter("testcase")] == ["r0", "r1"] and suite.get("skipped") == "0"


def test_a_drop_of_negative_zero_prints_as_zero():
    # a breaker's find: compare --max-drop 0 printed "pass rate dropped -0 <= 0"
    from ragjudge.types import distinct

    assert distinct(-0.0, 0.0) == ("0.00", "0.00")
    assert distinct(0.5 - 0.5, 0) == ("0.00", "0.00")
    assert distinct(0.951, 0.95) == ("0.951", "0.950")  # unequal values still print unequal

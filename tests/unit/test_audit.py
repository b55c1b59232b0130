"""The abstention audit (``ragjudge.audit``): each row's cell of sufficient / insufficient x
answered correctly / answered incorrectly / abstained, its counts and intervals in the summary,
the gate's ``max_rate`` bounds, and the selective-generation curve.

The rows are constructed, each with a known cell, from the bundled SQuAD 2.0 rows (the shared
data; ``helpers.audit_rows``): a *sufficient* row is an answerable question with its own paragraph, whose gold answer
occurs word for word in one passage (``squad2_unanswerable_sufficiency_dev.jsonl``, label
sufficient); an *insufficient* row is an answerable question whose gold paragraph was removed,
none of whose gold answer's words occur in the passages left
(``squad2_goldremoved_sufficiency_dev.jsonl``). The responses are constructed too: the gold
answer (answers correctly), another row's gold answer sharing no word with it (answers wrongly),
or "I don't know" (declines). The judge is the fake judge (``ragjudge.transports.fake_rule``),
whose visible word-overlap rule decides each of these constructions as constructed.
"""

from __future__ import annotations

import json

import pytest
from scipy.stats import binomtest

from conftest import read_jsonl, write_jsonl
from helpers import AUDIT_BUILT as BUILT, audit_rows as build
from ragjudge.audit import CELLS, Audit, curve, lines

METRICS = ["sufficiency", "completeness", "abstention"]


def test_every_constructed_row_falls_in_its_cell_and_every_count_equals_the_construction(tmp_path, run_score):
    rows, built = build()
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, output=str(out), summary_json=str(summary),
                     min_pass_rate=["0"])
    assert done.code == 0, done.text
    assert [row["audit"] for row in read_jsonl(out)] == built
    document = json.loads(summary.read_text())["audit"]
    assert document["rows"] == 21  # the row without a response has no cell
    assert {name: cell["count"] for name, cell in document["cells"].items()} == BUILT
    interval = binomtest(6, 21).proportion_ci(confidence_level=0.95, method="wilson")
    assert document["cells"]["insufficient_abstained"]["share"] == pytest.approx(6 / 21)
    assert document["cells"]["insufficient_abstained"]["interval"] == pytest.approx([interval.low, interval.high])
    assert document["rates"]["answered_insufficient"] | {"interval": None} == {"value": 5 / 11, "count": 5, "rows": 11, "interval": None,
                                                                                "max": None}
    assert document["rates"]["abstained_sufficient"]["value"] == 2 / 10
    assert lines(done.result.summary.audit)[:3] == ["abstention audit (21 rows):", "  sufficient   correct 5 (24%), incorrect 3 (14%), abstained 2 (10%)",
                                                   "  insufficient correct 1 (5%), incorrect 4 (19%), abstained 6 (29%)"]


@pytest.mark.parametrize(("bound", "code"), [("0.2", 0), ("0.19", 1)])
def test_the_over_abstention_gate_fails_above_its_bound_and_passes_at_it(tmp_path, run_score, bound, code):
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], max_rate=[f"abstained_sufficient={bound}"])
    assert done.code == code, done.text
    assert f"audit abstained_sufficient: rate 0.20 {'<=' if code == 0 else '>'} {bound if code else '0.20'} (2 declined of 10 rows with a sufficient context)" in done.text


@pytest.mark.parametrize(("bound", "code"), [(str(5 / 11), 0), ("0.45", 1)])
def test_the_answered_insufficient_gate_fails_above_its_bound_and_passes_at_it(tmp_path, run_score, bound, code):
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], max_rate=[f"answered_insufficient={bound}"])
    assert done.code == code, done.text
    assert f"audit answered_insufficient: rate {'0.45 <= 0.45' if code == 0 else '0.455 > 0.450'} (5 answered of 11 rows with an insufficient context)" in done.text


def test_a_rate_bound_without_the_audits_metrics_is_refused_before_any_call(tmp_path, run_score, judge):
    # it paid for every call, then failed with exit 1 ("measured nothing ... add -m abstention"): knowable up front
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], max_rate=["answered_insufficient=0.5"])
    assert done.code == 2
    assert done.error == ("--max-rate answered_insufficient=0.5 bounds the abstention audit, which reads sufficiency, abstention and completeness "
                          "verdicts: this run does not judge abstention and completeness (add -m abstention -m completeness), so the bound "
                          "would measure nothing")


def test_evaluate_refuses_a_rate_bound_without_the_audits_metrics_naming_the_config_key(tmp_path, judge):
    from ragjudge import evaluate, load_config
    from ragjudge.errors import ConfigError

    rows, _ = build()
    config = load_config(None, {"judge": {"model": "openai/fake-judge"}, "metrics": ["sufficiency", "completeness"],
                                "gate": {"max_rate": {"answered_insufficient": 0.1}}})
    with pytest.raises(ConfigError) as info:
        evaluate(write_jsonl(tmp_path / "in.jsonl", rows), config, transport=judge)
    assert str(info.value).startswith("gate.max_rate (answered_insufficient=0.1) bounds the abstention audit")
    assert "does not judge abstention (add them to metrics)" in str(info.value)
    assert judge.calls == 0


def test_an_unknown_rate_is_refused_with_exit_2(tmp_path, run_score):
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, max_rate=["hallucinated=0.1"])
    assert done.code == 2 and "unknown rate 'hallucinated'" in done.error


def test_the_curve_reproduces_a_hand_computed_example():
    cells = ["sufficient_correct", "sufficient_incorrect", "insufficient_incorrect", "insufficient_abstained", "insufficient_correct", None]
    scores = [0.9, 0.8, 0.3, 0.2, 0.6, 0.1]  # the last row has no cell: not on the curve
    found = curve(cells, scores, target=0.6)
    # by hand: at t the rule answers the rows the application answered with score >= t
    # t=0.2: A B C E answered of 5 (D declined): coverage 0.8, accuracy 2/4; t=0.3 the same (C's 0.3 >= 0.3);
    # t=0.6: A B E, 0.6, 2/3; t=0.8: A B, 0.4, 1/2; t=0.9: A, 0.2, 1
    assert [(p["threshold"], p["coverage"], p["accuracy"], p["answered"]) for p in found["points"]] == [
        (0.2, 0.8, 0.5, 4), (0.3, 0.8, 0.5, 4), (0.6, 0.6, 2 / 3, 3), (0.8, 0.4, 0.5, 2), (0.9, 0.2, 1.0, 1)]
    assert found["rows"] == 5 and found["reaches"] == 0.6  # the lowest threshold whose accuracy >= 0.6
    assert curve(cells, scores, target=1.0)["reaches"] == 0.9 and curve(cells, scores, target=0.5)["reaches"] == 0.2
    assert curve(cells, [None] * 6) is None


def test_the_curve_on_the_applications_confidence_column(tmp_path, run_score):
    rows, _ = build()
    summary = tmp_path / "summary.json"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], summary_json=str(summary),
                     app_confidence="confidence", target_accuracy=0.6)
    assert done.code == 0, done.text
    found = json.loads(summary.read_text())["audit"]["curve"]
    # by hand: 21 rows with a cell; at 0.2 every answered row (5 + 3 + 1 + 4 = 13, 6 right); at 0.9 the sufficient ones (8, 5 right)
    assert [(p["threshold"], p["answered"], p["coverage"], p["accuracy"]) for p in found["points"]] == [
        (0.2, 13, 13 / 21, 6 / 13), (0.9, 8, 8 / 21, 5 / 8)]
    assert found["reaches"] == 0.9 and found["target"] == 0.6


def test_audits_of_chunks_merge_to_the_audit_of_the_whole():
    a, b = Audit(max_rate={"answered_insufficient": 0.1}), Audit()
    a.add(["sufficient_correct", None], [0.5, 0.1])
    b.add(["insufficient_incorrect", "sufficient_correct"], [None, 0.7])
    merged = a.merge(b)
    assert merged.counts == {**dict.fromkeys(CELLS, 0), "sufficient_correct": 2, "insufficient_incorrect": 1}
    assert merged.scored == [("sufficient_correct", 0.5), ("sufficient_correct", 0.7)] and merged.max_rate == {"answered_insufficient": 0.1}


def test_the_markdown_summary_and_pr_comment_hold_the_audit_table(tmp_path, run_score):
    rows, _ = build()
    markdown = tmp_path / "summary.md"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], markdown=str(markdown),
                     app_confidence="confidence", target_accuracy=0.6)
    assert done.code == 0, done.text
    text = markdown.read_text()
    low, high = binomtest(5, 21).proportion_ci(confidence_level=0.95, method="wilson")
    assert "### Abstention audit (21 rows with sufficiency, abstention and completeness ok)" in text
    assert f"| sufficient | 5 (24%, {low:.0%}-{high:.0%}) |" in text
    assert "- answered_insufficient: 45.5% (5 of 11)\n- abstained_sufficient: 20.0% (2 of 10)\n" in text
    assert "- selective generation: accuracy 60% reached at threshold 0.9" in text


def test_an_app_confidence_column_the_input_lacks_is_refused_with_exit_2(tmp_path, run_score):
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], app_confidence="certainty")
    assert done.code == 2 and "--app-confidence: the input has no column 'certainty'" in done.error, done.text


# issue 66 item 5: per trace, the sufficiency of its retrieved spans together, crossed with the root's response
def test_a_trace_gets_one_cell_from_its_spans_together_on_its_first_row():
    import pandas as pd

    from ragjudge.audit import of_frame

    ok = lambda passed: {"status": "ok", "passed": passed}  # noqa: E731
    spans = [  # trace, first row, sufficiency of the span, abstention and completeness (copied onto every span of the trace)
        ("t1", True, ok(False), ok(False), ok(False)),  # t1: one span sufficient of two -> sufficient; answered wrongly
        ("t1", False, ok(True), ok(False), ok(False)),
        ("t2", True, ok(False), ok(True), {"status": "skipped", "passed": None}),  # t2: no span sufficient; declined (no completeness needed)
        ("t2", False, ok(False), ok(True), {"status": "skipped", "passed": None}),
        ("t3", True, {"status": "error", "passed": None}, ok(False), ok(True)),  # t3: its one span in error: no cell
    ]
    frame = pd.DataFrame([{"trace_id": t, "trace_first_row": first,
                           **{f"{m}_{k}": v for m, verdict in zip(("sufficiency", "abstention", "completeness"), verdicts) for k, v in verdict.items()}}
                          for t, first, *verdicts in spans])
    assert of_frame(frame) == ["sufficient_incorrect", None, "insufficient_abstained", None, None]


def test_a_correctness_label_decides_in_place_of_completeness_where_a_row_has_one(tmp_path, run_score):
    rows, built = build()
    flip = {built.index("insufficient_correct"): 1, built.index("sufficient_incorrect"): 5}  # human ratings 1..5: wrong, right
    rows = [{**row, "human": flip.get(i)} for i, row in enumerate(rows)]  # every other row unlabelled: the judge decides
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], labels=["completeness=human"],
                     output=str(out), summary_json=str(summary))
    assert done.code == 0, done.text
    expected = {**BUILT, "insufficient_correct": 0, "insufficient_incorrect": 5, "sufficient_incorrect": 2, "sufficient_correct": 6}
    assert {name: cell["count"] for name, cell in json.loads(summary.read_text())["audit"]["cells"].items()} == expected
    assert [row["audit"] for row in read_jsonl(out)].count("sufficient_correct") == 6


def test_a_scored_table_read_back_counts_the_same_audit(tmp_path, run_score):
    # ragjudge report, --html from a table, compare: every output counts through ragjudge.counting.summarize
    import pandas as pd

    from ragjudge import load_config
    from ragjudge.counting import summarize

    rows, _ = build()
    out = tmp_path / "out.parquet"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], output=str(out))
    config = load_config(None, {"metrics": METRICS, "gate": {"max_rate": {"abstained_sufficient": 0.1}}})
    again = summarize(pd.read_parquet(out), config, METRICS).audit
    assert again.counts == done.result.summary.audit.counts == BUILT
    assert again.rate("abstained_sufficient") == (2, 10) and again.max_rate == {"abstained_sufficient": 0.1}


def test_audit_abstention_turns_the_audit_on_adding_the_abstention_metric_with_a_note(tmp_path, run_score):
    rows, built = build()
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), audit=["abstention"], output=str(out), summary_json=str(summary),
                     min_pass_rate=["0"])  # no -m: the default metrics, sufficiency and completeness, then abstention
    assert done.code == 0, done.text
    assert "--audit abstention added abstention to the metrics" in done.text
    assert [row["audit"] for row in read_jsonl(out)] == built
    document = json.loads(summary.read_text())
    assert set(document["metrics"]) == {"sufficiency", "completeness", "abstention"}
    assert {name: cell["count"] for name, cell in document["audit"]["cells"].items()} == BUILT


def test_audit_abstention_adds_every_audit_metric_the_run_does_not_name(tmp_path, run_score):
    rows, built = build()
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], audit=["abstention"], output=str(out),
                     min_pass_rate=["0"])
    assert done.code == 0, done.text
    assert "added abstention, completeness to the metrics" in done.text
    assert [row["audit"] for row in read_jsonl(out)] == built


def test_without_audit_abstention_two_of_the_three_metrics_make_no_audit(tmp_path, run_score):
    rows, _ = build()
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency", "abstention"], output=str(out),
                     summary_json=str(summary), min_pass_rate=["0"])
    assert done.code == 0, done.text
    assert "audit" not in read_jsonl(out)[0] and json.loads(summary.read_text()).get("audit") is None


def test_an_unknown_audit_is_refused_with_exit_2(tmp_path, run_score):
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), audit=["hallucination"])
    assert done.code == 2 and "--audit" in done.text and "abstention" in done.text


def test_an_app_confidence_cell_that_is_not_a_number_is_refused_before_any_call(tmp_path, run_score, judge):
    # a bad-input trial's find: 'high' in the column crashed after every call was paid ("unexpected ValueError", no table)
    rows, _ = build()
    rows[1]["confidence"], rows[2]["confidence"], rows[4]["confidence"] = None, "high", "low"
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], app_confidence="confidence",
                     output=str(out))
    assert done.code == 2
    assert done.error == ("--app-confidence: the column 'confidence' holds 'high' on row 3, not a number: give each row the "
                          "application's confidence as a number (the audit's curve is drawn over it), or leave the cell null "
                          "(that row then has no score)")
    assert judge.calls == 0 and not out.exists()
    rows[2]["confidence"], rows[4]["confidence"] = 0.9, 0.2  # a null cell stays allowed: that row has no score
    summary = tmp_path / "summary.json"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=METRICS, min_pass_rate=["0"], app_confidence="confidence",
                     summary_json=str(summary))
    assert done.code == 0, done.text
    assert json.loads(summary.read_text())["audit"]["curve"]["rows"] == 20  # 21 rows with a cell, row 2's without a score

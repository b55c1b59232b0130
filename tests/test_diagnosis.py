"""Issue 33: the per-row diagnosis (sufficiency x completeness), its counts in every output,
the trace rule, the --max-diagnosis gate and compare's movement. Verdicts come from the fake
server's word-overlap rule (ragjudge.fakeserver.heuristic_reply), controlled by the rows' text."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from conftest import SAMPLE, SHARED_DATA, shared_missing, write_jsonl

import ragjudge
from ragjudge.diagnosis import CELLS, cell, counts, diagnose, of_frame, shares

WHOLE = str(SAMPLE / "rag_whole.jsonl")
# the fake server's verdicts on the whole sample rows: each row gets the cell it was built for
WHOLE_COUNTS = {"ok": 2, "generation": 2, "retrieval": 2, "beyond_context": 2}

PASSAGE = "Dilip Joshi is an Indian actor who plays Jethalal Champaklal Gada in Taarak Mehta Ka Ooltah Chashmah."
OTHER = "Lake Kariba is the largest man made lake in the world by volume, between Zambia and Zimbabwe."
ANSWER = "Dilip Joshi plays Jethalal Champaklal Gada in Taarak Mehta Ka Ooltah Chashmah."
WRONG = "Lake Kariba lies between Zambia and Zimbabwe."


def row(ident, context, response, **extra):
    return {"id": ident, "request": "Who plays Jethalal in Taarak Mehta Ka Ooltah Chashmah?", "context": context,
            "expected_response": ANSWER, "response": response, **extra}


def settings(server, tmp_path):
    return {"model": "openai/fake-judge", "api_base": server.url, "cache": {"dir": str(tmp_path / "cache")}}


# -- the four cells ---------------------------------------------------------------------------


@pytest.mark.parametrize("sufficient, complete, expected", [
    (True, True, "ok"), (True, False, "generation"), (False, False, "retrieval"), (False, True, "beyond_context")])
def test_each_cell_of_the_table(sufficient, complete, expected):
    assert cell(sufficient, complete) == expected
    assert diagnose([("ok", sufficient)], [("ok", complete)]) == [expected]


def test_each_cell_from_real_verdicts_through_the_library(server, tmp_path):
    frame = pd.DataFrame([row("ok", [PASSAGE], ANSWER), row("generation", [PASSAGE], WRONG),
                          row("retrieval", [OTHER], WRONG), row("beyond", [OTHER], ANSWER)])
    scored = ragjudge.score(frame, metrics=["sufficiency", "completeness"], **settings(server, tmp_path))
    assert list(scored.frame["diagnosis"]) == ["ok", "generation", "retrieval", "beyond_context"]
    assert str(scored.frame["diagnosis"].dtype) == "string"
    assert scored.summary.diagnosis == {"ok": 1, "generation": 1, "retrieval": 1, "beyond_context": 1}


# -- null for skipped and error ---------------------------------------------------------------

_STATUSES = [(s, p) for s in ("ok", "skipped", "error") for p in (True, False, None)]


@pytest.mark.parametrize("suff", _STATUSES)
@pytest.mark.parametrize("comp", _STATUSES)
def test_nothing_is_inferred_from_a_skipped_or_error_verdict(suff, comp):
    got = diagnose([suff], [comp])[0]
    if suff[0] == "ok" and comp[0] == "ok" and suff[1] is not None and comp[1] is not None:
        assert got == cell(suff[1], comp[1])
    else:
        assert got is None


def test_skipped_and_error_rows_get_null_in_the_scored_table(server, tmp_path):
    frame = pd.DataFrame([row("no-response", [PASSAGE], None), row("no-context", None, ANSWER),
                          row("no-text", [{"page_content": ""}], ANSWER), row("whole", [PASSAGE], ANSWER)])
    scored = ragjudge.score(frame, metrics=["sufficiency", "completeness"], **settings(server, tmp_path))
    out = scored.frame.set_index("id")
    assert out.loc["no-response", "completeness_status"] == "skipped" and out.loc["no-context", "sufficiency_status"] == "skipped"
    assert out.loc["no-text", "sufficiency_status"] == "error"
    assert out["diagnosis"].isna().tolist() == [True, True, True, False] and out.loc["whole", "diagnosis"] == "ok"
    assert scored.summary.diagnosis == {"ok": 1, "generation": 0, "retrieval": 0, "beyond_context": 0}


def test_one_metric_alone_gives_no_diagnosis_column(server, tmp_path):
    scored = ragjudge.score(pd.DataFrame([row("a", [PASSAGE], ANSWER)]), metrics=["sufficiency"], **settings(server, tmp_path))
    assert "diagnosis" not in scored.frame.columns and scored.summary.diagnosis is None


# -- traces -------------------------------------------------------------------------------------


def _trace(trace, spans, response):
    return [row(f"{trace}/{i}", context, response, trace_id=trace, span_id=None if context is None else f"{trace}-s{i}",
                trace_first_row=i == 0) for i, context in enumerate(spans)]


def test_a_trace_is_sufficient_when_any_span_is_and_is_diagnosed_once_on_its_first_row(server, tmp_path):
    frame = pd.DataFrame([
        *_trace("t-any", [[OTHER], [PASSAGE]], ANSWER),       # the second span holds it: sufficient, complete -> ok
        *_trace("t-none", [[OTHER], [OTHER]], ANSWER),        # no span holds it -> beyond_context
        *_trace("t-gen", [[PASSAGE], None], WRONG),           # one span sufficient, the other skipped: sufficient -> generation
        *_trace("t-unknown", [[OTHER], None], WRONG),         # no span sufficient, one skipped: unknown -> null
        *_trace("t-single", [[OTHER]], WRONG),                # -> retrieval
    ])
    scored = ragjudge.score(frame, metrics=["sufficiency", "completeness"], **settings(server, tmp_path))
    out = scored.frame
    assert list(out["sufficiency_passed"].astype(object).where(out["sufficiency_status"] == "ok", None)) == \
        [False, True, False, False, True, None, False, None, False]
    got = dict(zip(out["id"], out["diagnosis"].astype(object).where(out["diagnosis"].notna(), None)))
    assert got == {"t-any/0": "ok", "t-any/1": None, "t-none/0": "beyond_context", "t-none/1": None, "t-gen/0": "generation",
                   "t-gen/1": None, "t-unknown/0": None, "t-unknown/1": None, "t-single/0": "retrieval"}
    assert scored.summary.diagnosis == {"ok": 1, "generation": 1, "retrieval": 1, "beyond_context": 1}  # one per trace


def test_the_trace_diagnosis_goes_on_the_row_counted_first_and_uses_its_completeness():
    # the trace's first row is the one ragjudge.counting counts (counting.first_of_trace): marked, or after another trace
    frame = pd.DataFrame({
        "trace_id": ["a", "a", "b", "b"], "span_id": ["a1", "a2", "b1", "b2"], "trace_first_row": [True, False, True, False],
        "sufficiency_status": ["ok", "ok", "ok", "error"], "sufficiency_passed": [False, True, False, None],
        "completeness_status": ["ok", "ok", "ok", "ok"], "completeness_passed": [False, True, True, True],
    })
    assert of_frame(frame) == ["generation", None, None, None]  # a: a span sufficient, the first row incomplete; b: one in error -> unknown
    # a trace's first row left out of the table: the next row of the trace is counted first, and diagnosed
    assert of_frame(frame.iloc[1:].reset_index(drop=True)) == ["ok", None, None]
    # without trace_first_row the table is not read as traces (breaker report: the diagnosis went per trace while
    # completeness was counted per row): every row its own diagnosis, as every row is its own unit
    no_flag = frame.drop(columns="trace_first_row")
    assert of_frame(no_flag) == ["retrieval", "ok", "beyond_context", None]


# -- counts in every output format ------------------------------------------------------------


def test_counts_in_the_summary_json_console_markdown_junit_and_html(run_cli, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli(["score", WHOLE, "--no-cache", "-o", str(out / "scored.jsonl"), "--summary-json", str(out / "s.json"),
                      "--markdown", str(out / "s.md"), "--junit", str(out / "j.xml"), "--html", str(out / "r.html"), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    document = json.loads((out / "s.json").read_text())
    assert document["diagnosis"]["counts"] == WHOLE_COUNTS and document["diagnosis"]["rows"] == 8
    assert document["diagnosis"]["shares"] == {"ok": 0.25, "generation": 0.25, "retrieval": 0.25, "beyond_context": 0.25}
    assert "diagnosis (8 rows with both verdicts ok): ok 2 (0.25), generation 2 (0.25), retrieval 2 (0.25), beyond_context 2 (0.25)" \
        in result.stderr + result.stdout
    markdown = (out / "s.md").read_text()
    assert "| retrieval | 2 | 0.25 |" in markdown and "| ok | 2 | 0.25 |" in markdown and "8 rows with both" in markdown
    suites = [s for s in ET.parse(out / "j.xml").getroot().findall("testsuite") if s.get("name") != "gate"]  # the metrics' suites
    for suite in suites:
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["diagnosis.rows"] == "8" and props["diagnosis.retrieval"] == "2" and props["diagnosis.ok.share"] == "0.2500"
    html = (out / "r.html").read_text()
    assert 'id="diagnosis-matrix"' in html
    data = json.loads(html.split('id="report-data">', 1)[1].split("</script>", 1)[0])
    assert counts([r["d"] for r in data["rows"]]) == WHOLE_COUNTS
    scored = pd.read_json(out / "scored.jsonl", lines=True)
    assert counts(scored["diagnosis"].tolist()) == WHOLE_COUNTS


def test_counts_add_up_across_chunks_and_are_read_back_by_report(run_score, tmp_path):
    result = run_score(WHOLE, output=str(tmp_path / "s.parquet"), summary_json=str(tmp_path / "s.json"), set_=["chunk_size=3"],
                       min_pass_rate=["0"])
    assert result.code == 0, result.text
    assert json.loads((tmp_path / "s.json").read_text())["diagnosis"]["counts"] == WHOLE_COUNTS
    from ragjudge.reports.html import summary_of

    frame = pd.read_parquet(tmp_path / "s.parquet")
    assert summary_of(frame, ["sufficiency", "completeness"]).diagnosis == WHOLE_COUNTS
    assert summary_of(frame.drop(columns="diagnosis"), ["sufficiency", "completeness"]).diagnosis == WHOLE_COUNTS


def test_shares_are_among_the_rows_with_a_diagnosis():
    assert shares({"ok": 1, "generation": 0, "retrieval": 3, "beyond_context": 0}) == {"ok": 0.25, "generation": 0.0, "retrieval": 0.75,
                                                                                       "beyond_context": 0.0}
    assert shares(dict.fromkeys(CELLS, 0)) == dict.fromkeys(CELLS)


# -- the gate -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bound, code", [("0.25", 0), ("0.26", 0), ("0.2499", 1), ("0.24", 1)])
def test_max_diagnosis_at_just_under_and_just_over_the_bound(run_score, tmp_path, bound, code):
    # retrieval is 2 of 8 rows: 0.25. A share at the bound passes; a share just over it fails
    result = run_score(WHOLE, min_pass_rate=["0"], max_diagnosis=[f"retrieval={bound}"], summary_json=str(tmp_path / "s.json"))
    assert result.code == code, result.text
    mark = "PASS" if code == 0 else "FAIL"
    assert f"{mark} diagnosis retrieval: share 0.25" in result.text
    assert json.loads((tmp_path / "s.json").read_text())["exit_code"] == code


def test_the_gate_is_a_typed_check_and_repeatable(server, tmp_path):
    from ragjudge.gate import Kind, check_gate

    scored = ragjudge.score(pd.read_json(WHOLE, lines=True), **settings(server, tmp_path),
                            gate={"min_pass_rate": 0.0, "max_diagnosis": {"retrieval": 0.25, "generation": 0.1}})
    gate = check_gate(scored.summary)
    found = {c.metric: c for c in gate.checks if c.check is Kind.DIAGNOSIS_SHARE}
    assert found["retrieval"].passed is True and found["retrieval"].value == 0.25 and found["retrieval"].bound == 0.25
    assert found["generation"].passed is False and found["generation"].value == 0.25
    assert found["generation"].counts == {"count": 2, "diagnosed": 8}
    assert gate.exit_code == 1


def test_the_config_key_and_set_reach_the_gate(run_score, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("gate:\n  min_pass_rate: 0\n  max_diagnosis: {beyond_context: 0.2}\n")
    assert run_score(WHOLE, config=str(config)).code == 1
    assert run_score(WHOLE, config=str(config), set_=["gate.max_diagnosis={beyond_context: 0.25}"]).code == 0
    assert run_score(WHOLE, min_pass_rate=["0"], set_=["gate.max_diagnosis.retrieval=0.1"]).code == 1


def test_a_bound_on_a_run_without_diagnosis_fails_unless_allowed(server, tmp_path):
    # it passed (the bound "not applied"): a bound set that measured nothing is a failing check (issue 43)
    from ragjudge.gate import Kind, check_gate
    from ragjudge.reports.gate_text import line

    scored = ragjudge.score(pd.DataFrame([row("a", [PASSAGE], None)]), **settings(server, tmp_path),
                            gate={"max_skip_rate": 1.0, "max_diagnosis": {"retrieval": 0.0}})
    gate = check_gate(scored.summary)
    check = next(c for c in gate.checks if c.check is Kind.DIAGNOSIS_SHARE)
    assert check.passed is False and check.value is None and gate.exit_code == 1
    assert line(check) == ("FAIL diagnosis retrieval: no row has a diagnosis (sufficiency and completeness both ok), so the bound set "
                           "on it (--max-diagnosis) measured nothing; allow it: gate.allow_unjudged: [diagnosis]")
    allowed = ragjudge.score(pd.DataFrame([row("a", [PASSAGE], None)]), **settings(server, tmp_path),
                             gate={"max_skip_rate": 1.0, "max_diagnosis": {"retrieval": 0.0}, "allow_unjudged": ["diagnosis"]})
    check = next(c for c in check_gate(allowed.summary).checks if c.check is Kind.DIAGNOSIS_SHARE)
    assert check.passed is None and check_gate(allowed.summary).exit_code == 0


@pytest.mark.parametrize("value, message", [("retreival=0.1", "unknown diagnosis 'retreival'"), ("retrieval=1.5", "not between 0 and 1"),
                                            ("retrieval", "expects KEY=VALUE")])
def test_a_bad_bound_is_exit_2_naming_the_fix(run_cli, value, message):
    result = run_cli(["score", WHOLE, "--max-diagnosis", value])
    assert result.code == 2 and message in result.stderr and "--max-diagnosis" in result.stderr


# -- compare ------------------------------------------------------------------------------------


def _table(cells):
    """A scored table with the given diagnosis per row (ids r1..), written as score writes it."""
    truth = {"ok": (True, True), "generation": (True, False), "retrieval": (False, False), "beyond_context": (False, True)}
    rows = []
    for i, name in enumerate(cells):
        s, c = truth[name] if name else (None, None)
        rows.append({"id": f"r{i + 1}", "sufficiency_status": "ok", "sufficiency_passed": s, "sufficiency_score": float(bool(s)),
                     "completeness_status": "ok" if name else "skipped", "completeness_passed": c,
                     "completeness_score": 5.0 if c else (1.0 if name else None)})
    return pd.DataFrame(rows)


def test_compare_reports_how_the_counts_moved():
    from ragjudge.compare import compare, render

    base = _table(["retrieval", "retrieval", "ok", "generation", None])
    cur = _table(["generation", "retrieval", "ok", "ok", "retrieval"])
    report = compare(base, cur)
    d = report["diagnosis"]
    assert d["baseline"] == {"ok": 1, "generation": 1, "retrieval": 2, "beyond_context": 0}
    assert d["current"] == {"ok": 2, "generation": 1, "retrieval": 2, "beyond_context": 0}
    assert d["change"] == {"ok": 1, "generation": 0, "retrieval": 0, "beyond_context": 0}
    assert d["moved"] == {"generation -> ok": 1, "retrieval -> generation": 1} and d["moved_ids"]["retrieval -> generation"] == ["r1"]
    text = render(report)
    assert "diagnosis on the matched rows: ok 1 -> 2 (+1), generation 1 -> 1 (+0), retrieval 2 -> 2 (+0)" in text
    assert "moved: generation -> ok 1, retrieval -> generation 1" in text


def test_compare_on_the_command_line_with_a_diagnosis_column(run_cli, tmp_path):
    base = _table(["retrieval", "retrieval", "ok"])
    cur = _table(["generation", "generation", "ok"])
    cur["diagnosis"] = ["generation", "generation", "ok"]  # read from the column when the table has one
    base.to_parquet(tmp_path / "b.parquet")
    cur.to_parquet(tmp_path / "c.parquet")
    result = run_cli(["compare", str(tmp_path / "b.parquet"), str(tmp_path / "c.parquet"), "--json"], judge=False)
    report = json.loads(result.stdout)
    assert report["diagnosis"]["change"] == {"ok": 0, "generation": 2, "retrieval": -2, "beyond_context": 0}
    assert report["diagnosis"]["moved"] == {"retrieval -> generation": 2}


def test_compare_without_both_metrics_has_no_diagnosis():
    from ragjudge.compare import compare

    base = _table(["ok"]).drop(columns=[c for c in _table(["ok"]).columns if c.startswith("completeness")])
    assert compare(base, base.copy())["diagnosis"] is None


def test_the_markdown_summary_shows_the_movement_against_a_baseline(run_score, tmp_path):
    first = run_score(WHOLE, output=str(tmp_path / "base.parquet"), min_pass_rate=["0"], quiet=True)
    assert first.code == 0, first.text
    rows = pd.read_json(WHOLE, lines=True)
    rows.loc[rows["id"] == "whole-q1-ok", "response"] = WRONG  # ok -> generation
    write_jsonl(tmp_path / "cur.jsonl", json.loads(rows.to_json(orient="records")))
    result = run_score(str(tmp_path / "cur.jsonl"), baseline=str(tmp_path / "base.parquet"), markdown=str(tmp_path / "s.md"),
                       min_pass_rate=["0"], summary_json=str(tmp_path / "s.json"))
    assert result.code == 0, result.text
    assert "diagnosis on the matched rows: ok 2 -> 1 (-1), generation 2 -> 3 (+1)" in result.text
    moved = json.loads((tmp_path / "s.json").read_text())["comparison"]["diagnosis"]
    assert moved["moved"] == {"ok -> generation": 1} and moved["moved_ids"] == {"ok -> generation": ["whole-q1-ok"]}
    text = (tmp_path / "s.md").read_text()
    assert "| ok | 2 | 1 | -1 |" in text and "| generation | 2 | 3 | +1 |" in text and "diagnosis moved from ok to generation: 1 row(s)" in text


# -- the sample rows ------------------------------------------------------------------------------


@pytest.mark.skipif(not (SHARED_DATA / "clapnq_sufficiency_dev.jsonl").exists(), reason=shared_missing("clapnq_sufficiency_dev.jsonl"))
def test_the_whole_sample_rows_are_what_the_script_builds():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_whole_rows", SAMPLE.parent / "scripts" / "make_whole_rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.SHARED = SHARED_DATA
    built = module.build(module.load())
    shipped = [json.loads(line) for line in open(WHOLE, encoding="utf-8")]
    assert built == shipped
    assert [r["label_diagnosis"] for r in shipped] == [*CELLS, *CELLS]
    assert all(r["request"] and r["context"] and r["response"] and r["expected_response"] for r in shipped)
    demo = [json.loads(line) for line in open(SAMPLE / "demo.jsonl", encoding="utf-8")]
    assert [r["id"] for r in demo if r.get("slice") == "clapnq_whole_rows"] == ["whole-q1-ok", "whole-q1-retrieval"]
    assert len(demo) == 8


def test_the_sample_rows_carry_no_whole_row_and_the_console_says_so(run_cli, tmp_path):
    result = run_cli(["score", str(SAMPLE / "rag_eval.jsonl"), "--summary-json", str(tmp_path / "s.json")])
    assert result.code == 1
    assert "diagnosis: no row has both a sufficiency and a completeness verdict ok" in result.stdout + result.stderr
    document = json.loads((tmp_path / "s.json").read_text())["diagnosis"]
    assert document["rows"] == 0 and document["counts"] == dict.fromkeys(CELLS, 0) and document["shares"] == dict.fromkeys(CELLS)

"""One way to count (issue 43, item 6): for generated tables (plain rows and traces with one or
several retriever spans, skipped and error rows, a mapped id, rows left out by --limit), the
counts and pass rates of the summary JSON, JUnit, the HTML report's data (of the run, and of
``ragjudge report`` on the scored table), Markdown and ``compare`` of the table with itself agree
exactly, and every output names the rows by the mapped id. Hypothesis draws the tables, so shapes
nobody wrote down are tried; the judge is the in-process fake (``judge`` fixture)."""

from __future__ import annotations

import json
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragjudge.traces.spans import SpanView, TraceView, rows_frame

WORDS = ["Paris", "Lyon", "river", "bridge", "tower", "museum"]


def _plain_row(i: int, draw) -> dict:
    word = draw(st.sampled_from(WORDS))
    context = draw(st.sampled_from(["text", "other", "none", "textless"]))
    row = {"qid": f"my-{i:02d}", "question": f"Where is the {word}?"}
    row["context"] = {"text": [f"The {word} is in the city."], "other": ["Nothing about it."], "none": None,
                      "textless": [{"score": 1}]}[context]
    if draw(st.booleans()):
        row["expected_response"] = f"The {word} is in the city."
    if draw(st.booleans()):
        row["response"] = draw(st.sampled_from([f"The {word} is in the city.", "I do not know."]))
    return row


@st.composite
def plain_tables(draw):
    rows = [_plain_row(i, draw) for i in range(draw(st.integers(1, 7)))]
    return pd.DataFrame(rows), True


@st.composite
def trace_tables(draw):
    traces = []
    for t in range(draw(st.integers(1, 4))):
        word = draw(st.sampled_from(WORDS))
        root = SpanView("root", None, "app", "CHAIN", {"question": f"Where is the {word}?"},
                        {"response": draw(st.sampled_from([f"The {word} is in the city.", "No idea."]))})
        views = [root]
        for s in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["text", "other", "textless"]))
            outputs = {"text": [{"page_content": f"The {word} is in the city."}], "other": [{"page_content": "Nothing about it."}],
                       "textless": [{"score": 1}]}[kind]
            views.append(SpanView(f"s{s}", "root", f"retrieve_{s}", "RETRIEVER", {"q": "x"}, outputs, start=s + 1))
        state = draw(st.sampled_from(["OK", "OK", "OK", "ERROR"]))
        facts = [f"The {word} is in the city"] if draw(st.booleans()) else None
        traces.append(TraceView(f"t{t}", state, views, {"expected_facts": facts} if facts else {}))
    return rows_frame(traces), False


def _junit(path: Path) -> tuple[dict, dict]:
    counts, names = {}, {}
    for suite in ET.parse(path).getroot().iter("testsuite"):
        name = suite.get("name")
        cases = list(suite.iter("testcase"))
        counts[name] = {"tests": len(cases), "errors": sum(1 for c in cases if c.find("error") is not None),
                        "skipped": sum(1 for c in cases if c.find("skipped") is not None),
                        "failures": sum(1 for c in cases if c.find("failure") is not None)}
        properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
        if "not_sampled" in properties:
            counts[name]["not_sampled"] = int(properties["not_sampled"])
        names[name] = [c.get("name") for c in cases]
    return counts, names


def _html_data(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    found = re.search(r"<script type=\"application/json\" id=\"report-data\">(.*?)</script>", text, re.S)
    return json.loads(found.group(1))


def _markdown(path: Path) -> dict:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in ("sufficiency", "completeness"):
            out[cells[0]] = {"ok": int(cells[1]), "error": int(cells[2]), "skipped": int(cells[3]), "pass_rate": cells[4]}
    return out


def _rate(value):
    return "-" if value is None else f"{value:.2f}"


@pytest.mark.slow  # a property test over many generated tables (~20 s)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(drawn=st.one_of(plain_tables(), trace_tables()), limit=st.one_of(st.none(), st.integers(1, 5)))
def test_every_output_counts_a_scored_table_the_same_way(run_score, drawn, limit):
    from ragjudge import load_config
    from ragjudge.compare import compare
    from ragjudge.counting import levels_of_config
    from ragjudge.reports.html import from_table

    frame, plain = drawn
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        source = root / "in.jsonl"  # JSON holds a context of text beside one of objects (Parquet would not)
        source.write_text(frame.to_json(orient="records", lines=True), encoding="utf-8")
        files = {name: root / name for name in ("out.parquet", "s.json", "junit.xml", "r.html", "s.md")}
        options = {"map": ["id=qid"]} if plain else {}
        run = run_score(str(source), output=str(files["out.parquet"]), summary_json=str(files["s.json"]), junit=str(files["junit.xml"]),
                        html=str(files["r.html"]), markdown=str(files["s.md"]), limit=limit, step_summary=False,
                        min_pass_rate=["0"], **options)
        assert run.code in (0, 1, 2, 3), run.error
        if run.result is None:
            return  # refused before judging (every row unusable is still judged; nothing here is refused)
        summary = json.loads(files["s.json"].read_text())["metrics"]
        junit, names = _junit(files["junit.xml"])
        html = _html_data(files["r.html"])
        markdown = _markdown(files["s.md"])
        table = pd.read_parquet(files["out.parquet"])
        config = load_config(None, {"columns": {"id": "qid"}} if plain else {})
        report = _html_data(_write(root / "report.html", from_table(table, config, source=str(source))))
        levels = levels_of_config(config, list(summary))
        compared = compare(table, table, id_column="qid" if plain else "id", levels=levels)["metrics"]
        for metric, m in summary.items():
            units = m["rows"]
            # rows left out by --limit are no JUnit test (helper report: JUnit said skipped 30, the summary not_sampled 30)
            assert junit[metric] == {"tests": units - m["not_sampled"], "errors": m["error"], "skipped": m["skipped"],
                                     "failures": m["ok"] - m["passed"], "not_sampled": m["not_sampled"]}, metric
            for counts in (html["counts"][metric], report["counts"][metric]):
                assert (counts["rows"], counts["ok"], counts["error"], counts["skipped"], counts["passed"]) == \
                    (units, m["ok"], m["error"], m["skipped"], m["passed"]), metric
                assert counts["pass_rate"] == m["pass_rate"]
            assert markdown[metric] == {"ok": m["ok"], "error": m["error"], "skipped": m["skipped"], "pass_rate": _rate(m["pass_rate"])}
            assert compared[metric]["pairs"] == m["ok"] and compared[metric]["pass_rate"] == m["pass_rate"]
            assert compared[metric]["regressed"] == compared[metric]["improved"] == 0
            if plain:  # the mapped id names every row, in every output
                assert set(names[metric]) <= set(frame["qid"]) and len(names[metric]) == len(frame) - m["not_sampled"]
        if plain:
            assert [row["id"] for row in html["rows"]] == [row["id"] for row in report["rows"]] == list(frame["qid"])
        else:  # a trace-level metric: one unit per trace; a span-level one: one per row
            traces = table["trace_id"].nunique()
            assert summary["completeness"]["rows"] == traces and summary["sufficiency"]["rows"] == len(table)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path

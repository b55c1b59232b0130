"""Label-corrected pass rates reach every output and the gate: --labels METRIC=COLUMN on a run,
the summary JSON, console lines, Markdown, JUnit properties, the HTML data block and a report of
the table read back all give the same figures; --gate-on corrected gates on the lower bound."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from markupsafe import escape

from conftest import write_jsonl
from ragjudge.calibration import RateStats
from ragjudge.reports.console import corrected_lines

# the fake judge says yes when the context holds the request's words: 'tower' rows yes, 'moon' rows no
YES = {"request": "Where is the tower?", "context": ["The tower is in Paris."]}
NO = {"request": "How far is the moon?", "context": ["The tower is in Paris."]}


def _table(tmp_path, n=120, labelled=60):
    """Rows the judge passes 3 in 4 times; people agree with it but on every fifth labelled row,
    where the judge said yes too easily."""
    rows = []
    for i in range(n):
        row = {**(YES if i % 4 else NO), "id": f"r{i}"}
        if i < labelled:
            row["human"] = "no" if i % 4 == 0 or i % 5 == 0 else "yes"
        rows.append(row)
    return write_jsonl(tmp_path / "in.jsonl", rows)


def test_every_output_gives_the_corrected_pass_rate_of_the_labelled_rows(run_score, tmp_path):
    source = _table(tmp_path)
    files = {name: tmp_path / name for name in ("s.json", "j.xml", "s.md", "r.html", "out.parquet")}
    run = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"], summary_json=str(files["s.json"]),
                    junit=str(files["j.xml"]), markdown=str(files["s.md"]), html=str(files["r.html"]), output=str(files["out.parquet"]))
    assert run.code == 0, run.error
    import pandas as pd

    table = pd.read_parquet(files["out.parquet"])
    expected = RateStats()  # the figures from the written table itself
    for passed, human in zip(table["sufficiency_passed"], table["human"]):
        expected.add(float(passed), None if pd.isna(human) else float(human == "yes"))
    want = expected.corrected()
    assert want.labelled == 60 and want.unlabelled == 60 and want.valid and 0 < want.lam <= 1 and want.estimate < want.judge
    document = json.loads(files["s.json"].read_text())["metrics"]["sufficiency"]["corrected"]
    assert document["labels"] == "human" and document["pass_rate"] == want.to_dict()
    line = f"sufficiency: corrected pass rate {want.estimate:.2f} [{want.low:.2f}, {want.high:.2f}] from 60 labelled rows ('human')"
    assert line in files["s.md"].read_text() and str(escape(line)) in files["r.html"].read_text()  # as Jinja escapes it
    assert line in corrected_lines(run.result.summary)[0]  # the console prints these lines under its table
    properties = {p.get("name"): p.get("value") for p in ET.parse(files["j.xml"]).getroot().find("testsuite").iter("property")}
    assert properties["corrected.pass_rate"] == f"{want.estimate:.4f}" and properties["corrected.labelled"] == "60"
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', files["r.html"].read_text(), re.S).group(1))
    assert data["counts"]["sufficiency"]["corrected"]["pass_rate"] == want.to_dict()
    # the table read back (ragjudge report, compare) counts the same, with the same labels column
    from ragjudge.counting import summarize
    from ragjudge.settings import load_config

    again = summarize(table, load_config(None, {"labels": {"sufficiency": "human"}}), ["sufficiency"])
    assert again.metrics["sufficiency"].corrected()["pass_rate"].to_dict() == want.to_dict()


def test_gate_on_corrected_passes_and_fails_at_the_lower_bound(run_score, tmp_path):
    source = _table(tmp_path)
    first = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"])
    low = first.result.summary.metrics["sufficiency"].corrected()["pass_rate"].low
    at = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], gate_on="corrected", min_pass_rate=[f"{low - 0.005:.4f}"])
    above = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], gate_on="corrected", min_pass_rate=[f"{low + 0.005:.4f}"])
    judge = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=[f"{low + 0.005:.4f}"])
    assert (at.code, above.code, judge.code) == (0, 1, 0)  # the judge's own 0.75 passes where the corrected bound does not
    assert any(line.startswith("FAIL sufficiency: corrected pass rate") for line in above.lines)
    refused = run_score(source, metric=["sufficiency"], gate_on="corrected", min_pass_rate=["0.5"])
    assert refused.code == 2 and "sufficiency has no labels column: give labels.sufficiency (--labels sufficiency=COLUMN)" in refused.error
    misspelt = run_score(source, metric=["sufficiency"], labels=["sufficency=human"])
    assert misspelt.code == 2 and "sufficency" in misspelt.error

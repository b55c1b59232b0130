"""Label-corrected pass rates reach every output and the gate: --labels METRIC=COLUMN on a run,
the summary JSON, console lines, Markdown, JUnit properties, the HTML data block and a report of
the table read back all give the same figures; --gate-on corrected gates on the lower bound."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from conftest import write_jsonl
from helpers import LABEL_NO as NO
from helpers import LABEL_YES as YES
from helpers import labelled_table as _table
from markupsafe import escape

from ragjudge.corrected_rates import RateStats
from ragjudge.reports.console import corrected_lines

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


def test_gate_on_per_metric_gates_one_metric_on_its_labels_and_another_on_the_judge(run_score, tmp_path):
    # a new user's find: the refusal said "or gate it on the judge", but gate_on was one setting for the whole run
    source = _table(tmp_path)
    first = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"])
    low = first.result.summary.metrics["sufficiency"].corrected()["pass_rate"].low
    bound = f"{low + 0.005:.4f}"  # above the corrected lower bound, below the judge's own 0.75
    corrected = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=[bound],
                          set_=["gate.gate_on={sufficiency: corrected, '*': judge}"])
    judged = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=[bound],
                       set_=["gate.gate_on={sufficiency: judge, '*': corrected}"])
    assert (corrected.code, judged.code) == (1, 0)
    assert any(line.startswith("FAIL sufficiency: corrected pass rate") for line in corrected.lines)
    unlabelled = run_score(source, metric=["sufficiency", "completeness"], labels=["sufficiency=human"], min_pass_rate=["0.5"],
                           set_=["gate.gate_on={'*': corrected}"])
    assert unlabelled.code == 2 and ("completeness has no labels column: give labels.completeness (--labels completeness=COLUMN), or "
                                     "gate it on the judge (gate.gate_on: {completeness: judge, '*': corrected})") in unlabelled.error
    misspelt = run_score(source, metric=["sufficiency"], set_=["gate.gate_on={sufficency: corrected}"])
    assert misspelt.code == 2 and "unknown metric 'sufficency' in gate.gate_on" in misspelt.error


# -- labels that cannot be read, or are missing (a new user's trial, 2026-12-04) -------------------------------------------

def test_a_labels_column_the_table_lacks_is_exit_2_naming_it(run_score, tmp_path):
    # it counted every row as unlabelled and said "0 labelled ok rows in 'humn': 30 more give a corrected pass rate"
    run = run_score(_table(tmp_path), metric=["sufficiency"], labels=["sufficiency=humn"], min_pass_rate=["0"])
    assert run.code == 2
    assert run.error.startswith("--labels sufficiency=humn: ") and "has no column 'humn' (labels.sufficiency); its columns: " in run.error


def test_zero_one_labels_as_a_csv_holds_them_are_read(run_score, tmp_path):
    # a 0/1 column with gaps comes back from CSV as "1.0" / "0.0": every cell counted as no label
    import pandas as pd

    source = _table(tmp_path)
    frame = pd.read_json(source, lines=True)
    frame["human"] = frame["human"].map({"yes": 1, "no": 0})  # float with NaN gaps
    frame["context"] = frame["context"].map(lambda passages: passages[0])
    csv = tmp_path / "in.csv"
    frame.to_csv(csv, index=False)
    assert "1.0" in csv.read_text()
    summary = tmp_path / "s.json"
    run = run_score(str(csv), metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"], summary_json=str(summary))
    assert run.code == 0, run.error
    found = json.loads(summary.read_text())["metrics"]["sufficiency"]["corrected"]["pass_rate"]
    assert (found["labelled"], found["labels_unreadable"], found["labels_only"]) == (60, 0, 0.6)


def test_ratings_off_the_scale_are_left_out_and_counted(run_score, tmp_path):
    # ratings x 2 (up to 10) on a 1..5 scale gave "mean score 5.59 [4.89, 6.29]" without a word
    good = {"request": "Where is the tower?", "context": ["The tower is in Paris."], "expected_response": "The tower is in Paris.",
            "response": "The tower is in Paris."}
    # the rows read first are checked before any call (exit 2, below); later chunks' bad cells are left out and counted
    rows = [{**good, "id": f"r{i}", "rating": 4 if i < 20 else [4, 10, "great", None][i % 4]} for i in range(100)]
    summary = tmp_path / "s.json"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["completeness"], labels=["completeness=rating"], min_pass_rate=["0"],
                    summary_json=str(summary), set_=["chunk_size=20"])
    assert run.code == 0, run.error
    corrected = json.loads(summary.read_text())["metrics"]["completeness"]["corrected"]
    assert (corrected["pass_rate"]["labelled"], corrected["pass_rate"]["labels_unreadable"]) == (40, 40)
    assert corrected["mean_score"]["labels_only"] == 4.0
    # a new user's find: the mean score's "agreement" (a score equal to a rating) read 0.0, a figure of nothing
    assert corrected["mean_score"]["agreement"] is None and corrected["pass_rate"]["agreement"] is not None
    (line,) = corrected_lines(run.result.summary)
    assert line.endswith("; 40 cell(s) of 'rating' hold no 1..5 rating, left out")


def test_labels_of_the_wrong_kind_are_exit_2_before_any_call(run_score, judge, tmp_path):
    # 1..5 stars for sufficiency read 1 as yes and dropped the rest; 0..100 ratings for completeness gave "mean score 61.31"
    stars = [{**YES, "id": f"r{i}", "stars": [1, 2, 4, 5][i % 4]} for i in range(40)]
    run = run_score(write_jsonl(tmp_path / "stars.jsonl", stars), metric=["sufficiency"], labels=["sufficiency=stars"], min_pass_rate=["0"])
    assert run.code == 2 and judge.calls == 0
    assert run.error.startswith("--labels sufficiency=stars: row 2 of ") and run.error.endswith(
        " holds 2, not a yes/no label (yes/no, true/false, 1/0); fix the column or leave the cell empty (an unlabelled row)")
    good = {"request": "Where is the tower?", "context": ["The tower is in Paris."], "expected_response": "The tower is in Paris.",
            "response": "The tower is in Paris."}
    percent = [{**good, "id": f"r{i}", "rating": 60 + i} for i in range(10)]
    run = run_score(write_jsonl(tmp_path / "pct.jsonl", percent), metric=["completeness"], labels=["completeness=rating"], min_pass_rate=["0"])
    assert run.code == 2 and "row 1 of " in run.error and " holds 60, not a 1..5 rating" in run.error and judge.calls == 0


def test_rating_labels_pass_at_the_judges_own_mark_given_by_a_flag(run_score, tmp_path):
    # issue 60: --threshold completeness=4, every judge score below it, every rating 3: the judge's 0.00 was corrected
    # to 1.00 [0.91, 1.00] (the ratings passed at the reference mark 3) and --gate-on corrected passed
    answer = "The tower is in Paris. It is tall. It is old."
    rows = [{"id": f"r{i}", "request": "Tell me about the tower", "context": ["x"], "expected_response": answer,
             "response": f"The tower is in Paris. ({i})", "rating": 3 if i < 40 else None} for i in range(120)]  # judged 2: one statement of 3
    summary = tmp_path / "s.json"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["completeness"], labels=["completeness=rating"],
                    min_pass_rate=["completeness=0.5"], threshold=["completeness=4"], gate_on="corrected", summary_json=str(summary))
    metric = json.loads(summary.read_text())["metrics"]["completeness"]
    corrected = metric["corrected"]["pass_rate"]
    assert (metric["pass_rate"], corrected["labels_only"], corrected["estimate"], corrected["interval"][0]) == (0.0, 0.0, 0.0, 0.0)
    assert run.code == 1  # the lower bound 0.00 < 0.50: the gate fails, as the judge's own rate does
    # the same labels at the judge's marks 1, 3 and 5: ratings 1, 2, 4 and 5 pass at each mark as the verdicts do
    rows = [{**rows[0], "id": f"r{i}", "rating": [1, 2, 4, 5][i % 4] if i < 40 else None} for i in range(80)]
    source = write_jsonl(tmp_path / "marks.jsonl", rows)
    found = []
    for threshold in ("1", "3", "5"):
        summary = tmp_path / f"s{threshold}.json"
        run = run_score(source, metric=["completeness"], labels=["completeness=rating"], min_pass_rate=["0"], threshold=[f"completeness={threshold}"],
                        summary_json=str(summary))
        assert run.code == 0, run.error
        found.append(json.loads(summary.read_text())["metrics"]["completeness"]["corrected"]["pass_rate"]["labels_only"])
    assert found == [1.0, 0.5, 0.25]  # was [0.5, 0.5, 0.5]: every run at the reference mark 3


def test_rating_labels_pass_at_the_judges_own_mark_given_by_the_config_file(run_score, tmp_path):
    # the other way: thresholds.completeness 2 in the file, the judge's 2 passes, people's 2 failed at the reference mark 3:
    # the judge's 1.00 was corrected to 0.00 and --gate-on corrected failed a gate every label and verdict pass
    answer = "The tower is in Paris. It is tall. It is old."
    rows = [{"id": f"r{i}", "request": "Tell me about the tower", "context": ["x"], "expected_response": answer,
             "response": f"The tower is in Paris. ({i})", "rating": 2 if i < 40 else None} for i in range(120)]
    config = tmp_path / "judge.yaml"
    config.write_text("thresholds:\n  completeness: 2\n")
    summary = tmp_path / "s.json"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), config=str(config), metric=["completeness"], labels=["completeness=rating"],
                    min_pass_rate=["completeness=0.5"], gate_on="corrected", summary_json=str(summary))
    metric = json.loads(summary.read_text())["metrics"]["completeness"]
    corrected = metric["corrected"]["pass_rate"]
    assert (metric["pass_rate"], corrected["labels_only"], corrected["estimate"]) == (1.0, 1.0, 1.0)
    assert run.code == 0 and corrected["interval"][0] > 0.9


def test_a_fully_labelled_table_gives_the_labels_rate_and_interval(run_score, tmp_path):
    # with no unlabelled row the corrected rate had no interval ("0 more give a corrected pass rate (and unlabelled rows)"),
    # and --gate-on corrected failed for "too few labels (..., None more needed)"
    source = _table(tmp_path, n=60, labelled=60)
    summary = tmp_path / "s.json"
    run = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0.2"], gate_on="corrected",
                    summary_json=str(summary))
    found = json.loads(summary.read_text())["metrics"]["sufficiency"]["corrected"]["pass_rate"]
    spread = 1.959963984540054 * (0.6 * 0.4 / 60) ** 0.5  # 36 of 60 labelled yes
    assert found["estimate"] == pytest.approx(0.6) and found["interval"] == pytest.approx([0.6 - spread, 0.6 + spread])
    assert found["unlabelled"] == 0 and found["lam"] == 0.0
    assert run.code == 0 and f"PASS sufficiency: corrected pass rate 0.60 [{0.6 - spread:.2f}, {0.6 + spread:.2f}]" in " ".join(run.lines)


def test_gate_on_corrected_needs_labels_for_every_metric_the_gate_bounds_by_default(run_score, tmp_path):
    # completeness kept its default bound of 1.0 and was gated on the judge's rate when sufficiency's bound was given
    run = run_score(_table(tmp_path), metric=["sufficiency", "completeness"], labels=["sufficiency=human"],
                    min_pass_rate=["sufficiency=0.3"], gate_on="corrected")
    assert run.code == 2 and "completeness has no labels column" in run.error


def test_labels_on_rows_without_an_ok_verdict_are_counted_and_said(run_score, judge, tmp_path):
    # issue 60: labels on rows that errored were dropped without a word; 3 rows fail (HTTP 400), 2 have no request (skipped)
    from ragjudge.transports.base import BAD_REQUEST, TransportError

    rows = [{**(YES if i % 4 else NO), "id": f"r{i}", "human": "yes" if i % 4 else "no"} for i in range(40)]  # every row labelled
    rows += [{"id": f"s{i}", "request": "", "context": ["x"], "human": "yes"} for i in range(2)]
    judge.errors.extend([TransportError(BAD_REQUEST, "HTTP 400: bad request", 0.0, 400) for _ in range(3)])
    summary, scored = tmp_path / "s.json", tmp_path / "out.parquet"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"],
                    set_=["gate.max_error_rate=1"], summary_json=str(summary), output=str(scored))
    metric = json.loads(summary.read_text())["metrics"]["sufficiency"]
    rate = metric["corrected"]["pass_rate"]
    assert (metric["error"], metric["skipped"], rate["labelled"], rate["labels_on_errors"], rate["labels_on_skipped"]) == (3, 2, 37, 3, 2)
    (line,) = corrected_lines(run.result.summary)
    assert line.startswith("sufficiency: corrected pass rate ") and " from 37 labelled rows ('human')" in line
    assert line.endswith("; 5 labelled row(s) without an ok verdict left out (3 error, 2 skipped)")
    # the scored table read back counts them the same (ragjudge report, compare)
    import pandas as pd

    from ragjudge.counting import summarize
    from ragjudge.settings import load_config

    again = summarize(pd.read_parquet(scored), load_config(None, {"labels": {"sufficiency": "human"}}), ["sufficiency"])
    assert again.metrics["sufficiency"].corrected()["pass_rate"].to_dict() == rate

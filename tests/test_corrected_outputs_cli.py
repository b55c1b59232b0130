"""Labels through the commands (``run_cli``): ``report`` and ``compare`` take ``--labels`` as
``score`` does, with the corrected pass rate and its interval, and refuse what ``score`` refuses.
The corrected rates in-process: tests/unit/test_corrected_outputs.py."""

from __future__ import annotations

import json
import re

import pytest
from conftest import write_jsonl
from helpers import LABEL_NO as NO
from helpers import LABEL_YES as YES
from helpers import labelled_table as _table
from markupsafe import escape

from ragjudge.corrected_rates import RateStats

def test_report_takes_labels_as_score_does(run_score, run_cli, tmp_path):
    # a new user's find: calibrate and the docs said "--labels on score, report, compare"; report had no --labels
    source = _table(tmp_path)
    scored = tmp_path / "out.parquet"
    assert run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"], output=str(scored)).code == 0
    flagged, keyed = tmp_path / "a.html", tmp_path / "b.html"
    assert run_cli(["report", str(scored), "--labels", "sufficiency=human", "-o", str(flagged)], judge=False).code == 0
    assert run_cli(["report", str(scored), "--set", "labels.sufficiency=human", "-o", str(keyed)], judge=False).code == 0
    data = [json.loads(re.search(r'id="report-data">(.*?)</script>', path.read_text(), re.S).group(1)) for path in (flagged, keyed)]
    assert data[0]["counts"]["sufficiency"]["corrected"] == data[1]["counts"]["sufficiency"]["corrected"]
    assert data[0]["counts"]["sufficiency"]["corrected"]["pass_rate"]["labelled"] == 60


def _current_table(tmp_path, n=120, labelled=60):
    """The same ids, a worse system: every third row the judge passed now fails for the judge,
    and the people who labelled it agree."""
    rows = []
    for i in range(n):
        worse = i % 3 == 0
        row = {**(NO if i % 4 == 0 or worse else YES), "id": f"r{i}"}
        if i < labelled:
            row["human"] = "no" if i % 4 == 0 or i % 5 == 0 or worse else "yes"
        rows.append(row)
    return write_jsonl(tmp_path / "now.jsonl", rows)


def _expected(table, threshold_yes="yes"):
    import pandas as pd

    stats = RateStats()
    for passed, human in zip(table["sufficiency_passed"], table["human"]):
        stats.add(float(passed), None if pd.isna(human) else float(human == threshold_yes))
    return stats.corrected()


def test_a_comparison_gives_each_runs_corrected_pass_rate_and_the_change_with_its_interval(run_score, run_cli, tmp_path):
    import math

    import pandas as pd

    from ragjudge.corrected_rates import difference

    run_score(_table(tmp_path), metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "base.parquet"), quiet=True)
    summary = tmp_path / "s.json"
    now = run_score(_current_table(tmp_path), metric=["sufficiency"], min_pass_rate=["0"], labels=["sufficiency=human"],
                    output=str(tmp_path / "now.parquet"), baseline=str(tmp_path / "base.parquet"), summary_json=str(summary),
                    markdown=str(tmp_path / "s.md"), html=str(tmp_path / "r.html"), quiet=True)
    assert now.code == 0, now.error
    before, after = (_expected(pd.read_parquet(tmp_path / name)) for name in ("base.parquet", "now.parquet"))
    assert before.valid and after.valid and after.estimate < before.estimate
    change = difference(before, after)
    spread = 1.959963984540054 * math.sqrt(before.standard_error ** 2 + after.standard_error ** 2)
    assert change["change"] == after.estimate - before.estimate
    assert change["interval"] == pytest.approx([change["change"] - spread, change["change"] + spread], abs=1e-12)
    figures = json.loads(summary.read_text())["comparison"]["metrics"]["sufficiency"]["corrected"]["pass_rate"]
    assert figures["baseline"] == before.to_dict() and figures["current"] == after.to_dict()
    assert figures["change"] == change["change"] and figures["interval"] == change["interval"] and figures["labelled"] == [60, 60]
    line = (f"label-corrected pass rate {before.estimate:.2f} [{before.low:.2f}, {before.high:.2f}] -> {after.estimate:.2f} "
            f"[{after.low:.2f}, {after.high:.2f}]: change {change['change']:+.2f} [{change['interval'][0]:+.2f}, {change['interval'][1]:+.2f}] "
            "(95%; 60 and 60 labelled rows)")
    assert f"- sufficiency: {line}".replace(">", "&gt;") in (tmp_path / "s.md").read_text().splitlines()  # Markdown escapes '>'
    assert f"<li>{escape(f'sufficiency against the baseline: {line}')}</li>" in (tmp_path / "r.html").read_text()
    alone = run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "now.parquet"), "--labels", "sufficiency=human"], judge=False)
    assert alone.code == 0 and f"  {line}" in alone.stdout.splitlines()
    as_json = json.loads(run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "now.parquet"), "--labels", "sufficiency=human",
                                  "--json"], judge=False).stdout)
    assert as_json["metrics"]["sufficiency"]["corrected"]["pass_rate"] == figures
    without = json.loads(run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "now.parquet"), "--json"], judge=False).stdout)
    assert "corrected" not in without["metrics"]["sufficiency"]


def test_a_comparison_with_too_few_labels_in_one_run_says_how_many_more(run_score, run_cli, tmp_path):
    run_score(_table(tmp_path, labelled=20), metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "base.parquet"), quiet=True)
    run_score(_current_table(tmp_path), metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "now.parquet"), quiet=True)
    shown = run_cli(["compare", str(tmp_path / "base.parquet"), str(tmp_path / "now.parquet"), "--labels", "sufficiency=human"], judge=False)
    assert ("  label-corrected pass rate: no interval (20 and 60 labelled rows; 10 more labels needed in the run with fewer)"
            in shown.stdout.splitlines())


def test_a_misspelt_labels_column_gets_the_closest_column_named(run_score, run_cli, tmp_path):
    # found trying docs/calibration.md as a new user: --labels sufficiency=humna listed the 40 columns of a scored table and
    # no suggestion, where -m sufficency gets "did you mean"
    run = run_score(_table(tmp_path), metric=["sufficiency"], labels=["sufficiency=humn"], min_pass_rate=["0"])
    assert run.code == 2 and run.error.endswith("; did you mean 'human'?")
    # the other shape: calibrate (its own reading of the labels) says the same; a name like no column gets no suggestion
    done = run_cli(["calibrate", _table(tmp_path), "--labels", "sufficiency=humna", "-o", str(tmp_path / "x.yaml")], judge=False)
    assert done.code == 2 and done.stderr.strip().endswith("; did you mean 'human'?")
    far = run_score(_table(tmp_path), metric=["sufficiency"], labels=["sufficiency=verdict_by_people"], min_pass_rate=["0"])
    assert far.code == 2 and "did you mean" not in far.error


def test_a_comparison_refuses_labels_it_cannot_read(run_score, run_cli, tmp_path):
    # a labels column missing from one table, or labels of a metric neither table holds, were passed over without a word
    import pandas as pd

    run_score(_table(tmp_path), metric=["sufficiency"], min_pass_rate=["0"], output=str(tmp_path / "base.parquet"), quiet=True)
    pd.read_parquet(tmp_path / "base.parquet").drop(columns=["human"]).to_parquet(tmp_path / "now.parquet")
    base, now = str(tmp_path / "base.parquet"), str(tmp_path / "now.parquet")
    missing = run_cli(["compare", base, now, "--labels", "sufficiency=human"], judge=False)
    assert missing.code == 2 and "--labels sufficiency=human: the current table has no column 'human'" in missing.stderr
    other = run_cli(["compare", base, base, "--labels", "completeness=human"], judge=False)
    assert other.code == 2 and "--labels completeness=human: neither table holds completeness; they hold sufficiency" in other.stderr


def test_every_command_that_reads_labels_refuses_what_score_refuses(run_score, run_cli, tmp_path):
    # a breaker's find: score refused a text label ('sufficient'); compare gave a corrected rate over the rest, calibrate fitted on
    # them, and report with a labels column that does not exist said "0 labelled ok rows" (exit 0)
    rows = [{**(YES if i % 4 else NO), "id": f"r{i}", "human": ["yes", "no", "sufficient"][i % 3] if i < 60 else None} for i in range(90)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    refused = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"])
    assert refused.code == 2 and "row 3 of" in refused.error and "holds 'sufficient', not a yes/no label" in refused.error
    scored = tmp_path / "out.parquet"
    assert run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(scored)).code == 0
    said = "--labels sufficiency=human: row 3 of"
    compared = run_cli(["compare", str(scored), str(scored), "--labels", "sufficiency=human"], judge=False)
    assert compared.code == 2 and said in compared.stderr and "holds 'sufficient', not a yes/no label" in compared.stderr
    reported = run_cli(["report", str(scored), "--labels", "sufficiency=human", "-o", str(tmp_path / "r.html")], judge=False)
    assert reported.code == 2 and said in reported.stderr
    calibrated = run_cli(["calibrate", str(scored), "--labels", "sufficiency=human", "--model", "openai/fake-judge", "-o",
                          str(tmp_path / "x.yaml")], judge=False)
    assert calibrated.code == 2 and said in calibrated.stderr
    missing = run_cli(["report", str(scored), "--labels", "sufficiency=nosuch", "-o", str(tmp_path / "r.html")], judge=False)
    assert missing.code == 2 and "--labels sufficiency=nosuch:" in missing.stderr and "has no column 'nosuch'" in missing.stderr

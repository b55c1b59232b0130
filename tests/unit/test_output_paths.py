"""Where a run writes: every output its own file, none of them the baseline, and no report over
the input, refused before any judge call (``ragjudge.options.check_outputs``)."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import write_jsonl
from helpers import TOWER_ROW as ROW


def _scored(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**ROW, "id": f"r{i}"} for i in range(3)])
    baseline = tmp_path / "base.parquet"
    assert run_score(source, output=str(baseline), min_pass_rate=["0"]).code == 0
    return source, baseline


def test_an_output_that_is_the_baseline_is_refused_before_judging(run_score, judge, tmp_path):
    # -o the baseline compared the run with itself (exit 0, no regression ever); a report over it destroyed it
    source, baseline = _scored(run_score, tmp_path)
    before, calls = baseline.read_bytes(), judge.calls
    for option in ("output", "junit", "markdown", "html", "summary_json"):
        done = run_score(source, baseline=str(baseline), max_regressions=0, **{option: str(baseline)})
        flag = {"output": "-o", "summary_json": "--summary-json"}.get(option, f"--{option}")
        assert done.code == 2 and done.error.startswith(f"{flag} {baseline} is also --baseline"), (option, done.error)
    assert judge.calls == calls and baseline.read_bytes() == before  # nothing judged, the baseline untouched


def test_two_reports_that_are_one_file_are_refused(run_score, judge, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**ROW, "id": "r0"}])
    report = str(tmp_path / "report.out")
    for first, second, flags in (("junit", "html", "--html"), ("junit", "markdown", "--markdown"), ("summary_json", "markdown", "--markdown")):
        done = run_score(source, **{first: report, second: report})
        assert done.code == 2 and f"{report} is also {'--summary-json' if first == 'summary_json' else '--' + first}" in done.error and done.error.startswith(flags), done.error
    assert judge.calls == 0


def test_a_report_over_the_input_is_refused_and_o_may_replace_it(run_score, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**ROW, "id": "r0"}])
    refused = run_score(source, junit=source)
    assert refused.code == 2 and refused.error == f"--junit {source} is also the input; the report would replace it: give it another name"
    replaced = run_score(source, output=source, output_format="jsonl", min_pass_rate=["0"])
    assert replaced.code == 0 and pd.read_json(source, lines=True)["sufficiency_status"].tolist() == ["ok"]


def test_a_repeated_input_id_with_a_baseline_is_refused_before_judging(run_score, judge, tmp_path):
    # it was found after every row was judged and paid for, and the reports were never written
    unique = write_jsonl(tmp_path / "unique.jsonl", [{**ROW, "qid": q} for q in ("q1", "q6", "q2")])
    baseline = tmp_path / "base.parquet"
    assert run_score(unique, set_=["columns.id=qid"], output=str(baseline), min_pass_rate=["0"]).code == 0
    twice = write_jsonl(tmp_path / "twice.jsonl", [{**ROW, "qid": q} for q in ("q1", "q6", "q2", "q6")])
    calls = judge.calls
    done = run_score(twice, set_=["columns.id=qid"], baseline=str(baseline), summary_json=str(tmp_path / "s.json"))
    assert done.code == 2 and done.error.startswith("the input table has the id 'q6' more than once (rows 2, 4, column 'qid'); "
                                                    "ids must be unique to match rows: map a unique column with --map id=COLUMN")
    assert judge.calls == calls


def test_compare_reads_a_dotted_id_and_refuses_an_id_column_it_cannot_find(tmp_path):
    # --map id=meta.qid was ignored: the rows were matched by position (4 false regressions)
    from ragjudge.compare import compare
    from ragjudge.errors import InputError

    rows = [{"meta": {"qid": f"n{i}"}, "sufficiency_status": "ok", "sufficiency_passed": i % 2 == 0, "sufficiency_score": float(i % 2 == 0)}
            for i in range(4)]
    base, cur = pd.DataFrame(rows), pd.DataFrame(rows[::-1])
    report = compare(base, cur, id_column="meta.qid", id_required=True)
    assert report["matched_by"] == "id" and report["metrics"]["sufficiency"]["regressed"] == 0
    with pytest.raises(InputError, match=r"^the baseline table has no column 'nope' to read the ids from \(id=nope\); its columns: meta"):
        compare(base, cur, id_column="nope", id_required=True)
    assert compare(base, cur, id_column="nope")["matched_by"] == "position"  # not named: the default id, by position with a warning

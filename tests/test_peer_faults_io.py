"""Issue 29's input/output faults (items 4, 11 and 12): counts are of records, not lines;
both engines read the same sources into the same table; what ragjudge writes it reads back.
Each kind of fault has the issue's example as a test, and a second test in another shape."""

from __future__ import annotations

import csv
import json

import pandas as pd

from conftest import read_jsonl


def rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": f"Landmark {i} stands\nin city {i}.\n\nIt is old.",
             "expected_response": f"city {i}"} for i in range(n)]


# 4. --sample, --limit, the dry run and the progress total count records, not lines

def multiline_csv(path, n: int = 10) -> str:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows(1)[0]))
        writer.writeheader()
        writer.writerows(rows(n))
    assert path.read_text().count("\n") > 3 * n  # each record spans several lines
    return str(path)


def test_sample_on_a_csv_whose_cells_span_lines_judges_that_many_records(run_cli, tmp_path, server):
    source = multiline_csv(tmp_path / "in.csv")
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "--sample", "5", "--seed", "1", "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    statuses = [r["sufficiency_status"] for r in read_jsonl(out)]
    assert len(statuses) == 10 and statuses.count("ok") == 5 and statuses.count("skipped") == 5 and server.calls == 5
    dry = run_cli(["score", source, "-m", "sufficiency", "--sample", "5", "--seed", "1", "--dry-run", "--summary-json", str(summary)])
    assert dry.code == 0, dry.stderr
    assert "sufficiency: 5 rows to judge, 5 skipped (5 not sampled)" in dry.stdout + dry.stderr
    assert json.loads(summary.read_text())["dry_run"]["rows"] == 10


def test_counts_are_records_in_every_format(tmp_path):
    from ragjudge.io import count_records, read_table

    data = rows(7)
    jsonl = tmp_path / "in.jsonl"  # blank lines, a line of Unicode spaces and a BOM: none is a record
    jsonl.write_bytes(b"\xef\xbb\xbf" + b"\n\n".join(json.dumps(r).encode() for r in data) + "\n\u00a0\u2003\n\n".encode())
    parquet = tmp_path / "in.parquet"
    pd.DataFrame(data).to_parquet(parquet)
    source = multiline_csv(tmp_path / "in.csv", 7)
    for path, fmt in ((str(jsonl), "jsonl"), (source, "csv"), (str(parquet), "parquet")):
        assert count_records(path, fmt) == len(read_table(path, fmt)) == 7, path


def test_sample_on_jsonl_from_stdin_with_blank_lines_counts_records(run_cli, tmp_path, server):
    # lines of Unicode spaces are blank to the reader: counted as rows, the sample of 9 of "13" missed some
    data = "\n\u00a0\n".join(json.dumps(r) for r in rows(9)).encode() + b"\n   \n"
    out = tmp_path / "out.jsonl"
    result = run_cli(["score", "-", "-m", "sufficiency", "-o", str(out), "--sample", "9", "--min-pass-rate", "0"], stdin=data)
    assert result.code == 0, result.stderr
    assert [r["sufficiency_status"] for r in read_jsonl(out)] == ["ok"] * 9 and server.calls == 9
    dry = run_cli(["score", "-", "-m", "sufficiency", "--sample", "9", "--dry-run"], stdin=data)
    assert dry.code == 0, dry.stderr
    assert "sufficiency: 9 rows to judge" in dry.stdout + dry.stderr


def test_the_progress_total_of_a_multiline_csv_is_its_record_count(tmp_path, server):
    from ragjudge.config import load_config
    from ragjudge.pipeline import evaluate

    config = load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "api_base": server.url},
                                "cache": {"enabled": False}})
    totals: list[int | None] = []
    evaluate(multiline_csv(tmp_path / "in.csv", 6), config, on_start=totals.append, limit=2)
    assert totals == [6] and server.calls == 2

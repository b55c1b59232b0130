"""What ragjudge writes, in every format, it reads back (``report``, ``compare``, ``--baseline``),
whatever control characters the rows hold (a NUL, a carriage return...)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import write_jsonl
from helpers import multiline_rows as rows


def control_rows(character: str, n: int = 4) -> list[dict]:
    data = rows(n)
    data[1]["context"] = f"Landmark 1 stands{character}in city 1."
    data[2]["request"] = f"Where is{character}landmark 2?"
    return data


def round_trip(run_cli, tmp_path, character: str, suffix: str) -> tuple[str, object]:
    source = write_jsonl(tmp_path / "in.jsonl", control_rows(character))
    out = tmp_path / f"out.{suffix}"
    scored = run_cli(["score", source, "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0"])
    assert scored.code == 0, scored.stderr
    report = run_cli(["report", str(out), "-o", str(tmp_path / "r.html")], judge=False)
    assert report.code == 0, report.stderr
    compared = run_cli(["compare", str(out), str(out), "--json", "--max-regressions", "0"], judge=False)
    assert compared.code == 0, compared.stderr
    m = json.loads(compared.stdout)["metrics"]["sufficiency"]
    assert (m["pairs"], m["regressed"], m["improved"]) == (4, 0, 0)
    again = run_cli(["score", source, "-m", "sufficiency", "--baseline", str(out), "--max-regressions", "0", "--min-pass-rate", "0", "-q"])
    assert again.code == 0, again.stderr
    return scored.stderr, pd.DataFrame(read_table_of(out))


def read_table_of(path):
    from ragjudge.io import read_table

    return read_table(str(path))


# peer report (issue 29 item 12): what ragjudge writes, in every format, it reads back, whatever characters the rows hold
def test_a_csv_whose_context_held_a_nul_reads_back_for_report_compare_and_baseline(run_cli, tmp_path):
    notes, table = round_trip(run_cli, tmp_path, "\0", "csv")
    assert list(table["id"]) == ["r0", "r1", "r2", "r3"]
    assert table["context"][1] == "Landmark 1 stands\ufffdin city 1." and table["request"][2] == "Where is\ufffdlandmark 2?"
    assert "column 'context': 1 cell(s) held a NUL character" in notes and "column 'request': 1 cell(s)" in notes


# peer report (issue 29 item 12): what ragjudge writes, in every format, it reads back, whatever characters the rows hold
@pytest.mark.parametrize("character", ["\r", "\x01", "\x1b", "\x0b\x0c", "\x85", "\u2028"])
def test_a_csv_with_other_control_characters_reads_back_as_written(run_cli, tmp_path, character):
    # a lone carriage return went out unquoted: every reader ended the row there
    _, table = round_trip(run_cli, tmp_path, character, "csv")
    assert list(table["id"]) == ["r0", "r1", "r2", "r3"]
    assert table["context"][1] == f"Landmark 1 stands{character}in city 1." and table["request"][2] == f"Where is{character}landmark 2?"


# peer report (issue 29 item 12): what ragjudge writes, in every format, it reads back, whatever characters the rows hold
@pytest.mark.parametrize("suffix", ["jsonl", "json", "parquet"])
def test_the_other_formats_keep_a_nul_and_a_carriage_return(run_cli, tmp_path, suffix):
    _, table = round_trip(run_cli, tmp_path, "\0\r", suffix)
    assert table["context"][1] == "Landmark 1 stands\0\rin city 1." and table["request"][2] == "Where is\0\rlandmark 2?"

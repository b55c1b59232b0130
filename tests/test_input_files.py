"""Reading input files (``ragjudge.io``): --sample, --limit, the dry run and the progress total
count records, not lines (a CSV record may span lines; blank lines are no records); a folder or a
glob of files is read into one table whose columns unify as pyarrow unifies schemas, or refused
naming the file and column. Ray reads the same folder into the same table: tests/test_ray.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl
from helpers import multiline_csv, two_files
from helpers import multiline_rows as rows


# peer report (issue 29 item 4): --sample, --limit, the dry run and the progress total count records, not lines
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


# peer report (issue 29 item 4): --sample, --limit, the dry run and the progress total count records, not lines
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


# peer report (issue 29 item 4): --sample, --limit, the dry run and the progress total count records, not lines
def test_the_progress_total_of_a_multiline_csv_is_its_record_count(tmp_path, server):
    from ragjudge import load_config
    from ragjudge.run import evaluate

    config = load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "api_base": server.url},
                                "cache": {"enabled": False}})
    totals: list[int | None] = []
    # a limit above the record count: the total is the records (6), not the lines; a limit below it is the total
    # itself since --limit counts the rows it chose (new-user trial: "judged 31/32 rows" with --limit 2)
    evaluate(multiline_csv(tmp_path / "in.csv", 6), config, on_start=totals.append, limit=10)
    assert totals == [6] and server.calls == 6


# peer report (issue 29 item 11): both engines read the same sources (a file, a folder or a glob) into the same table
def test_the_files_unify_as_pyarrow_unifies_their_schemas(tmp_path):
    import pyarrow as pa

    from ragjudge.io import read_table

    folder = two_files(tmp_path / "data", first_meta=lambda i: i, second_meta=lambda i: i + 0.5)  # integers, then decimals
    table = read_table(str(folder))
    assert table["meta"].tolist() == [0.0, 1.0, 2.0, 0.5, 1.5]
    schemas = [pa.Table.from_pylist(read_table(str(folder / name)).to_dict("records")).schema for name in ("a.jsonl", "b.jsonl")]
    assert pa.unify_schemas(schemas, promote_options="permissive").field("meta").type == pa.float64()
    with pytest.raises(Exception, match="Unable to merge"):  # pyarrow has no type for integers and text: ragjudge stores text
        pa.unify_schemas([pa.schema([("meta", pa.int64())]), pa.schema([("meta", pa.string())])], promote_options="permissive")
    assert read_table(str(two_files(tmp_path / "text")))["meta"].tolist() == ["0", "1", "2", "note 0", "note 1"]
    mixed = tmp_path / "mixed"  # integers and text within one file's chunk too: text, as Ray's blocks hold it
    mixed.mkdir()
    write_jsonl(mixed / "a.jsonl", [{"id": "a", "meta": 1}, {"id": "b", "meta": "x"}])
    write_jsonl(mixed / "b.jsonl", [{"id": "c", "meta": 2}])
    assert read_table(str(mixed / "*.jsonl"))["meta"].tolist() == ["1", "x", "2"]


# peer report (issue 29 item 11): both engines read the same sources (a file, a folder or a glob) into the same table
def test_a_value_the_shared_type_cannot_hold_is_exit_2_naming_the_file_and_the_column(run_score, tmp_path, judge):
    folder = two_files(tmp_path / "data", first_meta=lambda i: 2**60 + i, second_meta=lambda i: 1.5)
    result = run_score(str(folder / "*.jsonl"), metric=["sufficiency"])
    assert result.code == 2 and judge.calls == 0
    assert result.error.startswith(f"{folder / 'a.jsonl'}: column 'meta': Integer value 1152921504606846976 not in range")  # after "error: "
    assert f"the files share the type double for it ({folder / 'b.jsonl'} holds double values)" in result.error
    assert "Traceback" not in result.error

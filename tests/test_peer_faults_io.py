"""Issue 29's input/output faults (items 4, 11 and 12): counts are of records, not lines;
both engines read the same sources into the same table; what ragjudge writes it reads back.
Each kind of fault has the issue's example as a test, and a second test in another shape."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl


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
    from ragjudge import load_config
    from ragjudge.run import evaluate

    config = load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "api_base": server.url},
                                "cache": {"enabled": False}})
    totals: list[int | None] = []
    # a limit above the record count: the total is the records (6), not the lines; a limit below it is the total
    # itself since --limit counts the rows it chose (new-user trial: "judged 31/32 rows" with --limit 2)
    evaluate(multiline_csv(tmp_path / "in.csv", 6), config, on_start=totals.append, limit=10)
    assert totals == [6] and server.calls == 6


# 12. What ragjudge writes, in every format, it reads back, whatever characters the rows hold

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


def test_a_csv_whose_context_held_a_nul_reads_back_for_report_compare_and_baseline(run_cli, tmp_path):
    notes, table = round_trip(run_cli, tmp_path, "\0", "csv")
    assert list(table["id"]) == ["r0", "r1", "r2", "r3"]
    assert table["context"][1] == "Landmark 1 stands\ufffdin city 1." and table["request"][2] == "Where is\ufffdlandmark 2?"
    assert "column 'context': 1 cell(s) held a NUL character" in notes and "column 'request': 1 cell(s)" in notes


@pytest.mark.parametrize("character", ["\r", "\x01", "\x1b", "\x0b\x0c", "\x85", "\u2028"])
def test_a_csv_with_other_control_characters_reads_back_as_written(run_cli, tmp_path, character):
    # a lone carriage return went out unquoted: every reader ended the row there
    _, table = round_trip(run_cli, tmp_path, character, "csv")
    assert list(table["id"]) == ["r0", "r1", "r2", "r3"]
    assert table["context"][1] == f"Landmark 1 stands{character}in city 1." and table["request"][2] == f"Where is{character}landmark 2?"


@pytest.mark.parametrize("suffix", ["jsonl", "json", "parquet"])
def test_the_other_formats_keep_a_nul_and_a_carriage_return(run_cli, tmp_path, suffix):
    _, table = round_trip(run_cli, tmp_path, "\0\r", suffix)
    assert table["context"][1] == "Landmark 1 stands\0\rin city 1." and table["request"][2] == "Where is\0\rlandmark 2?"


# 11. Both engines read the same sources (a file, a folder or a glob) into the same table

def two_files(folder, first_meta=lambda i: i, second_meta=lambda i: f"note {i}"):
    folder.mkdir(exist_ok=True)
    first = [{**row, "id": f"a{i}", "meta": first_meta(i)} for i, row in enumerate(rows(3))]
    second = [{**row, "id": f"b{i}", "meta": second_meta(i), "tags": ["x", "y"]} for i, row in enumerate(rows(5)[3:])]
    write_jsonl(folder / "a.jsonl", first)
    write_jsonl(folder / "b.jsonl", second)
    return folder


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


def test_a_value_the_shared_type_cannot_hold_is_exit_2_naming_the_file_and_the_column(run_cli, tmp_path, server):
    folder = two_files(tmp_path / "data", first_meta=lambda i: 2**60 + i, second_meta=lambda i: 1.5)
    result = run_cli(["score", str(folder / "*.jsonl"), "-m", "sufficiency"])
    assert result.code == 2 and server.calls == 0
    assert result.stderr.startswith(f"error: {folder / 'a.jsonl'}: column 'meta': Integer value 1152921504606846976 not in range")
    assert f"the files share the type double for it ({folder / 'b.jsonl'} holds double values)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason='needs the [ray] extra: pip install ".[ray]"')
    import os

    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_ray_reads_the_folder_into_the_local_engines_table(run_cli, tmp_path, server, ray_cluster):
    import pyarrow.parquet as pq

    folder = two_files(tmp_path / "data")
    for suffix in ("jsonl", "parquet"):
        local, on_ray = tmp_path / f"local.{suffix}", tmp_path / f"ray.{suffix}"
        for engine, out in (("local", local), ("ray", on_ray)):
            result = run_cli(["score", str(folder), "-m", "sufficiency", "-o", str(out), "--min-pass-rate", "0", "--engine", engine,
                              "--no-cache"])
            assert result.code == 0, result.stderr
            assert "Traceback" not in result.stderr
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    local_table, ray_table = pq.read_table(tmp_path / "local.parquet"), pq.read_table(tmp_path / "ray.parquet")
    assert ray_table.schema.remove_metadata() == local_table.schema.remove_metadata()
    assert ray_table.to_pylist() == local_table.to_pylist()
    assert [r["meta"] for r in ray_table.to_pylist()] == ["0", "1", "2", "note 0", "note 1"]
    bad = two_files(tmp_path / "bad", first_meta=lambda i: 2**60 + i, second_meta=lambda i: 1.5)
    result = run_cli(["score", str(bad), "-m", "sufficiency", "--engine", "ray"])
    assert result.code == 2 and "Traceback" not in result.stderr
    assert f"error: {bad / 'a.jsonl'}: column 'meta': Integer value 1152921504606846976 not in range" in result.stderr

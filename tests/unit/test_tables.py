"""Tables in the unit tier: every input row kept with a status, values written back exactly in
each format, and the gate on inputs nothing could judge, from runs through the library against
the in-process fake judge (moved from tests/test_bad_input.py, their assertions unchanged; the
one-line errors and refused options stay there, as the command-line contract)."""

from __future__ import annotations

import json
import os
import stat

import pandas as pd
import pytest

from conftest import read_jsonl, write_jsonl
from helpers import LANDMARK_ROW as ROW

MIXED = {
    "list_then_str": ([[1, 2], "x"], ["[1, 2]", "x"]),
    "str_then_list": (["x", [1, 2]], ["x", "[1, 2]"]),
    "int_then_float": ([1, 1.5], [1.0, 1.5]),
    "int_float_text": ([1, 1.5, "text"], ["1", "1.5", "text"]),
    "bool_then_int": ([True, 7], ["true", "7"]),
    "int_then_bool": ([5, True], ["5", "true"]),
    "int_then_digits": ([1234, "00501"], ["1234", "00501"]),
    "float_then_nan_text": ([1.5, "NaN", "1e3"], ["1.5", "NaN", "1e3"]),
    "bool_then_text": ([True, "0", "false"], ["true", "0", "false"]),
    "object_fields_differ": ([{"source": "wiki", "page": 3}, {"url": "http://x"}],
                             [{"source": "wiki", "page": 3, "url": None}, {"source": None, "page": None, "url": "http://x"}]),
    "object_field_changes_type": ([{"k": 1}, {"k": "v"}], ['{"k": 1}', '{"k": "v"}']),
    "passages_with_other_keys": ([[{"content": "alpha passage", "id": 1}], [{"page_content": "beta passage"}]],
                                 [[{"content": "alpha passage", "id": 1, "page_content": None}], [{"content": None, "id": None, "page_content": "beta passage"}]]),
    "null_list_str_object": ([None, [1], "x", {"k": 1}], [None, "[1]", "x", '{"k": 1}']),
    # with chunks of 2: an object keeps only its own keys, 1 stays "1" (not the chunk's 1.0)
    "objects_then_text": ([{"a": 1}, {"a": 2, "b": 3}, "text"], ['{"a": 1}', '{"a": 2, "b": 3}', "text"]),
    "int_float_then_text": ([1, 2.5, "text"], ["1", "2.5", "text"]),
}


def _plain(value):
    """A cell read back by plain pandas as Python values: arrays as lists, and a missing text
    cell as None (pandas 3 reads it as NaN)."""
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_later_chunk_with_fewer_columns_stays_aligned_in_csv(run_score, tmp_path):
    rows = [{**ROW, "id": f"r{i}", "extra": "x"} for i in range(3)] + [{"id": "r3", "request": "q", "context": ["c"]}]
    config = tmp_path / "c.yaml"
    config.write_text("chunk_size: 2\n")
    out = tmp_path / "out.csv"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out), config=str(config))
    table = pd.read_csv(out)
    assert list(table["id"]) == ["r0", "r1", "r2", "r3"]
    assert list(table["sufficiency_status"]) == ["ok"] * 4
    assert table["judge_model"].notna().all()


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_column_first_seen_after_the_first_chunk_is_kept(run_score, tmp_path, suffix):
    # it was an exit-2 error after judging, and the whole output was lost
    rows = [ROW, {**ROW, "id": "r2"}, {**ROW, "id": "r3", "late": 1}]
    config = tmp_path / "c.yaml"
    config.write_text("chunk_size: 2\n")
    out = tmp_path / f"o.{suffix}"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out), config=str(config))
    assert result.code == 0, result.text
    table = pd.read_csv(out) if suffix == "csv" else pd.read_parquet(out)
    assert list(table["id"]) == ["r1", "r2", "r3"]
    assert table["late"].isna().tolist() == [True, True, False] and table["late"].iloc[2] == 1
    assert list(table.columns)[:5] == ["id", "request", "context", "expected_response", "late"]  # where one chunk puts it


def test_csv_keeps_large_integers_beside_nulls(run_score, tmp_path):
    # an integer column with a null in the same chunk was written as floats (9007199254740992.0)
    rows = [{**ROW, "id": 9007199254740993, "n": 3}, {**ROW, "id": None, "n": None}]
    out = tmp_path / "o.csv"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    first, second = (dict(zip(header, line.split(","))) for line in lines[1:3])
    assert (first["id"], first["n"], second["id"], second["n"]) == ("9007199254740993", "3", "", "")


def test_jsonl_output_keeps_input_values_exactly(run_score, tmp_path):
    rows = [{**ROW, "n": 7, "x": 0.123456789012345, "big": 12345678901234567}, {**ROW, "id": "r2", "n": None, "x": 1e-12, "big": None}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], output=str(out))
    written = read_jsonl(out)
    assert [(r["n"], r["x"], r["big"]) for r in written] == [(7, 0.123456789012345, 12345678901234567), (None, 1e-12, None)]


@pytest.mark.parametrize("values", [
    pytest.param(["a", 2], id="str_then_int"),
    pytest.param([1, [1]], id="int_then_list"),
    pytest.param([{}, {}], id="empty_objects"),
])
def test_parquet_output_survives_mixed_columns(run_score, tmp_path, values):
    rows = [{**ROW, "id": f"r{i}", "x": v} for i, v in enumerate(values)]
    out = tmp_path / "out.parquet"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], output=str(out))
    assert result.code == 0, result.text
    assert len(pd.read_parquet(out)) == len(values)


@pytest.mark.parametrize("content, suffix", [
    pytest.param("", ".jsonl", id="empty_jsonl"),
    pytest.param("  \n\n", ".jsonl", id="blank_jsonl"),
    pytest.param("id,request,context\n", ".csv", id="header_only_csv"),
])
def test_empty_input_is_exit_2_not_a_passing_gate(run_score, tmp_path, content, suffix):
    path = tmp_path / f"in{suffix}"
    path.write_text(content)
    result = run_score(str(path), output=str(tmp_path / "o.parquet"))
    assert result.code == 2
    assert "nothing was judged: the input has no rows" in result.text


def test_every_row_skipped_by_every_metric_is_exit_2(run_score, tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("id;request;context\n1;q;c\n")
    result = run_score(str(path))
    assert result.code == 2
    assert "nothing was judged: every row was skipped by every metric (1 row)" in result.text


def test_lone_surrogate_in_the_input_is_replaced_and_every_row_written(run_score, tmp_path):
    # it was an input error (exit 2); issue 20 asks for the character to be replaced instead
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({**ROW, "id": "ok"}) + "\n" + '{"id": "s", "request": "bad \\ud800", "context": "c"}\n')
    out = tmp_path / "o.jsonl"
    result = run_score(str(path), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    assert [r["request"] for r in read_jsonl(out)][1] == "bad \ufffd"


def test_output_symlink_is_followed_and_mode_follows_umask(run_score, tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    run_score(write_jsonl(tmp_path / "in.jsonl", [ROW]), metric=["sufficiency"], output=str(link))
    assert link.is_symlink()
    assert read_jsonl(target)[0]["id"] == "r1"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_repeated_metric_is_counted_once(run_score, tmp_path):
    summary = tmp_path / "s.json"
    run_score(write_jsonl(tmp_path / "in.jsonl", [ROW]), metric=["sufficiency", "sufficiency"], summary_json=str(summary))
    assert json.loads(summary.read_text())["metrics"]["sufficiency"]["rows"] == 1


@pytest.mark.parametrize("name", list(MIXED))
def test_parquet_column_of_mixed_types_is_the_same_whatever_the_chunk_size(run_score, tmp_path, name):
    # with chunk_size 1 a column whose type changes between chunks was an exit-2 error (no
    # file), then, when widened by casting, lost object fields, made 7 True and '00501' 501
    values, expected = MIXED[name]
    rows = [{**ROW, "id": f"r{i}", "x": v} for i, v in enumerate(values)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    tables, notes = {}, {}
    for chunk_size in (1, 2, 1000):
        config = tmp_path / f"c{chunk_size}.yaml"
        config.write_text(f"chunk_size: {chunk_size}\n")
        out = tmp_path / f"out{chunk_size}.parquet"
        result = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(out), config=str(config))
        assert result.code == 0, result.text
        tables[chunk_size] = pd.read_parquet(out)
        notes[chunk_size] = "column 'x' holds values of different types" in result.text
    for chunk_size, table in tables.items():
        assert list(table["id"]) == [f"r{i}" for i in range(len(values))]
        assert list(table["sufficiency_status"]) == ["ok"] * len(values)
        assert [_plain(v) for v in table["x"]] == expected, chunk_size
        texted = all(isinstance(v, str) or v is None for v in expected)
        assert notes[chunk_size] == texted  # a note whenever a column is stored as text
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp") or "spool" in p.name]


@pytest.mark.parametrize("suffix", ["jsonl", "json", "csv", "parquet"])
def test_binary_parquet_column_reaches_every_output_format(run_score, tmp_path, suffix):
    # JSONL and JSON output died with "unexpected UnicodeDecodeError" after judging
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "bin.parquet"
    pq.write_table(pa.table({"request": ["q"], "context": [["c"]], "blob": pa.array([b"\xff\x00ab"], pa.binary())}), source)
    out = tmp_path / f"o.{suffix}"
    result = run_score(str(source), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    if suffix == "parquet":
        assert pd.read_parquet(out)["blob"].tolist() == [b"\xff\x00ab"]
    else:
        text = out.read_text()
        assert "/wBhYg==" in text  # base64 of the bytes


def test_timestamps_reach_jsonl_as_iso_8601(run_score, tmp_path):
    # they were written as epoch milliseconds (1714566600000)
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"request": ["q"], "context": [["c"]], "asked_at": pa.array([pd.Timestamp("2024-05-01 12:30:00")], pa.timestamp("us"))}), source)
    out = tmp_path / "o.jsonl"
    result = run_score(str(source), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    assert read_jsonl(out)[0]["asked_at"] == "2024-05-01T12:30:00.000000"


def test_an_object_given_as_the_request_reaches_the_judge_as_json(run_score, tmp_path, judge):
    # it was sent as Python's repr: {'text': 'Where is landmark 1?'}
    judge.keep_requests = True
    row = {**ROW, "request": {"text": "Where is landmark 1?", "lang": "en"}}
    result = run_score(write_jsonl(tmp_path / "in.jsonl", [row]), metric=["sufficiency"], min_pass_rate=["0"])
    assert result.code == 0, result.text
    prompt = judge.requests[0]["messages"][-1]["content"]
    assert '{"text": "Where is landmark 1?", "lang": "en"}' in prompt and "{'text'" not in prompt


def test_an_output_name_ending_in_a_slash_is_a_folder_never_a_file_of_that_name(run_score, judge, tmp_path):
    # -o rayfold/ --output-format csv wrote a CSV file named rayfold
    from ragjudge.errors import InputError
    from ragjudge.io import names_folder, open_atomic

    folder = f"{tmp_path / 'rayfold'}/"
    assert names_folder(folder) and names_folder(str(tmp_path)) and not names_folder(str(tmp_path / "x.csv")) and not names_folder("-")
    with pytest.raises(InputError, match="output path is a folder: .*rayfold/$"):
        open_atomic(folder)
    rows = [{"id": "a", "request": "Where is it?", "context": ["It is here."]}]
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], output=folder, output_format="csv")
    assert run.code == 2 and run.error == f"output path is a folder: {folder}"
    assert not (tmp_path / "rayfold").exists() and judge.calls == 0


# peer report (issue 21)
def test_a_lone_surrogate_in_a_reply_is_replaced_and_every_row_written(run_score, tmp_path, judge):
    # "unexpected UnicodeEncodeError", exit 2, no output in any format, and the bad verdict cached
    judge.replies.append('{"facts": [{"fact": 1, "supported": true, "passages": [1], "reason": "r"}], "rationale": "Stated \\ud83d plainly.", "verdict": "yes"}')
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."], "expected_response": f"city {i}"}
            for i in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    for suffix in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"out.{suffix}"
        result = run_score(source, metric=["sufficiency"], output=str(out), concurrency=1, summary_json=str(tmp_path / "s.json"))
        assert result.code == 0, result.text
        import pandas as pd

        table = pd.read_json(out, lines=True) if suffix == "jsonl" else pd.read_csv(out) if suffix == "csv" else pd.read_parquet(out)
        assert len(table) == 3 and table["sufficiency_rationale"][0] == "Stated \ufffd plainly."  # cached, then read again


def _parquet_chunks(kind: str) -> list[pd.DataFrame]:
    """Chunks as the engine writes them: alike, or with a column that changes or first appears later."""
    rows = [{"id": f"r{i}", "request": f"q{i}", "score": float(i), "tags": [f"t{i}"], "sufficiency_status": "ok"} for i in range(9)]
    if kind == "a column first seen later":
        rows[7]["late"] = "x"
    if kind == "a column that widens":
        for row in rows:
            row["n"] = 1 if int(row["id"][1:]) < 6 else 1.5
    if kind == "a column that becomes text":
        for row in rows:
            row["n"] = 7 if int(row["id"][1:]) < 6 else "seven"
    return [pd.DataFrame(rows[i:i + 2]) for i in range(0, len(rows), 2)]


@pytest.mark.parametrize("kind", ["alike", "a column first seen later", "a column that widens", "a column that becomes text"])
def test_a_parquet_file_written_as_its_chunks_come_is_the_file_written_from_the_spool(tmp_path, monkeypatch, kind):
    """While every chunk has the first chunk's schema, the Parquet file is written as the chunks
    come and close() adds only the last row group and the footer (issue 51: the wait from the
    last reply to exit was 39 ms of writing 12,000 rows). The bytes are those written from the
    spool on close(), as before; a chunk that changes the schema falls back to that."""
    import pyarrow.parquet as pq

    from ragjudge.io import writers

    monkeypatch.setattr(writers, "ROW_GROUP_ROWS", 3)  # row groups written during the run, not only on close()
    own = {"sufficiency_status": "string"}
    record = {"metrics": ["sufficiency"], "gate": {"min_pass_rate": 0.8}}
    files, notes, before_close = {}, {}, {}
    for streaming in (True, False):
        path = tmp_path / f"{streaming}.parquet"
        writer = writers.TableWriter(str(path), None, own)
        writer._streaming = writer._streaming and streaming  # False: the spool alone, as before this change
        writer.record = record
        for chunk in _parquet_chunks(kind):
            writer.write(chunk)
        before_close[streaming] = writer._buffer.tell()  # bytes handed to the file so far
        writer.close()
        files[streaming], notes[streaming] = path.read_bytes(), writer.notes
    assert files[True] == files[False]
    assert notes[True] == notes[False]
    assert (before_close[True] > 0) == (kind == "alike")  # written as the chunks came only while they were alike
    assert before_close[False] == 0
    table = pq.read_table(tmp_path / "True.parquet")
    assert table.column("id").to_pylist() == [f"r{i}" for i in range(9)]
    assert json.loads(table.schema.metadata[writers.RECORD_KEY]) == record
    assert pq.ParquetFile(tmp_path / "True.parquet").metadata.num_row_groups == 3
    assert not [p.name for p in tmp_path.iterdir() if "spool" in p.name or p.name.endswith(".tmp")]


def test_a_parquet_file_aborted_while_it_is_written_as_chunks_come_leaves_nothing(tmp_path, monkeypatch, capfd):
    from ragjudge.io import writers

    monkeypatch.setattr(writers, "ROW_GROUP_ROWS", 3)
    path = tmp_path / "out.parquet"
    path.write_bytes(b"the previous file")
    writer = writers.TableWriter(str(path), None, {})
    for chunk in _parquet_chunks("alike"):
        writer.write(chunk)
    writer.abort()
    del writer
    import gc

    gc.collect()
    assert path.read_bytes() == b"the previous file"
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_run_record_changed_after_the_first_chunk_is_the_one_in_the_parquet_file(tmp_path):
    import pyarrow.parquet as pq

    from ragjudge.io import writers

    path = tmp_path / "out.parquet"
    writer = writers.TableWriter(str(path), None, {})
    writer.record = {"gate": {"min_pass_rate": 0.8}}
    for chunk in _parquet_chunks("alike"):
        writer.write(chunk)
    writer.record["gate"]["min_pass_rate"] = 0.9  # the same dict, changed in place after the file began
    writer.close()
    assert json.loads(pq.read_table(path).schema.metadata[writers.RECORD_KEY]) == {"gate": {"min_pass_rate": 0.9}}
    assert pq.read_table(path).column("id").to_pylist() == [f"r{i}" for i in range(9)]


# issue 60 item 23: "at at column": json's own message ends in "at" ("Unterminated string starting at")
def test_a_json_error_names_its_column_once(run_score, tmp_path):
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"request": "q", "context": "x"}\n{"request": "q", "context": "no end}', encoding="utf-8")  # no newline at the end
    assert run_score(str(lines)).error == (f"{lines}: line 2: not valid JSON (Unterminated string starting at column 29); each line must "
                                           "hold one JSON object")
    # a second shape: a .json file (one array), read whole by another reader
    whole = tmp_path / "in.json"
    whole.write_text('[{"request": "q", "context": "a\tb"}]\n', encoding="utf-8")
    error = run_score(str(whole)).error
    assert "not valid JSON (Invalid control character at column 32)" in error and "at at" not in error

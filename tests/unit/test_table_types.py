"""Every column type a user's table can hold is written correctly in every output format, and
ragjudge reads back what it wrote (issue 44 item 7, pandas-dev/pandas#63236: a ``duration[ms]``
of 1.5 s was written to JSONL as 1.5 us; a ``map<string, string>`` came back as a list of pairs).

A property over column types x formats: hypothesis draws tables of typed columns (integers,
floats, booleans, text, timestamps of every unit with and without a time zone, durations of every
unit, dates, decimals, bytes, lists, objects with fixed keys, maps with varying keys), writes each
with ragjudge's writer in each format and reads it back with ragjudge's reader. The text formats
hold what JSON and CSV can: times and durations as ISO 8601 text, bytes as base64, lists and
objects as JSON (in a CSV cell); the value each stands for must be the value written."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragjudge.io import read_table, write_table

FORMATS = ("jsonl", "json", "csv", "parquet")
UNITS = ("s", "ms", "us", "ns")


def _missing(value) -> bool:  # pd.NA: a Parquet decimal column is read in its own Arrow type (readers._kept_type)
    return value is None or value is pd.NaT or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _plain(value):
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def _json(value):
    return json.loads(value) if isinstance(value, str) else _plain(value)


def _deep(value):
    """Lists and objects with their numpy arrays and scalars as plain Python values."""
    value = _plain(value)
    if isinstance(value, list):
        return [_deep(v) for v in value]
    if isinstance(value, dict):
        return {k: _deep(v) for k, v in value.items()}
    return value


# kind -> (make the column from Python values, the value a cell stands for, read back)
def _timestamp(value) -> str | None:
    return None if _missing(value) else pd.Timestamp(value).isoformat()


def _duration(value) -> int | None:
    return None if _missing(value) else pd.Timedelta(value).value


KINDS = {
    "int": (lambda v: pd.Series(v, dtype="int64"), int, lambda x: int(x)),
    "float": (lambda v: pd.Series(v, dtype="float64"), lambda x: None if _missing(x) else float(x),
              lambda x: None if _missing(x) or x == "" else float(x)),
    "bool": (lambda v: pd.Series(v, dtype="bool"), bool, lambda x: x if isinstance(x, bool) else str(x) == "True"),
    "text": (lambda v: pd.Series(v, dtype=object), lambda x: x, lambda x: None if _missing(x) else str(x)),
    "date": (lambda v: pd.Series(v, dtype=object), lambda x: None if _missing(x) else x.isoformat(),
             lambda x: None if _missing(x) else (x.isoformat() if isinstance(x, dt.date) else str(x))),
    "decimal": (lambda v: pd.Series(v, dtype=object), lambda x: None if _missing(x) else decimal.Decimal(x),
                lambda x: None if _missing(x) else decimal.Decimal(str(x))),
    "bytes": (lambda v: pd.Series(v, dtype=object), lambda x: x,
              lambda x: None if _missing(x) else (bytes(x) if isinstance(x, (bytes, bytearray)) else base64.b64decode(x))),
    "list_text": (lambda v: pd.Series(v, dtype=object), lambda x: x, lambda x: None if _missing(x) else _deep(_json(x))),
    "list_int": (lambda v: pd.Series(v, dtype=object), lambda x: x, lambda x: None if _missing(x) else _deep(_json(x))),
    "struct": (lambda v: pd.Series(v, dtype=object), lambda x: x, lambda x: None if _missing(x) else _deep(_json(x))),
    "map": (lambda v: pd.Series(v, dtype=object), lambda x: x, lambda x: None if _missing(x) else _deep(_json(x))),
}
for unit in UNITS:
    KINDS[f"timestamp_{unit}"] = (lambda v, unit=unit: pd.Series(pd.to_datetime(v)).dt.as_unit(unit), _timestamp, _timestamp)
    KINDS[f"timestamp_{unit}_utc"] = (lambda v, unit=unit: pd.Series(pd.to_datetime(v, utc=True)).dt.as_unit(unit), _timestamp, _timestamp)
    KINDS[f"duration_{unit}"] = (lambda v, unit=unit: pd.Series(pd.to_timedelta(v)).dt.as_unit(unit), _duration, _duration)

TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8)
KEY = st.text("abcxyz", min_size=1, max_size=3)


def _values(kind: str):
    """A strategy for one cell of ``kind`` (None where the kind holds nulls)."""
    base = kind.split("_")[0]
    unit = kind.split("_")[1] if base in ("timestamp", "duration") else None
    step = {"s": 1, "ms": 10**-3, "us": 10**-6, "ns": 10**-9}.get(unit or "s", 1)
    cells = {
        "int": st.integers(-2**40, 2**40),
        "float": st.floats(allow_infinity=False, width=64).map(lambda x: float(f"{x:.12g}")),
        "bool": st.booleans(),
        "text": TEXT,
        "date": st.dates(dt.date(1970, 1, 1), dt.date(2100, 1, 1)),
        "decimal": st.decimals(-1000, 1000, places=2, allow_nan=False),
        "bytes": st.binary(max_size=6),
        "list": st.lists(TEXT, max_size=3) if kind == "list_text" else st.lists(st.integers(-100, 100), max_size=3),
        "struct": st.fixed_dictionaries({"a": st.integers(0, 9), "b": TEXT}),
        "map": st.dictionaries(KEY, TEXT, min_size=1, max_size=3),
        "timestamp": st.integers(0, 4 * 10**9).map(lambda s: pd.Timestamp(s * step * 1e9 // 1 if unit == "ns" else round(s * step, 9), unit="s")),
        "duration": st.integers(0, 10**7).map(lambda n: pd.Timedelta(round(n * step, 9), unit="s")),
    }[base]
    if base in ("int", "float", "bool"):
        return cells
    return st.one_of(st.none(), cells)


@st.composite
def tables(draw):
    rows = draw(st.integers(1, 4))
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4, unique=True))
    columns, original = {}, {}
    for kind in kinds:
        values = draw(st.lists(_values(kind), min_size=rows, max_size=rows))
        if kind == "map" and len({tuple(v) for v in values if v}) == 1:
            values = values + [{"other": "key"}]  # a map: objects of differing keys (the same keys are a struct's)
            values = values[1:]
        columns[kind] = KINDS[kind][0](values)
        original[kind] = values
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(rows)], **columns})
    return frame, original


@settings(max_examples=60, deadline=None)
@given(drawn=tables(), fmt=st.sampled_from(FORMATS))
def test_every_column_type_is_written_and_read_back_as_the_same_values(drawn, fmt):
    frame, original = drawn
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / f"t.{fmt}")
        write_table(frame, path)
        back = read_table(path)
    assert list(back["id"]) == list(frame["id"])
    for kind, values in original.items():
        _, stands_for, read = KINDS[kind]
        expected = [None if _missing(v) else stands_for(v) for v in frame[kind].tolist()]
        got = [read(v) for v in back[kind].tolist()]
        if fmt == "csv":  # a CSV cell cannot tell empty text (or bytes) from none: both are an empty cell
            expected = [None if v in ("", b"") else v for v in expected]
            got = [None if v in ("", b"") else v for v in got]
        assert got == expected, (kind, fmt, values, back[kind].tolist())


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_duration_in_milliseconds_keeps_its_length(tmp_path, fmt):
    # 1.5 s and 42 s were written to JSONL and JSON as 1.5 us and 42 us
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "latency": pa.array([1500, 42000], pa.duration("ms")),
                             "labels": pa.array([[("k", "v")], [("x", "y"), ("z", "w")]], pa.map_(pa.string(), pa.string()))}), source)
    frame = read_table(str(source))
    assert frame["labels"].tolist() == [{"k": "v"}, {"x": "y", "z": "w"}]  # not a list of pairs
    out = str(tmp_path / f"out.{fmt}")
    write_table(frame, out)
    back = read_table(out)
    assert [pd.Timedelta(v).total_seconds() for v in back["latency"]] == [1.5, 42.0]
    assert [_json(v) for v in back["labels"]] == [{"k": "v"}, {"x": "y", "z": "w"}]
    if fmt == "parquet":
        assert str(pq.read_schema(out).field("labels").type).startswith("map<string, string")
    if fmt in ("jsonl", "json"):
        text = Path(out).read_text()
        assert '"P0DT0H0M1.5S"' in text and '"labels":{"k":"v"}' in text.replace(" ", "")


def test_numpy_scalars_in_the_tests_own_helpers_are_plain():
    assert _deep(np.array([1, 2])) == [1, 2] and _deep({"a": np.int64(3)}) == {"a": 3}


def _odd_numbers(path):
    """A Parquet file (written by pyarrow, as Spark or polars write them) whose numbers pandas'
    own dtypes would change: NaN beside null, uint64 past int64 beside null, decimals whose
    declared type is wider than their values need."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = ["a", "b", "c"]
    pq.write_table(pa.table({
        "id": rows, "request": ["Where is it?"] * 3, "context": [["It is here."]] * 3, "expected_response": ["here"] * 3,
        "f": pa.array([1.5, None, float("nan")], pa.float64()),
        "u64": pa.array([2**64 - 1, None, 0], pa.uint64()),
        "u8": pa.array([1, None, 255], pa.uint8()),
        "d256": pa.array([decimal.Decimal("1.1"), None, decimal.Decimal("123456789012345678901234567890123.5")], pa.decimal256(40, 1)),
        "d128": pa.array([decimal.Decimal("1.10"), decimal.Decimal("0"), None], pa.decimal128(10, 2)),
    }), path)
    return str(path)


def test_a_parquet_round_trip_keeps_nan_unsigned_integers_and_decimals(run_score, tmp_path):
    # NaN came back null, a uint64 with a null as text (noted as "values of different types"),
    # decimal256(40, 1) as decimal128 and decimal128(10, 2) typed again from its values
    import pyarrow.parquet as pq

    source = _odd_numbers(tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    run = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert run.code == 0 and not [n for n in run.notes if "stores it as text" in n]
    before, after = pq.read_table(source), pq.read_table(out)
    for name in ("f", "u64", "u8", "d256", "d128"):
        assert after.schema.field(name).type == before.schema.field(name).type, name
        assert str(after[name].to_pylist()) == str(before[name].to_pylist()), name  # str: nan == nan
    assert after["f"].null_count == 1 and after["f"].to_pylist()[0] == 1.5


@pytest.mark.parametrize("fmt", ("jsonl", "csv"))
def test_the_text_formats_write_such_numbers_as_before(run_score, tmp_path, fmt):
    source = _odd_numbers(tmp_path / "in.parquet")
    out = tmp_path / f"out.{fmt}"
    run_score(source, metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    lines = out.read_text().splitlines()
    if fmt == "jsonl":
        first, second, third = (json.loads(line) for line in lines)
        assert (first["f"], second["f"], third["f"]) == (1.5, None, None)  # JSON has no NaN
        assert (first["u64"], second["u64"], third["u64"]) == (2**64 - 1, None, 0)
        assert (first["d128"], second["d128"]) == (1.1, 0.0) and second["d256"] is None
        # decimals as written, numbers in JSON (pandas 3 wrote the text "1.10", pandas 2 a float)
        assert '"d128":1.10' in lines[0] and '"d128":0.00' in lines[1] and '"d256":123456789012345678901234567890123.5' in lines[2]
    else:
        assert lines[1].split(",")[4:9] == ["1.5", "18446744073709551615", "1", "1.1", "1.10"]
        assert lines[2].split(",")[4:9] == ["", "", "", "", "0.00"]


def test_integers_past_64_bits_stored_as_text_are_named_so(run_score, tmp_path):
    # the note said such a column "holds values of different types"
    from conftest import write_jsonl

    rows = [{"id": f"r{i}", "request": "Where is it?", "context": "It is here.", "x": value} for i, value in enumerate((2**70, 1))]
    out = tmp_path / "out.parquet"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert pd.read_parquet(out)["x"].tolist() == [str(2**70), "1"]
    assert ("column 'x' holds integers beyond the 64-bit range that Parquet stores (rows 1 to 2); the Parquet file stores it as "
            "text (JSON) for every row") in run.notes


def test_the_json_array_keeps_decimals_and_texts_holding_line_separators_exactly(run_score, tmp_path):
    # the JSON writer parsed pandas' text and wrote it again: 123456789012345678901234567890123.5
    # came out as 1.2345678901234568e+32
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({
        "id": ["a", "b"], "request": ["Where is it?", "Where\u2028is it?"], "context": ["It is here.", "It is here."],
        "d": pa.array([decimal.Decimal("123456789012345678901234567890123.5"), None], pa.decimal256(40, 1)),
    }), path)
    out = tmp_path / "out.json"
    run = run_score(str(path), metric=["sufficiency"], min_pass_rate=["0"], output=str(out))
    assert run.code == 0, run.error
    text = out.read_text()
    assert '"d":123456789012345678901234567890123.5' in text
    rows = json.loads(text)
    assert [row["request"] for row in rows] == ["Where is it?", "Where\u2028is it?"] and rows[1]["d"] is None

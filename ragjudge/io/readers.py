"""Readers: a table as pandas DataFrames of at most ``chunk_size`` rows, one reader per format
(JSONL, CSV, Parquet, JSON), so that a million-row file is never held in memory at once.
Malformed input raises ``InputError`` naming the file, the line and what was wrong (exit 2)."""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import pandas as pd

from ragjudge.errors import InputError
from ragjudge.io.arrow import _to_arrow
from ragjudge.io.formats import _name, _open_binary, _stdin, detect_format, is_many, is_stdin, source_files
from ragjudge.io.rows import json_error, jsonl_rows
from ragjudge.io.sources import conform_frame, unified_schema
from ragjudge.types import clean


def _jsonl_chunks(path: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    for rows in jsonl_rows(path, chunk_size):  # the local engine reads them as RowChunks (``rows``)
        yield _frame(rows)


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> DataFrame of Python objects: an integer column with nulls stays integer and
    every value comes back out as it went in."""
    return pd.DataFrame(rows, dtype=object)


class _NulGuard:
    """A binary stream for pandas' CSV reader that stops at a NUL byte (the C parser ends
    the cell there and drops the rest silently) and keeps the first block, for the header."""

    def __init__(self, stream: IO[bytes], name: str, copy: IO[bytes] | None = None) -> None:
        self.stream, self.name = stream, name
        self.lines = 0  # newlines in the blocks read so far
        self.first = b""
        self.copy = copy  # stdin: what was read, so that an error can name its line

    def read(self, size: int = -1) -> bytes:
        block = self.stream.read(size)
        if self.copy is not None:
            self.copy.write(block)
        if not self.first:
            self.first = block
        at = block.find(b"\0")
        if at >= 0:
            line = self.lines + block.count(b"\n", 0, at) + 1
            raise InputError(f"{self.name}: line {line}: a NUL byte inside the text; remove it (or save the file as UTF-8 if it is UTF-16)")
        self.lines += block.count(b"\n")
        return block


def _check_header(guard: _NulGuard, columns: int) -> None:
    """Refuse a CSV header that names a column twice (pandas would rename one 'name.1').
    The header is read from the first block pandas read; when that block does not hold all
    of it (``columns`` names, as pandas counted them), nothing is checked."""
    import csv

    text = guard.first.decode("utf-8-sig", errors="replace")
    if "\n" not in text and "\r" not in text:
        return  # the header may go on past this block
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    try:
        header = next(csv.reader(io.StringIO(text)), [])
    except csv.Error:
        return
    if len(header) != columns:
        return
    twice = [name for i, name in enumerate(header) if name and name in header[:i]]
    if twice:
        name = twice[0].replace("\r", "\\r").replace("\n", "\\n")
        raise InputError(f"{guard.name}: the header names column '{name}' twice; rename one of them")


def _csv_chunks(path: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    stream = _open_binary(path)
    guard = _NulGuard(stream, _name(path), tempfile.TemporaryFile(prefix=".ragjudge-stdin.") if is_stdin(path) else None)
    try:
        import warnings

        reader = pd.read_csv(guard, dtype=str, keep_default_na=False, na_values=[""], chunksize=chunk_size, index_col=False)
        short = False  # a record may have fewer fields than the header (pandas fills them with nulls, unsaid)
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # pandas would drop the extra fields
            for number, chunk in enumerate(reader):
                if number == 0:
                    _check_header(guard, len(chunk.columns))
                if not short and len(chunk.columns) > 1 and chunk.iloc[:, -1].isna().any():
                    short = True  # a null last cell: empty, or a record cut short; the file is read again to tell
                    if not is_stdin(path):  # stdin is told at its end (it cannot be read twice while pandas reads it)
                        _refuse_short_record(path)
                yield chunk.astype(object).where(chunk.notna(), None)
        if short and is_stdin(path):
            _refuse_short_record(path, guard.copy)
    except pd.errors.ParserWarning:
        found = _csv_problem(path, guard.copy)
        where = f" line {found[0]} (record {found[1]}):" if found else ""
        what = found[2] if found else "rows have more fields than the header has column names"
        raise InputError(
            f"{_name(path)}:{where} malformed CSV: {what}; add the missing names to the header line or fix the quoting"
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{_name(path)}: the CSV file is empty; it needs a header line and rows") from None
    except UnicodeDecodeError:
        raise InputError(f"{_name(path)}: not UTF-8 text; save the CSV as UTF-8 (in a spreadsheet: CSV UTF-8)") from None
    except pd.errors.ParserError as exc:
        found = _csv_problem(path, guard.copy)
        if found:
            raise InputError(f"{_name(path)}: line {found[0]} (record {found[1]}): malformed CSV: {found[2]}; check the quoting on that line") from None
        # stdin cannot be read twice: pandas counts records, not lines
        message = re.sub(r"\bin line (\d+)", r"in record \1 (counting the header)", str(exc).strip())
        raise InputError(f"{_name(path)}: malformed CSV: {message}; check quoting on that record") from None
    finally:
        if not is_stdin(path):
            stream.close()
        if guard.copy is not None:
            guard.copy.close()


def _refuse_short_record(path: str, copy: IO[bytes] | None = None) -> None:
    """Raise ``InputError`` naming the line of the first record with fewer fields than the header
    (a file cut short mid-line, a row that lost its commas), which pandas would read with the
    missing cells empty; nothing when every record has its fields (``_csv_problem``)."""
    found = _csv_problem(path, copy)
    if found and "fields where the header has" in found[2]:
        raise InputError(f"{_name(path)}: line {found[0]} (record {found[1]}): malformed CSV: {found[2]}; every record needs a field "
                         "per column of the header (an empty cell still needs its comma): complete the line, or remove it if the "
                         "file was cut short")


def _csv_problem(path: str, copy: IO[bytes] | None = None) -> tuple[int, int, str] | None:
    """(physical line, record number, what is wrong) of the first malformed record of the CSV
    file at ``path``, read again by Python's csv reader with strict quoting: a record with more
    or fewer fields than the header, or broken quoting. Records are counted from 1 after the
    header; a quoted cell may span lines, so the line can be far past the record number.
    ``copy``: for stdin, a file holding what was read of it (the rest is read into it first).
    None when that reader finds nothing wrong."""
    import csv

    csv.field_size_limit(2**31 - 1)
    try:
        if copy is not None:
            while block := _stdin().read(1 << 20):
                copy.write(block)
            copy.seek(0)
            opened: Any = io.TextIOWrapper(copy, encoding="utf-8-sig", errors="replace", newline="")
        else:
            opened = open(path, encoding="utf-8-sig", errors="replace", newline="")
        with opened as handle:
            reader = csv.reader(handle, strict=True)
            header: list[str] | None = None
            end = 0
            record = 0
            try:
                for fields in reader:
                    start, end = end + 1, reader.line_num
                    if not fields:
                        continue  # a blank line
                    if header is None:
                        header = fields
                        continue
                    record += 1
                    if len(fields) != len(header):
                        return start, record, f"{len(fields)} fields where the header has {len(header)}"
            except csv.Error as exc:
                return end + 1, record + 1, str(exc)
    except OSError:
        return None
    return None


def _parquet_chunks(path: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source: Any = io.BytesIO(_stdin().read()) if is_stdin(path) else path
    try:
        parquet = pq.ParquetFile(source)
    except FileNotFoundError:
        raise InputError(f"input file not found: {path}") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{_name(path)}: not a readable Parquet file ({exc})") from None
    names = parquet.schema_arrow.names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{_name(path)}: column '{twice[0]}' appears {names.count(twice[0])} times; rename all but one (a row cannot hold two values under one name)")
    try:
        for batch in parquet.iter_batches(batch_size=chunk_size):
            # a map<K, V> cell as a dict (pyarrow's default is a list of (key, value) pairs)
            frame = batch.to_pandas(integer_object_nulls=True, maps_as_pydicts="strict", types_mapper=_kept_type)
            yield _text_as_objects(_nan_kept(batch, frame))
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{_name(path)}: not a readable Parquet file ({exc})") from None


def _kept_type(kind: Any) -> Any:
    """``to_pandas``' ``types_mapper``: a Parquet column of decimals or unsigned integers as
    ``pd.ArrowDtype`` of its own type, which the Parquet writer gets back as it is. pandas' own
    dtypes would lose it: decimals become Python ``Decimal`` objects, typed again from their
    values (``decimal256(40, 1)`` holding 1.1 as ``decimal128(2, 1)``), and a ``uint64`` with a
    null Python ints that Arrow types as ``int64`` (text, beyond it). The text writers write
    them as before (``arrow._text_ready``)."""
    import pyarrow as pa

    return pd.ArrowDtype(kind) if pa.types.is_decimal(kind) or pa.types.is_unsigned_integer(kind) else None


def _nan_kept(batch: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (``batch`` read by pandas) with each float column that holds a NaN as
    ``pd.ArrowDtype``: pandas' NaN is also its null, which Arrow writes as null, so NaN and null
    stay apart only in Arrow's own array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = frame
    for index, field in enumerate(batch.schema):
        if pa.types.is_floating(field.type) and pc.any(pc.is_nan(batch.column(index))).as_py():
            if out is frame:
                out = frame.copy(deep=False)
            out.isetitem(index, pd.Series(pd.arrays.ArrowExtensionArray(batch.column(index)), index=frame.index))
    return out


def _text_as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its text columns as Python strings and None, whatever pandas' version:
    pandas 3 reads Parquet text as its ``str`` dtype, whose empty cells are NaN."""
    texts = [c for c in frame.columns if isinstance(frame[c].dtype, pd.StringDtype)]
    if not texts:
        return frame
    out = frame.copy(deep=False)
    for column in texts:
        out[column] = pd.Series([None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v
                                 for v in frame[column].tolist()], index=frame.index, dtype=object)
    return out


def _json_chunks(path: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    stream = _open_binary(path)
    try:
        try:
            data = json.load(stream)
        except RecursionError:
            raise InputError(f"{_name(path)}: JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{_name(path)}: line {exc.lineno}: not valid JSON ({json_error(exc)}); "
                "a .json file must hold one array of objects (use .jsonl for one object per line)"
            ) from None
        except UnicodeDecodeError:
            raise InputError(f"{_name(path)}: not UTF-8 text; save the file as UTF-8") from None
    finally:
        if not is_stdin(path):
            stream.close()
    if not isinstance(data, list):
        raise InputError(f"{_name(path)}: expected a JSON array of objects, got {type(data).__name__}")
    data = clean(data)  # unpaired surrogate escapes become U+FFFD
    for index, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise InputError(f"{_name(path)}: item {index + 1} of the array is {type(obj).__name__}, not an object")
    for start in range(0, len(data), chunk_size):
        yield _frame(data[start : start + chunk_size])


def iter_chunks(path: str, fmt: str | None = None, chunk_size: int = 10_000) -> Iterator[pd.DataFrame]:
    """Yield the table at ``path`` (or ``-`` for stdin, or a folder or a glob of files of one
    format: ``many_chunks``) as DataFrames of <= ``chunk_size`` rows.

    Column values keep their JSON/Parquet types (lists, objects); CSV cells are strings and
    empty cells are ``None``. Raises ``InputError`` for a missing or malformed file.
    """
    if is_many(path):  # a folder or a glob: every file, in one schema
        return many_chunks(path, fmt, chunk_size)
    fmt = detect_format(path, fmt)
    reader = {"jsonl": _jsonl_chunks, "csv": _csv_chunks, "parquet": _parquet_chunks, "json": _json_chunks}[fmt]
    return reader(path, chunk_size)


def read_table(path: str, fmt: str | None = None) -> pd.DataFrame:
    """The whole table at ``path`` as one DataFrame (for small files and tests)."""
    chunks = list(iter_chunks(path, fmt, chunk_size=1_000_000))
    if not chunks:
        return pd.DataFrame()
    return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]


def chunk_schemas(path: str, fmt: str, chunk_size: int) -> list[Any]:
    """The Arrow schema of each chunk of the file at ``path``, typed as ``arrow._to_arrow``
    types a chunk (a column mixed within a chunk is text)."""
    return [_to_arrow(chunk).schema for chunk in iter_chunks(path, fmt, chunk_size)]


def chunk_schemas_and_rows(path: str, fmt: str, chunk_size: int) -> tuple[list[Any], int]:
    """``chunk_schemas`` of the file at ``path``, and its number of rows (read once)."""
    schemas, rows = [], 0
    for chunk in iter_chunks(path, fmt, chunk_size):
        schemas.append(_to_arrow(chunk).schema)
        rows += len(chunk)
    return schemas, rows


def many_chunks(source: str, fmt: str | None, chunk_size: int) -> Iterator[pd.DataFrame]:
    """The chunks of every file of ``source`` (a folder or a glob), in file order, conformed to
    the files' one schema: the files are read twice, once for their columns' types."""
    files, fmt = source_files(source, fmt)
    schema, origins = unified_schema(files, [chunk_schemas(path, fmt, chunk_size) for path in files])
    for path in files:
        for chunk in iter_chunks(path, fmt, chunk_size):
            yield conform_frame(chunk, schema, path, origins)

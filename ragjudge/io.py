"""Reading and writing evaluation tables: JSONL, CSV, Parquet and JSON (an array of objects).

``iter_chunks`` streams a table as pandas DataFrames of at most ``chunk_size`` rows so that a
million-row file is never held in memory at once; ``TableWriter`` appends chunks and makes
the output appear atomically (temporary file, then rename). ``-`` means stdin / stdout.
Malformed input raises ``InputError`` naming the file, the line and what was wrong (exit 2).
"""

from __future__ import annotations

import decimal
import io
import json
import math
import os
import pickle
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pandas as pd

from ragjudge.errors import InputError, OutputError
from ragjudge.types import clean

FORMATS = ("jsonl", "csv", "parquet", "json")
_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}


def detect_format(path: str, explicit: str | None = None) -> str:
    """Format name for ``path`` from ``explicit`` or the suffix; for ``-`` (stdin) it is
    sniffed from the first bytes (use ``explicit`` for stdout).

    Raises ``InputError`` for an unknown format or suffix.
    """
    if explicit:
        if explicit not in FORMATS:
            raise InputError(f"unknown format '{explicit}'; use one of: {', '.join(FORMATS)}")
        return explicit
    if path == "-":
        return sniff_stdin()
    suffix = Path(path).suffix.lower()
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    raise InputError(f"cannot tell the format of '{path}' from its suffix; pass --input-format (or --output-format for -o) {'|'.join(FORMATS)}")


_PEEKABLE: dict[int, IO[bytes]] = {}


def _stdin() -> IO[bytes]:
    """stdin as a binary stream that supports ``peek`` (for format sniffing)."""
    raw = sys.stdin.buffer
    if hasattr(raw, "peek"):
        return raw
    if id(raw) not in _PEEKABLE:
        _PEEKABLE.clear()
        _PEEKABLE[id(raw)] = io.BufferedReader(raw)  # type: ignore[arg-type]
    return _PEEKABLE[id(raw)]


_SPOOLED: dict[int, str] = {}


def spool_stdin() -> str:
    """Read all of stdin into a temporary file (removed at exit) and make stdin read from it,
    so that its rows can be counted (``--sample``) and then read as usual. Returns the file's
    path; called again while stdin is that copy, it returns the same path."""
    if id(sys.stdin) in _SPOOLED:
        return _SPOOLED[id(sys.stdin)]
    import atexit

    handle = tempfile.NamedTemporaryFile(prefix=".ragjudge-stdin.", delete=False)
    with handle:
        while block := _stdin().read(1 << 20):
            handle.write(block)
    atexit.register(lambda: os.path.exists(handle.name) and os.unlink(handle.name))
    sys.stdin = io.TextIOWrapper(open(handle.name, "rb"), encoding="utf-8")
    _SPOOLED.clear()
    _SPOOLED[id(sys.stdin)] = handle.name
    return handle.name


def sniff_stdin() -> str:
    """Guess the format of stdin from its first bytes: Parquet magic, '[' JSON, '{' JSONL, else CSV."""
    head = _stdin().peek(64)[:64].removeprefix(b"\xef\xbb\xbf").lstrip()  # type: ignore[attr-defined]  # a UTF-8 BOM says nothing
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"["):
        return "json"
    if head.startswith(b"{") or not head:
        return "jsonl"
    return "csv"


def _open_binary(path: str) -> IO[bytes]:
    if path == "-":
        return _stdin()
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"input file not found: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _jsonl_chunks(path: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    stream = _open_binary(path)
    rows: list[dict[str, Any]] = []
    try:
        for lineno, raw in enumerate(stream, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{_name(path)}: line {lineno}: not UTF-8 text (byte {exc.start + 1} of the line); save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except RecursionError:
                raise InputError(f"{_name(path)}: line {lineno}: JSON nested too deeply to read") from None
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{_name(path)}: line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "each line must hold one JSON object"
                ) from None
            if not isinstance(obj, dict):
                raise InputError(
                    f"{_name(path)}: line {lineno}: expected a JSON object, got {type(obj).__name__}; "
                    "each line must hold one JSON object"
                )
            if "\\ud" in line.lower():
                obj = clean(obj)  # an unpaired surrogate escape (half an emoji) becomes U+FFFD: every output is UTF-8
            rows.append(obj)
            if len(rows) == chunk_size:
                yield _frame(rows)
                rows = []
        if rows:
            yield _frame(rows)
    finally:
        if path != "-":
            stream.close()


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
    guard = _NulGuard(stream, _name(path), tempfile.TemporaryFile(prefix=".ragjudge-stdin.") if path == "-" else None)
    try:
        import warnings

        reader = pd.read_csv(guard, dtype=str, keep_default_na=False, na_values=[""], chunksize=chunk_size, index_col=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # pandas would drop the extra fields
            for number, chunk in enumerate(reader):
                if number == 0:
                    _check_header(guard, len(chunk.columns))
                yield chunk.astype(object).where(chunk.notna(), None)
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
        if path != "-":
            stream.close()
        if guard.copy is not None:
            guard.copy.close()


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

    source: Any = io.BytesIO(_stdin().read()) if path == "-" else path
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
            yield batch.to_pandas(integer_object_nulls=True)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{_name(path)}: not a readable Parquet file ({exc})") from None


def _json_chunks(path: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    stream = _open_binary(path)
    try:
        try:
            data = json.load(stream)
        except RecursionError:
            raise InputError(f"{_name(path)}: JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{_name(path)}: line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno}); "
                "a .json file must hold one array of objects (use .jsonl for one object per line)"
            ) from None
        except UnicodeDecodeError:
            raise InputError(f"{_name(path)}: not UTF-8 text; save the file as UTF-8") from None
    finally:
        if path != "-":
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
    """Yield the table at ``path`` (or ``-`` for stdin) as DataFrames of <= ``chunk_size`` rows.

    Column values keep their JSON/Parquet types (lists, objects); CSV cells are strings and
    empty cells are ``None``. Raises ``InputError`` for a missing or malformed file.
    """
    fmt = detect_format(path, fmt)
    reader = {"jsonl": _jsonl_chunks, "csv": _csv_chunks, "parquet": _parquet_chunks, "json": _json_chunks}[fmt]
    return reader(path, chunk_size)


def read_table(path: str, fmt: str | None = None) -> pd.DataFrame:
    """The whole table at ``path`` as one DataFrame (for small files and tests)."""
    chunks = list(iter_chunks(path, fmt, chunk_size=1_000_000))
    if not chunks:
        return pd.DataFrame()
    return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with Arrow-backed list and struct columns (the scorer's ``M_missing``, say) as
    plain Python lists and dicts, as a table read from a file holds them."""
    nested = [c for c in df.columns if isinstance(df[c].dtype, pd.ArrowDtype) and df[c].dtype.pyarrow_dtype.num_fields]
    if not nested:
        return df
    out = df.copy(deep=False)
    for column in nested:
        out[column] = pd.Series([None if v is pd.NA else v for v in df[column].tolist()], index=df.index, dtype=object)
    return out


def _base64_bytes(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with binary cells (a Parquet ``binary`` column) as base64 text, for the text
    formats; other cells untouched."""
    binary = [c for c in df.columns if df[c].dtype == object and any(isinstance(v, (bytes, bytearray)) for v in df[c])]
    if not binary:
        return df
    out = df.copy()
    for column in binary:
        out[column] = pd.Series([_cell_text(v) if isinstance(v, (bytes, bytearray)) else v for v in df[column]], index=df.index, dtype=object)
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return json.dumps(value.tolist(), ensure_ascii=False, default=_json_default)
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _arrow_type(name: str):
    import pyarrow as pa

    simple = {"float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(), "int64": pa.int64()}
    return pa.list_(pa.string()) if name == "list<string>" else simple[name]


def _has_empty_struct(kind: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return kind.num_fields == 0 or any(_has_empty_struct(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_empty_struct(kind.value_type)
    return False


def _to_arrow(df: pd.DataFrame, column_types: dict[str, str] | None = None, texted: list[str] | None = None):
    """DataFrame -> pyarrow Table. Columns named in ``column_types`` get that type; a column
    Arrow cannot type or Parquet cannot store (mixed types, empty objects, integers beyond
    int64) becomes text: strings as they are, other values as JSON; its name is appended to
    ``texted`` when given."""
    import pyarrow as pa

    def storable(column: Any) -> bool:
        try:
            return not _has_empty_struct(pa.array(column, from_pandas=True).type)
        except _arrow_errors():
            return False

    fixed = df
    for column in df.columns:
        if df[column].dtype == object and not storable(df[column]):
            if texted is not None:
                texted.append(str(column))
            if fixed is df:
                fixed = df.copy()
            fixed[column] = [_cell_text(v) for v in df[column]]
    table = pa.Table.from_pandas(fixed, preserve_index=False)
    for name, kind in (column_types or {}).items():
        if name in table.column_names:
            index = table.column_names.index(name)
            column = table.column(name)
            target = _arrow_type(kind)
            if column.null_count == len(column):
                column = pa.nulls(len(column), target)
            try:
                column = column.cast(target)
            except _arrow_errors():
                continue  # an input column of that name that this run did not replace: kept as it is
            table = table.set_column(index, name, column)
    return table


def _cell_text(value: Any) -> str | None:
    """One cell of a column stored as text: strings as they are, numbers and booleans as JSON
    (``1``, ``1.5``, ``true``), decimals as written, times in ISO 8601, bytes in base64, lists
    and objects as JSON; None, NaN and NaT stay null."""
    if value is None or value is pd.NaT or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    out = _jsonable(value)
    if isinstance(out, str):
        return out
    if hasattr(out, "item"):  # numpy scalars
        out = out.item()
    return json.dumps(out, ensure_ascii=False, default=_json_default)


def _arrow_errors() -> tuple[type[BaseException], ...]:
    """The errors Arrow raises for a value that does not fit a type (pyarrow is imported
    on first use, so commands that never touch Parquet start faster)."""
    import pyarrow as pa

    return (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)


def _cast_table(table: Any, schema: Any, df: pd.DataFrame):
    """``table`` (made from the chunk ``df``) with ``schema``'s columns in its order: missing
    columns null, each column cast to its type; a string column takes other values as text
    (``_cell_text``) from ``df``'s original values. Raises an Arrow error when a column does
    not cast."""
    import pyarrow as pa

    if table.schema.equals(schema):
        return table
    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(len(table), field.type))
            continue
        column = table.column(field.name)
        if column.type == field.type:
            columns.append(column)
        elif pa.types.is_string(field.type) and not pa.types.is_null(column.type) and not pa.types.is_string(column.type):
            columns.append(pa.array([_cell_text(v) for v in df[field.name]], pa.string()))
        else:
            columns.append(column.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _merge_type(old: Any, new: Any) -> Any:
    """The Arrow type that holds a column typed ``old`` in some chunks and ``new`` in others
    without changing a value, as Arrow would type the whole column at once: null takes the
    other type, integers widen to int64 and mix with floats as float64, lists and objects
    merge their items and fields (an object's fields are the union of both). None when no
    such type exists (text, a number, a boolean, a list mixed): the column becomes text."""
    import pyarrow as pa

    if old == new:
        return old
    if pa.types.is_null(old):
        return new
    if pa.types.is_null(new):
        return old
    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) for t in (old, new)]
    if all(numeric):
        return pa.int64() if pa.types.is_integer(old) and pa.types.is_integer(new) else pa.float64()
    if {str(old), str(new)} <= {"string", "large_string"}:
        return pa.string()
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        try:
            return pa.unify_schemas([pa.schema([("c", old)]), pa.schema([("c", new)])], promote_options="permissive").field("c").type
        except _arrow_errors():
            return None
    lists = [pa.types.is_list(t) or pa.types.is_large_list(t) for t in (old, new)]
    if all(lists):
        item = _merge_type(old.value_type, new.value_type)
        return None if item is None else pa.list_(item)
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        fields = {old.field(i).name: old.field(i).type for i in range(old.num_fields)}
        for i in range(new.num_fields):
            name, kind = new.field(i).name, new.field(i).type
            if name in fields:
                kind = _merge_type(fields[name], kind)
                if kind is None:
                    return None
            fields[name] = kind
        return pa.struct([pa.field(name, kind) for name, kind in fields.items()])
    return None


def _merge_schema(schema: Any, new: Any) -> Any:
    """``schema`` (None at first) grown by a chunk's ``new`` schema: columns in order of first
    appearance, each typed by ``_merge_type`` (text where it finds no common type)."""
    import pyarrow as pa

    if schema is None or schema.equals(new):
        return new if schema is None else schema
    kinds = {f.name: f.type for f in schema}
    for field in new:
        if field.name not in kinds:
            kinds[field.name] = field.type
        elif kinds[field.name] != field.type:
            kinds[field.name] = _merge_type(kinds[field.name], field.type) or pa.string()
    return pa.schema([pa.field(name, kind) for name, kind in kinds.items()], metadata=schema.metadata)


def open_atomic(path: str) -> tuple[IO[bytes], str | None]:
    """Open ``path`` for writing: a temporary file beside the real target (a symlink is
    followed), renamed into place by the caller, with the mode a plain ``open`` would give
    (the umask applies). A FIFO or device is written directly (temp path None).
    Raises ``InputError`` when the folder is missing or not writable."""
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise InputError(f"output folder does not exist: {Path(path).parent}")
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise InputError(f"output path is a folder: {path}")
        return open(target, "wb"), None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write to {target.parent}: {exc.strerror or exc}") from None
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    return os.fdopen(fd, "wb"), tmp


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through ``open_atomic``: the file appears whole or
    not at all (the temporary file is removed when writing fails). Raises what
    ``open_atomic`` raises, and ``OSError`` from the write."""
    handle, tmp = open_atomic(path)
    try:
        with handle:
            handle.write(text.encode("utf-8"))
        if tmp is not None:
            os.replace(tmp, os.path.realpath(path))
    except BaseException:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _output_error(path: str, exc: OSError) -> OutputError:
    if path == "-" and isinstance(exc, BrokenPipeError):
        return OutputError("stdout was closed before the output was complete (the command reading the pipe stopped early)")
    return OutputError(f"cannot write {'<stdout>' if path == '-' else path}: {exc.strerror or exc}")


class TableWriter:
    """Append DataFrame chunks to one output and publish it atomically on ``close()``.

    ``path`` ``-`` writes to stdout. JSONL and JSON are written as chunks come. CSV and
    Parquet have one header or schema for the whole file, so their chunks are spooled (a
    temporary file beside the output) and written on ``close()``: the columns are every
    chunk's columns in order of first appearance (empty where a chunk lacks one), and a
    Parquet column gets the one type that holds all its values (``_merge_schema``), exactly as
    if the table had come in one chunk; a column that must become text for that is named in
    ``notes``. Parquet keeps lists and nested objects typed; CSV writes them as JSON text.
    ``abort()`` removes the temporary files.
    """

    def __init__(self, path: str, fmt: str | None = None, column_types: dict[str, str] | None = None) -> None:
        self.path = path
        self.column_types = column_types or {}
        self.fmt = detect_format(path, fmt) if (path != "-" or fmt) else "jsonl"
        self._rows = 0
        self._schema: Any = None  # Parquet: the merged schema of the chunks so far
        self._columns: list[str] = []  # CSV: every column so far, in order of first appearance
        self._texted: dict[str, str] = {}  # Parquet column -> why it is stored as text
        self._varied: set[str] = set()  # Parquet columns whose type differs between chunks
        self._spool: IO[bytes] | None = None
        self._buffer: IO[bytes]
        self._tmp: str | None = None
        self.notes: list[str] = []  # what the reader of the output should know (a column stored as text)
        if path == "-":
            self._buffer = sys.stdout.buffer
        else:
            self._buffer, self._tmp = open_atomic(path)
        if self.fmt in ("csv", "parquet"):
            folder = None if path == "-" else os.path.dirname(os.path.realpath(path))
            self._spool = tempfile.TemporaryFile(prefix=".ragjudge-spool.", dir=folder)
        if self.fmt == "json":
            self._buffer.write(b"[")

    def write(self, df: pd.DataFrame) -> None:
        """Append ``df``'s rows. Raises ``OutputError`` when the disk refuses (full, gone)."""
        try:
            self._write(_plain(df))
        except OSError as exc:
            raise _output_error(self.path, exc) from None

    def _write(self, df: pd.DataFrame) -> None:
        if self.fmt != "parquet":
            df = _base64_bytes(df)
        if self.fmt == "jsonl":
            if len(df):
                text = df.to_json(orient="records", lines=True, force_ascii=False, default_handler=str, double_precision=15, date_format="iso", date_unit="us")
                # pandas escapes every '/' as '\/' (valid, but URLs read badly); since no '/' is left
                # unescaped, each backslash-slash pair is such an escape and can be undone
                text = text.replace("\\/", "/")
                self._buffer.write(text.encode("utf-8") + (b"" if text.endswith("\n") else b"\n"))
        elif self.fmt == "json":
            for record in json.loads(df.to_json(orient="records", force_ascii=False, default_handler=str, double_precision=15, date_format="iso", date_unit="us")):
                self._buffer.write((b"," if self._rows else b"") + b"\n" + json.dumps(record, ensure_ascii=False).encode("utf-8"))
                self._rows += 1
            return
        elif self.fmt == "csv":
            flat = df.copy()
            for column in flat.columns:
                if flat[column].dtype == object:  # lists / objects -> JSON text; typed columns stay typed
                    flat[column] = pd.Series([_jsonable(v) for v in flat[column]], index=flat.index, dtype=object)
            self._columns += [str(c) for c in flat.columns if str(c) not in self._columns]
            pickle.dump(flat, self._spool, protocol=pickle.HIGHEST_PROTOCOL)
        else:
            texted: list[str] = []
            table = _to_arrow(df, self.column_types, texted)
            for name in texted:
                self._texted.setdefault(name, f"values that Arrow cannot type together, in rows {self._rows + 1} to {self._rows + len(df)}")
            merged = _merge_schema(self._schema, table.schema)
            if self._schema is not None and merged is not self._schema:
                self._note_texted(merged, table.schema)
            self._varied.update(f.name for f in table.schema if f.type != merged.field(f.name).type)
            if self._schema is not None:
                self._varied.update(f.name for f in self._schema if f.type != merged.field(f.name).type)
            self._schema = merged
            # the chunk itself, not its Arrow table: a column stored as text is written from the
            # original values (1 stays "1", an object keeps only its own keys)
            pickle.dump(df, self._spool, protocol=pickle.HIGHEST_PROTOCOL)
        self._rows += len(df)

    def _note_texted(self, merged: Any, new: Any) -> None:
        """Remember the columns that the chunk with schema ``new`` turns into text."""
        import pyarrow as pa

        for field in merged:
            if not pa.types.is_string(field.type) or field.name in self._texted or field.name not in self._schema.names or field.name not in new.names:
                continue
            kinds = (self._schema.field(field.name).type, new.field(field.name).type)
            if any(not (pa.types.is_string(k) or pa.types.is_null(k)) for k in kinds):
                self._texted[field.name] = f"{kinds[0]} up to row {self._rows}, then {kinds[1]}"

    def _spooled(self) -> Iterator[Any]:
        """The spooled chunks, in order."""
        assert self._spool is not None
        self._spool.seek(0)
        while True:
            try:
                yield pickle.load(self._spool)
            except EOFError:
                return

    def _ordered(self, names: list[str]) -> list[str]:
        """Input columns first, then the run's own (``column_types``), each in order of first
        appearance: a column that first appears in a later chunk sits where one chunk puts it."""
        return [n for n in names if n not in self.column_types] + [n for n in names if n in self.column_types]

    def _write_csv(self) -> None:
        self._columns = self._ordered(self._columns)
        header = True
        for flat in self._spooled():
            if list(flat.columns) != self._columns:
                flat = flat.reindex(columns=self._columns)
            flat.to_csv(self._buffer, header=header, index=False)
            header = False
        if header and self._columns:  # no rows: the header alone
            pd.DataFrame(columns=self._columns).to_csv(self._buffer, index=False)

    def _write_parquet(self) -> None:
        """One pass to check that every chunk's column casts to the merged type without
        changing a value (a too-large integer among floats cannot: that column becomes text),
        then one to write."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = self._schema if self._schema is not None else pa.schema([])
        schema = pa.schema([schema.field(name) for name in self._ordered(schema.names)], metadata=schema.metadata)
        changed = [f.name for f in schema if f.name in self._varied and not pa.types.is_string(f.type)]
        texted: set[str] = set()
        for df in self._spooled() if changed else ():
            present = [name for name in changed if name in df.columns and name not in texted]
            if not present:
                continue
            table = _to_arrow(df[present], self.column_types)
            for name in present:
                target, column = schema.field(name).type, table.column(name)
                if column.type != target:  # string targets are not in `changed`: text always fits
                    try:
                        column.cast(target)
                    except _arrow_errors():
                        texted.add(name)
                        self._texted.setdefault(name, f"{column.type} values that {target} cannot hold exactly")
        if texted:
            schema = pa.schema([pa.field(f.name, pa.string()) if f.name in texted else f for f in schema], metadata=schema.metadata)
        writer = pq.ParquetWriter(self._buffer, schema)
        try:
            for df in self._spooled():
                writer.write_table(_cast_table(_to_arrow(df, self.column_types), schema, df))
        finally:
            writer.close()
        for name, why in self._texted.items():
            self.notes.append(f"column '{name}' holds values of different types ({why}); the Parquet file stores it as text (JSON) for every row, as it does a column mixed within one chunk")

    def close(self) -> None:
        """Finish the file and move it into place (or flush it to stdout). Raises
        ``OutputError`` when the disk refuses (full, gone)."""
        try:
            self._close()
        except OSError as exc:
            raise _output_error(self.path, exc) from None

    def _close(self) -> None:
        if self.fmt == "json":
            self._buffer.write(b"\n]\n")
        elif self.fmt == "csv":
            self._write_csv()
        elif self.fmt == "parquet":
            if self.path == "-":  # Parquet needs a seekable file: build it in memory, then send it
                target, self._buffer = self._buffer, io.BytesIO()
                self._write_parquet()
                target.write(self._buffer.getvalue())  # type: ignore[attr-defined]
                self._buffer = target
            else:
                self._write_parquet()
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        if self.path == "-":
            sys.stdout.buffer.flush()
            return
        self._buffer.close()
        if self._tmp is not None:
            os.replace(self._tmp, os.path.realpath(self.path))
            self._tmp = None

    def abort(self) -> None:
        """Drop the partial output; the previous file at ``path`` (if any) stays untouched.
        Never raises for a full disk: closing a file flushes it, which can fail again."""
        for handle in (self._spool, self._buffer if self._tmp is not None else None):
            if handle is not None:
                try:
                    handle.close()
                except OSError:
                    pass
        self._spool = None
        if self._tmp is not None:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)
            self._tmp = None


def write_table(df: pd.DataFrame, path: str, fmt: str | None = None) -> None:
    """Write one DataFrame to ``path`` atomically (see ``TableWriter``)."""
    writer = TableWriter(path, fmt)
    try:
        writer.write(df)
        writer.close()
    except BaseException:
        writer.abort()
        raise

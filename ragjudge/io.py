"""Reading and writing evaluation tables: JSONL, CSV, Parquet and JSON (an array of objects).

``iter_chunks`` streams a table as pandas DataFrames of at most ``chunk_size`` rows so that a
million-row file is never held in memory at once; ``TableWriter`` appends chunks and makes
the output appear atomically (temporary file, then rename). ``-`` means stdin / stdout.
Malformed input raises ``InputError`` naming the file, the line and what was wrong (exit 2).
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pandas as pd

from ragjudge.errors import InputError

FORMATS = ("jsonl", "csv", "parquet", "json")
PARQUET_HOLD_ROWS = 200_000
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


def sniff_stdin() -> str:
    """Guess the format of stdin from its first bytes: Parquet magic, '[' JSON, '{' JSONL, else CSV."""
    head = _stdin().peek(64)[:64].lstrip()  # type: ignore[attr-defined]
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
                _check_surrogates(obj, f"{_name(path)}: line {lineno}")
            rows.append(obj)
            if len(rows) == chunk_size:
                yield _frame(rows)
                rows = []
        if rows:
            yield _frame(rows)
    finally:
        if path != "-":
            stream.close()


def _check_surrogates(obj: Any, where: str) -> None:
    """Raise ``InputError`` when a JSON escape left an unpaired surrogate (e.g. \\ud800),
    which no UTF-8 output can hold."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{where}: holds an unpaired surrogate escape (\\ud800-\\udfff), which is not text; fix or remove it") from None


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> DataFrame of Python objects: an integer column with nulls stays integer and
    every value comes back out as it went in."""
    return pd.DataFrame(rows, dtype=object)


def _csv_chunks(path: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    stream = _open_binary(path)
    try:
        import warnings

        reader = pd.read_csv(stream, dtype=str, keep_default_na=False, na_values=[""], chunksize=chunk_size, index_col=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # pandas would drop the extra fields
            for chunk in reader:
                yield chunk.astype(object).where(chunk.notna(), None)
    except pd.errors.ParserWarning:
        raise InputError(
            f"{_name(path)}: malformed CSV: rows have more fields than the header has column names; "
            "add the missing names to the header line or fix the quoting"
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{_name(path)}: the CSV file is empty; it needs a header line and rows") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{_name(path)}: malformed CSV: {str(exc).strip()}; check quoting on that line") from None
    finally:
        if path != "-":
            stream.close()


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
    _check_surrogates(data, _name(path))
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


def _to_arrow(df: pd.DataFrame, column_types: dict[str, str] | None = None):
    """DataFrame -> pyarrow Table. Columns named in ``column_types`` get that type; a column
    Arrow cannot type or Parquet cannot store (mixed types, empty objects, integers beyond
    int64) becomes text: strings as they are, other values as JSON."""
    import pyarrow as pa

    def storable(column: Any) -> bool:
        try:
            return not _has_empty_struct(pa.array(column, from_pandas=True).type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            return False

    fixed = df
    for column in df.columns:
        if df[column].dtype == object and not storable(df[column]):
            if fixed is df:
                fixed = df.copy()
            fixed[column] = [v if v is None or isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=_json_default) for v in df[column]]
    table = pa.Table.from_pandas(fixed, preserve_index=False)
    for name, kind in (column_types or {}).items():
        if name in table.column_names:
            index = table.column_names.index(name)
            column = table.column(name)
            target = _arrow_type(kind)
            if column.null_count == len(column):
                column = pa.nulls(len(column), target)
            table = table.set_column(index, name, column.cast(target))
    return table


def _arrow_errors() -> tuple[type[BaseException], ...]:
    """The errors Arrow raises for a value that does not fit a type (pyarrow is imported
    on first use, so commands that never touch Parquet start faster)."""
    import pyarrow as pa

    return (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)


def _as_text(column: Any):
    """An Arrow column as strings: strings as they are, other values as JSON (None stays null)."""
    import pyarrow as pa

    values = column.to_pylist()
    return pa.array([v if v is None or isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=_json_default) for v in values], pa.string())


def _castable(column: Any, kind: Any) -> bool:
    try:
        column.cast(kind)
    except _arrow_errors():
        return False
    return True


def _cast_table(table: Any, schema: Any):
    """``table`` with ``schema``'s columns in its order: missing columns null, each column
    cast to its type; a string column takes other values as text (``_as_text``). Raises an
    Arrow error when a column does not cast."""
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
            columns.append(_as_text(column))
        else:
            columns.append(column.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _wider(old: Any, new: Any):
    """One Arrow type that holds both: Arrow's permissive promotion where it has one
    (null -> the other type, integers and floats -> float64, lists of those), else string."""
    import pyarrow as pa

    try:
        return pa.unify_schemas([pa.schema([("c", old)]), pa.schema([("c", new)])], promote_options="permissive").field("c").type
    except _arrow_errors():
        return pa.string()


def _unify(schemas: list) -> Any:
    """One schema for chunks whose column types may differ (see ``_wider``); field order
    and metadata follow the first schema."""
    import pyarrow as pa

    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except _arrow_errors():
        pass
    kinds: dict[str, Any] = {}
    for schema in schemas:
        for field in schema:
            kinds[field.name] = _wider(kinds[field.name], field.type) if field.name in kinds else field.type
    return pa.schema([pa.field(name, kind) for name, kind in kinds.items()], metadata=schemas[0].metadata)


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


class TableWriter:
    """Append DataFrame chunks to one output and publish it atomically on ``close()``.

    ``path`` ``-`` writes to stdout. Parquet keeps lists and nested objects typed; CSV
    writes them as JSON strings. ``abort()`` removes the temporary file.
    """

    def __init__(self, path: str, fmt: str | None = None, column_types: dict[str, str] | None = None) -> None:
        self.path = path
        self.column_types = column_types or {}
        self.fmt = detect_format(path, fmt) if (path != "-" or fmt) else "jsonl"
        self._rows = 0
        self._parquet = None
        self._schema = None
        self._held: list = []
        self._held_rows = 0
        self._columns: list[str] | None = None
        self._buffer: IO[bytes]
        self._tmp: str | None = None
        self.notes: list[str] = []  # what the reader of the output should know (a widened column)
        self._staged = path == "-" and self.fmt == "parquet"  # Parquet needs a seekable file
        if path == "-":
            self._buffer = io.BytesIO() if self._staged else sys.stdout.buffer
        else:
            self._buffer, self._tmp = open_atomic(path)
        if self.fmt == "json":
            self._buffer.write(b"[")

    def write(self, df: pd.DataFrame) -> None:
        if self.fmt in ("csv", "parquet"):
            df = self._same_columns(df)
        if self.fmt == "jsonl":
            if len(df):
                text = df.to_json(orient="records", lines=True, force_ascii=False, default_handler=str, double_precision=15)
                self._buffer.write(text.encode("utf-8") + (b"" if text.endswith("\n") else b"\n"))
        elif self.fmt == "json":
            for record in json.loads(df.to_json(orient="records", force_ascii=False, default_handler=str, double_precision=15)):
                self._buffer.write((b"," if self._rows else b"") + b"\n" + json.dumps(record, ensure_ascii=False).encode("utf-8"))
                self._rows += 1
            return
        elif self.fmt == "csv":
            flat = df.copy()
            for column in flat.columns:
                if flat[column].dtype == object:  # lists / objects -> JSON text; typed columns stay typed
                    flat[column] = flat[column].map(_jsonable)
            flat.to_csv(self._buffer, header=self._rows == 0, index=False)
        else:
            self._write_parquet(df)
        self._rows += len(df)

    def _same_columns(self, df: pd.DataFrame) -> pd.DataFrame:
        """CSV and Parquet have one header: later chunks get the first chunk's columns (a
        column they lack is empty); a column first seen after the first chunk is an error."""
        if self._columns is None:
            self._columns = list(df.columns)
            return df
        extra = [c for c in df.columns if c not in self._columns]
        if extra:
            raise InputError(
                f"column '{extra[0]}' first appears after row {self._rows}; CSV and Parquet need every column "
                "in the first chunk: write .jsonl, or raise chunk_size in the config"
            )
        return df if list(df.columns) == self._columns else df.reindex(columns=self._columns)

    def _write_parquet(self, df: pd.DataFrame) -> None:
        """Parquet needs one schema for the whole file: chunks are held back (up to
        ``PARQUET_HOLD_ROWS``) while some column is still untyped (all null so far), then
        written under the unified schema. A column whose type changes after that is widened
        (see ``_conform``)."""
        import pyarrow as pa

        table = _to_arrow(df, self.column_types)
        if self._parquet is None:
            self._held.append(table)
            self._held_rows += len(table)
            schema = _unify([t.schema for t in self._held])
            if any(pa.types.is_null(f.type) for f in schema) and self._held_rows < PARQUET_HOLD_ROWS:
                return
            self._flush_held(schema)
            return
        conformed = self._conform(table)  # may replace self._parquet (a widened column)
        self._parquet.write_table(conformed)

    def _flush_held(self, schema) -> None:
        import pyarrow.parquet as pq

        self._schema = schema
        self._parquet = pq.ParquetWriter(self._buffer, schema)
        held, self._held = self._held, []
        for table in held:
            conformed = self._conform(table)  # may replace self._parquet (a widened column)
            self._parquet.write_table(conformed)

    def _conform(self, table):
        """``table`` under the file's schema. A column that does not fit (a list after strings,
        1.5 after integers, an object whose fields change type) widens the file's schema:
        integers and floats to float64, null to the new type, anything else to text (strings
        as they are, other values as JSON, as ``_to_arrow`` does for a chunk that mixes types),
        and the rows already written are rewritten under it. A note in ``self.notes`` names
        the column. Raises ``InputError`` only when the output cannot be read back (a FIFO)."""
        import pyarrow as pa

        try:
            return _cast_table(table, self._schema)
        except _arrow_errors():
            pass
        failing = [f for f in self._schema if f.name in table.column_names and not _castable(table.column(f.name), f.type)]
        for as_text in (False, True):
            widened = {f.name: pa.string() if as_text else _wider(f.type, table.schema.field(f.name).type) for f in failing}
            schema = pa.schema([pa.field(f.name, widened.get(f.name, f.type)) for f in self._schema], metadata=self._schema.metadata)
            try:
                conformed = _cast_table(table, schema)
                self._rewrite(schema)
            except _arrow_errors():
                continue
            for f in failing:
                self.notes.append(
                    f"column '{f.name}' changes type after row {self._rows} ({f.type} then {table.schema.field(f.name).type}); "
                    f"the Parquet file stores it as {widened[f.name]} for every row"
                )
            return conformed
        raise InputError(f"a column changes type after row {self._rows}; write .jsonl or .csv instead")  # pragma: no cover (text always fits)

    def _rewrite(self, schema) -> None:
        """Re-read what the Parquet writer has written so far and write it again under
        ``schema`` into a fresh temporary file (or buffer), replacing the old one. Raises an
        Arrow error (old output kept) when a column does not cast, ``InputError`` when the
        output is a FIFO or device and cannot be read back."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._tmp is None and not self._staged:
            raise InputError(f"a column changes type after row {self._rows} and {self.path} cannot be rewritten; write .jsonl or .csv instead")
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None
        if self._staged:
            old = pa.BufferReader(self._buffer.getvalue())  # type: ignore[attr-defined]
            buffer, tmp = io.BytesIO(), None
        else:
            self._buffer.close()
            old = self._tmp
            buffer, tmp = open_atomic(self.path)
        writer = pq.ParquetWriter(buffer, schema)
        try:
            for batch in pq.ParquetFile(old).iter_batches():
                writer.write_table(_cast_table(pa.Table.from_batches([batch]), schema))
            ok = True
        except BaseException:
            ok = False
            raise
        finally:
            if not ok:
                writer.close()
                buffer.close()
                if tmp is not None:
                    os.unlink(tmp)
                self._reopen()
        if self._tmp is not None:
            os.unlink(self._tmp)
        self._buffer, self._tmp, self._parquet, self._schema = buffer, tmp, writer, schema

    def _reopen(self) -> None:
        """After a failed rewrite: append to the old output again (same schema)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._staged:
            old = pa.BufferReader(self._buffer.getvalue())  # type: ignore[attr-defined]
            buffer, tmp = io.BytesIO(), None
        else:
            old = self._tmp
            buffer, tmp = open_atomic(self.path)
        writer = pq.ParquetWriter(buffer, self._schema)
        for batch in pq.ParquetFile(old).iter_batches():
            writer.write_table(pa.Table.from_batches([batch]))
        if self._tmp is not None:
            os.unlink(self._tmp)
        self._buffer, self._tmp, self._parquet = buffer, tmp, writer

    def close(self) -> None:
        """Finish the file and move it into place (or flush it to stdout)."""
        if self.fmt == "json":
            self._buffer.write(b"\n]\n")
        if self.fmt == "parquet":
            import pyarrow as pa

            if self._parquet is None and self._held:
                self._flush_held(_unify([t.schema for t in self._held]))
            if self._parquet is None:
                import pyarrow.parquet as pq

                pq.write_table(pa.table({}), self._buffer)
            else:
                self._parquet.close()
        if self.path == "-":
            if self._staged:
                sys.stdout.buffer.write(self._buffer.getvalue())  # type: ignore[attr-defined]
            sys.stdout.buffer.flush()
            return
        self._buffer.close()
        if self._tmp is not None:
            os.replace(self._tmp, os.path.realpath(self.path))
            self._tmp = None

    def abort(self) -> None:
        """Drop the partial output; the previous file at ``path`` (if any) stays untouched."""
        if self._parquet is not None:
            try:
                self._parquet.close()
            except Exception:  # the partial file is removed below anyway
                pass
            self._parquet = None
        if self._tmp is not None:
            try:
                self._buffer.close()
            finally:
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

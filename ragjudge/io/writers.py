"""Writers: one per format (JSONL, JSON, CSV, Parquet), each appending DataFrame chunks to one
output that appears atomically on ``close()``. ``TableWriter(path, fmt)`` gives the writer of
the format (``-`` is stdout).

The Parquet writer: chunks are spooled, the schema grows with each chunk (``arrow._merge_schema``),
and on ``close()`` every chunk is cast to the one schema and written; a column that no Arrow
type holds exactly becomes text, named in ``notes``."""

from __future__ import annotations

import decimal
import io
import json
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ragjudge.io.atomic import _output_error, open_atomic, to_stdout
from ragjudge.io.formats import SUFFIXES, detect_format

if TYPE_CHECKING:
    import pandas as pd

# pandas, pyarrow and ragjudge.io.arrow are imported where a chunk is written, not at import:
# a writer is opened (and the output path checked) before a JSON Lines run's first calls, which go
# out before pandas is imported (``ragjudge.io.rows``, issue 51)


RECORD_KEY = b"ragjudge.run"  # the Parquet metadata key of the run's settings (TableWriter.record)


def output_format(path: str | None, explicit: str | None, shared: str | None) -> str | None:
    """The format to write ``path`` in: ``explicit`` (--output-format) wins; ``shared``
    (--format) applies where the path's suffix cannot tell (stdout, no known suffix)."""
    if explicit:
        return explicit
    if path is not None and (to_stdout(path) or Path(path).suffix.lower() not in SUFFIXES):
        return shared
    return None


def read_record(path: str) -> dict[str, Any] | None:
    """The run's settings a ``TableWriter`` recorded in the Parquet file ``path`` (its
    ``record``), or None: another format, no record, a file that is not Parquet, or a record
    that is not a JSON object."""
    if to_stdout(path) or not os.path.isfile(path):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # the footer alone is read; any other file is not Parquet
        metadata = pq.read_schema(path).metadata or {}
        record = json.loads(metadata[RECORD_KEY]) if RECORD_KEY in metadata else None
    except (OSError, ValueError, pa.ArrowException):
        return None
    return record if isinstance(record, dict) else None

class TableWriter:
    """Append DataFrame chunks to one output and publish it atomically on ``close()``.

    ``path`` ``-`` writes to stdout. ``TableWriter(path, fmt, column_types)`` returns the
    writer of the format (``fmt``, else the suffix; JSONL for stdout): JSONL and JSON are
    written as chunks come. CSV and Parquet have one header or schema for the whole file, so
    their chunks are spooled (a temporary file beside the output) and written on ``close()``:
    the columns are every chunk's columns in order of first appearance (empty where a chunk
    lacks one), and a Parquet column gets the one type that holds all its values
    (``arrow.unify_type``), exactly as if the table had come in one chunk; a column that must
    become text for that is named in ``notes``. While every chunk has the first one's schema, a
    Parquet file is written as its chunks come (the same bytes), so that ``close()`` adds only
    its last row group and footer. Parquet keeps lists and nested objects typed;
    CSV writes them as JSON text. ``abort()`` removes the temporary files.
    """

    fmt = ""
    spooled = False  # chunks are kept in a spool file and written on close()

    def __new__(cls, path: str, fmt: str | None = None, column_types: dict[str, str] | None = None) -> TableWriter:
        if cls is TableWriter:
            name = detect_format(path, fmt, many=False) if (not to_stdout(path) or fmt) else "jsonl"
            cls = {"jsonl": JsonlWriter, "json": JsonWriter, "csv": CsvWriter, "parquet": ParquetWriter}[name]
        return super().__new__(cls)

    def __init__(self, path: str, fmt: str | None = None, column_types: dict[str, str] | None = None) -> None:
        self.path = path
        self.column_types = column_types or {}
        self._rows = 0
        self._spool: IO[bytes] | None = None
        self._buffer: IO[bytes]
        self._tmp: str | None = None
        self.notes: list[str] = []  # what the reader of the output should know (a column stored as text)
        # the run's settings its verdicts were gated with, kept in a Parquet file's metadata under RECORD_KEY
        # (``ragjudge.options.run_record``), so that ragjudge report and compare gate it as the run did
        self.record: dict[str, Any] | None = None
        if to_stdout(path):
            self._buffer = sys.stdout.buffer
        else:
            self._buffer, self._tmp = open_atomic(path)
        if self.spooled:
            folder = None if to_stdout(path) else os.path.dirname(os.path.realpath(path))
            self._spool = tempfile.TemporaryFile(prefix=".ragjudge-spool.", dir=folder)

    def write(self, df: pd.DataFrame) -> None:
        """Append ``df``'s rows. Raises ``OutputError`` when the disk refuses (full, gone)."""
        from ragjudge.io.arrow import plain_frame

        try:
            self._write(plain_frame(df))
        except OSError as exc:
            raise _output_error(self.path, exc) from None

    def _write(self, df: pd.DataFrame) -> None:
        raise NotImplementedError

    def _finish(self) -> None:
        """Write what ``close()`` adds: a closing bracket, or the spooled chunks."""

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

    def close(self) -> None:
        """Finish the file and move it into place (or flush it to stdout). Raises
        ``OutputError`` when the disk refuses (full, gone)."""
        try:
            self._close()
        except OSError as exc:
            raise _output_error(self.path, exc) from None

    def _close(self) -> None:
        self._finish()
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        if to_stdout(self.path):
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


def _exact_floats(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """``df`` with each float cell that pandas' JSON writer would round (it keeps 15 decimals:
    1.00713108221e-05 came back as 1.0071310822e-05, 1e-20 as 0.0) and each ``Decimal`` cell
    (pandas 2 wrote 1.10 as the float 1.1, pandas 3 as the text "1.10") replaced by a token, and
    the token as the writer encodes it -> the number's exact text (``repr`` of the float, the
    decimal as written) to put back in the JSON text. Chunks without such a cell are returned as
    they are, at no cost."""
    import numpy as np
    import pandas as pd

    out: pd.DataFrame | None = None
    exact: dict[str, str] = {}
    for position in range(len(df.columns)):  # by position: a frame may name two columns alike
        values = df.iloc[:, position]
        if values.dtype == object:
            cells = values.tolist()
            if any(isinstance(cell, decimal.Decimal) for cell in cells):
                for row, cell in enumerate(cells):
                    if isinstance(cell, decimal.Decimal):
                        token = f"\x00ragjudge-number-{len(exact)}\x00"
                        exact[json.dumps(token)] = str(cell) if cell.is_finite() else "null"
                        cells[row] = token
                if out is None:
                    out = df.copy()
                out.isetitem(position, pd.Series(cells, index=df.index, dtype=object))
            continue
        if values.dtype.kind != "f":
            continue
        numbers = values.to_numpy(dtype="float64")
        finite = np.isfinite(numbers)
        rounded = np.round(np.where(finite, numbers, 0.0), 15)
        lossy = np.flatnonzero(finite & (rounded != numbers))
        if not len(lossy):
            continue
        if out is None:
            out = df.copy()
        cells = values.astype(object)
        for row in lossy:
            token = f"\x00ragjudge-number-{len(exact)}\x00"
            exact[json.dumps(token)] = repr(float(numbers[row]))
            cells.iat[row] = token
        out.isetitem(position, cells)
    return (df if out is None else out), exact


def _json_lines(df: pd.DataFrame) -> list[str]:
    """``df``'s rows as pandas writes JSON records, one a line: every number exact, binary cells
    as base64 text, ``/`` unescaped."""
    from ragjudge.io.arrow import _base64_bytes, _text_ready

    df, exact = _exact_floats(_text_ready(_base64_bytes(df)))
    text = df.to_json(orient="records", lines=True, force_ascii=False, default_handler=str, double_precision=15, date_format="iso",
                      date_unit="us")
    for token, number in exact.items():
        text = text.replace(token, number)
    # pandas escapes every '/' as '\/' (valid, but URLs read badly); since no '/' is left
    # unescaped, each backslash-slash pair is such an escape and can be undone
    # split on newlines alone: str.splitlines would also split inside a text holding U+2028
    return text.replace("\\/", "/").rstrip("\n").split("\n")


class JsonlWriter(TableWriter):
    """JSON Lines: one object a row, written as chunks come; binary cells as base64 text."""

    fmt = "jsonl"

    def _write(self, df: pd.DataFrame) -> None:
        if len(df):
            self._buffer.write("".join(line + "\n" for line in _json_lines(df)).encode("utf-8"))
        self._rows += len(df)


class JsonWriter(TableWriter):
    """One JSON array of objects, written as chunks come; binary cells as base64 text."""

    fmt = "json"

    def _write(self, df: pd.DataFrame) -> None:
        if not len(df):
            return
        for line in _json_lines(df):  # each line one record, its numbers exactly as written
            self._buffer.write((b"," if self._rows else b"[") + b"\n" + line.encode("utf-8"))
            self._rows += 1

    def _finish(self) -> None:  # the array opens with its first row: a run that fails before it writes nothing to stdout
        self._buffer.write((b"" if self._rows else b"[") + b"\n]\n")


class CsvWriter(TableWriter):
    """CSV with one header for every chunk's columns: chunks are spooled, then written on
    ``close()``; lists and objects as JSON text, binary cells as base64 text."""

    fmt = "csv"
    spooled = True

    def __init__(self, path: str, fmt: str | None = None, column_types: dict[str, str] | None = None) -> None:
        super().__init__(path, fmt, column_types)
        self._columns: list[str] = []  # every column so far, in order of first appearance
        self._nul: dict[str, int] = {}  # column -> cells whose NUL characters were written as U+FFFD

    def _write(self, df: pd.DataFrame) -> None:
        import pandas as pd

        from ragjudge.io.arrow import _base64_bytes, _jsonable, _text_ready

        flat = _text_ready(_base64_bytes(df)).copy()
        quote_all = False
        for column in flat.columns:
            if flat[column].dtype == object:  # lists / objects -> JSON text; typed columns stay typed
                flat[column] = pd.Series([_jsonable(v) for v in flat[column]], index=flat.index, dtype=object)
            if flat[column].dtype == object or isinstance(flat[column].dtype, pd.StringDtype):
                text = pd.Series([v if isinstance(v, str) else "" for v in flat[column].tolist()], index=flat.index, dtype=object)
                nul = text.str.contains("\0", regex=False)
                if nul.any():  # the CSV reader refuses a NUL (pandas' parser ends the cell there): U+FFFD, as for surrogates
                    flat[column] = flat[column].where(~nul, text.str.replace("\0", "\ufffd", regex=False)).astype(flat[column].dtype)
                    self._nul[str(column)] = self._nul.get(str(column), 0) + int(nul.sum())
                quote_all = quote_all or bool(text.str.contains("\r", regex=False).any())
        self._columns += [str(c) for c in flat.columns if str(c) not in self._columns]
        # a lone carriage return ends a line for every CSV reader unless its cell is quoted, and the
        # csv module quotes only the line terminator's characters ("\n"): such a chunk is quoted whole
        pickle.dump((flat, quote_all), self._spool, protocol=pickle.HIGHEST_PROTOCOL)
        self._rows += len(df)

    def _finish(self) -> None:
        import csv

        import pandas as pd

        self._columns = self._ordered(self._columns)
        header = True
        for flat, quote_all in self._spooled():
            if list(flat.columns) != self._columns:
                flat = flat.reindex(columns=self._columns)
            flat.to_csv(self._buffer, header=header, index=False, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL)
            header = False
        for column, cells in self._nul.items():
            self.notes.append(f"column '{column}': {cells} cell(s) held a NUL character, which a CSV file cannot hold (a CSV reader "
                              "ends the cell there); the CSV has U+FFFD in its place (-o .jsonl or .parquet keeps it)")
        if header and self._columns:  # no rows: the header alone
            pd.DataFrame(columns=self._columns).to_csv(self._buffer, index=False)


def _big_integers(values: pd.Series) -> bool:
    """Whether ``values`` are integers only (None aside), so that a column of them stored as text
    is one of integers beyond what Parquet's 64-bit integers hold, not one of mixed types."""
    import pandas as pd

    present = [v for v in values.tolist() if v is not None and v is not pd.NA and not (isinstance(v, float) and v != v)]
    return bool(present) and all(isinstance(v, int) and not isinstance(v, bool) for v in present)


def write_table(df: pd.DataFrame, path: str, fmt: str | None = None) -> None:
    """Write one DataFrame to ``path`` atomically (see ``TableWriter``)."""
    writer = TableWriter(path, fmt)
    try:
        writer.write(df)
        writer.close()
    except BaseException:
        writer.abort()
        raise


ROW_GROUP_ROWS = 10_000  # rows a Parquet row group holds at least (but the last): as many as a default chunk


class ParquetWriter(TableWriter):
    """Parquet with one schema for every chunk; lists and nested objects stay typed."""

    fmt = "parquet"
    spooled = True

    def __init__(self, path: str, fmt: str | None = None, column_types: dict[str, str] | None = None) -> None:
        super().__init__(path, fmt, column_types)
        self._schema: Any = None  # the merged schema of the chunks so far
        self._texted: dict[str, str] = {}  # column -> why it is stored as text ("holds ...")
        self._varied: set[str] = set()  # columns whose type differs between chunks
        # while every chunk has the first chunk's schema (the usual case), the file is written as
        # the chunks come, and close() only adds the last row group and the footer (issue 51: the
        # wait from the last reply to exit); a chunk that changes the schema ends this, and
        # close() writes the whole file from the spool as before
        self._stream: Any = None  # (pyarrow ParquetWriter, the file's schema, the record in it as JSON, the merged schema then)
        self._streaming = not to_stdout(path)
        self._group: list[Any] = []  # Arrow tables streamed but not yet written as a row group

    def _write(self, df: pd.DataFrame) -> None:
        from ragjudge.io.arrow import _merge_schema, _to_arrow

        texted: list[str] = []
        table = _to_arrow(df, self.column_types, texted)
        for name in texted:
            rows = f"rows {self._rows + 1} to {self._rows + len(df)}"
            self._texted.setdefault(name, f"holds integers beyond the 64-bit range that Parquet stores ({rows})" if _big_integers(df[name])
                                    else f"holds values of different types (values that Arrow cannot type together, in {rows})")
        merged = _merge_schema(self._schema, table.schema)
        if self._schema is not None and merged is not self._schema:
            self._note_texted(merged, table.schema)
        self._varied.update(f.name for f in table.schema if f.type != merged.field(f.name).type)
        if self._schema is not None:
            self._varied.update(f.name for f in self._schema if f.type != merged.field(f.name).type)
        self._schema = merged
        # the chunk itself beside its Arrow table: a column stored as text is written from the
        # original values (1 stays "1", an object keeps only its own keys); the table, made here
        # while the next chunk's calls run, is not made again on close() (issue 51: the last
        # reply's wait to exit)
        pickle.dump((df, table), self._spool, protocol=pickle.HIGHEST_PROTOCOL)
        self._rows += len(df)
        if self._streaming:
            if self._texted or self._varied or (self._stream is not None and merged is not self._stream[3]):
                self._stop_streaming()
            else:
                self._stream_table(df, table)

    def _file_schema(self) -> Any:
        """The file's schema: the merged schema, input columns first, the run record in its
        metadata."""
        import pyarrow as pa

        schema = self._schema if self._schema is not None else pa.schema([])
        schema = pa.schema([schema.field(name) for name in self._ordered(schema.names)], metadata=schema.metadata)
        if self.record is not None:
            schema = schema.with_metadata({**(schema.metadata or {}), RECORD_KEY: json.dumps(self.record).encode()})
        return schema

    def _stream_table(self, df: Any, table: Any) -> None:
        """Add one chunk's table to the file being written as the chunks come."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ragjudge.io.arrow import _cast_table

        if self._stream is None:
            schema = self._file_schema()
            self._stream = (pq.ParquetWriter(self._buffer, schema), schema, json.dumps(self.record), self._schema)
        writer, schema = self._stream[:2]
        self._group.append(_cast_table(table, schema, df))
        if sum(len(t) for t in self._group) >= ROW_GROUP_ROWS:
            writer.write_table(pa.concat_tables(self._group))
            self._group = []

    def _stop_streaming(self) -> None:
        """A chunk changed the schema: drop what was streamed; close() writes the whole file
        from the spool."""
        self._streaming = False
        self._group = []
        if self._stream is not None:
            writer, self._stream = self._stream[0], None
            writer.close()
            self._buffer.seek(0)
            self._buffer.truncate()

    def _note_texted(self, merged: Any, new: Any) -> None:
        """Remember the columns that the chunk with schema ``new`` turns into text."""
        import pyarrow as pa

        for field in merged:
            if not pa.types.is_string(field.type) or field.name in self._texted or field.name not in self._schema.names or field.name not in new.names:
                continue
            kinds = (self._schema.field(field.name).type, new.field(field.name).type)
            if any(not (pa.types.is_string(k) or pa.types.is_null(k)) for k in kinds):
                self._texted[field.name] = f"holds values of different types ({kinds[0]} up to row {self._rows}, then {kinds[1]})"

    def _write_parquet(self) -> None:
        """One pass to check that every chunk's column casts to the merged type without
        changing a value (a too-large integer among floats cannot: that column becomes text),
        then one to write."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ragjudge.io.arrow import _arrow_errors, _cast_table

        schema = self._file_schema()
        changed = [f.name for f in schema if f.name in self._varied and not pa.types.is_string(f.type)]
        texted: set[str] = set()
        for df, table in self._spooled() if changed else ():
            present = [name for name in changed if name in df.columns and name not in texted]
            if not present:
                continue
            for name in present:
                target, column = schema.field(name).type, table.column(name)
                if column.type != target:  # string targets are not in `changed`: text always fits
                    try:
                        column.cast(target)
                    except _arrow_errors():
                        texted.add(name)
                        self._texted.setdefault(name, f"holds values of different types ({column.type} values that {target} cannot hold exactly)")
        if texted:
            schema = pa.schema([pa.field(f.name, pa.string()) if f.name in texted else f for f in schema], metadata=schema.metadata)
        writer = pq.ParquetWriter(self._buffer, schema)
        try:
            group: list[Any] = []  # the engine's jobs are small: their tables are gathered into row groups of ROW_GROUP_ROWS
            for df, table in self._spooled():
                group.append(_cast_table(table, schema, df))
                if sum(len(t) for t in group) >= ROW_GROUP_ROWS:
                    writer.write_table(pa.concat_tables(group))
                    group = []
            if group:
                writer.write_table(pa.concat_tables(group))
        finally:
            writer.close()
        for name, why in self._texted.items():
            mixed = ", as it does a column mixed within one chunk" if why.startswith("holds values of different types") else ""
            self.notes.append(f"column '{name}' {why}; the Parquet file stores it as text (JSON) for every row{mixed}")

    def abort(self) -> None:
        if self._stream is not None:
            writer, self._stream = self._stream[0], None
            try:
                writer.close()
            except (OSError, ValueError):  # a full disk: the partial file goes anyway
                pass
        super().abort()

    def _finish(self) -> None:
        if self._streaming and self._stream is not None and self._stream[2] != json.dumps(self.record):
            self._stop_streaming()  # the run record was changed after the first chunk: written again with it
        if self._streaming and self._stream is not None:
            import pyarrow as pa

            writer = self._stream[0]
            try:
                if self._group:
                    writer.write_table(pa.concat_tables(self._group))
            finally:
                self._group, self._stream = [], None
                writer.close()
            return
        if to_stdout(self.path):  # Parquet needs a seekable file: build it in memory, then send it
            target, self._buffer = self._buffer, io.BytesIO()
            self._write_parquet()
            target.write(self._buffer.getvalue())  # type: ignore[attr-defined]
            self._buffer = target
        else:
            self._write_parquet()

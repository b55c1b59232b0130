"""The Parquet writer: chunks are spooled, the schema grows with each chunk (``arrow._merge_schema``),
and on ``close()`` every chunk is cast to the one schema and written; a column that no Arrow
type holds exactly becomes text, named in ``notes``."""

from __future__ import annotations

import io
import pickle
from typing import Any

import pandas as pd

from ragjudge.io.arrow import _arrow_errors, _cast_table, _merge_schema, _to_arrow
from ragjudge.io.writers import TableWriter


class ParquetWriter(TableWriter):
    """Parquet with one schema for every chunk; lists and nested objects stay typed."""

    fmt = "parquet"
    spooled = True

    def __init__(self, path: str, fmt: str | None = None, column_types: dict[str, str] | None = None) -> None:
        super().__init__(path, fmt, column_types)
        self._schema: Any = None  # the merged schema of the chunks so far
        self._texted: dict[str, str] = {}  # column -> why it is stored as text
        self._varied: set[str] = set()  # columns whose type differs between chunks

    def _write(self, df: pd.DataFrame) -> None:
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

    def _finish(self) -> None:
        if self.path == "-":  # Parquet needs a seekable file: build it in memory, then send it
            target, self._buffer = self._buffer, io.BytesIO()
            self._write_parquet()
            target.write(self._buffer.getvalue())  # type: ignore[attr-defined]
            self._buffer = target
        else:
            self._write_parquet()

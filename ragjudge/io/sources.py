"""Sources of many files: a folder or a glob of one format, read by both engines (local and
Ray) into the same table. The files' columns are unified as Arrow unifies them
(``arrow.unify_type``: pyarrow's ``unify_schemas(promote_options="permissive")``); a column
that no Arrow type holds across the files (an integer in one file, text in another) becomes
text in every row, as the Parquet writer stores it. A value that the shared type cannot hold
exactly (an integer past 2**53 where another file has decimals) is exit 2 naming the file
and the column."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragjudge.errors import InputError
from ragjudge.io.arrow import _arrow_errors, _cast_table, _to_arrow, unify_type


class Unifier:
    """The one Arrow schema of many chunks' schemas, added in the order they are read:
    columns in order of first appearance, each of ``arrow.unify_type``'s type, else text."""

    def __init__(self) -> None:
        self.types: dict[str, Any] = {}
        self.origin: dict[str, str] = {}  # column -> the file whose chunk set its type

    def add(self, schema: Any, name: str) -> None:
        import pyarrow as pa

        for field in schema:
            old = self.types.get(field.name)
            if old is None:
                self.types[field.name], self.origin[field.name] = field.type, name
            elif old != field.type:
                merged = unify_type(old, field.type)
                self.types[field.name] = merged if merged is not None else pa.string()
                if merged != old:
                    self.origin[field.name] = name

    def schema(self) -> Any:
        import pyarrow as pa

        return pa.schema([pa.field(name, kind) for name, kind in self.types.items()])


def unified_schema(files: list[str], schemas: list[list[Any]]) -> tuple[Any, dict[str, str]]:
    """The one schema of ``files`` whose chunks have ``schemas`` (one list per file), and for
    each column the file that gave it its type (for messages)."""
    unifier = Unifier()
    for path, found in zip(files, schemas):
        for schema in found:
            unifier.add(schema, path)
    return unifier.schema(), unifier.origin


def conform_table(df: pd.DataFrame, schema: Any, name: str, extra: Any = None, origins: dict[str, str] | None = None) -> Any:
    """The chunk ``df`` of the file ``name`` as an Arrow table of ``schema`` (plus the fields
    of ``extra``, a schema): missing columns null, each column cast to its type, a text column
    from the values' text (``arrow._cell_text``). Raises ``InputError`` naming the file and the
    column (and, from ``origins``, the file that gave the column its type) when a value does
    not fit the type."""
    import pyarrow as pa

    target = pa.schema(list(schema) + (list(extra) if extra is not None else []))
    table = _to_arrow(df)
    try:
        return _cast_table(table, target, df)
    except _arrow_errors():
        pass
    for field in target:  # find the column, for the message
        if field.name in table.column_names and table.column(field.name).type != field.type and not pa.types.is_string(field.type):
            try:
                table.column(field.name).cast(field.type)
            except _arrow_errors() as exc:
                other = (origins or {}).get(field.name)
                source = f" ({other} holds {field.type} values)" if other and other != name else ""
                raise InputError(f"{name}: column '{field.name}': {exc}; the files share the type {field.type} for it{source}, "
                                 "which cannot hold this value exactly: make the column one type in every file") from None
    raise InputError(f"{name}: its columns do not fit the types the files share")


def conform_frame(df: pd.DataFrame, schema: Any, name: str, origins: dict[str, str] | None = None) -> pd.DataFrame:
    """The chunk ``df`` of the file ``name`` with ``schema``'s columns, in its order: a missing
    column empty, a column whose type differs from the shared one holding the values the
    shared type gives them (as ``conform_table``, so both engines read the same table);
    other columns untouched. Raises what ``conform_table`` raises."""
    import pyarrow as pa

    texted: list[str] = []
    own = _to_arrow(df, None, texted).schema
    # a column Arrow typed as text only by turning its values into text (mixed within the chunk) differs too
    differ = [f.name for f in schema if f.name not in own.names or own.field(f.name).type != f.type
              or (f.name in texted and pa.types.is_string(f.type))]
    if not differ and list(df.columns) == schema.names:
        return df
    out = df.copy()
    if differ:
        present = [n for n in differ if n in df.columns]
        table = conform_table(df[present], pa.schema([schema.field(n) for n in present]), name, None, origins) if present else None
        for column in differ:
            values = table.column(column).to_pylist() if column in present else [None] * len(df)
            out[column] = pd.Series(values, index=df.index, dtype=object)
    return out[schema.names]

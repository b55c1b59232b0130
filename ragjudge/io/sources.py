"""Sources of many files: a folder or a glob of one format, read by both engines (local and
Ray) into the same table. The files' columns are unified as Arrow unifies them
(``arrow.unify_type``: pyarrow's ``unify_schemas(promote_options="permissive")``); a column
that no Arrow type holds across the files (an integer in one file, text in another) becomes
text in every row, as the Parquet writer stores it. A value that the shared type cannot hold
exactly (an integer past 2**53 where another file has decimals) is exit 2 naming the file
and the column."""

from __future__ import annotations

import glob
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ragjudge.errors import InputError
from ragjudge.io.arrow import _arrow_errors, _cast_table, _to_arrow, unify_type
from ragjudge.io.formats import _SUFFIXES, FORMATS


def is_many(source: str) -> bool:
    """Whether ``source`` names a folder or a glob (not one file, not stdin)."""
    if source == "-" or Path(source).is_file():
        return False
    return Path(source).is_dir() or any(ch in source for ch in "*?[")


def source_files(source: str, explicit: str | None = None) -> tuple[list[str], str]:
    """The files of ``source`` (a file, a folder, searched recursively, or a glob; ``**``
    spans folders) in sorted order, and their one format (``explicit``, else the suffixes').
    Raises ``InputError`` when nothing matches, no file has a table's suffix, or the files'
    formats differ."""
    if explicit and explicit not in FORMATS:
        raise InputError(f"unknown format '{explicit}'; use one of: {', '.join(FORMATS)}")
    path = Path(source)
    if path.is_file():
        found = [source]
    elif path.is_dir():
        found = sorted(str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() in _SUFFIXES)
    elif any(ch in source for ch in "*?["):
        matched = [p for p in glob.glob(source, recursive=True) if Path(p).is_file()]
        if not matched:
            raise InputError(f"input file not found: {source} (no file matches it)")
        found = sorted(p for p in matched if Path(p).suffix.lower() in _SUFFIXES)
    else:
        raise InputError(f"input file not found: {source}")
    if not found:
        raise InputError(f"{source}: no readable file (.jsonl, .csv, .parquet, .json) in it")
    if explicit:
        return found, explicit
    if len(found) == 1 and Path(found[0]).suffix.lower() not in _SUFFIXES:
        from ragjudge.io.formats import detect_format

        return found, detect_format(found[0])
    formats = sorted({_SUFFIXES[Path(p).suffix.lower()] for p in found})
    if len(formats) > 1:
        raise InputError(f"{source}: the files are of different formats ({', '.join(formats)}); give a folder or glob of one format")
    return found, formats[0]


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


def chunk_schemas(path: str, fmt: str, chunk_size: int) -> list[Any]:
    """The Arrow schema of each chunk of the file at ``path``, typed as ``arrow._to_arrow``
    types a chunk (a column mixed within a chunk is text)."""
    from ragjudge.io.readers import iter_chunks

    return [_to_arrow(chunk).schema for chunk in iter_chunks(path, fmt, chunk_size)]


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


def many_chunks(source: str, fmt: str | None, chunk_size: int) -> Iterator[pd.DataFrame]:
    """The chunks of every file of ``source`` (a folder or a glob), in file order, conformed to
    the files' one schema: the files are read twice, once for their columns' types."""
    from ragjudge.io.readers import iter_chunks

    files, fmt = source_files(source, fmt)
    schema, origins = unified_schema(files, [chunk_schemas(path, fmt, chunk_size) for path in files])
    for path in files:
        for chunk in iter_chunks(path, fmt, chunk_size):
            yield conform_frame(chunk, schema, path, origins)

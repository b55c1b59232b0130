"""Arrow typing: a chunk as a pyarrow Table (columns Arrow cannot type become text), one cell as
text, and the one type that holds a column typed differently in several chunks or files
(pyarrow's own ``unify_schemas(promote_options="permissive")``)."""

from __future__ import annotations

import datetime
import decimal
import json
import math
from typing import Any

import pandas as pd


def plain_frame(df: pd.DataFrame) -> pd.DataFrame:
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


_CLOCK = (datetime.date, datetime.time, datetime.timedelta)


def _iso(value: Any) -> Any:
    """A date, time of day or duration cell as ISO 8601 text (a duration as ``P0DT0H0M1.5S``,
    which ``pd.Timedelta`` reads back); other values as they are."""
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (datetime.timedelta, pd.Timedelta)) or type(value).__name__ == "timedelta64":
        return pd.Timedelta(value).isoformat()
    if isinstance(value, _CLOCK) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    return value


def _text_ready(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as the text formats (JSONL, JSON, CSV) write it: durations, dates and times of day
    as ISO 8601 text. pandas' JSON writer reads a duration's unit wrong (a ``duration[ms]`` of
    1.5 s was written as 1.5 us: pandas-dev/pandas#63236) and writes a date as a midnight
    timestamp; decimals, unsigned integers and floats that the Parquet reader keeps in their
    Arrow type are written as pandas' own dtypes hold them (its JSON writer would write a decimal
    as a float); its other cells (timestamps, numbers, lists, objects) are left to the writer."""
    out = None
    for column in df.columns:
        series = df[column]
        kind = series.dtype
        arrow = kind.pyarrow_dtype if isinstance(kind, pd.ArrowDtype) else None
        if pd.api.types.is_timedelta64_dtype(kind) or (arrow is not None and _is_clock(arrow)):
            values = [_iso(v) for v in series.tolist()]
        elif arrow is not None and _is_exact_number(arrow):  # as pandas' own dtypes hold them (``readers._kept_type``)
            if out is None:
                out = df.copy(deep=False)
            out[column] = _numpy_numbers(series, arrow)
            continue
        elif kind == object and any(isinstance(v, _CLOCK) and not isinstance(v, datetime.datetime) for v in series.tolist()):
            values = [_iso(v) for v in series.tolist()]
        else:
            continue
        if out is None:
            out = df.copy(deep=False)
        out[column] = pd.Series(values, index=df.index, dtype=object)
    return df if out is None else out


def _is_exact_number(kind: Any) -> bool:
    """A decimal, unsigned or float type: the Parquet reader keeps such a column as
    ``pd.ArrowDtype`` (``readers._kept_type``, ``readers._nan_kept``)."""
    import pyarrow as pa

    return pa.types.is_decimal(kind) or pa.types.is_unsigned_integer(kind) or pa.types.is_floating(kind)


def _numpy_numbers(series: pd.Series, kind: Any) -> pd.Series:
    """An ``ArrowDtype`` number column as pandas reads it by itself: floats as float64 (null as
    NaN), unsigned integers as such without nulls, else (and decimals) Python values and None."""
    import pyarrow as pa

    if pa.types.is_floating(kind):
        return pd.Series(series.to_numpy(dtype="float64", na_value=math.nan), index=series.index)
    if pa.types.is_unsigned_integer(kind) and not series.isna().any():
        return pd.Series(series.to_numpy(dtype=kind.to_pandas_dtype()), index=series.index)
    return pd.Series([None if v is pd.NA else v for v in series.tolist()], index=series.index, dtype=object)


def _is_clock(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_duration(kind) or pa.types.is_date(kind) or pa.types.is_time(kind)


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


def arrow_type(name: str) -> Any:
    """A column type name (``float64``, ``bool``, ``string``, ``int64``, ``list<string>``,
    ``list<float64>``) as pyarrow's."""
    import pyarrow as pa

    simple = {"float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(), "int64": pa.int64()}
    if name.startswith("list<"):
        return pa.list_(simple[name[5:-1]])
    return simple[name]


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

    table = None
    try:  # the usual chunk: every column converts as it is, once (not once to check and once more)
        table = pa.Table.from_pandas(df, preserve_index=False)
    except _arrow_errors():
        pass
    if table is not None and any(df.dtypes.iloc[i] == object and _has_empty_struct(table.schema.field(i).type) for i in range(len(df.columns))):
        table = None
    if table is None:
        fixed = df
        for column in df.columns:
            if df[column].dtype == object and not storable(df[column]):
                if texted is not None:
                    texted.append(str(column))
                if fixed is df:
                    fixed = df.copy()
                fixed[column] = [_cell_text(v) for v in df[column]]
        table = pa.Table.from_pandas(fixed, preserve_index=False)
    for index, column in enumerate(df.columns):
        if df[column].dtype == object and pa.types.is_struct(table.schema.field(index).type):
            mapped = _as_map(df[column].tolist())
            if mapped is not None:
                table = table.set_column(index, table.schema.field(index).name, mapped)
    for name, kind in (column_types or {}).items():
        if name in table.column_names:
            index = table.column_names.index(name)
            column = table.column(name)
            target = arrow_type(kind)
            if column.null_count == len(column):
                column = pa.nulls(len(column), target)
            try:
                column = column.cast(target)
            except _arrow_errors():
                continue  # an input column of that name that this run did not replace: kept as it is
            table = table.set_column(index, name, column)
    return table


def _as_map(values: list[Any]) -> Any:
    """A column of objects as an Arrow ``map<string, V>`` when its objects have differing keys
    (a map read from Parquet, a dict of counts): Arrow would type them as one struct with every
    key, and a key a row lacks would come back as null. None when the objects share their keys
    (a struct), or a key is not text, or their values have no one type."""
    import pyarrow as pa

    objects = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not objects or not all(isinstance(v, dict) for v in objects):
        return None
    keys = {tuple(v) for v in objects}
    if len(keys) == 1 or not all(isinstance(k, str) for v in objects for k in v):
        return None
    try:
        kind = pa.array([x for v in objects for x in v.values()], from_pandas=True).type
        if pa.types.is_null(kind):
            kind = pa.string()
        return pa.array([None if not isinstance(v, dict) else list(v.items()) for v in values], pa.map_(pa.string(), kind))
    except _arrow_errors():
        return None


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


def unify_type(old: Any, new: Any) -> Any:
    """The Arrow type that holds a column typed ``old`` somewhere and ``new`` elsewhere, by
    pyarrow's ``unify_schemas(promote_options="permissive")``: null takes the other type,
    integers widen and mix with floats as a float, lists and objects merge their items and
    fields (an object's fields are the union of both). None when pyarrow finds no such type
    (text and a number, a boolean and a number, a list and text)."""
    import pyarrow as pa

    if old == new:
        return old
    try:
        return pa.unify_schemas([pa.schema([("c", old)]), pa.schema([("c", new)])], promote_options="permissive").field("c").type
    except _arrow_errors():
        return None


def _merge_schema(schema: Any, new: Any) -> Any:
    """``schema`` (None at first) grown by a chunk's ``new`` schema: columns in order of first
    appearance, each typed by ``unify_type`` (text where it finds no common type)."""
    import pyarrow as pa

    if schema is None or schema.equals(new):
        return new if schema is None else schema
    kinds = {f.name: f.type for f in schema}
    for field in new:
        if field.name not in kinds:
            kinds[field.name] = field.type
        elif kinds[field.name] != field.type:
            kinds[field.name] = unify_type(kinds[field.name], field.type) or pa.string()
    return pa.schema([pa.field(name, kind) for name, kind in kinds.items()], metadata=schema.metadata)

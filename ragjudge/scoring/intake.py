"""DataFrame intake: what ``score`` takes (a DataFrame, or a list of dicts) checked and read as
rows."""

from __future__ import annotations

from typing import Any

from ragjudge.errors import InputError
from ragjudge.io.rows import RowChunk


def row_dicts(frame: Any) -> list[dict[str, Any]]:
    """``frame``'s rows as dicts, one per row: a frame with no columns (a chunk of ``{}`` rows)
    has rows too, which ``to_dict("records")`` would drop."""
    if isinstance(frame, RowChunk):
        return frame.to_dict("records")
    return frame.to_dict("records") if len(frame.columns) else [{} for _ in range(len(frame))]


def as_frame(frame: Any) -> Any:
    """``frame`` as a DataFrame whose columns the scorer can name: a list of dicts becomes one;
    anything else that is not a DataFrame, MultiIndex columns, column names that are not text
    and a column name given twice raise ``InputError`` with the fix."""
    import pandas as pd

    if isinstance(frame, list) and all(isinstance(row, dict) for row in frame):
        frame = pd.DataFrame(frame)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"score takes a pandas DataFrame (or a list of dicts), not {type(frame).__name__}")
    if isinstance(frame.columns, pd.MultiIndex):
        raise InputError("the DataFrame has MultiIndex columns; flatten them first, e.g. "
                         "df.columns = ['_'.join(map(str, c)) for c in df.columns]")
    odd = [c for c in frame.columns if not isinstance(c, str)]
    if odd:
        raise InputError(f"column names must be text; {', '.join(map(repr, odd[:5]))} {'is' if len(odd) == 1 else 'are'} not: "
                         "rename them, e.g. df.columns = df.columns.astype(str)")
    twice = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
    if twice:
        raise InputError(f"the column name(s) {', '.join(twice)} appear more than once; give each column its own name")
    return frame

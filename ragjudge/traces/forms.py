"""Which form a trace file is in, told from its first bytes: OTLP JSON (``is_otlp_file``), a
saved Phoenix span table (``is_phoenix_file``) or Phoenix's span DataFrame (``is_phoenix_frame``).

Cheap: a sniffer reads one line, one record or a Parquet footer (the whole file only when the
first OTLP request is pretty-printed). ``json_documents`` walks the JSON documents of a text
(one per line, pretty-printed, or the items of an array), naming the line of each; the OTLP
reader reads its requests with it. Needs no OpenTelemetry package.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

PHOENIX_COLUMNS = ("context.span_id", "context.trace_id")  # how a Phoenix span DataFrame is told


class DocumentError(ValueError):
    """A JSON document that cannot be decoded, with the line it starts on."""

    def __init__(self, line: int, error: json.JSONDecodeError) -> None:
        super().__init__(f"line {line}: {error.msg}")
        self.line = line
        self.error = error


def json_documents(text: str) -> Iterator[tuple[str, Any]]:
    """The JSON documents of a text, one after another (one per line or pretty-printed; the
    items of a JSON array one by one), each with where it starts: ``line N``, or ``line N,
    item K of the array``. ``DocumentError`` names the line of one that cannot be decoded
    (a line cut short is reported where it starts, not where the text ends)."""
    decoder = json.JSONDecoder()
    position, end = 0, len(text)
    lines = _Lines(text)

    def skip(at: int) -> int:
        while at < end and text[at].isspace():
            at += 1
        return at

    def decode(at: int) -> tuple[int, Any, int]:
        """(its line, the JSON value starting at ``at``, the position after it)."""
        line = lines.at(at)
        try:
            return (line, *decoder.raw_decode(text, at))
        except json.JSONDecodeError as err:
            raise DocumentError(line, err) from err

    while True:
        position = skip(position)
        if position >= end:
            return
        if text[position] != "[":
            line, document, position = decode(position)
            yield f"line {line}", document
            continue
        position, item = skip(position + 1), 0  # a JSON array of requests: its items one by one
        while position < end and text[position] != "]":
            item += 1
            line, document, position = decode(position)
            yield f"line {line}, item {item} of the array", document
            position = skip(position)
            if position < end and text[position] == ",":
                position = skip(position + 1)
            elif position >= end or text[position] != "]":
                raise DocumentError(lines.at(min(position, end - 1)),
                                     json.JSONDecodeError("Expecting ',' delimiter or ']'", text, min(position, end)))
        if position >= end:
            raise DocumentError(lines.at(end - 1), json.JSONDecodeError("Expecting ']': the array is not closed", text, end))
        position += 1


class _Lines:
    """Line numbers of positions in a text, counted once as positions grow."""

    def __init__(self, text: str) -> None:
        self.text, self.line, self.counted = text, 1, 0

    def at(self, position: int) -> int:
        if position < self.counted:  # (not reached: positions only grow)
            return self.text.count("\n", 0, position) + 1
        self.line += self.text.count("\n", self.counted, position)
        self.counted = position
        return self.line


def resource_spans(document: Any) -> list[Any] | None:
    if not isinstance(document, dict):
        return None
    found = document.get("resourceSpans", document.get("resource_spans"))
    return found if isinstance(found, list) else None


def is_otlp_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds OTLP JSON trace requests (its first JSON document, or the first
    item of a JSON array, has a ``resourceSpans`` list; blank lines before it are passed
    over). Reads the first line, or the whole file when the first request is pretty-printed;
    needs no OpenTelemetry package."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8-sig") as handle:
            line = handle.readline()
            while line and not line.strip():
                line = handle.readline()
            try:
                return resource_spans(_first_request(json.loads(line))) is not None
            except json.JSONDecodeError:
                pass
            if not line.lstrip().startswith(("{", "[")):
                return False
            text = line + handle.read()
        found = next(json_documents(text), None)
        return found is not None and resource_spans(found[1]) is not None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return False


def _first_request(document: Any) -> Any:
    """A JSON array of requests stands for its first item."""
    return document[0] if isinstance(document, list) and document else document


def is_phoenix_frame(frame: Any) -> bool:
    """Whether ``frame`` is shaped as Phoenix's ``get_spans_dataframe()`` (columns, or the
    index, ``context.span_id`` and ``context.trace_id``)."""
    columns = set(map(str, getattr(frame, "columns", [])))
    index = getattr(frame, "index", None)
    names = set(map(str, getattr(index, "names", None) or [])) if index is not None else set()
    return all(c in columns or c in names for c in PHOENIX_COLUMNS)


def is_parquet(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"PAR1"


def is_phoenix_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a saved Phoenix span DataFrame: a Parquet file (told by its
    first bytes, ``PAR1``) whose schema has the columns ``context.span_id`` and
    ``context.trace_id`` (the schema only is read), or a JSON-lines / JSON-records file (flat or
    pretty-printed; blank lines before it passed over) whose first record has them. Cheap: one
    record, or the Parquet footer."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        if is_parquet(str(path)):
            import pyarrow.parquet as pq

            return all(c in pq.read_schema(path).names for c in PHOENIX_COLUMNS)
        with open(path, encoding="utf-8-sig") as handle:
            line = handle.readline()
            while line and not line.strip():
                line = handle.readline()
            line = line.strip()
            if line.startswith("["):  # to_json(orient="records"): the first record only
                rest = (line[1:] + handle.read(1 << 20)).lstrip()
                record, _ = json.JSONDecoder().raw_decode(rest) if rest else (None, 0)
            else:
                record = json.loads(line) if line else None
        return isinstance(record, dict) and all(c in record for c in PHOENIX_COLUMNS)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError, ImportError):
        return False
    except Exception:  # noqa: BLE001 - pyarrow's own errors for a file that is no Parquet
        return False

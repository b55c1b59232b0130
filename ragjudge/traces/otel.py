"""OpenTelemetry / OpenInference traces in, verdicts out to Phoenix as span annotations.

Source: the spans that Arize Phoenix, Arize AX and the OpenInference instrumentations
(LangChain, LlamaIndex, DSPy, Haystack, OpenAI...) record, in either of two forms:

- OTLP JSON, as the OpenTelemetry Collector's file exporter writes it: one
  ``ExportTraceServiceRequest`` per line (``resourceSpans`` -> ``scopeSpans`` -> ``spans``,
  attributes as ``{key, value: {stringValue | intValue | doubleValue | boolValue |
  arrayValue | kvlistValue}}`` lists), ids in hex as the Collector writes them or in base64 as
  protobuf's ``MessageToJson`` writes them; a pretty-printed request, or several, read too
  (``read_otlp_file``; ``is_otlp_file`` tells one by its shape);
- Phoenix's span DataFrame as ``phoenix.client.Client().spans.get_spans_dataframe()``
  returns it, or saved to Parquet or JSONL (columns ``context.span_id``,
  ``context.trace_id``, ``parent_id``, ``span_kind``, ``attributes.input.value``,
  ``attributes.retrieval.documents``...; ``read_phoenix_frame``, ``read_phoenix_file``,
  ``is_phoenix_frame``, ``is_phoenix_file``).

A file, a folder of files (searched recursively: the Collector's rotated files), a glob, or
``-`` (stdin) is read as one set of spans: a trace split across files is one trace, and a span
read twice (the same trace and span id: an export retried) counts once, its first copy, as
Phoenix keeps the first copy of a span id.

Both give the same table for the same traces: the rows of ``ragjudge.traces.spans`` (its
``COLUMNS``, the MLflow reader's too), one per top-level span whose
``openinference.span.kind`` is ``RETRIEVER``, a trace without one as one row skipped with
``no retriever span``; traces ordered by their first span's start time, then trace id. Cells:

- ``request``: the retriever span's ``input.value`` (the query it was given), else the root
  span's (``one_value``: a JSON object of one key gives its value);
- ``context``: the retriever span's ``retrieval.documents.N.document.*`` as passage dicts
  ``{content, doc_uri, id, score, metadata}`` (``ragjudge.records.normalise_context`` reads
  them: ``metadata`` the document's metadata as JSON text, ``doc_uri`` taken from it
  (``doc_uri``, else ``source`` as LangChain writes it), ``score`` a float); no documents is
  ``[]`` (judged "no"), documents without text too (with a note), documents in a shape not read a ``span_error``;
- ``response``: the root span's ``output.value``;
- ``input.value``/``output.value`` whose ``*.mime_type`` is ``application/json`` are decoded;
- ``expected_facts``/``expected_response``: from the attributes the caller names (OpenInference
  has no convention for them; default none: reference-free rows), looked up on the root span,
  then on the other spans by start time; a dotted name reaches into a JSON attribute
  (``metadata.expected_facts`` reads key ``expected_facts`` of the ``metadata`` attribute);
  a Phoenix column name (``attributes.metadata``) is taken as the attribute's name;
- ``trace_state``: ``ERROR`` when the root span's status is an error (its rows are skipped,
  as MLflow's errored traces are), else ``OK``.

Sink: ``log_annotations`` sends each verdict of a scored table to Phoenix through its own
client (``arize-phoenix-client``): span-level metrics (sufficiency) as span annotations on
their retriever span, the others (completeness) once per trace as trace annotations; name the
metric's, label ``yes``/``no`` (sufficiency) or none, score (1/0, or 1..5), the rationale as
explanation, annotator kind ``LLM``, identifier ``ragjudge``: Phoenix keeps one annotation per
(span, name, identifier) and updates it in place, so a re-run replaces and never duplicates,
and a person's annotation of the same name (no identifier) is left alone. ``write_annotations``
writes the same annotations as the tables ``Spans.log_span_annotations_dataframe`` and
``Traces.log_trace_annotations_dataframe`` accept (``annotation_frames``).

Errors (``ragjudge.errors``, exit 2): ``InputError`` for an OTLP file that holds no span, for
spans in another convention than OpenInference (it names the attribute keys found, e.g.
``gen_ai.*``, ``traceloop.*``), for a DataFrame or file of neither shape, and for a Phoenix
that cannot be reached; ``ConfigError`` for no Phoenix endpoint and for Phoenix's client not
installed. Reading needs no OpenTelemetry package (plain JSON and pandas); the sink needs the
``[phoenix]`` extra.

Why it is over 500 lines: two encodings of the same spans (OTLP JSON, Phoenix's span frame)
are read into one span model here, and the Phoenix sink writes the inverse of those rows; the
OpenInference attribute names, ids and Phoenix's upsert key are then defined once, in one place.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ragjudge.errors import ConfigError, InputError
from ragjudge.traces.spans import COLUMNS, NOTES, SpanView, TraceView, invalid_id, one_value, top_level_retrievers, trace_rows
from ragjudge.types import clean

SPAN_KIND = "openinference.span.kind"
DOCUMENTS = "retrieval.documents"
INSTALL_PHOENIX = 'pip install ".[phoenix]" in a ragjudge checkout'
ENDPOINT_ENV = "PHOENIX_COLLECTOR_ENDPOINT"
ENDPOINT_HINT = f"pass --phoenix-endpoint URL or set {ENDPOINT_ENV} (e.g. http://localhost:6006)"
SPAN_METRICS = ("sufficiency",)  # judged per retriever span; the others once per trace
IDENTIFIER = "ragjudge"  # Phoenix's upsert key (span or trace, name, identifier): a re-run updates
ANNOTATOR_KIND = "LLM"
PHOENIX_COLUMNS = ("context.span_id", "context.trace_id")  # how a Phoenix span DataFrame is told
_HEX = re.compile(r"[0-9a-fA-F]+")


# -- one span, whatever its source -------------------------------------------------------------
@dataclass
class _Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int  # ns since the epoch
    status: str  # OK, ERROR, UNSET
    attributes: dict[str, Any] = field(default_factory=dict)  # flat keys, decoded values


def _id(value: Any, size: int) -> str | None:
    """A trace (``size`` 16 bytes) or span (8) id as lower-case hex: hex as the Collector and
    Phoenix write it, or base64 as protobuf's JSON mapping writes bytes. Empty or OpenTelemetry's
    invalid id (all zeros, in either form: ``spans.invalid_id``): None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():  # a numeric id pandas widened to float (a column with a null): 1.0 is 1
        value = int(value)
    text = str(value).strip()
    if invalid_id(text):  # Phoenix's DataFrame writes a root's parent_id as 'None'; some exporters all zeros (wandb/weave#7126)
        return None
    if len(text) == 2 * size and _HEX.fullmatch(text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return raw.hex()
    return text.lower()  # another form: kept as written, compared as written


def _any_value(value: Any) -> Any:
    """An OTLP JSON ``AnyValue`` -> a Python value (intValue is a string in JSON)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv.get("key"): _any_value(kv.get("value")) for kv in (value["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _status(code: Any) -> str:
    text = str(code or "").upper()
    if text in ("2", "STATUS_CODE_ERROR", "ERROR"):
        return "ERROR"
    if text in ("1", "STATUS_CODE_OK", "OK"):
        return "OK"
    return "UNSET"


# -- OTLP JSON ---------------------------------------------------------------------------------
class _DocumentError(ValueError):
    """A JSON document that cannot be decoded, with the line it starts on."""

    def __init__(self, line: int, error: json.JSONDecodeError) -> None:
        super().__init__(f"line {line}: {error.msg}")
        self.line = line
        self.error = error


def _requests(text: str) -> Iterator[tuple[str, Any]]:
    """The JSON documents of a text, one after another (one per line or pretty-printed; the
    items of a JSON array one by one), each with where it starts: ``line N``, or ``line N,
    item K of the array``. ``_DocumentError`` names the line of one that cannot be decoded
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
            raise _DocumentError(line, err) from err

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
                raise _DocumentError(lines.at(min(position, end - 1)),
                                     json.JSONDecodeError("Expecting ',' delimiter or ']'", text, min(position, end)))
        if position >= end:
            raise _DocumentError(lines.at(end - 1), json.JSONDecodeError("Expecting ']': the array is not closed", text, end))
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


def _resource_spans(document: Any) -> list[Any] | None:
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
                return _resource_spans(_first_request(json.loads(line))) is not None
            except json.JSONDecodeError:
                pass
            if not line.lstrip().startswith(("{", "[")):
                return False
            text = line + handle.read()
        found = next(_requests(text), None)
        return found is not None and _resource_spans(found[1]) is not None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return False


def _first_request(document: Any) -> Any:
    """A JSON array of requests stands for its first item."""
    return document[0] if isinstance(document, list) and document else document


def _otlp_spans(path: Path, documents: Iterable[tuple[str, Any]]) -> list[_Span]:
    """The spans of OTLP JSON requests (``(where, request)`` pairs: ``line N``...). ``InputError``
    naming the line (and the span) for a request not shaped as the OTLP/JSON encoding writes one
    (an attribute without a key, a value of the wrong type, a span without a trace or span id)."""
    spans = []
    for place, document in documents:
        where = f"{path} {place}"
        try:
            for resource in _resource_spans(document) or []:
                if not isinstance(resource, dict):
                    raise TypeError(f"a resourceSpans entry is {type(resource).__name__}, not an object")
                for scope in _list(resource.get("scopeSpans", resource.get("scope_spans")), "scopeSpans"):
                    if not isinstance(scope, dict):
                        raise TypeError(f"a scopeSpans entry is {type(scope).__name__}, not an object")
                    for raw in _list(scope.get("spans"), "spans"):
                        spans.append(_otlp_span(raw, where))
        except (AttributeError, TypeError, ValueError, KeyError) as err:  # (an InputError passes through)
            raise InputError(f"{where} is not OTLP JSON as the OTLP/JSON encoding writes it ({err}); each line should "
                             "be an ExportTraceServiceRequest as the OpenTelemetry Collector's file exporter writes it") from err
    return spans


def _list(value: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"{name} is {type(value).__name__}, not a list")
    return value


def _nanoseconds(raw: dict[str, Any]) -> int:
    value = raw.get("startTimeUnixNano", raw.get("start_time_unix_nano"))
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise ValueError(f"span {raw.get('name')!r}: startTimeUnixNano {value!r} is not a whole number of nanoseconds") from None


def _otlp_span(raw: Any, where: str) -> _Span:
    if not isinstance(raw, dict):
        raise TypeError(f"a span is {type(raw).__name__}, not an object")
    attributes = {}
    for kv in _list(raw.get("attributes"), "attributes"):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise TypeError(f"span {raw.get('name')!r} has an attribute without a key: {json.dumps(kv, default=str)[:80]}")
        try:
            attributes[kv["key"]] = _any_value(kv.get("value"))
        except (AttributeError, TypeError, ValueError) as err:
            raise ValueError(f"span {raw.get('name')!r}, attribute {kv['key']!r}: {json.dumps(kv.get('value'), default=str)[:80]} "
                             f"is not an OTLP AnyValue ({err})") from err
    status = raw.get("status")
    span = _Span(
        trace_id=_id(raw.get("traceId", raw.get("trace_id")), 16) or "",
        span_id=_id(raw.get("spanId", raw.get("span_id")), 8) or "",
        parent_id=_id(raw.get("parentSpanId", raw.get("parent_span_id")), 8),
        name=str(raw.get("name") or ""),
        start=_nanoseconds(raw),
        status=_status(status.get("code") if isinstance(status, dict) else status),
        attributes=attributes,
    )
    for value, name in ((span.trace_id, "traceId"), (span.span_id, "spanId")):
        if not value:
            raise InputError(f"{where}: span {span.name!r} has no {name}; every OTLP span carries its trace and span ids "
                             "(without them spans of different requests cannot be told apart)")
    return span


def read_otlp_file(path: str | os.PathLike[str], expected_facts: str | None = None,
                   expected_response: str | None = None) -> Any:
    """OTLP JSON (one ``ExportTraceServiceRequest`` per line, as the Collector's file exporter
    writes it; pretty-printed ones, or a JSON array of them, too) -> the rows table (module
    docstring). ``path``: a file, a folder (searched recursively: the exporter's rotated files)
    or a glob of such files (``trace_files``), their spans read as one set (a trace split
    across files is one trace), or ``-`` for stdin. ``expected_facts``/``expected_response``:
    the attribute names holding them (none: reference-free). ``InputError``: a file that is not
    OTLP JSON (naming it and the line, and ``--input-format phoenix`` for a Phoenix span table),
    no span in them, no OpenInference attribute on any span (naming the keys found)."""
    files, where = trace_files(path)
    spans = [span for name, shown in files for span in _in_set(_otlp_file_spans, name, shown, len(files))]
    if not spans:
        raise InputError(f"{where} holds OTLP requests but no span: check that the exporter receives the traces "
                         "(the Collector's traces pipeline lists the file exporter) and that the application ran traced")
    return _frame(spans, where, expected_facts, expected_response)


FOLDER_HINT = ("; a folder or glob read as traces holds trace files of one kind only: move the others out, "
               "or give a glob that matches the trace files")


def _in_set(read: Any, name: str, shown: str, files: int) -> Any:
    """``read(name, shown)``; when the file is one of several, an ``InputError`` says that a
    folder or glob of traces holds trace files only."""
    try:
        return read(name, shown)
    except InputError as err:
        if files > 1:
            raise InputError(f"{err}{FOLDER_HINT}") from err
        raise


def _otlp_file_spans(path: str, shown: str) -> list[_Span]:
    """The spans of one OTLP JSON file (``shown``: its name in messages, ``<stdin>`` for a copy
    of stdin)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        documents = list(_requests(text))
    except UnicodeDecodeError as err:
        raise InputError(_binary(path, shown, err)) from err
    except OSError as err:
        raise InputError(f"{shown} cannot be read: {err.strerror or err}") from err
    except _DocumentError as err:
        raise InputError(_not_otlp(path, shown) or f"{shown} is not OTLP JSON (line {err.line}: {err.error.msg}); export traces "
                         "with the OpenTelemetry Collector's file exporter, one ExportTraceServiceRequest per line") from err
    other = next((place for place, d in documents if _resource_spans(d) is None), None) if documents else "line 1"
    if other is not None:
        raise InputError(_not_otlp(path, shown) or f"{shown} is not OTLP JSON ({other}): each line should be an "
                         "ExportTraceServiceRequest ({\"resourceSpans\": [...]}) as the OpenTelemetry Collector's file "
                         "exporter writes it")
    return _otlp_spans(Path(shown), documents)


def _not_otlp(path: str, shown: str) -> str | None:
    """What a file that is not OTLP JSON is instead, when it is the other trace form."""
    if is_phoenix_file(path):
        return f"{shown} is a Phoenix span table, not OTLP JSON: read it with --input-format phoenix (or with no --input-format)"
    return None


def _binary(path: str, shown: str, err: UnicodeDecodeError) -> str:
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic == b"PAR1":
        kind = "a Phoenix span table saved to Parquet" if is_phoenix_file(path) else "a table"
        return (f"{shown} is a Parquet file, not OTLP JSON: {kind} is read with "
                f"{'--input-format phoenix (or with no --input-format)' if kind != 'a table' else 'no --input-format'}")
    return f"{shown} is not OTLP JSON: it is not UTF-8 text ({err.reason} at byte {err.start})"


TRACE_FILE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".parquet", ".pq", ".csv")  # the files a folder of traces may hold


def trace_files(source: str | os.PathLike[str]) -> tuple[list[tuple[str, str]], str]:
    """The files a trace source names, each as (path to read, name in messages), and the
    source's name in messages: one file; a folder (searched recursively) or a glob (``**``
    spans folders): its files named ``TRACE_FILE_SUFFIXES`` that are not empty (the
    Collector's active file, just rotated), in sorted order (each must then be of the source's
    form: its reader says which is not); ``-``: stdin, copied to a temporary file
    (``ragjudge.io.spool_stdin``). ``InputError`` for a path or glob that matches no file, or
    a folder or glob of no such file."""
    import glob as globbing

    text = os.fspath(source)
    if text == "-":
        from ragjudge.io.formats import spool_stdin

        return [(spool_stdin(), "<stdin>")], "<stdin>"
    path = Path(text)
    if path.is_file():
        return [(text, text)], text
    if path.is_dir():
        found = [str(p) for p in path.rglob("*") if p.is_file()]
    elif any(ch in text for ch in "*?["):
        found = [p for p in globbing.glob(text, recursive=True) if Path(p).is_file()]
        if not found:
            raise InputError(f"input file not found: {text} (no file matches it)")
    else:
        raise InputError(f"input file not found: {text}")
    found = sorted(name for name in found if Path(name).suffix.lower() in TRACE_FILE_SUFFIXES and not _empty(name))
    if not found:
        raise InputError(f"{text}: no trace file ({', '.join(TRACE_FILE_SUFFIXES)}, not empty) in it")
    return [(name, name) for name in found], text


def _empty(path: str) -> bool:
    """Whether a file holds nothing but white space (read only when it is small)."""
    size = os.path.getsize(path)
    if size > 4096:
        return False
    with open(path, "rb") as handle:
        return not handle.read().strip()


# -- Phoenix's span DataFrame ------------------------------------------------------------------
def is_phoenix_frame(frame: Any) -> bool:
    """Whether ``frame`` is shaped as Phoenix's ``get_spans_dataframe()`` (columns, or the
    index, ``context.span_id`` and ``context.trace_id``)."""
    columns = set(map(str, getattr(frame, "columns", [])))
    index = getattr(frame, "index", None)
    names = set(map(str, getattr(index, "names", None) or [])) if index is not None else set()
    return all(c in columns or c in names for c in PHOENIX_COLUMNS)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not hasattr(value, "__len__") or isinstance(value, str) else False
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """A DataFrame cell as plain Python: numpy arrays (Parquet lists) to lists, numpy scalars
    to Python ones, missing to None."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, dict):
        # a key holding null dropped: a Parquet struct column gives every cell the keys of all of them
        plain = {k: _plain(v) for k, v in value.items()}
        return {k: v for k, v in plain.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return None if _missing(value) else value


def _flatten(key: str, value: Any, into: dict[str, Any]) -> None:
    """Phoenix's nested attribute values back to OpenTelemetry's flat keys: a list of dicts
    (``retrieval.documents``: ``[{"document.content": ...}]`` or ``[{"document": {...}}]``)
    becomes ``key.N.sub``; other values are kept whole."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for position, item in enumerate(value):
            for sub, inner in _dotted(item):
                into[f"{key}.{position}.{sub}"] = inner
        return
    into[key] = value


def _dotted(item: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """A document dict's keys as dotted paths, stopping at ``metadata`` (kept whole)."""
    for key, value in item.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and not path.endswith("metadata"):
            yield from _dotted(value, path + ".")
        else:
            yield path, value


def _time_ns(value: Any) -> int:
    if _missing(value):
        return 0
    import pandas as pd

    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # JSONL written by pandas: epoch milliseconds
            return int(value * 1_000_000) if value < 1e14 else int(value)
        return int(pd.Timestamp(value).value)
    except (TypeError, ValueError):
        return 0


def read_phoenix_frame(frame: Any, expected_facts: str | None = None, expected_response: str | None = None,
                       where: str = "this DataFrame") -> Any:
    """Phoenix's span DataFrame (``get_spans_dataframe()``, or one read back from Parquet or
    JSONL) -> the rows table (module docstring). ``expected_facts``/``expected_response``:
    attribute (or ``attributes.*`` column) names. ``InputError`` for a DataFrame of another
    shape, one with no span, and spans with no OpenInference attribute."""
    spans = _phoenix_spans(frame, where)
    if not spans:
        raise InputError(f"{where} holds no span: query Phoenix for the project's spans (get_spans_dataframe(project_identifier=...))")
    return _frame(spans, where, expected_facts, expected_response, phoenix=True)


def _phoenix_spans(frame: Any, where: str) -> list[_Span]:
    if not is_phoenix_frame(frame):
        raise InputError(f"{where} is not a Phoenix span DataFrame (no {' / '.join(PHOENIX_COLUMNS)} columns); "
                         "pass what phoenix.client.Client().spans.get_spans_dataframe() returns, or a table of rows")
    frame = frame.reset_index() if any(c not in frame.columns for c in PHOENIX_COLUMNS) else frame
    spans = []
    for number, record in enumerate(frame.to_dict("records"), 1):
        attributes: dict[str, Any] = {}
        for column, value in record.items():
            column = str(column)
            if column.startswith("attributes."):
                value = _plain(value)
                if value is not None:
                    _flatten(column[len("attributes."):], value, attributes)
        kind = _plain(record.get("span_kind"))
        if kind and str(kind).upper() != "UNKNOWN" and SPAN_KIND not in attributes:  # UNKNOWN: Phoenix's word for none
            attributes[SPAN_KIND] = kind
        spans.append(_Span(
            trace_id=_id(_plain(record.get("context.trace_id")), 16) or "",
            span_id=_id(_plain(record.get("context.span_id")), 8) or "",
            parent_id=_id(_plain(record.get("parent_id")), 8),
            name=str(_plain(record.get("name")) or ""),
            start=_time_ns(record.get("start_time")),
            status=_status(_plain(record.get("status_code"))),
            attributes=attributes,
        ))
        for value, column in ((spans[-1].trace_id, "context.trace_id"), (spans[-1].span_id, "context.span_id")):
            if not value:
                raise InputError(f"{where} row {number}: span {spans[-1].name!r} has no {column}; every span carries its trace "
                                 "and span ids (without them spans of different traces cannot be told apart)")
    return spans


def read_phoenix_file(path: str | os.PathLike[str], expected_facts: str | None = None,
                      expected_response: str | None = None) -> Any:
    """A Phoenix span DataFrame saved to Parquet (``.parquet``) or JSON (one record per line,
    ``to_json(orient="records", lines=True)``, or a JSON array of records, told by its first
    character whatever the suffix) -> the rows table (``read_phoenix_frame``). ``path``: a
    file, a folder or glob of them (their spans read as one set), or ``-`` for stdin (JSON)."""
    files, where = trace_files(path)
    spans = [span for name, shown in files for span in _in_set(_phoenix_file_spans, name, shown, len(files))]
    if not spans:
        raise InputError(f"{where} holds no span: query Phoenix for the project's spans (get_spans_dataframe(project_identifier=...))")
    return _frame(spans, where, expected_facts, expected_response, phoenix=True)


def _phoenix_file_spans(path: str, shown: str) -> list[_Span]:
    frame = _phoenix_table(path, shown)
    if not is_phoenix_frame(frame) and is_otlp_file(path):
        raise InputError(f"{shown} is OTLP JSON, not a Phoenix span table: read it with --input-format otlp (or with no --input-format)")
    return _phoenix_spans(frame, shown)


def _is_parquet(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"PAR1"


def _phoenix_table(path: str, shown: str) -> Any:
    import pandas as pd

    try:
        if _is_parquet(path):
            import pyarrow.parquet as pq

            # as Python values: pandas would widen a struct's int fields to float where one is null;
            # the columns named even with no row, so a zero-row table is "no span", not "not Phoenix"
            table = pq.read_table(path)
            return pd.DataFrame(table.to_pylist(), columns=table.column_names)
        with open(path, encoding="utf-8-sig") as handle:  # a JSON array of records, else one record per line
            head = handle.read(256).lstrip()[:1]
        # dtype=False: ids made of digits stay text ('0123...' is not 123..., a long one is not rounded)
        return pd.read_json(path, lines=head != "[", convert_dates=False, dtype=False)
    except (OSError, ValueError) as err:
        raise InputError(f"{shown} cannot be read as a Phoenix span table: {err}") from err
    except Exception as err:  # noqa: BLE001 - pyarrow's own errors for a file that is no Parquet
        raise InputError(f"{shown} cannot be read as a Phoenix span table: {err}") from err


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
        if _is_parquet(str(path)):
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


def read_otlp_source(source: Any, options: Any) -> Any:
    """``read_otlp_file`` with a run's ``ragjudge.traces.TraceOptions`` (the hook of
    ``ragjudge.traces.open_source``: ``ragjudge score traces.json``, ``--input-format otlp``):
    ``options.expected_facts``/``expected_response`` name the attributes."""
    return read_otlp_file(source, options.expected_facts, options.expected_response)


def read_phoenix_source(source: Any, options: Any) -> Any:
    """A saved Phoenix span table (path) or a Phoenix span DataFrame with a run's
    ``TraceOptions`` (the hook of ``open_source``: ``ragjudge score spans.parquet``,
    ``--input-format phoenix``)."""
    if isinstance(source, (str, os.PathLike)):
        return read_phoenix_file(source, options.expected_facts, options.expected_response)
    return read_phoenix_frame(source, options.expected_facts, options.expected_response)


# -- a Phoenix project, read through Phoenix's client ----------------------------------------------
PROJECT_PREFIX = "phoenix:"
TRACE_IDS_PER_CALL = 50  # trace ids asked for in one get_spans call (a URL's query string stays short)


def _v1_span(raw: dict[str, Any]) -> _Span:
    """A span as Phoenix's REST API gives it (``v1.Span``: ``context``, ``parent_id``, ``span_kind``,
    flat ``attributes``) as the readers' ``_Span``."""
    context = raw.get("context") or {}
    attributes = dict(raw.get("attributes") or {})
    if raw.get("span_kind") and SPAN_KIND not in attributes:
        attributes[SPAN_KIND] = raw["span_kind"]
    start = raw.get("start_time")
    try:
        import pandas as pd

        nanoseconds = int(pd.Timestamp(start).value) if start else 0
    except (TypeError, ValueError):
        nanoseconds = 0
    return _Span(trace_id=_id(context.get("trace_id"), 16) or "", span_id=_id(context.get("span_id"), 8) or "",
                 parent_id=_id(raw.get("parent_id"), 8), name=str(raw.get("name") or ""), start=nanoseconds,
                 status=_status(raw.get("status_code")), attributes=attributes)


def read_phoenix_project(source: str, options: Any) -> Any:
    """``ragjudge score phoenix:PROJECT``: every span of the Phoenix project (name or id) at
    ``--phoenix-endpoint`` (else ``PHOENIX_COLLECTOR_ENDPOINT``), read through Phoenix's client
    page by page (``spans.get_spans``, its cursor followed to the end: no silent limit, where
    ``get_spans_dataframe`` stops at 1,000), then whole traces: a trace with a span in the time
    window (``options.extra["start_time"]``/``["end_time"]``, ISO 8601) or among the trace ids
    asked for (``options.extra["trace_ids"]``) is read with all its spans, so no row is a half
    trace. Rows as for an OTLP file. ``InputError`` for a server that does not answer or a
    project it does not have; ``ConfigError`` without Phoenix's client (the ``[phoenix]`` extra)."""
    project = source[len(PROJECT_PREFIX):] if source.startswith(PROJECT_PREFIX) else source
    if not project:
        raise ConfigError("phoenix:PROJECT needs the project's name or id, e.g. phoenix:default")
    extra = dict(getattr(options, "extra", None) or {})
    url = endpoint_or_fail(extra.get("endpoint"))
    client = check_endpoint(url)
    start, end = _when(extra.get("start_time"), "--phoenix-start"), _when(extra.get("end_time"), "--phoenix-end")
    asked = [str(t) for t in extra.get("trace_ids") or []]
    try:
        found = _all_spans(client, project, start_time=start, end_time=end, trace_ids=asked or None)
        traces = sorted({(_id(s.get("context", {}).get("trace_id"), 16) or "") for s in found} - {""})
        whole = [span for i in range(0, len(traces), TRACE_IDS_PER_CALL)
                 for span in _all_spans(client, project, trace_ids=traces[i:i + TRACE_IDS_PER_CALL])] if (start or end) and traces else found
    except Exception as err:  # noqa: BLE001 - httpx's status errors and the client's own: one line naming the project
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status == 404:
            raise InputError(f"Phoenix at {url} has no project {project!r}; give the name (or id) its UI shows, e.g. phoenix:default") from None
        raise InputError(f"Phoenix at {url}: reading project {project!r} failed: {str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__}") from None
    if not whole:
        raise InputError(f"Phoenix project {project!r} at {url} has no span{' in that window' if start or end or asked else ''}")
    where = f"Phoenix project {project!r}"
    return _frame([_v1_span(raw) for raw in whole], where, options.expected_facts, options.expected_response, phoenix=True)


def _when(value: Any, flag: str) -> Any:
    """An ISO 8601 time (a ``datetime`` as it is) as a timezone-aware ``datetime`` (UTC when it names none)."""
    if value is None or value == "":
        return None
    import datetime as dt

    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    try:
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{flag} {value!r}: give a time in ISO 8601, e.g. 2026-12-01T00:00:00Z") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def _all_spans(client: Any, project: str, **filters: Any) -> list[dict[str, Any]]:
    """Every span of ``project`` that ``filters`` select, page after page of Phoenix's REST API."""
    import sys

    return list(client.spans.get_spans(project_identifier=project, limit=sys.maxsize, **{k: v for k, v in filters.items() if v}))


# -- spans -> rows -----------------------------------------------------------------------------
def _decoded(attributes: dict[str, Any], which: str) -> Any:
    """``input.value``/``output.value``, decoded from JSON when its ``mime_type`` says so."""
    value = attributes.get(f"{which}.value")
    mime = str(attributes.get(f"{which}.mime_type") or "").lower()
    if isinstance(value, str) and "json" in mime:
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _metadata(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {"metadata": value}
    if not isinstance(value, dict):
        return None
    # keys holding null dropped: a Parquet struct column gives every row the keys of all
    return {k: v for k, v in value.items() if v is not None} or None


def _documents(attributes: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """``retrieval.documents.N.document.*`` -> (passage dicts in N order, where the span's
    ``retrieval.documents`` attributes are in a shape not read: a string, a list of lists, ...:
    the first such key and its value, shortened; else None)."""
    found: dict[int, dict[str, Any]] = {}
    unread = None
    prefix = DOCUMENTS + "."
    for key, value in attributes.items():
        if key != DOCUMENTS and not key.startswith(prefix):
            continue
        position, _, rest = key[len(prefix):].partition(".") if key != DOCUMENTS else ("", "", "")
        if position.isdigit() and rest.startswith("document."):
            found.setdefault(int(position), {})[rest[len("document."):]] = value
        elif unread is None and value is not None and not (hasattr(value, "__len__") and len(value) == 0):
            # (an empty list is no documents: the retriever found nothing, judged "no")
            unread = f"{key} = {json.dumps(value, ensure_ascii=False, default=str)[:80]}"
    passages = []
    for position in sorted(found):
        doc = found[position]
        metadata = _metadata(doc.get("metadata"))
        doc_uri = None
        if metadata:
            doc_uri = metadata.get("doc_uri", metadata.get("source"))
        try:
            score = None if doc.get("score") is None else float(doc["score"])
        except (TypeError, ValueError):  # a score that is no number: not the passage's fault
            score = None
        passages.append({
            "content": doc.get("content"),
            "doc_uri": None if doc_uri is None else str(doc_uri),
            "id": None if doc.get("id") is None else str(doc["id"]),
            "score": score,
            "metadata": None if metadata is None else json.dumps(metadata, ensure_ascii=False, sort_keys=True, default=str),
        })
    return passages, unread


def _lookup(spans: list[_Span], name: str | None) -> Any:
    """The value of attribute ``name`` in a trace (root span first, then by start time); a
    dotted name reaches into a JSON (or dict) attribute. None when no span has it."""
    if not name:
        return None
    if name.startswith("attributes."):
        name = name[len("attributes."):]
    ordered = sorted(spans, key=lambda s: (s.parent_id is not None, s.start))
    for span in ordered:
        if name in span.attributes:
            value = span.attributes[name]
            return json.loads(value) if isinstance(value, str) and value.lstrip().startswith(("[", "{")) \
                and _json_ok(value) else value
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            head, rest = ".".join(parts[:cut]), parts[cut:]
            if head not in span.attributes:
                continue
            value = span.attributes[head]
            if isinstance(value, str) and _json_ok(value):
                value = json.loads(value)
            for part in rest:
                value = value.get(part) if isinstance(value, dict) else None
            if value is not None:
                return value
    return None


def _json_ok(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except (json.JSONDecodeError, TypeError):
        return False


def _other_convention(spans: list[_Span], where: str, phoenix: bool = False) -> InputError:
    keys = sorted({k for s in spans for k in s.attributes})
    if phoenix and not keys:  # no attributes.* column at all: a table of rows with id columns of these names
        return InputError(f"{where} has the columns {' and '.join(PHOENIX_COLUMNS)} but no attributes.* column, so it is "
                          "read as Phoenix spans without any attribute; a table of evaluation rows is read as a table with "
                          "--input-format jsonl, csv or parquet")
    families = sorted({k.split(".", 1)[0] + ".*" if "." in k else k for k in keys})
    return InputError(
        f"{where}: no span has an {SPAN_KIND} attribute, so these are not OpenInference spans; attributes found: "
        f"{', '.join(families[:12]) or '(none)'} (e.g. {', '.join(keys[:8]) or 'none'}). Instrument the application "
        "with OpenInference (openinference-instrumentation-langchain, -llama-index, ... or Phoenix's register()), "
        "or export from Phoenix, which records its spans so")


def _frame(spans: list[_Span], where: str, expected_facts: str | None, expected_response: str | None,
           phoenix: bool = False) -> Any:
    import pandas as pd

    if not any(SPAN_KIND in s.attributes for s in spans):
        raise _other_convention(spans, where, phoenix)
    traces: dict[str, list[_Span]] = {}
    read: set[tuple[str, str]] = set()
    twice = 0
    for span in spans:
        if (span.trace_id, span.span_id) in read:  # a span exported twice: the first copy, as Phoenix keeps it
            twice += 1
            continue
        read.add((span.trace_id, span.span_id))
        span.attributes = clean(span.attributes)  # an unpaired surrogate escape becomes U+FFFD, as in a table
        traces.setdefault(span.trace_id, []).append(span)
    order = sorted(traces, key=lambda t: (min(s.start for s in traces[t]), t))
    rows: list[dict[str, Any]] = []
    textless: list[str] = []  # notes: retrievers whose documents hold no text, judged "no"
    found_in = {"expected_facts": False, "expected_response": False}  # whether any trace has the attribute named
    for trace_id in order:
        members = sorted(traces[trace_id], key=lambda s: (s.start, s.span_id))
        views: list[SpanView] = []
        documents: dict[str, Any] = {}
        queries: dict[str, Any] = {}
        unread_documents: dict[str, str | None] = {}
        for span in members:
            kind = str(span.attributes.get(SPAN_KIND) or "").upper() or None
            outputs = _decoded(span.attributes, "output")
            if kind == "RETRIEVER":
                documents[span.span_id], unread_documents[span.span_id] = _documents(span.attributes)
                queries[span.span_id] = _decoded(span.attributes, "input")
                outputs = documents[span.span_id]
            views.append(SpanView(span.span_id, span.parent_id, span.name, kind, _decoded(span.attributes, "input"),
                                  outputs, span.start))
        expectations = {}
        for key, name in (("expected_facts", expected_facts), ("expected_response", expected_response)):
            value = _lookup(members, name)
            if value is not None:
                expectations[key] = value
                found_in[key] = True
        view = TraceView(trace_id, "OK", views, expectations)
        root = next((s for s in members if s.span_id == (view.root.span_id if view.root else None)), None)
        view.state = "ERROR" if root is not None and root.status == "ERROR" else "OK"
        top = {s.span_id for s in top_level_retrievers(view)}
        for row in trace_rows(view, textless):
            span_id = row["span_id"]
            if span_id in top:
                query = one_value(queries.get(span_id))
                if query is not None:
                    row["request"] = query
                if row["span_error"] is None:
                    found = documents[span_id]
                    row["context"] = [d for d in found if isinstance(d["content"], str) and d["content"].strip()]
                    unread = unread_documents.get(span_id)
                    if unread and not row["context"]:
                        row["context"] = None
                        row["span_error"] = (f"retriever span {row['span_name']!r} ({span_id}): its documents are not in a shape "
                                             f"ragjudge reads ({unread}); OpenInference writes them as retrieval.documents.N."
                                             "document.content (Phoenix: a list of {\"document.content\": ...} objects)")
                    elif found and not row["context"]:  # documents, none of them text: nothing readable retrieved, "no" (as MLflow)
                        kinds = sorted({type(d["content"]).__name__ for d in found})
                        row["context"] = []
                        textless.append(f"note: retriever span {row['span_name']!r} ({span_id}): none of its {len(found)} documents "
                                        f"has text content (document.content is {', '.join(kinds)}); judged as a retrieval that "
                                        "found nothing (\"no\"); OpenInference writes each document's text as a string in "
                                        "retrieval.documents.N.document.content")
            rows.append(row)
    for key, name in (("expected_facts", expected_facts), ("expected_response", expected_response)):
        if name and not found_in[key]:  # a name no span has is a typo far more often than a reference-free run
            flag = "--" + key.replace("_", "-") + "-attribute"
            keys = sorted({k for span in spans for k in span.attributes if not k.startswith((DOCUMENTS, SPAN_KIND))})
            raise InputError(f"{flag} {name}: no span of any trace in {where} has that attribute (attributes found: "
                             f"{', '.join(keys[:12]) or '(none)'}); name one of them (a dotted name reaches into a JSON attribute, "
                             f"e.g. metadata.{key}), or leave {flag} out for reference-free judging")
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["trace_first_row"] = frame["trace_first_row"].astype(bool)
    frame.attrs[NOTES] = [*([f"note: {twice} span(s) were read more than once (the same trace and span id); each is judged and "
                             "annotated once, its first copy"] if twice else []), *textless[:20],
                          *([f"note: and {len(textless) - 20} more such spans"] if len(textless) > 20 else [])]
    return frame


def read_traces(source: Any, expected_facts: str | None = None, expected_response: str | None = None) -> Any:
    """Any OpenInference trace source -> the rows table: a path to an OTLP JSON file or to a
    saved Phoenix span table (``.parquet``/``.jsonl``), or a Phoenix span DataFrame."""
    if isinstance(source, (str, os.PathLike)):
        if is_otlp_file(source):
            return read_otlp_file(source, expected_facts, expected_response)
        return read_phoenix_file(source, expected_facts, expected_response)
    return read_phoenix_frame(source, expected_facts, expected_response)


# -- verdicts -> annotations -------------------------------------------------------------------
def endpoint_or_fail(endpoint: str | None = None) -> str:
    """``endpoint``, else ``PHOENIX_COLLECTOR_ENDPOINT``, as Phoenix's base URL (a trailing
    ``/v1/traces``, the OTLP collector path, is dropped); ``ConfigError`` naming the fix when
    there is none."""
    url = endpoint or os.environ.get(ENDPOINT_ENV)
    if not url:
        raise ConfigError(f"logging annotations to Phoenix needs its address: {ENDPOINT_HINT}")
    url = url.rstrip("/")
    if url.endswith("/v1/traces"):
        url = url[: -len("/v1/traces")]
    return url


def _cell(row: dict[str, Any], key: str) -> Any:
    value = row.get(key)
    if isinstance(value, (str, bool, dict)):
        return value
    return _plain(value)


def _metrics(columns: Iterable[Any]) -> list[str]:
    columns = [str(c) for c in columns]
    return [c[: -len("_status")] for c in columns if c.endswith("_status") and f"{c[: -len('_status')]}_score" in columns]


def _annotation(row: dict[str, Any], metric: str, model: str | None) -> dict[str, Any] | None:
    """One verdict as Phoenix's annotation fields (name, label, score, explanation,
    metadata, identifier, annotator_kind), or None for a skipped row."""
    status = _cell(row, f"{metric}_status")
    if status not in ("ok", "error"):
        return None
    missing = _cell(row, f"{metric}_missing")
    metadata = {
        "source": IDENTIFIER,
        "judge_model": str(model or _cell(row, "judge_model") or ""),
        "mode": str(_cell(row, f"{metric}_mode") or ""),
        "missing": json.dumps(list(missing) if missing is not None else [], ensure_ascii=False),
        "status": str(status),
    }
    if status == "error":
        return {"name": metric, "label": "error", "score": None,
                "explanation": str(_cell(row, f"{metric}_error") or "no verdict"), "metadata": metadata,
                "identifier": IDENTIFIER, "annotator_kind": ANNOTATOR_KIND}
    score = float(_cell(row, f"{metric}_score"))
    label = ("yes" if score >= 0.5 else "no") if metric == "sufficiency" else None
    return {"name": metric, "label": label, "score": score, "explanation": str(_cell(row, f"{metric}_rationale") or "") or None,
            "metadata": metadata, "identifier": IDENTIFIER, "annotator_kind": ANNOTATOR_KIND}


def annotation_frames(scored: Any, metrics: Iterable[str] | None = None, span_metrics: Iterable[str] = SPAN_METRICS,
                      model: str | None = None, errors: bool = True) -> tuple[Any, Any]:
    """A scored rows table -> (span annotations, trace annotations), two DataFrames in the
    shape Phoenix's ``log_span_annotations_dataframe`` / ``log_trace_annotations_dataframe``
    accept: ``span_id`` (or ``trace_id``), ``name``, ``annotator_kind`` (``LLM``), ``label``,
    ``score``, ``explanation``, ``metadata`` (``source``, ``judge_model``, ``mode``,
    ``missing`` as JSON, ``status``), ``identifier`` (``ragjudge``). ``span_metrics`` go on
    their row's retriever span; the others once per trace (the row flagged
    ``trace_first_row``). Skipped rows give nothing; an error row gives label ``error`` with
    the reason as explanation and no score (``errors=False``: nothing).
    ``InputError`` for a table without ``trace_id``/``span_id``."""
    import pandas as pd

    if "trace_id" not in scored.columns or "span_id" not in scored.columns:
        raise InputError("this table has no trace_id/span_id columns: annotations go to Phoenix spans, so score rows "
                         "read from traces (ragjudge.traces.otel.read_traces)")
    chosen = list(metrics) if metrics is not None else _metrics(scored.columns)
    on_span = set(span_metrics)
    span_rows, trace_rows_ = [], []
    for row in scored.to_dict("records"):
        for metric in chosen:
            if metric in on_span:
                span_id = _cell(row, "span_id")
                found = _annotation(row, metric, model) if span_id else None
                if found and (errors or found["label"] != "error"):
                    span_rows.append({"span_id": str(span_id), **found})
            else:
                first = _cell(row, "trace_first_row")
                trace_id = _cell(row, "trace_id")
                if trace_id and (first is None or bool(first)):
                    found = _annotation(row, metric, model)
                    if found and (errors or found["label"] != "error"):
                        trace_rows_.append({"trace_id": str(trace_id), **found})
    fields = ["name", "annotator_kind", "label", "score", "explanation", "metadata", "identifier"]
    # a span (or trace) the table holds twice is one annotation of each name: its first row's
    spans = pd.DataFrame(span_rows, columns=["span_id", *fields]).astype({"score": object}).drop_duplicates(["span_id", "name"])
    traces = pd.DataFrame(trace_rows_, columns=["trace_id", *fields]).astype({"score": object}).drop_duplicates(["trace_id", "name"])
    return spans.reset_index(drop=True), traces.reset_index(drop=True)


def trace_annotations_path(path: str | os.PathLike[str]) -> Path:
    """Where ``write_annotations`` puts the trace annotations beside ``path``:
    ``NAME.traces.SUFFIX``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.traces{path.suffix}")


def _write(frame: Any, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    elif suffix in (".jsonl", ".ndjson"):
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    elif suffix == ".csv":
        out = frame.copy()
        out["metadata"] = out["metadata"].map(lambda m: json.dumps(m, ensure_ascii=False))
        out.to_csv(path, index=False)
    else:
        raise ConfigError(f"the annotations file {path} should end in .parquet, .jsonl or .csv")


def write_annotations(scored: Any, path: str | os.PathLike[str], metrics: Iterable[str] | None = None,
                      span_metrics: Iterable[str] = SPAN_METRICS, model: str | None = None) -> dict[str, Any]:
    """Write the annotations of ``scored`` (``annotation_frames``) for Phoenix: span
    annotations to ``path``, trace annotations (when there are any) to
    ``trace_annotations_path(path)``; ``.parquet`` or ``.jsonl`` (``.csv``: metadata as JSON
    text). Load them with ``Client().spans.log_span_annotations_dataframe(dataframe=...)`` and
    ``Client().traces.log_trace_annotations_dataframe(dataframe=...)``. Error rows are left
    out (``log_annotations`` sends them, label ``error`` without a score): a file's score
    column reads a missing score back as NaN, which Phoenix's client cannot send. Returns
    ``{"spans": N, "traces": N, "errors_left_out": N, "paths": [...]}``."""
    spans, traces = annotation_frames(scored, metrics, span_metrics, model, errors=False)
    every = annotation_frames(scored, metrics, span_metrics, model)
    path = Path(path)
    written = [path]
    _write(spans, path)
    if len(traces):
        written.append(trace_annotations_path(path))
        _write(traces, written[-1])
    left_out = len(every[0]) + len(every[1]) - len(spans) - len(traces)
    return {"spans": len(spans), "traces": len(traces), "errors_left_out": left_out, "paths": [str(p) for p in written]}


@dataclass
class AnnotationLog:
    """What ``log_annotations`` did: annotations ``logged`` (new or updated in place, Phoenix
    does not say which), ``failed`` with one reason each in ``failures``."""

    logged: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"logged": self.logged, "failed": self.failed, "failures": self.failures[:20]}


def _phoenix_client(url: str) -> Any:
    try:
        from phoenix.client import Client
    except ImportError as err:
        raise ConfigError(f"logging annotations to Phoenix needs its client: {INSTALL_PHOENIX}") from err
    return Client(base_url=url)


def probe(url: str, timeout: float = 5.0) -> str | None:
    """Why Phoenix at ``url`` cannot be reached (its ``/healthz`` within ``timeout`` s), None
    when it answers."""
    import httpx

    try:
        response = httpx.get(url + "/healthz", timeout=timeout)
    except httpx.HTTPError as err:
        return (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
    if response.status_code >= 400:
        return f"HTTP {response.status_code} from {url}/healthz"
    return None


def check_endpoint(url: str, timeout: float = 5.0) -> Any:
    """Phoenix's client for the server at ``url``, checked to answer (``probe``):
    ``ConfigError`` when the client is not installed, ``InputError`` naming the fix when the
    server does not answer in ``timeout`` s. ``ragjudge score --phoenix-endpoint`` calls it
    before any judging."""
    phoenix = _phoenix_client(url)
    why = probe(url, timeout)
    if why is not None:
        raise InputError(f"Phoenix at {url} cannot be reached ({why}); start it (phoenix serve, or its container) "
                         f"or fix the address: {ENDPOINT_HINT}")
    return phoenix


def _data(frame: Any, id_key: str) -> list[dict[str, Any]]:
    """Annotation rows as Phoenix's ``SpanAnnotationData``/``TraceAnnotationData`` dicts."""
    items = []
    for row in frame.to_dict("records"):
        result = {k: row[k] for k in ("label", "score", "explanation") if not _missing(row.get(k))}
        items.append({id_key: row[id_key], "name": row["name"], "annotator_kind": row["annotator_kind"],
                      "result": result, "metadata": row["metadata"], "identifier": row["identifier"]})
    return items


def log_annotations(scored: Any, endpoint: str | None = None, metrics: Iterable[str] | None = None,
                    span_metrics: Iterable[str] = SPAN_METRICS, model: str | None = None,
                    chunk: int = 100, timeout: float = 5.0) -> AnnotationLog:
    """Send the verdicts of ``scored`` to Phoenix at ``endpoint`` (``endpoint_or_fail``) as
    annotations (``annotation_frames``) through ``phoenix.client.Client``:
    ``spans.log_span_annotations`` and ``traces.log_trace_annotations``, ``sync=True``, in
    chunks of ``chunk``. A re-run updates ragjudge's annotations in place (identifier
    ``ragjudge``). ``InputError`` naming the fix when Phoenix does not answer its health check
    in ``timeout`` s; a chunk Phoenix refuses (e.g. a span it does not hold) is counted in
    ``failed`` with the reason, never raised."""
    url = endpoint_or_fail(endpoint)
    spans, traces = annotation_frames(scored, metrics, span_metrics, model)
    phoenix = check_endpoint(url, timeout)
    result = AnnotationLog()
    for frame, id_key, send in ((spans, "span_id", lambda items: phoenix.spans.log_span_annotations(span_annotations=items, sync=True)),
                                (traces, "trace_id", lambda items: phoenix.traces.log_trace_annotations(trace_annotations=items, sync=True))):
        items = _data(frame, id_key)
        for start in range(0, len(items), chunk):
            part = items[start:start + chunk]
            try:
                send(part)
                result.logged += len(part)
            except Exception as err:  # noqa: BLE001 - a refused chunk loses no verdict: it is counted
                result.failed += len(part)
                text = getattr(getattr(err, "response", None), "text", "") or str(err)
                result.failures.append(f"{id_key}s {part[0][id_key]}..: {text.strip()[:300]}")
    return result


__all__ = ["AnnotationLog", "COLUMNS", "annotation_frames", "check_endpoint", "endpoint_or_fail", "is_otlp_file", "is_phoenix_file",
           "is_phoenix_frame", "log_annotations", "probe", "read_otlp_file", "read_phoenix_file", "read_phoenix_frame", "read_traces",
           "trace_annotations_path", "write_annotations"]

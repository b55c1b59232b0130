"""OTLP JSON in: the spans the OpenTelemetry Collector's file exporter writes, as the rows table.

One ``ExportTraceServiceRequest`` per line (``resourceSpans`` -> ``scopeSpans`` -> ``spans``,
attributes as ``{key, value: {stringValue | intValue | doubleValue | boolValue | arrayValue |
kvlistValue}}`` lists), ids in hex as the Collector writes them or in base64 as protobuf's
``MessageToJson`` writes them; a pretty-printed request, or several, or a JSON array of them,
read too (``read_otlp_file``). Rows as ``openinference`` makes them. ``InputError`` (exit 2)
for a file that is not OTLP JSON (naming the line, and the other form when it is a Phoenix
span table) and for one that holds no span. Needs no OpenTelemetry package.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from ragjudge.errors import InputError
from ragjudge.traces.forms import (
    DocumentError,
    is_otlp_file,
    is_phoenix_file,
    json_documents,
    resource_spans,
)
from ragjudge.traces.openinference import (
    Span,
    hex_id,
    read_in_set,
    rows_of_spans,
    status_of,
    trace_files,
)


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


def _otlp_spans(path: Path, documents: Iterable[tuple[str, Any]]) -> list[Span]:
    """The spans of OTLP JSON requests (``(where, request)`` pairs: ``line N``...). ``InputError``
    naming the line (and the span) for a request not shaped as the OTLP/JSON encoding writes one
    (an attribute without a key, a value of the wrong type, a span without a trace or span id)."""
    spans = []
    for place, document in documents:
        where = f"{path} {place}"
        try:
            for resource in resource_spans(document) or []:
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


def _otlp_span(raw: Any, where: str) -> Span:
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
    span = Span(
        trace_id=hex_id(raw.get("traceId", raw.get("trace_id")), 16) or "",
        span_id=hex_id(raw.get("spanId", raw.get("span_id")), 8) or "",
        parent_id=hex_id(raw.get("parentSpanId", raw.get("parent_span_id")), 8),
        name=str(raw.get("name") or ""),
        start=_nanoseconds(raw),
        status=status_of(status.get("code") if isinstance(status, dict) else status),
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
    spans = [span for name, shown in files for span in read_in_set(_otlp_file_spans, name, shown, len(files))]
    if not spans:
        raise InputError(f"{where} holds OTLP requests but no span: check that the exporter receives the traces "
                         "(the Collector's traces pipeline lists the file exporter) and that the application ran traced")
    return rows_of_spans(spans, where, expected_facts, expected_response)


def _otlp_file_spans(path: str, shown: str) -> list[Span]:
    """The spans of one OTLP JSON file (``shown``: its name in messages, ``<stdin>`` for a copy
    of stdin)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        documents = list(json_documents(text))
    except UnicodeDecodeError as err:
        raise InputError(_binary(path, shown, err)) from err
    except OSError as err:
        raise InputError(f"{shown} cannot be read: {err.strerror or err}") from err
    except DocumentError as err:
        raise InputError(_not_otlp(path, shown) or f"{shown} is not OTLP JSON (line {err.line}: {err.error.msg}); export traces "
                         "with the OpenTelemetry Collector's file exporter, one ExportTraceServiceRequest per line") from err
    other = next((place for place, d in documents if resource_spans(d) is None), None) if documents else "line 1"
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


def read_otlp_source(source: Any, options: Any) -> Any:
    """``read_otlp_file`` with a run's ``ragjudge.traces.TraceOptions`` (the hook of
    ``ragjudge.traces.open_source``: ``ragjudge score traces.json``, ``--input-format otlp``):
    ``options.expected_facts``/``expected_response`` name the attributes."""
    return read_otlp_file(source, options.expected_facts, options.expected_response)


__all__ = ["is_otlp_file", "read_otlp_file", "read_otlp_source"]  # is_otlp_file: the sniff of the otlp trace source

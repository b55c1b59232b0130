"""Arize Phoenix in: its span DataFrame, a saved span table and a live project, as the rows
table; and the connection to a Phoenix server, which the sink (``phoenix_sink``) shares.

- Phoenix's span DataFrame as ``phoenix.client.Client().spans.get_spans_dataframe()``
  returns it, or saved to Parquet or JSONL (columns ``context.span_id``,
  ``context.trace_id``, ``parent_id``, ``span_kind``, ``attributes.input.value``,
  ``attributes.retrieval.documents``...; ``read_phoenix_frame``, ``read_phoenix_file``);
- ``phoenix:PROJECT`` (``read_phoenix_project``): every span of a project, read through
  Phoenix's REST client page by page, then whole traces.

Rows as ``openinference`` makes them. ``InputError`` (exit 2) for a table of neither trace
shape and for a Phoenix that cannot be reached; ``ConfigError`` for no Phoenix endpoint and
for Phoenix's client not installed (the ``[phoenix]`` extra).
"""

from __future__ import annotations

import os
import warnings
from types import SimpleNamespace
from typing import Any, Iterator

from ragjudge.errors import ConfigError, InputError
from ragjudge.traces.forms import (
    PHOENIX_COLUMNS,
    is_otlp_file,
    is_parquet,
    is_phoenix_file,
    is_phoenix_frame,
)
from ragjudge.traces.spans import NOTES
from ragjudge.traces.openinference import (
    SPAN_KIND,
    Span,
    hex_id,
    is_missing,
    plain_value,
    read_in_set,
    rows_of_spans,
    status_of,
    trace_files,
)

INSTALL_PHOENIX = 'pip install ".[phoenix]" in a ragjudge checkout'


SPANS_DATAFRAME_LIMIT = 1000  # phoenix.client's spans.get_spans_dataframe(limit=1000): where its read stops unless told otherwise


class CutTracesWarning(UserWarning):
    """A Phoenix span table that looks cut at a limit (``read_phoenix_frame``): it holds exactly
    ``SPANS_DATAFRAME_LIMIT`` spans, or traces whose spans name a parent it does not hold."""


ENDPOINT_ENV = "PHOENIX_COLLECTOR_ENDPOINT"


ENDPOINT_HINT = f"pass --phoenix-endpoint URL or set {ENDPOINT_ENV} (e.g. http://localhost:6006)"


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
    if is_missing(value):
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
    rows = rows_of_spans(spans, where, expected_facts, expected_response, phoenix=True)
    for note in _cut_notes(spans, where, len(frame)):
        warnings.warn(note, CutTracesWarning, stacklevel=2)
        rows.attrs.setdefault(NOTES, []).append(note)
    return rows


def _cut_notes(spans: list[Span], where: str, read: int | None = None) -> list[str]:
    """What says that ``spans`` (``read`` of them in one table) stop at a limit: exactly
    ``SPANS_DATAFRAME_LIMIT`` read, and traces with a span whose parent (in the same trace) is
    not among them: a trace cut in half, its rows short of the root's request and response or
    of a retriever. Empty for whole traces."""
    held = {(s.trace_id, s.span_id) for s in spans}
    cut = {s.trace_id for s in spans if s.parent_id and (s.trace_id, s.parent_id) not in held}
    said = []
    if read == SPANS_DATAFRAME_LIMIT:
        said.append(f"{where} holds exactly {SPANS_DATAFRAME_LIMIT:,} spans, where Phoenix's get_spans_dataframe stops unless "
                    "given a limit: the project may hold more")
    if cut:
        traces = len({s.trace_id for s in spans})
        said.append(f"{len(cut)} of the {traces} traces in {where} lack a parent span of theirs: cut short, as a read stopped at a "
                    "limit leaves them (their rows may miss the request, the response or a retriever)")
    if said:
        said[-1] += ("; read the whole project: ragjudge score phoenix:PROJECT, or ragjudge.traces.otel.read_project(PROJECT, "
                     "ENDPOINT) in Python")
    return [f"note: {text}" for text in said]


def _phoenix_spans(frame: Any, where: str) -> list[Span]:
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
                value = plain_value(value)
                if value is not None:
                    _flatten(column[len("attributes."):], value, attributes)
        kind = plain_value(record.get("span_kind"))
        if kind and str(kind).upper() != "UNKNOWN" and SPAN_KIND not in attributes:  # UNKNOWN: Phoenix's word for none
            attributes[SPAN_KIND] = kind
        spans.append(Span(
            trace_id=hex_id(plain_value(record.get("context.trace_id")), 16) or "",
            span_id=hex_id(plain_value(record.get("context.span_id")), 8) or "",
            parent_id=hex_id(plain_value(record.get("parent_id")), 8),
            name=str(plain_value(record.get("name")) or ""),
            start=_time_ns(record.get("start_time")),
            status=status_of(plain_value(record.get("status_code"))),
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
    spans = [span for name, shown in files for span in read_in_set(_phoenix_file_spans, name, shown, len(files))]
    if not spans:
        raise InputError(f"{where} holds no span: query Phoenix for the project's spans (get_spans_dataframe(project_identifier=...))")
    rows = rows_of_spans(spans, where, expected_facts, expected_response, phoenix=True)
    rows.attrs.setdefault(NOTES, []).extend(_cut_notes(spans, where, len(spans)))  # said by the run, as its other notes
    return rows


def _phoenix_file_spans(path: str, shown: str) -> list[Span]:
    frame = _phoenix_table(path, shown)
    if not is_phoenix_frame(frame) and is_otlp_file(path):
        raise InputError(f"{shown} is OTLP JSON, not a Phoenix span table: read it with --input-format otlp (or with no --input-format)")
    return _phoenix_spans(frame, shown)


def _phoenix_table(path: str, shown: str) -> Any:
    import pandas as pd

    try:
        if is_parquet(path):
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


def read_phoenix_source(source: Any, options: Any) -> Any:
    """A saved Phoenix span table (path) or a Phoenix span DataFrame with a run's
    ``TraceOptions`` (the hook of ``open_source``: ``ragjudge score spans.parquet``,
    ``--input-format phoenix``)."""
    if isinstance(source, (str, os.PathLike)):
        return read_phoenix_file(source, options.expected_facts, options.expected_response)
    return read_phoenix_frame(source, options.expected_facts, options.expected_response)


PROJECT_PREFIX = "phoenix:"


TRACE_IDS_PER_CALL = 50  # trace ids asked for in one get_spans call (a URL's query string stays short)


def _v1_span(raw: dict[str, Any]) -> Span:
    """A span as Phoenix's REST API gives it (``v1.Span``: ``context``, ``parent_id``, ``span_kind``,
    flat ``attributes``) as the readers' ``Span``."""
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
    return Span(trace_id=hex_id(context.get("trace_id"), 16) or "", span_id=hex_id(context.get("span_id"), 8) or "",
                 parent_id=hex_id(raw.get("parent_id"), 8), name=str(raw.get("name") or ""), start=nanoseconds,
                 status=status_of(raw.get("status_code")), attributes=attributes)


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
    url = endpoint_or_fail(extra.get("endpoint"), f"reading {PROJECT_PREFIX}{project}")
    client = check_endpoint(url)
    start, end = _when(extra.get("start_time"), "--phoenix-start"), _when(extra.get("end_time"), "--phoenix-end")
    asked = [str(t) for t in extra.get("trace_ids") or []]
    try:
        found = _all_spans(client, project, start_time=start, end_time=end, trace_ids=asked or None)
        traces = sorted({(hex_id(s.get("context", {}).get("trace_id"), 16) or "") for s in found} - {""})
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
    return rows_of_spans([_v1_span(raw) for raw in whole], where, options.expected_facts, options.expected_response, phoenix=True)


def read_project(project: str, endpoint: str | None = None, *, start_time: Any = None, end_time: Any = None,
                 trace_ids: list[str] | None = None, expected_facts: str | None = None, expected_response: str | None = None) -> Any:
    """Every span of the Phoenix project ``project`` (its name or id) at ``endpoint`` (default:
    ``PHOENIX_COLLECTOR_ENDPOINT``) -> the rows table: what ``ragjudge score phoenix:PROJECT``
    reads (``read_phoenix_project``), for Python. Page after page to the end, where
    ``Client().spans.get_spans_dataframe(project_identifier=...)`` stops at 1,000 spans and
    cuts a trace in half; ``start_time``/``end_time`` (ISO 8601 text or ``datetime``) and
    ``trace_ids`` choose traces, each read whole. ``expected_facts``/``expected_response``:
    attribute names, as ``read_traces`` takes them. ``InputError`` for a server that does not
    answer or a project it does not hold; ``ConfigError`` without an endpoint or Phoenix's
    client (the ``[phoenix]`` extra)."""
    options = SimpleNamespace(extra={"endpoint": endpoint, "start_time": start_time, "end_time": end_time, "trace_ids": list(trace_ids or [])},
                              expected_facts=expected_facts, expected_response=expected_response)
    return read_phoenix_project(project if project.startswith(PROJECT_PREFIX) else PROJECT_PREFIX + project, options)


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


def endpoint_or_fail(endpoint: str | None = None, what: str = "logging annotations to Phoenix") -> str:
    """``endpoint``, else ``PHOENIX_COLLECTOR_ENDPOINT``, as Phoenix's base URL (a trailing
    ``/v1/traces``, the OTLP collector path, is dropped); ``ConfigError`` naming ``what`` needs
    it and the fix when there is none."""
    url = endpoint or os.environ.get(ENDPOINT_ENV)
    if not url:
        raise ConfigError(f"{what} needs Phoenix's address: {ENDPOINT_HINT}")
    url = url.rstrip("/")
    if url.endswith("/v1/traces"):
        url = url[: -len("/v1/traces")]
    return url


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


__all__ = ["CutTracesWarning", "SPANS_DATAFRAME_LIMIT", "check_endpoint", "endpoint_or_fail", "is_phoenix_file", "probe",
           "read_phoenix_file", "read_phoenix_frame", "read_phoenix_project", "read_phoenix_source", "read_project"]  # is_phoenix_file: the sniff of the phoenix trace source

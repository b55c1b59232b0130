"""Trace sources and sinks: spans -> evaluation rows (``spans``), MLflow traces in and
feedback out (``mlflow``, the ``[mlflow]`` extra: its reader and public face, with the sink in
``mlflow_sink`` and the client both use in ``mlflow_store``), OpenTelemetry / OpenInference spans in (OTLP
JSON: ``otlp``; Phoenix's span DataFrame and projects: ``phoenix``; both made rows by
``openinference``) and Phoenix annotations out (``phoenix_sink``, the ``[phoenix]`` extra); ``otel``
is their public face. Importing this package imports neither MLflow, Phoenix nor pandas.

A run reads a trace source through ``open_source``, before anything else: a source it
recognises becomes the rows table (``ragjudge.traces.spans.COLUMNS``, one row per retriever
span), which the run then scores as any DataFrame; anything else is left to the table readers.
The sources are in ``SOURCES``, one ``TraceSource`` per ``--input-format`` name; a reader of
another tracing system registers one more (``register``) with the same columns.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable
from ragjudge.errors import InputError
from ragjudge.traces.openinference import trace_files
from ragjudge.io.formats import is_many, is_stdin, spool_stdin, stdin_head


@dataclass(frozen=True)
class TraceOptions:
    """Where and which traces to read: ``tracking_uri`` (an MLflow store; else
    ``MLFLOW_TRACKING_URI``), ``filter_string`` (``search_traces``' filter), ``max_traces`` (at
    most this many traces read); ``expected_facts``/``expected_response``: the span attributes
    (or Phoenix ``attributes.*`` columns; dotted names reach into a JSON attribute) holding the
    expectations of OpenTelemetry traces (``--expected-facts-attribute``,
    ``--expected-response-attribute``; none: reference-free rows); ``judge_error_traces``
    (``--judge-error-traces``): judge the rows of traces in state ERROR, as MLflow's scorer does,
    instead of skipping them. Sources that take none of these ignore them."""

    tracking_uri: str | None = None
    filter_string: str | None = None
    max_traces: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    expected_facts: str | None = None
    expected_response: str | None = None
    judge_error_traces: bool = False  # judge traces whose state is ERROR too, as MLflow's scorer does (default: skipped)


@dataclass(frozen=True)
class TraceSource:
    """One kind of trace source. ``name``: its ``--input-format`` value (``mlflow-traces``).
    ``prefix``: a source string it takes (``mlflow:`` for ``mlflow:EXPERIMENT``), or None.
    ``module``: where ``read(source, options) -> DataFrame`` and ``sniff(path) -> bool`` (the
    file's shape is this source's; must be cheap and import nothing heavy) live, imported only
    when used. ``suffixes``: the file names ``sniff`` is asked about (lower case). ``many``:
    ``read`` also takes a folder or glob of such files, and ``-`` (stdin), as one source.
    ``marks``: byte strings, one of which the first bytes of stdin hold when it is this source
    (stdin is then copied to a file for ``sniff``)."""

    name: str
    module: str
    prefix: str | None = None
    read: str = "read_source"
    sniff: str | None = "is_trace_file"
    suffixes: tuple[str, ...] = (".json", ".jsonl", ".ndjson")
    many: bool = False
    marks: tuple[bytes, ...] = ()

    def _get(self, attr: str) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), attr)

    def open(self, source: Any, options: TraceOptions) -> Any:
        return self._get(self.read)(source, options)

    def recognises(self, path: str, any_name: bool = False) -> bool:
        """Whether the file at ``path`` is this source's (``any_name``: whatever its suffix)."""
        return self.sniff is not None and (any_name or path.lower().endswith(self.suffixes)) and self._get(self.sniff)(path)


SOURCES: dict[str, TraceSource] = {}


def register(source: TraceSource) -> None:
    """Add (or replace) a trace source, by its ``--input-format`` name."""
    SOURCES[source.name] = source


register(TraceSource("mlflow-traces", "ragjudge.traces.mlflow", prefix="mlflow:"))
# OpenTelemetry / OpenInference spans: OTLP JSON (the Collector's file exporter), Phoenix's span DataFrame saved
register(TraceSource("otlp", "ragjudge.traces.otlp", read="read_otlp_source", sniff="is_otlp_file", many=True,
                     marks=(b'"resourceSpans"', b'"resource_spans"')))
register(TraceSource("phoenix", "ragjudge.traces.phoenix", read="read_phoenix_source", sniff="is_phoenix_file",
                     suffixes=(".json", ".jsonl", ".ndjson", ".parquet", ".pq"), many=True, marks=(b'"context.span_id"',)))

# a Phoenix project read through Phoenix's client: ragjudge score phoenix:PROJECT --phoenix-endpoint URL
register(TraceSource("phoenix-project", "ragjudge.traces.phoenix", prefix="phoenix:", read="read_phoenix_project", sniff=None))

OTEL_SOURCES = ("otlp", "phoenix", "phoenix-project")  # the sources whose verdicts can go to Phoenix as span annotations


def source_kind(source: Any, input_format: str | None = None) -> TraceSource | None:
    """The trace source ``source`` is, or None for a table: ``input_format`` naming one of
    ``SOURCES`` forces it; else a string with a source's prefix (``mlflow:EXP``), else a
    file, of one of a source's ``suffixes``, whose shape that source recognises (``.json``,
    ``.jsonl``, ``.ndjson``; ``.parquet`` for Phoenix's span table: its schema only); a folder
    or glob whose first file (in sorted order) a source that reads ``many`` recognises (its
    reader then names any other file that is not of that shape); ``-``, stdin, whose first bytes
    hold one of such a source's ``marks``: stdin is then copied to a temporary file
    (``ragjudge.io.spool_stdin``) and sniffed, and a table read from that copy. Reads at most
    each file's first trace or line; imports nothing heavy."""
    if input_format in SOURCES:
        return SOURCES[input_format]
    if input_format or not isinstance(source, (str, os.PathLike)):
        return None
    text = os.fspath(source)
    for kind in SOURCES.values():
        if kind.prefix and text.startswith(kind.prefix):
            return kind
    if is_stdin(text):
        return _stdin_kind()
    if not os.path.isfile(text):
        return _many_kind(text)
    return next((kind for kind in SOURCES.values() if kind.recognises(text)), None)


def _many_kind(text: str) -> TraceSource | None:
    """The source of a folder or glob holding trace files (the first one's, in sorted order),
    or None when none of its files is one (a folder of tables)."""
    if not is_many(text):
        return None
    try:
        files, _ = trace_files(text)
    except InputError:
        return None  # nothing matches: the table readers say so
    many = [kind for kind in SOURCES.values() if kind.many]
    return next((kind for name, _ in files for kind in many if kind.recognises(name)), None)


def _stdin_kind() -> TraceSource | None:
    """The source on stdin: its first 64 KiB (``ragjudge.io.stdin_head``) hold one of a
    source's ``marks``, or start a Parquet file; stdin is then copied to a file and that
    source's sniffer has the last word."""
    head = stdin_head().removeprefix(b"\xef\xbb\xbf").lstrip()
    many = [kind for kind in SOURCES.values() if kind.many]
    if head.startswith(b"PAR1"):  # a Parquet file names its columns at its end
        marked = many
    elif head.startswith((b"{", b"[")):
        marked = [kind for kind in many if any(mark in head for mark in kind.marks)]
    else:
        return None
    if not marked:
        return None
    copy = spool_stdin()
    return next((kind for kind in marked if kind.recognises(copy, any_name=True)), None)


def open_source(source: Any, input_format: str | None = None, options: TraceOptions | None = None) -> Any:
    """The rows table of ``source`` when it is a trace source (``source_kind``), else None (a
    table: read it as one). Raises what the source raises (``InputError``/``ConfigError``,
    exit 2: a store that cannot be reached, an experiment that does not exist, a file that is
    not a trace file although ``input_format`` says so)."""
    kind = source_kind(source, input_format)
    if kind is None:
        return None
    options = options or TraceOptions()
    frame = kind.open(source, options)
    if options.judge_error_traces and len(frame):  # MLflow's scorer judges a failed request's retrieval too
        frame.loc[frame["trace_state"] == "ERROR", "trace_skip_reason"] = None
    return frame


def __getattr__(name: str) -> Any:
    """``ragjudge.traces.mlflow`` (and the other readers) imported on first use."""
    if name in ("mlflow", "mlflow_sink", "mlflow_store", "spans", "otel", "otlp", "phoenix", "phoenix_sink", "openinference", "forms"):
        return importlib.import_module(f"ragjudge.traces.{name}")
    raise AttributeError(f"module 'ragjudge.traces' has no attribute {name!r}")

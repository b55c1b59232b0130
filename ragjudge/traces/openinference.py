"""OpenInference spans, whatever their encoding, as the rows table: the span model that the
OTLP reader (``otlp``) and the Phoenix readers (``phoenix``) fill, and the rows made of it.

A file, a folder of files (searched recursively: the Collector's rotated files), a glob, or
``-`` (stdin) is read as one set of spans (``trace_files``): a trace split across files is one
trace, and a span read twice (the same trace and span id: an export retried) counts once, its
first copy, as Phoenix keeps the first copy of a span id.

Every reader gives the same table for the same traces (``rows_of_spans``): the rows of
``ragjudge.traces.spans`` (its ``COLUMNS``, the MLflow reader's too), one per top-level span whose
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

``InputError`` (exit 2) for spans in another convention than OpenInference (it names the
attribute keys found, e.g. ``gen_ai.*``, ``traceloop.*``) and for a path that names no trace file.
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
from typing import Any

from ragjudge.errors import InputError
from ragjudge.traces.forms import PHOENIX_COLUMNS
from ragjudge.traces.spans import (
    COLUMNS,
    NOTES,
    SpanView,
    TraceView,
    invalid_id,
    one_value,
    top_level_retrievers,
    trace_rows,
)
from ragjudge.types import clean
from ragjudge.io.formats import is_stdin, spool_stdin

SPAN_KIND = "openinference.span.kind"


DOCUMENTS = "retrieval.documents"


_HEX = re.compile(r"[0-9a-fA-F]+")


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int  # ns since the epoch
    status: str  # OK, ERROR, UNSET
    attributes: dict[str, Any] = field(default_factory=dict)  # flat keys, decoded values


def hex_id(value: Any, size: int) -> str | None:
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


def status_of(code: Any) -> str:
    text = str(code or "").upper()
    if text in ("2", "STATUS_CODE_ERROR", "ERROR"):
        return "ERROR"
    if text in ("1", "STATUS_CODE_OK", "OK"):
        return "OK"
    return "UNSET"


FOLDER_HINT = ("; a folder or glob read as traces holds trace files of one kind only: move the others out, "
               "or give a glob that matches the trace files")


def read_in_set(read: Any, name: str, shown: str, files: int) -> Any:
    """``read(name, shown)``; when the file is one of several, an ``InputError`` says that a
    folder or glob of traces holds trace files only."""
    try:
        return read(name, shown)
    except InputError as err:
        if files > 1:
            raise InputError(f"{err}{FOLDER_HINT}") from err
        raise


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
    if is_stdin(text):
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


def is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not hasattr(value, "__len__") or isinstance(value, str) else False
    except (TypeError, ValueError):
        return False


def plain_value(value: Any) -> Any:
    """A DataFrame cell as plain Python: numpy arrays (Parquet lists) to lists, numpy scalars
    to Python ones, missing to None."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, dict):
        # a key holding null dropped: a Parquet struct column gives every cell the keys of all of them
        plain = {k: plain_value(v) for k, v in value.items()}
        return {k: v for k, v in plain.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return None if is_missing(value) else value


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


def _lookup(spans: list[Span], name: str | None) -> Any:
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


def _other_convention(spans: list[Span], where: str, phoenix: bool = False) -> InputError:
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


def rows_of_spans(spans: list[Span], where: str, expected_facts: str | None, expected_response: str | None,
           phoenix: bool = False) -> Any:
    import pandas as pd

    if not any(SPAN_KIND in s.attributes for s in spans):
        raise _other_convention(spans, where, phoenix)
    traces: dict[str, list[Span]] = {}
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

"""Traces -> evaluation rows, whatever system recorded them: one row per retriever span.

A trace source (``ragjudge.traces.mlflow`` today, an OpenTelemetry reader later) turns each of
its traces into a ``TraceView`` (its id, state, spans and expectations, in plain Python
values) and hands it to ``trace_rows``; ``rows_frame`` makes the table. Nothing here imports
MLflow.

The table, one row per top-level retriever span (a trace with none is one row), in trace
order then span order (start time):

| column | type | value |
|---|---|---|
| ``trace_id`` | string | the trace's id |
| ``span_id`` | string or null | the retriever span's id (null: the trace has no retriever span) |
| ``span_name`` | string or null | the retriever span's name |
| ``id`` | string | the row's name in reports (failing rows, annotations, ``compare``): ``TRACE_ID/SPAN_ID``, or ``TRACE_ID`` for a trace without a retriever span |
| ``request`` | string or null | the root span's inputs: the value when they hold one key (any name), else their JSON text |
| ``context`` | list of ``{content, doc_uri, id}`` or null | the retriever span's outputs, one item per passage with text |
| ``response`` | string or null | the root span's outputs, by the same one-key rule |
| ``expected_facts`` | list of strings or null | the trace's ``expected_facts`` expectation |
| ``expected_response`` | string or null | the trace's ``expected_response`` expectation |
| ``trace_state`` | string | ``OK``, ``ERROR``, ``IN_PROGRESS`` ... |
| ``trace_first_row`` | bool | the trace's first row: judge trace-level metrics (completeness) here only, count them once per trace |
| ``trace_skip_reason`` | string or null | skip every metric of the row: the trace's state (``trace state ERROR``) |
| ``span_skip_reason`` | string or null | skip span-level metrics (sufficiency): ``no retriever span`` |
| ``span_error`` | string or null | a row error for span-level metrics, naming the span: documents in a shape not read (a retriever whose documents hold no text has an empty ``context``: judged "no", with a note) |

Which retriever spans count follows MLflow's ``RetrievalSufficiency`` scorer
(``mlflow.genai.utils.trace_utils.extract_retrieval_context_from_trace``): every span of type
``RETRIEVER`` that has no ``RETRIEVER`` span above it (a retriever called inside another
retriever is part of that one's work, and gets no row of its own; a retriever under a chain or
an LLM span counts).

Passages are read as table rows read a context column (``ragjudge.records.normalise_context``):
LangChain/MLflow ``Document`` objects or their dicts (text under ``page_content``, ``content``
or ``text``; ``doc_uri`` from the item or its ``metadata``), plain strings, or one string.
MLflow itself drops string items; ragjudge keeps them, as it does in a table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from ragjudge.errors import ConfigError
from ragjudge.records import is_missing, normalise_context
from ragjudge.settings import load_config
from ragjudge.types import MetricShape, TraceStatus, clean

RETRIEVER = "RETRIEVER"
NO_RETRIEVER = "no retriever span"
TRACE_TEXT_FIX = "the retriever should return each passage's text (a Document's page_content, or a string)"
JUDGED_STATES = ("OK",)  # other states (ERROR, IN_PROGRESS, STATE_UNSPECIFIED) are skipped
COLUMNS = ("trace_id", "span_id", "span_name", "id", "request", "context", "response", "expected_facts", "expected_response",
           "trace_state", "trace_first_row", "trace_skip_reason", "span_skip_reason", "span_error")


@dataclass
class SpanView:
    """One span: ``span_id`` and ``parent_id`` (None for the root) as the source writes them,
    ``span_type`` (``RETRIEVER``, ``CHAIN``, ...), ``inputs`` and ``outputs`` decoded from JSON,
    ``start`` (any sortable start time, e.g. ns since the epoch)."""

    span_id: str
    parent_id: str | None
    name: str
    span_type: str | None
    inputs: Any = None
    outputs: Any = None
    start: int = 0

    def __post_init__(self) -> None:
        if invalid_id(self.parent_id):  # OpenTelemetry's invalid id: no parent (wandb/weave#7126)
            self.parent_id = None


def invalid_id(value: Any) -> bool:
    """Whether a trace or span id is OpenTelemetry's invalid id, which means "none": missing,
    empty, or all zeros (``0000000000000000``, ``AAAAAAAAAAA=`` in base64, the number 0)."""
    if value is None:
        return True
    if isinstance(value, (bytes, bytearray)):
        return not any(value)
    text = str(value).strip()
    if text in ("", "None", "null") or set(text) <= {"0"}:
        return True
    import base64
    import binascii

    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) in (8, 16) and not any(raw)


@dataclass
class TraceView:
    """One trace: ``trace_id``, ``state`` (``OK``, ``ERROR``, ``IN_PROGRESS``), its spans, and
    its expectations by name (``expected_facts``, ``expected_response``), values decoded."""

    trace_id: str
    state: str
    spans: list[SpanView] = field(default_factory=list)
    expectations: dict[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> SpanView | None:
        """The span without a parent (the first by start time, should there be several)."""
        roots = [s for s in self.spans if not s.parent_id]
        return min(roots, key=lambda s: s.start) if roots else None


def top_level_retrievers(trace: TraceView) -> list[SpanView]:
    """The ``RETRIEVER`` spans with no ``RETRIEVER`` ancestor, by start time (MLflow's
    ``_get_top_level_retrieval_spans``; a span whose parent is missing from the trace counts
    as MLflow counts it: not top-level, and so does a span whose parent ids loop back,
    which MLflow's walk never leaves). ``uncounted_retrievers`` says why the others are not."""
    return sorted((span for span, why in _retrievers(trace) if why is None), key=lambda s: s.start)


def uncounted_retrievers(trace: TraceView) -> list[tuple[SpanView, str]]:
    """The ``RETRIEVER`` spans ``top_level_retrievers`` leaves out for a fault of the trace,
    each with why: its parent span is not in the trace (a partial export), or the parent ids
    above it form a cycle. A retriever under another retriever is not a fault and is not here."""
    return [(span, why) for span, why in _retrievers(trace) if why is not None and why != _NESTED]


_NESTED = "nested"


def _retrievers(trace: TraceView) -> list[tuple[SpanView, str | None]]:
    by_id = {s.span_id: s for s in trace.spans}
    out: list[tuple[SpanView, str | None]] = []
    for span in trace.spans:
        if (span.span_type or "").upper() != RETRIEVER:
            continue
        parent, why, seen = span.parent_id, None, {span.span_id}
        while parent:
            above = by_id.get(parent)
            if above is None:
                why = (f"retriever span {span.name!r} ({span.span_id}): its parent span {parent} is not in trace "
                       f"{trace.trace_id}, so it is not counted as a top-level retriever (as MLflow counts it); "
                       "export or select the whole trace")
                break
            if above.span_id in seen:
                why = (f"retriever span {span.name!r} ({span.span_id}): the parent ids above it form a cycle at span "
                       f"{above.name!r} ({above.span_id}) in trace {trace.trace_id}; fix the exporter's parent ids")
                break
            if (above.span_type or "").upper() == RETRIEVER:
                why = _NESTED
                break
            seen.add(above.span_id)
            parent = above.parent_id
        out.append((span, why))
    return out


def one_value(value: Any) -> str | None:
    """A root span's inputs or outputs as one text: a dict of one key gives its value (any
    key: ``query``, ``question``, ``messages``, ``response``...), a string itself, anything
    else (several keys, a list, a number) its JSON text; a value that is not a string is JSON
    text too. None or an empty dict: None."""
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    if value is None or (isinstance(value, dict) and not value):
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _text_of(content: Any) -> str | None:
    """A chat message's content as text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") if isinstance(part, dict) else part for part in content]
        texts = [t for t in texts if isinstance(t, str)]
        return "\n".join(texts) if texts else None
    return None


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """Chat messages (``[{"role", "content"}, ...]``) held by ``value``: the list itself, or an
    object's ``messages`` (an OpenAI or LangChain chat call's inputs, with its model and settings)."""
    if isinstance(value, dict):
        value = value.get("messages")
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        return value
    return None


def request_of(inputs: Any) -> str | None:
    """A root span's inputs as the request: the last user message of a chat call (its text),
    else ``one_value``. (MLflow's scorer takes the JSON of a conversation of several messages;
    ragjudge judges the question asked: docs/from-mlflow.md.)"""
    messages = _messages(inputs)
    if messages is not None:
        users = [m for m in messages if m.get("role") == "user"]
        text = _text_of(users[-1].get("content")) if users else None
        if text is not None:
            return text
    return one_value(inputs)


def response_of(outputs: Any) -> str | None:
    """A root span's outputs as the response: a chat completion's first choice's message text
    (OpenAI's ``choices``, as MLflow's scorer reads it), the last assistant message of chat
    messages, else ``one_value``."""
    if isinstance(outputs, dict) and isinstance(outputs.get("choices"), list) and outputs["choices"]:
        first = outputs["choices"][0]
        message = first.get("message") if isinstance(first, dict) else None
        text = _text_of(message.get("content")) if isinstance(message, dict) else None
        if text is not None:
            return text
    messages = _messages(outputs)
    if messages is not None:
        replies = [m for m in messages if m.get("role") == "assistant"]
        text = _text_of(replies[-1].get("content")) if replies else None
        if text is not None:
            return text
    return one_value(outputs)


def _passage_item(item: Any) -> Any:
    """A retriever output item as a dict ``normalise_context`` reads: a ``Document``-like
    object by its ``to_dict``/attributes; ``doc_uri`` lifted from ``metadata`` as MLflow does."""
    if not isinstance(item, (dict, str)) and item is not None:
        if hasattr(item, "to_dict"):
            item = item.to_dict()
        elif hasattr(item, "page_content"):
            item = {"page_content": item.page_content, "metadata": getattr(item, "metadata", None), "id": getattr(item, "id", None)}
    if isinstance(item, dict) and "doc_uri" not in item and isinstance(item.get("metadata"), dict):
        item = {**item, "doc_uri": item["metadata"].get("doc_uri")}
    return item


def span_context(span: SpanView) -> tuple[list[dict[str, Any]] | None, str | None]:
    """A retriever span's outputs -> (passages as ``{content, doc_uri, id}`` dicts, error).
    An empty list is ``[]`` (the retriever found nothing: judged "no", as in a table); outputs
    holding no text (null, empty text, items without text) are an error naming the span."""
    outputs = span.outputs
    if isinstance(outputs, str) and outputs.lstrip().startswith(("[", "{")):
        try:
            outputs = json.loads(outputs)
        except json.JSONDecodeError:
            pass
    if isinstance(outputs, tuple):
        outputs = list(outputs)
    if isinstance(outputs, list):
        outputs = [_passage_item(item) for item in outputs]
    elif outputs is not None and not isinstance(outputs, str):
        outputs = _passage_item(outputs)
    where = f"retriever span {span.name!r} ({span.span_id})"
    if isinstance(outputs, list) and not outputs:
        return [], None
    passages, error = normalise_context(outputs, fix=TRACE_TEXT_FIX)
    if error:
        return None, f"{where}: {error}"
    if not passages:
        return None, f"{where}: its outputs hold no text ({json.dumps(span.outputs, default=str)[:80]}); a retriever span should return its passages (Documents, dicts with page_content, or strings)"
    return [{"content": p.text, "doc_uri": None if p.doc_uri is None else str(p.doc_uri),
             "id": None if p.id is None else str(p.id)} for p in passages], None


def _facts(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    return [json.dumps(value, default=str)]


def row_id(trace_id: str, span_id: str | None) -> str:
    """A trace row's ``id``: ``TRACE_ID/SPAN_ID``, or ``TRACE_ID`` for a row without a span."""
    return trace_id if span_id is None else f"{trace_id}/{span_id}"


def trace_rows(trace: TraceView, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """One trace -> its rows (``COLUMNS``, see the module docstring): one per top-level
    retriever span, or one row flagged ``span_skip_reason="no retriever span"``. A trace whose
    state is not OK gives its rows with ``trace_skip_reason`` naming the state. A retriever
    whose outputs hold no text retrieved nothing a judge can read: its context is empty
    (judged "no", as MLflow's scorer judges it), and ``notes`` (when given) gets a line naming it."""
    root = trace.root
    expected_response = trace.expectations.get("expected_response")
    base = {
        "trace_id": trace.trace_id,
        "request": request_of(root.inputs) if root else None,
        "response": response_of(root.outputs) if root else None,
        "expected_facts": _facts(trace.expectations.get("expected_facts")),
        "expected_response": None if expected_response is None else one_value(expected_response),
        "trace_state": trace.state,
        "trace_skip_reason": None if trace.state in JUDGED_STATES else f"trace state {trace.state}",
    }
    rows = []
    for span in top_level_retrievers(trace):
        context, error = span_context(span)
        if error is not None:  # nothing readable retrieved: "no", never the run's end (an error row broke the gate with exit 2)
            context = []
            if notes is not None:
                notes.append(f"note: {error}; judged as a retrieval that found nothing (\"no\"), as MLflow's RetrievalSufficiency judges it")
        rows.append({**base, "span_id": span.span_id, "span_name": span.name, "context": context,
                     "span_skip_reason": None, "span_error": None})
    if not rows:
        uncounted = uncounted_retrievers(trace)
        reason = "; ".join(why for _, why in uncounted) if uncounted else NO_RETRIEVER
        rows.append({**base, "span_id": None, "span_name": None, "context": None, "span_skip_reason": reason,
                     "span_error": None})
    for position, row in enumerate(rows):
        row["trace_first_row"] = position == 0
        row["id"] = row_id(trace.trace_id, row["span_id"])
    # an unpaired surrogate escape (half an emoji) becomes U+FFFD, as in a table: every output is UTF-8
    return [clean({name: row[name] for name in COLUMNS}) for row in rows]


NOTES = "ragjudge_notes"  # the rows table's ``attrs`` key holding what its reader wants the run to say


def rows_frame(traces: Iterable[TraceView], notes: list[str] | None = None) -> Any:
    """``TraceView``s -> a pandas DataFrame of ``COLUMNS`` (every trace at least one row);
    ``notes`` (what the reader wants said, e.g. traces read twice) in ``frame.attrs[NOTES]``,
    which a run prints with its own notes (``reader_notes``)."""
    import pandas as pd

    said: list[str] = []
    rows = [row for trace in traces for row in trace_rows(trace, said)]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["trace_first_row"] = frame["trace_first_row"].astype(bool)
    frame.attrs[NOTES] = [*(notes or []), *said[:20], *([f"note: and {len(said) - 20} more such spans"] if len(said) > 20 else [])]
    return frame


def reader_notes(frame: Any) -> list[str]:
    """What a trace reader wants said about ``frame`` (``rows_frame``'s ``notes``)."""
    return list(getattr(frame, "attrs", {}).get(NOTES) or [])


def trace_status(row: dict[str, Any]) -> TraceStatus | None:
    """What a row of the rows table (``COLUMNS``) says about its trace, as a value the scorer
    reads (``ragjudge.records.to_records``' ``trace_of``): None for a row of no trace (it lacks
    ``trace_id`` or ``trace_first_row``: a table the user made)."""
    if "trace_id" not in row or "trace_first_row" not in row:
        return None

    def text(name: str) -> str | None:
        value = row.get(name)
        return None if is_missing(value) or value == "" else str(value)

    first = row["trace_first_row"]
    return TraceStatus(str(row["trace_id"]), True if is_missing(first) else bool(first), text("trace_skip_reason"),
                       text("span_skip_reason"), text("span_error"))


def metric_shapes(metrics: Iterable[str], config: Any = None) -> dict[str, MetricShape]:
    """Each of ``metrics`` -> its ``ragjudge.types.MetricShape`` (level, binary, MLflow's
    feedback name) from its definition in ``config`` (a ``ragjudge.Config``; default: the
    default config, ``ragjudge.load_config()``: the built-in and bundled metrics): what the
    trace sinks log per span or per trace, as a yes/no label or a score. ``ConfigError`` naming
    the metric for one ``config`` does not define (a custom judge: give the run's config)."""
    config = load_config() if config is None else config
    shapes = {}
    for metric in metrics:
        try:
            shapes[metric] = config.shape(metric)
        except KeyError:
            raise ConfigError(f"the scored table holds the metric '{metric}', which the config does not define: "
                              "give the run's config (config=...), whose judges: section defines it") from None
    return shapes

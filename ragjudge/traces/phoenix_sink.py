"""Verdicts out to Phoenix, as span and trace annotations.

``log_annotations`` sends each verdict of a scored table to Phoenix through its own client
(``arize-phoenix-client``): span-level metrics (sufficiency) as span annotations on their
retriever span, the others (completeness) once per trace as trace annotations, as the
metric's definition says (its needs, its kind); name the metric's, label ``yes``/``no`` (a
binary metric: sufficiency, groundedness) or none (a scale), score (1/0, or 1..5; where the judge
gave a probability, ``M_probability``: P(yes) of a binary metric, P(pass) of a scale, 0..1, with
the verdict's own score in the metadata's ``verdict_score``), the rationale as
explanation, annotator kind ``LLM``, identifier ``ragjudge``: Phoenix keeps one annotation per
(span, name, identifier) and updates it in place, so a re-run replaces and never duplicates,
and a person's annotation of the same name (no identifier) is left alone. ``write_annotations``
writes the same annotations as the tables ``Spans.log_span_annotations_dataframe`` and
``Traces.log_trace_annotations_dataframe`` accept (``annotation_frames``).

``ConfigError`` for no Phoenix endpoint, Phoenix's client not installed or an annotations file
of another suffix; ``InputError`` for a Phoenix that does not answer. Needs the ``[phoenix]`` extra.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ragjudge.panel import without_members
from ragjudge.errors import ConfigError, InputError
from ragjudge.traces.openinference import is_missing, plain_value
from ragjudge.traces.phoenix import check_endpoint, endpoint_or_fail
from ragjudge.traces.spans import metric_shapes
from ragjudge.types import SPAN, MetricShape

IDENTIFIER = "ragjudge"  # Phoenix's upsert key (span or trace, name, identifier): a re-run updates


ANNOTATOR_KIND = "LLM"


def _cell(row: dict[str, Any], key: str) -> Any:
    value = row.get(key)
    if isinstance(value, (str, bool, dict)):
        return value
    return plain_value(value)


def _metrics(columns: Iterable[Any]) -> list[str]:
    columns = [str(c) for c in columns]
    return without_members([c[: -len("_status")] for c in columns if c.endswith("_status") and f"{c[: -len('_status')]}_score" in columns])


def _annotation(row: dict[str, Any], metric: str, model: str | None, shape: MetricShape) -> dict[str, Any] | None:
    """One verdict as Phoenix's annotation fields (name, label, score, explanation,
    metadata, identifier, annotator_kind), or None for a skipped row; a binary metric
    (``shape``) gets the label ``yes``/``no``, a scale none."""
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
    label = ("yes" if score >= 0.5 else "no") if shape.binary else None
    probability = _cell(row, f"{metric}_probability")
    if probability is not None:  # the judge's P(yes) / P(pass) is the score; the verdict's own score stays in the metadata
        metadata["verdict_score"] = json.dumps(score)
        score = float(probability)
    return {"name": metric, "label": label, "score": score, "explanation": str(_cell(row, f"{metric}_rationale") or "") or None,
            "metadata": metadata, "identifier": IDENTIFIER, "annotator_kind": ANNOTATOR_KIND}


def annotation_frames(scored: Any, metrics: Iterable[str] | None = None, config: Any = None,
                      model: str | None = None, errors: bool = True) -> tuple[Any, Any]:
    """A scored rows table -> (span annotations, trace annotations), two DataFrames in the
    shape Phoenix's ``log_span_annotations_dataframe`` / ``log_trace_annotations_dataframe``
    accept: ``span_id`` (or ``trace_id``), ``name``, ``annotator_kind`` (``LLM``), ``label``,
    ``score``, ``explanation``, ``metadata`` (``source``, ``judge_model``, ``mode``,
    ``missing`` as JSON, ``status``), ``identifier`` (``ragjudge``). Each metric's level and
    kind come from its definition in ``config`` (a ``ragjudge.Config``; default: the default
    config, with the built-in and bundled metrics; ``ragjudge.traces.spans.metric_shapes``): a
    metric that reads the context (sufficiency, groundedness) goes on its row's retriever span,
    the others once per trace (the row flagged ``trace_first_row``); a binary metric is labelled
    ``yes``/``no``, a scale has no label. Skipped rows give nothing; an error row gives label
    ``error`` with the reason as explanation and no score (``errors=False``: nothing).
    ``InputError`` for a table without ``trace_id``/``span_id``; ``ConfigError`` for a metric
    ``config`` does not define."""
    import pandas as pd

    if "trace_id" not in scored.columns or "span_id" not in scored.columns:
        raise InputError("this table has no trace_id/span_id columns: annotations go to Phoenix spans, so score rows "
                         "read from traces (ragjudge.traces.otel.read_traces)")
    chosen = list(metrics) if metrics is not None else _metrics(scored.columns)
    shapes = metric_shapes(chosen, config)
    span_rows, trace_rows_ = [], []
    for row in scored.to_dict("records"):
        for metric in chosen:
            if shapes[metric].level == SPAN:
                span_id = _cell(row, "span_id")
                found = _annotation(row, metric, model, shapes[metric]) if span_id else None
                if found and (errors or found["label"] != "error"):
                    span_rows.append({"span_id": str(span_id), **found})
            else:
                first = _cell(row, "trace_first_row")
                trace_id = _cell(row, "trace_id")
                if trace_id and (first is None or bool(first)):
                    found = _annotation(row, metric, model, shapes[metric])
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
                      config: Any = None, model: str | None = None) -> dict[str, Any]:
    """Write the annotations of ``scored`` (``annotation_frames``) for Phoenix: span
    annotations to ``path``, trace annotations (when there are any) to
    ``trace_annotations_path(path)``; ``.parquet`` or ``.jsonl`` (``.csv``: metadata as JSON
    text). Load them with ``Client().spans.log_span_annotations_dataframe(dataframe=...)`` and
    ``Client().traces.log_trace_annotations_dataframe(dataframe=...)``. Error rows are left
    out (``log_annotations`` sends them, label ``error`` without a score): a file's score
    column reads a missing score back as NaN, which Phoenix's client cannot send. Returns
    ``{"spans": N, "traces": N, "errors_left_out": N, "paths": [...]}``."""
    spans, traces = annotation_frames(scored, metrics, config, model, errors=False)
    every = annotation_frames(scored, metrics, config, model)
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


def _data(frame: Any, id_key: str) -> list[dict[str, Any]]:
    """Annotation rows as Phoenix's ``SpanAnnotationData``/``TraceAnnotationData`` dicts."""
    items = []
    for row in frame.to_dict("records"):
        result = {k: row[k] for k in ("label", "score", "explanation") if not is_missing(row.get(k))}
        items.append({id_key: row[id_key], "name": row["name"], "annotator_kind": row["annotator_kind"],
                      "result": result, "metadata": row["metadata"], "identifier": row["identifier"]})
    return items


def log_annotations(scored: Any, endpoint: str | None = None, metrics: Iterable[str] | None = None,
                    config: Any = None, model: str | None = None,
                    chunk: int = 100, timeout: float = 5.0) -> AnnotationLog:
    """Send the verdicts of ``scored`` to Phoenix at ``endpoint`` (``endpoint_or_fail``) as
    annotations (``annotation_frames``) through ``phoenix.client.Client``:
    ``spans.log_span_annotations`` and ``traces.log_trace_annotations``, ``sync=True``, in
    chunks of ``chunk``. A re-run updates ragjudge's annotations in place (identifier
    ``ragjudge``). ``InputError`` naming the fix when Phoenix does not answer its health check
    in ``timeout`` s; a chunk Phoenix refuses (e.g. a span it does not hold) is counted in
    ``failed`` with the reason, never raised."""
    url = endpoint_or_fail(endpoint)
    spans, traces = annotation_frames(scored, metrics, config, model)
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

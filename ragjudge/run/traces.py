"""A ``ragjudge score`` run over traces: the checks made before any judging, and the sinks
called after the run (``--mlflow-log-feedback``; ``--phoenix-endpoint`` and ``--annotations``
for OpenTelemetry traces). ``ragjudge.cli`` calls ``plan`` before the
run, ``after_run`` between the run and its outputs, and ``after_outputs`` last.

Imports nothing heavy until a trace source or a sink is used.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.options import Names, OptionError, said
from ragjudge.traces import OTEL_SOURCES, TraceOptions, TraceSource, mlflow as mt, otel as ot, source_kind
from ragjudge.reports.summary import summary_dict
from ragjudge.reports import html
from ragjudge.io import to_file, write_atomic, write_table

def otel_hint(n: Names) -> str:
    """How to give OpenTelemetry traces, the options named as ``n`` says."""
    return f"give an OTLP JSON file or a saved Phoenix span table (or {n.given('input_format', 'otlp')} / phoenix)"


@dataclass
class TraceRun:
    """A run whose input is a trace source: its ``kind``, the ``options`` it is read with, and
    whether the verdicts go back as MLflow feedback (``log_feedback``, to ``tracking_uri``), as
    Phoenix span annotations (``phoenix_endpoint``, checked reachable: set only when
    ``--phoenix-log-annotations`` asks for it, never by reading ``phoenix:PROJECT``) or to an
    annotations table (``annotations``, a file path)."""

    source: str
    kind: TraceSource
    options: TraceOptions
    log_feedback: bool = False
    tracking_uri: str | None = None
    feedback: Any = None  # the ``FeedbackLog``, after ``after_run``
    lines: list[str] = field(default_factory=list)  # what the sinks did, one line each, printed after the run
    failed: set[int] = field(default_factory=set)  # the positions in ``lines`` that say something was not logged or written (printed under -q too)
    phoenix_endpoint: str | None = None
    annotations: str | None = None
    feedback_names: dict[str, str] = field(default_factory=dict)  # --mlflow-feedback-name METRIC=NAME
    run_id: str | None = None  # the MLflow run of this run (made before the feedback, which points at it)

    def say(self, text: str, failed: bool = False) -> None:
        """Add a line for the end of the run; ``failed``: it says what was not logged or written."""
        self.lines.append(text)
        if failed:
            self.failed.add(len(self.lines) - 1)

    @property
    def needs_table(self) -> bool:
        """Whether a sink reads the scored table after the run (the run keeps it in memory)."""
        return bool(self.log_feedback or self.phoenix_endpoint or self.annotations)


def plan(source: str, input_format: str | None, sinks: Any, engine: str = "local",
         feedback_names: dict[str, str] | None = None) -> TraceRun | None:
    """The trace run of ``ragjudge score SOURCE`` (None: a table run), read with the trace options
    given (``sinks``: a ``ragjudge.run.request.TraceSinks``, the request's options by field name;
    ``feedback_names``: ``--mlflow-feedback-name``'s pairs), checked before any judging. ``OptionError`` (exit 2) naming the fix: ``--mlflow-filter``/``--mlflow-max-traces``
    or ``--mlflow-log-feedback`` on a table or on OpenTelemetry traces, ``--mlflow-log-feedback``
    without a tracking store, ``--expected-facts-attribute``/``--expected-response-attribute``/
    ``--phoenix-endpoint``/``--phoenix-log-annotations``/``--annotations`` on a table or on
    MLflow traces, ``--phoenix-endpoint`` on a trace file without ``--phoenix-log-annotations``
    (it would only say where to write), an annotations file of another suffix than
    ``.parquet``/``.jsonl``/``.csv``, Phoenix's client not installed, a trace source with
    ``--engine ray``, ``--mlflow-max-traces`` below 1. ``InputError`` (exit 2) for a store or a
    Phoenix that cannot be reached. Reading never implies writing: the verdicts go to Phoenix
    only with ``phoenix_log`` (``--phoenix-log-annotations``), as MLflow's go only with
    ``--mlflow-log-feedback``; ``phoenix:PROJECT`` reads from ``--phoenix-endpoint``.
    ``PHOENIX_COLLECTOR_ENDPOINT`` stands for ``--phoenix-endpoint`` on OpenTelemetry traces
    only (a table run ignores it)."""
    tracking_uri, filter_string, max_traces = sinks["mlflow_tracking_uri"], sinks["mlflow_filter"], sinks["mlflow_max_traces"]
    log_feedback, judge_error_traces, phoenix_log = bool(sinks["mlflow_log_feedback"]), bool(sinks["judge_error_traces"]), bool(sinks["phoenix_log_annotations"])
    expected_facts, expected_response = sinks["expected_facts_attribute"], sinks["expected_response_attribute"]
    phoenix_endpoint, annotations = sinks["phoenix_endpoint"], sinks["annotations"]
    phoenix_filters = {"start_time": sinks["phoenix_start"], "end_time": sinks["phoenix_end"], "trace_ids": list(sinks["phoenix_trace_id"] or ())}
    kind = source_kind(source, input_format)
    filters = {k: v for k, v in (phoenix_filters or {}).items() if v not in (None, "", [], ())}
    if filters and (kind is None or kind.name != "phoenix-project"):
        given = tuple(f"phoenix_{k.split('_')[0] if k != 'trace_ids' else 'trace_id'}" for k in filters)
        raise OptionError(given, lambda n: f"{', '.join(map(n, given))}: {'it chooses' if len(filters) == 1 else 'they choose'} the spans "
                          f"read from a Phoenix project: give phoenix:PROJECT (with {n.placeholder('phoenix_endpoint', 'URL')})")
    mlflow_given = [flag for flag, value in (("mlflow_filter", filter_string), ("mlflow_max_traces", max_traces),
                                                ("mlflow_log_feedback", log_feedback or None),
                                                ("mlflow_feedback_name", feedback_names or None)) if value is not None]
    if feedback_names and not log_feedback:
        raise OptionError(("mlflow_feedback_name", "mlflow_log_feedback"), lambda n: f"{n('mlflow_feedback_name')} names the feedback {n('mlflow_log_feedback')} logs: add {n.flag_on('mlflow_log_feedback')}")
    otel_given = [flag for flag, value in (("expected_facts_attribute", expected_facts),
                                              ("expected_response_attribute", expected_response),
                                              ("phoenix_endpoint", phoenix_endpoint), ("annotations", annotations),
                                              ("phoenix_log_annotations", phoenix_log or None))
                  if value is not None]
    def only(n: Names, fields: list[str]) -> str:
        """``--a works`` / ``--a, --b work``."""
        return f"{', '.join(map(n, fields))} {'works' if len(fields) == 1 else 'work'}"

    if kind is None:
        if judge_error_traces:
            raise OptionError("judge_error_traces", lambda n: f"{n('judge_error_traces')} works on traces (mlflow:EXPERIMENT, exported MLflow traces, OTLP, Phoenix), "
                              "not on a table")
        if mlflow_given:
            raise OptionError(tuple(mlflow_given), lambda n: f"{only(n, mlflow_given)} on traces: give mlflow:EXPERIMENT or a file of exported MLflow traces "
                              f"(or {n.given('input_format', 'mlflow-traces')}), not a table")
        if otel_given:
            raise OptionError(tuple(otel_given), lambda n: f"{only(n, otel_given)} on OpenTelemetry traces: {otel_hint(n)}, not a table "
                              f"(a table's columns are mapped with {n.pick('--map FIELD=COLUMN', 'columns: in the config')})")
        return None
    otel = kind.name in OTEL_SOURCES
    if otel and mlflow_given:
        raise OptionError(tuple(mlflow_given), lambda n: f"{only(n, mlflow_given)} on MLflow traces, not on {kind.name} spans: "
                          f"send the verdicts to Phoenix with {n.placeholder('phoenix_endpoint', 'URL')} or {n.placeholder('annotations', 'FILE')}")
    if not otel and otel_given:
        raise OptionError(tuple(otel_given), lambda n: f"{only(n, otel_given)} on OpenTelemetry traces ({otel_hint(n)}), not on {kind.name}: "
                          f"MLflow's expectations are read from the trace's assessments, its verdicts sent with {n.flag_on('mlflow_log_feedback')}")
    if max_traces is not None and max_traces < 1:
        raise OptionError("mlflow_max_traces", lambda n: f"{n('mlflow_max_traces')} takes a number of traces, at least 1")
    if not otel:  # MLflow's traces need MLflow: said before anything else, the dry run's and a batch's included
        mt.needs_mlflow()
    if engine != "local":
        raise OptionError("engine", lambda n: f"trace sources are scored with {n.given('engine', 'local')} (the default); export the rows to a table for Ray")
    uri = None
    if log_feedback:
        try:
            uri = mt.tracking_uri_or_fail(tracking_uri, "--mlflow-log-feedback")
        except ConfigError:  # its message names the option as the reader knows it
            raise OptionError("mlflow_log_feedback", lambda n: said(lambda: mt.tracking_uri_or_fail(tracking_uri, n("mlflow_log_feedback")))) from None
        mt.client(uri)  # unreachable: InputError naming the URI, before any judging
    endpoint = None
    if otel:
        if annotations is not None and not annotations.lower().endswith((".parquet", ".pq", ".jsonl", ".ndjson", ".csv")):
            raise ConfigError(f"the annotations file {annotations} should end in .parquet, .jsonl or .csv")
        project = kind.name == "phoenix-project"
        if phoenix_endpoint and not project and not phoenix_log:
            raise OptionError(("phoenix_endpoint", "phoenix_log_annotations"), lambda n: f"{n('phoenix_endpoint')} on {kind.name} spans only says where to log the verdicts, which a run does "
                              f"only when asked: add {n.flag_on('phoenix_log_annotations')} (or leave {n('phoenix_endpoint')} out)")
        read_from = None
        if project:  # where to read it; its verdicts go back there only with --phoenix-log-annotations
            read_from = ot.endpoint_or_fail(phoenix_endpoint, f"reading {source}")
            ot.check_endpoint(read_from)
        if phoenix_log:
            endpoint = read_from or ot.endpoint_or_fail(phoenix_endpoint)
            if endpoint != read_from:
                ot.check_endpoint(endpoint)  # unreachable, or no client: exit 2 naming the fix, before any judging
    extra = {"endpoint": read_from, **filters} if kind.name == "phoenix-project" else {}
    options = TraceOptions(tracking_uri, filter_string, max_traces, extra=extra, expected_facts=expected_facts,
                           expected_response=expected_response, judge_error_traces=judge_error_traces)
    return TraceRun(source, kind, options, log_feedback, uri or tracking_uri, phoenix_endpoint=endpoint, annotations=annotations,
                    feedback_names=dict(feedback_names or {}))


def after_run(run: TraceRun, result: Any, config: Any) -> None:
    """Log the run's verdicts as MLflow feedback (``--mlflow-log-feedback``) and put what was
    logged into ``result.sinks["mlflow"]`` (the summary JSON): ``feedback_logged``,
    ``feedback_replaced``, ``feedback_failed``, ``feedback_failures`` (the first reasons). A
    feedback that fails loses no verdict: the scored table is written all the same. Then the
    Phoenix sinks (``phoenix_sinks``)."""
    phoenix_sinks(run, result, config)
    if not run.log_feedback or result.table is None:
        return

    experiment = run.source[len("mlflow:"):] if run.source.startswith("mlflow:") else None
    first = next((t for t in result.table["trace_id"] if isinstance(t, str)), None) if "trace_id" in result.table else None
    try:  # the run first: each feedback points at it (mlflow.assessment.sourceRunId), as MLflow's evaluation writes it
        run.run_id = mt.start_run(run.tracking_uri, experiment, None if experiment else first)
    except Exception as err:  # noqa: BLE001 - the verdicts are written; the run's record in MLflow is extra
        run.say(f"mlflow: the run was not made: {_reason(err)}", failed=True)
    log = mt.log_feedback(result.table, run.tracking_uri, summary=result.summary, config=config,
                          names=run.feedback_names, run_id=run.run_id)
    run.feedback = log
    result.sinks["mlflow"] = {"tracking_uri": run.tracking_uri, "feedback_logged": log.logged, "feedback_replaced": log.replaced,
                              "feedback_failed": log.failed, "feedback_failures": log.failures[:20]}
    said = f"mlflow: {log.written} feedback(s) logged to {run.tracking_uri} ({log.logged} new, {log.replaced} replaced)"
    if log.failed:
        said += f"; {log.failed} not logged: " + "; ".join(log.failures[:3]) + (" ..." if len(log.failures) > 3 else "")
    run.say(said, failed=bool(log.failed))
    if run.run_id:  # the run's traces, as MLflow's evaluation links them: its run page lists them, search_traces(run_id=) finds them
        traces = [t for t in dict.fromkeys(result.table["trace_id"]) if isinstance(t, str)] if "trace_id" in result.table else []
        linked, why = mt.link_traces(run.run_id, traces, run.tracking_uri)
        result.sinks["mlflow"]["traces_linked"] = linked
        if why is not None:
            result.sinks["mlflow"]["traces_link_error"] = why
            run.say(f"mlflow: {len(traces) - linked} of {len(traces)} trace(s) not linked to run {run.run_id}: {why}", failed=True)


def _reason(err: BaseException) -> str:
    text = str(err).strip()
    return (text.splitlines()[0] if text else type(err).__name__)[:300]


def phoenix_sinks(run: TraceRun, result: Any, config: Any) -> None:
    """Send the run's verdicts to Phoenix as annotations (``--phoenix-endpoint``: span-level
    metrics on their retriever span, the others once per trace; ragjudge's earlier ones updated
    in place) and write them as Phoenix's annotation tables (``--annotations FILE``). What was
    done goes into ``result.sinks["phoenix"]`` (the summary JSON): ``endpoint``,
    ``annotations_logged``, ``annotations_failed``, ``annotations_failures`` (the first
    reasons), ``annotations_file`` (``write_annotations``' counts and paths, or
    ``annotations_file_error``). A failure loses no verdict: the scored table is written all
    the same, and every annotation not sent is counted with the reason."""
    if result.table is None or not (run.phoenix_endpoint or run.annotations):
        return

    sink: dict[str, Any] = result.sinks.setdefault("phoenix", {})
    if run.phoenix_endpoint:
        try:
            log = ot.log_annotations(result.table, run.phoenix_endpoint, config=config)
        except Exception as err:  # noqa: BLE001 - Phoenix went away after the check: every annotation counted as failed
            spans, traces = ot.annotation_frames(result.table, config=config)
            log = ot.AnnotationLog(failed=len(spans) + len(traces), failures=[_reason(err)])
        sink.update(endpoint=run.phoenix_endpoint, annotations_logged=log.logged, annotations_failed=log.failed,
                    annotations_failures=log.failures[:20])
        said = f"phoenix: {log.logged} annotation(s) logged to {run.phoenix_endpoint}"
        if log.failed:
            said += f"; {log.failed} not logged: " + "; ".join(log.failures[:3]) + (" ..." if len(log.failures) > 3 else "")
        run.say(said, failed=bool(log.failed))
    if run.annotations:
        try:
            done = ot.write_annotations(result.table, run.annotations, config=config)
        except Exception as err:  # noqa: BLE001 - the scored table is the record; the annotations file is extra
            sink["annotations_file_error"] = _reason(err)
            run.say(f"phoenix: the annotations were not written to {run.annotations}: {_reason(err)}", failed=True)
        else:
            sink["annotations_file"] = done
            left = f" ({done['errors_left_out']} error verdict(s) left out)" if done["errors_left_out"] else ""
            run.say(f"phoenix: {done['spans']} span and {done['traces']} trace annotation(s) written to "
                             f"{', '.join(done['paths'])}{left}")


def after_outputs(run: TraceRun, result: Any, config: Any, wanted: Any, exit_code: int) -> None:
    """Log the run as an MLflow run of the experiment (``log_run``: the summary, the scored
    table and the HTML report as artifacts; written to a temporary folder when the run wrote
    none), and add its id to the summary JSON file. A failure is a line, not an exit code."""
    if not run.log_feedback or result.table is None:
        return
    document = {**summary_dict(result.summary, result.gate, result.mapping.describe() if result.mapping else None),
                "exit_code": exit_code, **result.sinks}
    experiment = run.source[len("mlflow:"):] if run.source.startswith("mlflow:") else None
    first = next((t for t in result.table["trace_id"] if isinstance(t, str)), None) if "trace_id" in result.table else None
    with tempfile.TemporaryDirectory(prefix="ragjudge-mlflow-") as folder:
        scored = wanted.output if to_file(wanted.output) and os.path.isfile(wanted.output) else None
        if scored is None:
            scored = os.path.join(folder, "scored.parquet")
            write_table(result.table, scored)
        report = wanted.html
        if not report:
            report = os.path.join(folder, "report.html")
            html.write(report, html.from_table(result.table, config, source=run.source, summary=result.summary, gate=result.gate,
                                               mapping=result.mapping))
        try:
            run_id = mt.log_run(document, run.tracking_uri, experiment, scored, report, run.feedback,
                                trace_id=None if experiment else first, run_id=run.run_id, names=run.feedback_names, config=config)
        except Exception as err:  # noqa: BLE001 - the verdicts are written; the run's record in MLflow is extra
            run.say(f"mlflow: the run was not logged: {str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__}", failed=True)
            result.sinks.setdefault("mlflow", {})["run_error"] = run.lines[-1]
            run_id = None
    if run_id:
        linked = result.sinks.get("mlflow", {}).get("traces_linked")
        run.say(f"mlflow: run {run_id} logged (summary, scored table and report as artifacts"
                f"{f'; {linked} trace(s) linked' if linked else ''})")
        result.sinks.setdefault("mlflow", {})["run_id"] = run_id
    if to_file(wanted.summary_json) and os.path.isfile(wanted.summary_json):
        with open(wanted.summary_json, encoding="utf-8") as handle:
            written = json.load(handle)
        written["mlflow"] = result.sinks.get("mlflow", {})
        write_atomic(wanted.summary_json, json.dumps(written, indent=2, ensure_ascii=False) + "\n")

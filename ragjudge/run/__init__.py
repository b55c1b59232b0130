"""One ``ragjudge score`` run: what was asked (``ScoreRequest``), checked once (``check``), and the
one function that carries it out (``run``) whatever the engine, the source or the caller.

    request = ScoreRequest("data.jsonl", output="scored.parquet", limit=100, junit="junit.xml")
    outcome = run(request, load_config("my.yaml"))
    outcome.exit_code, outcome.result.summary, lines_of(outcome.gate)   # ragjudge.reports.gate_text: its words

``ragjudge score`` maps its options to a ``ScoreRequest`` (``request_of``) and calls ``run``;
``evaluate`` (the library's file-in, file-out call), the dry run and the Ray engine are paths
inside ``run``, never copies of it. Its steps, in order:

1. ``ScoreRequest.check(config)`` (``ragjudge.run.checks``): every rule across the options, for
   the engine chosen: an option an engine cannot honour is refused (``ConfigError``, exit 2,
   naming it) before any judging, never dropped;
2. a trace source's plan (``ragjudge.run.traces.plan``: its options, the stores it writes to
   reached), then the input as one value (``ragjudge.run.source.Source``), which every engine reads;
3. the dry run (``ragjudge.run.estimate``), or the judging: locally (``ragjudge.run.engine``) or on
   Ray (``ragjudge.run.ray``);
4. the trace sinks (MLflow feedback, Phoenix annotations), then every output asked for
   (``ragjudge.reports.outputs.finish``: the baseline and its gates, the summary JSON, JUnit,
   Markdown, the HTML report, GitHub annotations), then the run logged to MLflow.

It prints nothing: notes and progress go to ``on_event`` (``ragjudge.plan``'s events), and the
``RunOutcome`` holds what the caller shows.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ragjudge.errors import EXIT_SUBMITTED, BatchSubmitted, ConfigError
from ragjudge.io import to_file
from ragjudge.run.engine import RunResult, score_source
from ragjudge.plan import Note, events
from ragjudge.reports.outputs import Finished, finish
from ragjudge.settings import Config, load_config
from ragjudge.options import OptionError, pairs, said
from ragjudge.run.traces import after_outputs, after_run, plan
from ragjudge.run.estimate import estimate
from ragjudge.gate import Check, Kind, exit_code
from ragjudge.reports.gate_text import lines as gate_lines
from ragjudge.reports.summary import write_summary_json
from ragjudge.run.ray import evaluate_on_ray
from ragjudge.run.batch import advance, recorded_run
from ragjudge.run.checks import check, check_batch, ignored_options, step_summary_problem
from ragjudge.run.source import Source
from ragjudge.run.joined import join_tables
from ragjudge.run.request import BaselineGates, EngineChoice, Outputs, ScoreRequest, Selection, TraceSinks, Wishes
from ragjudge import local

__all__ = ["BaselineGates", "EngineChoice", "Outputs", "RunOutcome", "ScoreRequest", "Selection", "TraceSinks", "Wishes", "evaluate",
           "recorded_request", "request_of", "run"]

@dataclass
class RunOutcome:
    """What ``run`` did: the ``request``, the ``exit_code`` (0 every gate passed, 1 a gate failed,
    2 nothing could be judged, 3 the judges could not run, 4 submitted to the batch API and not
    yet judged, 130 interrupted); ``batch`` (``ragjudge.run.batch.BatchStep``: a batch run's state); ``result``
    (``RunResult``: summary, gate, mapping, notes, the table when kept; None for a dry run),
    ``finished`` (the outputs written: the final ``gate`` with the baseline's checks, the
    comparison's lines, the GitHub annotations), ``estimate`` (the dry run's figures),
    ``trace_lines`` (what the trace sinks did, one line each; ``trace_failed``: the positions
    of those that say something was not logged), ``stopped`` (the line of a Ray job
    cancelled by Ctrl-C) and ``seconds`` (wall-clock time of the judging and the outputs)."""

    request: ScoreRequest
    exit_code: int
    result: RunResult | None = None
    finished: Finished | None = None
    estimate: dict[str, Any] | None = None
    trace_lines: list[str] = field(default_factory=list)
    trace_failed: set[int] = field(default_factory=set)
    stopped: str | None = None
    seconds: float = 0.0
    batch: Any = None

    @property
    def gate(self) -> Any:
        """The final gate (``GateResult``), the baseline's checks included; None for a dry run."""
        return self.finished.gate if self.finished is not None else None


def request_of(options: dict[str, Any], **extra: Any) -> ScoreRequest:
    """The ``ScoreRequest`` of ``ragjudge score``'s options (``options``: by the command's
    parameter names: ``input``, ``output``, ``limit``, ``no_step_summary``, ``verbose``...);
    ``extra``: fields to set besides (``flag_fields``, ``handle_signals``)."""
    names = {f.name for f in fields(ScoreRequest)}
    given = {name: options[name] for name in names if name in options and name != "source"}
    given["source"] = options["input"] if "input" in options else options["source"]
    given["step_summary"] = not options.get("no_step_summary", False)
    given["row_events"] = bool(options.get("verbose", False))
    given.setdefault("engine", "local")
    given["flagged"] = frozenset(key for key, option in _FLAGGED.items() if options.get(option) is not None)
    given["cli"] = True  # its messages name the command's flags
    given.update(extra)
    for name in ("mlflow_feedback_name", "phoenix_trace_id"):
        if name in given:
            given[name] = tuple(given[name] or ())
    return ScoreRequest(**{k: v for k, v in given.items() if v is not None or k in ("seed",)})


# the config keys whose options request_of records as given (ScoreRequest.flagged), for ignored_options' notes
_FLAGGED = {"passage_relevance.at_k": "at_k"}


def recorded_request(manifest: str, batch_wait: bool = False, batch_resubmit: bool = False) -> tuple[ScoreRequest, Config]:
    """The ``ScoreRequest`` and ``Config`` of the batch run whose manifest is at ``manifest``
    (``ragjudge batch collect``; ``ragjudge.run.batch.recorded_run``), ``batch_wait`` and
    ``batch_resubmit`` as given.
    Raises ``ConfigError`` (exit 2) for a manifest that cannot be read."""
    recorded, config = recorded_run(manifest)
    known = {f.name for f in fields(ScoreRequest)}
    given = {name: value for name, value in recorded.items() if name in known and name not in ("batch_wait", "batch_resubmit", "handle_signals", "batch_folder")}
    folder = manifest if os.path.isdir(manifest) else os.path.dirname(os.path.abspath(manifest))
    return (ScoreRequest(**{**given, "batch_wait": batch_wait, "batch_resubmit": batch_resubmit, "handle_signals": True, "batch_folder": os.path.abspath(folder)}),
            load_config(None, config))


def run(request: ScoreRequest, config: Any, *, on_event: Callable[[Any], None] | None = None, transport: Any = None) -> RunOutcome:
    """Carry out ``request`` with ``config`` (a ``Config``, ``ragjudge.load_config``): check it,
    plan a trace source, then the dry run or the judging (local or Ray), the trace sinks and
    every output asked for. Returns a ``RunOutcome``. ``on_event`` hears ``ragjudge.plan``'s
    events (``Start``, ``Note``, ``Progress``, ``Row``); ``transport``: how calls reach the
    model (tests pass an in-process fake). Raises ``ConfigError`` / ``InputError`` (exit 2)
    before any judging for unusable options or input; provider failures are error rows."""
    try:
        return _run(request, Config.of(config), on_event, transport)
    except OptionError as exc:  # the options named once, as the request's caller knows them: flags, or keyword arguments
        exc.named(request.names)
        raise


def _run(request: ScoreRequest, config: Any, on_event: Callable[[Any], None] | None, transport: Any) -> RunOutcome:
    """``run``, its ``OptionError`` not yet named."""
    check(request, config)
    step_summary = request.step_summary
    problem = step_summary_problem(request.name, request.output, request.summary_json, request.junit, request.markdown,
                                   request.html, request.to_label) if step_summary else None
    if problem:
        step_summary = False
        if on_event:
            on_event(Note(problem, warning=True))
    traces = _plan_traces(request, config)
    if config.judge.batch and not request.dry_run:
        check_batch(request, config)  # before the input is read: stdin is refused
    source = Source.of(request.source, request.input_format, request.sample, traces.options if traces else None)
    try:
        source, config = join_tables(source, config)  # --pairwise naming a table: its responses joined by id (notes: the source's)
        if request.dry_run:
            return _dry_run(request, config, source)
        return _judge(request, config, source, traces, problem, step_summary, on_event, transport)
    finally:
        source.close()


def _judge(request: ScoreRequest, config: Any, source: Source, traces: Any, problem: str | None, step_summary: bool,
           on_event: Callable[[Any], None] | None, transport: Any) -> RunOutcome:
    """The judging of ``run`` (batch, Ray or local), then the trace sinks and the outputs."""
    ignored = ignored_options(request.alpha, request.baseline, request.names, max_drop=request.max_drop, flagged=request.flagged, config=config)
    for note in ignored if on_event else ():
        on_event(Note(note))
    started = time.monotonic()
    if config.judge.model.startswith("local/"):  # a wait for another process's embedded model is said
        local.TURNS.note = None if on_event is None else (lambda text: on_event(Note(text)))
    step = None
    if config.judge.batch:  # through the provider's batch API: submit, collect, then finish from the replies
        try:
            step = advance(request, config, source, on_event, transport)
        except KeyboardInterrupt as exc:  # Ctrl-C while waiting on the batches: they run on, and the line says how to collect them
            if not exc.args:
                raise
            return RunOutcome(request, 130, stopped=str(exc), seconds=time.monotonic() - started)
        if step.pending:
            return RunOutcome(request, EXIT_SUBMITTED, seconds=time.monotonic() - started, batch=step)
        transport = step.transport
    if request.engine == "ray":
        result, stopped = _on_ray(request, config, source, on_event)
        if stopped is not None:
            return RunOutcome(request, 130, stopped=stopped, seconds=time.monotonic() - started)
    else:
        wishes = replace(request.wishes, keep_table=request.reads_table_back or bool(traces and traces.needs_table))
        result = score_source(source, config, request.selection, request.outputs, wishes, flag_fields=request.flag_fields, on_event=on_event,
                              transport=transport, recorded=request.recorded())
    if problem:  # said as it was found; kept with the run's notes for a caller without a listener (evaluate)
        result.notes.insert(0, problem)
    result.notes.extend(ignored)  # said before the judging (below), kept with the run's notes
    if traces is not None:
        after_run(traces, result, config)  # --mlflow-log-feedback, --phoenix-endpoint: before the outputs, which report them
    wanted = request.wanted(step_summary)
    finished = finish(result, config, wanted, time.monotonic() - started)
    outcome = RunOutcome(request, finished.gate.exit_code, result, finished, batch=step)
    if traces is not None:
        after_outputs(traces, result, config, wanted, outcome.exit_code)
        outcome.trace_lines, outcome.trace_failed = list(traces.lines), set(traces.failed)
    outcome.seconds = time.monotonic() - started
    return outcome


def _plan_traces(request: ScoreRequest, config: Any) -> Any:
    """The trace run of ``request`` (``ragjudge.run.traces.plan``), None for a table or a DataFrame.
    ``--mlflow-feedback-name`` must name metrics the run judges (``ConfigError``)."""
    if not isinstance(request.source, str):
        return None
    given = list(request.mlflow_feedback_name)
    try:
        names = pairs(given, "--mlflow-feedback-name")
    except ConfigError:  # its message names the option as the reader knows it
        raise OptionError("mlflow_feedback_name", lambda n: said(lambda: pairs(given, n("mlflow_feedback_name")))) from None
    for metric in names:
        if metric not in config.metrics:
            raise OptionError("mlflow_feedback_name", lambda n, metric=metric: f"{n.given('mlflow_feedback_name', metric + '=...')}: this run does not "
                              f"judge '{metric}'; it judges {', '.join(config.metrics)}")
    return plan(request.source, request.input_format, request.trace_sinks, request.engine, names)


def _dry_run(request: ScoreRequest, config: Any, source: Source) -> RunOutcome:
    """The dry run: the figures of ``ragjudge.run.estimate`` on the request's rows (a trace
    source's rows as read), written to ``summary_json`` when asked; the other outputs are
    checked, not written (a note names them)."""
    report = estimate(source, config, flag_fields=request.flag_fields, limit=request.limit, sample=request.sample, seed=request.seed or 0)
    report["notes"].extend(ignored_options(None, None, request.names, flagged=request.flagged, config=config))
    skipped = [request.names.about(name, value) for name, value in (("output", request.output), ("junit", request.junit), ("markdown", request.markdown),
                                                       ("html", request.html), ("baseline", request.baseline),
                                                       ("mlflow_log_feedback", request.mlflow_log_feedback or None),
                                                       ("phoenix_log_annotations", request.phoenix_log_annotations or None),
                                                       ("annotations", request.annotations))
               if value is not None]
    if skipped:
        report["notes"].append(f"note: a dry run writes and logs nothing but {request.names('summary_json')}: {', '.join(skipped)} checked, "
                               "not used")
    checks = dry_run_checks(report)
    code = exit_code(checks)
    report["exit_code"] = code
    report["gate_lines"] = [f"{line} (the run would exit {code})" for line in gate_lines(checks)]
    if request.summary_json:
        write_summary_json(request.summary_json, {"dry_run": report})
    return RunOutcome(request, code, estimate=report)


def dry_run_checks(report: dict[str, Any]) -> list[Check]:
    """The run-wide checks a dry run's figures (``ragjudge.run.estimate``'s report) already decide,
    as the run's gate would make them (``ragjudge.gate.check_gate``): nothing would be judged
    (every metric skips every row, or the input has none: exit 2), or every row a metric would
    judge has an unusable input (exit 2). The gates on verdicts (pass rates, errors) wait for the
    run; so the dry run exits 0 or 2, as the run would for these."""
    metrics = list(report["metrics"].values())
    if all(m["to_judge"] == 0 for m in metrics):
        return [Check(None, Kind.NOTHING_JUDGED, False, counts={"rows": report["rows"]})]
    if all(m["to_judge"] == m["input_errors"] for m in metrics):
        return [Check(None, Kind.UNUSABLE_INPUT, False, counts={"rows": max(m["input_errors"] for m in metrics)})]
    return []


def _on_ray(request: ScoreRequest, config: Any, source: Source, on_event: Callable[[Any], None] | None) -> tuple[RunResult | None, str | None]:
    """The run on Ray (``ragjudge.run.ray.evaluate_on_ray``) with every option of the request; the
    scored table read back where an output needs it. Returns the result, or the line of a job
    cancelled by Ctrl-C."""
    hear = events(on_event)
    try:
        result = evaluate_on_ray(source, config, request.selection, request.outputs, request.engine_choice, flag_fields=request.flag_fields,
                                 on_note=(lambda note: hear(Note(note))) if hear else None, recorded=request.recorded())
    except KeyboardInterrupt as exc:
        return None, str(exc) or "interrupted: the Ray job was cancelled"
    if request.reads_table_back:  # the per-row reports read the table written
        import pandas as pd

        from ragjudge.io import read_table

        assert to_file(request.output)  # check() refused the others
        result.table = pd.read_parquet(request.output) if os.path.isdir(request.output) else read_table(request.output)
    return result, None


def evaluate(
    source: Any,
    config: Any = None,
    output: str | None = None,
    input_format: str | None = None,
    output_format: str | None = None,
    flag_fields: frozenset[str] = frozenset(),
    on_event: Callable[[Any], None] | None = None,
    keep_table: bool = False,
    handle_signals: bool = False,
    transport: Any = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int | None = None,
    *,
    on_start: Callable[[int | None], None] | None = None,
    on_progress: Callable[[int, float | None], None] | None = None,
    on_row: Callable[[int, Any, list[Any]], None] | None = None,
    traces: Any = None,
    **request: Any,
) -> RunResult:
    """Score the table at ``source`` (a path, a folder or glob, ``-`` for stdin, a trace source
    such as ``mlflow:EXPERIMENT``, or a pandas DataFrame) with ``config`` (a ``Config``, the path or
    bundled name of a YAML config, a dict of its keys, or None for the defaults): ``run`` with a
    ``ScoreRequest`` of these arguments (``request``: any other of its fields, e.g.
    ``junit="junit.xml"``, ``engine="ray"``, ``baseline=...``). Returns the ``RunResult``
    (summary, gate, mapping, notes, ``exit_code``; the table with ``keep_table``).

    Writes the scored table to ``output`` (a path, ``-`` or None for no table) atomically,
    every input row in input order with a status per metric. Raises ``InputError`` /
    ``ConfigError`` (exit 2) before any judging when the input, the mapping or the options are
    unusable (``ScoreRequest.check``: ``limit`` with ``sample``, ``judge.max_cost`` for a model
    with no known price, the outputs, the engine). Provider failures never raise: they become
    error rows, and a fatal one (auth, quota, not found) stops the run with ``summary.fatal``
    set (exit 3). With ``judge.batch`` (and not ``batch_wait=True``), a call that submits to
    the provider's batch API, or finds its batches still running, raises ``BatchSubmitted``
    (exit 4): call again to collect. With ``handle_signals``, Ctrl-C / SIGTERM stops new calls, waits up to
    ``scoring.INTERRUPT_GRACE_S`` (5 s) for the calls in flight (their replies counted and cached; a second signal: at
    once), and unfinished rows get status error, reason 'interrupted'. ``limit`` judges the first rows only, ``sample`` a
    random choice of rows (``seed``); the others are written with status skipped, reason "not
    sampled", and count in no rate. ``traces``: a ``ragjudge.traces.TraceOptions`` for a trace
    source (its fields as the request's ``mlflow_*`` and ``expected_*_attribute``).

    ``on_event(event)`` hears the run as it goes (``ragjudge.plan``'s events): ``Start(total)``
    once judging starts, ``Note(text)`` for each note, ``Progress(rows, cost_usd)`` as rows
    finish (from ragjudge's loop thread) and ``Row(position, id, verdicts)`` as each row's
    verdicts land. The keyword callbacks ``on_start(total)``, ``on_progress(rows, cost_usd)``
    and ``on_row(position, id, verdicts)`` each hear their own kind (the older form).
    """
    unknown = [name for name in request if name not in _KEYWORDS]
    if unknown:
        raise TypeError(_unknown_keyword(unknown[0], request[unknown[0]]))
    if traces is not None:
        request = {"mlflow_tracking_uri": traces.tracking_uri, "mlflow_filter": traces.filter_string,
                   "mlflow_max_traces": traces.max_traces, "expected_facts_attribute": traces.expected_facts,
                   "expected_response_attribute": traces.expected_response, "judge_error_traces": traces.judge_error_traces, **request}
    if not isinstance(config, Config):  # a path or bundled name, a dict of keys, None: as ragjudge.score takes them
        config = load_config(None, config) if isinstance(config, dict) else load_config(config)
    hear = events(on_event, on_start=on_start, on_progress=on_progress, on_row=on_row)
    wanted = ScoreRequest(source, input_format=input_format, output=output, output_format=output_format, flag_fields=flag_fields,
                          keep_table=keep_table, handle_signals=handle_signals, limit=limit, sample=sample,
                          seed=seed if sample is not None or seed not in (None, 0) else None,
                          row_events=hear is not None, **request)
    outcome = run(wanted, config, on_event=hear, transport=transport)
    if outcome.stopped is not None:
        raise KeyboardInterrupt(outcome.stopped)
    if outcome.batch is not None and outcome.batch.pending:
        raise BatchSubmitted("; ".join(outcome.batch.lines), outcome.batch.folder)
    assert outcome.result is not None, "evaluate makes no dry run"
    outcome.result.gate = outcome.gate
    return outcome.result


# evaluate's keyword arguments: its own parameters, then ScoreRequest's other fields (row_events is on_event's, flagged the command's)
_KEYWORDS = tuple(dict.fromkeys([*list(evaluate.__code__.co_varnames[1:evaluate.__code__.co_argcount + evaluate.__code__.co_kwonlyargcount]),
                                 *(f.name for f in fields(ScoreRequest) if f.name not in ("source", "row_events", "flagged"))]))
# where the settings of a run that are not keyword arguments go
_ELSEWHERE = {"metrics": 'the metrics are the config\'s: the second argument, config={"metrics": ["passage_relevance"]}',
              "correction": "correction is ragjudge compare's (--correction), not a run's",
              "row_events": "row_events is set by on_event (it hears Row events when given)",
              "flagged": "flagged records the command line's options (request_of)"}


def _unknown_keyword(name: str, value: Any) -> str:
    """The message for an unknown keyword ``name`` of ``evaluate``: where it goes when it is a
    config setting, with its ``value`` (``config={"passage_relevance": {"at_k": [1, 3]}}``), and the
    nearest valid keyword (difflib); ``help(ragjudge.evaluate)`` lists them all."""
    import difflib


    where = _ELSEWHERE.get(name)
    if where is None:
        if name in Config.model_fields:
            where = f'it is a config setting: config={{"{name}": {value!r}}} (the second argument)'
        else:
            sections = [section for section, field in Config.model_fields.items()
                        if name in (getattr(field.annotation, "model_fields", None) or {})]
            if sections:
                where = "it is a config setting: " + " or ".join(f'config={{"{section}": {{"{name}": {value!r}}}}}' for section in sections) + \
                        " (the second argument)"
    near = difflib.get_close_matches(name, _KEYWORDS, n=1)
    return (f"evaluate() got an unknown keyword argument '{name}'" + (f": {where}" if where else "")
            + (f"; the nearest keyword is '{near[0]}'" if near else "") + "; help(ragjudge.evaluate) lists the keywords")


evaluate.__doc__ = (evaluate.__doc__ or "") + "\n    Keyword arguments: " + ", ".join(_KEYWORDS) + \
    " (any other is refused, TypeError, naming where a config setting goes).\n"

"""Verdicts out to MLflow: ``log_feedback`` writes each verdict of a scored table as an MLflow
``Feedback`` on its trace (span-level metrics on their retriever span, as each metric's
definition says), replacing ragjudge's earlier feedback of the same name on the same span or
trace; ``link_traces`` links the traces to the run as MLflow's evaluation does; ``log_run`` logs
the run's summary as an MLflow run of the experiment, with the scored table and the report as
artifacts. Part of ``ragjudge.traces.mlflow``, which re-exports every public name."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable

from ragjudge.panel import without_members
from ragjudge.errors import ConfigError, InputError
from ragjudge.traces.spans import metric_shapes
from ragjudge.types import SPAN, MetricShape
from ragjudge.traces.mlflow_store import (MARKER, RUN_TYPE, SOURCE_RUN_ID, TOKEN_KEYS, _first_line, _mlflow, _probe, client, experiment_id,
                                          feedback_name, judged_by, model_uri, tracking_uri_or_fail)


# -- verdicts -> feedback ----------------------------------------------------------------------
@dataclass
class FeedbackLog:
    """What ``log_feedback`` did: feedbacks ``logged`` new, ``replaced`` (ragjudge's earlier one
    of that name on that span updated, or overridden when the judge model changed), ``failed``
    with one reason each in ``failures`` (``trace_id/span_id metric: why``)."""

    logged: int = 0
    replaced: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def written(self) -> int:
        return self.logged + self.replaced

    def to_dict(self) -> dict[str, Any]:
        return {"logged": self.logged, "replaced": self.replaced, "failed": self.failed, "failures": self.failures[:20]}


def _metrics(frame: Any) -> list[str]:
    """The metrics of a scored table: each ``NAME`` with ``NAME_status`` and ``NAME_score`` (a panel
    member's columns are its metric's)."""
    return without_members([c[: -len("_status")] for c in frame.columns
                            if str(c).endswith("_status") and f"{str(c)[: -len('_status')]}_score" in frame.columns])


def _cell(row: dict[str, Any], key: str) -> Any:
    """A cell of a scored row, None for a missing value (None, NaN, pandas' NA)."""
    value = row.get(key)
    if value is None or isinstance(value, (str, bool, list, tuple, dict)):
        return value
    if hasattr(value, "tolist") and getattr(value, "ndim", 0):  # a list cell read from Parquet
        return value.tolist()
    import pandas as pd

    return None if pd.isna(value) else value


def _value(shape: MetricShape, score: float) -> Any:
    """A verdict's score as MLflow's judges give their value: ``yes``/``no`` for a binary metric
    (score 1.0/0.0, as MLflow's ``CategoricalRating``), the number for a scale."""
    if shape.binary:
        return "yes" if score >= 0.5 else "no"
    return int(score) if float(score).is_integer() else float(score)


def probability_metadata(row: dict[str, Any], metric: str, model: str | None) -> dict[str, str]:
    """A verdict's probabilities as Feedback metadata, under the keys MLflow itself writes for
    its decision-model judges where the judge is one (``mlflow/genai/scorers/jev.py``'s
    ``make_jev_scorer`` and ``mlflow/genai/judges/decisions.py``, MLflow 3.17; the protocol notes,
    ../shared/protocols/decision-models.md section 6.1): ``systemone/MODEL`` (Jev, Solar Decide)
    -> ``jev.probability``, ``jev.model`` and for a scored metric ``jev.probabilities`` (JSON,
    zero-based level -> P, as Jev's legend numbers them) and ``jev.confidence``;
    ``openai-decisions/MODEL`` -> ``openai.decisions.probability``, ``openai.decisions.model``
    (and ``openai.decisions.probabilities`` / ``.confidence`` likewise); any other judge (the
    embedded one, a chat judge with log-probabilities) -> ``ragjudge.probability`` (and
    ``ragjudge.probabilities`` / ``ragjudge.confidence``). Values are strings, numbers written as
    JSON numbers, as MLflow writes them. Empty where the row has no ``M_probability``."""
    p = _cell(row, f"{metric}_probability")
    if p is None:
        return {}
    judge = str(model or "")
    prefix = "jev" if judge.startswith("systemone/") else "openai.decisions" if judge.startswith("openai-decisions/") else "ragjudge"
    out = {f"{prefix}.probability": json.dumps(float(p))}
    if prefix != "ragjudge":
        out[f"{prefix}.model"] = judge.split("/", 1)[1]
    distribution = _cell(row, f"{metric}_distribution")
    if distribution is not None and len(distribution):
        out[f"{prefix}.probabilities"] = json.dumps({str(level): float(q) for level, q in enumerate(distribution)})
    confidence = _cell(row, f"{metric}_confidence")
    if confidence is not None:
        out[f"{prefix}.confidence"] = json.dumps(float(confidence))
    return out


def _feedback(row: dict[str, Any], metric: str, span_id: str | None, model: str, prompt_versions: dict[str, str],
              name: str | None = None, run_id: str | None = None, shape: MetricShape | None = None) -> Any:
    """One row's verdict of ``metric`` (of ``shape``: default from the default config) as an
    MLflow ``Feedback`` named ``name`` (default: ``feedback_name``), linked to the run
    ``run_id``, or None when it has none (skipped)."""
    from mlflow.entities import AssessmentError, AssessmentSource, AssessmentSourceType, Feedback

    status = _cell(row, f"{metric}_status")
    if status not in ("ok", "error"):
        return None
    missing = _cell(row, f"{metric}_missing")
    missing = list(missing) if missing is not None else []
    cost = _cell(row, f"{metric}_cost_usd")
    metadata = {
        MARKER: "1",
        "prompt_version": str(prompt_versions.get(metric, "")),
        "mode": str(_cell(row, f"{metric}_mode") or ""),
        "missing": json.dumps(missing, ensure_ascii=False),
        "prompt_tokens": str(_cell(row, f"{metric}_prompt_tokens") or 0),
        "completion_tokens": str(_cell(row, f"{metric}_completion_tokens") or 0),
        "cost_usd": "" if cost is None else str(cost),
        "metric": metric,
        "judged_by": judged_by(),
    }
    if run_id:
        metadata[SOURCE_RUN_ID] = run_id
    if status == "ok":
        metadata.update(probability_metadata(row, metric, model))
    shape = shape if shape is not None else metric_shapes([metric])[metric]
    name = name or feedback_name(metric, shape=shape)
    source = AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id=model_uri(model))
    if status == "error":
        error = AssessmentError(error_code="RAGJUDGE_ERROR", error_message=str(_cell(row, f"{metric}_error") or "no verdict"))
        return Feedback(name=name, error=error, source=source, rationale="", metadata=metadata, span_id=span_id)
    return Feedback(name=name, value=_value(shape, float(_cell(row, f"{metric}_score"))), source=source,
                    rationale=str(_cell(row, f"{metric}_rationale") or ""), metadata=metadata, span_id=span_id)


def _earlier(assessments: list[Any], name: str, span_id: str | None) -> Any:
    """ragjudge's valid feedback of ``name`` on ``span_id`` (None: on the trace), if any."""
    for a in assessments:
        if a.name == name and a.valid is not False and getattr(a, "feedback", None) is not None \
                and (a.span_id or None) == span_id and MARKER in (a.metadata or {}):
            return a
    return None


def _assessments(tracing: Any, trace_ids: list[str], size: int = 200) -> dict[str, list[Any]]:
    """The assessments already on ``trace_ids``, read ``size`` traces a call (the store's
    ``batch_get_trace_infos``, no spans); empty where the store has no such call or it fails
    (each trace is then read on its own, and fails there with its reason)."""
    found: dict[str, list[Any]] = {}
    try:
        for start in range(0, len(trace_ids), size):
            for info in tracing.store.batch_get_trace_infos(trace_ids[start:start + size]):
                found[info.trace_id] = list(info.assessments or [])
    except Exception:  # noqa: BLE001 - not implemented by this store, or failing: trace by trace
        return {}
    return found


def log_feedback(scored: Any, tracking_uri: str | None = None, model: str | None = None,
                 prompt_versions: dict[str, str] | None = None, metrics: Iterable[str] | None = None,
                 config: Any = None, workers: int | None = None, summary: Any = None,
                 names: dict[str, str] | None = None, run_id: str | None = None) -> FeedbackLog:
    """Log each verdict of ``scored`` (a scored rows table of ``read_traces``: ``trace_id``,
    ``span_id``, ``trace_first_row``, ``NAME_status``/``_score``/``_rationale``/``_error``/
    ``_missing``/``_prompt_tokens``/``_completion_tokens``/``_cost_usd``, ``sufficiency_mode``)
    as an MLflow ``Feedback`` on its trace.

    What is logged of each metric comes from its definition in ``config`` (a ``ragjudge.Config``;
    default: the default config, with the built-in and bundled metrics; ``metric_shapes``), never
    from its name. Name: MLflow's built-in scorer's for the same judgment (the judge's
    ``mlflow_name``: ``retrieval_sufficiency``, ``retrieval_groundedness``; completeness, which
    MLflow has not against a ground truth, ``response_completeness``; ``feedback_name``), or
    ``names``' (metric -> name); value ``"yes"``/``"no"`` for a binary metric (sufficiency,
    groundedness), the score (1..5 for completeness) for a scale; the rationale; source
    ``LLM_JUDGE`` with ``model`` (default: the ``judge_model`` column) as its id, in MLflow's
    form (``openai:/gpt-4o-mini``); metadata ``ragjudge``, ``judged_by`` (ragjudge and its
    version), ``metric``, ``prompt_version`` (from ``prompt_versions``, metric -> version),
    ``mode``, ``missing`` (JSON list), ``prompt_tokens``, ``completion_tokens``, ``cost_usd``
    (a row answered from the cache keeps the earlier feedback's), and with ``run_id``
    MLflow's ``mlflow.assessment.sourceRunId`` (the run's evaluation views find it). An error row
    logs a Feedback whose ``error`` holds the reason, and so does a judged trace without a
    retriever span for a span-level metric (on the trace, as MLflow's scorer logs its "No
    retrieval context found"); another skipped row logs nothing. A metric that reads the context
    (level ``span``: sufficiency, groundedness) is logged on its row's retriever span
    (``span_id``); the others once per trace, from the row flagged ``trace_first_row``.

    A re-run replaces: ragjudge's earlier feedback of that name on that span is updated in
    place (``update_assessment``), or overridden (a new one with ``overrides``, the old marked
    invalid) when the judge model, its immutable source, changed. Calls run in ``workers``
    threads, one trace each (default 8; 1 for a SQLite store, which takes one writer); the
    earlier feedback of every trace is read first, 200 traces a call (``batch_get_trace_infos``).
    Failures raise nothing: each is counted with its reason in the ``FeedbackLog``; a store
    that cannot be reached fails every feedback with that reason. ``ConfigError`` when no
    tracking store is given (``tracking_uri_or_fail``); ``InputError`` for a table without a
    ``trace_id`` column (not read from traces); ``ConfigError`` for a metric ``config`` does not
    define. ``summary`` (the run's ``ragjudge.gate.Summary``)
    gives the prompt versions and the judge model when ``prompt_versions``/``model`` are not given."""
    _mlflow()
    from mlflow.tracing.client import TracingClient

    uri = tracking_uri_or_fail(tracking_uri, "logging feedback to MLflow")
    frame = scored
    if "trace_id" not in frame.columns:
        raise InputError("this table has no trace_id column: feedback goes to MLflow traces, so score rows read from them "
                         "(ragjudge.traces.mlflow.read_traces, or ragjudge score mlflow:EXPERIMENT)")
    chosen = list(metrics) if metrics is not None else _metrics(frame)
    shapes = metric_shapes(chosen, config)
    if prompt_versions is None and summary is not None:
        prompt_versions = {name: m.prompt_version for name, m in summary.metrics.items()}
    if model is None and summary is not None and summary.judge_model:
        model = summary.judge_model
    versions = dict(prompt_versions or {})
    rows = frame.to_dict("records")
    # per trace: [(span_id, feedback)]
    plan: dict[str, list[tuple[str | None, Any, bool]]] = {}
    planned: set[tuple[str, str | None, str]] = set()  # a span's verdict is one feedback, even where the table holds the span twice
    result = FeedbackLog()
    for row in rows:
        trace_id = _cell(row, "trace_id")
        if not trace_id:
            continue
        judge_model = model or str(_cell(row, "judge_model") or "ragjudge")
        first = _cell(row, "trace_first_row")
        for metric in chosen:
            on_span = shapes[metric].level == SPAN
            if not on_span and first is not None and not bool(first):
                continue  # a trace-level metric: judged and logged once, on the trace's first row
            span_id = _cell(row, "span_id") if on_span else None
            if (str(trace_id), span_id or None, metric) in planned:
                continue
            planned.add((str(trace_id), span_id or None, metric))
            source = row
            if on_span and not _cell(row, "span_id") and _cell(row, f"{metric}_status") == "skipped" and not _cell(row, "trace_skip_reason"):
                # a judged trace with no retriever span: an error feedback on the trace, as MLflow's scorer logs one
                source = {**row, f"{metric}_status": "error"}
            feedback = _feedback(source, metric, span_id or None, judge_model, versions, feedback_name(metric, names, shapes[metric]),
                                 run_id, shapes[metric])
            if feedback is not None:
                cached = _cell(row, f"{metric}_cached") is True
                plan.setdefault(str(trace_id), []).append((span_id or None, feedback, cached))
    total = sum(len(v) for v in plan.values())
    why = _probe(uri)
    if why is not None:
        result.failed = total
        result.failures = [f"tracking store {uri} cannot be reached: {why}"]
        return result
    tracing = TracingClient(tracking_uri=uri)
    known = _assessments(tracing, list(plan))

    def one_trace(trace_id: str, items: list[tuple[str | None, Any, bool]]) -> FeedbackLog:
        done = FeedbackLog()
        try:
            existing = known[trace_id] if trace_id in known else list(tracing.get_trace_info(trace_id).assessments or [])
        except Exception as err:  # noqa: BLE001 - a store failure loses no verdict: it is counted
            done.failed = len(items)
            done.failures.append(f"{trace_id}: trace not readable: {_first_line(err)}")
            return done
        for span_id, feedback, cached in items:
            where = f"{trace_id}/{span_id or '-'} {feedback.name}"
            try:
                earlier = _earlier(existing, feedback.name, span_id)
                if cached and earlier is not None:  # answered from the cache: the tokens and cost are the call's that made it
                    kept = {key: (earlier.metadata or {}).get(key) for key in TOKEN_KEYS if (earlier.metadata or {}).get(key) is not None}
                    feedback.metadata = {**(feedback.metadata or {}), **kept}
                if earlier is not None and earlier.source.source_id == feedback.source.source_id:
                    tracing.update_assessment(trace_id=trace_id, assessment_id=earlier.assessment_id, assessment=feedback)
                    done.replaced += 1
                elif earlier is not None:
                    feedback.overrides = earlier.assessment_id
                    tracing.log_assessment(trace_id, feedback)
                    done.replaced += 1
                else:
                    tracing.log_assessment(trace_id, feedback)
                    done.logged += 1
            except Exception as err:  # noqa: BLE001 - see above
                done.failed += 1
                done.failures.append(f"{where}: {_first_line(err)}")
        return done

    if workers is None:
        workers = 1 if uri.startswith("sqlite:") else 8
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for done in pool.map(lambda item: one_trace(*item), list(plan.items())):
            result.logged += done.logged
            result.replaced += done.replaced
            result.failed += done.failed
            result.failures.extend(done.failures)
    return result


def _summary_document(summary: Any) -> dict[str, Any]:
    if isinstance(summary, dict):
        return summary
    return {"rows": summary.rows, "judge_model": summary.judge_model, "provider_calls": summary.provider_calls,
            "cost_usd": summary.cost_usd, "metrics": {name: m.to_dict() for name, m in summary.metrics.items()}}


def start_run(tracking_uri: str | None = None, experiment: str | None = None, trace_id: str | None = None,
              run_name: str | None = None) -> str:
    """Create the MLflow run of a ragjudge run in ``experiment`` (name or id; default: the
    experiment of ``trace_id``), tagged as MLflow tags its own evaluation runs
    (``mlflow.runType`` ``genai_evaluate``: its evaluation-runs view lists it), and return its id:
    the feedback logged after it points at it (``mlflow.assessment.sourceRunId``), and ``log_run``
    fills it in. ``InputError`` for an unreachable store or a missing experiment."""
    mlflow_client = client(tracking_uri)
    if experiment is not None:
        exp = experiment_id(mlflow_client, experiment)
    elif trace_id is not None:
        exp = mlflow_client.get_trace(trace_id, display=False).info.experiment_id
    else:
        raise ConfigError("an MLflow run needs the experiment (name or id) or one of its trace ids")
    run = mlflow_client.create_run(exp, run_name=run_name, tags={"mlflow.source.name": "ragjudge", RUN_TYPE[0]: RUN_TYPE[1]})
    return run.info.run_id


LINKS_PER_CALL = 100  # MLflow's MAX_TRACE_LINKS_PER_REQUEST: trace ids one link_traces_to_run call takes


def link_traces(run_id: str, trace_ids: Iterable[str], tracking_uri: str | None = None) -> tuple[int, str | None]:
    """Link ``trace_ids`` to the run ``run_id`` as MLflow's own evaluation links the traces it
    judged (``MlflowClient.link_traces_to_run``, ``LINKS_PER_CALL`` a call): the run's page lists
    them and ``mlflow.search_traces(run_id=...)`` finds them. Returns (traces linked, why the
    rest were not, or None); raises nothing: an MLflow without the call (before 3.2) or a store
    that refuses says why, and the feedback and the run are kept all the same."""
    ids = list(dict.fromkeys(str(t) for t in trace_ids if t))
    linked = 0
    try:
        mlflow_client = client(tracking_uri)
        for start in range(0, len(ids), LINKS_PER_CALL):
            mlflow_client.link_traces_to_run(ids[start:start + LINKS_PER_CALL], run_id)
            linked += len(ids[start:start + LINKS_PER_CALL])
    except AttributeError:
        return linked, "this MLflow cannot link traces to a run (MlflowClient.link_traces_to_run came in MLflow 3.2)"
    except Exception as err:  # noqa: BLE001 - the feedback is logged; the link is the run page's view of it
        return linked, _first_line(err)
    return linked, None


def log_run(summary: Any, tracking_uri: str | None = None, experiment: str | None = None, scored_path: str | None = None,
            report_path: str | None = None, feedback: FeedbackLog | None = None, run_name: str | None = None,
            trace_id: str | None = None, run_id: str | None = None, names: dict[str, str] | None = None,
            config: Any = None) -> str:
    """Log a run's summary as an MLflow run of ``experiment`` (name or id; default: the
    experiment of ``trace_id``), or into the run ``run_id`` made by ``start_run``, and return
    the run's id. Besides ragjudge's own metrics, each metric's mean as MLflow's evaluation logs
    it for its feedback (``retrieval_sufficiency/mean``: the share of "yes"; ``response_completeness/mean``;
    named as the feedback is: ``names``, else the metric's ``mlflow_name`` in ``config``,
    default the default config).

    ``summary``: the ``--summary-json`` document (``ragjudge.reports.summary.summary_dict``) or a
    ``ragjudge.gate.Summary``. Metrics: ``rows``, ``cost_usd``, ``exit_code``,
    ``provider_calls``, and per metric ``NAME.pass_rate``, ``.mean_score``, ``.error_rate``,
    ``.skip_rate``, ``.rows``, ``.ok``, ``.error``, ``.skipped``, ``.passed``,
    ``.prompt_tokens``, ``.completion_tokens``, ``.cost_usd`` (those with a value); with
    ``feedback``, ``feedback.logged``/``.replaced``/``.failed``. Params: ``judge_model``,
    ``NAME.prompt_version``, ``NAME.threshold``. Artifacts: ``summary.json``, and the files
    ``scored_path`` and ``report_path`` when given. ``InputError`` for an unreachable store or
    a missing experiment."""
    _mlflow()
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.time import get_current_time_millis

    mlflow_client = client(tracking_uri)
    if run_id is None:
        run_id = start_run(tracking_uri, experiment, trace_id, run_name)
    document = _summary_document(summary)
    now = get_current_time_millis()
    values: dict[str, Any] = {k: document.get(k) for k in ("rows", "cost_usd", "exit_code", "provider_calls")}
    params = {"judge_model": document.get("judge_model") or ""}
    for name, m in (document.get("metrics") or {}).items():
        for key in ("pass_rate", "mean_score", "error_rate", "skip_rate", "rows", "ok", "error", "skipped", "passed",
                    "prompt_tokens", "completion_tokens", "cost_usd"):
            values[f"{name}.{key}"] = m.get(key)
        params[f"{name}.prompt_version"] = m.get("prompt_version") or ""
        params[f"{name}.threshold"] = m.get("threshold")
        try:
            shape: MetricShape | None = metric_shapes([name], config)[name]
        except ConfigError:  # a metric the config does not define: its feedback is named after it
            shape = MetricShape()
        values[f"{feedback_name(name, names, shape)}/mean"] = m.get("mean_score")  # as MLflow's evaluation aggregates its feedback
    if feedback is not None:
        values.update({"feedback.logged": feedback.logged, "feedback.replaced": feedback.replaced,
                       "feedback.failed": feedback.failed})
    try:
        mlflow_client.log_batch(
            run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)],
            params=[Param(k, str(v)) for k, v in params.items() if v is not None],
            tags=[RunTag("ragjudge.gate", "passed" if (document.get("gate") or {}).get("passed") else "failed")]
            if "gate" in document else [],
        )
        mlflow_client.log_dict(run_id, {**document, **({"feedback": feedback.to_dict()} if feedback else {})}, "summary.json")
        for path in (scored_path, report_path):
            if path:
                mlflow_client.log_artifact(run_id, str(path))
    except BaseException:
        mlflow_client.set_terminated(run_id, "FAILED")
        raise
    mlflow_client.set_terminated(run_id, "FINISHED")
    return run_id


__all__ = ["FeedbackLog", "link_traces", "log_feedback", "log_run", "probability_metadata", "start_run"]

"""MLflow's call shapes on ragjudge's judge: ``is_context_sufficient`` (as
``mlflow.genai.judges.is_context_sufficient``) and the ``RetrievalSufficiency`` scorer (as
``mlflow.genai.scorers.RetrievalSufficiency``, accepted by ``mlflow.genai.evaluate``), and the
decorator scorers ``retrieval_sufficiency`` and ``response_completeness`` that MLflow registers,
serializes and runs in monitoring (``RetrievalSufficiency().register()`` registers the first).

    from ragjudge.compat.mlflow import is_context_sufficient
    feedback = is_context_sufficient(request="What is the capital of France?",
                                     context=[{"content": "Paris is the capital of France."}],
                                     expected_facts=["Paris is the capital of France."])
    feedback.value, feedback.rationale        # "yes", "..."

Semantics as MLflow's: grounded (``sufficiency.mode: grounded``: a call without expectations
gets a feedback whose ``error`` says "no expected_facts or expected_response"), the expected
response winning over the facts (``sufficiency.ground_truth: response``). The feedback is
MLflow's own ``mlflow.entities.Feedback`` when mlflow is importable (the ``[mlflow]`` extra),
else ``Feedback`` below with the same fields. Every call goes through ``ragjudge.compat.judge_row``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ragjudge.compat import ajudge_row, judge_row
from ragjudge.records import request_text, response_text
from ragjudge.traces.spans import JUDGED_STATES, request_of, response_of, trace_rows
from ragjudge.traces.mlflow import judged_by, model_uri, trace_view

__all__ = ["CONTEXT_SUFFICIENCY_FEEDBACK_NAME", "Feedback", "RetrievalSufficiency", "ais_context_sufficient", "is_context_sufficient",
           "response_completeness", "retrieval_sufficiency"]

CONTEXT_SUFFICIENCY_FEEDBACK_NAME = "context_sufficiency"  # MLflow's default name of is_context_sufficient's feedback
MLFLOW_SETTINGS = {"sufficiency": {"mode": "grounded", "ground_truth": "response"}}
TRACE_SETTINGS = {"sufficiency": {"mode": "auto", "ground_truth": "response"}}  # a trace without expectations: reference-free


@dataclass
class Feedback:
    """The fields of ``mlflow.entities.Feedback`` that ragjudge fills, for when mlflow is not
    installed: ``name``, ``value`` ("yes" / "no", None on error), ``rationale``, ``error``
    (text), ``metadata`` (str -> str), ``source`` (``{"source_type": "LLM_JUDGE", "source_id":
    model}``), ``span_id``."""

    name: str = CONTEXT_SUFFICIENCY_FEEDBACK_NAME
    value: str | None = None
    rationale: str | None = None
    error: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    span_id: str | None = None


def _row(request: Any, context: Any, expected_facts: Any, expected_response: Any) -> dict[str, Any]:
    return {"request": request, "context": context, "expected_facts": expected_facts, "expected_response": expected_response}


def _metadata(judged: Any) -> dict[str, str]:
    """A feedback's metadata, in the keys ``ragjudge score --mlflow-log-feedback`` writes
    (``judged_by``: ragjudge and its version; ``mode``, ``missing`` as JSON), with the row's
    ``judge_model``, ``ground_truth`` and ``cached``."""
    out = {"judged_by": judged_by(), "judge_model": str(judged.get("judge_model") or "")}
    for key in ("mode", "ground_truth"):
        if judged.get(f"sufficiency_{key}"):
            out[key] = str(judged[f"sufficiency_{key}"])
    if judged.get("sufficiency_missing"):
        out["missing"] = json.dumps(list(judged["sufficiency_missing"]), ensure_ascii=False)
    if judged.get("sufficiency_cached") is not None:
        out["cached"] = str(bool(judged["sufficiency_cached"])).lower()
    return out


def to_feedback(judged: Any, name: str | None = None) -> Any:
    """A ``judge_row`` result for sufficiency -> a feedback (MLflow's own when importable)."""
    status = judged.get("sufficiency_status")
    value: Any = None
    if status == "ok":
        value = "yes" if judged.get("sufficiency_score") == 1.0 else "no"
        try:  # MLflow's own value type (a str enum: it equals "yes" / "no")
            from mlflow.genai.judges import CategoricalRating

            value = CategoricalRating(value)
        except ImportError:
            pass
    error = None if status == "ok" else str(judged.get("sufficiency_error") or status)
    fields = {"name": name or CONTEXT_SUFFICIENCY_FEEDBACK_NAME, "value": value, "rationale": judged.get("sufficiency_rationale"),
              "error": error, "metadata": _metadata(judged)}
    model = model_uri(str(judged.get("judge_model") or ""))  # MLflow's form, openai:/gpt-4o-mini, as the command writes it
    try:
        from mlflow.entities import AssessmentSource, Feedback as MlflowFeedback
    except ImportError:
        return Feedback(**fields, source={"source_type": "LLM_JUDGE", "source_id": model})
    return MlflowFeedback(**fields, source=AssessmentSource(source_type="LLM_JUDGE", source_id=model))


def is_context_sufficient(*, request: str, context: Any, expected_facts: list[str] | None = None, expected_response: str | None = None,
                          name: str | None = None, model: str | None = None) -> Any:
    """Whether ``context`` (passages: strings, ``{"content"|"page_content"|"text": ...}``
    dicts, or any object, judged as its JSON text) holds what ``request`` needs to state the
    expected response (or, without one, the expected facts). Returns a feedback: ``value``
    "yes"/"no", ``rationale``, ``name`` (default ``context_sufficiency``), ``error`` (why no
    verdict: no expectations, a provider failure), ``source`` (``LLM_JUDGE``, the judge model
    in MLflow's form, ``openai:/gpt-4o-mini``, as ``ragjudge score --mlflow-log-feedback``
    writes it) and ``metadata`` (``judged_by``: ragjudge and its version; mode, ground truth
    used, missing facts, judge model). ``model``: a litellm model string or MLflow's
    ``provider:/model``; default the configured judge (``ragjudge.compat.configure``)."""
    judged = judge_row("sufficiency", _row(request, context, expected_facts, expected_response), model=model, **MLFLOW_SETTINGS)
    return to_feedback(judged, name)


async def ais_context_sufficient(*, request: str, context: Any, expected_facts: list[str] | None = None,
                                 expected_response: str | None = None, name: str | None = None, model: str | None = None) -> Any:
    """``is_context_sufficient`` for async code."""
    judged = await ajudge_row("sufficiency", _row(request, context, expected_facts, expected_response), model=model, **MLFLOW_SETTINGS)
    return to_feedback(judged, name)


def _passages_of(outputs: Any) -> Any:
    """The retrieved context of an MLflow record's ``outputs`` (``retrieved_context``), else None."""
    if isinstance(outputs, dict):
        for key in ("retrieved_context", "context", "retrieved_content"):
            if outputs.get(key) is not None:
                return outputs[key]
    return None


def _skipped(reason: str) -> str:
    """Why a trace is not judged: its state, skipped as ``ragjudge score`` skips it."""
    return (f"{reason}: skipped, as ragjudge score skips it; RetrievalSufficiency(judge_error_traces=True) and "
            "ragjudge score --judge-error-traces judge it, as MLflow's scorer does")


def _score_trace(trace: Any, inputs: Any, outputs: Any, expectations: dict[str, Any] | None, name: str, model: str | None,
                 judge_error_traces: bool = False) -> Any:
    expectations = dict(expectations or {})
    rows: list[dict[str, Any]] = []
    if trace is not None:
        for found in trace_rows(trace_view(trace)):
            if found.get("span_id") is None:
                continue
            if found.get("trace_skip_reason") and not judge_error_traces:  # one default with the command: an ERROR trace is skipped
                feedback = to_feedback({"sufficiency_status": "skipped", "sufficiency_error": _skipped(found["trace_skip_reason"])}, name)
                feedback.span_id = found["span_id"]
                rows.append({"span_id": found["span_id"], "feedback": feedback})
                continue
            rows.append({"span_id": found["span_id"], "request": found["request"], "context": found["context"],
                         "expected_facts": expectations.get("expected_facts", found.get("expected_facts")),
                         "expected_response": expectations.get("expected_response", found.get("expected_response"))})
    if not rows and _passages_of(outputs) is not None:  # a record with its context in outputs, as configs/mlflow.yaml reads it
        rows.append({"span_id": None, "request": request_text(inputs), "context": _passages_of(outputs),
                     "expected_facts": expectations.get("expected_facts"), "expected_response": expectations.get("expected_response")})
    if not rows:
        raise ValueError("No retrieval context found: the trace has no top-level RETRIEVER span and outputs hold no retrieved_context; "
                         "the RetrievalSufficiency scorer needs one of them")
    feedbacks = []
    for row in rows:
        span_id = row.pop("span_id")
        if "feedback" in row:
            feedbacks.append(row["feedback"])
            continue
        if row["request"] is not None and not isinstance(row["request"], str):
            row["request"] = json.dumps(row["request"], ensure_ascii=False, default=str)
        # without expectations the trace is judged reference-free, as `ragjudge score` judges the same trace (MLflow judges it
        # against an empty ground truth; docs/from-mlflow.md)
        settings = MLFLOW_SETTINGS if row["expected_facts"] or row["expected_response"] else TRACE_SETTINGS
        feedback = to_feedback(judge_row("sufficiency", row, model=model, **settings), name)
        if span_id is not None:
            feedback.span_id = span_id
        feedbacks.append(feedback)
    return feedbacks  # one per retriever span, as MLflow's scorer returns them


def _completeness_feedback(inputs: Any, outputs: Any, expectations: dict[str, Any] | None, trace: Any, name: str,
                           model: str | None) -> Any:
    """A trace's (or record's) response completeness as a feedback: the response against the
    expected response or facts (Azure's ResponseCompletenessEvaluator, 1..5, pass at 3), read
    from the trace's root span and expectations as ``ragjudge score`` reads them."""
    expectations = dict(expectations or {})
    request, response = request_text(inputs), response_text(outputs)
    skip = None
    if trace is not None:
        view = trace_view(trace)
        skip = None if view.state in JUDGED_STATES else f"trace state {view.state}"  # as the command skips it
        root = view.root
        if root is not None:
            request, response = request_of(root.inputs), response_of(root.outputs)
        for key, value in view.expectations.items():
            expectations.setdefault(key, value)
    row = {"request": request if isinstance(request, str) or request is None else json.dumps(request, default=str),
           "response": response if isinstance(response, str) or response is None else json.dumps(response, default=str),
           "expected_facts": expectations.get("expected_facts"), "expected_response": expectations.get("expected_response")}
    judged = judge_row("completeness", row, model=model) if skip is None else \
        {"completeness_status": "skipped", "completeness_error": _skipped(skip).replace("RetrievalSufficiency(judge_error_traces=True) and ", "")}
    status = judged.get("completeness_status")
    score = judged.get("completeness_score")
    fields = {"name": name, "value": None if status != "ok" else (int(score) if float(score).is_integer() else float(score)),
              "rationale": judged.get("completeness_rationale"), "error": None if status == "ok" else str(judged.get("completeness_error") or status),
              "metadata": {"judged_by": judged_by(), "judge_model": str(judged.get("judge_model") or ""),
                           "missing": json.dumps(list(judged.get("completeness_missing") or []), ensure_ascii=False)}}
    model_id = model_uri(str(judged.get("judge_model") or ""))
    from mlflow.entities import AssessmentSource, Feedback as MlflowFeedback

    return MlflowFeedback(**fields, source=AssessmentSource(source_type="LLM_JUDGE", source_id=model_id))


def _make_registrable() -> tuple[Any, Any]:
    """MLflow decorator scorers (``@mlflow.genai.scorers.scorer``), which MLflow can register,
    serialize (their code, which imports ragjudge) and run in monitoring: class scorers cannot
    be registered ("Scorer must be a builtin or decorator scorer"). The judge model is the
    compat default (``ragjudge.compat.configure``, else the config's)."""
    try:
        from mlflow.genai.scorers import scorer
    except ImportError:
        return None, None

    @scorer(name="retrieval_sufficiency")
    def retrieval_sufficiency(*, inputs=None, outputs=None, expectations=None, trace=None):  # noqa: ANN001, ANN202 - MLflow's shape
        from ragjudge.compat.mlflow import _score_trace

        return _score_trace(trace, inputs, outputs, expectations, "retrieval_sufficiency", None)

    @scorer(name="response_completeness")
    def response_completeness(*, inputs=None, outputs=None, expectations=None, trace=None):  # noqa: ANN001, ANN202 - MLflow's shape
        from ragjudge.compat.mlflow import _completeness_feedback

        return _completeness_feedback(inputs, outputs, expectations, trace, "response_completeness", None)

    return retrieval_sufficiency, response_completeness


retrieval_sufficiency, response_completeness = _make_registrable()


def _sufficiency_with_model(model: str) -> Any:
    """The decorator scorer ``retrieval_sufficiency`` judging with ``model``: the model is the
    default of its keyword ``model``, which MLflow keeps in the signature it serializes
    (``call_signature``) and never passes (it passes only ``inputs``, ``outputs``,
    ``expectations``, ``trace``), so the registered scorer, rebuilt from its code where it runs,
    judges with it."""
    from mlflow.genai.scorers import scorer

    def retrieval_sufficiency(*, inputs=None, outputs=None, expectations=None, trace=None, model=None):  # noqa: ANN001, ANN202 - MLflow's shape
        from ragjudge.compat.mlflow import _score_trace

        return _score_trace(trace, inputs, outputs, expectations, "retrieval_sufficiency", model)

    retrieval_sufficiency.__kwdefaults__ = {**(retrieval_sufficiency.__kwdefaults__ or {}), "model": model}
    return scorer(name="retrieval_sufficiency")(retrieval_sufficiency)


def _make_scorer_class() -> Any:
    try:
        from mlflow.genai.scorers import Scorer
    except ImportError:
        return None

    class RetrievalSufficiency(Scorer):  # type: ignore[misc, valid-type]
        """MLflow's ``RetrievalSufficiency`` on ragjudge's judge: a ``mlflow.genai.scorers.Scorer``
        that ``mlflow.genai.evaluate(data=..., scorers=[RetrievalSufficiency()])`` runs. Each
        top-level retriever span of the trace gets its own feedback (``span_id`` set), as
        MLflow's does; a record without a retriever span is judged on ``outputs["retrieved_context"]``;
        a trace without expectations is judged reference-free, as ``ragjudge score`` judges it.
        ``model``: a litellm model string or MLflow's ``provider:/model``. A trace in state
        ERROR (its app raised) is skipped, as ``ragjudge score`` skips it: one feedback per
        retriever span whose ``error`` says so; ``judge_error_traces=True`` judges it, as MLflow's
        scorer and ``ragjudge score --judge-error-traces`` do (the registered decorator scorers
        skip it too)."""

        name: str = "retrieval_sufficiency"
        model: str | None = None
        judge_error_traces: bool = False
        required_columns: set[str] = {"inputs", "trace"}  # as MLflow's RetrievalSufficiency declares them

        def validate_columns(self, columns: set[str]) -> None:
            """MLflow's check before an evaluation: the ``required_columns`` must be there. (MLflow's
            own scorer also requires an expectation; ragjudge judges a trace without one
            reference-free, as ``ragjudge score`` does.)"""
            from mlflow.genai.scorers.builtin_scorers import MissingColumnsException

            missing = self.required_columns - set(columns)
            if missing:
                raise MissingColumnsException(self.name, missing)

        def __call__(self, *, inputs: Any = None, outputs: Any = None, expectations: dict[str, Any] | None = None,
                     trace: Any = None) -> Any:
            return _score_trace(trace, inputs, outputs, expectations, self.name, self.model, self.judge_error_traces)

        def register(self, *, name: str | None = None, experiment_id: str | None = None) -> Any:
            """Register the scorer with MLflow (for its production monitoring): as the decorator
            scorer ``retrieval_sufficiency``, which MLflow can serialize (a class scorer it
            cannot). It judges with this scorer's ``model`` where it runs (kept in the
            serialized signature); without one, with the compat default there
            (``ragjudge.compat.configure``). MLflow's monitoring (``.start()`` on what this
            returns) is refused by open-source MLflow (3.17): "Scorer 'retrieval_sufficiency'
            does not use a gateway model. Automatic evaluation is only supported for scorers that
            use gateway models." (its online scoring runs only scorers whose serialized form
            names a ``gateway:/`` model; a code scorer has none; docs/from-mlflow.md)."""
            chosen = _sufficiency_with_model(self.model) if self.model else retrieval_sufficiency
            return chosen.register(name=name or self.name, experiment_id=experiment_id)

    return RetrievalSufficiency


_Scorer = _make_scorer_class()


class _NoMlflow:
    """Stands for ``RetrievalSufficiency`` when mlflow is not installed: calling it raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ImportError("RetrievalSufficiency needs mlflow: pip install \".[mlflow]\" in a ragjudge checkout")


RetrievalSufficiency: Any = _Scorer if _Scorer is not None else _NoMlflow

"""MLflow reached: the client of a tracking store (``client``: its URI checked, the store probed),
an experiment by name or id, the names ragjudge logs under (``feedback_name``, ``model_uri``,
``judged_by``) and the keys the reader and the sink share. Part of ``ragjudge.traces.mlflow``,
which re-exports every public name; MLflow is imported only when a function here runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ragjudge.errors import ConfigError, InputError
from ragjudge.traces.spans import metric_shapes
from ragjudge.types import MetricShape
from ragjudge import __version__

INSTALL = 'pip install ".[mlflow]" in a ragjudge checkout'
STORE_HINT = "set MLFLOW_TRACKING_URI or pass --mlflow-tracking-uri (e.g. http://localhost:5000 or sqlite:///mlflow.db)"
PAGE_SIZE = 500  # traces per search_traces call (the SQL store's own cap is far above)
MARKER = "ragjudge"  # metadata key on every feedback ragjudge logs: how a re-run finds its own
EXPECTATIONS = ("expected_facts", "expected_response")
SOURCE_RUN_ID = "mlflow.assessment.sourceRunId"  # MLflow's metadata key linking an assessment to its run
RUN_TYPE = ("mlflow.runType", "genai_evaluate")  # the tag MLflow's evaluation-runs view lists a run by
TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "cost_usd")


def feedback_name(metric: str, names: dict[str, str] | None = None, shape: MetricShape | None = None) -> str:
    """The feedback name of ``metric``: ``names``' (``--mlflow-feedback-name``), else that of
    MLflow's built-in scorer of the same judgment, from the metric's definition (``shape``, the
    judge's ``mlflow_name``: ``retrieval_sufficiency``, ``retrieval_groundedness``,
    ``response_completeness``; default: from the default config, ``metric_shapes``), so that
    MLflow's own views, filters and metrics (``retrieval_sufficiency/mean``) see it; else the
    metric's own."""
    if (names or {}).get(metric):
        return names[metric]  # type: ignore[index]
    if shape is None:
        try:
            shape = metric_shapes([metric])[metric]
        except ConfigError:  # a metric the default config does not define: its own name
            return metric
    return shape.mlflow_name or metric


def model_uri(model: str) -> str:
    """A judge model as MLflow's judges name their source: ``openai:/gpt-4o-mini`` for litellm's
    ``openai/gpt-4o-mini`` (a name already in that form stays)."""
    if ":/" in model or "/" not in model:
        return model
    provider, _, name = model.partition("/")
    return f"{provider}:/{name}"


def judged_by() -> str:
    """The ``judged_by`` metadata of every feedback ragjudge writes (the command's and
    ``ragjudge.compat.mlflow``'s alike): ``ragjudge`` and its version."""
    return f"ragjudge {__version__}"


def needs_mlflow() -> None:
    """``ConfigError`` (exit 2) with the install line when MLflow is not installed."""
    _mlflow()


def _mlflow() -> Any:
    try:
        import mlflow
    except ImportError as err:
        raise ConfigError(f"reading or writing MLflow traces needs MLflow: {INSTALL}") from err
    return mlflow


# -- the tracking store ------------------------------------------------------------------------
def tracking_uri_or_fail(tracking_uri: str | None, what: str = "reading MLflow traces") -> str:
    """``tracking_uri``, else ``MLFLOW_TRACKING_URI``, else one set by ``mlflow.set_tracking_uri``;
    ``ConfigError`` naming the fix when there is none (MLflow's own default would make an
    empty store in the current folder)."""
    if tracking_uri:
        return tracking_uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    mlflow = _mlflow()
    try:
        from mlflow.tracking._tracking_service.utils import is_tracking_uri_set
        if is_tracking_uri_set():
            return mlflow.get_tracking_uri()
    except ImportError:  # a later MLflow moved it: no way to tell a set URI from the default
        pass
    raise ConfigError(f"{what} needs a tracking store: {STORE_HINT}")


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:300]


def _probe(uri: str) -> str | None:
    """Why the store cannot be reached, None when it may be: an HTTP server that does not
    answer one request in 5 s (MLflow's own client retries a dead server for minutes), a
    SQLite URI whose file does not exist (MLflow would make an empty store there). A store of
    another scheme is tried when its client is made."""
    if uri.startswith("sqlite:///"):  # a missing file would be made, empty: a typo read as "no traces"
        path = uri[len("sqlite:///"):].split("?", 1)[0]
        return None if path in ("", ":memory:") or Path(path).is_file() else f"no SQLite file {path}"
    if not uri.startswith(("http://", "https://")):
        return None
    import requests

    try:
        requests.get(uri.rstrip("/") + "/health", timeout=5)
    except requests.RequestException as err:
        return _first_line(err)
    return None


def client(tracking_uri: str | None = None) -> Any:
    """An ``MlflowClient`` of the store (``tracking_uri_or_fail``), checked to be reachable:
    ``InputError`` naming the URI and the fix when it is not."""
    _mlflow()
    from mlflow import MlflowClient

    uri = tracking_uri_or_fail(tracking_uri)
    why = _probe(uri)
    if why is None:
        try:
            made = MlflowClient(tracking_uri=uri)
            made.search_experiments(max_results=1)  # a SQL store is opened (and made) here
            return made
        except Exception as err:  # noqa: BLE001 - any failure here means the store is unusable
            why = _first_line(err)
    raise InputError(f"the MLflow tracking store {uri} cannot be reached ({why}); start it or fix the URI: {STORE_HINT}")


def experiment_id(mlflow_client: Any, experiment: str) -> str:
    """The id of ``experiment``, given by name or by id; ``InputError`` listing the
    experiments there when it does not exist."""
    from mlflow.exceptions import MlflowException

    found = mlflow_client.get_experiment_by_name(str(experiment))
    if found is None and str(experiment).isdigit():
        try:
            found = mlflow_client.get_experiment(str(experiment))
        except MlflowException:
            found = None
    if found is None:
        names = [e.name for e in mlflow_client.search_experiments(max_results=20)]
        raise InputError(f"no MLflow experiment {experiment!r} in {mlflow_client.tracking_uri}; "
                         f"give one of: {', '.join(names) or '(none there)'} (by name or id)")
    return found.experiment_id


__all__ = ["EXPECTATIONS", "INSTALL", "MARKER", "PAGE_SIZE", "RUN_TYPE", "SOURCE_RUN_ID", "STORE_HINT", "TOKEN_KEYS", "client", "experiment_id",
           "feedback_name", "judged_by", "model_uri", "needs_mlflow", "tracking_uri_or_fail"]

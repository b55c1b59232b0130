"""MLflow traces in, verdicts out: the source and the sink of ``ragjudge score mlflow:EXP``.

Source: ``read_traces`` turns MLflow traces into evaluation rows, one per top-level retriever
span (the table's shape, which retriever spans count and how each cell is read:
``ragjudge.traces.spans``). It takes

- an experiment in a tracking store (``read_experiment``: by id or name, with a
  ``search_traces`` filter string and a maximum count, read page by page through
  ``MlflowClient.search_traces``; never the store's database);
- a list of ``mlflow.entities.Trace`` (``frame_from_traces``);
- the DataFrame ``mlflow.search_traces()`` returns (``frame_from_search``);
- a file of exported traces, as MLflow serialises them (``Trace.to_json()``): one trace's JSON
  per line, or a JSON array of them (``read_trace_file``; ``is_trace_file`` tells one by its
  shape);
- an ``EvaluationDataset`` made from traces (``frame_from_dataset``: each record's trace read
  from the store, the record's expectations kept).

The request, response and expectations come as MLflow's ``RetrievalSufficiency`` scorer takes
them: the root span's inputs and outputs, and the trace's valid expectation assessments named
``expected_facts`` and ``expected_response`` (the first of each name).

Sink: ``log_feedback`` writes each verdict of a scored table back as an MLflow ``Feedback`` on
its trace (span-level metrics on their retriever span, as each metric's definition says),
replacing ragjudge's earlier feedback of the same name on the same span or trace;
``link_traces`` links the traces to the run as MLflow's evaluation does; ``log_run`` logs the
run's summary as an MLflow run of the experiment, with the scored table and the report as
artifacts.

Errors (``ragjudge.errors``, exit 2): ``ConfigError`` for MLflow not installed and for no
tracking store given; ``InputError`` for a store that cannot be reached, an experiment that
does not exist, and a file that is not a trace file. MLflow is imported only when one of these
functions runs (the ``[mlflow]`` extra).

Why it is over 600 lines: the source and the sink share MLflow's client, its store checks and
the way a row names its trace and span; the sink's replace-not-duplicate rule needs the reader's
view of the trace's assessments.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ragjudge.panel import without_members
from ragjudge.errors import ConfigError, InputError
from ragjudge.traces.spans import COLUMNS, SpanView, TraceView, metric_shapes, rows_frame
from ragjudge.types import SPAN, MetricShape
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


# -- traces -> rows ----------------------------------------------------------------------------
def trace_view(trace: Any) -> TraceView:
    """An ``mlflow.entities.Trace`` as a ``TraceView``: its state, spans (ids in MLflow's hex
    form, inputs and outputs decoded) and its valid expectations by name."""
    info = trace.info
    state = getattr(info.state, "value", info.state)
    spans = [SpanView(s.span_id, s.parent_id, s.name, s.span_type, s.inputs, s.outputs, s.start_time_ns or 0)
             for s in (trace.data.spans if trace.data else [])]
    return TraceView(info.trace_id, str(state), spans, expectations(info.assessments or []))


def expectations(assessments: Iterable[Any]) -> dict[str, Any]:
    """The expectations a trace's ``assessments`` hold, by name, read as MLflow's scorers read
    them (``mlflow.genai.utils.trace_utils.extract_expectations_from_trace``: every valid
    expectation, the later one of a name winning): a correction logged after the first value
    is the one judged (mlflow/mlflow#24527: the older one was). Only ``EXPECTATIONS`` are kept."""
    found: dict[str, Any] = {}
    for assessment in assessments:
        if assessment.name in EXPECTATIONS and getattr(assessment, "expectation", None) is not None \
                and assessment.valid in (True, None):
            found[assessment.name] = assessment.expectation.value
    return found


def frame_from_traces(traces: Iterable[Any]) -> Any:
    """``mlflow.entities.Trace`` objects -> the rows table (``ragjudge.traces.spans``). A trace
    read more than once (an export appended twice, a folder holding it in two files) is one
    trace, its first copy; the table's notes say how many were left out."""
    seen: set[str] = set()
    views = []
    twice = 0
    for trace in traces:
        if trace.info.trace_id in seen:
            twice += 1
            continue
        seen.add(trace.info.trace_id)
        views.append(trace_view(trace))
    notes = [f"note: {twice} trace(s) were read more than once (the same trace id); each is judged and logged once, its first copy"] \
        if twice else []
    return rows_frame(views, notes)


def is_dataset(source: Any) -> bool:
    """Whether ``source`` is an MLflow ``EvaluationDataset`` (``mlflow.genai.datasets``): told by
    its records' frame, ``to_df()``, and ``merge_records``, without importing MLflow."""
    return callable(getattr(source, "to_df", None)) and callable(getattr(source, "merge_records", None))


def frame_from_dataset(dataset: Any, tracking_uri: str | None = None) -> Any:
    """An MLflow ``EvaluationDataset`` -> the rows table of the traces its records were made
    from (``merge_records(traces)``: source type ``TRACE``, the trace id as source id), each
    read from the tracking store (``tracking_uri_or_fail``), with the record's expectations
    (``expected_facts``, ``expected_response``) over the trace's own: the dataset's are the
    ones kept. ``InputError`` naming the fix for records made from no trace (their inputs hold
    no retrieval to judge: score ``dataset.to_df()`` as a table, its columns mapped), and for a
    trace the store no longer holds."""
    records = dataset.to_df()
    kinds = records["source_type"].astype(str).str.upper() if "source_type" in records.columns else None
    from_traces = records[kinds == "TRACE"] if kinds is not None else records.iloc[0:0]
    others = len(records) - len(from_traces)
    if others:
        raise InputError(f"this MLflow EvaluationDataset holds {others} of its {len(records)} record(s) made from no trace "
                         "(source type other than TRACE): a record's inputs hold no retrieved context to judge; read the traces "
                         "(mlflow:EXPERIMENT) or score dataset.to_df() as a table, mapping its columns (--map / columns:)")
    mlflow_client = client(tracking_uri)
    views = []
    for record in from_traces.to_dict("records"):
        trace_id = str(record["source_id"])
        try:
            trace = mlflow_client.get_trace(trace_id, display=False)
        except Exception as err:  # noqa: BLE001 - MLflow's not-found and the store's own: one line naming the trace
            raise InputError(f"this MLflow EvaluationDataset's record of trace {trace_id}: the trace cannot be read ({_first_line(err)})") from None
        view = trace_view(trace)
        kept = record.get("expectations") if isinstance(record.get("expectations"), dict) else {}
        view.expectations.update({k: v for k, v in kept.items() if k in EXPECTATIONS and v is not None})
        views.append(view)
    return rows_frame(views, [])


def frame_from_search(frame: Any) -> Any:
    """The DataFrame ``mlflow.search_traces()`` returns (its ``trace`` column: ``Trace``
    objects or their JSON) -> the rows table. ``InputError`` for another DataFrame."""
    _mlflow()
    from mlflow.entities import Trace

    if "trace" not in frame.columns:
        raise InputError("this DataFrame is not one that mlflow.search_traces() returns (no 'trace' column); "
                         "pass that DataFrame, a list of Trace objects, or a table of rows")
    return frame_from_traces(t if isinstance(t, Trace) else Trace.from_json(t) for t in frame["trace"])


def _shaped(item: Any) -> bool:
    """Whether ``item`` is a trace as ``Trace.to_dict()`` writes one: ``info.trace_id`` and ``data.spans``."""
    return isinstance(item, dict) and isinstance(item.get("info"), dict) and isinstance(item.get("data"), dict) \
        and isinstance(item["data"].get("spans"), list) and "trace_id" in item["info"]


def _trace_dicts(path: Path, first_only: bool = False) -> list[dict[str, Any]] | None:
    """The trace dicts of a file: a JSON array of them or one per line; None when the file is
    not shaped so (its first trace lacks ``info.trace_id`` and ``data.spans``). ``first_only``:
    of a file of lines, read the first trace only (enough to tell the file's shape)."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            head = handle.read(1)
            while head and head.isspace():
                head = handle.read(1)
            if head == "[" and first_only:
                start = head + handle.read(1 << 20)
                if '"trace_id"' not in start or '"spans"' not in start:  # a table as a JSON array: not read whole
                    return None
                items = json.loads(start + handle.read())
            elif head == "[":
                items = json.loads(head + handle.read())
            elif first_only:
                line = head + handle.readline()
                items = [json.loads(line)] if line.strip() else []
            else:
                items = [json.loads(line) for line in (head + handle.read()).splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(items, list) or not items or not _shaped(items[0]):
        return None
    return items


TRACE_FILE = "one Trace.to_json() per line, or a JSON array of them"
AS_TABLE = "to score it as a table, drop --input-format mlflow-traces"
_TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


def _what(item: Any) -> str:
    """A short description of a JSON value that is not a trace: its JSON (cut), or an object's keys."""
    if isinstance(item, dict) and item:
        return "an object with keys " + ", ".join(map(str, list(item)[:6])) + (" ..." if len(item) > 6 else "")
    text = json.dumps(item, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def not_a_trace_file(path: Path) -> str:
    """Why ``path`` is not a trace file, naming what was found: a table (every item an object
    and none a trace, or a ``.csv``/``.parquet`` file), an empty file or array, the first item
    (``item N`` of a JSON array, ``line N`` of a file of lines) that is not a trace, or text
    that is neither JSON nor a table. The message ``read_trace_file`` raises (exit 2)."""
    if path.suffix.lower() in _TABLE_SUFFIXES:
        return f"{path} is a table ({path.suffix} file), not an MLflow trace file ({TRACE_FILE}); {AS_TABLE}"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text: neither an MLflow trace file ({TRACE_FILE}) nor a table"
    except OSError as err:
        return f"{path} cannot be read: {err.strerror or err}"
    if not text.strip():
        return f"{path} is empty: no MLflow traces in it (a trace file holds {TRACE_FILE})"
    items: list[tuple[int, Any]] = []
    if text.lstrip().startswith("["):
        where = "item"
        try:
            array = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            return f"{path} is not valid JSON ({_first_line(err)}): neither an MLflow trace file ({TRACE_FILE}) nor a table"
        if not array:
            return f"{path} is an empty JSON array: no MLflow traces in it (a trace file holds {TRACE_FILE})"
        items = list(enumerate(array, 1))
    else:
        where = "line"
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append((number, json.loads(line)))
            except (json.JSONDecodeError, RecursionError):
                if items:
                    return f"{path}: line {number} is not JSON, so not an MLflow trace ({TRACE_FILE})"
                return f"{path} is neither an MLflow trace file ({TRACE_FILE}) nor a table: line {number} is not JSON"
    if all(isinstance(item, dict) and item for _, item in items) and not any(_shaped(item) for _, item in items):
        columns = list(dict.fromkeys(key for _, item in items for key in item))
        shown = ", ".join(map(str, columns[:8])) + (" ..." if len(columns) > 8 else "")
        return (f"{path} is a table ({len(items)} row(s); columns {shown}), not an MLflow trace file ({TRACE_FILE}); "
                f"{AS_TABLE}")
    position, item = next((p, i) for p, i in items if not _shaped(i))
    return (f"{path}: {where} {position} is {_what(item)}, not an MLflow trace (Trace.to_json()'s object, with info.trace_id "
            f"and data.spans; a trace file holds {TRACE_FILE})")


def is_trace_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds exported MLflow traces (``Trace.to_json()`` per line, or a JSON
    array of them); reads the file, needs no MLflow."""
    return Path(path).is_file() and _trace_dicts(Path(path), first_only=True) is not None


def read_trace_file(path: str | os.PathLike[str]) -> Any:
    """A file of exported traces -> the rows table. ``InputError`` for a file that is not one
    (a table file goes to ``ragjudge.io`` instead), naming the line of a malformed trace."""
    _mlflow()
    from mlflow.entities import Trace

    items = _trace_dicts(Path(path))
    if items is None:
        raise InputError(not_a_trace_file(Path(path)))
    traces = []
    for number, item in enumerate(items, 1):
        try:
            traces.append(Trace.from_dict(item))
        except Exception as err:  # noqa: BLE001 - MLflow raises several types for a malformed trace
            raise InputError(f"{path}: trace {number} cannot be read as an MLflow trace: {_first_line(err)}") from err
    return frame_from_traces(traces)


def search(experiment: str, tracking_uri: str | None = None, filter_string: str | None = None,
           max_traces: int | None = None, page_size: int = PAGE_SIZE) -> list[Any]:
    """The ``Trace``s of ``experiment`` (name or id), oldest first, read page by page with
    ``MlflowClient.search_traces`` (``filter_string`` as it takes one; at most ``max_traces``)."""
    _mlflow()
    from mlflow.exceptions import MlflowException

    mlflow_client = client(tracking_uri)
    exp = experiment_id(mlflow_client, experiment)
    traces: list[Any] = []
    token = None
    while max_traces is None or len(traces) < max_traces:
        want = page_size if max_traces is None else min(page_size, max_traces - len(traces))
        try:
            page = mlflow_client.search_traces(locations=[exp], filter_string=filter_string, max_results=want,
                                               order_by=["timestamp_ms ASC"], page_token=token)
        except MlflowException as err:
            if filter_string and getattr(err, "error_code", "") == "INVALID_PARAMETER_VALUE":
                raise InputError(f"the MLflow filter {filter_string!r} is invalid: {_first_line(err)} "
                                 "(the syntax of mlflow.search_traces' filter_string)") from err
            raise InputError(f"reading traces from {mlflow_client.tracking_uri} failed: {_first_line(err)}") from err
        traces.extend(page)
        token = page.token
        if not token or not page:
            break
    return traces


def read_experiment(experiment: str, tracking_uri: str | None = None, filter_string: str | None = None,
                    max_traces: int | None = None, page_size: int = PAGE_SIZE) -> Any:
    """An experiment's traces (``search``) -> the rows table (``ragjudge.traces.spans``).
    ``InputError`` (exit 2) when there is nothing to judge: the experiment holds no traces, or
    none matched ``filter_string``."""
    traces = search(experiment, tracking_uri, filter_string, max_traces, page_size)
    if not traces:
        uri = tracking_uri_or_fail(tracking_uri)
        if filter_string and search(experiment, tracking_uri, None, 1):
            raise InputError(f"no trace of the MLflow experiment {experiment!r} in {uri} matched the filter {filter_string!r}: "
                             "nothing to judge; loosen the filter (--mlflow-filter)")
        raise InputError(f"the MLflow experiment {experiment!r} in {uri} holds no traces: nothing to judge; trace your app "
                         f"into it (mlflow.set_experiment({experiment!r}) before its calls) or name another experiment")
    return frame_from_traces(traces)


def read_traces(source: Any, tracking_uri: str | None = None, filter_string: str | None = None,
                max_traces: int | None = None) -> Any:
    """Any trace source -> the rows table: ``"mlflow:EXPERIMENT"`` (a store), a path to an
    exported trace file, the DataFrame of ``mlflow.search_traces()``, ``Trace`` objects, or an
    ``EvaluationDataset`` made from traces (``frame_from_dataset``, read from ``tracking_uri``).
    ``InputError`` for anything else."""
    if isinstance(source, str) and source.startswith("mlflow:"):
        return read_experiment(source[len("mlflow:"):], tracking_uri, filter_string, max_traces)
    if isinstance(source, (str, os.PathLike)):
        return read_trace_file(source)
    if hasattr(source, "columns"):
        return frame_from_search(source)
    if is_dataset(source):
        return frame_from_dataset(source, tracking_uri)
    if not hasattr(source, "__iter__"):
        raise InputError(f"a {type(source).__name__} is no trace source: give mlflow:EXPERIMENT, a file of exported traces, "
                         "the DataFrame of mlflow.search_traces(), Trace objects or an EvaluationDataset made from traces")
    return frame_from_traces(source)


def read_source(source: Any, options: Any) -> Any:
    """``read_traces`` with a run's ``ragjudge.traces.TraceOptions`` (the hook of
    ``ragjudge.traces.open_source``: ``ragjudge score mlflow:EXP`` or a trace file)."""
    return read_traces(source, options.tracking_uri, options.filter_string, options.max_traces)


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


__all__ = ["COLUMNS", "FeedbackLog", "feedback_name", "model_uri", "probability_metadata", "start_run", "read_source", "client", "experiment_id", "frame_from_dataset", "frame_from_search", "frame_from_traces", "is_dataset", "is_trace_file", "judged_by",
           "link_traces", "log_feedback", "log_run", "read_experiment", "read_trace_file", "read_traces", "search", "trace_view",
           "tracking_uri_or_fail"]

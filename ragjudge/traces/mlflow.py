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

This module is the reader and the public face: the sink (``ragjudge.traces.mlflow_sink``) and
the client and store checks both share (``ragjudge.traces.mlflow_store``) are re-exported here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from ragjudge.errors import InputError
from ragjudge.traces.spans import COLUMNS, SpanView, TraceView, rows_frame
from ragjudge.traces.mlflow_store import (EXPECTATIONS, INSTALL, MARKER, PAGE_SIZE, RUN_TYPE, SOURCE_RUN_ID, STORE_HINT, TOKEN_KEYS,  # noqa: F401
                                          _first_line, _mlflow, _probe, client, experiment_id, feedback_name, judged_by, model_uri,
                                          needs_mlflow, tracking_uri_or_fail)
from ragjudge.traces.mlflow_sink import FeedbackLog, link_traces, log_feedback, log_run, probability_metadata, start_run  # noqa: F401 (the sink)


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


__all__ = ["COLUMNS", "FeedbackLog", "feedback_name", "model_uri", "probability_metadata", "start_run", "read_source", "client", "experiment_id", "frame_from_dataset", "frame_from_search", "frame_from_traces", "is_dataset", "is_trace_file", "judged_by",
           "link_traces", "log_feedback", "log_run", "read_experiment", "read_trace_file", "read_traces", "search", "trace_view",
           "tracking_uri_or_fail"]

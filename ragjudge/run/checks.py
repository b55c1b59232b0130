"""The one place a run's options are refused: ``check(request, config)`` is every rule across a
``ScoreRequest``'s options and the config, made once before any judging (``ragjudge.run.run``),
for the command line and Python callers alike; each refusal is a ``ConfigError`` (exit 2) that
names the option as ``request.names`` says (``--limit`` on the command line, ``limit=`` in a
Python call) and the fix. ``check_outputs`` and ``check_regression_gates`` serve ``ragjudge
report`` too; ``ignored_options`` and ``step_summary_problem`` are the notes and the warning for
options a run accepts and cannot honour.

Checks that need what only reading finds stay with the reader (a trace source's options:
``ragjudge.run.traces.plan``; a mapped column that is missing: ``ragjudge.plan``), and
``judge.max_cost`` without a price is ``ragjudge.options.check_budget`` (the ``Scorer`` checks it
too, below the run).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from ragjudge.compare import SCORE_HINT, _id_text, check_baseline, check_ids, metrics_of
from ragjudge.counting import has_path, row_ids
from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.io import FORMATS, names_folder, suffix_format, to_file, to_stdout
from ragjudge.options import CLI, Names, check_budget
from ragjudge.io import is_stdin
from ragjudge.traces import source_kind
from ragjudge.transports import resolve_model
from ragjudge.transports.anthropic_batch import AnthropicBatches
from ragjudge.transports.anthropic_batch import serves as anthropic_serves
from ragjudge.transports.openai_batch import OpenAIBatches, serves
from ragjudge.types import decision_model

TRACE_OPTIONS = ("mlflow_tracking_uri", "mlflow_filter", "mlflow_max_traces", "mlflow_log_feedback", "mlflow_feedback_name",
                 "expected_facts_attribute", "expected_response_attribute", "phoenix_endpoint", "annotations", "judge_error_traces",
                 "phoenix_start", "phoenix_end", "phoenix_trace_id", "phoenix_log_annotations")


def _check_input_ids(request: Any, source: str, column: str) -> None:
    """With ``--baseline``: the input's ids, checked before any judge call as the comparison at
    the end checks them (a null or repeated id is exit 2 naming the rows; a run judged in full
    and then refused lost its reports)."""
    ids = _input_ids(source, request.input_format, column)
    if ids is not None:
        check_ids(ids, "input", SCORE_HINT, column)

def check(request: Any, config: Any) -> None:
    """Every rule across this request's options and ``config``, before any judging; raises
    ``ConfigError`` (exit 2) naming the option and the fix:

    - rows: ``limit`` with ``sample``, either below 1, ``seed`` without ``sample``;
    - the budget (``judge.max_cost``) for a model with no known price; ``batch_wait`` or ``batch_resubmit`` without ``judge.batch``;
    - outputs: an unknown format, ``format`` or ``output_format`` with no table to write,
      ``format`` that contradicts the output's suffix, files that collide, a report to stdout,
      a baseline that is missing or cannot be compared, regression gates without one;
    - the engine: an unknown one, Ray options on the local engine, and what Ray cannot do:
      stdin, a DataFrame or a trace source, ``-v`` (rows are judged on the actors), an output
      that reads the table back (JUnit, HTML, baseline) without a file or folder to read,
      a folder (an existing one, or a name ending in ``/``) to be written in another format
      than Parquet.
    """
    names = request.names  # the command line's flags, or a Python call's keyword arguments
    if not isinstance(request.source, str):
        given = [names.about(name, getattr(request, name)) for name in TRACE_OPTIONS if getattr(request, name) not in (None, False, ())]
        if given:
            raise ConfigError(f"{', '.join(given)}: a DataFrame is a table, not traces")
        if request.dry_run:
            raise ConfigError(f"{names.about('dry_run', True)} reads a file or stdin; for a DataFrame, Scorer.plan shows the mapping and notes")
    check_selection(request.limit, request.sample, names)
    if request.seed is not None and request.sample is None:
        raise ConfigError(f"{names('seed')} chooses the rows of {names('sample')}: give {names.placeholder('sample', 'N')} with it, or "
                          f"leave {names('seed')} out")
    check_budget(config, names)
    if request.batch_wait and not config.judge.batch:
        raise ConfigError(f"{names.about('batch_wait', True)} waits for the batches of a batch run: add "
                          f"{'--batch' if request.cli else 'judge.batch: true'}, or leave it out")
    if request.batch_resubmit and not config.judge.batch:
        raise ConfigError(f"{names.about('batch_resubmit', True)} submits again the calls of a batch run whose create got no "
                          f"answer: add {'--batch' if request.cli else 'judge.batch: true'}, or leave it out")
    check_regression_gates(request.max_regressions, request.max_drop, names, request.alpha)
    source = request.source if isinstance(request.source, str) else ""
    check_outputs(source, request.output, request.summary_json, request.format, request.output_format, junit=request.junit,
                  markdown=request.markdown, html=request.html, baseline=request.baseline,
                  gates_without_baseline=request.max_regressions is not None or request.max_drop is not None,
                  id_column=config.columns.id or "id", names=names, id_required=config.columns.id is not None,
                  metrics=list(config.metrics), labels=dict(config.labels), to_label=request.to_label)
    if request.baseline and source and not is_stdin(source):
        _check_input_ids(request, source, config.columns.id or "id")
    if request.output is None:
        for field, value in (("format", request.format), ("output_format", request.output_format)):
            if value is not None:
                raise ConfigError(f"{names.given(field, value)} is the format of the scored table, and no table is written: give "
                                  f"{names.placeholder('output', 'FILE')} (or {names.given('output', '-')} for stdout)")
    elif request.format is not None and request.output_format is None and not to_stdout(request.output):
        said = suffix_format(request.output)
        if said is not None and said != request.format:
            raise ConfigError(f"{names.given('format', request.format)}: {names.given('output', request.output)} is {said} by its suffix; to "
                              f"write {request.format} under that name give {names.given('output_format', request.format)}")
    if request.to_label is not None and not config.judge.cascade:
        raise ConfigError(f"{names.about('to_label', request.to_label)} writes the rows a cascade's last stage is still unsure of: "
                          f"give the cascade ({'--cascade FIRST,THEN' if request.cli else 'judge.cascade'}), or leave it out "
                          f"(ragjudge calibrate --suggest N lists the rows one judge is least sure of)")
    if to_stdout(request.to_label):  # the input and the other outputs: check_outputs above (one file by its resolved path)
        raise ConfigError(f"{names.about('to_label', request.to_label)}: name a file of its own for the rows to label")
    check_engine(request.engine, request.ray_actors, names)
    if request.engine == "ray" and config.judge.cascade:
        raise ConfigError(f"a cascade (judge.cascade) runs with {names.given('engine', 'local')} (the default): with "
                          f"{names.given('engine', 'ray')} the summary would lose its counts per stage")
    if request.engine == "local":
        given = [names.about(name, getattr(request, name)) for name in ("ray_address", "ray_actors") if getattr(request, name) is not None]
        if given:
            raise ConfigError(f"{', '.join(given)} {'works' if len(given) == 1 else 'work'} with {names.given('engine', 'ray')}; add it, "
                              f"or leave {'it' if len(given) == 1 else 'them'} out")
        return
    _check_ray(request)

def _check_ray(request: Any) -> None:
    names = request.names
    ray, local = names.given("engine", "ray"), names.given("engine", "local")
    if not isinstance(request.source, str):
        raise ConfigError(f"{ray} reads files: give a file, folder or glob (a DataFrame is scored with the local engine)")
    if is_stdin(request.source):
        raise ConfigError(f"{ray} reads files: give a file, folder or glob (stdin is read by {local})")
    traces = [names.about(name, getattr(request, name)) for name in TRACE_OPTIONS if getattr(request, name) not in (None, False, ())]
    if traces:
        raise ConfigError(f"{', '.join(traces)}: trace sources are scored with {local} (the default); export the rows to "
                          "a table for Ray")
    if request.row_events:
        if names.keywords:
            raise ConfigError(f"row_events=True: each row's verdicts are heard (on_event, on_row) as they land on this machine; with "
                              f"{ray} rows are judged on the actors: leave it out, and read the verdicts in the scored table")
        raise ConfigError("-v/--verbose prints each row's verdicts as they land on this machine; with --engine ray rows are judged "
                          "on the actors: leave -v out, and read the verdicts in the scored table")
    readers = [names.about(field, getattr(request, field)) for field in ("junit", "html", "baseline") if getattr(request, field)]
    if readers and not to_file(request.output):
        raise ConfigError(f"{', '.join(readers)} with {ray} read the scored table back: give {names.placeholder('output', 'FILE or FOLDER')}")

    if names_folder(request.output) and request.table_format not in (None, "parquet"):
        raise ConfigError(f"{ray} writes the folder {request.output} as Parquet files; to write {request.table_format}, name a "
                          f"file: {names.given('output', request.output.rstrip('/') + '.' + request.table_format)}")


def _input_ids(source: str, input_format: str | None, column: str) -> list[str | None] | None:
    """The ids of a table file's rows (``column``, as ``counting.row_ids`` reads it), read chunk
    by chunk; None for a trace source or a table without that column (matched by position)."""
    from ragjudge.io import iter_chunks

    if source_kind(source, input_format) is not None:
        return None
    ids: list[str | None] = []
    for chunk in iter_chunks(source, input_format, 10_000):
        if column not in chunk.columns and column.split(".", 1)[0] not in chunk.columns:
            return None
        ids += [None if ident is None else _id_text(ident) for ident in row_ids(chunk, column)]
    return ids


def check_selection(limit: int | None, sample: int | None, names: Names = CLI) -> None:
    """Refuse ``limit`` with ``sample`` (both choose the rows to judge) and either below 1."""
    if limit is not None and sample is not None:
        raise ConfigError(f"{names('limit')} and {names('sample')} both choose the rows to judge: give one of them")
    if (limit is not None and limit < 1) or (sample is not None and sample < 1):
        raise ConfigError(f"{names('limit')} and {names('sample')} take a number of rows, at least 1")


def check_engine(engine: str, ray_actors: int | None = None, names: Names = CLI) -> None:
    """Refuse an engine other than local or ray, and fewer than 1 Ray actor."""
    if engine not in ("local", "ray"):
        raise ConfigError(f"{names.given('engine', engine)}: use local or ray")
    if engine == "ray" and ray_actors is not None and ray_actors < 1:
        raise ConfigError(f"{names.given('ray_actors', ray_actors)}: give a number of actors, 1 or more")


def check_regression_gates(max_regressions: int | None, max_drop: float | None, names: Names = CLI, alpha: float | None = None) -> None:
    """Refuse regression gates that cannot mean anything: a negative count, a drop outside
    0..1 or not a number, a significance level ``alpha`` not strictly between 0 and 1."""
    if alpha is not None and not (math.isfinite(alpha) and 0.0 < alpha < 1.0):
        raise ConfigError(f"{names.given('alpha', alpha)}: give a significance level between 0 and 1 (0.05: a drop that noise "
                          "would show one time in twenty or less fails)")
    if max_regressions is not None and max_regressions < 0:
        raise ConfigError(f"{names.given('max_regressions', max_regressions)}: give a number of rows, 0 or more")
    if max_drop is not None and not (math.isfinite(max_drop) and 0.0 <= max_drop <= 1.0):
        raise ConfigError(f"{names.given('max_drop', max_drop)}: give a drop in pass rate from 0 to 1 (0.05: five points)")


def check_outputs(source: str, output: str | None, summary_json: str | None, *formats: str | None, junit: str | None = None,
                  markdown: str | None = None, html: str | None = None, baseline: str | None = None, gates_without_baseline: bool = False,
                  html_flag: str | None = None, id_column: str | None = "id", names: Names = CLI, id_required: bool = False,
                  metrics: Sequence[str] = (), labels: dict[str, str] | None = None, to_label: str | None = None) -> None:
    """Refuse, before any judging, outputs that could only fail or collide at the end: an unknown
    format, regression gates without a baseline, a baseline that is missing, is not a scored
    table or could not be compared (a null or repeated id, an unreadable cell), a
    report file that is stdout, a folder or in a missing folder, two outputs (or an output and
    the input, or an output and the baseline) that are one file (``_check_distinct``), both the
    table and the summary on stdout. ``html_flag``: how the HTML file is named, where not as
    ``names`` names ``html`` (``ragjudge report -o``). ``id_required``: the id column was named,
    so a baseline without it is refused too. ``to_label``: a cascade's rows to label
    (``--to-label``), checked against the input and the other outputs as they are."""
    from pathlib import Path

    def about(field: str, flag: str, value: Any) -> str:  # Names.about, with the HTML file's own flag
        return names.given(field, value) if names.keywords else flag

    for fmt in formats:
        if fmt is not None and fmt not in FORMATS:
            raise ConfigError(f"unknown format '{fmt}'; use one of: {', '.join(FORMATS)}")
    if gates_without_baseline and not baseline:
        raise ConfigError(f"{names('max_regressions')} and {names('max_drop')} compare with a baseline: give "
                          f"{names.placeholder('baseline', 'SCORED_TABLE')}")
    if baseline and not Path(baseline).is_file():
        raise ConfigError(f"{names.given('baseline', baseline)}: no such file" if names.keywords else f"--baseline: no such file: {baseline}")
    if baseline:  # before any judging: a table that was never scored cannot be a baseline
        from ragjudge.io import iter_chunks

        first = next(iter(iter_chunks(baseline, None, 1000)), None)
        if first is None or not metrics_of(first):
            raise ConfigError(f"{names.given('baseline', baseline)} holds no scored metric (no M_status and M_passed columns); "
                              f"give a table written by {'evaluate(..., output=...) or ' if names.keywords else ''}ragjudge score -o")
        held = metrics_of(first)
        missing = [metric for metric in metrics if metric not in held]
        if missing:  # found at the end, it cost the whole run (every call paid, no report written)
            raise ConfigError(f"{names.given('baseline', baseline)} holds no {', '.join(missing)} columns (M_status, M_passed); it holds "
                              f"{', '.join(held)}: compare with a baseline scored with {', '.join(missing)}, or judge only "
                              f"{', '.join(held)} ({'metrics: ' + str(held) if names.keywords else ' '.join('-m ' + metric for metric in held)})")
        for metric, column in (labels or {}).items():
            if metric in metrics and not has_path(first, column):
                raise ConfigError(f"{names.given('baseline', baseline)} has no column '{column}' for the labels of {metric} "
                                  f"(labels.{metric}); give the baseline its labels column (one run's labels are not the other's)")
        from ragjudge.io import read_table

        check_baseline(read_table(baseline), baseline, id_column, id_required, names.given("baseline", baseline))  # as read at the end
    for field, flag, path in (("junit", names("junit"), junit), ("markdown", names("markdown"), markdown), ("html", html_flag or names("html"), html)):
        if path is None:
            continue
        if to_stdout(path):
            raise ConfigError(f"{about(field, flag, path)} writes a file, not stdout: give a file name")
        if path == "" or Path(path).is_dir() or not Path(path).resolve().parent.is_dir():
            raise ConfigError(f"{about(field, flag, path)}: cannot write {'there' if names.keywords else repr(path)}: give a file in an existing folder")
    if output == "" or summary_json == "":
        raise ConfigError(f"an empty path was given to {names('output')} or {names('summary_json')}")
    if to_file(output) and not output.endswith(("/", os.sep)) and not Path(os.path.realpath(output)).parent.is_dir():
        raise ConfigError(f"{names.about('output', output)}: output folder does not exist: {Path(output).parent}")  # before any call
    if to_stdout(output) and to_stdout(summary_json):
        raise ConfigError(f"{names.given('output', '-')} and {names.given('summary_json', '-')} would both write to stdout; send one of them to a file")
    _check_distinct(source, baseline, (("output", names("output"), output), ("summary_json", names("summary_json"), summary_json),
                                       ("junit", names("junit"), junit), ("markdown", names("markdown"), markdown),
                                       ("html", html_flag or names("html"), html), ("to_label", names("to_label"), to_label)), names)
    if to_file(summary_json):
        target = Path(summary_json)
        if target.is_dir():
            raise ConfigError(f"{names.given('summary_json', summary_json)} is a folder" if names.keywords else f"--summary-json: {summary_json} is a folder")
        if not target.resolve().parent.is_dir():
            raise ConfigError(f"{names.about('summary_json', summary_json)}: folder does not exist: {target.parent}")


def same_file(path: str, other: str) -> bool:
    """Whether ``path`` and ``other`` name one file: ``os.path.samefile`` where both exist (links
    and hard links included), else their resolved paths (``Path.resolve``: ``./out.jsonl`` is
    ``out.jsonl``)."""
    from pathlib import Path

    if os.path.exists(path) and os.path.exists(other):
        return os.path.samefile(path, other)
    return Path(path).resolve() == Path(other).resolve()


def _check_distinct(source: str, baseline: str | None, outputs: Sequence[tuple[str, str, str | None]], names: Names = CLI) -> None:
    """``ConfigError`` when two outputs (``(field, flag, path)``) are one file (the last written
    would replace the other), or an output other than the table is the input (the table may
    replace it: it is written after the input is read), or any output is the baseline (the
    comparison at the end would read this run's own file, or a report, instead of it)."""
    given = [(field, flag, path) for field, flag, path in outputs if to_file(path)]

    def subject(field: str, flag: str, path: str) -> str:
        return names.given(field, path) if names.keywords else f"{flag} {path}"

    for i, (field, flag, path) in enumerate(given):
        for other_field, other_flag, other_path in given[:i]:
            if same_file(path, other_path):
                also = names.given(other_field, other_path) if names.keywords else other_flag
                raise ConfigError(f"{subject(field, flag, path)} is also {also}; one would replace the other: give it another name")
        if baseline and same_file(path, baseline):
            read = "this run" if field == "output" else (names(field) if not names.keywords else f"the {field} file")
            raise ConfigError(f"{subject(field, flag, path)} is also {names('baseline') if not names.keywords else 'the baseline'}; the "
                              f"comparison would read {read} instead of the baseline: write to another file (and replace the baseline "
                              "once the gate passes)")
        if field != "output" and source and not is_stdin(source) and same_file(path, source):
            what = {"summary_json": "the summary", "to_label": "the rows to label"}.get(field, "the report")
            raise ConfigError(f"{subject(field, flag, path)} is also the input; {what} would replace it: give it another name")


def ignored_options(alpha: float | None, baseline: str | None, names: Names = CLI) -> list[str]:
    """Notes for a run's options that it ignores, said rather than dropped in silence (as
    ``Scorer`` says ``judge.cascade_band`` without a cascade): ``alpha`` without ``baseline``."""
    if alpha is not None and not baseline:
        return [f"note: {names.about('alpha', alpha)} tests the drop from a baseline's pass rate; this run has no baseline and it is "
                f"ignored: give {names.placeholder('baseline', 'SCORED_TABLE')} with {names('max_drop')}, or leave it out"]
    return []


def step_summary_problem(source: str, *outputs: str | None) -> str | None:
    """Why the job summary cannot be appended to the file ``GITHUB_STEP_SUMMARY`` names (it is
    the input or another output, a folder, or in a missing folder), as a warning; None when
    it can (or the variable is not set)."""
    from pathlib import Path

    path = os.environ.get("GITHUB_STEP_SUMMARY") or None  # as reports.markdown.step_summary_path reads it (a lower layer than reports)
    if not path:
        return None
    for other in (source, *outputs):
        if to_file(other) and not is_stdin(other) and os.path.realpath(other) == os.path.realpath(path):
            return f"warning: GITHUB_STEP_SUMMARY is {path}, which this run also reads or writes; the job summary is not appended to it"
    if Path(path).is_dir() or not Path(path).resolve().parent.is_dir():
        return (f"warning: GITHUB_STEP_SUMMARY names {path}, which cannot be written (a folder, or its folder does not exist); "
                "the job summary is not appended")
    return None


def check_batch(request: Any, config: Any) -> None:
    """Refuse a batch run that cannot be made (``ConfigError``, exit 2, naming the fix): no
    response cache, stdin or the Ray engine (the rows are read in several passes, on this
    machine), a model no batch API ragjudge speaks serves (``client_for``)."""
    names = request.names
    flag = "--batch" if request.cli else "judge.batch"
    if not config.cache.enabled:
        raise ConfigError(f"{flag} judges from the response cache, and it is off: leave out --no-cache (cache.enabled: false)")
    if is_stdin(request.source):
        raise ConfigError(f"{flag} reads the input once per round: give a file, not stdin")
    if request.engine != "local":
        raise ConfigError(f"{flag} runs on the local engine: leave out {names.given('engine', request.engine)}")
    if config.judge.panel:
        raise ConfigError(f"{flag} judges with one model (judge.model); a panel (judge.panel) is not batched: leave out one of them")
    if decision_model(config.judge.model):
        raise ConfigError(f"{flag}: {config.judge.model} is a decision model, and its endpoint has no batch API (OpenAI's Batch API "
                          "does not take /v1/decisions; System One has none); it asks every metric of a row in one call already: "
                          "leave out --batch")
    if client_for(config.judge) is None:
        raise ConfigError(f"{flag}: {config.judge.model} is not served by a batch API ragjudge speaks; it batches OpenAI-compatible "
                          "models (openai/..., Azure OpenAI's v1 endpoint as --api-base) and Anthropic's (anthropic/...): choose one, "
                          "or leave out --batch")


def client_for(judge: Any) -> Any:
    """The batch API client of ``judge`` (``JudgeSettings``): OpenAI's protocol for the
    OpenAI-compatible fast path's models, Anthropic's Message Batches for ``anthropic/...``;
    None for another provider (or an unknown one)."""
    if serves(judge):
        return OpenAIBatches(judge)
    if "/" not in judge.model or judge.model.startswith("local/"):
        return None

    try:
        resolved = resolve_model(judge)
    except RagjudgeError:
        return None
    return AnthropicBatches(judge, resolved) if anthropic_serves(resolved) else None

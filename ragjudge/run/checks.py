"""The one place a run's options are refused: ``check(request, config)`` is every rule across a
``ScoreRequest``'s options and the config, made once before any judging (``ragjudge.run.run``),
for the command line and Python callers alike; each refusal is an ``OptionError`` (a
``ConfigError``, exit 2) that carries the request fields it is about and names them once, as its
reader knows them (``--limit`` on the command line, ``limit=`` in a Python call: ``ragjudge.run.run``
and ``ScoreRequest.check`` name them as the request says), with the fix. ``check_outputs`` and ``check_regression_gates`` serve ``ragjudge
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
from collections.abc import Callable, Sequence
from typing import Any

from ragjudge.audit import METRICS as AUDIT_METRICS
from ragjudge.compare import SCORE_HINT, _id_text, check_baseline, check_ids, metrics_of
from ragjudge.counting import has_path, row_ids
from ragjudge.errors import InputError, RagjudgeError
from ragjudge.io import FORMATS, names_folder, suffix_format, to_file, to_stdout
from ragjudge.options import CLI, Names, OptionError, OptionInputError, check_budget, said
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
    ``OptionError`` (exit 2) naming the option and the fix:

    - types: a number or path option of another type (``check_types``; a Python call's keywords);
    - rows: ``limit`` with ``sample``, either below 1, ``seed`` without ``sample``;
    - an abstention-audit rate bounded (``gate.max_rate``) without the audit's metrics judged (``check_audit_metrics``);
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
    check_types(request)
    if not isinstance(request.source, str):
        given = _given(request, TRACE_OPTIONS)
        if given:
            raise OptionError(given, lambda n: f"{_about(n, request, given)}: a DataFrame is a table, not traces")
        if request.dry_run:
            raise OptionError("dry_run", lambda n: f"{n.about('dry_run', True)} reads a file or stdin; for a DataFrame, Scorer.plan shows the mapping and notes")
    check_selection(request.limit, request.sample)
    if request.seed is not None and request.sample is None:
        raise OptionError(("seed", "sample"), lambda n: f"{n('seed')} chooses the rows of {n('sample')}: give {n.placeholder('sample', 'N')} with it, or "
                          f"leave {n('seed')} out")
    check_budget(config)
    check_audit_metrics(config)
    if request.batch_wait and not config.judge.batch:
        raise OptionError("batch_wait", lambda n: f"{n.about('batch_wait', True)} waits for the batches of a batch run: add "
                          f"{n.pick('--batch', 'judge.batch: true')}, or leave it out")
    if request.batch_resubmit and not config.judge.batch:
        raise OptionError("batch_resubmit", lambda n: f"{n.about('batch_resubmit', True)} submits again the calls of a batch run whose create got no "
                          f"answer: add {n.pick('--batch', 'judge.batch: true')}, or leave it out")
    check_regression_gates(request.max_regressions, request.max_drop, alpha=request.alpha)
    source = request.source if isinstance(request.source, str) else ""
    check_outputs(source, request.output, request.summary_json, request.format, request.output_format, junit=request.junit,
                  markdown=request.markdown, html=request.html, baseline=request.baseline,
                  gates_without_baseline=request.max_regressions is not None or request.max_drop is not None,
                  id_column=config.columns.id or "id", id_required=config.columns.id is not None,
                  metrics=list(config.metrics), labels=dict(config.labels), to_label=request.to_label)
    if request.baseline and source and not is_stdin(source):
        _check_input_ids(request, source, config.columns.id or "id")
    if request.output is None:
        for field, value in (("format", request.format), ("output_format", request.output_format)):
            if value is not None:
                raise OptionError((field, "output"), lambda n, field=field, value=value: f"{n.given(field, value)} is the format of the scored table, and no table is written: give "
                                  f"{n.placeholder('output', 'FILE')} (or {n.given('output', '-')} for stdout)")
    elif request.format is not None and request.output_format is None and not to_stdout(request.output):
        said = suffix_format(request.output)
        if said is not None and said != request.format:
            raise OptionError(("format", "output"), lambda n: f"{n.given('format', request.format)}: {n.given('output', request.output)} is {said} by its suffix; to "
                              f"write {request.format} under that name give {n.given('output_format', request.format)}")
    if request.to_label is not None and not config.judge.cascade:
        raise OptionError("to_label", lambda n: f"{n.about('to_label', request.to_label)} writes the rows a cascade's last stage is still unsure of: "
                          f"give the cascade ({n.pick('--cascade FIRST,THEN', 'judge.cascade')}), or leave it out "
                          f"(ragjudge calibrate --suggest N lists the rows one judge is least sure of)")
    if to_stdout(request.to_label):  # the input and the other outputs: check_outputs above (one file by its resolved path)
        raise OptionError("to_label", lambda n: f"{n.about('to_label', request.to_label)}: name a file of its own for the rows to label")
    check_engine(request.engine, request.ray_actors)
    if request.engine == "ray" and config.judge.cascade:
        raise OptionError("engine", lambda n: f"a cascade (judge.cascade) runs with {n.given('engine', 'local')} (the default): with "
                          f"{n.given('engine', 'ray')} the summary would lose its counts per stage")
    if request.engine == "local":
        given = tuple(name for name in ("ray_address", "ray_actors") if getattr(request, name) is not None)
        if given:
            raise OptionError(given, lambda n: f"{_about(n, request, given)} {'works' if len(given) == 1 else 'work'} with {n.given('engine', 'ray')}; add it, "
                              f"or leave {'it' if len(given) == 1 else 'them'} out")
        return
    _check_ray(request)

_WHOLE = {"limit": "a whole number >= 1", "sample": "a whole number >= 1", "seed": "a whole number",
          "ray_actors": "a whole number >= 1", "mlflow_max_traces": "a whole number >= 1",
          "max_regressions": "a whole number >= 0"}
_FRACTIONS = {"max_drop": "a number 0..1", "alpha": "a number 0..1"}
_PATHS = ("output", "summary_json", "junit", "markdown", "html", "baseline", "to_label")


def check_types(request: Any) -> None:
    """Refuse (``OptionError``) a number or path field of ``request`` given with another type,
    before any other rule compares it: the whole numbers (``limit``, ``sample``, ``seed``,
    ``ray_actors``, ``mlflow_max_traces``, ``max_regressions``: an ``int``, not a ``bool``), the
    fractions (``max_drop``, ``alpha``: an ``int`` or ``float``, not a ``bool``) and the paths
    (``output``, ``summary_json``, ``junit``, ``markdown``, ``html``, ``baseline``, ``to_label``:
    a ``str``). None (not given) passes. The command line types its flags itself; this is for
    a Python call's keywords (``evaluate(limit="3")``)."""
    for field, takes in (*_WHOLE.items(), *_FRACTIONS.items(), *((path, "a path") for path in _PATHS)):
        value = getattr(request, field)
        if value is None:
            continue
        if field in _WHOLE:
            wrong = isinstance(value, bool) or not isinstance(value, int)
        elif field in _FRACTIONS:
            wrong = isinstance(value, bool) or not isinstance(value, (int, float))
        else:
            wrong = not isinstance(value, str)
        if wrong:
            raise OptionError(field, lambda n, field=field, value=value, takes=takes: f"{n.given(field, value)}: {n(field)} takes {takes}, "
                              f"not {type(value).__name__}")


def _check_ray(request: Any) -> None:
    def ray(n: Names) -> str:
        return n.given("engine", "ray")

    if not isinstance(request.source, str):
        raise OptionError("engine", lambda n: f"{ray(n)} reads files: give a file, folder or glob (a DataFrame is scored with the local engine)")
    if is_stdin(request.source):
        raise OptionError("engine", lambda n: f"{ray(n)} reads files: give a file, folder or glob (stdin is read by {n.given('engine', 'local')})")
    traces = _given(request, TRACE_OPTIONS)
    if traces:
        raise OptionError(traces, lambda n: f"{_about(n, request, traces)}: trace sources are scored with {n.given('engine', 'local')} (the default); export the rows to "
                          "a table for Ray")
    if request.row_events:
        raise OptionError(("row_events", "engine"), lambda n: n.pick(
            "-v/--verbose prints each row's verdicts as they land on this machine; with --engine ray rows are judged "
            "on the actors: leave -v out, and read the verdicts in the scored table",
            f"row_events=True: each row's verdicts are heard (on_event, on_row) as they land on this machine; with "
            f"{ray(n)} rows are judged on the actors: leave it out, and read the verdicts in the scored table"))
    readers = tuple(field for field in ("junit", "html", "baseline") if getattr(request, field))
    if readers and not to_file(request.output):
        raise OptionError((*readers, "output"), lambda n: f"{_about(n, request, readers)} with {ray(n)} read the scored table back: give "
                          f"{n.placeholder('output', 'FILE or FOLDER')}")

    if names_folder(request.output) and request.table_format not in (None, "parquet"):
        raise OptionError(("engine", "output"), lambda n: f"{ray(n)} writes the folder {request.output} as Parquet files; to write {request.table_format}, name a "
                          f"file: {n.given('output', request.output.rstrip('/') + '.' + request.table_format)}")


def _given(request: Any, fields: Sequence[str]) -> tuple[str, ...]:
    """The ``fields`` of ``request`` that were given (not None, False or empty)."""
    return tuple(field for field in fields if getattr(request, field) not in (None, False, ()))


def _about(n: Names, request: Any, fields: Sequence[str]) -> str:
    """``fields`` of ``request`` as a message's subject (``Names.about``), joined."""
    return ", ".join(n.about(field, getattr(request, field)) for field in fields)


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


def check_selection(limit: int | None, sample: int | None) -> None:
    """Refuse ``limit`` with ``sample`` (both choose the rows to judge) and either below 1 (``OptionError``)."""
    if limit is not None and sample is not None:
        raise OptionError(("limit", "sample"), lambda n: f"{n('limit')} and {n('sample')} both choose the rows to judge: give one of them")
    if (limit is not None and limit < 1) or (sample is not None and sample < 1):
        raise OptionError(("limit", "sample"), lambda n: f"{n('limit')} and {n('sample')} take a number of rows, at least 1")


def check_audit_metrics(config: Any) -> None:
    """Refuse (``OptionError``, ``max_rate``) a bound on an abstention-audit rate (``gate.max_rate``,
    ``--max-rate``) when the run does not judge every metric the audit reads (sufficiency,
    abstention, completeness: ``ragjudge.audit.METRICS``): no row could have a cell, and the
    bound would fail at the end as one that measured nothing, every call paid for."""
    rates = list(getattr(config.gate, "max_rate", None) or {})
    unjudged = [m for m in AUDIT_METRICS if m not in config.metrics]
    if rates and unjudged:
        bounds = " ".join(f"{r}={config.gate.max_rate[r]:g}" for r in rates)
        raise OptionError("max_rate", lambda n: f"{n.pick(f'--max-rate {bounds}', f'gate.max_rate ({bounds})')} bounds the abstention audit, which "
                          f"reads sufficiency, abstention and completeness verdicts: this run does not judge {' and '.join(unjudged)} "
                          f"(add {n.pick(' '.join('-m ' + m for m in unjudged), 'them to metrics')}), so the bound would measure nothing")


def check_engine(engine: str, ray_actors: int | None = None) -> None:
    """Refuse an engine other than local or ray, and fewer than 1 Ray actor (``OptionError``)."""
    if engine not in ("local", "ray"):
        raise OptionError("engine", lambda n: f"{n.given('engine', engine)}: use local or ray")
    if engine == "ray" and ray_actors is not None and ray_actors < 1:
        raise OptionError("ray_actors", lambda n: f"{n.given('ray_actors', ray_actors)}: give a number of actors, 1 or more")


def check_regression_gates(max_regressions: int | None, max_drop: float | None, alpha: float | None = None) -> None:
    """Refuse regression gates that cannot mean anything (``OptionError``): a negative count, a
    drop outside 0..1 or not a number, a significance level ``alpha`` not strictly between 0 and 1."""
    if alpha is not None and not (math.isfinite(alpha) and 0.0 < alpha < 1.0):
        raise OptionError("alpha", lambda n: f"{n.given('alpha', alpha)}: give a significance level between 0 and 1 (0.05: a drop that noise "
                          "would show one time in twenty or less fails)")
    if max_regressions is not None and max_regressions < 0:
        raise OptionError("max_regressions", lambda n: f"{n.given('max_regressions', max_regressions)}: give a number of rows, 0 or more")
    if max_drop is not None and not (math.isfinite(max_drop) and 0.0 <= max_drop <= 1.0):
        raise OptionError("max_drop", lambda n: f"{n.given('max_drop', max_drop)}: give a drop in pass rate from 0 to 1 (0.05: five points)")


def check_outputs(source: str, output: str | None, summary_json: str | None, *formats: str | None, junit: str | None = None,
                  markdown: str | None = None, html: str | None = None, baseline: str | None = None, gates_without_baseline: bool = False,
                  html_flag: str | None = None, id_column: str | None = "id", id_required: bool = False,
                  metrics: Sequence[str] = (), labels: dict[str, str] | None = None, to_label: str | None = None) -> None:
    """Refuse (``OptionError``), before any judging, outputs that could only fail or collide at
    the end: an unknown format, regression gates without a baseline, a baseline that is missing,
    is not a scored table or could not be compared (a null or repeated id, an unreadable cell;
    ``OptionInputError``), a report file that is stdout, a folder or in a missing folder, two
    outputs (or an output and the input, or an output and the baseline) that are one file
    (``_check_distinct``), both the table and the summary on stdout. ``html_flag``: the command
    line's flag for the HTML file, where it is not ``--html`` (``ragjudge report -o``).
    ``id_required``: the id column was named, so a baseline without it is refused too.
    ``to_label``: a cascade's rows to label (``--to-label``), checked against the input and the
    other outputs as they are."""
    from pathlib import Path

    def flag(n: Names, field: str) -> str:  # the option's name, with the HTML file's own flag
        return html_flag if field == "html" and html_flag and not n.keywords else n(field)

    def about(n: Names, field: str, value: Any) -> str:  # Names.about, with the HTML file's own flag
        return n.given(field, value) if n.keywords else flag(n, field)

    for fmt in formats:
        if fmt is not None and fmt not in FORMATS:
            raise OptionError("format", lambda n, fmt=fmt: f"unknown format '{fmt}'; use one of: {', '.join(FORMATS)}")
    if gates_without_baseline and not baseline:
        raise OptionError(("max_regressions", "max_drop", "baseline"), lambda n: f"{n('max_regressions')} and {n('max_drop')} compare "
                          f"with a baseline: give {n.placeholder('baseline', 'SCORED_TABLE')}")
    if baseline and not Path(baseline).is_file():
        raise OptionError("baseline", lambda n: n.pick(f"--baseline: no such file: {baseline}", f"{n.given('baseline', baseline)}: no such file"))
    if baseline:  # before any judging: a table that was never scored cannot be a baseline
        from ragjudge.io import iter_chunks

        first = next(iter(iter_chunks(baseline, None, 1000)), None)
        if first is None or not metrics_of(first):
            raise OptionError("baseline", lambda n: f"{n.given('baseline', baseline)} holds no scored metric (no M_status and M_passed columns); "
                              f"give a table written by {n.pick('', 'evaluate(..., output=...) or ')}ragjudge score -o")
        held = metrics_of(first)
        missing = [metric for metric in metrics if metric not in held]
        if missing:  # found at the end, it cost the whole run (every call paid, no report written)
            raise OptionError("baseline", lambda n: f"{n.given('baseline', baseline)} holds no {', '.join(missing)} columns (M_status, M_passed); it holds "
                              f"{', '.join(held)}: compare with a baseline scored with {', '.join(missing)}, or judge only "
                              f"{', '.join(held)} ({n.pick(' '.join('-m ' + metric for metric in held), 'metrics: ' + str(held))})")
        for metric, column in (labels or {}).items():
            if metric in metrics and not has_path(first, column):
                raise OptionError("baseline", lambda n, metric=metric, column=column: f"{n.given('baseline', baseline)} has no column '{column}' for the labels of {metric} "
                                  f"(labels.{metric}); give the baseline its labels column (one run's labels are not the other's)")
        from ragjudge.io import read_table

        table = read_table(baseline)
        try:
            check_baseline(table, baseline, id_column, id_required)  # as read at the end
        except InputError:  # its message names the baseline as the reader knows it
            raise OptionInputError("baseline", lambda n: said(lambda: check_baseline(table, baseline, id_column, id_required,
                                                                                      n.given("baseline", baseline)))) from None
    for field, path in (("junit", junit), ("markdown", markdown), ("html", html)):
        if path is None:
            continue
        if to_stdout(path):
            raise OptionError(field, lambda n, field=field, path=path: f"{about(n, field, path)} writes a file, not stdout: give a file name")
        if path == "" or Path(path).is_dir() or not Path(path).resolve().parent.is_dir():
            raise OptionError(field, lambda n, field=field, path=path: f"{about(n, field, path)}: cannot write {n.pick(repr(path), 'there')}: give a file in an existing folder")
    if output == "" or summary_json == "":
        raise OptionError(("output", "summary_json"), lambda n: f"an empty path was given to {n('output')} or {n('summary_json')}")
    if to_file(output) and not output.endswith(("/", os.sep)) and not Path(os.path.realpath(output)).parent.is_dir():
        raise OptionError("output", lambda n: f"{n.about('output', output)}: output folder does not exist: {Path(output).parent}")  # before any call
    if to_stdout(output) and to_stdout(summary_json):
        raise OptionError(("output", "summary_json"), lambda n: f"{n.given('output', '-')} and {n.given('summary_json', '-')} would both "
                          "write to stdout; send one of them to a file")
    _check_distinct(source, baseline, (("output", output), ("summary_json", summary_json), ("junit", junit), ("markdown", markdown),
                                       ("html", html), ("to_label", to_label)), flag)
    if to_file(summary_json):
        target = Path(summary_json)
        if target.is_dir():
            raise OptionError("summary_json", lambda n: n.pick(f"--summary-json: {summary_json} is a folder", f"{n.given('summary_json', summary_json)} is a folder"))
        if not target.resolve().parent.is_dir():
            raise OptionError("summary_json", lambda n: f"{n.about('summary_json', summary_json)}: folder does not exist: {target.parent}")


def same_file(path: str, other: str) -> bool:
    """Whether ``path`` and ``other`` name one file: ``os.path.samefile`` where both exist (links
    and hard links included), else their resolved paths (``Path.resolve``: ``./out.jsonl`` is
    ``out.jsonl``)."""
    from pathlib import Path

    if os.path.exists(path) and os.path.exists(other):
        return os.path.samefile(path, other)
    return Path(path).resolve() == Path(other).resolve()


def _check_distinct(source: str, baseline: str | None, outputs: Sequence[tuple[str, str | None]],
                    flag: Callable[[Names, str], str]) -> None:
    """``OptionError`` when two outputs (``(field, path)``) are one file (the last written
    would replace the other), or an output other than the table is the input (the table may
    replace it: it is written after the input is read), or any output is the baseline (the
    comparison at the end would read this run's own file, or a report, instead of it).
    ``flag``: how the command line names a field."""
    given = [(field, path) for field, path in outputs if to_file(path)]

    def subject(n: Names, field: str, path: str) -> str:
        return n.given(field, path) if n.keywords else f"{flag(n, field)} {path}"

    for i, (field, path) in enumerate(given):
        for other_field, other_path in given[:i]:
            if same_file(path, other_path):
                raise OptionError((field, other_field), lambda n, field=field, path=path, other_field=other_field, other_path=other_path: f"{subject(n, field, path)} is also "
                                  f"{n.pick(flag(n, other_field), n.given(other_field, other_path))}; one would replace the other: give it another name")
        if baseline and same_file(path, baseline):
            raise OptionError((field, "baseline"), lambda n, field=field, path=path: f"{subject(n, field, path)} is also {n.pick(n('baseline'), 'the baseline')}; the "
                              f"comparison would read {'this run' if field == 'output' else n.pick(n(field), f'the {field} file')} "
                              "instead of the baseline: write to another file (and replace the baseline once the gate passes)")
        if field != "output" and source and not is_stdin(source) and same_file(path, source):
            what = {"summary_json": "the summary", "to_label": "the rows to label"}.get(field, "the report")
            raise OptionError(field, lambda n, field=field, path=path, what=what: f"{subject(n, field, path)} is also the input; {what} would replace it: give it another name")


def ignored_options(alpha: float | None, baseline: str | None, names: Names = CLI, *, max_drop: float | None = None,
                    flagged: frozenset[str] = frozenset(), config: Any = None) -> list[str]:
    """Notes for a run's options that it ignores, said rather than dropped in silence (as
    ``Scorer`` says ``judge.cascade_band`` without a cascade): ``alpha`` without ``baseline``, or
    with a baseline and no ``max_drop`` (the only gate ``alpha`` tests; a note, not an error, as
    ``alpha`` without a baseline is); ``--at-k`` (``passage_relevance.at_k`` in ``flagged``, the
    config keys the command line's options set) where ``config``'s run judges neither
    passage_relevance nor a per-passage judge (``per: passage``), whose columns it sets."""
    n = names
    notes = []
    if "passage_relevance.at_k" in flagged and config is not None and not _marks_passages(config):
        notes.append("note: --at-k sets the ks of passage_relevance's precision@k columns; this run judges neither passage_relevance nor a "
                     "per-passage judge, and it is ignored: add -m passage_relevance, or leave it out")
    return _alpha_ignored(alpha, baseline, n, max_drop) + notes


def _marks_passages(config: Any) -> bool:
    """Whether ``config``'s run judges passage_relevance or a judge defined ``per: passage``."""
    per_passage = {judge.name for judge in config.judges if judge.per_passage}
    return any(metric == "passage_relevance" or metric in per_passage for metric in config.metrics)


def _alpha_ignored(alpha: float | None, baseline: str | None, n: Names, max_drop: float | None) -> list[str]:
    """``ignored_options``' notes on ``alpha``."""
    if alpha is not None and not baseline:
        return [f"note: {n.about('alpha', alpha)} tests the drop from a baseline's pass rate; this run has no baseline and it is "
                f"ignored: give {n.placeholder('baseline', 'SCORED_TABLE')} with {n('max_drop')}, or leave it out"]
    if alpha is not None and max_drop is None:
        return [f"note: {n.about('alpha', alpha)} tests a drop in pass rate past {n('max_drop')}; this run has no {n('max_drop')} and it "
                f"is ignored: give {n.placeholder('max_drop', 'DROP')} (0.05: five points), or leave it out"]
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
    """Refuse a batch run that cannot be made (``OptionError``, exit 2, naming the fix): no
    response cache, stdin or the Ray engine (the rows are read in several passes, on this
    machine), a model no batch API ragjudge speaks serves (``client_for``)."""
    if not config.cache.enabled:
        raise OptionError("batch", lambda n: f"{n('batch')} judges from the response cache, and it is off: leave out --no-cache (cache.enabled: false)")
    if is_stdin(request.source):
        raise OptionError("batch", lambda n: f"{n('batch')} reads the input once per round: give a file, not stdin")
    if request.engine != "local":
        raise OptionError("batch", lambda n: f"{n('batch')} runs on the local engine: leave out {n.given('engine', request.engine)}")
    if config.judge.panel:
        raise OptionError("batch", lambda n: f"{n('batch')} judges with one model (judge.model); a panel (judge.panel) is not batched: leave out one of them")
    if decision_model(config.judge.model):
        raise OptionError("batch", lambda n: f"{n('batch')}: {config.judge.model} is a decision model, and its endpoint has no batch API (OpenAI's Batch API "
                          "does not take /v1/decisions; System One has none); it asks every metric of a row in one call already: "
                          "leave out --batch")
    if client_for(config.judge) is None:
        raise OptionError("batch", lambda n: f"{n('batch')}: {config.judge.model} is not served by a batch API ragjudge speaks; it batches OpenAI-compatible "
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

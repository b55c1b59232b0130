"""What one run is asked (``ScoreRequest``), in the parts each stage takes: the rows chosen
(``Selection``), the files written (``Outputs``), the engine (``EngineChoice``), the baseline and its
gates (``BaselineGates``), the trace sinks (``TraceSinks``), and the caller's wishes apart
(``Wishes``: hear each row, keep the table, handle Ctrl-C, name options as flags). The fields stay
flat on ``ScoreRequest`` (its keyword arguments are ``evaluate``'s and the manifest's); each part is
a frozen view of some of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragjudge.io import output_format
from ragjudge.options import CLI, KEYWORDS, Names, OptionError
from ragjudge.reports.outputs import Wanted
from ragjudge.run.checks import TRACE_OPTIONS, check
from ragjudge.io import is_stdin


@dataclass(frozen=True)
class Selection:
    """The rows judged: the first ``limit``, or a random ``sample`` of them chosen by ``seed``;
    every row when both are None (``Source.selection``)."""

    limit: int | None = None
    sample: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class Outputs:
    """The files a run writes as it judges: the scored table (``output``, ``-`` for stdout, in
    ``table_format`` where its suffix does not say it) and a cascade's rows to label
    (``to_label``). The reports written after the run are ``ScoreRequest.wanted``'s."""

    output: str | None = None
    table_format: str | None = None
    to_label: str | None = None


@dataclass(frozen=True)
class EngineChoice:
    """Where the rows are judged: ``name`` ``local`` or ``ray`` (``ray_address``, ``ray_actors``),
    and a batch run's choices (``batch_wait``, ``batch_resubmit``, ``batch_folder``)."""

    name: str = "local"
    ray_address: str | None = None
    ray_actors: int | None = None
    batch_wait: bool = False
    batch_resubmit: bool = False
    batch_folder: str | None = None


@dataclass(frozen=True)
class BaselineGates:
    """The table scored earlier (``path``) and the gates on the change from it."""

    path: str | None = None
    max_regressions: int | None = None
    max_drop: float | None = None
    alpha: float | None = None


@dataclass(frozen=True)
class TraceSinks:
    """A trace source's options (``ragjudge.run.checks.TRACE_OPTIONS``, by field name), the ones given."""

    given: tuple[tuple[str, Any], ...] = ()

    def __getitem__(self, name: str) -> Any:
        return dict(self.given).get(name)


@dataclass(frozen=True)
class Wishes:
    """The caller's wishes, apart from what is judged: ``row_events`` (hear each row's verdicts),
    ``keep_table`` (the outcome keeps the scored table), ``handle_signals`` (Ctrl-C and SIGTERM stop
    the run and keep what was judged), ``cli`` (messages name options as the command's flags)."""

    row_events: bool = False
    keep_table: bool = False
    handle_signals: bool = False
    cli: bool = False


@dataclass(frozen=True)
class ScoreRequest:
    """What one run is asked to do, besides the config (the judges, the model, the thresholds
    and gates: ``ragjudge.load_config``).

    Source: ``source`` (a path, a folder or glob, ``-`` for stdin, ``mlflow:EXPERIMENT``, or a
    pandas DataFrame) and ``input_format`` (overrides the suffix). Rows: ``limit`` (the first
    N) or ``sample`` (a random N, chosen by ``seed``); the others are written as skipped, "not
    sampled". Outputs: ``output`` (the scored table; ``-`` for stdout) in ``output_format``
    (else its suffix, else ``format``, the format for stdout or an unknown suffix), the
    ``summary_json``, ``junit``, ``markdown`` and ``html`` files, GitHub's job summary
    (``step_summary``, when ``GITHUB_STEP_SUMMARY`` is set). ``baseline``: a table scored
    earlier, with its gates ``max_regressions`` and ``max_drop`` (``alpha``: the drop fails only when McNemar's test
    of it is significant at this level, ``ragjudge.compare.checks``). ``engine``: ``local`` or
    ``ray`` (``ray_address``, ``ray_actors``). ``dry_run``: count calls, tokens and cost, make
    none (exit 2 where the run would exit 2 before any verdict: ``dry_run_checks``). Traces: ``mlflow_*`` (MLflow traces in, feedback out), ``expected_*_attribute``,
    ``phoenix_endpoint`` (where Phoenix is), ``phoenix_log_annotations`` (send the verdicts there:
    reading never writes without it), ``annotations`` (OpenTelemetry traces), ``phoenix_start``, ``phoenix_end``,
    ``phoenix_trace_id`` (the spans of ``phoenix:PROJECT`` read), ``judge_error_traces`` (judge the
    rows of traces in state ERROR, as MLflow's scorer does). ``batch_wait``: with ``judge.batch``,
    wait for the batches and finish the run (else submit and stop, exit 4; ``ragjudge.run.batch``).
    ``batch_resubmit``: with ``judge.batch``, submit again the calls of a batch whose create got
    no answer where the provider's listing cannot rule out that it was made (the risk: billed
    twice; without it the run stops, exit 3, ``ragjudge.run.batch.BatchUnsure``).
    ``flag_fields``: the fields
    ``--map`` set (a mapped column that is missing is an error naming the flag);
    ``row_events``: ``on_event`` hears each row's verdicts (``Row``); ``keep_table``: the
    outcome keeps the scored table; ``handle_signals``: Ctrl-C and SIGTERM stop the run and
    write what was judged (the command line's behaviour); ``cli``: the request is the command
    line's (``request_of``), so messages name its options as flags (``--limit``), not as these
    fields, the keyword arguments of a Python call (``limit=``)."""

    source: Any
    input_format: str | None = None
    output: str | None = None
    output_format: str | None = None
    format: str | None = None
    summary_json: str | None = None
    junit: str | None = None
    markdown: str | None = None
    html: str | None = None
    step_summary: bool = False
    limit: int | None = None
    sample: int | None = None
    seed: int | None = None
    engine: str = "local"
    ray_address: str | None = None
    ray_actors: int | None = None
    dry_run: bool = False
    baseline: str | None = None
    max_regressions: int | None = None
    max_drop: float | None = None
    alpha: float | None = None
    mlflow_tracking_uri: str | None = None
    mlflow_filter: str | None = None
    mlflow_max_traces: int | None = None
    mlflow_log_feedback: bool = False
    mlflow_feedback_name: tuple[str, ...] = ()
    expected_facts_attribute: str | None = None
    expected_response_attribute: str | None = None
    phoenix_endpoint: str | None = None
    annotations: str | None = None
    judge_error_traces: bool = False
    phoenix_start: str | None = None
    phoenix_end: str | None = None
    phoenix_trace_id: tuple[str, ...] = ()
    phoenix_log_annotations: bool = False
    batch_wait: bool = False
    batch_resubmit: bool = False
    to_label: str | None = None
    flag_fields: frozenset[str] = frozenset()
    row_events: bool = False
    keep_table: bool = False
    handle_signals: bool = False
    cli: bool = False
    batch_folder: str | None = None  # ragjudge batch collect: the batch folder of the manifest given (else folder_for's)
    flagged: frozenset[str] = frozenset()  # request_of: the config keys the command line's options set (passage_relevance.at_k: --at-k)

    @property
    def names(self) -> Names:
        """How messages name this request's options: as flags for the command line's, else as keyword arguments."""
        return CLI if self.cli else KEYWORDS

    @property
    def name(self) -> str:
        """The source as messages name it."""
        return self.source if isinstance(self.source, str) else "DataFrame"

    @property
    def table_format(self) -> str | None:
        """The format the scored table is written in, where its path's suffix does not say it."""
        return output_format(self.output, self.output_format, self.format)

    @property
    def reads_table_back(self) -> bool:
        """Whether an output reads the scored table after the run (JUnit, the HTML report, the
        baseline's comparison), so the run keeps it."""
        return bool(self.keep_table or self.junit or self.html or self.baseline)

    def wanted(self, step_summary: bool | None = None) -> Wanted:
        """The outputs asked for, as ``ragjudge.reports.outputs.finish`` writes them."""
        return Wanted(None if is_stdin(self.source) else self.name, self.input_format, self.output, self.summary_json, self.junit, self.markdown, self.html,
                      self.step_summary if step_summary is None else step_summary, self.baseline, self.max_regressions, self.max_drop,
                      self.alpha)

    def recorded(self) -> dict[str, Any]:
        """What a scored Parquet file records of this request beside the config
        (``options.run_record``): the regression gates given with ``baseline``, for
        ``ragjudge report --baseline`` to apply as the run did."""
        bounds = {"max_regressions": self.max_regressions, "max_drop": self.max_drop, "alpha": self.alpha}
        given = {key: value for key, value in bounds.items() if value is not None}
        return {"regression": given} if self.baseline and given else {}

    @property
    def selection(self) -> Selection:
        """The rows judged."""
        return Selection(self.limit, self.sample, self.seed or 0)

    @property
    def outputs(self) -> Outputs:
        """The files written as the rows are judged."""
        return Outputs(self.output, self.table_format, self.to_label)

    @property
    def engine_choice(self) -> EngineChoice:
        """Where the rows are judged."""
        return EngineChoice(self.engine, self.ray_address, self.ray_actors, self.batch_wait, self.batch_resubmit, self.batch_folder)

    @property
    def baseline_gates(self) -> BaselineGates:
        """The baseline and its gates."""
        return BaselineGates(self.baseline, self.max_regressions, self.max_drop, self.alpha)

    @property
    def trace_sinks(self) -> TraceSinks:
        """The trace options given (not None, False or empty)."""
        return TraceSinks(tuple((name, getattr(self, name)) for name in TRACE_OPTIONS if getattr(self, name) not in (None, False, ())))

    @property
    def wishes(self) -> Wishes:
        """The caller's wishes."""
        return Wishes(self.row_events, self.keep_table, self.handle_signals, self.cli)

    def check(self, config: Any) -> None:
        """Every rule across this request's options and ``config``, before any judging
        (``ragjudge.run.checks.check``); raises ``OptionError`` (exit 2) naming the option and the
        fix, the option named as ``names`` says."""
        try:
            check(self, config)
        except OptionError as exc:
            exc.named(self.names)
            raise

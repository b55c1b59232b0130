"""``ragjudge score``: its options (about fifty, one line of help each; ``--help`` shows those
most runs use, ``--help-all`` every one), the call of ``run`` and what the terminal shows of a
run (``_show``, ``_listener``; ``batch collect`` finishes a run through them too)."""

from __future__ import annotations

import gc
import sys
from typing import Annotated, Any, Optional

import typer

from ragjudge import options
from ragjudge.cli.app import _SAID, app
from ragjudge.configdoc import effective
from ragjudge.plan import Note, Progress, Row, Start
from ragjudge.reports.terminal import Progress as _progress
from ragjudge.reports.terminal import make_console, verdict_printer
from ragjudge.reports.terminal import report as print_report
from ragjudge.run import request_of, run
from ragjudge.run.estimate import render as estimate_lines

SCORE_EPILOG = """Examples:

  ragjudge score data.jsonl -m sufficiency -o scored.parquet

  cat data.jsonl | ragjudge score - -o - --format csv > scored.csv

  ragjudge score sample_data/rag_eval.mlflow.jsonl -c mlflow --min-pass-rate 0.9   (a bundled config)

  ragjudge score data.jsonl --model local/qwen2.5-coder-1.5b   (embedded judge, no API key)

  ragjudge score data.jsonl --set judge.concurrency=4 --set thresholds.completeness=4   (any config key)

  ragjudge score data.jsonl -o scored.parquet --batch   (the batch API: half the price; exit 4 until the same command collects; docs/batch.md)

  ragjudge score mlflow:my-rag-app --mlflow-log-feedback   (MLflow traces in, feedback out; docs/from-mlflow.md)

  ragjudge score phoenix:default --phoenix-endpoint http://localhost:6006 --phoenix-log-annotations   (a Phoenix project in, annotations out; docs/from-phoenix.md)

  ragjudge score traces.json --phoenix-endpoint http://localhost:6006 --phoenix-log-annotations   (OTLP JSON in, Phoenix annotations out)

Exit codes: 0 gate passed, 1 a gate failed (pass rate, skip rate, diagnosis share, or against \
--baseline: regressions, pass-rate drop), 2 usage/config/input error or an output cut short (a \
full disk, -o - into a pipe closed early), 3 too many judge errors (provider down, auth, quota, \
unreadable replies) or the budget reached, 4 submitted to the batch API and not yet judged \
(--batch; run again to collect), 130 interrupted."""


# `score --help` shows the options most runs use; `score --help-all` every option: those declared
# with hidden=ALL_ONLY too (issue 65 item 6: the whole list was 285 lines at 100 columns).
ALL_ONLY = True


def _help_all(ctx: typer.Context, param: Any, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for each in ctx.command.params:
        each.hidden = False
    typer.echo(ctx.get_help(), color=ctx.color)
    ctx.exit()


class _ScoreCommand(typer.core.TyperCommand):
    """``score``: its ``--help`` leaves out the options declared ``hidden=ALL_ONLY``; ``--help-all`` shows them."""

    def get_params(self, ctx: typer.Context) -> list:
        more = typer.core.TyperOption(param_decls=["--help-all"], is_flag=True, expose_value=False, is_eager=True, callback=_help_all,
                                      help="Show every option, those --help leaves out too, and exit.")
        return [*super().get_params(ctx), more]


@app.command(cls=_ScoreCommand, epilog=SCORE_EPILOG)
def score(
    input: Annotated[str, typer.Argument(help="Evaluation table: .jsonl, .csv, .parquet, .json, a folder or a glob of such files (one format), or - for stdin; or MLflow traces: mlflow:EXPERIMENT (name or id) or a file of exported traces; or OpenTelemetry traces: an OTLP JSON file or a saved Phoenix span table (one row per retriever span).")],
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="Scored table to write (format from the suffix; - for stdout). Without it only the summary is printed.", rich_help_panel="Input and outputs")] = None,
    metric: Annotated[list[str], typer.Option("-m", "--metric", help="A metric to judge: sufficiency, completeness, groundedness, or a judge defined in the config (ragjudge judges lists them); repeat for more (default: sufficiency and completeness).", rich_help_panel="Judge")] = [],
    config: Annotated[Optional[str], typer.Option("-c", "--config", help="YAML config file, or a bundled one: default, local, mlflow (`ragjudge config show NAME`); flags override it.", rich_help_panel="Judge")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="KEY=VALUE: set any config key, dotted (judge.concurrency=4, gate.max_error_rate=0.05); the value is read as YAML; repeat for more. Laid over the config file; the options named for a key win over it.", rich_help_panel="Judge")] = [],
    model: Annotated[Optional[str], typer.Option(help="Judge model, any litellm model string (default openai/gpt-4o-mini), local/qwen2.5-coder-1.5b for the embedded offline judge, or a decision model (openai-decisions/gpt-6-luna, systemone/jev-latest, systemone/solar-decide): every metric of a row in one call (docs/judges.md).", rich_help_panel="Judge")] = None,
    api_base: Annotated[Optional[str], typer.Option(help="Base URL of an OpenAI-compatible server, e.g. http://localhost:8000/v1.", rich_help_panel="Judge")] = None,
    transport: Annotated[Optional[str], typer.Option(help="auto (default): OpenAI-compatible models over ragjudge's fast aiohttp client, others through litellm; litellm: everything through litellm.", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    concurrency: Annotated[Optional[int], typer.Option(help="Judge calls in flight at once, across rows and metrics (default 16).", rich_help_panel="Judge")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Ignored: one process makes every judge call (kept so that older commands still run).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Seconds per judge call before it is retried (default 120).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    max_retries: Annotated[Optional[int], typer.Option(help="Retries per call on 429, 5xx, timeouts, dropped connections (default 6).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    rpm: Annotated[Optional[float], typer.Option(help="Cap on judge requests per minute (default: none).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    samples: Annotated[Optional[int], typer.Option(help="Judge samples per row and metric; majority verdict (default 1).", rich_help_panel="Judge")] = None,
    panel: Annotated[list[str], typer.Option(metavar="MODEL[,MODEL...]", help="A panel of judge models deciding together instead of --model, e.g. openai/gpt-4o-mini,anthropic/claude-3-5-haiku-latest,gemini/gemini-1.5-flash (or --panel once per member); columns M_panel_NAME_* per member (docs/judges.md).", rich_help_panel="Judge")] = [],
    panel_rule: Annotated[Optional[str], typer.Option(help="How a panel decides: majority (default; a tie is no), all, any, or mean (the lower median of the members' scores).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    panel_quorum: Annotated[Optional[int], typer.Option(help="Panel members that must answer for a verdict; below it the row is an error (default: more than half).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    cascade: Annotated[Optional[str], typer.Option(metavar="FIRST,THEN[,...]", help="A cascade of judges instead of --model: FIRST (a judge giving P(yes): the embedded judge, a chat model read with log-probabilities, a decision model) judges every row; a row whose P(yes) lies in --cascade-band goes to THEN (a model, or panel: the --panel members, last only). Columns M_stage, M_cascade_NAME_* (docs/judges.md).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    cascade_band: Annotated[Optional[str], typer.Option(metavar="LO,HI", help="With --cascade: the P(yes) band, bounds included, whose rows go to the next stage (default 0.2,0.8).", hidden=ALL_ONLY, rich_help_panel="Judge")] = None,
    to_label: Annotated[Optional[str], typer.Option(help="With --cascade: write the rows still uncertain after the last stage (its P(yes) in the band, or its panel split) to this table, with an empty M_label column to fill and give back with --labels M=M_label.", hidden=ALL_ONLY, rich_help_panel="Input and outputs")] = None,
    map: Annotated[list[str], typer.Option("--map", help="FIELD=COLUMN, dotted paths allowed (inputs.query); fields: id, request, context, expected_facts, expected_response, response.", rich_help_panel="Input and outputs")] = [],
    format: Annotated[Optional[str], typer.Option("--format", help="Output format jsonl|csv|parquet|json, for -o - (stdout) or a path whose suffix doesn't tell.", rich_help_panel="Input and outputs")] = None,
    input_format: Annotated[Optional[str], typer.Option(help="Format of INPUT, overriding its suffix (stdin is recognised from its first bytes); mlflow-traces: a file of exported MLflow traces; otlp: OTLP JSON; phoenix: a saved Phoenix span table.", hidden=ALL_ONLY, rich_help_panel="Input and outputs")] = None,
    output_format: Annotated[Optional[str], typer.Option(help="Format of --output, overriding its suffix.", hidden=ALL_ONLY, rich_help_panel="Input and outputs")] = None,
    threshold: Annotated[list[str], typer.Option(help="METRIC=VALUE row pass threshold (defaults: sufficiency=0.5, completeness=3).", rich_help_panel="Judge")] = [],
    min_pass_rate: Annotated[list[str], typer.Option(help="RATE or METRIC=RATE: gate on the pass rate over ok rows (default 1.0); repeat for more metrics.", rich_help_panel="Gate")] = [],
    max_error_rate: Annotated[list[str], typer.Option(help="RATE or METRIC=RATE: gate on the share of judged rows with status error (default 0.0); repeat for more metrics.", rich_help_panel="Gate")] = [],
    max_skip_rate: Annotated[list[str], typer.Option(help="RATE or METRIC=RATE: gate on the share of rows a metric skipped, e.g. for lack of a response (default 1.0: never fails); repeat for more metrics.", rich_help_panel="Gate")] = [],
    max_diagnosis: Annotated[list[str], typer.Option(help="DIAGNOSIS=SHARE, e.g. retrieval=0.1: fail when more than this share of the rows with a diagnosis (sufficiency x completeness) have it; repeat for more.", hidden=ALL_ONLY, rich_help_panel="Gate")] = [],
    max_rate: Annotated[list[str], typer.Option(help="RATE=SHARE of the abstention audit (-m sufficiency -m completeness -m abstention): answered_insufficient=0.1 fails when more than 10% of the rows with an insufficient context were answered; abstained_sufficient=0.2 when more than 20% with a sufficient one declined; repeat for more.", hidden=ALL_ONLY, rich_help_panel="Gate")] = [],
    target_accuracy: Annotated[Optional[float], typer.Option(help="The abstention audit's selective-generation curve: name the lowest threshold on the score (the sufficiency probability, or --app-confidence) whose accuracy among answered rows reaches this (0..1].", hidden=ALL_ONLY, rich_help_panel="Gate")] = None,
    audit: Annotated[list[str], typer.Option(help="abstention: the abstention audit (what the application did when the context was not enough; docs/abstention-audit.md), adding sufficiency, abstention and completeness where the run does not name them; it is on without this whenever the run judges all three.", hidden=ALL_ONLY, rich_help_panel="Gate")] = [],
    app_confidence: Annotated[Optional[str], typer.Option(help="COLUMN of the input holding the application's own confidence per row: the abstention audit's curve is drawn on it instead of the sufficiency probability.", hidden=ALL_ONLY, rich_help_panel="Gate")] = None,
    labels: Annotated[list[str], typer.Option(help="METRIC=COLUMN: the column of your own labels for METRIC (sufficiency: yes/no; completeness: a 1..5 rating); the labelled rows correct its pass rate, with a 95% interval (docs/calibration.md); passage_relevance: a list of one grade per passage (0/1 or 0..3), giving nDCG@k and recall@k; repeat for more.", rich_help_panel="Gate")] = [],
    pairwise: Annotated[Optional[str], typer.Option(help="A,B: which of two responses (columns, or a table joined by id: response,pr.jsonl) holds more of the ground truth, asked in both orders: -1 A, 0 tie, 1 B; B's win rate (docs/judges.md).", rich_help_panel="Judge")] = None,
    at_k: Annotated[Optional[str], typer.Option(help="The ks of passage_relevance's precision@k (and, with its labels, nDCG@k and recall@k) columns, e.g. 1,3,5 (passage_relevance.at_k).", hidden=ALL_ONLY, rich_help_panel="Gate")] = None,
    gate_on: Annotated[Optional[str], typer.Option(help="judge (default): --min-pass-rate gates on the judge's pass rate; corrected: on the lower bound of the label-corrected pass rate's interval (needs --labels).", hidden=ALL_ONLY, rich_help_panel="Gate")] = None,
    summary_json: Annotated[Optional[str], typer.Option(help="Write the run summary and gate verdict as JSON to this file (- for stdout).", rich_help_panel="Reports")] = None,
    junit: Annotated[Optional[str], typer.Option(help="Write JUnit XML: one testsuite per metric, one testcase per row (for CI test reporters).", rich_help_panel="Reports")] = None,
    markdown: Annotated[Optional[str], typer.Option(help="Write a Markdown summary (appended to GitHub's job summary too when GITHUB_STEP_SUMMARY is set).", rich_help_panel="Reports")] = None,
    html: Annotated[Optional[str], typer.Option(help="Write the HTML report of the run: one self-contained file with charts and every row's reasons.", rich_help_panel="Reports")] = None,
    no_step_summary: Annotated[bool, typer.Option("--no-step-summary", help="Do not append the Markdown summary to GITHUB_STEP_SUMMARY.", hidden=ALL_ONLY, rich_help_panel="Reports")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read, map and check the input, render every prompt and look it up in the cache; print the calls, tokens and cost a run would take. Makes no call, writes no table. Exits 2 where the run would before any verdict (nothing to judge, every input unusable), else 0.", rich_help_panel="Reports")] = False,
    print_config: Annotated[bool, typer.Option("--print-config", help="Print the config this run would use (the file, --set and the flags laid over the defaults), each value with where it came from, and exit; reads no input.", hidden=ALL_ONLY, rich_help_panel="Reports")] = False,
    limit: Annotated[Optional[int], typer.Option(help="Judge the first N rows only; the rest are written as skipped, 'not sampled'.", rich_help_panel="Input and outputs")] = None,
    sample: Annotated[Optional[int], typer.Option(help="Judge a random N rows (reproducible with --seed); the rest are written as skipped, 'not sampled'.", rich_help_panel="Input and outputs")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed of --sample's choice (default 0).", hidden=ALL_ONLY, rich_help_panel="Input and outputs")] = None,
    max_cost: Annotated[Optional[float], typer.Option(help="Budget in USD: once spent, no new call starts and the remaining rows are errors 'budget reached' (exit 3); a re-run pays only for those.", rich_help_panel="Cost")] = None,
    batch: Annotated[Optional[bool], typer.Option("--batch", help="Judge through the provider's batch API (OpenAI-compatible models, Anthropic's; not decision models): half the price, replies within 24 hours. Submits the calls not cached, writes a manifest beside the output (or in the cache folder) and exits 4; the same command again collects and finishes (docs/batch.md).", rich_help_panel="Cost")] = None,
    batch_wait: Annotated[bool, typer.Option("--batch-wait", help="With --batch: wait for the batches (a progress bar of the provider's counts), then finish the run.", hidden=ALL_ONLY, rich_help_panel="Cost")] = False,
    batch_resubmit: Annotated[bool, typer.Option("--batch-resubmit", help="With --batch: submit again the calls of a batch whose create got no answer (a 5xx, a gateway's 504) even where the provider's listing cannot rule out that it was made; the risk: a second batch, billed twice. Without it such a run stops (exit 3) and says so.", rich_help_panel="Cost")] = False,
    batch_fallback: Annotated[Optional[str], typer.Option(help="With --batch: resubmit (default) a call the batch failed or let expire, up to 3 times, or judge it directly at the full price (direct).", hidden=ALL_ONLY, rich_help_panel="Cost")] = None,
    engine: Annotated[str, typer.Option(help="local (default), or ray: score on a Ray cluster with Ray Data; OUTPUT may then be a folder of Parquet files.", hidden=ALL_ONLY, rich_help_panel="Ray")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(help="With --engine ray: the cluster's address (default: start a local one).", hidden=ALL_ONLY, rich_help_panel="Ray")] = None,
    ray_actors: Annotated[Optional[int], typer.Option(help="With --engine ray: scoring actors (default: the cluster's CPUs). --concurrency is per actor (the provider sees actors x concurrency calls in flight); --rpm is split across them.", hidden=ALL_ONLY, rich_help_panel="Ray")] = None,
    baseline: Annotated[Optional[str], typer.Option(help="A table scored earlier (the last accepted run): compare with it and gate on regressions.", rich_help_panel="Gate")] = None,
    max_regressions: Annotated[Optional[int], typer.Option(help="With --baseline: fail when more rows than this passed in the baseline and fail now or are not judged now (error, skipped).", rich_help_panel="Gate")] = None,
    max_drop: Annotated[Optional[float], typer.Option(help="With --baseline: fail when a pass rate is lower than the baseline's by more than this (0..1).", rich_help_panel="Gate")] = None,
    alpha: Annotated[Optional[float], typer.Option(help="With --baseline --max-drop: fail only when the drop is also significant at this level (McNemar's exact test, p <= ALPHA; 0.05), so that noise passes. Default: the bound alone.", hidden=ALL_ONLY, rich_help_panel="Gate")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.", rich_help_panel="Judge")] = False,
    cache_dir: Annotated[Optional[str], typer.Option(help="Response cache folder (default: the per-user cache folder).", rich_help_panel="Judge")] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress, mapping or summary table; only errors and a failing gate's lines (with --dry-run: the estimate alone).", rich_help_panel="Reports")] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Print each row's verdicts as they land (id, score, a line of rationale); with -q, only these and a failing gate.", rich_help_panel="Reports")] = False,
    mlflow_tracking_uri: Annotated[Optional[str], typer.Option(help="MLflow tracking store of mlflow:EXPERIMENT and --mlflow-log-feedback (default: MLFLOW_TRACKING_URI), e.g. http://localhost:5000 or sqlite:///mlflow.db.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    mlflow_filter: Annotated[Optional[str], typer.Option(help="With mlflow:EXPERIMENT: a search_traces filter string, e.g. \"attributes.status = 'OK'\".", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    mlflow_max_traces: Annotated[Optional[int], typer.Option(help="With mlflow:EXPERIMENT: read at most N traces, oldest first.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    mlflow_log_feedback: Annotated[bool, typer.Option("--mlflow-log-feedback", help="Log each verdict as an MLflow Feedback on its trace (replacing ragjudge's earlier one), and the run's summary as an MLflow run with the scored table and report.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = False,
    phoenix_start: Annotated[Optional[str], typer.Option(help="With phoenix:PROJECT: read the traces with a span from this time on (ISO 8601, e.g. 2026-12-01T00:00:00Z), whole.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    phoenix_end: Annotated[Optional[str], typer.Option(help="With phoenix:PROJECT: read the traces with a span before this time (ISO 8601), whole.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    phoenix_trace_id: Annotated[list[str], typer.Option(help="With phoenix:PROJECT: read this trace (its id as Phoenix shows it); repeat for more.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = [],
    judge_error_traces: Annotated[bool, typer.Option("--judge-error-traces", help="With traces: judge the rows of traces in state ERROR too, as MLflow's scorer does (default: skipped, 'trace state ERROR').", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = False,
    mlflow_feedback_name: Annotated[list[str], typer.Option(help="METRIC=NAME: the name of METRIC's feedback (default: MLflow's own scorer's, retrieval_sufficiency for sufficiency; response_completeness); repeat for more.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = [],
    expected_facts_attribute: Annotated[Optional[str], typer.Option(help="With OpenTelemetry traces: the span attribute holding the expected facts, root span first; dotted names reach into a JSON attribute, e.g. metadata.expected_facts (default: none, reference-free).", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    expected_response_attribute: Annotated[Optional[str], typer.Option(help="With OpenTelemetry traces: the span attribute holding the expected response, e.g. metadata.expected_response.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    phoenix_endpoint: Annotated[Optional[str], typer.Option(help="With OpenTelemetry traces: the Phoenix server at this URL (default: PHOENIX_COLLECTOR_ENDPOINT) that phoenix:PROJECT is read from and --phoenix-log-annotations logs to; checked before judging.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
    phoenix_log_annotations: Annotated[bool, typer.Option("--phoenix-log-annotations", help="With OpenTelemetry traces: log each verdict as an annotation in Phoenix at --phoenix-endpoint, replacing ragjudge's earlier one (reading phoenix:PROJECT writes nothing without it).", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = False,
    annotations: Annotated[Optional[str], typer.Option(help="With OpenTelemetry traces: write the verdicts as Phoenix's annotation tables (.parquet, .jsonl or .csv; trace annotations beside it as NAME.traces.SUFFIX), to load later; nothing is sent to Phoenix unless --phoenix-log-annotations is given too.", hidden=ALL_ONLY, rich_help_panel="Traces (MLflow, OpenTelemetry, Phoenix)")] = None,
) -> None:
    """Score a RAG evaluation table with LLM judges and gate on the result."""
    given = dict(locals())
    given["panel"] = ",".join(panel) if panel else None  # --panel a,b or --panel a --panel b: one list of members
    loaded = options.load_layers(config, given, set_)
    if print_config:
        typer.echo(effective(loaded), nl=False)
        raise typer.Exit(0)
    request = request_of(given, flag_fields=loaded.mapped, handle_signals=True)
    console = make_console()
    progress = None if quiet or dry_run or engine == "ray" else _progress(console)
    printer = None
    if verbose:
        printer = verdict_printer(console, progress)
    if not dry_run:
        _collect_less()
    try:
        outcome = run(request, loaded.config, on_event=_listener(console, progress, quiet, printer))
    finally:
        if progress:
            progress.stop()
    raise typer.Exit(_show(console, outcome, quiet))


def _show(console: Any, outcome: Any, quiet: bool) -> int:
    """Print the end of a run (``ragjudge.run.RunOutcome``) and return its exit code: the dry
    run's figures, or the summary, the gate's lines, the failing rows and what the trace sinks
    did (with -q: only what failed or was not logged)."""
    if outcome.estimate is not None:
        for line in [*([] if quiet else outcome.estimate["notes"]), *estimate_lines(outcome.estimate)]:  # -q: the figures alone
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        return outcome.exit_code
    if outcome.batch is not None and outcome.batch.pending:
        for line in outcome.batch.lines:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        return outcome.exit_code
    if outcome.stopped is not None:
        print(outcome.stopped, file=sys.stderr)
        _SAID["interrupted"] = True
        return outcome.exit_code
    request = outcome.request
    if print_report(console, outcome.result, outcome.finished, request.wanted(), quiet, outcome.result.summary.cache):
        _SAID["interrupted"] = True
    for position, line in enumerate(outcome.trace_lines):  # with -q, only what was not logged or written
        if not quiet or position in outcome.trace_failed:
            console.print(line, highlight=False, soft_wrap=True, markup=False)
    return outcome.exit_code


def _collect_less() -> None:
    """Python's cyclic garbage collector, tuned for a run of this process: what is loaded so far
    is frozen out of its scans, and it runs every 50,000 new objects, not 700. A run's rows,
    records and verdicts are freed by reference counting; the default collector spent about
    3 of 17 CPU seconds re-scanning them on 12,000 rows (bench figure 1c). Library callers keep
    their own settings: only the ``score`` command changes them."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def _listener(console: Any, progress: Any, quiet: bool, show_row: Any) -> Any:
    """The run's events to the terminal: the progress bar, the notes (unless ``quiet``) and,
    with ``show_row`` (-v; with -q: the verdicts, no progress or table), each row's verdicts."""
    def hear(event: Any) -> None:
        if isinstance(event, Start) and progress:
            progress.start(event.total)
        elif isinstance(event, Progress) and progress:
            progress.advance(event.rows, event.cost_usd)
        elif isinstance(event, Note) and (not quiet or event.warning):
            console.print(event.text, highlight=False, soft_wrap=True, markup=False)
        elif isinstance(event, Row) and show_row:
            show_row(event.position, event.id, event.verdicts)
        elif type(event).__name__ == "BatchProgress" and progress:  # --batch-wait: the provider's counts
            progress.batch(event.done, event.total, event.status)

    return hear


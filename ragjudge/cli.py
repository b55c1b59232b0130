"""The ``ragjudge`` command line (Typer). Each command parses options, calls the library and
maps the result to an exit code; errors print one line (``RAGJUDGE_DEBUG=1`` shows the
traceback). Neither ``ragjudge --help`` nor this module imports litellm or pandas.

The project's own modules are imported at the top; only ``ragjudge.io`` (pandas, pyarrow) is
imported inside the commands that read or write a table, so ``ragjudge --help`` loads neither.
The price of one place for the imports: ``ragjudge --help`` takes 0.45 s (median of 15 on 2 cores,
2026-12-04), against 0.18 s when every command imported the library inside it; a run imports all
of it either way.

Why it is over 600 lines: it is the command-line contract itself. ``score`` declares about
fifty options, one line of help each, and every command carries its examples; the logic they
reach lives in the library (``options``, ``run``, ``reports.terminal``)."""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragjudge import __version__, agreement, cascade_fit, catalog, compare, options
from ragjudge import calibrate as decisions  # the module of `ragjudge calibrate`, beside the command of that name below
from ragjudge.cache import ResponseCache, cache_exists, default_cache_dir
from ragjudge.config import _config_path, bundled_config
from ragjudge.configdoc import effective
from ragjudge.counting import check_labels, levels_of_config
from ragjudge.errors import EXIT_USAGE, ConfigError, RagjudgeError
from ragjudge.run.estimate import render as estimate_lines
from ragjudge.gate import exit_code
from ragjudge.http_errors import redact
from ragjudge.plan import Note, Progress, Row, Start
from ragjudge.reports.gate_text import lines as gate_lines, verdict_line
from ragjudge.reports.html import from_table, write
from ragjudge.reports.terminal import Progress as _progress
from ragjudge.reports.terminal import make_console, verdict_printer
from ragjudge.reports.terminal import say as _say
from ragjudge.reports.terminal import report as print_report
from ragjudge.run import recorded_request, request_of, run
from ragjudge.run import checks
from ragjudge.settings import load_config
from ragjudge.io import read_record, TableWriter, write_atomic
from ragjudge.io.formats import SUFFIXES

app = typer.Typer(
    name="ragjudge",
    help="Batch evaluator for RAG: context sufficiency and response completeness judges with a CI gate.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)
def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragjudge {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """Batch evaluator for RAG: context sufficiency and response completeness judges with a CI gate."""


cache_app = typer.Typer(help="Inspect or clear the judge response cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
batch_app = typer.Typer(help="Collect a run submitted to the provider's batch API (score --batch) and finish it.", no_args_is_help=True)
app.add_typer(batch_app, name="batch")
config_app = typer.Typer(help="Print the bundled configs (every key with its default, the embedded judge's, MLflow's).", no_args_is_help=True)
app.add_typer(config_app, name="config")

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


_SAID: dict[str, bool] = {}  # the score command said why it stopped: main adds nothing


@app.command("agreement", epilog="""Examples:

  ragjudge agreement scored.parquet --metric sufficiency --labels label_sufficient

  ragjudge agreement scored.jsonl --metric completeness --labels label_completeness --by system

  ragjudge agreement scored_a.jsonl --metric completeness --labels label_completeness_pref --pair scored_b.jsonl""")
def agreement_command(
    scored: Annotated[str, typer.Argument(help="A table scored by `ragjudge score` (any format, or - for stdin).")],
    metric: Annotated[str, typer.Option("-m", "--metric", help="sufficiency (binary) or completeness (1..5).")],
    labels: Annotated[str, typer.Option(help="Column holding the human labels (COLUMN, or METRIC=COLUMN as for score): yes/no for sufficiency, 1..5 ratings for completeness, signed preferences with --pair.")],
    by: Annotated[Optional[str], typer.Option(help="Break the statistics down by this column (e.g. system).")] = None,
    pair: Annotated[Optional[str], typer.Option(help="The same rows scored on response B (score with --map response=response_b; matched by id when both have one): pairwise sign agreement.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    config: Annotated[Optional[str], typer.Option("-c", "--config", help="YAML config that defines the metric, for a judge defined in YAML.")] = None,
) -> None:
    """Measure how often the judge agrees with human labels in a scored table."""
    from ragjudge.io import read_table  # pandas

    named, _, column = labels.partition("=")
    if column and named == metric:  # --labels METRIC=COLUMN, as score, compare and calibrate take it
        labels = column
    settings = load_config(config)
    kinds = {item["name"]: item["kind"] for item in catalog.describe(settings)}
    if metric not in kinds:
        raise RagjudgeError(f"unknown metric '{metric}'; use {', '.join(kinds)} or give the config that defines it (-c)")
    report = agreement.agreement(read_table(scored), metric, labels, by=by, pair=read_table(pair) if pair else None, kind=kinds[metric],
                     level=settings.level(metric))
    if by:
        report["by_column"] = by
    typer.echo(json.dumps(report, indent=2) if json_output else agreement.render(report))


@app.command("compare", epilog="""Examples:

  ragjudge compare main.scored.parquet scored.parquet

  ragjudge compare main.scored.parquet scored.parquet -m sufficiency --max-regressions 0

  ragjudge compare base.jsonl new.jsonl --by source --json

  ragjudge compare main.scored.parquet scored.parquet --by source --max-drop 0.05 --alpha 0.05

Exit codes: 0 the gates passed, 1 a gate failed, 2 the tables cannot be compared.""")
def compare_command(
    baseline: Annotated[str, typer.Argument(help="The scored table to compare against (the last accepted run).")],
    current: Annotated[str, typer.Argument(help="The scored table of this run.")],
    metric: Annotated[list[str], typer.Option("-m", "--metric", help="Metric to compare; repeat for more (default: every metric of the tables, which must hold the same ones; else name them).")] = [],
    by: Annotated[Optional[str], typer.Option(help="Break the comparison down by this column of the current table.")] = None,
    max_regressions: Annotated[Optional[int], typer.Option(help="Fail when more rows than this passed in the baseline and fail now or are not judged now (error, skipped). Default: the bound the current table records of its run (a Parquet file scored with --baseline --max-regressions), else none.")] = None,
    max_drop: Annotated[Optional[float], typer.Option(help="Fail when a pass rate is lower than the baseline's by more than this (0..1). Default: the bound the current table records, else none.")] = None,
    alpha: Annotated[Optional[float], typer.Option(help="Fail --max-drop only when the drop is also significant at this level (McNemar's exact test, p <= ALPHA; with --by, each slice's drop is gated too, its p adjusted across the slices), and call a slice changed at it. Default: the level the current table records, else the bound alone (slices called changed at 0.05).")] = None,
    correction: Annotated[Optional[str], typer.Option(help="With --by: how the slices' p-values are adjusted for testing them together: holm (Holm's step-down, the family-wise error) or bh (Benjamini-Hochberg, the false discovery rate). Default: holm.")] = None,
    config: Annotated[Optional[str], typer.Option("-c", "--config", help="YAML config that defines metrics of your own (for their scale); default: the judges a Parquet table records.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    by_position: Annotated[bool, typer.Option("--by-position", help="Match the rows by position, not by id (both tables list the same rows in the same order).")] = False,
    map: Annotated[list[str], typer.Option("--map", help="id=COLUMN: the column holding the row ids, as the run mapped it (default: id).")] = [],
    labels: Annotated[list[str], typer.Option(help="METRIC=COLUMN: the column of your own labels for METRIC in both tables: each run's label-corrected pass rate and the change between them, with 95% intervals (docs/calibration.md); repeat for more.")] = [],
) -> None:
    """Compare two scored tables: pass rates with paired tests, rows that regressed or improved, and regression gates."""
    from ragjudge.io import read_table  # pandas

    # what the runs recorded (ragjudge.options.run_record): the id column they named their rows by, and the judges their
    # configs defined (for a custom scale); the current table's, else the baseline's. Their labels are not taken: give --labels
    records = [(path, found) for path in (current, baseline) if (found := read_record(path)) is not None]
    recorded_id = next((found["columns"]["id"] for _, found in records if isinstance(found.get("columns"), dict) and found["columns"].get("id")), None)
    judges = next(((path, {"judges": found["judges"]}) for path, found in records if found.get("judges")), None)
    settings, mapped = options.load(config, {"map": map, "labels": labels}, recorded=None if config else judges)
    if mapped - {"id"}:
        raise ConfigError(f"compare matches rows by id only: --map {', '.join(sorted(mapped - {'id'}))}=... has no use here; give --map id=COLUMN or nothing")
    scales = {item["name"]: item["kind"] == "scale" for item in catalog.describe(settings)}
    base, cur = read_table(baseline), read_table(current)
    ids = settings.columns.id or recorded_id  # --map id= (or -c's columns.id) first
    # the regression gates the current run recorded (score --baseline ... --max-regressions): applied as report --baseline
    # applies them, each flag given in place of its recorded bound
    recorded = next((found for path, found in records if path == current), {}).get("regression")
    recorded = {key: value for key, value in recorded.items() if key in ("max_regressions", "max_drop", "alpha")
                and isinstance(value, (int, float)) and not isinstance(value, bool)} if isinstance(recorded, dict) else {}
    given = {"max_regressions": max_regressions, "max_drop": max_drop, "alpha": alpha}
    taken = {key: value for key, value in recorded.items() if given[key] is None}
    max_regressions, max_drop, alpha = (given[key] if given[key] is not None else recorded.get(key) for key in ("max_regressions", "max_drop", "alpha"))
    if taken:
        typer.echo(f"note: the regression gates {current} records of its run: "
                   + ", ".join(f"--{key.replace('_', '-')} {value}" for key, value in taken.items()) + " (a flag given replaces its own)", err=True)
    if max_regressions is None and max_drop is None and not any(path == current for path, _ in records):
        # a CSV or JSON Lines table keeps no record of its run: no gate is applied, and that is said, as report says it
        typer.echo(f"note: {current} does not record its run's regression gates (a Parquet file written by ragjudge score does): "
                   "no regression gate is applied; give --max-regressions and --max-drop to gate", err=True)
    checks.check_regression_gates(max_regressions, max_drop, alpha=alpha)
    if correction is not None and by is None:  # said, as score says a flag it ignores
        typer.echo(f"note: --correction {correction} adjusts the p-values of --by's slices; without --by there are none and it is "
                   "ignored: give --by COLUMN, or leave it out", err=True)
    if given["alpha"] is not None and max_drop is None and by is None:
        typer.echo(f"note: --alpha {alpha} gates --max-drop's drop (and, with --by, calls a slice changed); with neither it is "
                   "ignored: give --max-drop DROP, or leave it out", err=True)
    report = compare.compare(base, cur, metrics=metric or None, by=by, scales=scales, by_position=by_position, id_column=ids or "id",
                     levels=levels_of_config(settings, metric or compare.metrics_of(cur)), id_required=ids is not None,
                     config=settings, correction=correction or "holm", alpha=alpha)
    results = compare.checks(report, max_regressions, max_drop, alpha)
    report["gate_lines"] = gate_lines(results)
    code = exit_code(results)
    typer.echo(json.dumps(report, indent=2) if json_output else compare.render(report, report["gate_lines"]))
    if results and not json_output:  # the closing line score and report's gate end with: the exit code said, not left to $?
        typer.echo(verdict_line(code))
    raise typer.Exit(code)


@app.command(epilog="""Examples:

  ragjudge calibrate scored.parquet --labels sufficiency=human -c my.yaml -o my-judge.yaml

  ragjudge calibrate scored.parquet --labels sufficiency=human -c my.yaml --suggest 50 -o to_label.csv

  ragjudge calibrate scored.parquet --labels sufficiency=human -c cascade.yaml --cascade --max-escalate 0.2 -o cascade.fitted.yaml

Exit codes: 0 the config written (with --suggest: the rows to label), 1 nothing written (no fitted setting beats the \
settings you scored with out of fold, or the labels cannot be fitted: one class, or fewer of one than --folds; \
each line says why), 2 bad input or usage (fewer than 20 labelled rows, or with a cached reply; no labels column; a bad -o).""")
def calibrate(
    table: Annotated[str, typer.Argument(help="The table you scored (its input or the scored table), with your labels in a column.")],
    labels: Annotated[list[str], typer.Option(help="METRIC=COLUMN: the column of your labels for METRIC (sufficiency: yes/no; completeness: a 1..5 rating); repeat for more.")],
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="Where to write: the config with the chosen settings (YAML), or with --suggest the rows to label (any table format).")] = None,
    config: Annotated[Optional[str], typer.Option("-c", "--config", help="The YAML config you scored with (its model and prompt settings find the cached replies; the written config starts from it).")] = None,
    model: Annotated[Optional[str], typer.Option(help="The judge model you scored with, when not in the config.")] = None,
    api_base: Annotated[Optional[str], typer.Option(help="The API base URL you scored with (part of each reply's cache key).")] = None,
    cache_dir: Annotated[Optional[str], typer.Option(help="The response cache folder you scored with (default: the per-user cache folder).")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="KEY=VALUE: set any config key, dotted, as for score.")] = [],
    map: Annotated[list[str], typer.Option("--map", help="FIELD=COLUMN, as for score.")] = [],
    folds: Annotated[Optional[int], typer.Option(help="Folds of the cross-validation (stratified by label; default 5).", min=2)] = None,
    suggest: Annotated[Optional[int], typer.Option(help="Instead of fitting: write the N unlabelled rows the judge is least sure of, to label for calibrating (not a random sample: keep them out of the labels the corrected pass rate reads, docs/calibration.md).", min=1)] = None,
    cascade: Annotated[bool, typer.Option("--cascade", help="Fit the band of the cascade the table was scored with (judge.cascade_band) from the first stage's P(yes) and the labels, out of fold; no judge call (docs/judges.md).")] = False,
    target_agreement: Annotated[Optional[float], typer.Option(help="With --cascade: the band reaching this agreement with the labels (0..1) at the least escalation.", min=0.0, max=1.0)] = None,
    max_escalate: Annotated[Optional[float], typer.Option(help="With --cascade: the band with the best agreement escalating at most this share of the rows (0..1), e.g. 0.2.", min=0.0, max=1.0)] = None,
) -> None:
    """Choose the judge's decision settings on your labels from the cached replies (no judge call), by cross-validation."""
    wanted = options.pairs(labels, "--labels")
    known = [item["name"] for item in catalog.describe(load_config(config))]  # built-in, bundled and the config's own judges
    for metric in wanted:
        if metric not in known:  # named as calibrate takes it (it has no -m)
            raise ConfigError(f"--labels {metric}=...: unknown metric '{metric}'; use {', '.join(known)} or give the config that defines it (-c)")
    settings, _ = options.load(config, {"map": map, "labels": labels, "model": model, "api_base": api_base, "cache_dir": cache_dir,
                                "metric": list(wanted)}, set_)  # the metrics calibrated are those labelled
    if not output:
        raise RagjudgeError("calibrate needs -o: the config to write (YAML), or with --suggest the table of rows to label")
    if config and os.path.exists(output) and os.path.exists(config) and os.path.samefile(config, output):
        raise ConfigError(f"-o {output} is the config you scored with (-c): write the calibrated config to another file")
    if table != "-" and output != "-" and os.path.exists(output) and os.path.exists(table) and os.path.samefile(table, output):
        raise ConfigError(f"-o {output} is the table you calibrate; writing would replace it: give -o another name")
    if suggest is not None and folds is not None:
        raise ConfigError("--folds is for fitting settings; --suggest lists rows to label and folds nothing: give one of them")
    if suggest is None and not output.lower().endswith((".yaml", ".yml")):
        raise ConfigError(f"-o {output}: calibrate writes a YAML config; name it .yaml (with --suggest, -o is the table of rows to label)")
    if suggest is not None and output != "-":
        if os.path.splitext(output)[1].lower() not in SUFFIXES:  # calibrate has no --format: the suffix says it
            raise ConfigError(f"-o {output}: with --suggest, -o is the table of rows to label; name it "
                              f"{', '.join(sorted(SUFFIXES))} (or - for stdout); the config calibrate writes is without --suggest")
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ConfigError(f"-o {output}: the folder {folder} does not exist or cannot be written; choose another path")
    from ragjudge.io import read_table  # pandas

    frame = read_table(table)
    id_column = settings.columns.id or "id"
    if id_column in frame.columns and frame[id_column].duplicated().any():  # a repeated row would sit in both sides of a fold
        repeats = frame[id_column].duplicated()
        print(f"note: {int(repeats.sum())} row(s) repeat an earlier id in '{id_column}': each id is calibrated once (its first row)",
              file=sys.stderr)
        frame = frame[~repeats].reset_index(drop=True)
    check_labels(settings, frame.head(settings.chunk_size), table, list(wanted))  # as score checks them: a column, labels of the kind
    if suggest is not None:
        _suggest(frame, settings, wanted, suggest, output)
        return
    if cascade or target_agreement is not None or max_escalate is not None:
        _calibrate_cascade(frame, settings, wanted, target_agreement, max_escalate, folds, output, config,
                           options.overrides({"model": model, "api_base": api_base, "cache_dir": cache_dir})[0], set_, cascade)
        return
    fits, failed = [], []
    for metric, column in wanted.items():  # one metric that cannot be calibrated leaves the others to be
        try:
            fits.append(decisions.fit(frame, settings, metric, column, k=folds or decisions.FOLDS))
        except RagjudgeError as exc:
            if len(wanted) == 1:
                raise
            failed.append(exc)
            print(f"error: {exc}", file=sys.stderr)
    if not fits:
        raise failed[0]
    for found in fits:
        typer.echo(_fit_text(found))
    better = [found for found in fits if found.better]
    if not better:
        typer.echo("nothing written: " + ("no metric's labels could be fitted (see above)" if all(found.refused for found in fits) else
                                          "no metric's fitted settings beat the settings you scored with out of fold"))
        raise typer.Exit(1)
    where, _ = options.overrides({"model": model, "api_base": api_base, "cache_dir": cache_dir})  # the flag table's keys, nested
    _write_calibrated(output, config, better, where, set_)
    typer.echo(f"wrote {output} (score with -c {output})")


def _fit_text(found: Any) -> str:
    """A metric's calibration figures as lines for the terminal."""
    def share(value: float | None, interval: list[float] | None) -> str:
        return "-" if value is None else f"{value:.2f}" + ("" if not interval else f" [{interval[0]:.2f}, {interval[1]:.2f}]")

    lines = [f"{found.metric}: {found.n} labelled rows with a cached reply" + (f" (left out: {found.left_out()})" if found.missing else ""),
             f"  agreement with your labels, settings you scored with: {share(found.before, found.before_interval)}"]
    if found.refused is not None:
        return "\n".join([*lines, f"  not fitted: {found.refused}"])
    lines.append(f"  out of fold ({len(found.per_fold)} folds), settings fitted on the other folds: {share(found.after, found.after_interval)}")
    changes = found.changes
    def shown(value: Any) -> str:
        return "off" if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    lines.append("  chosen on every row: " + (", ".join(f"{key} {shown(found.start.get(key))} -> {shown(value)}" for key, value in changes.items())
                                               or "no change"))
    if found.held is not None and "threshold" in found.start:
        lines.append(f"  pass mark tried from {found.held[0]:g} to {found.held[1]:g} only: your labels pass at the judge's mark, and there "
                     f"they pass as at {found.start['threshold']:g}")
    if found.untried:
        lines.append(f"  not tried (no verdict moves with them on these rows): {', '.join(found.untried)}"
                     + ("; a chat judge's yes_threshold and fact_threshold need replies scored with one set (--set sufficiency.yes_threshold=0.5)"
                        if {"yes_threshold", "fact_threshold"} <= set(found.untried) else ""))  # the replies carry no probability at all
    if found.stability:
        lines.append(f"  stability: agreement with {found.moved} moved " + ", ".join(f"{delta}: {value:.2f}" for delta, value in found.stability.items())
                     + (f" ({', '.join(found.beyond)}: past what {found.moved} may hold, {found.span[0]:g} to {found.span[1]:g}; not measured)"
                        if found.beyond else ""))
    if not found.better:
        lines.append("  not written: no better than the settings you scored with out of fold")
    return "\n".join(lines)


def _write_calibrated(output: str, config: str | None, fits: list[Any], given: dict[str, Any], sets: list[str]) -> None:
    """The config the rows were scored with (the file ``config``, a bundled name resolved, then the
    judge flags ``given`` and each ``--set KEY=VALUE`` in ``sets``) with each fit's chosen
    settings, to ``output``: scoring with it alone finds the same cached replies."""
    import yaml

    document: dict[str, Any] = {}
    if config:
        with open(_config_path(config), encoding="utf-8") as handle:
            document = yaml.safe_load(handle) or {}
    for section, values in given.items():  # --model, --api-base, --cache-dir (options.overrides): where the replies are
        document.setdefault(section, {}).update(values)
    for assignment in options.set_assignments(sets):  # --set laid as the run laid it (options.lay: per-metric keys included)
        options.lay(document, {}, assignment)
    notes = []
    for found in fits:
        for key, value in found.changes.items():
            if key == "threshold":
                document.setdefault("thresholds", {})[found.metric] = value
            else:
                document.setdefault(found.metric, {})[key] = value
        notes.append(f"# {found.metric}: agreement with the labels out of fold {found.after:.2f} against {found.before:.2f} with the settings "
                     f"scored with ({found.n} labelled rows; ragjudge calibrate)")
    write_atomic(output, "\n".join(notes) + "\n" + yaml.safe_dump(document, sort_keys=False, allow_unicode=True))


def _calibrate_cascade(frame: Any, settings: Any, wanted: dict[str, str], target: float | None, budget: float | None, folds: int | None,
                       output: str, config: str | None, given: dict[str, Any], sets: list[str], asked: bool) -> None:
    """calibrate --cascade: the band fitted (``ragjudge.cascade_fit``), printed, and written as
    judge.cascade_band into the config at ``output`` (exit 1, nothing written, when the target
    cannot be met or the labels cannot be fitted: one class, ``cascade_fit.NotFitted``)."""
    import yaml


    if not asked:
        raise ConfigError("--target-agreement and --max-escalate fit a cascade's band: add --cascade")
    if len(wanted) > 1:
        raise ConfigError("--cascade fits one band, for one metric: give one --labels METRIC=COLUMN")
    metric, column = next(iter(wanted.items()))
    try:
        found = cascade_fit.band_of(frame, settings, metric, column, target=target, max_escalate=budget, folds=folds or decisions.FOLDS)
    except cascade_fit.NotFitted as refused:  # as calibrate refuses labels of one class: nothing written, exit 1
        for line in refused.lines():
            typer.echo(line)
        typer.echo("nothing written: the labels could not be fitted (see above)")
        raise typer.Exit(1) from None
    for line in cascade_fit.fit_lines(metric, found, target, budget):
        typer.echo(line)
    if not found.met:
        typer.echo("nothing written: the target cannot be met on these rows")
        raise typer.Exit(1)
    document: dict[str, Any] = {}
    if config:
        with open(_config_path(config), encoding="utf-8") as handle:
            document = yaml.safe_load(handle) or {}
    for section, values in given.items():
        document.setdefault(section, {}).update(values)
    for assignment in options.set_assignments(sets):
        options.lay(document, {}, assignment)
    document.setdefault("judge", {})["cascade_band"] = [float(found.band[0]), float(found.band[1])]
    note = (f"# {metric}: cascade band fitted on {found.n} labelled rows (ragjudge calibrate --cascade): out of fold agreement "
            f"{found.oof_agreement:.2f}, escalated {found.oof_escalated:.2f}")
    write_atomic(output, note + "\n" + yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    typer.echo(f"wrote {output} (score with -c {output})")


def _suggest(frame: Any, settings: Any, wanted: dict[str, str], count: int, output: str) -> None:
    metric, column = next(iter(wanted.items()))
    if len(wanted) > 1:
        raise RagjudgeError("--suggest ranks the rows of one metric: give one --labels METRIC=COLUMN")
    chosen, how = decisions.suggest(frame, settings, metric, column, count)
    if not chosen:  # an empty table to label helps no one: say why, as calibrate says why it writes no config
        typer.echo(f"nothing written: {metric}: {how}", err=True)
        raise typer.Exit(1)
    rows = frame.iloc[chosen].copy()
    if column not in rows.columns:
        rows[column] = None
    writer = TableWriter(output)
    writer.write(rows)
    writer.close()
    said = output == "-"  # the rows went to stdout: the words go to stderr
    typer.echo(f"wrote {output}: {len(chosen)} unlabelled row(s) of {metric} to label in column {column}, {how}", err=said)
    typer.echo("these rows are not a random sample: use their labels to calibrate, and keep the labels the corrected pass rate "
               "reads (--labels on score, report, compare) to a random sample of rows (docs/calibration.md)", err=said)


@app.command(epilog="""Examples:

  ragjudge report scored.parquet -o report.html

  ragjudge report scored.jsonl --by system --title "Nightly eval"

  ragjudge report scored.parquet --baseline main.scored.parquet

Exit codes: 0 the report written, whether its gate passed or failed (the verdict is in the report; ragjudge score and \
ragjudge compare exit by the gate), 2 bad input or usage (an unreadable table, a bad -c or --labels, an unwritable -o).""")
def report(
    scored: Annotated[str, typer.Argument(help="A table scored by `ragjudge score` (any format).")],
    output: Annotated[str, typer.Option("-o", "--output", help="The HTML file to write.")] = "report.html",
    by: Annotated[Optional[str], typer.Option(help="Break the pass rates down by this column (e.g. system).")] = None,
    baseline: Annotated[Optional[str], typer.Option(help="A table scored earlier: both runs side by side, regressed rows marked.")] = None,
    title: Annotated[Optional[str], typer.Option(help="The report's title.")] = None,
    config: Annotated[Optional[str], typer.Option("-c", "--config", help="YAML config of the run (thresholds, gate, column mapping, judges defined in it); default: what a Parquet table written by score records of its run, else the defaults.")] = None,
    map: Annotated[list[str], typer.Option("--map", help="FIELD=COLUMN, as for score.")] = [],
    labels: Annotated[list[str], typer.Option(help="METRIC=COLUMN: the column of your own labels for METRIC: its label-corrected pass rate with a 95% interval, as for score (docs/calibration.md); repeat for more.")] = [],
    set_: Annotated[list[str], typer.Option("--set", help="KEY=VALUE: set any config key, dotted, as for score.")] = [],
) -> None:
    """Write one self-contained HTML report of a scored table: the gate, charts, and every row's reasons."""
    from ragjudge.io import read_table  # pandas

    checks.check_outputs(scored, None, None, html=output, html_flag="-o")
    table = read_table(scored)
    record, notes = (None, []) if config else options.table_record(scored, bool(set_))  # the run's own settings, where recorded
    held = compare.metrics_of(table)
    if record is not None and isinstance(record.get("judged"), list):  # a table scored again keeps an earlier run's columns
        held = [metric for metric in held if metric in record["judged"]] or held
    settings, _ = options.load(config, {"map": map, "labels": labels}, set_, held=held,  # bounds on its metrics
                               recorded=None if record is None else (scored, record))
    check_labels(settings, table.head(settings.chunk_size), scored, held)  # as score checks them
    said: list[str] = list(notes)
    regression = record.get("regression") if record is not None and isinstance(record.get("regression"), dict) else None
    if baseline and record is not None and not regression:
        said.append("note: the run gated no regressions (--max-regressions, --max-drop): the report marks the regressed rows and "
                    "gates none; ragjudge compare applies them")
    text = from_table(table, settings, source=scored, by=by, baseline=read_table(baseline) if baseline else None, title=title, said=said,
                      metrics=held, regression=regression if baseline else None)
    for line in said:
        typer.echo(line, err=True)
    write(output, text)
    typer.echo(f"wrote {output}")


@app.command(epilog="""Examples:

  ragjudge judges

  ragjudge judges -c my.yaml   (with the judges defined in my.yaml)

  ragjudge judges --json""")
def judges(
    config: Annotated[Optional[str], typer.Option("-c", "--config", help="YAML config whose judges: to list too (or a bundled one).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the metrics: built-in, bundled and defined in the config, with what each needs, its kind and threshold."""
    found = catalog.describe(load_config(config))
    if json_output:
        typer.echo(json.dumps(found, indent=2))
        return
    for item in found:
        low, high = item["scale"]
        kind = "yes/no" if item["kind"] == "binary" else f"{low:g}..{high:g}"
        typer.echo(f"{item['name']} ({item['source']}{', default' if item['default'] else ''}): {kind}, pass at >= {item['threshold']:g}; "
                   f"needs {', '.join(item['needs']) or 'nothing'}; prompt {item['version']}\n  {item['description']}")


@app.command(epilog="""Examples:

  ragjudge render data.jsonl -m sufficiency --row 3

  ragjudge render data.csv -m groundedness --row 1 --map context=docs

  ragjudge render data.jsonl -m politeness --row 2 -c my.yaml   (a judge defined in my.yaml)""")
def render(
    input: Annotated[str, typer.Argument(help="Evaluation table: .jsonl, .csv, .parquet, .json, or - for stdin.")],
    metric: Annotated[str, typer.Option("-m", "--metric", help="The metric whose prompt to show (built-in, bundled or defined in the config).")],
    row: Annotated[int, typer.Option(help="The row to render, counted from 1.")] = 1,
    config: Annotated[Optional[str], typer.Option("-c", "--config", help="YAML config (or a bundled one); flags override it.")] = None,
    model: Annotated[Optional[str], typer.Option(help="Judge model (its prompt order depends on it).")] = None,
    map: Annotated[list[str], typer.Option("--map", help="FIELD=COLUMN, as for score.")] = [],
    input_format: Annotated[Optional[str], typer.Option(help="Format of INPUT, overriding its suffix.")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="KEY=VALUE: set any config key, dotted, as for score.")] = [],
) -> None:
    """Print the exact messages a judge would receive for one row, with no call made."""
    settings, mapped = options.load(config, {"metric": [metric], "map": map, "model": model}, set_)
    typer.echo(catalog.render(input, settings, metric, row, mapped, input_format), nl=False)


def _cache_folder(cache_dir: str | None) -> Any:
    """``--cache-dir`` as a Path, the per-user cache folder when not given. A blank value or
    a file is a usage error; the folder may not exist (the cache commands never create it)."""
    if cache_dir is None:
        return default_cache_dir()
    if not cache_dir.strip():
        raise RagjudgeError("--cache-dir is empty; give a folder, or leave the option out for the per-user cache folder")
    folder = Path(cache_dir)
    if folder.exists() and not folder.is_dir():
        raise RagjudgeError(f"--cache-dir {folder} is a file, not a folder")
    return folder


@config_app.command("show", epilog="""Examples:

  ragjudge config show > my.yaml   (every key with its default, to edit)

  ragjudge config show local""")
def config_show(name: Annotated[str, typer.Argument(help="default (every key with its default), local (the embedded judge) or mlflow (MLflow-shaped records).")] = "default") -> None:
    """Print a bundled config as YAML, to read or to save and edit (ragjudge config show > my.yaml)."""
    typer.echo(bundled_config(name).read_text(encoding="utf-8"), nl=False)


@batch_app.command("collect", epilog="""Examples:

  ragjudge batch collect scored.parquet.batch/manifest.json

  ragjudge batch collect scored.parquet.batch --batch-wait""")
def batch_collect(
    manifest: Annotated[str, typer.Argument(help="The manifest.json a `score --batch` run printed (or its batch folder).")],
    batch_wait: Annotated[bool, typer.Option("--batch-wait", help="Wait for the batches (a progress bar), then finish the run.")] = False,
    batch_resubmit: Annotated[bool, typer.Option("--batch-resubmit", help="Submit again the calls of a batch whose create got no answer even where the provider's listing cannot rule out that it was made (the risk: billed twice).")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Only errors and a failing gate's lines.")] = False,
) -> None:
    """Collect the batches of a `score --batch` run and finish it, with the run's own request and
    config as the manifest records them: exit 4 while its batches run, else the run's exit code."""
    request, config = recorded_request(manifest, batch_wait, batch_resubmit)
    console = make_console()
    progress = None if quiet else _progress(console)
    _collect_less()
    try:
        outcome = run(request, config, on_event=_listener(console, progress, quiet, None))
    finally:
        if progress:
            progress.stop()
    raise typer.Exit(_show(console, outcome, quiet))


@cache_app.command("info", epilog="""Examples:

  ragjudge cache info

  ragjudge cache info --cache-dir .ragjudge-cache""")
def cache_info(cache_dir: Annotated[Optional[str], typer.Option(help="Cache folder (default: the per-user cache folder).")] = None) -> None:
    """Show the cache's location, number of entries and size on disk, and the embedded judge's model file kept there."""
    folder = _cache_folder(cache_dir)
    if not cache_exists(folder):  # looking must not create it (nor its responses folder)
        typer.echo(f"location: {folder} ({'no reply cached yet' if folder.is_dir() else 'does not exist yet'})\nentries: 0\nsize: 0.0 MiB (0 bytes)")
        models = folder / "models"
        for path in sorted(models.glob("*.gguf")) if models.is_dir() else []:
            typer.echo(f"embedded judge model: {path} ({path.stat().st_size / 2**20:.1f} MiB; cache clear keeps it, delete the file to remove it)")
        return
    cache = ResponseCache(folder)
    info = cache.info()
    cache.close()
    typer.echo(f"location: {info['directory']}\nentries: {info['entries']}\nsize: {info['size_bytes'] / 2**20:.1f} MiB ({info['size_bytes']} bytes)")
    for path, size in info["models"]:  # the embedded judge's weights live beside the replies
        typer.echo(f"embedded judge model: {path} ({size / 2**20:.1f} MiB; cache clear keeps it, delete the file to remove it)")


@cache_app.command("clear", epilog="""Examples:

  ragjudge cache clear

  ragjudge cache clear --cache-dir .ragjudge-cache""")
def cache_clear(cache_dir: Annotated[Optional[str], typer.Option(help="Cache folder (default: the per-user cache folder).")] = None) -> None:
    """Remove every cached judge reply (the embedded judge's model file stays)."""
    folder = _cache_folder(cache_dir)
    if not cache_exists(folder):
        typer.echo(f"removed 0 entries from {folder} (it holds no response cache)")
        return
    cache = ResponseCache(folder)
    removed = cache.clear()
    cache.close()
    typer.echo(f"removed {removed} entries from {cache.directory}")


def _exit(code: int) -> None:
    """``sys.exit``, except while an embedded-judge call still runs in its native thread
    (an interrupted run): interpreter shutdown under a running llama.cpp call can crash
    (SIGSEGV), so flush and leave at once. Every output was written and closed before."""
    local = sys.modules.get("ragjudge.local")
    if local is not None and local.busy():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def console() -> None:
    """The ``ragjudge`` command and ``python -m ragjudge``: ``main``, then the process ends as soon
    as its work is done. The interpreter's own shutdown (freeing every module and object: about
    0.08 s after a 10,000-row run on a 2-core machine) is skipped, once the atexit handlers have run
    and stdout and stderr are flushed, where the command is the process's own program (not run by a
    profiler, ``runpy`` from other code, or ``python -i``) and no thread but daemons is left; else
    it exits as Python does. ``main`` itself, called from Python, raises ``SystemExit`` as before."""
    outermost = _outermost(sys._getframe(1))
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if not (outermost and _leave_at_once()):
        sys.exit(code)  # Python's own exit, with the same code
    if not isinstance(code, int):  # as Python's exit: None is 0, anything else is printed and 1
        if code is not None and sys.stderr is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None:
        sys.exit(code)
    run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # closed when the process started (``>&-``): Python has nothing to flush either
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stderr:  # full (2>/dev/full): its text cannot be written, and the exit code says how the run went
                continue
            sys.exit(code)  # stdout, a closed pipe: Python's own exit handles and reports it
    os._exit(code)


def _outermost(frame: Any) -> bool:
    """Whether ``frame`` (``console``'s caller) and every frame above it are the process's own way
    in: the console script, ``python -m`` (runpy) or ragjudge itself; a profiler, a debugger, a test
    or a program running ragjudge with ``runpy`` is not, and gets Python's exit back."""
    if sys.flags.interactive:
        return False
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    here = os.path.dirname(os.path.abspath(__file__))
    while frame is not None:
        name = frame.f_code.co_filename
        if name != "<frozen runpy>" and os.path.basename(name) != "runpy.py":
            absolute = os.path.abspath(name)
            if absolute != script and not absolute.startswith(here + os.sep):
                return False
        frame = frame.f_back
    return True


def _leave_at_once() -> bool:
    """Whether ``console`` may end the process without the interpreter's shutdown: only daemon
    threads besides this one (a thread of the user's would be joined by it)."""
    return all(thread.daemon or thread is threading.current_thread() for thread in threading.enumerate())


# an option users try for one of ours, by what it does rather than how it is spelt (click's own
# "did you mean" goes by spelling: --report got --format): the first of ours the command has
MEANT_OPTIONS = {"--report": ("--html", "--output"), "--html-report": ("--html", "--output"), "--html": ("--output",),
                 "--report-html": ("--html", "--output")}


def _meant_option(exc: Exception) -> None:
    """Point click's "no such option" error ``exc`` at the option meant (``MEANT_OPTIONS``) where
    the command has one; any other error is left as it is."""
    # Typer's own copy of click raises it (typer._click): known by its name and attributes
    if type(exc).__name__ != "NoSuchOption" or getattr(exc, "ctx", None) is None or getattr(exc, "option_name", None) not in MEANT_OPTIONS:
        return
    have = {name for param in exc.ctx.command.params for name in getattr(param, "opts", [])}
    meant = [name for name in MEANT_OPTIONS[exc.option_name] if name in have][:1]
    if meant:
        exc.possibilities = meant  # type: ignore[attr-defined]


def main() -> None:
    """Console entry point: run the app, map ``RagjudgeError`` to one line and its exit code."""
    _SAID.clear()  # what an earlier call in this process said is not this one's
    try:
        code = app(standalone_mode=False)
    except RagjudgeError as exc:
        if os.environ.get("RAGJUDGE_DEBUG"):
            raise
        if isinstance(exc, options.OptionError):  # an option refused below a request (ragjudge report's): named as flags
            exc.named(options.CLI)
        _say(f"error: {exc}")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        _exit(exc.exit_code)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # usage errors from Typer's click and the like
        _meant_option(exc)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            try:
                if sys.stderr is not None:  # click would write to stdout instead
                    exc.show()
            except (OSError, ValueError, AttributeError):  # stderr full or gone: the exit code still says it
                pass
            sys.exit(EXIT_USAGE)
        if type(exc).__name__ == "Abort":
            _say("aborted")
            sys.exit(130)
        if os.environ.get("RAGJUDGE_DEBUG"):
            raise
        _say(f"error: unexpected {type(exc).__name__}: {redact(str(exc))} (set RAGJUDGE_DEBUG=1 for the traceback)")
        sys.exit(EXIT_USAGE)
    if code == 130 and not _SAID.get("interrupted"):  # a Ctrl-C outside judging (the score command says its own line)
        _say("interrupted: nothing more was written (a Ctrl-C while judging still writes every row)")
    _exit(code if isinstance(code, int) else 0)

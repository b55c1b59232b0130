"""The commands around ``score``: ``agreement`` and ``compare`` (a scored table against labels
or an earlier run), ``report`` (the HTML report), ``judges`` and ``render`` (the metrics and
their prompts), ``config show``, ``batch collect`` and ``cache info``/``cache clear``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragjudge import agreement, catalog, compare, options
from ragjudge.cache import ResponseCache, cache_exists, default_cache_dir
from ragjudge.cli.app import app, batch_app, cache_app, config_app
from ragjudge.cli.score import _collect_less, _listener, _progress, _show
from ragjudge.config import bundled_config
from ragjudge.counting import check_labels, levels_of_config
from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.gate import exit_code
from ragjudge.io import read_record
from ragjudge.reports.gate_text import lines as gate_lines, verdict_line
from ragjudge.reports.html import from_table, write
from ragjudge.reports.terminal import make_console
from ragjudge.run import checks, recorded_request, run
from ragjudge.settings import load_config


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

    if correction is not None:  # a bad value first: exit 2, before any note on the flags
        compare.check_correction(correction)
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

"""``ragjudge calibrate``: the judge's decision settings fitted on your labels from the cached
replies (``ragjudge.calibrate``), a cascade's band (``--cascade``, ``ragjudge.cascade_fit``) or
the rows to label next (``--suggest``), written as a config or a table."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, Optional

import typer

from ragjudge import calibrate as decisions  # the module of `ragjudge calibrate`, beside the command of that name below
from ragjudge import cascade_fit, catalog, options
from ragjudge.cli.app import app
from ragjudge.config import _config_path
from ragjudge.counting import check_labels
from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.io import TableWriter, write_atomic
from ragjudge.io.formats import SUFFIXES
from ragjudge.settings import load_config


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

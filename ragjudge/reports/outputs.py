"""What a finished ``ragjudge score`` run writes besides the scored table: the comparison with a
baseline and its regression gates, the summary JSON, JUnit XML, the Markdown summary (and
GitHub's job summary), and GitHub annotations. The command line calls ``finish`` once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragjudge.gate import GateResult, with_regressions
from ragjudge.reports.summary import summary_dict, write_summary_json
from ragjudge.counting import id_column, levels_of_config
from ragjudge.reports import annotations as github_annotations
from ragjudge.reports import html, junit, markdown
from ragjudge.reports.gate_text import lines as gate_lines
from ragjudge.compare import SCORE_HINT, checks as regression_checks, compare, markdown_view, render
from ragjudge.catalog import describe
from ragjudge.io import detect_format


@dataclass
class Wanted:
    """The outputs asked for: paths (None: not written) and the baseline's gates."""

    source: str | None  # the input as reports name it (a path, "DataFrame"); None for stdin
    input_format: str | None = None
    output: str | None = None
    summary_json: str | None = None
    junit: str | None = None
    markdown: str | None = None
    html: str | None = None
    step_summary: bool = True
    baseline: str | None = None
    max_regressions: int | None = None
    max_drop: float | None = None
    alpha: float | None = None  # --alpha: a drop past max_drop fails only when significant at it


@dataclass
class Finished:
    """The run's final ``gate`` (the regression gates joined), the ``comparison`` with the
    baseline (None without one), the lines to print about it, the GitHub ``annotations`` to
    print, and where the job summary was appended."""

    gate: GateResult
    comparison: dict[str, Any] | None = None
    comparison_lines: list[str] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    step_summary: str | None = None


def finish(result: Any, config: Any, wanted: Wanted, seconds: float) -> Finished:
    """Compare with the baseline, apply its gates, and write every output asked for.
    Raises ``InputError`` for a baseline that cannot be compared (exit 2)."""
    gate = result.gate
    comparison = None
    lines: list[str] = []
    ids = id_column(result.mapping)  # rows are named by the mapped id in every output
    units = levels_of_config(config, list(result.summary.metrics))  # and counted once per trace where a metric judges traces
    if wanted.baseline:
        from ragjudge.io import read_table

        scales = {item["name"]: item["kind"] == "scale" for item in describe(config)}
        comparison = compare(read_table(wanted.baseline), result.table, metrics=list(result.summary.metrics), scales=scales,
                             hint=SCORE_HINT, names=(f"--baseline {wanted.baseline}", "the scored table"), id_column=ids, levels=units,
                             id_required=config.columns.id is not None, config=config, alpha=wanted.alpha)
        checks = regression_checks(comparison, wanted.max_regressions, wanted.max_drop, wanted.alpha)
        gate = with_regressions(gate, checks)
        lines = render(comparison, []).splitlines()
        comparison = {**comparison, "baseline": wanted.baseline, "gate_lines": gate_lines(checks)}
    document = summary_dict(result.summary, gate, result.mapping.describe() if result.mapping else None)
    document.update(getattr(result, "sinks", None) or {})  # e.g. "mlflow": the feedback logged after the run
    if comparison is not None:
        document["comparison"] = comparison
    if wanted.summary_json:
        write_summary_json(wanted.summary_json, document)
    if wanted.junit:
        junit.write(wanted.junit, result.table, result.summary, seconds, comparison, id_column=ids, levels=units, gate=gate)
    text = None
    if wanted.markdown or (wanted.step_summary and markdown.step_summary_path()):
        view = markdown_view(comparison, wanted.baseline or "", comparison["gate_lines"]) if comparison else None
        text = markdown.render(result.summary, gate, wanted.source, view)
    if wanted.markdown and text is not None:
        markdown.write(wanted.markdown, text)
    appended = markdown.append_step_summary(text) if wanted.step_summary and text is not None else None
    if wanted.html:
        from ragjudge.io import read_table

        base = read_table(wanted.baseline) if wanted.baseline else None
        html.write(wanted.html, html.from_table(result.table, config, source=wanted.source, baseline=base,
                                                summary=result.summary, gate=gate, mapping=result.mapping))
    commands = []
    if github_annotations.wanted() and not gate.passed:
        fmt = None if wanted.source is None else detect_format(wanted.source, wanted.input_format)
        commands = github_annotations.commands(result.summary, wanted.source, fmt)
    return Finished(gate, comparison, lines, commands, appended)

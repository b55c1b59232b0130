"""The run on the terminal: the summary table, the usage line, the gate's lines and, when the
gate fails, the failing rows."""

from __future__ import annotations

from ragjudge.pairwise import figures as pairwise_figures, line as pairwise_line
from ragjudge.types import count_of, score_against

import re

from typing import Any

from ragjudge.gate import GateResult, Kind, Summary
from ragjudge.audit import lines as audit_lines
from ragjudge.reports.gate_text import marked
from ragjudge.http_errors import redact
from ragjudge.io.atomic import to_file, to_stdout


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """The summary table's header and rows (one per metric), as text."""
    header = ["metric", "ok", "error", "skipped", "pass rate", "mean score", "threshold", "cached"]
    rows = [[name, str(m.ok), str(m.error), str(m.skipped), _fmt(m.pass_rate), _fmt(m.mean_score), f"{m.threshold:g}", str(m.cached)]
            for name, m in summary.metrics.items()]
    return header, rows


# dropped first when the terminal is too narrow for every column; counts are never cut
_DROPPABLE = ("cached", "threshold", "mean score")


def print_summary(console: Any, summary: Summary, gate: GateResult) -> None:
    """A per-metric table, the usage line and the gate's verdict lines, on ``console``. On a
    narrow terminal, columns are dropped (cached, then threshold, then mean score) rather than
    any number cut; the metric's name wraps last."""
    from rich.table import Table

    header, rows = summary_rows(summary)
    keep = list(range(len(header)))

    def width(columns: list[int]) -> int:  # rich's box: 3 characters per column, plus 1
        return sum(max(len(header[i]), *(len(row[i]) for row in rows)) if rows else len(header[i]) for i in columns) + 3 * len(columns) + 1

    for name in _DROPPABLE:
        if width(keep) <= console.width:
            break
        keep.remove(header.index(name))
    table = Table()
    for i in keep:
        if header[i] == "metric":
            table.add_column(header[i], justify="left", overflow="fold", min_width=6)
        else:
            cells = [row[i] for row in rows]
            table.add_column(header[i], justify="right", no_wrap=True, min_width=max(len(header[i]) if i > 3 else 1, *(len(c) for c in cells)))
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    # the title as its own line: rich pads a table's title to the table's width (trailing spaces in a log)
    left = max((m.unsampled for m in summary.metrics.values()), default=0)  # --limit / --sample: not in the table's counts
    chosen = (f" ({summary.rows - left} chosen by --limit / --sample; the other {left} are in the output as skipped, 'not sampled', "
              "and in no count below)") if left else ""
    console.print(f"ragjudge: {count_of(summary.rows)}{chosen}, judge {summary.judge_model}", highlight=False, markup=False, soft_wrap=True)
    console.print(table)
    text = diagnosis_line(summary)
    if text:
        console.print(text, highlight=False, markup=False, soft_wrap=True)
    for text in [*corrected_lines(summary), *panel_lines(summary), *prefix_lines(summary), *probability_lines(summary),
                 *(audit_lines(summary.audit) if summary.audit is not None else [])]:
        console.print(text, highlight=False, markup=False, soft_wrap=True)
    usage = summary.usage
    cost = usage.cost_usd
    cost_text = "unknown (no price for this model)" if cost is None else f"${cost:.4f}"
    retries = f" ({usage.retries} retries)" if usage.retries else ""
    estimated = " (estimated: a reply reported no usage)" if usage.estimated else ""
    console.print(f"provider calls: {summary.provider_calls}{retries}, tokens: {usage.prompt_tokens} in / {usage.completion_tokens} out"
                  f"{estimated}, cost: {cost_text}", soft_wrap=True)
    for passed, line in marked(gate):
        style = None if passed is None else ("green" if passed else "red")
        console.print(line, style=style, highlight=False, markup=False, soft_wrap=True)


def probability_lines(summary: Summary) -> list[str]:
    """Per metric whose judge gave probabilities (``Verdict.probability``), one line: their mean
    over the ok rows with one and, with labels, the Brier score and the calibration curve's bins
    (``ragjudge.corrected_rates.ProbabilityStats``), e.g. ``sufficiency: mean P(yes) 0.71 over 40 rows;
    against 'human' (40 labelled): Brier 0.180, 0.0-0.1: P 0.05, observed 0.00 of 4, ...`` (each bin:
    its mean P, the share labelled yes, of its rows)."""
    out = []
    for name, metric in summary.metrics.items():
        stats = metric.probability
        if not stats.n:
            continue
        what = "P(yes)" if metric.binary else "P(pass)"
        line = f"{name}: mean {what} {stats.mean:.2f} over {count_of(stats.n, 'ok row')}"
        if stats.labelled:
            bins = ", ".join(f"{b['low']:.1f}-{b['high']:.1f}: P {b['mean_probability']:.2f}, observed {b['observed']:.2f} of {b['rows']}"
                             for b in stats.curve())
            line += f"; against '{metric.label_column}' ({stats.labelled} labelled): Brier {stats.brier / stats.labelled:.3f}, {bins}"
        out.append(line)
    return out


def corrected_lines(summary: Summary) -> list[str]:
    """Per metric with a labels column (config ``labels:``), its label-corrected pass rate (and
    mean score on a scale) with the 95% interval, beside the judge's own and the labels'
    (``ragjudge.corrected_rates``), e.g. ``sufficiency: corrected pass rate 0.60 [0.51, 0.68] from
    100 labelled rows ('human'); the judge's 0.69, agreement 0.78; the labels alone [0.50, 0.70]``."""
    out = []
    for name, metric in summary.metrics.items():
        corrected = metric.corrected()
        if corrected is None:
            continue
        rate = corrected["pass_rate"]
        agreement = "" if rate.agreement is None else f", agreement {rate.agreement:.2f}"
        judge = "-" if rate.judge is None else f"{rate.judge:.2f}"
        unreadable = ""
        if rate.unreadable:
            what = "yes/no label" if metric.binary else (f"{metric.label_scale[0]:g}..{metric.label_scale[1]:g} rating" if metric.label_scale else "rating")
            unreadable = f"; {rate.unreadable} cell(s) of '{metric.label_column}' hold no {what}, left out"
        if rate.on_errors or rate.on_skipped:
            unreadable += (f"; {rate.on_errors + rate.on_skipped} labelled row(s) without an ok verdict left out ("
                           + ", ".join(f"{count} {what}" for count, what in ((rate.on_errors, "error"), (rate.on_skipped, "skipped")) if count) + ")")
        if rate.low is None:
            out.append(f"{name}: {count_of(rate.labelled, 'labelled ok row')} in '{metric.label_column}': {rate.needed} more give a corrected pass "
                       f"rate (the judge's {judge}{agreement}){unreadable}")
            continue
        labels = rate.labels_interval
        score = corrected.get("mean_score")
        mean = (f"; mean score {score.estimate:.2f} [{score.low:.2f}, {score.high:.2f}] (the judge's {score.judge:.2f})"
                if score is not None and score.low is not None else "")
        out.append(f"{name}: corrected pass rate {rate.estimate:.2f} [{rate.low:.2f}, {rate.high:.2f}] from {rate.labelled} labelled rows "
                   f"('{metric.label_column}'); the judge's {judge}{agreement}; the labels alone [{labels[0]:.2f}, {labels[1]:.2f}]{mean}{unreadable}")
    return out


def panel_lines(summary: Summary) -> list[str]:
    """Per metric judged by a panel of judges (``judge.panel``), each member's pass rate, counts,
    cost and most common failure, then the members' pairwise agreement and Fleiss' kappa
    (``ragjudge.panel.PanelCounts.lines``); with a cascade (``judge.cascade``), per stage the rows
    judged and decided, calls and cost, the escalated fraction and the agreement on the escalated
    rows (``ragjudge.cascade.CascadeCounts.lines``); none without either."""
    return [*(line for name, m in summary.metrics.items() if m.cascade is not None for line in m.cascade.lines(name)),
            *(line for name, m in summary.metrics.items() if m.panel is not None for line in m.panel.lines(name))]


def prefix_lines(summary: Summary) -> list[str]:
    """Per metric that counts prefixes (``sufficient_k``), the distribution of the smallest
    sufficient k, the tokens a top-k of the size that makes 90% of rows sufficient would save,
    and the rows never sufficient (``ragjudge.prefixes.PrefixCounts.lines``); per pairwise metric, B's
    win rate with its interval, the outcomes and the position inconsistency, and with labels their
    agreement and the corrected win rate (``ragjudge.pairwise.line``); none otherwise."""
    return [*(line for name, m in summary.metrics.items() if m.prefixes is not None for line in m.prefixes.lines(name)),
            *(pairwise_line(name, pairwise_figures(m)) for name, m in summary.metrics.items() if m.pairwise is not None)]


def diagnosis_line(summary: Summary) -> str | None:
    """The line under the table: rows per diagnosis with their share, e.g. ``diagnosis (8 rows
    with both verdicts ok): ok 3 (0.38), generation 1 (0.12), retrieval 2 (0.25),
    beyond_context 2 (0.25)``; None when the run did not judge both metrics."""
    if summary.diagnosis is None:
        return None
    if not summary.diagnosed:
        return "diagnosis: no row has both a sufficiency and a completeness verdict ok (a row needs a context, a response and a ground truth)"
    shares = summary.diagnosis_shares()
    cells = ", ".join(f"{name} {count}" + ("" if shares[name] is None else f" ({shares[name]:.2f})") for name, count in summary.diagnosis.items())
    return f"diagnosis ({count_of(summary.diagnosed)} with both verdicts ok): {cells}"


def _one_line(text: str | None, width: int = 100) -> str:
    """``text`` on one line (whitespace and control characters collapsed: a row's id or
    rationale cannot start a line of its own, e.g. a GitHub workflow command), API keys
    redacted, at most ``width`` characters."""
    line = " ".join(re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", " ", redact(str(text or ""))).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _add_worst(shown: list[str], metrics: dict[str, Any], most: int) -> int:
    """Append the lowest-scored failing rows of ``metrics`` to ``shown`` while it has fewer than
    ``most`` lines; returns how many were added."""
    added = 0
    for name, m in metrics.items():
        for row in [] if m.measured else m.worst:  # a measurement's "no" rows are no failing rows
            if len(shown) < most:
                shown.append(f"  {name} {_one_line(row['id'])}: score {score_against(row['score'], m.threshold)}: {_one_line(row['rationale']) or '(no rationale)'}")
                added += 1
    return added


def failing_lines(summary: Summary, output: str | None = None, summary_json: str | None = None, most: int = 5, gate: Any = None,
                  comparison: dict[str, Any] | None = None) -> list[str]:
    """The lines that name a failing gate's rows: at most ``most`` failing rows (lowest score
    first: metric, id, score and a one-line rationale), then error rows, then how many more
    there are and where the full list is. Empty when no row failed or erred. With ``gate`` (a
    ``GateResult``), only the rows of the metrics whose checks failed: for a metric whose only
    failed checks are against the baseline (regressions, pass-rate drop), its regressed rows
    (from ``comparison``); a failed check of the whole run (or of a diagnosis share) lists every
    metric's rows."""
    metrics = dict(summary.metrics)
    regressed: dict[str, list[str]] = {}
    if gate is not None:
        failed = [c for c in gate.checks if c.failed]
        if failed and all(c.metric in metrics for c in failed):
            own = {c.metric for c in failed if c.check not in (Kind.REGRESSIONS, Kind.PASS_RATE_DROP)}
            against = {c.metric for c in failed if c.metric not in own}
            metrics = {name: m for name, m in metrics.items() if name in own}
            for name in against:
                figures = ((comparison or {}).get("metrics") or {}).get(name) or {}
                regressed[name] = [str(i) for i in figures.get("regressed_ids", [])]
                regressed[name] += [""] * (int(figures.get("regressed", 0)) - len(regressed[name]))  # counted, not listed
    shown: list[str] = []
    total = sum((0 if m.measured else m.failed) + m.error - m.interrupted for name, m in metrics.items()) + sum(len(ids) for ids in regressed.values())
    if not total:
        return []
    # the rows that made the gate fail come first: error rows where an error-rate check failed and no pass-rate check did
    # (a new user's find: the one input-error row that failed the gate was "and 1 more" under five low-scored rows)
    kinds = {c.check for c in gate.checks if c.failed} if gate is not None else set()
    errors_first = Kind.ERROR_RATE in kinds and not kinds & {Kind.PASS_RATE, Kind.CORRECTED_PASS_RATE}
    covered = 0  # rows the lines shown name
    if not errors_first:
        covered = _add_worst(shown, metrics, most)
    # an error's reason once, with the rows it hit in each metric (not a line per row that says only "error"); the rows
    # a fatal error left unjudged ("not run: REASON") count with the one that met it
    reasons: dict[str, dict[str, int]] = {}
    for name, m in metrics.items():
        for reason, count in m.errors_by.items():
            if reason != "interrupted":
                hit = reasons.setdefault(reason.removeprefix("not run: "), {})
                hit[name] = hit.get(name, 0) + count
    for reason, hit in sorted(reasons.items(), key=lambda item: -sum(item[1].values())):
        if len(shown) < most:
            count = sum(hit.values())
            where = ", ".join(f"{name} {n}" for name, n in hit.items()) if len(hit) > 1 else next(iter(hit))
            shown.append(f"  {count} row(s) ({where}): error: {_one_line(reason, 300)}")
            covered += count
    if errors_first:
        covered += _add_worst(shown, metrics, most)
    for name, ids in regressed.items():
        for ident in ids:
            if ident and len(shown) < most:
                shown.append(f"  {name} {_one_line(ident)}: regressed (passed in the baseline, fails now)")
                covered += 1
    lines = [f"failing rows ({covered} of {total}):", *shown]
    if total > covered:
        where = []
        if output:
            names = [name for name, m in metrics.items() if (m.failed and not m.measured) or m.error] + list(regressed)
            columns = " or ".join(f"{name}_passed is false" for name in names)
            where.append(f"the rows where {columns} (or the status is error) in {'the table on stdout' if to_stdout(output) else output}")
        if to_file(summary_json):
            where.append(f"their ids in {summary_json} (failed_rows, error_rows)")
        lines.append(f"  and {total - covered} more" + (f": {'; '.join(where)}" if where else " (write the scored table with -o to see every row)"))
    return lines

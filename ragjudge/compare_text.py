"""A comparison of two runs (``ragjudge.compare``'s report) in words: the terminal's text
(``render``), each metric's change and slices as lines (``change_lines``, ``slice_lines``: the
HTML report's), the label-corrected and diagnosis lines, and what the Markdown summary (and the
Action's pull request comment) shows (``markdown_view``). Nothing here computes a figure.
"""

from __future__ import annotations

from typing import Any

from ragjudge.significance import ALPHA
from ragjudge.types import count_of


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _change(value: float | None) -> str:
    """A pass rate's change, signed: two decimals, or two significant digits where two decimals
    would round a change to zero (one regression in 300 rows is -0.0033, not "-0.00" or
    "+0.00"); no change is +0.00."""
    if value is None:
        return "-"
    if value and round(value, 2) == 0:
        return f"{value:+.2g}"
    return f"{round(value, 2) + 0.0:+.2f}"  # + 0.0: a rounded -0.0 is 0.0


def _p(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3g}" if value >= 0.001 else "<0.001")


def render(report: dict[str, Any], lines: list[str] | None = None) -> str:
    """The comparison as text for a terminal."""
    out = [f"{count_of(report['rows'])} matched by {report['matched_by']}; only in the baseline: {report['only_in_baseline']['count']}, "
           f"only in the current table: {report['only_in_current']['count']}"]
    out += [f"warning: {w}" for w in report["warnings"]]
    for metric, m in report["metrics"].items():
        change = _change(m["change"])
        unjudged = f" ({m['unjudged']} of them not judged now)" if m.get("unjudged") else ""
        text = (f"{metric}: pass rate {_rate(m['baseline_pass_rate'])} -> {_rate(m['pass_rate'])} ({change}{_interval(m.get('change_interval'), True)}) "
                f"on {count_of(m['pairs'])} ok in both; {m['regressed']} regressed{unjudged}, {m['improved']} improved (McNemar p {_p(m['mcnemar_p'])})")
        if "wilcoxon_p" in m:
            text += (f"; mean score {_rate(m['baseline_mean_score'])} -> {_rate(m['mean_score'])} "
                     f"({_change(m.get('mean_score_change'))}{_interval(m.get('mean_score_interval'), True)}, Wilcoxon p {_p(m['wilcoxon_p'])})")
        out.append(text)
        out += corrected_lines(m.get("corrected"))
        if m["regressed_ids"]:
            out.append(f"  regressed: {', '.join(m['regressed_ids'])}" + (" ..." if m["regressed"] > len(m["regressed_ids"]) else ""))
        if m.get("unjudged"):
            out.append(f"  of them passed in the baseline and not judged now (error or skipped; the gates count them as failing): "
                       f"{', '.join(m['unjudged_ids'])}" + (" ..." if m["unjudged"] > len(m["unjudged_ids"]) else ""))
        if m.get("improved_ids"):
            out.append(f"  improved: {', '.join(m['improved_ids'])}" + (" ..." if m["improved"] > len(m["improved_ids"]) else ""))
        if m["status_changed"]:
            out.append(f"  status changed (ok / error / skipped): {m['status_changed']} row(s)")
        out += slice_lines(report, m)
    out += diagnosis_lines(report)
    out += lines or []
    return "\n".join(out)


def change_lines(report: dict[str, Any]) -> list[str]:
    """Each metric's change against the baseline as one line (pass rate and, on a scale, mean
    score, each change with its 95% paired bootstrap interval and its p-value), then its slices
    (``slice_lines``): what the HTML report lists."""
    out = []
    for metric, m in report["metrics"].items():
        text = (f"{metric} against the baseline: pass rate {_rate(m['baseline_pass_rate'])} -> {_rate(m['pass_rate'])}, change "
                f"{_change(m['change'])}{_interval(m.get('change_interval'), True)} (95%) on {count_of(m['pairs'])} ok in both, McNemar p {_p(m['mcnemar_p'])}")
        if "wilcoxon_p" in m:
            text += (f"; mean score {_rate(m['baseline_mean_score'])} -> {_rate(m['mean_score'])}, change {_change(m.get('mean_score_change'))}"
                     f"{_interval(m.get('mean_score_interval'), True)}, Wilcoxon p {_p(m['wilcoxon_p'])}")
        out.append(text)
        out += [f"{metric} by {report.get('by')}:{line[1:]}" for line in slice_lines(report, m)]
    return out


def slice_lines(report: dict[str, Any], m: dict[str, Any]) -> list[str]:
    """A metric's slices (``--by``) as text lines: per slice the pass rates, the change with its
    95% interval, the rows that regressed and improved, McNemar's p raw and adjusted across the
    slices (``*`` marks a significant change); then the slices that changed significantly."""
    if not m.get("by"):
        return []
    correction, alpha = report.get("correction", "holm"), report.get("alpha") or ALPHA
    out = []
    for group, g in m["by"].items():
        mark = " *" if g.get("significant") else ""
        out.append(f"  {group}: {_rate(g['baseline_pass_rate'])} -> {_rate(g['pass_rate'])} ({_change(g['change'])}"
                   f"{_interval(g.get('change_interval'), True)}) on {g['pairs']}; {g['regressed']} regressed, {g['improved']} improved "
                   f"(McNemar p {_p(g['mcnemar_p'])}, adjusted {_p(g.get('mcnemar_p_adjusted'))}){mark}")
    changed = m.get("significant_slices", [])
    tested = sum(1 for g in m["by"].values() if g.get("mcnemar_p") is not None)  # the family: a slice with no test is left out
    untested = len(m["by"]) - tested
    out.append(f"  changed significantly ({correction}-adjusted p <= {alpha:g}, across the {tested} slice(s) with a test"
               + (f"; {untested} with no changed verdict left out" if untested else "") + "): "
               + (", ".join(changed) if changed else "none"))
    return out


def _interval(pair: list[float] | None, signed: bool = False) -> str:
    if pair is None:
        return ""
    shown = _change if signed else _rate
    return f" [{shown(pair[0])}, {shown(pair[1])}]"


def corrected_lines(corrected: dict[str, Any] | None) -> list[str]:
    """A metric's label-corrected comparison (``compare``'s ``corrected``) as text lines: per
    figure both runs' corrected values with their intervals and the change with its own, or how
    many labels are missing for one."""
    out = []
    for key, figures in (corrected or {}).items():
        what = "pass rate" if key == "pass_rate" else "mean score"
        before, after = figures["baseline"], figures["current"]
        labelled = f"{before['labelled']} and {after['labelled']} labelled rows"
        if figures["change"] is None:
            out.append(f"  label-corrected {what}: no interval ({labelled}; {figures['labels_needed'] or 'more'} more labels needed "
                       "in the run with fewer)")
            continue
        out.append(f"  label-corrected {what} {_rate(before['estimate'])}{_interval(before['interval'])} -> {_rate(after['estimate'])}"
                   f"{_interval(after['interval'])}: change {_change(figures['change'])}{_interval(figures['interval'], True)} (95%; {labelled})")
    return out


def diagnosis_lines(report: dict[str, Any]) -> list[str]:
    """The comparison's diagnosis lines: each cell's rows, baseline -> now (change), then the
    rows that moved between cells (none when the tables hold no diagnosis)."""
    d = report.get("diagnosis")
    if not d:
        return []
    cells = ", ".join(f"{name} {d['baseline'][name]} -> {d['current'][name]} ({d['change'][name]:+d})" for name in d["current"])
    out = [f"diagnosis on the matched rows: {cells}"]
    if d["moved"]:
        out.append("  moved: " + ", ".join(f"{key} {rows}" for key, rows in d["moved"].items()))
    return out


REGRESSED_SHOWN = 20  # regressed row ids the Markdown summary names per metric (a pull request comment quotes it)


def markdown_view(report: dict[str, Any], baseline: str, lines: list[str]) -> dict[str, Any]:
    """What the Markdown summary shows of ``report``: per metric the pass rates, their change with
    its 95% interval and p-value, the slices of ``--by`` (``slice_lines``), and the ids of the rows that regressed (the first ``REGRESSED_SHOWN``, with how many
    more), the diagnosis counts and the comparison's gate lines."""
    return {
        "baseline": baseline,
        "tests": "McNemar",
        "metrics": [{"name": metric, "baseline_pass_rate": _rate(m["baseline_pass_rate"]), "pass_rate": _rate(m["pass_rate"]),
                     "change": _change(m["change"]), "interval": _interval(m.get("change_interval"), True).strip() or "-",
                     "regressed": m["regressed"], "improved": m["improved"],
                     "p_value": _p(m["mcnemar_p"])} for metric, m in report["metrics"].items()],
        "slices": [f"{metric} by {report.get('by')}:{line[1:]}" for metric, m in report["metrics"].items() for line in slice_lines(report, m)],
        "corrected": [f"{metric}:{line[1:]}" for metric, m in report["metrics"].items() for line in corrected_lines(m.get("corrected"))],
        "diagnosis": None if not report.get("diagnosis") else [
            {"name": name, "baseline": report["diagnosis"]["baseline"][name], "current": count,
             "change": f"{report['diagnosis']['change'][name]:+d}"} for name, count in report["diagnosis"]["current"].items()],
        "regressed": [{"name": metric, "count": m["regressed"], "ids": m.get("regressed_ids", [])[:REGRESSED_SHOWN],
                       "more": m["regressed"] - len(m.get("regressed_ids", [])[:REGRESSED_SHOWN])}
                      for metric, m in report["metrics"].items() if m["regressed"]],
        "lines": [*(f"warning: {w}" for w in report["warnings"]), *lines,
                  *(f"diagnosis moved from {key.replace(' -> ', ' to ')}: {rows} row(s)"
                    for key, rows in (report.get("diagnosis") or {}).get("moved", {}).items())],
    }


__all__ = ["change_lines", "corrected_lines", "diagnosis_lines", "markdown_view", "render", "slice_lines"]

"""``--markdown FILE``: a Markdown summary of the run for people in CI, appended to GitHub's job
summary (``GITHUB_STEP_SUMMARY``) when that variable is set: the gate's verdict and lines, a
table per metric (ok, error, skipped, pass rate, threshold, mean score), the worst failing
rows (at most 10) with their rationale, the diagnosis counts (sufficiency x completeness) with
their shares, tokens and cost, and the comparison with a baseline (the regressed rows' ids, how the
diagnosis counts moved).
Rendered from the Jinja2 template ``templates/summary.md.j2``. Text from the data or a judge is
escaped (``_md``: no HTML, no table break) and made inert (``neutral``: no @mention, link or
issue reference), as the pull request comment of the GitHub Action posts this text.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ragjudge.audit import lines as audit_lines
from ragjudge.gate import GateResult, Summary
from ragjudge.reports.console import corrected_lines, panel_lines, prefix_lines, probability_lines
from ragjudge.reports.gate_text import marked, verdict_line
from ragjudge.reports import printable
from ragjudge.types import count_of
from ragjudge.http_errors import redact
from ragjudge.io import write_atomic

WORST_SHOWN = 10


# Text from the data or a judge's rationale must not ping people or link anywhere in a pull
# request comment or a job summary (esphome/devices.esphome.io#1649): a zero-width space
# (U+200B, as the entity &#8203;) breaks what GitHub would turn into a mention (@name, @org/team)
# or an email link (a@b.c), an autolink (scheme://, www.), an issue reference (#12, GH-12,
# owner/repo#12); an inline link or image ``[text](url)`` loses its ``(`` (``]\\(``). The
# text reads the same; raw HTML and ``<url>`` are escaped already.
_ZWSP = "\u200b"  # written as the entity &#8203; once every rule has run (no rule then sees its '#')
_NEUTRAL = [
    (re.compile(r"@"), "@" + _ZWSP),
    (re.compile(r"(?<=:)(?=//)"), _ZWSP),
    (re.compile(r"(?i)(?<=\bwww)(?=\.)"), _ZWSP),
    (re.compile(r"#(?=\d)"), "#" + _ZWSP),
    (re.compile(r"(?i)\b(GH)-(?=\d)"), r"\1" + _ZWSP + "-"),
    (re.compile(r"\]\("), "]\\("),
]


def neutral(text: str) -> str:
    """``text`` (Markdown-escaped already) with its mentions, links and references made inert
    (``_NEUTRAL``); it renders as the same characters."""
    for pattern, replacement in _NEUTRAL:
        text = pattern.sub(replacement, text)
    return text.replace(_ZWSP, "&#8203;")


def _md(value: Any) -> str:
    """``value`` as text safe inside a Markdown table cell: one line, pipes and HTML escaped,
    control characters replaced (U+FFFD, as in JUnit), API keys redacted, mentions and links
    made inert (``neutral``)."""
    import html

    if isinstance(value, list):
        value = "; ".join(map(str, value))
    text = " ".join(printable(redact(str("" if value is None else value))).split())
    return neutral(html.escape(text, quote=False).replace("|", "\\|"))


def _code(value: Any) -> str:
    """``value`` as one Markdown code span (in which nothing is a mention or a link): one line,
    control characters replaced, fenced by more backticks than any run of them inside, so that
    no backtick in the value ends the span early (CommonMark 6.1)."""
    text = " ".join(printable(redact(str("" if value is None else value))).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(summary: Summary, gate: GateResult, source: str | None = None, comparison: dict[str, Any] | None = None) -> str:
    """The Markdown text of the run."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("ragjudge.reports", "templates"), undefined=StrictUndefined, autoescape=False,
                      keep_trailing_newline=True, trim_blocks=False)
    env.filters["md"] = _md
    env.filters["code"] = _code
    env.filters["rows"] = lambda number: count_of(int(number))
    env.filters["printable"] = lambda value: printable(str(value))
    worst = sorted(({**row, "metric": name} for name, m in summary.metrics.items() if not m.measured for row in m.worst),
                   key=lambda row: (row["score"], row["row"]))[:WORST_SHOWN]
    usage = summary.usage
    return env.get_template("summary.md.j2").render(
        verdict=verdict_line(gate.exit_code),
        rows=summary.rows, judge_model=summary.judge_model, source=source,
        gate_lines=[text for _, text in marked(gate, verdict=False)],
        metrics=[{"name": name, "ok": m.ok, "error": m.error, "skipped": m.skipped, "pass_rate": _rate(m.pass_rate),
                  "threshold": f"{m.threshold:g}", "mean_score": _rate(m.mean_score)} for name, m in summary.metrics.items()],
        worst=[{**row, "score": f"{row['score']:g}"} for row in worst],
        failing=sum(m.failed for m in summary.metrics.values()),
        comparison=comparison,
        corrected=corrected_lines(summary),
        panel=panel_lines(summary),
        prefixes=prefix_lines(summary),
        probabilities=probability_lines(summary),
        diagnosis=None if summary.diagnosis is None else {"rows": summary.diagnosed, "cells": [
            {"name": name, "count": count, "share": _rate(summary.diagnosis_shares()[name])} for name, count in summary.diagnosis.items()]},
        audit=_audit(summary.audit),
        prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
        cost="unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}", calls=summary.provider_calls,
    )


def _audit(audit: Any) -> dict[str, Any] | None:
    """The abstention audit's 2 x 3 table for the template (``ragjudge.audit``): per side, each
    cell's count with its share of the audited rows and Wilson 95% interval; the rates' lines."""
    if audit is None:
        return None
    table = audit.to_dict()

    def text(name: str) -> str:
        cell = table["cells"][name]
        if not cell["count"]:
            return "0"
        low, high = cell["interval"]
        return f"{cell['count']} ({cell['share']:.0%}, {low:.0%}-{high:.0%})"

    sides = [{"name": side, **{outcome: text(f"{side}_{outcome}") for outcome in ("correct", "incorrect", "abstained")}}
             for side in ("sufficient", "insufficient")]
    return {"rows": table["rows"], "sides": sides, "rates": [line.strip() for line in audit_lines(audit)[3:]]}


def write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    write_atomic(path, text)


def step_summary_path() -> str | None:
    """The job summary file GitHub Actions names in ``GITHUB_STEP_SUMMARY``, if any."""
    return os.environ.get("GITHUB_STEP_SUMMARY") or None


def append_step_summary(text: str) -> str | None:
    """Append ``text`` to the file ``GITHUB_STEP_SUMMARY`` names (what is there stays); returns
    its path, or None when the variable is not set."""
    path = step_summary_path()
    if not path:
        return None
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(("\n" if os.path.exists(path) and os.path.getsize(path) else "") + text)
    return path

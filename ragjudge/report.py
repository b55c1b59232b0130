"""Rendering a run for people (a rich table on stderr) and for machines (summary JSON)."""

from __future__ import annotations

import json
import os
from typing import Any

from ragjudge.gate import GateResult, Summary


def summary_dict(summary: Summary, gate: GateResult, mapping: str | None = None) -> dict[str, Any]:
    """The ``--summary-json`` document: rows; per metric counts, pass rate and mean score over
    ok rows, error rate, threshold, cache hits, tokens and cost (USD); the rows whose passages
    or response lost sentences addressed to the judge; the gate's verdict,
    lines and failures; the exit code."""
    return {
        "rows": summary.rows,
        "judge_model": summary.judge_model,
        "metrics": {name: m.to_dict() for name, m in summary.metrics.items()},
        "metrics_not_judged": [name for name, m in summary.metrics.items() if summary.rows and m.ok + m.error == 0],
        "provider_calls": summary.provider_calls,
        "rows_with_removed_instructions": summary.rows_with_removed_instructions,
        "cost_usd": summary.cost_usd,
        "fatal": summary.fatal,
        "interrupted": summary.interrupted,
        "mapping": mapping,
        "gate": {"passed": gate.passed, "failures": gate.failures, "lines": gate.lines},
        "exit_code": gate.exit_code,
    }


def write_summary_json(path: str, document: dict[str, Any]) -> None:
    """Write ``document`` to ``path`` atomically (``-`` for stdout)."""
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if path == "-":
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from ragjudge.io import open_atomic

    handle, tmp = open_atomic(path)
    with handle:
        handle.write(text.encode("utf-8"))
    if tmp is not None:
        os.replace(tmp, os.path.realpath(path))


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
    table = Table(title=f"ragjudge: {summary.rows} rows, judge {summary.judge_model}", title_justify="left")
    for i in keep:
        if header[i] == "metric":
            table.add_column(header[i], justify="left", overflow="fold", min_width=6)
        else:
            cells = [row[i] for row in rows]
            table.add_column(header[i], justify="right", no_wrap=True, min_width=max(len(header[i]) if i > 3 else 1, *(len(c) for c in cells)))
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    console.print(table)
    usage = summary.usage
    cost = usage.cost_usd
    cost_text = "unknown (no price for this model)" if cost is None else f"${cost:.4f}"
    console.print(f"provider calls: {summary.provider_calls}, tokens: {usage.prompt_tokens} in / {usage.completion_tokens} out, cost: {cost_text}",
                  soft_wrap=True)
    for line in gate.lines:
        style = "green" if line.startswith("PASS") or line == "gate passed" else ("red" if "FAIL" in line or "failed" in line else None)
        console.print(line, style=style, highlight=False, soft_wrap=True)

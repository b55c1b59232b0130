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


def print_summary(console: Any, summary: Summary, gate: GateResult) -> None:
    """A per-metric table, the usage line and the gate's verdict lines, on ``console``."""
    from rich.table import Table

    table = Table(title=f"ragjudge: {summary.rows} rows, judge {summary.judge_model}", title_justify="left")
    for column in ("metric", "ok", "error", "skipped", "pass rate", "mean score", "threshold", "cached"):
        table.add_column(column, justify="left" if column == "metric" else "right", no_wrap=True)
    for name, m in summary.metrics.items():
        table.add_row(
            name,
            str(m.ok),
            str(m.error),
            str(m.skipped),
            _fmt(m.pass_rate),
            _fmt(m.mean_score),
            f"{m.threshold:g}",
            str(m.cached),
        )
    console.print(table)
    tokens_in = sum(m.prompt_tokens for m in summary.metrics.values())
    tokens_out = sum(m.completion_tokens for m in summary.metrics.values())
    cost = summary.cost_usd
    cost_text = "unknown (no price for this model)" if cost is None else f"${cost:.4f}"
    console.print(f"provider calls: {summary.provider_calls}, tokens: {tokens_in} in / {tokens_out} out, cost: {cost_text}", soft_wrap=True)
    for line in gate.lines:
        style = "green" if line.startswith("PASS") or line == "gate passed" else ("red" if "FAIL" in line or "failed" in line else None)
        console.print(line, style=style, highlight=False, soft_wrap=True)

"""The ``--summary-json`` document: the run for machines."""

from __future__ import annotations

import json
from typing import Any

from ragjudge.gate import GateResult, Summary
from ragjudge.reports.gate_text import failures_of, lines_of
from ragjudge.io import to_stdout, write_atomic


def summary_dict(summary: Summary, gate: GateResult, mapping: str | None = None) -> dict[str, Any]:
    """The ``--summary-json`` document: rows; per metric counts, pass rate and mean score over
    ok rows, error rate, threshold, cache hits, tokens (``tokens_estimated``: some reply
    reported none) and cost (USD), retries; provider calls (every HTTP request) and retries
    among them; the rows whose passages
    or response lost sentences addressed to the judge; the gate's verdict,
    lines and failures; the exit code; ``diagnosis`` (null unless both sufficiency and
    completeness were judged): ``rows`` with a diagnosis, ``counts`` and ``shares`` (among those
    rows, 0..1; null without such rows) per diagnosis, and the ``max`` shares gated; ``audit`` (null
    unless sufficiency, abstention and completeness were judged: ``ragjudge.audit.Audit.to_dict``):
    the abstention audit's cells, rates and selective-generation curve."""
    return {
        "rows": summary.rows,
        "judge_model": summary.judge_model,
        "metrics": {name: {**m.to_dict(), "tokens_estimated": m.usage.estimated, "retries": m.usage.retries}
                    for name, m in summary.metrics.items()},
        "metrics_not_judged": [name for name, m in summary.metrics.items() if summary.rows and m.ok + m.error == 0],
        "provider_calls": summary.provider_calls,
        "provider_retries": summary.usage.retries,
        "tokens_estimated": summary.usage.estimated,
        "rows_with_removed_instructions": summary.rows_with_removed_instructions,
        "diagnosis": diagnosis_dict(summary),
        "audit": None if summary.audit is None else summary.audit.to_dict(),
        "cost_usd": summary.cost_usd,
        "fatal": summary.fatal,
        "interrupted": summary.interrupted,
        "mapping": mapping,
        "gate": {"passed": gate.passed, "failures": failures_of(gate), "lines": lines_of(gate)},
        "exit_code": gate.exit_code,
    }


def diagnosis_dict(summary: Summary) -> dict[str, Any] | None:
    """The summary's diagnosis counts as the JSON holds them (None: not both metrics judged)."""
    if summary.diagnosis is None:
        return None
    return {"rows": summary.diagnosed, "counts": dict(summary.diagnosis), "shares": summary.diagnosis_shares(),
            "max": dict(summary.max_diagnosis)}


def write_summary_json(path: str, document: dict[str, Any]) -> None:
    """Write ``document`` to ``path`` atomically (``-`` for stdout)."""
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if to_stdout(path):
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()
        return

    write_atomic(path, text)

"""GitHub annotations: when ``GITHUB_ACTIONS`` is ``true``, failing rows become ``::error``
workflow commands that point at the input file and the row's line (JSONL: the row's line;
CSV: the line where its record starts), at most ``SHOWN``, then one ``::notice`` counting
the rest. Messages are redacted of API keys, their control characters replaced (U+FFFD, as in JUnit)
and escaped as the workflow-command syntax asks.
"""

from __future__ import annotations

import os
from typing import Any

from ragjudge.gate import Summary
from ragjudge.reports import printable
from ragjudge.http_errors import redact
from ragjudge.types import score_against

SHOWN = 10


def wanted() -> bool:
    """True inside a GitHub Actions job."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _escape_data(text: str) -> str:
    text = printable(text)  # an ESC from a row id or rationale must not reach the log raw
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def line_numbers(path: str | None, fmt: str, rows: set[int]) -> dict[int, int]:
    """Row number (from 1) -> the line of ``path`` it starts on, for ``rows``; JSONL and CSV
    only (empty for other formats and for stdin, ``path`` None)."""
    found: dict[int, int] = {}
    if path is None or not rows or fmt not in ("jsonl", "csv"):
        return found
    last = max(rows)
    try:
        if fmt == "jsonl":
            with open(path, "rb") as handle:
                row = 0
                for line_number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    row += 1
                    if row in rows:
                        found[row] = line_number
                    if row >= last:
                        break
        else:
            import csv

            csv.field_size_limit(2**31 - 1)
            with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
                reader = csv.reader(handle)
                end, row, header = 0, 0, False
                for fields in reader:
                    start, end = end + 1, reader.line_num
                    if not fields:
                        continue
                    if not header:
                        header = True
                        continue
                    row += 1
                    if row in rows:
                        found[row] = start
                    if row >= last:
                        break
    except (OSError, UnicodeError):
        return {}
    return found


def commands(summary: Summary, source: str | None, fmt: str | None) -> list[str]:
    """The workflow commands for ``summary``'s failing and error rows."""
    rows: list[tuple[str, dict[str, Any]]] = []
    for name, m in summary.metrics.items():
        rows += [] if m.measured else [(name, row) for row in m.worst]  # a measurement's "no" rows are no failing rows
    rows.sort(key=lambda item: (item[1]["score"], item[1]["row"]))
    total = sum(m.failed for name, m in summary.metrics.items() if not m.measured)
    shown = rows[:SHOWN]
    lines = line_numbers(source, fmt or "", {row["row"] for _, row in shown})
    out = []
    for name, row in shown:
        where = f"file={_escape_property(source)},line={lines[row['row']]}," if row["row"] in lines else ""
        title = _escape_property(redact(f"ragjudge {name} failed: {row['id']}"))
        missing = f" Missing: {'; '.join(row['missing'])}" if row["missing"] else ""
        message = redact(f"score {score_against(row['score'], summary.metrics[name].threshold)} (threshold {summary.metrics[name].threshold:g}). {row['rationale'] or ''}{missing}".strip())
        out.append(f"::error {where}title={title}::{_escape_data(message)}")
    if total > len(shown):
        out.append(f"::notice title=ragjudge::{total - len(shown)} more failing row(s) not annotated; see the scored table or the summary")
    return out

"""Summary of a run and the gate: one ``GateResult`` drives both the printed verdict lines
and the exit code, so they can never disagree.

Pass rates and mean scores are over ``ok`` rows; the error rate is errors over judged
rows (ok + error); skipped rows count in neither. Exit codes: 0 every gate passed, 1 a
pass-rate gate failed, 3 an error-rate gate failed or the provider refused (auth, quota,
not found), 2 nothing was judged at all (no rows, or every row skipped by every metric),
130 interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragjudge.errors import EXIT_GATE_FAILED, EXIT_JUDGE_ERRORS, EXIT_OK, EXIT_USAGE
from ragjudge.types import Usage, distinct

EXIT_INTERRUPTED = 130
IDS_KEPT = 100  # row ids kept per metric and outcome (failed, error, skipped); the counts stay whole
WORST_KEPT = 20  # failing rows kept per metric with their score and rationale, lowest score first


def row_name(ident: Any, index: int) -> str:
    """How a row is named in reports: its id, else ``row N`` (counting from 1)."""
    return str(ident) if ident is not None else f"row {index + 1}"


@dataclass
class MetricSummary:
    """Counts and aggregates for one metric. ``cost_usd`` in USD (None if any paid call
    had no known price); ``pass_rate`` and ``mean_score`` are None without ok rows."""

    metric: str
    threshold: float
    rows: int = 0
    ok: int = 0
    error: int = 0
    input_errors: int = 0  # error rows whose input was unusable (no judge call made)
    interrupted: int = 0  # error rows left unfinished by an interruption
    unsampled: int = 0  # rows left out by --limit / --sample (skipped, counted in no rate)
    unpaid: int = 0  # error rows left unjudged when the budget (judge.max_cost) was reached
    skipped: int = 0
    passed: int = 0
    cached: int = 0
    score_thousandths: int = 0  # the sum of ok scores in thousandths: exact, so chunk sums add up to the whole
    usage: Usage = field(default_factory=Usage)
    skipped_by: dict[str, int] = field(default_factory=dict)  # skip reason -> rows
    min_pass_rate: float = 1.0
    max_error_rate: float = 0.0
    max_skip_rate: float = 1.0
    prompt_version: str = ""  # the judge's prompt version (changes with its prompt, extensions included)
    ids: dict[str, list[str]] = field(default_factory=lambda: {"failed": [], "error": [], "skipped": []})  # the first IDS_KEPT of each
    worst: list[dict[str, Any]] = field(default_factory=list)  # failing rows, lowest score first: row, id, score, rationale, missing

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ok if self.ok else None

    @property
    def mean_score(self) -> float | None:
        return self.score_thousandths / 1000 / self.ok if self.ok else None

    @property
    def error_rate(self) -> float:
        judged = self.ok + self.error
        return self.error / judged if judged else 0.0

    def add(self, verdict: Any, ident: Any = None, index: int | None = None) -> None:
        """Count one row's ``Verdict``; ``ident`` (the row's id) and ``index`` (its position in
        the input, from 0) name it among the failing, error and skipped rows kept."""
        self.rows += 1
        index = self.rows - 1 if index is None else index
        outcome = None
        if verdict.status == "ok":
            self.ok += 1
            self.score_thousandths += round(float(verdict.score) * 1000)
            self.passed += bool(verdict.passed)
            if not verdict.passed:
                outcome = "failed"
                self._keep_worst({"row": index + 1, "id": row_name(ident, index), "score": verdict.score,
                                  "rationale": verdict.rationale, "missing": list(verdict.missing)})
        elif verdict.status == "error":
            self.error += 1
            self.input_errors += verdict.input_error
            self.interrupted += verdict.error == "interrupted"
            self.unpaid += verdict.error == "budget reached"
            outcome = "error"
        elif verdict.error == "not sampled":
            self.unsampled += 1
        else:
            self.skipped += 1
            reason = verdict.error or "skipped"
            self.skipped_by[reason] = self.skipped_by.get(reason, 0) + 1
            outcome = "skipped"
        if outcome and len(self.ids[outcome]) < IDS_KEPT:
            self.ids[outcome].append(row_name(ident, index))
        if verdict.cached:
            self.cached += 1
        self.usage = self.usage + verdict.usage

    def merge(self, other: "MetricSummary") -> "MetricSummary":
        """This summary and ``other`` (the same metric over other rows) added together."""
        merged = MetricSummary(self.metric, self.threshold, min_pass_rate=self.min_pass_rate, max_error_rate=self.max_error_rate,
                               max_skip_rate=self.max_skip_rate, prompt_version=self.prompt_version or other.prompt_version)
        for name in ("rows", "ok", "error", "input_errors", "interrupted", "unsampled", "unpaid", "skipped", "passed", "cached", "score_thousandths"):
            setattr(merged, name, getattr(self, name) + getattr(other, name))
        merged.usage = self.usage + other.usage
        merged.skipped_by = dict(self.skipped_by)
        for reason, count in other.skipped_by.items():
            merged.skipped_by[reason] = merged.skipped_by.get(reason, 0) + count
        merged.ids = {key: (self.ids[key] + other.ids[key])[:IDS_KEPT] for key in self.ids}
        merged.worst = sorted(self.worst + other.worst, key=lambda row: (row["score"], row["row"]))[:WORST_KEPT]
        return merged

    def _keep_worst(self, row: dict[str, Any]) -> None:
        if len(self.worst) >= WORST_KEPT and (row["score"], row["row"]) >= (self.worst[-1]["score"], self.worst[-1]["row"]):
            return
        self.worst.append(row)
        self.worst.sort(key=lambda kept: (kept["score"], kept["row"]))
        del self.worst[WORST_KEPT:]

    @property
    def failed(self) -> int:
        """Ok rows that did not pass."""
        return self.ok - self.passed

    @property
    def skip_rate(self) -> float:
        """Skipped rows over the rows chosen to judge (rows left out by --sample do not count)."""
        chosen = self.rows - self.unsampled
        return self.skipped / chosen if chosen else 0.0

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens

    @property
    def cost_usd(self) -> float | None:
        """USD for this metric's calls; None when a call that got a reply had no known price."""
        return self.usage.cost_usd

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "ok": self.ok,
            "error": self.error,
            "input_errors": self.input_errors,
            "skipped": self.skipped,
            "not_sampled": self.unsampled,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "mean_score": self.mean_score,
            "error_rate": self.error_rate,
            "skip_rate": self.skip_rate,
            "skipped_by": dict(sorted(self.skipped_by.items(), key=lambda item: -item[1])),
            "threshold": self.threshold,
            "min_pass_rate": self.min_pass_rate,
            "max_error_rate": self.max_error_rate,
            "max_skip_rate": self.max_skip_rate,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "prompt_version": self.prompt_version,
            # the rows behind the counts: the first ids of each outcome (capped), with the whole count
            "failed_rows": {"count": self.failed, "ids": self.ids["failed"]},
            "error_rows": {"count": self.error, "ids": self.ids["error"]},
            "skipped_rows": {"count": self.skipped, "ids": self.ids["skipped"]},
        }


@dataclass
class Summary:
    """A run's (or one chunk's) counts: ``rows``, one ``MetricSummary`` per metric, the fatal
    provider error that stopped it (if any), whether it was interrupted, provider requests
    made (``provider_calls``), the judge model and the rows that lost sentences addressed to
    the judge. ``merge`` adds the summaries of chunks into the summary of the whole."""

    rows: int = 0
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    fatal: str | None = None
    interrupted: bool = False
    provider_calls: int = 0
    judge_model: str = ""
    rows_with_removed_instructions: int = 0
    budget_reached: bool = False
    max_cost: float | None = None

    @property
    def usage(self) -> Usage:
        return Usage.total([m.usage for m in self.metrics.values()])

    @property
    def cost_usd(self) -> float | None:
        """USD for the whole run; None when some call that got a reply had no known price."""
        return self.usage.cost_usd

    def merge(self, other: "Summary") -> "Summary":
        """This summary and ``other`` (the same run's other rows) added together; the first
        fatal error is kept, and an interruption of either is one of both."""
        metrics = dict(self.metrics)
        for name, theirs in other.metrics.items():
            metrics[name] = metrics[name].merge(theirs) if name in metrics else theirs
        return Summary(
            rows=self.rows + other.rows,
            metrics=metrics,
            fatal=self.fatal or other.fatal,
            interrupted=self.interrupted or other.interrupted,
            provider_calls=self.provider_calls + other.provider_calls,
            judge_model=self.judge_model or other.judge_model,
            rows_with_removed_instructions=self.rows_with_removed_instructions + other.rows_with_removed_instructions,
            budget_reached=self.budget_reached or other.budget_reached,
            max_cost=self.max_cost if self.max_cost is not None else other.max_cost,
        )


@dataclass
class GateResult:
    """``passed``, ``exit_code``, the verdict ``lines`` to print and the ``failures``."""

    passed: bool
    exit_code: int
    lines: list[str]
    failures: list[str]


def _why_skipped(m: MetricSummary) -> str:
    if not m.skipped_by:
        return ""
    reason, count = max(m.skipped_by.items(), key=lambda item: item[1])
    return f"; most for '{reason}' ({count})" if len(m.skipped_by) > 1 else f": {reason}"


def check_gate(summary: Summary) -> GateResult:
    """Apply each metric's min pass rate and max error rate to ``summary``."""
    lines: list[str] = []
    failures: list[str] = []
    pass_failed = error_failed = judge_errors_failed = False
    for name, m in summary.metrics.items():
        judged = m.ok + m.error
        if m.rows and m.skip_rate > m.max_skip_rate:
            pass_failed = True
            a, b = distinct(m.skip_rate, m.max_skip_rate)
            line = f"FAIL {name}: skip rate {a} > {b} ({m.skipped} of {m.rows} rows skipped){_why_skipped(m)}"
            failures.append(line[5:])
            lines.append(line)
        if judged == 0:
            lines.append(f"SKIP {name}: no row judged ({m.skipped} skipped){_why_skipped(m)}")
            continue
        if m.error_rate > m.max_error_rate:
            error_failed = True
            # judge failures (exit 3) only if the judge's own errors break the ceiling; the rest
            # of the excess came from rows whose input was unusable (exit 2)
            judge_errors_failed |= (m.error - m.input_errors) / judged > m.max_error_rate
            cause = f"; {m.input_errors} from unusable input" if m.input_errors else ""
            a, b = distinct(m.error_rate, m.max_error_rate)
            line = f"FAIL {name}: error rate {a} > {b} ({m.error} of {judged} judged rows{cause})"
            failures.append(line[5:])
            lines.append(line)
        else:
            a, b = distinct(m.error_rate, m.max_error_rate)
            lines.append(f"PASS {name}: error rate {a} <= {b} ({m.error} of {judged} judged rows)")
        if m.ok == 0:
            continue
        assert m.pass_rate is not None
        if m.pass_rate < m.min_pass_rate:
            pass_failed = True
            a, b = distinct(m.pass_rate, m.min_pass_rate)
            line = f"FAIL {name}: pass rate {a} < {b} ({m.passed} of {m.ok} ok rows passed)"
            failures.append(line[5:])
            lines.append(line)
        else:
            a, b = distinct(m.pass_rate, m.min_pass_rate)
            lines.append(f"PASS {name}: pass rate {a} >= {b} ({m.passed} of {m.ok} ok rows passed)")
    if summary.fatal:
        failures.insert(0, f"judge stopped: {summary.fatal}")
        lines.insert(0, f"FAIL judge stopped: {summary.fatal}")
    if summary.budget_reached:
        spent = summary.cost_usd or 0.0
        # per metric: a row may be judged by one metric and not by another
        left = ", ".join(f"{m.unpaid} by {name}" for name, m in summary.metrics.items() if m.unpaid) or "none"
        line = (f"budget reached: spent ${spent:.4f} of --max-cost ${summary.max_cost or 0:g}; rows not judged: {left} "
                "(run again with a higher --max-cost: the rows judged come from the cache)")
        failures.insert(0, line)
        lines.insert(0, "FAIL " + line)
    if summary.interrupted:
        failures.insert(0, "interrupted: unfinished rows have status error")
        lines.insert(0, "FAIL interrupted: unfinished rows have status error (reason 'interrupted')")
    nothing = not summary.interrupted and not summary.fatal and all(m.ok + m.error == 0 for m in summary.metrics.values())
    if nothing:
        why = "the input has no rows" if summary.rows == 0 else f"every row was skipped by every metric ({summary.rows} rows)"
        failures.insert(0, f"nothing was judged: {why}")
        lines.insert(0, f"FAIL nothing was judged: {why}; check the input and the column mapping (the 'columns:' line; -q hides it)")
    # every row a metric judged failed on its own input (an unusable context): no judge ran,
    # so this is an input error (exit 2), not a judge failure (exit 3)
    unusable = (
        not nothing and not summary.interrupted and not summary.fatal
        and all(m.ok == 0 and m.error == m.input_errors for m in summary.metrics.values())
    )
    if unusable:
        count = max(m.input_errors for m in summary.metrics.values())
        failures.insert(0, f"nothing could be judged: {count} row(s) have an unusable input")
        lines.insert(0, f"FAIL nothing could be judged: every judged row has an unusable input ({count} rows; the M_error column says why)")
    if summary.interrupted:
        code = EXIT_INTERRUPTED
    elif nothing or unusable:
        code = EXIT_USAGE
    elif summary.fatal or summary.budget_reached or judge_errors_failed:
        code = EXIT_JUDGE_ERRORS
    elif error_failed:  # every error row that broke the gate failed on its own input: no judge failed
        code = EXIT_USAGE
    elif pass_failed:
        code = EXIT_GATE_FAILED
    else:
        code = EXIT_OK
    verdict = "gate passed" if code == EXIT_OK else f"gate failed (exit {code})"
    lines.append(verdict)
    return GateResult(code == EXIT_OK, code, lines, failures)


def with_regressions(gate: GateResult, lines: list[str]) -> GateResult:
    """``gate`` joined by the regression gates' ``lines`` (from ``ragjudge.compare.check``): a
    failed one fails the run with exit 1 unless it already fails with another code."""
    failed = [line[5:] for line in lines if line.startswith("FAIL")]
    code = gate.exit_code if gate.exit_code != EXIT_OK or not failed else EXIT_GATE_FAILED
    verdict = "gate passed" if code == EXIT_OK else f"gate failed (exit {code})"
    body = gate.lines[:-1] if gate.lines and gate.lines[-1].startswith("gate ") else gate.lines
    return GateResult(code == EXIT_OK, code, [*body, *lines, verdict], [*gate.failures, *failed])

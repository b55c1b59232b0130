"""The gate's words: each typed ``ragjudge.gate.Check`` as the line every output prints
(``PASS ...`` / ``FAIL ...`` / ``SKIP ...``), a failed check's ``failures`` entry, and the
closing verdict line. The decisions (which check passed, the exit code) are ``ragjudge.gate``'s;
nothing here decides: a change of wording changes no exit code. The console, the summary JSON,
the Markdown, JUnit and the HTML report all print these.
"""

from __future__ import annotations

from ragjudge.errors import EXIT_OK
from ragjudge.gate import Check, GateResult, Kind
from ragjudge.types import count_of, distinct


def _why_skipped(skipped_by: dict[str, int]) -> str:
    if not skipped_by:
        return ""
    if len(skipped_by) == 1:
        return f": {next(iter(skipped_by))}"
    ranked = sorted(skipped_by.items(), key=lambda item: -item[1])
    top = [(reason, count) for reason, count in ranked if count == ranked[0][1]]
    if len(top) > 1:  # tied: each of them, not the first of the ties as if it were "most"
        return "; " + ", ".join(f"{count} for '{reason}'" for reason, count in ranked[:4]) + (", ..." if len(ranked) > 4 else "")
    return f"; most for '{top[0][0]}' ({top[0][1]})"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _text(c: Check) -> str | None:
    """What ``c`` says, without its PASS / FAIL / SKIP mark (None: it prints no line)."""
    n, name = c.counts, c.metric
    kind = c.check
    if kind is Kind.SKIP_RATE:
        if not c.failed:
            return None
        a, b = distinct(c.value, c.bound)
        return f"{name}: skip rate {a} > {b} ({n['skipped']} of {count_of(n['rows'])} skipped){_why_skipped(n['skipped_by'])}"
    if kind is Kind.NO_ROW_JUDGED:
        if n.get("error"):
            measured = f"no row ok ({n['error']} error(s))"
        else:
            measured = f"no row judged ({n['skipped']} skipped){_why_skipped(n['skipped_by'])}"
        if not c.failed:
            return f"{name}: {measured}"
        bounds = ", ".join(f"gate.{b} {value:g}" for b, value in n["bounds"].items())  # set by a flag or the file: named by its key
        return (f"{name}: {measured}, so the bound set on it ({bounds}) measured nothing; fix the input or the column "
                f"mapping, or allow it: gate.allow_unjudged: [{name}]")
    if kind is Kind.ERROR_RATE:
        a, b = distinct(c.value, c.bound)
        cause = f"; {n['input_errors']} from unusable input" if n["input_errors"] and c.failed else ""
        return f"{name}: error rate {a} {'>' if c.failed else '<='} {b} ({n['error']} of {n['judged']} judged rows{cause})"
    if kind is Kind.PASS_RATE:
        a, b = distinct(c.value, c.bound)
        fallback = (f"; the judge's rate: {count_of(n['labelled'], 'labelled row')}, {n['needed']} more give a corrected one (gate.few_labels: judge)"
                    if n.get("fallback") else "")
        return f"{name}: pass rate {a} {'<' if c.failed else '>='} {b} ({n['passed']} of {n['ok']} ok rows passed{fallback})"
    if kind is Kind.CORRECTED_PASS_RATE:
        if c.value is None:
            return (f"{name}: too few labels for a corrected pass rate ({count_of(n['labelled'], 'labelled ok row')} in '{n['column']}', "
                    f"{n['needed']} more needed), so gate.min_pass_rate {c.bound:g} was not checked on it: label more rows "
                    "(a random sample), or gate.few_labels: judge to gate on the judge's rate")
        a, b = distinct(c.value, c.bound)
        return (f"{name}: corrected pass rate {n['estimate']:.2f} [{n['low']:.2f}, {n['high']:.2f}], lower bound {a} "
                f"{'<' if c.failed else '>='} {b} ({n['labelled']} labelled of {n['ok']} ok rows; the judge's own {n['judge']:.2f})")
    if kind is Kind.JUDGE_STOPPED:
        return f"judge stopped: {c.detail}"
    if kind is Kind.BUDGET_REACHED:
        left = ", ".join(f"{count} by {metric}" for metric, count in n["unpaid"].items() if count) or "none"
        return (f"budget reached: spent ${c.value:.4f} of --max-cost ${c.bound or 0:g}; rows not judged: {left} "
                + ("(run again with a higher --max-cost: the rows judged come from the cache)" if n.get("cache", True) else
                   "(run again with a higher --max-cost: nothing was cached (--no-cache), so every row will be paid again)"))
    if kind is Kind.INTERRUPTED:
        if not any(n.values()):  # the interrupt came after the last verdict (while writing)
            return "interrupted: every row was judged before the interrupt; no row is unfinished"
        return "interrupted: unfinished rows have status error"
    if kind is Kind.NOTHING_JUDGED:
        return f"nothing was judged: {_nothing_why(n['rows'])}"
    if kind is Kind.UNUSABLE_INPUT:
        return f"nothing could be judged: {n['rows']} row(s) have an unusable input"
    if kind is Kind.NOTHING_COMPARED:
        return f"{name}: no row is ok in both tables ({n['rows']} matched by {n['matched_by']}), so nothing could be compared"
    if kind is Kind.REGRESSIONS:
        unjudged = n.get("unjudged", 0)
        why = (f"passed in the baseline: {n['regressed'] - unjudged} fail now, {unjudged} not judged now (error or skipped)" if unjudged
               else "passed in the baseline, fail now")
        return f"{name}: {c.value} regressed row(s) {'>' if c.failed else '<='} {c.bound} ({why}; {n['improved']} improved)"
    if kind is Kind.PASS_RATE_DROP:
        a, b = distinct(c.value, c.bound)
        past = n.get("past", c.failed)  # with --alpha a drop past the bound may pass (noise)
        if n.get("slice") is not None:
            name = f"{name} ({n['by']} = {n['slice']})"
        # a gain is said as one: "rose 0.05", not "dropped -0.05" (it is within any bound)
        change = (f"pass rate rose {distinct(-c.value, 0.0)[0]}, no drop (bound {b})" if c.value is not None and c.value < 0
                  else f"pass rate dropped {a} {'>' if past else '<='} {b}")
        if n.get("unjudged"):
            text = (f"{name}: {change} ({_rate(n['gated_baseline_pass_rate'])} -> "
                    f"{_rate(n['gated_pass_rate'])} on the {count_of(n['gated_rows'])} ok in the baseline, a row not judged now counted as "
                    f"failing: {n['unjudged']} passed then; {_rate(n['baseline_pass_rate'])} -> {_rate(n['pass_rate'])} on the "
                    f"{count_of(n['pairs'])} ok in both{_interval(n.get('interval'))})")
        else:
            text = (f"{name}: {change} "
                    f"({_rate(n['baseline_pass_rate'])} -> {_rate(n['pass_rate'])} on {count_of(n['pairs'])} ok in both{_interval(n.get('interval'))})")
        if "alpha" in n:
            text += _significance(n, past)
        return text
    if kind is Kind.DIAGNOSIS_SHARE:
        if c.passed is None:
            return f"diagnosis {name}: no row has a diagnosis (sufficiency and completeness both ok), so its bound was not applied"
        if c.value is None:
            return (f"diagnosis {name}: no row has a diagnosis (sufficiency and completeness both ok), so the bound set on it "
                    "(--max-diagnosis) measured nothing; allow it: gate.allow_unjudged: [diagnosis]")
        a, b = distinct(c.value, c.bound)
        return f"diagnosis {name}: share {a} {'>' if c.failed else '<='} {b} ({n['count']} of {count_of(n['diagnosed'])} with a diagnosis)"
    if kind is Kind.AUDIT_RATE:
        side = "an insufficient" if name == "answered_insufficient" else "a sufficient"
        if c.value is None:
            unjudged = n.get("unjudged") or []
            return (f"audit {name}: no row with {side} context has sufficiency, abstention and completeness verdicts ok, so the "
                    "bound set on it (--max-rate) measured nothing"
                    + (f": this run does not judge {' and '.join(unjudged)} (add {' '.join('-m ' + m for m in unjudged)})" if unjudged else ""))
        a, b = distinct(c.value, c.bound)
        what = "answered" if name == "answered_insufficient" else "declined"
        fallback = (f"; the judge's rate: {count_of(n['labelled'], 'labelled row')}, {n['needed']} more give a corrected one (gate.few_labels: judge)"
                    if n.get("fallback") else "")
        return f"audit {name}: rate {a} {'>' if c.failed else '<='} {b} ({n['count']} {what} of {count_of(n['rows'])} with {side} context{fallback})"
    if kind is Kind.CORRECTED_AUDIT_RATE:
        if c.value is None:
            if n.get("no_labels"):
                return (f"audit {name}: gate.gate_on: corrected, and the run has no labels for both sufficiency and abstention, so "
                        f"its bound {name}={c.bound:g} was not checked on a corrected rate: give labels.sufficiency and labels.abstention "
                        f"(--labels sufficiency=COLUMN --labels abstention=COLUMN), or gate it on the judge (gate.gate_on: {{{name}: judge}})")
            if n.get("needed") is None:
                return (f"audit {name}: no labelled row has {'an insufficient' if name == 'answered_insufficient' else 'a sufficient'} context, "
                        f"so its bound {name}={c.bound:g} was not checked on a corrected rate: label more rows (a random sample)")
            return (f"audit {name}: too few labels for a corrected rate ({count_of(n['labelled'], 'labelled audited row')} in sufficiency "
                    f"and abstention, {n['needed']} more needed), so its bound {name}={c.bound:g} was not checked on it: label more rows "
                    "(a random sample), or gate.few_labels: judge to gate on the judge's rate")
        a, b = distinct(c.value, c.bound)
        judge = _rate(n["count"] / n["rows"] if n["rows"] else None)
        return (f"audit {name}: corrected rate {n['estimate']:.2f} [{n['low']:.2f}, {n['high']:.2f}], upper bound {a} "
                f"{'>' if c.failed else '<='} {b} ({n['labelled']} labelled of {n['labelled'] + n['unlabelled']} audited rows; "
                f"uncorrected {judge})")
    raise AssertionError(kind)


def _signed(value: float) -> str:
    return f"{round(value, 2) + 0.0:+.2f}"  # + 0.0: a rounded -0.0 is 0.0


def _interval(pair: list[float] | None) -> str:
    """A change's 95% interval, as the drop lines print it (nothing without one)."""
    return "" if not pair else f", change 95% [{_signed(pair[0])}, {_signed(pair[1])}]"


def _significance(n: dict, past: bool) -> str:
    """What ``--alpha`` decided of a drop: its McNemar p-value (adjusted across the slices for a
    slice) against alpha, and, for a drop past the bound that noise explains, that it passes."""
    p = n.get("p")
    test = f"McNemar p {'adjusted (' + n['correction'] + ') ' if n.get('adjusted') else ''}"
    if p is None:
        said = f"; no row changed its verdict, so no test (alpha {n['alpha']:g})"
    else:
        shown = f"{p:.3g}" if p >= 0.001 else f"{p:.1e}"
        said = f"; {test}{shown} {'<=' if p <= n['alpha'] else '>'} alpha {n['alpha']:g}"
    if past and (p is None or p > n["alpha"]):
        said += ": not significant, so the drop passes"
    return said


def _nothing_why(rows: int) -> str:
    return "the input has no rows" if rows == 0 else f"every row was skipped by every metric ({count_of(rows)})"


def failure(c: Check) -> str | None:
    """The ``failures`` entry of a failed check (None for one that did not fail)."""
    return _text(c) if c.failed else None


def line(c: Check) -> str | None:
    """The verdict line of ``c`` as printed: ``PASS ...``, ``FAIL ...`` or ``SKIP ...`` (None: no line)."""
    text = _text(c)
    if text is None:
        return None
    if c.check is Kind.INTERRUPTED and any(c.counts.values()):
        text += " (reason 'interrupted')"
    elif c.check is Kind.NOTHING_JUDGED:
        text += "; check the input and the column mapping (the 'columns:' line; -q hides it)"
    elif c.check is Kind.UNUSABLE_INPUT:
        text = f"nothing could be judged: every judged row has an unusable input ({count_of(c.counts['rows'])}; the M_error column says why)"
    mark = "SKIP" if c.passed is None else ("PASS" if c.passed else "FAIL")
    return f"{mark} {text}"


def lines(checks: list[Check]) -> list[str]:
    """The verdict lines of ``checks``, in order."""
    return [text for text in map(line, checks) if text is not None]


def verdict_line(code: int) -> str:
    """The gate's closing line for exit ``code``."""
    return "gate passed" if code == EXIT_OK else f"gate failed (exit {code})"


def lines_of(gate: GateResult) -> list[str]:
    """The gate's printed lines, the verdict line last."""
    return [text for _, text in marked(gate)]


def marked(gate: GateResult, verdict: bool = True) -> list[tuple[bool | None, str]]:
    """Each printed line of ``gate`` with whether its check passed (None: not applied), the
    verdict line last (``verdict=False`` leaves it out) with whether the gate passed."""
    out = [(c.passed, text) for c in gate.checks if (text := line(c)) is not None]
    return [*out, (gate.passed, verdict_line(gate.exit_code))] if verdict else out


def failures_of(gate: GateResult) -> list[str]:
    """What each failed check of ``gate`` says (the summary JSON's ``gate.failures``)."""
    return [text for text in map(failure, gate.checks) if text is not None]


__all__ = ["failure", "failures_of", "line", "lines", "lines_of", "marked", "verdict_line"]

"""``--junit FILE``: the run as JUnit XML, as Jenkins, GitLab, Azure DevOps and GitHub's test
reporters read it (written with junitparser).

One ``testsuite`` per metric, one ``testcase`` per counted unit (``ragjudge.counting``: a row; a
trace for a trace-level metric on rows read from traces): name the row's id, read from the
column the run's mapping reads ids from (``row N`` without one), classname the metric. A row that failed is a ``failure`` whose message is the rationale
and the missing facts; an error row is an ``error``; a skipped row is ``skipped``, with the
reason. Rows left out by ``--limit`` / ``--sample`` are no test of this run (the summary counts
them apart, as ``not_sampled``): they are left out, counted in the suite's property
``not_sampled``. Each suite carries its counts and the run's time in seconds. When both sufficiency and
completeness were judged, each suite carries the diagnosis counts as properties: ``diagnosis.rows`` (rows with a diagnosis), ``diagnosis.NAME`` (rows)
and ``diagnosis.NAME.share`` (0..1, empty without such rows) per diagnosis. Properties come
first in a suite, as JUnit's schema orders them.

With the run's gate, a suite ``gate`` holds one testcase per check whose line the run prints
(``ragjudge.gate``: a pass rate, an error or skip rate, a bound that measured nothing, a
budget, regressions...), named ``METRIC: KIND`` (``run: KIND`` for the run's own): a failed
check is a ``failure`` whose message is its line (without ``FAIL``), one not applied is
``skipped``; each case's system-out is the line as printed. So a
CI test view is red exactly when the gate failed.
"""

from __future__ import annotations

import re
from typing import Any

from ragjudge.counting import first_rows, row_names, table_verdicts, unit_rows, SPAN
from ragjudge.gate import Summary
from ragjudge.http_errors import redact
from ragjudge.reports.gate_text import failure, line
from ragjudge.types import Reason
from ragjudge.io import open_atomic


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: Any) -> str:
    """A cell as text XML 1.0 can hold (control characters, such as the form feeds of text
    extracted from PDFs, become U+FFFD), with API keys redacted."""
    import pandas as pd

    if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)):
        return ""
    return _NOT_XML.sub("\ufffd", redact(str(value)))


def build(frame: Any, summary: Summary, seconds: float, comparison: dict[str, Any] | None = None, *, id_column: str | None = "id",
          levels: dict[str, str] | None = None, gate: Any = None) -> Any:
    """The ``junitparser.JUnitXml`` of a scored table ``frame`` (the columns ``score`` writes):
    per metric, a test case per counted unit (``levels``: metric -> ``SPAN`` / ``TRACE``), named
    by the ids in ``id_column``, rows left out by ``--limit`` / ``--sample`` left out; with a
    ``comparison`` (``ragjudge.compare``), a suite ``regressions`` with one failing testcase per
    regressed row; with the run's ``gate`` (``ragjudge.gate.GateResult``), a suite ``gate`` with
    one testcase per printed check."""
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

    xml = JUnitXml("ragjudge")
    names = row_names(frame, id_column)
    firsts = first_rows(frame)
    figures = _diagnosis_figures(summary)
    for metric in summary.metrics:
        suite = TestSuite(metric)
        for key, value in [*figures.items(), ("not_sampled", str(summary.metrics[metric].unsampled)), *_corrected_figures(summary.metrics[metric])]:
            suite.add_property(key, value)  # before the testcases: JUnit's schema puts properties first
        verdicts = table_verdicts(frame, metric)
        scores = frame[f"{metric}_score"].tolist()
        for index in unit_rows(frame, (levels or {}).get(metric, SPAN), firsts):
            verdict = verdicts[index]
            if verdict.reason is Reason.NOT_SAMPLED:
                continue  # no test of this run: counted in the property not_sampled
            case = TestCase(_text(names[index]), classname=_text(metric), time=0.0)
            if verdict.status == "error":
                case.result = [Error(_text(verdict.error), "error")]
            elif verdict.status == "skipped":
                case.result = [Skipped(_text(verdict.error))]
            elif verdict.status == "ok" and verdict.passed is False:
                gone = [_text(m) for m in verdict.missing]
                message = _text(verdict.rationale) + (f" Missing: {'; '.join(gone)}" if gone else "")
                case.result = [Failure(message.strip() or f"score {scores[index]:g}", "failed")]
            suite.add_testcase(case)
        xml.add_testsuite(suite)
    if comparison is not None:
        suite = TestSuite("regressions")
        for metric, numbers in comparison["metrics"].items():
            unjudged = set(numbers.get("unjudged_ids", []))
            for ident in numbers["regressed_ids"]:
                case = TestCase(_text(ident), classname=f"regressions.{metric}", time=0.0)
                now = "is not judged now (error or skipped)" if ident in unjudged else "fails now"
                case.result = [Failure(f"{metric}: passed in the baseline {comparison.get('baseline', '')}, {now}", "regressed")]
                suite.add_testcase(case)
        xml.add_testsuite(suite)
    if gate is not None:
        suite = TestSuite("gate")
        for check in gate.checks:
            text = line(check)
            if text is None:
                continue
            where = f" ({check.counts['by']} = {check.counts['slice']})" if check.counts.get("slice") is not None else ""  # a slice's own gate
            case = TestCase(f"{check.metric or 'run'}{where}: {check.check.value}", classname="gate", time=0.0)
            if check.passed is False:
                case.result = [Failure(_text(failure(check) or text), "gate")]
            elif check.passed is None:
                case.result = [Skipped(_text(text))]
            case.system_out = _text(text)
            suite.add_testcase(case)
        xml.add_testsuite(suite)
    xml.update_statistics()
    for suite in xml:
        suite.time = round(seconds, 3)  # the run's time: verdicts are judged concurrently, not one by one
    xml.time = round(seconds, 3)
    return xml


def _corrected_figures(metric: Any) -> list[tuple[str, str]]:
    """The label-corrected pass rate as properties (none without a labels column): ``corrected.pass_rate``,
    ``.low``, ``.high`` (empty without an interval), ``.labelled``, ``.agreement``."""
    found = metric.corrected()
    if found is None:
        return []
    rate = found["pass_rate"]

    def number(value: float | None) -> str:
        return "" if value is None else f"{value:.4f}"

    return [("corrected.pass_rate", number(rate.estimate)), ("corrected.low", number(rate.low)), ("corrected.high", number(rate.high)),
            ("corrected.labelled", str(rate.labelled)), ("corrected.agreement", number(rate.agreement))]


def _diagnosis_figures(summary: Summary) -> dict[str, str]:
    """The diagnosis counts as suite properties (none without a diagnosis)."""
    if summary.diagnosis is None:
        return {}
    shares = summary.diagnosis_shares()
    figures = {"diagnosis.rows": str(summary.diagnosed)}
    for name, count in summary.diagnosis.items():
        figures[f"diagnosis.{name}"] = str(count)
        figures[f"diagnosis.{name}.share"] = "" if shares[name] is None else f"{shares[name]:.4f}"
    return figures


def write(path: str, frame: Any, summary: Summary, seconds: float, comparison: dict[str, Any] | None = None, *,
          id_column: str | None = "id", levels: dict[str, str] | None = None, gate: Any = None) -> None:
    """Write the JUnit XML of ``frame`` (``build``) to ``path`` atomically."""
    import os

    xml = build(frame, summary, seconds, comparison, id_column=id_column, levels=levels, gate=gate)
    handle, tmp = open_atomic(path)
    with handle:
        xml.write(handle, pretty=True)
    if tmp is not None:
        os.replace(tmp, os.path.realpath(path))

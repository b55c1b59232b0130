"""``--junit FILE``: the run as JUnit XML, as Jenkins, GitLab, Azure DevOps and GitHub's test
reporters read it (written with junitparser).

One ``testsuite`` per metric, one ``testcase`` per counted unit (``ragjudge.counting``: a row; a
trace for a trace-level metric on rows read from traces): name the row's id, read from the
column the run's mapping reads ids from (``row N`` without one), classname the metric. A row that failed is a ``failure`` whose message is the rationale
and the missing facts; an error row is an ``error``; a skipped row is ``skipped``, with the
reason. Each suite carries its counts and the run's time in seconds. When both sufficiency and
completeness were judged, each suite carries the diagnosis counts as properties: ``diagnosis.rows`` (rows with a diagnosis), ``diagnosis.NAME`` (rows)
and ``diagnosis.NAME.share`` (0..1, empty without such rows) per diagnosis.
"""

from __future__ import annotations

import re
from typing import Any

from ragjudge.counting import SPAN, first_rows, row_names, unit_rows
from ragjudge.gate import Summary


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: Any) -> str:
    """A cell as text XML 1.0 can hold (control characters, such as the form feeds of text
    extracted from PDFs, become U+FFFD), with API keys redacted."""
    import pandas as pd

    from ragjudge.http_errors import redact

    if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)):
        return ""
    return _NOT_XML.sub("\ufffd", redact(str(value)))


def _false(value: Any) -> bool:
    """A ``passed`` cell that says no (a bool, numpy's or pandas'; not null)."""
    import pandas as pd

    return value is not None and not pd.isna(value) and not bool(value)


def build(frame: Any, summary: Summary, seconds: float, comparison: dict[str, Any] | None = None, *, id_column: str | None = "id",
          levels: dict[str, str] | None = None) -> Any:
    """The ``junitparser.JUnitXml`` of a scored table ``frame`` (the columns ``score`` writes):
    per metric, a test case per counted unit (``levels``: metric -> ``SPAN`` / ``TRACE``), named
    by the ids in ``id_column``; with a ``comparison`` (``ragjudge.compare``), a suite
    ``regressions`` with one failing testcase per regressed row."""
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

    xml = JUnitXml("ragjudge")
    names = row_names(frame, id_column)
    firsts = first_rows(frame)
    for metric in summary.metrics:
        suite = TestSuite(metric)
        statuses = frame[f"{metric}_status"].tolist()
        passed = frame[f"{metric}_passed"].tolist()
        rationale = frame[f"{metric}_rationale"].tolist()
        errors = frame[f"{metric}_error"].tolist()
        missing = frame[f"{metric}_missing"].tolist()
        scores = frame[f"{metric}_score"].tolist()
        for index in unit_rows(frame, (levels or {}).get(metric, SPAN), firsts):
            case = TestCase(_text(names[index]), classname=_text(metric), time=0.0)
            status = statuses[index]
            if status == "error":
                case.result = [Error(_text(errors[index]), "error")]
            elif status == "skipped":
                case.result = [Skipped(_text(errors[index]))]
            elif status == "ok" and _false(passed[index]):
                gone = [_text(m) for m in (missing[index] if isinstance(missing[index], list) else [])]
                message = _text(rationale[index]) + (f" Missing: {'; '.join(gone)}" if gone else "")
                case.result = [Failure(message.strip() or f"score {scores[index]:g}", "failed")]
            suite.add_testcase(case)
        xml.add_testsuite(suite)
    if comparison is not None:
        suite = TestSuite("regressions")
        for metric, figures in comparison["metrics"].items():
            for ident in figures["regressed_ids"]:
                case = TestCase(_text(ident), classname=f"regressions.{metric}", time=0.0)
                case.result = [Failure(f"{metric}: passed in the baseline {comparison.get('baseline', '')}, fails now", "regressed")]
                suite.add_testcase(case)
        xml.add_testsuite(suite)
    if summary.diagnosis is not None:
        shares = summary.diagnosis_shares()
        figures = {"diagnosis.rows": str(summary.diagnosed)}
        for name, count in summary.diagnosis.items():
            figures[f"diagnosis.{name}"] = str(count)
            figures[f"diagnosis.{name}.share"] = "" if shares[name] is None else f"{shares[name]:.4f}"
        for suite in xml:
            for key, value in figures.items():
                suite.add_property(key, value)
    xml.update_statistics()
    for suite in xml:
        suite.time = round(seconds, 3)  # the run's time: verdicts are judged concurrently, not one by one
    xml.time = round(seconds, 3)
    return xml


def write(path: str, frame: Any, summary: Summary, seconds: float, comparison: dict[str, Any] | None = None, *,
          id_column: str | None = "id", levels: dict[str, str] | None = None) -> None:
    """Write the JUnit XML of ``frame`` (``build``) to ``path`` atomically."""
    import os

    from ragjudge.io import open_atomic

    xml = build(frame, summary, seconds, comparison, id_column=id_column, levels=levels)
    handle, tmp = open_atomic(path)
    with handle:
        xml.write(handle, pretty=True)
    if tmp is not None:
        os.replace(tmp, os.path.realpath(path))

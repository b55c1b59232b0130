"""``--junit FILE``: the run as JUnit XML, as Jenkins, GitLab, Azure DevOps and GitHub's test
reporters read it (written with junitparser).

One ``testsuite`` per metric, one ``testcase`` per row: name the row's id (``row N`` without
one), classname the metric. A row that failed is a ``failure`` whose message is the rationale
and the missing facts; an error row is an ``error``; a skipped row is ``skipped``, with the
reason. Each suite carries its counts and the run's time in seconds. When both sufficiency and
completeness were judged, each suite carries the diagnosis counts as properties: ``diagnosis.rows`` (rows with a diagnosis), ``diagnosis.NAME`` (rows)
and ``diagnosis.NAME.share`` (0..1, empty without such rows) per diagnosis.
"""

from __future__ import annotations

import re
from typing import Any

from ragjudge.gate import Summary, row_name


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: Any) -> str:
    """A cell as text XML 1.0 can hold (control characters, such as the form feeds of text
    extracted from PDFs, become U+FFFD), with API keys redacted."""
    import pandas as pd

    from ragjudge.model import redact

    if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)):
        return ""
    return _NOT_XML.sub("\ufffd", redact(str(value)))


def _false(value: Any) -> bool:
    """A ``passed`` cell that says no (a bool, numpy's or pandas'; not null)."""
    import pandas as pd

    return value is not None and not pd.isna(value) and not bool(value)


def build(frame: Any, summary: Summary, seconds: float, comparison: dict[str, Any] | None = None) -> Any:
    """The ``junitparser.JUnitXml`` of a scored table ``frame`` (the columns ``score`` writes);
    with a ``comparison`` (``ragjudge.compare``), a suite ``regressions`` with one failing
    testcase per regressed row."""
    import pandas as pd
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

    xml = JUnitXml("ragjudge")
    ids = frame["id"].tolist() if "id" in frame.columns else [None] * len(frame)
    for metric in summary.metrics:
        suite = TestSuite(metric)
        statuses = frame[f"{metric}_status"].tolist()
        passed = frame[f"{metric}_passed"].tolist()
        rationale = frame[f"{metric}_rationale"].tolist()
        errors = frame[f"{metric}_error"].tolist()
        missing = frame[f"{metric}_missing"].tolist()
        scores = frame[f"{metric}_score"].tolist()
        for index, ident in enumerate(ids):
            ident = None if ident is None or (not isinstance(ident, (list, dict)) and pd.isna(ident)) else ident
            case = TestCase(_text(row_name(ident, index)), classname=_text(metric), time=0.0)
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


def write(path: str, frame: Any, summary: Summary, seconds: float, comparison: dict[str, Any] | None = None) -> None:
    """Write the JUnit XML of ``frame`` to ``path`` atomically."""
    import os

    from ragjudge.io import open_atomic

    xml = build(frame, summary, seconds, comparison)
    handle, tmp = open_atomic(path)
    with handle:
        xml.write(handle, pretty=True)
    if tmp is not None:
        os.replace(tmp, os.path.realpath(path))

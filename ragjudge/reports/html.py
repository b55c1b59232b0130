"""``ragjudge report SCORED`` and ``score --html FILE``: one self-contained HTML file a person
opens from a CI artifact or an email, with no server and no network.

- A header: the gate's verdict and lines, the judge model, the date and the input file, the
  rows and their ok / error / skipped counts, tokens and cost.
- Charts per metric, drawn by matplotlib as inline SVG: the pass rate with its 95% Wilson
  interval, overall and per ``--by`` group; the distribution of scores on a scale; the split
  by mode where the metric has one (sufficiency's grounded / reference-free); with a
  baseline, both runs side by side and the rows that regressed.
- With both sufficiency and completeness judged, the diagnosis matrix (``ragjudge.diagnosis``):
  sufficiency passed / failed by completeness passed / failed, each cell its rows and share
  among the rows with a diagnosis, and a link that filters the row table to its rows (the
  filter ``diagnosis``, also set by the address's ``#diagnosis=NAME``).
- With sufficiency, abstention and completeness judged, the abstention audit's 2 x 3 grid
  (``ragjudge.audit``): context sufficient / insufficient by answered correctly / incorrectly /
  abstained, each cell its rows and share, linked to the filter ``audit`` (``#audit=NAME``).
- A row table (rows rendered by a small inline script from JSON data, a page at a time, so
  that 10,000 rows open and filter at once): search, filters by metric, status, passed, group
  and regressed, sort by score; a row opens to show the request, the numbered passages, the
  response, the expected facts each marked supported or missing, the rationale, the removed
  instructions and the error. Every text from the data is set as text (``textContent``),
  never as HTML: a passage holding ``<script>`` shows as text and never runs.

Templates: ``templates/report.html.j2`` (Jinja2, autoescaped).
"""

from __future__ import annotations

import datetime as dt
import io
import json
from typing import Any

from ragjudge.counting import _texts, first_rows, id_column, levels_of_config, panel_cells, row_names, summarize, unit_rows, SPAN
from ragjudge.gate import check_gate, GateResult, Summary, with_regressions
from ragjudge.reports.console import corrected_lines, panel_lines, prefix_lines, probability_lines
from ragjudge.panel import PANEL
from ragjudge.reports.gate_text import marked, verdict_line
from ragjudge.compare import checks as regression_checks, compare, corrected_lines as comparison_corrected, metrics_of as found, typed
from ragjudge.compare import change_lines
from ragjudge.settings import Config
from ragjudge.records import _lookup, _text, resolve_mapping
from ragjudge.diagnosis import of_table
from ragjudge.audit import of_table as audit_of_table
from ragjudge.catalog import describe
from ragjudge.errors import InputError
from ragjudge.io import write_atomic


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or (not isinstance(value, (list, dict, tuple)) and not hasattr(value, "tolist") and pd.isna(value))


def _plain(value: Any) -> Any:
    """A cell as JSON-able data (numpy arrays and scalars as lists and numbers)."""
    if _missing(value):
        return None
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def metrics_of(frame: Any) -> list[str]:
    return found(frame)


def summary_of(frame: Any, metrics: list[str], config: Any = None, *, id_column: str | None = "id",
               levels: dict[str, str] | None = None) -> Summary:
    """A ``Summary`` rebuilt from a scored table (for ``ragjudge report`` on a file): counts,
    pass rates, tokens and cost per metric, with ``config``'s thresholds and gate settings;
    ``ragjudge.counting.summarize``, the one count every output makes."""
    return summarize(frame, config or Config(), metrics, id_column=id_column, levels=levels)


# -- charts ------------------------------------------------------------------------------------


def _svg(figure: Any) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _wilson(passed: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    interval = binomtest(passed, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


def _pass_rate_chart(labels: list[str], passed: list[int], totals: list[int], title: str, colours: list[str] | None = None) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.fonttype"] = "none"
    kept = [(label, p, n, c) for label, p, n, c in zip(labels, passed, totals, colours or ["#3b6fb6"] * len(labels)) if n]
    if not kept:
        return None
    rates = [p / n for _, p, n, _ in kept]
    intervals = [_wilson(p, n) for _, p, n, _ in kept]
    figure, axes = plt.subplots(figsize=(6.4, 0.45 * len(kept) + 1.1))
    positions = list(range(len(kept)))[::-1]
    axes.barh(positions, rates, color=[c for *_, c in kept], height=0.6)
    axes.errorbar(rates, positions, xerr=[[r - lo for r, (lo, _) in zip(rates, intervals)], [hi - r for r, (_, hi) in zip(rates, intervals)]],
                  fmt="none", ecolor="#222", capsize=3, linewidth=1)
    axes.set_yticks(positions, [f"{label} (n={n})" for label, _, n, _ in kept])
    axes.set_xlim(0, 1)
    axes.set_xlabel("pass rate, with its 95% Wilson interval")
    axes.set_title(title, fontsize=10)
    for position, rate in zip(positions, rates):
        axes.text(min(rate + 0.01, 0.92), position, f"{rate:.2f}", va="center", fontsize=8)
    return _svg(figure)


def _distribution_chart(scores: list[float], low: float, high: float, title: str) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not scores:
        return None
    figure, axes = plt.subplots(figsize=(6.4, 2.4))
    if all(float(s).is_integer() for s in scores) and high - low <= 20:
        values = list(range(int(low), int(high) + 1))
        axes.bar(values, [sum(1 for s in scores if s == v) for v in values], color="#3b6fb6")
        axes.set_xticks(values)
    else:
        axes.hist(scores, bins=min(20, max(5, len(set(scores)))), range=(low, high), color="#3b6fb6")
    from matplotlib.ticker import MaxNLocator

    axes.yaxis.set_major_locator(MaxNLocator(integer=True))  # rows are counted whole (fractional scores drew 0.5 rows)
    axes.set_xlabel("score")
    axes.set_ylabel("rows")
    axes.set_title(title, fontsize=10)
    return _svg(figure)


def _probability_chart(yes: list[float], no: list[float], title: str) -> str | None:
    """A histogram of the verdicts' probabilities (0..1, 10 bins of 0.1), stacked by verdict:
    the passing rows' and the failing rows'; None without a probability."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if not yes and not no:
        return None
    figure, axes = plt.subplots(figsize=(6.4, 2.4))
    axes.hist([yes, no], bins=10, range=(0.0, 1.0), stacked=True, color=["#3b6fb6", "#c0392b"],
              label=[f"pass ({len(yes)})", f"fail ({len(no)})"])
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlim(0.0, 1.0)
    axes.set_xlabel("probability")
    axes.set_ylabel("rows")
    axes.legend(fontsize=8)
    axes.set_title(title, fontsize=10)
    return _svg(figure)


def _counts(statuses: list[Any], passed: list[Any], rows: list[int]) -> tuple[int, int]:
    ok = [i for i in rows if statuses[i] == "ok"]
    return sum(1 for i in ok if not _missing(passed[i]) and bool(passed[i])), len(ok)


def charts(frame: Any, metrics: list[str], by: str | None = None, baseline: Any = None, comparison: dict[str, Any] | None = None,
           scales: dict[str, tuple[float, float]] | None = None, levels: dict[str, str] | None = None) -> dict[str, list[str]]:
    """metric -> its charts (inline SVG), over each metric's counted units (``levels``: a
    trace-level metric counts each trace once, ``ragjudge.counting.unit_rows``)."""
    out: dict[str, list[str]] = {}
    firsts = first_rows(frame)
    for metric in metrics:
        level = (levels or {}).get(metric, SPAN)
        everything = unit_rows(frame, level, firsts)
        statuses, passed = frame[f"{metric}_status"].tolist(), frame[f"{metric}_passed"].tolist()
        found: list[str | None] = []
        labels, passes, totals, colours = ["all rows"], [], [], ["#3b6fb6"]
        p, n = _counts(statuses, passed, everything)
        passes.append(p)
        totals.append(n)
        if baseline is not None and f"{metric}_status" in baseline.columns:
            bp, bn = _counts(baseline[f"{metric}_status"].tolist(), baseline[f"{metric}_passed"].tolist(), unit_rows(baseline, level))
            labels.insert(0, "baseline")
            passes.insert(0, bp)
            totals.insert(0, bn)
            colours.insert(0, "#9aa5b1")
        if by and by in frame.columns:
            groups = [str(v) for v in frame[by].tolist()]
            for group in sorted({groups[i] for i in everything}):
                gp, gn = _counts(statuses, passed, [i for i in everything if groups[i] == group])
                labels.append(f"{by} = {group}")
                passes.append(gp)
                totals.append(gn)
                colours.append("#6c9bd2")
        regressed = f"; {comparison['metrics'][metric]['regressed']} regressed" if comparison and metric in comparison.get("metrics", {}) else ""
        found.append(_pass_rate_chart(labels, passes, totals, f"{metric}: pass rate{regressed}", colours))
        low, high = (scales or {}).get(metric, (0.0, 1.0))
        all_scores = frame[f"{metric}_score"].tolist()
        scores = [float(all_scores[i]) for i in everything if statuses[i] == "ok" and not _missing(all_scores[i])]
        if high - low > 1:
            found.append(_distribution_chart(scores, low, high, f"{metric}: scores of ok rows"))
        if f"{metric}_probability" in frame.columns:  # P(yes) / P(pass) of the ok rows, by verdict
            probabilities = frame[f"{metric}_probability"].tolist()
            held = [i for i in everything if statuses[i] == "ok" and not _missing(probabilities[i])]
            yes = [float(probabilities[i]) for i in held if not _missing(passed[i]) and bool(passed[i])]
            no = [float(probabilities[i]) for i in held if _missing(passed[i]) or not bool(passed[i])]
            what = "P(yes)" if high - low <= 1 else "P(pass)"
            found.append(_probability_chart(yes, no, f"{metric}: {what} by verdict"))
        mode = f"{metric}_mode"
        if mode in frame.columns:
            modes = [None if _missing(v) else str(v) for v in frame[mode].tolist()]
            kinds = sorted({m for m in modes if m})
            if kinds:
                mode_passed, mode_totals = zip(*(_counts(statuses, passed, [i for i in everything if modes[i] == kind]) for kind in kinds))
                found.append(_pass_rate_chart(kinds, list(mode_passed), list(mode_totals), f"{metric}: by mode"))
        out[metric] = [svg for svg in found if svg]
    return out


# -- rows ---------------------------------------------------------------------------------------


def rows_data(frame: Any, metrics: list[str], mapping: Any, by: str | None = None, comparison: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The table's rows as data for the page's script, each named by its mapped id; with a panel
    of judges, each metric's ``panel`` (every member's name, status, score, passed, error) and
    ``split`` (the members that answered disagree: the report's "judges disagree" filter)."""
    regressed = {metric: set(figures["regressed_ids"]) for metric, figures in (comparison or {}).get("metrics", {}).items()}

    diagnosed = of_table(frame)
    audited = audit_of_table(frame)
    panels = {metric: panel_cells(frame, metric) for metric in metrics}
    records = frame.to_dict("records")
    names = row_names(frame, id_column(mapping))
    out = []
    for i, row in enumerate(records):
        def field(name: str, row: dict[str, Any] = row) -> Any:
            path = mapping.paths.get(name) if mapping is not None else name
            return _lookup(row, path) if path else None

        name = names[i]
        facts = _texts(field("expected_facts")) or ([_text(field("expected_response"))] if _text(field("expected_response")) else [])
        entry = {
            "d": None if diagnosed is None else diagnosed[i],
            "a": None if audited is None else audited[i],
            "n": i + 1, "id": name, "group": None if not by or _missing(row.get(by)) else str(row.get(by)),
            "request": _text(field("request")), "passages": _texts(field("context")), "response": _text(field("response")),
            "facts": facts, "removed": _texts(row.get("removed_instructions")), "m": {},
        }
        for metric in metrics:
            missing = _texts(row.get(f"{metric}_missing"))
            entry["m"][metric] = {
                "status": _plain(row.get(f"{metric}_status")), "score": _plain(row.get(f"{metric}_score")), "passed": _plain(row.get(f"{metric}_passed")),
                "rationale": _plain(row.get(f"{metric}_rationale")), "error": _plain(row.get(f"{metric}_error")), "missing": missing,
                "mode": _plain(row.get(f"{metric}_mode")), "regressed": name in regressed.get(metric, set()),
            }
            cell = (panels[metric] or [None] * len(records))[i]
            if cell is not None:  # a panel of judges: each member's verdict, and whether those that answered disagree
                members = cell[PANEL]["members"]
                entry["m"][metric]["panel"] = [{k: _plain(member[k]) for k in ("name", "status", "score", "passed", "error")}
                                               for member in members]
                entry["m"][metric]["split"] = len({bool(m["passed"]) for m in members if m["status"] == "ok"}) > 1
        out.append(entry)
    return out


def _matrix(summary: Summary) -> dict[str, Any] | None:
    """The diagnosis matrix's cells (None: not both metrics judged): name -> rows and share."""
    if summary.diagnosis is None:
        return None
    shares = summary.diagnosis_shares()
    return {"rows": summary.diagnosed,
            **{name: {"count": count, "share": "-" if shares[name] is None else f"{shares[name]:.2f}"} for name, count in summary.diagnosis.items()}}


def _audit_grid(summary: Summary) -> dict[str, Any] | None:
    """The abstention audit's 2 x 3 grid (None: no audit): the audited rows, and per cell its rows
    and share of them (``ragjudge.audit``)."""
    audit = summary.audit
    if audit is None:
        return None
    n = audit.rows
    return {"rows": n, **{name: {"count": count, "share": f"{count / n:.2f}" if n else "-"} for name, count in audit.counts.items()}}


def _json_for_script(data: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element: no ``<``, ``>`` or ``&``
    of the data can end or open an element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def counts(summary: Summary) -> dict[str, dict[str, Any]]:
    """Per metric, the counts the report shows (the data block's ``counts``): rows, ok, error,
    skipped, passed, pass rate and mean score, from the run's ``summary``."""
    return {name: {"rows": m.rows, "ok": m.ok, "error": m.error, "skipped": m.skipped, "passed": m.passed, "pass_rate": m.pass_rate,
                   "mean_score": m.mean_score,
                   **({"corrected": {k: v.to_dict() for k, v in found.items()}} if (found := m.corrected()) is not None else {})}
            for name, m in summary.metrics.items()}


def build(frame: Any, summary: Summary, gate: GateResult, *, title: str | None = None, source: str | None = None, by: str | None = None,
          baseline: Any = None, comparison: dict[str, Any] | None = None, mapping: Any = None,
          scales: dict[str, tuple[float, float]] | None = None, when: dt.datetime | None = None,
          levels: dict[str, str] | None = None, notes: list[str] | None = None) -> str:
    """The report of the scored ``frame`` (a pandas DataFrame) as one HTML document; its figures
    are ``summary``'s, its charts count each metric's units (``levels``); ``notes``: lines shown
    under the gate (where its bounds came from)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    metrics = list(summary.metrics)
    env = Environment(loader=PackageLoader("ragjudge.reports", "templates"), autoescape=select_autoescape(["html", "j2"]))
    usage = summary.usage
    return env.get_template("report.html.j2").render(
        title=title or f"ragjudge report{f': {source}' if source else ''}",
        verdict=verdict_line(gate.exit_code),
        passed=gate.passed,
        gate_lines=[{"text": text, "class": "" if ok is None else ("pass" if ok else "fail")} for ok, text in marked(gate, verdict=False)],
        judge_model=summary.judge_model, source=source, when=(when or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        rows=summary.rows,
        metrics=[{"name": name, "ok": m.ok, "error": m.error, "skipped": m.skipped, "pass_rate": "-" if m.pass_rate is None else f"{m.pass_rate:.2f}",
                  "mean_score": "-" if m.mean_score is None else f"{m.mean_score:.2f}", "threshold": f"{m.threshold:g}"}
                 for name, m in summary.metrics.items()],
        tokens=f"{usage.prompt_tokens} in / {usage.completion_tokens} out",
        cost="unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}",
        charts=charts(frame, metrics, by, baseline, comparison, scales, levels),
        by=by, has_baseline=comparison is not None,
        diagnosis=_matrix(summary),
        audit=_audit_grid(summary),
        corrected=corrected_lines(summary) + [f"{metric} against the baseline:{line[1:]}" for metric, figures in (comparison or {}).get("metrics", {}).items()
                                               for line in comparison_corrected(figures.get("corrected"))],
        panel=panel_lines(summary),
        prefixes=prefix_lines(summary),
        probabilities=probability_lines(summary),
        regressions={metric: figures["regressed"] for metric, figures in (comparison or {}).get("metrics", {}).items()},
        changes=change_lines(comparison) if comparison else [],
        warnings=[f"warning: against the baseline: {w}" for w in (comparison or {}).get("warnings", [])] + list(notes or []),
        data=_json_for_script({"metrics": metrics, "counts": counts(summary), "rows": rows_data(frame, metrics, mapping, by, comparison)}),
    )


def write(path: str, text: str) -> None:
    """Write the report to ``path`` atomically."""
    write_atomic(path, text)


def from_table(frame: Any, config: Any, *, source: str | None = None, by: str | None = None, baseline: Any = None, title: str | None = None,
               summary: Summary | None = None, gate: GateResult | None = None, mapping: Any = None, said: list[str] | None = None,
               metrics: list[str] | None = None, regression: dict[str, Any] | None = None) -> str:
    """The report of a scored table read back (``ragjudge report``), or of a run just made
    (``score --html``, which passes its own ``summary``, ``gate`` and ``mapping``). Raises
    ``InputError`` for a table with no scored metric. ``said``: gets the comparison's warnings
    (rows matched by position), which the report shows too, for the command to print.
    ``metrics``: the ones to report (default: every metric the table holds; ``ragjudge report``
    passes those its run judged, where the table records them). ``regression``: the regression
    gates (``max_regressions``, ``max_drop``) to apply against ``baseline``, as ``score
    --baseline`` applied them (``ragjudge report`` passes those the table records)."""
    if len(frame) == 0:
        raise InputError("the table has no rows; give a table written by ragjudge score")
    frame = typed(frame, source or "the table", scores_required=True)  # a table read back from CSV holds "False" as text
    metrics = list(summary.metrics) if summary is not None else [m for m in metrics_of(frame) if metrics is None or m in metrics]
    if not metrics:
        raise InputError("the table holds no scored metric (no M_status and M_passed columns); give a table written by ragjudge score")
    if by and by not in frame.columns:
        raise InputError(f"--by {by}: the table has no such column; it has {', '.join(map(str, frame.columns))}")

    if mapping is None:
        mapping = resolve_mapping([str(c) for c in frame.columns], frame.head(50).to_dict("records"), config.columns)
    units = levels_of_config(config, metrics)
    if summary is None:
        summary = summary_of(frame, metrics, config, id_column=id_column(mapping), levels=units)
        gate = check_gate(summary)
    comparison = None
    if baseline is not None:
        comparison = compare(baseline, frame, metrics=[m for m in metrics if f"{m}_status" in baseline.columns] or None,
                             names=("the baseline table", source or "the table"), id_column=id_column(mapping), levels=units, config=config)
        if said is not None:
            said.extend(f"warning: {w}" for w in comparison["warnings"])
        if regression and gate is not None:
            gate = with_regressions(gate, regression_checks(comparison, regression.get("max_regressions"), regression.get("max_drop"),
                                                                regression.get("alpha")))
    scales = {item["name"]: tuple(item["scale"]) for item in describe(config)}
    assert gate is not None
    return build(frame, summary, gate, title=title, source=source, by=by, baseline=baseline, comparison=comparison, mapping=mapping,
                 scales=scales, levels=units, notes=[line for line in (said or []) if line.startswith("note: ")])

"""One way to count a scored run: which rows are a metric's counted units, what each row is
called, and a scored table's ``Summary``.

Every output counts through this module, so that none can disagree with another:

- the run's own summary (``Scorer``: each chunk's rows, as they are judged) adds each row's
  verdicts with ``count_row``;
- a scored table (``ragjudge report``, ``--html``, ``--junit``, ``compare`` and ``--baseline``,
  ``agreement``) is counted by ``summarize``, which reads each row's verdicts back from the
  table's columns and adds them with the same ``count_row``.

The counted unit of a metric is a row, except for a trace-level metric (one that reads no
retrieved context, such as completeness) on rows read from traces: such a metric has one
verdict per trace, copied onto the trace's other rows, and counts once, on the trace's first
row (``first_rows``). ``unit_rows`` gives the positions counted, for the outputs that list
units (JUnit's test cases, ``compare``'s pairs).

Row names (``row_name``): the row's id, from the column the mapping reads the id from
(``--map id=qid``), else ``row N`` counting from 1.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

from ragjudge.gate import MetricSummary, Summary, row_name
from ragjudge.types import SPAN, TRACE, Reason, Usage, Verdict, level_of
from ragjudge.records import ALIASES, _as_list, _lookup
from ragjudge.config import METRICS
from ragjudge.diagnosis import counts, of_table
from ragjudge import audit as _audit
from ragjudge.panel import PANEL
from ragjudge.corrected_rates import blank, label_pass
from ragjudge.errors import InputError
from ragjudge.prefixes import passage_tokens
from ragjudge.ranking import PER_PASSAGE_K, grades, ks_of, label_pass_at
from ragjudge.metrics import find as find_metric

TRACE_ID, TRACE_FIRST = "trace_id", "trace_first_row"  # the columns a trace source writes (``ragjudge.traces.spans``)

__all__ = ["SPAN", "TRACE", "IdWatch", "check_labels", "count_row", "first_of_trace", "label_cells", "metric_summary", "first_rows", "id_column", "level_of", "levels_of_config", "row_ids", "row_names", "summarize",
           "panel_cells", "table_verdicts", "unit_rows"]


def first_of_trace(flag: Any, trace_id: Any, previous: Any) -> bool:
    """Whether a row read from a trace counts as its trace's first row: the reader marked it so
    (``flag``; a missing mark counts as first), or the row before it belongs to another trace
    (``previous``: that row's trace id; the trace's first row was left out of the input)."""
    return _missing(flag) or bool(flag) or trace_id != previous


def first_rows(frame: Any) -> list[bool] | None:
    """Per row of a scored table, whether it is its trace's first row (``first_of_trace``);
    None for a table not read from traces (every row is a unit)."""
    if TRACE_ID not in frame.columns or TRACE_FIRST not in frame.columns:
        return None
    out = []
    previous: Any = object()
    for trace_id, flag in zip(frame[TRACE_ID].tolist(), frame[TRACE_FIRST].tolist()):
        trace_id = str(trace_id)
        out.append(first_of_trace(flag, trace_id, previous))
        previous = trace_id
    return out


def unit_rows(frame: Any, level: str, firsts: list[bool] | None = None) -> list[int]:
    """The positions (from 0) of ``frame``'s rows that are counted units of a metric of ``level``
    (``SPAN`` or ``TRACE``): every row, except that a trace-level metric counts a trace once."""
    firsts = first_rows(frame) if firsts is None else firsts
    if level != TRACE or firsts is None:
        return list(range(len(frame)))
    return [i for i, first in enumerate(firsts) if first]


def has_path(frame: Any, path: str) -> bool:
    """Whether ``frame`` holds the column, or dotted path (``meta.qid``: the key ``qid`` of the
    column ``meta``), ``path`` names, as ``row_ids`` reads it."""
    columns = {str(c) for c in frame.columns}
    return path in columns or ("." in path and path.split(".", 1)[0] in columns)


def row_ids(frame: Any, id_column: str | None = "id") -> list[Any]:
    """The id of each row of ``frame`` (None where it has none): read from ``id_column`` (the
    column, or dotted path, the mapping reads the id from; None: the table has no id)."""
    if id_column is None:
        return [None] * len(frame)
    if id_column in frame.columns:
        values = frame[id_column].tolist()
    elif "." in id_column and id_column.split(".", 1)[0] in frame.columns:
        values = [_lookup(row, id_column) for row in frame.to_dict("records")]
    else:
        return [None] * len(frame)
    return [None if _missing(value) else value for value in values]


def row_names(frame: Any, id_column: str | None = "id") -> list[str]:
    """How each row of ``frame`` is named in every output: its id, else ``row N`` (from 1)."""
    return [row_name(ident, i) for i, ident in enumerate(row_ids(frame, id_column))]


def count_row(summary: Summary, ident: Any, index: int, verdicts: Sequence[Verdict], levels: Sequence[str],
              first: bool | None, labels: Sequence[Any] | None = None) -> None:
    """Add one row's ``verdicts`` (one per metric of ``summary``, in its order; ``levels`` theirs)
    to ``summary``: ``ident`` and ``index`` (its position in the input, from 0) name it; ``first``:
    whether a row read from a trace is its trace's first row (None: not from a trace). A
    trace-level verdict counts on the trace's first row only. Provider calls are added for every
    row (a copied verdict carries none). ``labels``: per metric, the row's cell of its labels
    column (None: no label, or no column), counted against the verdict (``MetricSummary.add_label``)."""
    for position, (metric, verdict, level) in enumerate(zip(summary.metrics.values(), verdicts, levels)):
        if first is False and level == TRACE:
            continue
        metric.add(verdict, ident, index)
        metric.add_label(verdict, None if labels is None else labels[position])
        summary.provider_calls += verdict.usage.calls


def metric_summary(config: Any, metric: str, threshold: float, prompt_version: str = "") -> MetricSummary:
    """An empty ``MetricSummary`` of ``metric`` with ``config``'s gate bounds and labels column
    (``config``: a ``ragjudge.settings.Config``; ``threshold``: the metric's pass mark)."""
    scale = _scale(config, metric)
    return MetricSummary(metric, threshold, min_pass_rate=config.min_pass_rate(metric), max_error_rate=config.gate.error_ceiling(metric),
                         max_skip_rate=config.gate.skip_ceiling(metric), prompt_version=prompt_version, bounds=config.bounds_set(metric),
                         label_column=config.labels.get(metric), binary=scale == (0.0, 1.0), label_scale=scale,
                         label_threshold=_label_threshold(config, metric), gate_on=config.gate.gates_on(metric),
                         few_labels=config.gate.few_labels, rank_ks=rank_ks(config, metric), label_k=passage_k(config, metric))


def per_passage(metric: str, config: Any = None) -> bool:
    """Whether a cell of ``metric``'s labels column holds one relevance grade per retrieved passage
    (``Metric.labels``, passage_relevance's; a YAML judge of ``config``'s ``judges:`` with ``per:
    passage``), not a label of the row's verdict."""
    found = find_metric(metric)
    if found is not None:
        return found.labels == "passage"
    for item in getattr(config, "judges", None) or []:
        name, per = (item.get("name"), item.get("per")) if isinstance(item, dict) else (getattr(item, "name", None), getattr(item, "per", None))
        if name == metric:
            return per == "passage"
    return False


def passage_k(config: Any, metric: str) -> int:
    """The k of a per-passage metric's row score, precision@k, that its per-passage labels are
    read at too (a row's label passes as its verdict does, ``ranking.label_pass_at``):
    ``passage_relevance.k``, or a YAML judge's ``k:`` (default ``PER_PASSAGE_K``)."""
    if find_metric(metric) is not None:
        return int(getattr(getattr(config, metric, None), "k", None) or PER_PASSAGE_K)
    definition = getattr(config, "definition", None)
    found = definition(metric) if definition is not None else None
    return int(getattr(found, "k", None) or PER_PASSAGE_K)


def rank_ks(config: Any, metric: str) -> tuple[int, ...]:
    """The ks of nDCG@k and recall@k (``passage_relevance.at_k``) when ``metric`` is passage_relevance
    (or a YAML judge per passage, which takes the run's ``passage_relevance.at_k``) with a labels column (per-passage labels, ``ragjudge.ranking``); () otherwise."""
    if not per_passage(metric, config) or not (getattr(config, "labels", None) or {}).get(metric):
        return ()
    return tuple(ks_of(getattr(config, metric if find_metric(metric) is not None else "passage_relevance", None)))


def label_cells(frame: Any, config: Any, metrics: Sequence[str]) -> list[list[Any]] | None:
    """Per row of ``frame``, per metric of ``metrics``, its cell of the metric's labels column
    (``config.labels``; a dotted path reaches into a column), None where it has none; None
    when no metric has a labels column."""
    columns = {metric: config.labels.get(metric) for metric in metrics}
    if not any(columns.values()):
        return None
    cells = {metric: row_ids(frame, column) if column else [None] * len(frame) for metric, column in columns.items()}
    return [[cells[metric][i] for metric in metrics] for i in range(len(frame))]


def label_passes(frame: Any, config: Any, metrics: Sequence[str]) -> dict[str, list[bool | None]]:
    """Per metric of ``metrics`` with a labels column (``config.labels``), each row's label as
    passed (True) / failed (False) (``calibration.label_pass``: yes/no, or a rating at the metric's
    label threshold), None where the row has no label: what the abstention audit takes in place of
    the judge's verdict (``ragjudge.audit.of_frame``)."""
    out: dict[str, list[bool | None]] = {}
    for metric in metrics:
        column = (getattr(config, "labels", None) or {}).get(metric)
        if not column or not has_path(frame, column):
            continue
        if per_passage(metric, config):  # grades per passage: the row passes as the judge's row does (ranking.label_pass_at)
            k, mark = passage_k(config, metric), config.threshold(metric)
            passes = [label_pass_at(cell, k, mark) for cell in row_ids(frame, column)]
            out[metric] = [None if p is None else p == 1.0 for p in passes]
            continue
        low, high = (float(v) for v in config.scale(metric))
        binary, mark = (low, high) == (0.0, 1.0), config.label_threshold(metric)
        passes = [label_pass(cell, binary, mark, (low, high)) for cell in row_ids(frame, column)]
        out[metric] = [None if p is None else p == 1.0 for p in passes]
    return out


def _label_threshold(config: Any, metric: str) -> float | None:
    """Where ``metric``'s rating labels pass (``Config.label_threshold``); None for a config that cannot say."""
    try:
        return config.label_threshold(metric)
    except (AttributeError, KeyError):
        return None


def _scale(config: Any, metric: str) -> tuple[float, float]:
    try:
        low, high = config.scale(metric)
    except KeyError:  # a metric the config does not define: a yes/no metric as far as labels go
        return (0.0, 1.0)
    return (float(low), float(high))


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (list, dict, tuple)) or hasattr(value, "tolist"):
        return False
    # pandas not imported yet, or being imported by another thread (a JSON Lines run's first rows): a value can be
    # NaN, not pandas' or numpy's NA
    isna = getattr(sys.modules.get("pandas"), "isna", None)
    if isna is None:
        return isinstance(value, float) and math.isnan(value)
    try:
        return bool(isna(value))
    except (TypeError, ValueError):
        return False


def _texts(value: Any) -> list[str]:
    """A list-ish cell (list, array, JSON text, one string) as a list of strings."""
    import json

    if _missing(value):
        return []
    items = _as_list(value)
    if items is None:
        return [str(value)]
    out = []
    for item in items:
        if isinstance(item, dict):
            item = next((item[k] for k in ("content", "page_content", "text") if not _missing(item.get(k))), json.dumps(item, default=str))
        if not _missing(item):
            out.append(str(item))
    return out


def table_verdicts(frame: Any, metric: str) -> list[Verdict]:
    """Each row's verdict of ``metric``, read back from a scored table's columns (``M_status``,
    ``M_score``, ``M_passed``, ``M_rationale``, ``M_error``, ``M_missing``, ``M_cached``, tokens,
    ``M_cost_usd`` and ``M_probability``; the ``Reason`` from the status and error, ``Reason.read``; with a panel of
    judges, its members' results from ``M_panel_NAME_*`` and ``M_panel_agreement``, in ``details``)."""
    panels = panel_cells(frame, metric)
    names = ("status", "score", "passed", "rationale", "error", "missing", "cached", "prompt_tokens", "completion_tokens", "cost_usd",
             "probability")
    columns = {c: frame[f"{metric}_{c}"].tolist() if f"{metric}_{c}" in frame.columns else [None] * len(frame) for c in names}
    out = []
    for i in range(len(frame)):
        def get(name: str, i: int = i) -> Any:
            value = columns[name][i]
            return None if _missing(value) else value

        cost, prompt = get("cost_usd"), get("prompt_tokens")
        usage = Usage(int(prompt or 0), int(get("completion_tokens") or 0), None if cost is None and prompt else float(cost or 0.0))
        passed = get("passed")
        out.append(Verdict(metric=metric, status=get("status") or "skipped", score=get("score"),
                           passed=None if passed is None else bool(passed), rationale=get("rationale"), error=get("error"),
                           missing=_texts(get("missing")), cached=get("cached"), usage=usage,
                           reason=Reason.read(get("status"), get("error")), details=panels[i] if panels else None,
                           probability=None if get("probability") is None else float(get("probability"))))
    return out


def prefix_figures(frame: Any, metric: str, config: Any = None) -> list[dict[str, Any] | None] | None:
    """Per row of a scored table, ``metric``'s figures as ``sufficient_k`` keeps them in a verdict's
    ``details["prefixes"]`` (``ragjudge.prefixes.PrefixCounts.add``), read back from its columns
    ``M_k``, ``M_passages``, ``M_monotone`` and ``M_tokens_saved``: None on a row without them (not
    judged ok). Each passage's tokens are counted again from the table's context column (``config``'s
    ``columns.context``, else ``context`` or an alias of it), as the judge counted them; where that
    column is not there, or its passages are not the row's n whose tokens after k make
    ``M_tokens_saved``, they are None (the summary then counts that row's k, not its tokens).
    None for a table without those columns (another metric)."""
    if not all(f"{metric}_{name}" in frame.columns for name in ("k", "passages", "never")):
        return None
    def cells(name: str) -> list[Any]:
        column = f"{metric}_{name}"
        return [None if _missing(v) else v for v in frame[column].tolist()] if column in frame.columns else [None] * len(frame)

    ks, ns, monotone, saved = cells("k"), cells("passages"), cells("monotone"), cells("tokens_saved")
    mapped = getattr(getattr(config, "columns", None), "context", None)
    column = next((c for c in ([mapped] if mapped else ["context", *ALIASES["context"]]) if has_path(frame, c)), None)
    contexts = row_ids(frame, column) if column else [None] * len(frame)
    out: list[dict[str, Any] | None] = []
    for k, n, flag, tail, context in zip(ks, ns, monotone, saved, contexts):
        if n is None:
            out.append(None)
            continue
        k, n = (None if k is None else int(k)), int(n)
        tokens: list[int] | None = passage_tokens(_texts(context)) if column else None
        if tokens is not None and (len(tokens) != n or (k is not None and tail is not None and sum(tokens[k:]) != int(tail))):
            tokens = None
        out.append({"k": k, "n": n, "monotone": _passed(flag), "passage_tokens": tokens})
    return out


def pair_cells(frame: Any, metric: str) -> list[dict[str, Any] | None] | None:
    """Per row of a scored table, ``metric``'s orders as a pairwise verdict's ``details["pairwise"]``
    keeps them (``ragjudge.pairwise.PairwiseCounts.add``), read back from its columns ``M_order_ab``,
    ``M_order_ba`` and ``M_inconsistent`` (a CSV's text read as ``_passed`` reads it); None on a row
    without them; None for a table without those columns (another metric)."""
    if not all(f"{metric}_{name}" in frame.columns for name in ("order_ab", "order_ba", "inconsistent")):
        return None
    cells = {name: [None if _missing(v) else v for v in frame[f"{metric}_{name}"].tolist()] for name in ("order_ab", "order_ba", "inconsistent")}
    return [None if flag is None else {"ab": ab, "ba": ba, "inconsistent": _passed(flag)}
            for ab, ba, flag in zip(cells["order_ab"], cells["order_ba"], cells["inconsistent"])]


def _passed(value: Any) -> bool | None:
    """A pass cell read back: True, False or None; the text a CSV holds ("True", "false") read as such."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def panel_cells(frame: Any, metric: str) -> list[dict[str, Any] | None] | None:
    """Per row of a scored table, ``metric``'s panel as ``ragjudge.judges.panel_rule.decide`` keeps it in a
    verdict's ``details`` (``{"panel": {"members": [...], "agreement": ...}}``), read back from the
    columns ``M_panel_NAME_{score,passed,status,error,cost_usd}`` and ``M_panel_agreement``; None
    on a row no member judged; None for a table without a panel."""
    import re

    pattern = re.compile(rf"{re.escape(metric)}_panel_(.+)_status")
    names = [m.group(1) for c in frame.columns if (m := pattern.fullmatch(str(c)))]
    if not names:
        return None
    judge = str(frame["judge_model"].iloc[0]) if "judge_model" in frame.columns and len(frame) else ""
    models = judge.removeprefix("panel: ").split(", ") if judge.startswith("panel: ") else []
    models = models if len(models) == len(names) else [""] * len(names)
    cells = {(name, part): frame[f"{metric}_panel_{name}_{part}"].tolist() if f"{metric}_panel_{name}_{part}" in frame.columns
             else [None] * len(frame) for name in names for part in ("score", "passed", "status", "error", "cost_usd")}
    agreement = frame[f"{metric}_panel_agreement"].tolist() if f"{metric}_panel_agreement" in frame.columns else [None] * len(frame)
    out: list[dict[str, Any] | None] = []
    for i in range(len(frame)):
        def get(name: str, part: str, i: int = i) -> Any:
            value = cells[(name, part)][i]
            return None if _missing(value) else value

        if all(get(name, "status") is None for name in names):
            out.append(None)
            continue
        members = [{"name": name, "model": model, "status": get(name, "status"), "score": get(name, "score"),
                    "passed": _passed(get(name, "passed")), "error": get(name, "error"),
                    "cost_usd": get(name, "cost_usd"), "calls": 0} for name, model in zip(names, models)]
        out.append({PANEL: {"members": members, "agreement": None if _missing(agreement[i]) else float(agreement[i])}})
    return out


def summarize(frame: Any, config: Any, metrics: Sequence[str], *, id_column: str | None = "id", levels: dict[str, str] | None = None) -> Summary:
    """The ``Summary`` of a scored table ``frame`` (as ``ragjudge score`` wrote it; typed again by
    ``ragjudge.compare.typed`` when read back from CSV): per metric of ``metrics``, its counted
    units (``unit_rows``) added with ``count_row``, with ``config``'s thresholds and gate bounds
    (``config``: a ``ragjudge.settings.Config``; a metric it does not know keeps the lowest
    passing score found as its threshold). ``id_column``: where the row ids are (``row_ids``);
    ``levels``: metric -> ``SPAN`` / ``TRACE`` (default: from ``config``)."""
    summary = Summary(rows=len(frame), judge_model=str(frame["judge_model"].iloc[0]) if "judge_model" in frame.columns and len(frame) else "")
    levels = {m: (levels or {}).get(m) or _level(config, m) for m in metrics}
    thresholds = {}
    for metric in metrics:
        known = metric in config.thresholds or metric in METRICS or config.definition(metric) is not None
        thresholds[metric] = config.threshold(metric) if known else None
        summary.metrics[metric] = metric_summary(config, metric, float("nan") if thresholds[metric] is None else thresholds[metric])
    ids = row_ids(frame, id_column)
    firsts = first_rows(frame)
    columns = [table_verdicts(frame, metric) for metric in metrics]
    for metric, column in zip(metrics, columns):  # sufficient_k: the k distribution, as the run counted it (ragjudge.prefixes)
        for verdict, figures in zip(column, prefix_figures(frame, metric, config) or []):
            if figures is not None and verdict.status == "ok":
                verdict.details = {**(verdict.details or {}), "prefixes": figures}
        for verdict, pair in zip(column, pair_cells(frame, metric) or []):  # pairwise: the orders, as the run counted them
            if pair is not None and verdict.status == "ok":
                verdict.details = {**(verdict.details or {}), "pairwise": pair}
    order = [levels[m] for m in metrics]
    labels = label_cells(frame, config, list(metrics))
    for i in range(len(frame)):
        count_row(summary, ids[i], i, [column[i] for column in columns], order, None if firsts is None else firsts[i],
                  None if labels is None else labels[i])
    for metric in metrics:
        if thresholds[metric] is None:  # a metric defined elsewhere: its threshold as the table shows it
            passing = [v.score for v in (c for c in columns[list(metrics).index(metric)]) if v.passed and v.score is not None]
            summary.metrics[metric].threshold = min((float(s) for s in passing), default=0.0)

    found = of_table(frame)
    summary.diagnosis = None if found is None else counts(found)
    summary.max_diagnosis = dict(config.gate.max_diagnosis)
    summary.allow_undiagnosed = bool({"diagnosis", "*"} & set(config.gate.allow_unjudged))
    labels = label_passes(frame, config, _audit.METRICS)
    cells = _audit.of_table(frame, labels)
    if cells is not None or config.gate.max_rate:
        summary.audit = _audit.of_config(config)
        if cells is not None:
            summary.audit.add(cells, _audit.scores_of(frame, config.gate.app_confidence))
            _audit.add_labelled(summary.audit, frame, None, labels, cells)
    return summary


def levels_of_config(config: Any, metrics: Sequence[str]) -> dict[str, str]:
    """Each metric's level (``SPAN`` / ``TRACE``) under ``config`` (``Config.level``; a metric it
    does not define is judged per row: ``SPAN``)."""
    return {metric: _level(config, metric) for metric in metrics}


def id_column(mapping: Any) -> str | None:
    """The column (or dotted path) a run's mapping reads the row ids from: ``--map id=qid`` makes
    it ``qid``; None when the mapping has no id; ``id`` without a mapping."""
    return "id" if mapping is None else mapping.paths.get("id")


class IdWatch:
    """Whether the ids a run names its rows by can name them: repeated ids, or lists and objects
    where ids should be, seen chunk by chunk (``add``), said once at the end (``note``). Rows are
    named by their id in every output (JUnit test names, the reports' rows), and ``--baseline``
    and ``compare`` match rows by it. Remembers at most ``LIMIT`` ids (a larger table is checked
    on its first rows)."""

    LIMIT = 1_000_000

    def __init__(self, column: str | None) -> None:
        self.column = column
        self.seen: dict[str, int] = {}  # id -> its first row (from 1)
        self.repeated: dict[str, list[int]] = {}
        self.shaped: list[int] = []  # rows whose id is a list or an object

    def add(self, ids: Sequence[Any], start: int) -> None:
        """The ids of the rows from position ``start`` (from 0) on, as ``row_ids`` reads them."""
        if self.column is None:
            return
        for offset, ident in enumerate(ids):
            row = start + offset + 1
            if ident is None:
                continue
            if isinstance(ident, (list, tuple, dict)) or getattr(ident, "ndim", 0) > 0:  # a numpy array too
                self.shaped.append(row)
                continue
            key = str(ident)
            if key in self.seen:
                self.repeated.setdefault(key, [self.seen[key]]).append(row)
            elif len(self.seen) < self.LIMIT:
                self.seen[key] = row

    def note(self) -> str | None:
        """One note naming what was found (None: every id names one row)."""
        fix = "map a column of unique ids with --map id=COLUMN"
        if self.shaped:
            return (f"note: the id column '{self.column}' holds lists or objects, not ids (row {self.shaped[0]}"
                    f"{f' and {len(self.shaped) - 1} more' if len(self.shaped) > 1 else ''}); rows are named by their id "
                    f"in every output: {fix}")
        if self.repeated:
            ident, rows = next(iter(self.repeated.items()))
            shown = ", ".join(map(str, rows[:5])) + (" ..." if len(rows) > 5 else "")
            return (f"note: the id column '{self.column}' gives the id '{ident}' to rows {shown}"
                    f"{f' ({len(self.repeated)} ids repeat)' if len(self.repeated) > 1 else ''}; rows are named by their id in "
                    f"JUnit and the reports, and --baseline and compare match rows by it: {fix}")
        return None


def _level(config: Any, metric: str) -> str:
    level = getattr(config, "level", None)
    try:
        return level(metric) if level is not None else SPAN
    except KeyError:  # a metric the config does not define: judged per row
        return SPAN


def check_labels(config: Any, frame: Any, name: str = "input", metrics: Sequence[str] | None = None) -> None:
    """Raise ``InputError`` (exit 2) when a metric's labels column (``labels:``, ``--labels
    METRIC=COLUMN``; a dotted path reaches into a column) is not in ``frame`` (the input's first
    chunk, or a scored table's first rows): its rows would all count as unlabelled, and the
    corrected rate say "0 labelled"; or when a cell there holds a label of the wrong kind (text
    for a yes/no metric, a rating off the scale). ``metrics``: those to check (default: the
    run's). Every command that reads labels checks them here: score, report, compare, calibrate."""
    columns = [str(c) for c in frame.columns]
    for metric, column in (getattr(config, "labels", None) or {}).items():
        if metric not in (config.metrics if metrics is None else metrics) or not column:
            continue
        if not has_path(frame, column):
            import difflib

            close = difflib.get_close_matches(column, columns, n=1)  # --labels sufficiency=humna: the column meant first
            raise InputError(f"--labels {metric}={column}: {name} has no column '{column}' (labels.{metric}); its columns: "
                             f"{', '.join(columns)}" + (f"; did you mean '{close[0]}'?" if close else ""))
        if per_passage(metric, config):  # a list of grades per passage, in retrieved order
            for position, cell in enumerate(row_ids(frame, column)):
                if not blank(cell) and grades(cell) is None:
                    raise InputError(f"--labels {metric}={column}: row {position + 1} of {name} holds {cell!r}, not a list of one "
                                     "relevance grade per passage (0/1, or graded 0..3, in retrieved order); fix the column or leave "
                                     "the cell empty (an unlabelled row)")
            continue
        low, high = (float(v) for v in config.scale(metric))
        binary, mark = (low, high) == (0.0, 1.0), config.label_threshold(metric)
        for position, cell in enumerate(row_ids(frame, column)):  # a label of the wrong kind, in the rows read first
            if not blank(cell) and label_pass(cell, binary, mark, (low, high)) is None:
                kind = "a yes/no label (yes/no, true/false, 1/0)" if binary else f"a {low:g}..{high:g} rating"
                raise InputError(f"--labels {metric}={column}: row {position + 1} of {name} holds {cell!r}, not {kind}; fix the "
                                 "column or leave the cell empty (an unlabelled row)")

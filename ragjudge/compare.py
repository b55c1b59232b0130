"""Two scored tables -> what got worse: ``ragjudge compare BASELINE CURRENT`` and ``score --baseline``.

Rows are matched by ``id``: a null or repeated id is an error naming the rows; by position
with ``by_position`` (``--by-position``), or, with a warning, when a table has no id column. Per metric,
over the rows ok in both tables: both pass rates and their change, with McNemar's exact test
on the rows whose pass/fail changed (a two-sided binomial test of the regressions among the
changed rows, scipy); for a metric scored on a scale, also the Wilcoxon signed-rank test of
the paired scores (scipy). The rows that regressed (passed, now fail) and improved (failed,
now pass) are listed, as are rows only in one table and rows whose status changed (ok to
error, say). ``--by COL`` gives the same per group. When both tables hold sufficiency and
completeness, ``diagnosis`` says how the diagnosis counts (``ragjudge.diagnosis``) moved over the
matched rows: each cell's rows in the baseline and now, the change, and the rows that moved
from one cell to another (``retrieval -> generation``: a change that trades retrieval misses for
generation misses shows here even when the pass rates stay put).

Every change has its 95% paired bootstrap interval (``ragjudge.significance.paired_interval``);
with ``--by``, the slices' p-values are adjusted across the slices (Holm, or Benjamini-Hochberg:
``ragjudge.significance.adjusted``) and the slices that changed significantly are named.

Gates: ``max_regressions`` (more regressed rows fail it) and ``max_drop`` (a pass rate lower
than the baseline's by more than this fails it; with ``alpha``, only when McNemar's test of the
drop is significant at it, and each slice's drop too on its adjusted p-value). Words:
``ragjudge.compare_text``. Exit codes as ``score``'s: 1 when a gate
fails, 2 for tables that cannot be compared (no metric in common, duplicate ids).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ragjudge.corrected_rates import difference
from ragjudge.panel import without_members
from ragjudge.errors import InputError
from ragjudge.counting import check_labels, has_path, row_ids, SPAN, summarize, unit_rows
from ragjudge.diagnosis import CELLS, counts, of_table
from ragjudge.gate import Check, Kind
from ragjudge.records import id_like
from ragjudge.types import Reason
from ragjudge.significance import ALPHA, CONFIDENCE, CORRECTIONS, RESAMPLES, adjusted, paired_interval
from ragjudge.compare_text import change_lines, corrected_lines, diagnosis_lines, markdown_view, render, slice_lines

LISTED = 50  # regressed and improved row ids listed per metric (the counts stay whole)


def _ids(table: Any, name: str, hint: str = "", column: str | None = "id", required: bool = False) -> list[str] | None:
    """The table's ids as text, from ``column`` (the mapped id, a column or a dotted path into
    one, as ``counting.row_ids`` reads it; None: the table has no such column). Raises
    ``InputError`` naming the rows for a null id (matching the others by id would pair the
    wrong rows, and matching all of them by position silently is worse) and for an id given
    twice (``check_ids``). ``required`` (the id column was named: ``--map id=COLUMN``,
    ``columns.id``): a table without it is an ``InputError`` too, not matched by position."""
    if column is None or not has_path(table, column):
        if required and column is not None:
            shown = ", ".join(map(str, list(table.columns)[:20]))
            raise InputError(f"the {name} table has no column '{column.split('.', 1)[0]}' to read the ids from (id={column}); "
                             f"its columns: {shown}")
        return None

    values = [None if ident is None else _id_text(ident) for ident in row_ids(table, column)]
    check_ids(values, name, hint, column)
    return values


def _id_fix(baseline: Any, current: Any, column: str | None) -> str:
    """How to match two tables with no id column by id: the column of both that looks like the
    ids (``records.id_like``: ``qid``, ``question_id``; the run named it with ``--map id=...``,
    which the scored table does not record), else give both an id column."""
    both = [str(c) for c in current.columns if c in set(baseline.columns) and c != column]
    named = id_like(both, current.head(50).to_dict("records")) if both else None
    if named is not None and id_like([named], baseline.head(50).to_dict("records")) == named:
        return f"'{named}' looks like their ids: give --map id={named} (as the run was given)"
    return "give both tables an id column (or --map id=COLUMN)"


def check_ids(values: list[str | None], name: str, hint: str = "", column: str = "id") -> None:
    """``InputError`` (exit 2) when an id of ``values`` (one per row, None: no id) is missing
    (blank too: a CSV reads it back as none) or given twice, naming the rows (from 1), the ``column`` they were read from and ``hint`` (how
    to match by position instead)."""
    def listed(rows: list[int]) -> str:
        return ", ".join(map(str, rows[:10])) + (f" and {len(rows) - 10} more" if len(rows) > 10 else "")

    blank = [i + 1 for i, v in enumerate(values) if v is None or not v.strip()]  # "": a CSV reads it back as no id
    if blank:
        raise InputError(f"the {name} table has no id on row(s) {listed(blank)}; every row needs an id to match rows{hint}")
    where: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        where.setdefault(str(v), []).append(i + 1)
    twice = {v: rows for v, rows in where.items() if len(rows) > 1}
    if twice:
        ident, rows = next(iter(twice.items()))
        more = f" ({len(twice) - 1} more id(s) repeat)" if len(twice) > 1 else ""
        raise InputError(f"the {name} table has the id '{ident}' more than once (rows {listed(rows)}, column '{column}'){more}; ids must "
                         f"be unique to match rows: map a unique column with --map id=COLUMN{hint}")


_WHOLE_FLOAT = re.compile(r"-?\d+\.0+")


def _id_text(value: Any) -> str:
    """An id as text, the same whichever format held it: 7, 7.0 (JSON, or a CSV column with
    gaps), "7" and "7.0" (a CSV written from a column of float ids) are one id. A NUL character is read as U+FFFD, the character the CSV writer
    puts in its place (``ragjudge.io.writers``), so that a row matches its own CSV read-back."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value).replace("\0", "\ufffd")
    if isinstance(value, str) and _WHOLE_FLOAT.fullmatch(text):  # 7.0 written to CSV by a column of float ids reads back as "7.0"
        return text.partition(".")[0]
    return text


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or (not isinstance(value, (list, dict)) and pd.isna(value))


_TRUE = {"true", "1", "1.0", "yes"}
_FALSE = {"false", "0", "0.0", "no"}


def _flag(value: Any) -> Any:
    """A pass/fail cell read back from any format: True, False or None (CSV holds text)."""
    if _missing(value):
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        return True if text in _TRUE else False if text in _FALSE else None
    return bool(value)


STATUSES = ("ok", "error", "skipped")


def _bad_cell(source: str, table: Any, i: int, column: str, value: Any, what: str) -> InputError:
    """The error for an unreadable cell of a scored table read back: the file (or which
    table), the row (1-based, with its id), the column, and the fix."""
    ident = ""
    if "id" in table.columns and not _missing(table["id"].iloc[i]):
        ident = f" (id {_id_text(table['id'].iloc[i])!r})"
    shown = "a blank cell" if _missing(value) or (isinstance(value, str) and not value.strip()) else repr(value)
    return InputError(f"{source}: row {i + 1}{ident}, column {column}: {shown} is not {what}; correct the cell or score the "
                      "rows again with ragjudge score")


def typed(table: Any, source: str = "the table", *, scores_required: bool = False) -> Any:
    """``table`` with the run's own columns typed again as ``ragjudge score`` wrote them: a CSV
    (or JSON written by other tools) holds ``M_passed`` as the text "True"/"False" and scores
    as text, and ``bool("False")`` is True. ``M_passed`` becomes nullable boolean, ``M_score``
    float, ``M_status`` text, ``M_cached`` boolean, tokens integers and ``M_cost_usd`` float; a
    panel member's ``M_panel_NAME_passed`` boolean, its score and cost and ``M_panel_agreement``
    float. Returns a copy; other columns are untouched.

    Raises ``InputError`` (exit 2) naming ``source`` (the file, or which table), the row (and
    its id) and the column for a cell that cannot be read back: an ``M_status`` other than
    ok / error / skipped (a blank one too), an ``M_passed`` that is not a boolean (true / false,
    1 / 0, yes / no; a blank one counts as not passed), an ``M_score`` that is not a finite number (text,
    inf), or, with ``scores_required``, a blank score on an ok row (``compare`` leaves such a row
    out of the mean scores; a report's summary needs every ok row's score)."""
    import math

    import pandas as pd

    out = table.copy()
    for metric in metrics_of(table):
        statuses = [None if _missing(v) else str(v).strip() for v in table[f"{metric}_status"].tolist()]
        for i, status in enumerate(statuses):
            if status not in STATUSES:
                raise _bad_cell(source, table, i, f"{metric}_status", table[f"{metric}_status"].iloc[i], "a status (ok, error or skipped)")
        flags = [_flag(v) for v in table[f"{metric}_passed"].tolist()]
        for i, (flag, raw) in enumerate(zip(flags, table[f"{metric}_passed"].tolist())):
            if flag is None and not _missing(raw):
                raise _bad_cell(source, table, i, f"{metric}_passed", raw, "a boolean (true or false)")
        out[f"{metric}_passed"] = pd.array(flags, dtype="boolean")
        if f"{metric}_score" in table.columns:
            raw_scores = table[f"{metric}_score"].tolist()
            scores = pd.to_numeric(table[f"{metric}_score"], errors="coerce")
            for i, (number, raw) in enumerate(zip(scores.tolist(), raw_scores)):
                blank = _missing(raw) or (isinstance(raw, str) and not raw.strip())
                if (not blank and (_missing(number) or not math.isfinite(number))) or (blank and scores_required and statuses[i] == "ok"):
                    raise _bad_cell(source, table, i, f"{metric}_score", raw, "a finite number (the judge's score)")
            out[f"{metric}_score"] = scores.astype("Float64")
        out[f"{metric}_status"] = statuses
        if f"{metric}_cached" in table.columns:
            out[f"{metric}_cached"] = pd.array([_flag(v) for v in table[f"{metric}_cached"].tolist()], dtype="boolean")
        for name, kind in (("prompt_tokens", "Int64"), ("completion_tokens", "Int64"), ("cost_usd", "Float64")):
            if f"{metric}_{name}" in table.columns:
                numbers = pd.to_numeric(table[f"{metric}_{name}"], errors="coerce")
                out[f"{metric}_{name}"] = numbers.round().astype(kind) if kind == "Int64" else numbers.astype(kind)
        prefix = f"{metric}_panel_"  # a panel of judges: each member's columns, typed alike (a cell that cannot be read is blank)
        for column in [c for c in table.columns if str(c).startswith(prefix)]:
            if str(column).endswith("_passed"):
                out[column] = pd.array([_flag(v) for v in table[column].tolist()], dtype="boolean")
            elif str(column).endswith(("_score", "_cost_usd", "_agreement")):
                out[column] = pd.to_numeric(table[column], errors="coerce").astype("Float64")
    return out


SCORE_HINT = " (ragjudge compare --by-position matches two tables by position)"


def check_baseline(table: Any, path: str, id_column: str | None = "id", id_required: bool = False, label: str | None = None) -> None:
    """Check ``--baseline``'s table (read from ``path``) as the comparison after the run will
    read it, so that a baseline that cannot be compared is refused before any judge call:
    raises ``InputError`` (exit 2) for a null or repeated id (in ``id_column``; a table
    without it too when ``id_required``) and an unreadable cell (``typed``), naming the table as
    ``label`` (default ``--baseline PATH``)."""
    typed(table, label or f"--baseline {path}")
    _ids(table, "baseline", SCORE_HINT, id_column, id_required)


def metrics_of(table: Any) -> list[str]:
    """The metrics a scored table holds (those with a ``M_status`` and ``M_passed`` column); a
    panel member's columns (``M_panel_NAME_status``, ``M_panel_NAME_passed``) are its metric's."""
    found = [c[: -len("_status")] for c in table.columns if str(c).endswith("_status") and f"{str(c)[:-len('_status')]}_passed" in table.columns]
    return without_members(found)


def _pvalue_mcnemar(regressed: int, improved: int) -> float | None:
    if regressed + improved == 0:
        return None
    from scipy.stats import binomtest

    return float(binomtest(regressed, regressed + improved, 0.5).pvalue)


def _pvalue_wilcoxon(before: list[float], after: list[float]) -> float | None:
    differences = [b - a for a, b in zip(before, after) if b != a]
    if not differences:
        return None
    from scipy.stats import wilcoxon

    return float(wilcoxon(differences).pvalue)


def _column(table: Any, name: str) -> list[Any]:
    """A column's cells, or None for each row where the table has no such column (a hand-made
    table without ``M_score`` or ``M_error``)."""
    return table[name].tolist() if name in table.columns else [None] * len(table)


def _metric(base: Any, cur: Any, metric: str, scale: bool, ids: list[str], resamples: int = RESAMPLES) -> dict[str, Any]:
    """One metric's comparison over the matched rows (``ids``). A row that passed in the
    baseline and is not judged now (an error, or skipped for its input; a row left out by
    ``--limit`` / ``--sample``, "not sampled", is no row of this run) is a regression:
    ``regressed`` and ``regressed_ids`` hold it, ``unjudged`` and ``unjudged_ids`` say which.
    The pass rates, their ``change`` and McNemar's test are over the rows ok in both; the
    gates' drop (``gated_*``) is over the rows ok in the baseline, a row not judged now
    counting as failing. ``change_interval`` (and ``mean_score_interval`` beside
    ``mean_score_change`` on a scale): the change's paired bootstrap interval
    (``paired_interval``) over the rows ok in both; ``gated_mcnemar_p`` (with rows not judged
    now): McNemar's test of the gated drop, those rows counted as regressions."""
    status_b, status_c = base[f"{metric}_status"].tolist(), cur[f"{metric}_status"].tolist()
    passed_b, passed_c = base[f"{metric}_passed"].tolist(), cur[f"{metric}_passed"].tolist()
    score_b, score_c = _column(base, f"{metric}_score"), _column(cur, f"{metric}_score")
    reason_c = _column(cur, f"{metric}_error")
    n = len(ids)
    sampled_out = [status_c[i] == "skipped" and reason_c[i] == Reason.NOT_SAMPLED.value for i in range(n)]
    both = [i for i in range(n) if status_b[i] == "ok" and status_c[i] == "ok"]
    passed_b, passed_c = [_flag(v) is True for v in passed_b], [_flag(v) is True for v in passed_c]
    flipped = [i for i in both if passed_b[i] and not passed_c[i]]
    improved = [ids[i] for i in both if not passed_b[i] and passed_c[i]]
    unjudged = [i for i in range(n) if status_b[i] == "ok" and passed_b[i] and status_c[i] != "ok" and not sampled_out[i]]
    regressed = sorted(flipped + unjudged)
    changed = [ids[i] for i in range(n) if status_b[i] != status_c[i] and not sampled_out[i]]
    # one division each, so that a drop of one row in ten is 0.1 exactly, not 0.1 and a rounding error
    rate_b = sum(passed_b[i] for i in both) / len(both) if both else None
    rate_c = sum(passed_c[i] for i in both) / len(both) if both else None
    gated = [i for i in range(n) if status_b[i] == "ok" and not sampled_out[i]]  # ok in the baseline; not ok now counts as failing
    judged_now = [i for i in gated if status_c[i] == "ok"]
    out: dict[str, Any] = {
        "pairs": len(both),
        "baseline_pass_rate": rate_b,
        "pass_rate": rate_c,
        "change": (sum(passed_c[i] for i in both) - sum(passed_b[i] for i in both)) / len(both) if both else None,
        "regressed": len(regressed),
        "improved": len(improved),
        "regressed_ids": [ids[i] for i in regressed][:LISTED],
        "improved_ids": improved[:LISTED],
        "unjudged": len(unjudged),
        "unjudged_ids": [ids[i] for i in unjudged][:LISTED],
        "gated_rows": len(gated),
        "gated_baseline_pass_rate": sum(passed_b[i] for i in gated) / len(gated) if gated else None,
        "gated_pass_rate": sum(passed_c[i] for i in judged_now) / len(gated) if gated else None,
        "gated_change": (sum(passed_c[i] for i in judged_now) - sum(passed_b[i] for i in gated)) / len(gated) if gated else None,
        "status_changed": len(changed),
        "status_changed_ids": changed[:LISTED],
        "mcnemar_p": _pvalue_mcnemar(len(flipped), len(improved)),
        "change_interval": paired_interval([float(passed_b[i]) for i in both], [float(passed_c[i]) for i in both], resamples=resamples),
    }
    if unjudged:  # the gated drop's own test: McNemar's over the rows ok in the baseline, a row not judged now counted as failing
        out["gated_mcnemar_p"] = _pvalue_mcnemar(len(regressed), len(improved))
    if scale:
        scored = [i for i in both if not _missing(score_b[i]) and not _missing(score_c[i])]  # a hand-edited table may blank one
        before, after = [float(score_b[i]) for i in scored], [float(score_c[i]) for i in scored]
        out["baseline_mean_score"] = sum(before) / len(before) if before else None
        out["mean_score"] = sum(after) / len(after) if after else None
        out["mean_score_change"] = out["mean_score"] - out["baseline_mean_score"] if before else None
        out["mean_score_interval"] = paired_interval(before, after, resamples=resamples)
        out["wilcoxon_p"] = _pvalue_wilcoxon(before, after)
    return out


def _correct(groups: dict[str, dict[str, Any]], correction: str, alpha: float) -> list[str]:
    """Adjust each slice's p-values of ``groups`` across the slices (``adjusted``): adds
    ``mcnemar_p_adjusted`` (and ``wilcoxon_p_adjusted``, ``gated_mcnemar_p_adjusted``) and
    ``significant`` (McNemar's adjusted p at most ``alpha``) to each; returns the slices that
    changed significantly."""
    names = list(groups)
    for key in ("mcnemar_p", "wilcoxon_p"):
        if any(key in groups[name] for name in names):
            for name, p in zip(names, adjusted([groups[name].get(key) for name in names], correction)):
                groups[name][f"{key}_adjusted"] = p
    if any("gated_mcnemar_p" in groups[name] for name in names):
        # the drops' family: a slice with rows not judged now is tested with them (gated_mcnemar_p), the others as ok in both
        drops = adjusted([groups[name].get("gated_mcnemar_p", groups[name]["mcnemar_p"]) for name in names], correction)
        for name, p in zip(names, drops):
            if "gated_mcnemar_p" in groups[name]:
                groups[name]["gated_mcnemar_p_adjusted"] = p
    for name in names:
        p = groups[name]["mcnemar_p_adjusted"]
        groups[name]["significant"] = p is not None and p <= alpha
    return [name for name in names if groups[name]["significant"]]


def _corrected(base: Any, cur: Any, metric: str, config: Any, id_column: str | None) -> dict[str, Any]:
    """Each table's label-corrected figures of ``metric`` over the matched rows (its labels
    column in ``config.labels``, read from each table), and the change between them."""
    found = {}
    for name, table in (("baseline", base), ("current", cur)):
        counted = summarize(table, config, [metric], id_column=id_column if id_column in table.columns else None, levels={metric: SPAN})
        found[name] = counted.metrics[metric].corrected() or {}
    return {key: {"baseline": found["baseline"][key].to_dict(), "current": found["current"][key].to_dict(),
                  **difference(found["baseline"][key], found["current"][key])} for key in found["current"]}


def check_correction(correction: str) -> None:
    """Refuse a ``correction`` that is not one of ``CORRECTIONS`` (``InputError``, exit 2, naming them)."""
    if correction not in CORRECTIONS:
        raise InputError(f"--correction {correction}: give holm (Holm's step-down, the default) or bh (Benjamini-Hochberg)")


def _no_by_column(by: str, columns: list[str], metrics: list[str]) -> str:
    """The message for ``--by`` naming no column of the current table: the closest column (difflib)
    and its columns, the verdict columns of its ``metrics`` (``M_status``...) left out."""
    own = [str(c) for c in columns if not any(str(c).startswith(f"{m}_") for m in metrics)]
    close = difflib.get_close_matches(by, own or [str(c) for c in columns], n=1)
    return (f"--by {by}: the current table has no such column" + (f"; did you mean '{close[0]}'?" if close else ".")
            + f" Its columns: {', '.join(own) or 'none but the verdicts'}" + (" (and the metrics' verdict columns)" if len(own) < len(columns) else ""))


def compare(baseline: Any, current: Any, metrics: list[str] | None = None, by: str | None = None, scales: dict[str, bool] | None = None,
            by_position: bool = False, hint: str = " (or match them by position: --by-position)",
            names: tuple[str, str] = ("the baseline table", "the current table"), *, id_column: str | None = "id",
            levels: dict[str, str] | None = None, id_required: bool = False, config: Any = None, correction: str = "holm",
            alpha: float | None = None, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The comparison of two scored tables (pandas DataFrames written by ``ragjudge score``).

    ``metrics``: the ones to compare (default: those both tables hold; they must hold the same
    ones). ``by``: a column of the current table to break the figures down by. ``scales``:
    metric -> whether it is scored on a scale (default: a metric with a score other than 0 and
    1). Returns a dict: ``matched_by`` (id / position), ``warnings``, ``only_in_baseline`` and
    ``only_in_current`` (counts and ids), and per metric the figures of ``_metric`` (pass
    rates, change, regressed and improved rows, p-values), with ``by`` groups. Rows are matched
    by id; by position when ``by_position`` or when a table has no id column (with a warning).
    Raises ``InputError`` (exit 2) for tables that cannot be compared, among them a null or
    repeated id (``hint`` ends that message: how to match by position). Tables read back from
    CSV are typed again first (``typed``; ``names`` name the two tables, their files where
    known, in its errors about unreadable cells). ``id_column``: the column holding the ids
    (the run's mapped id; ``id_required``: it was named, so a table without it is an error,
    not matched by position). ``levels``: metric -> ``SPAN`` / ``TRACE``: a trace-level metric on
    rows read from traces is compared once per trace (on the current table's counted units,
    ``ragjudge.counting.unit_rows``), as the run's summary counts it. ``config``: the run's
    ``ragjudge.settings.Config``; a metric with a labels column there (``--labels METRIC=COLUMN``)
    gets ``corrected``: each table's label-corrected pass rate (and mean score on a scale) over
    the matched rows, and their difference with its 95% interval (``ragjudge.corrected_rates``).
    Every change has its 95% paired bootstrap interval (``change_interval``,
    ``mean_score_interval``; ``resamples`` resamples, seeded). With ``by``, each slice's
    p-values are adjusted across the slices by ``correction`` (``holm`` or ``bh``, ``adjusted``):
    ``*_adjusted`` beside the raw values, ``significant`` per slice and the metric's
    ``significant_slices`` at ``alpha`` (default ``ALPHA``, 0.05); the report records
    ``correction`` and ``alpha``. Raises ``InputError`` for another correction."""
    check_correction(correction)
    for name, table in (("baseline", baseline), ("current", current)):
        if len(table) == 0:
            raise InputError(f"the {name} table has no rows; compare two tables written by ragjudge score")
    baseline, current = typed(baseline, names[0]), typed(current, names[1])
    have_b, have_c = metrics_of(baseline), metrics_of(current)
    if metrics is None:
        if set(have_b) != set(have_c):
            raise InputError(f"the tables hold different metrics: the baseline {', '.join(have_b) or 'none'}, the current table "
                             f"{', '.join(have_c) or 'none'}; choose the ones to compare with -m")
        metrics = have_c
    for metric in metrics:
        for table, have in (("baseline", have_b), ("current", have_c)):
            if metric not in have:
                close = difflib.get_close_matches(metric, have, n=1)  # -m sufficency: the gate's flags' did-you-mean
                raise InputError(f"the {table} table has no {metric} columns ({metric}_status, {metric}_passed)"
                                 + (f"; did you mean '{close[0]}'? (it holds {', '.join(have)})" if close else
                                    f"; it holds {', '.join(have) or 'no metric'}"))
    if not metrics:
        raise InputError("the tables hold no scored metric (no M_status and M_passed columns); compare tables written by ragjudge score")
    for metric, column in (config.labels.items() if config is not None else ()):
        if metric not in have_b and metric not in have_c:
            raise InputError(f"--labels {metric}={column}: neither table holds {metric}; they hold {', '.join(have_c) or 'no metric'}")
        if metric in metrics:
            for name, table in (("baseline", baseline), ("current", current)):
                if not has_path(table, column):
                    raise InputError(f"--labels {metric}={column}: the {name} table has no column '{column}'; give each table its "
                                     "labels column (the labels of one run's responses are not the other's)")
                check_labels(config, table.head(config.chunk_size), f"the {name} table", [metric])  # as score checks them
    report: dict[str, Any] = {"warnings": [], "metrics": {}, "alpha": alpha, "confidence": CONFIDENCE}
    if by:
        report["by"], report["correction"] = by, correction
    ids_b, ids_c = (None, None) if by_position else (_ids(baseline, "baseline", hint, id_column, id_required),
                                                            _ids(current, "current", hint, id_column, id_required))
    if ids_b is not None and ids_c is not None:
        report["matched_by"] = "id"
        where_b = {ident: i for i, ident in enumerate(ids_b)}
        common = [ident for ident in ids_c if ident in where_b]
        in_c = set(ids_c)  # once: a set built per row made 10,000 rows take 5 s
        only_b = [ident for ident in ids_b if ident not in in_c]
        only_c = [ident for ident in ids_c if ident not in where_b]
        at_b, at_c = [where_b[ident] for ident in common], [i for i, ident in enumerate(ids_c) if ident in where_b]
        base = baseline.iloc[at_b].reset_index(drop=True)
        cur = current.iloc[at_c].reset_index(drop=True)
    else:
        report["matched_by"] = "position"
        if not by_position:
            report["warnings"].append("a table has no id for every row: rows are matched by position; " + _id_fix(baseline, current, id_column))
        if len(baseline) != len(current) and by_position:
            raise InputError(f"the tables have {len(baseline)} and {len(current)} rows: the row counts differ, and matching by position "
                             "(--by-position) needs tables of equal length; match them by id (drop --by-position) or compare tables "
                             "of the same rows")
        if len(baseline) != len(current):
            raise InputError(f"the tables have {len(baseline)} and {len(current)} rows and no ids to match them by; "
                             + _id_fix(baseline, current, id_column))
        common = [f"row {i + 1}" for i in range(len(current))]
        only_b, only_c = [], []
        base, cur = baseline.reset_index(drop=True), current.reset_index(drop=True)
        at_b = at_c = list(range(len(current)))
    report["rows"] = len(common)
    report["only_in_baseline"] = {"count": len(only_b), "ids": only_b[:LISTED]}
    report["only_in_current"] = {"count": len(only_c), "ids": only_c[:LISTED]}

    if by and by not in cur.columns:
        raise InputError(_no_by_column(by, list(cur.columns), metrics_of(cur)))
    for metric in metrics:
        scale = (scales or {}).get(metric)
        if scale is None:
            values = [v for v in _column(cur, f"{metric}_score") + _column(base, f"{metric}_score") if not _missing(v)]
            scale = any(float(v) not in (0.0, 1.0) for v in values)
        units = set(unit_rows(current, (levels or {}).get(metric, SPAN)))  # a trace-level verdict: once per trace
        keep = [k for k, i in enumerate(at_c) if i in units]
        b, c = base.iloc[keep].reset_index(drop=True), cur.iloc[keep].reset_index(drop=True)
        kept = [common[k] for k in keep]
        figures = _metric(b, c, metric, scale, kept, resamples)
        if config is not None and config.labels.get(metric):
            figures["corrected"] = _corrected(b, c, metric, config, id_column)
        if by:
            groups: dict[str, Any] = {}
            for value in sorted({str(v) for v in c[by].tolist()}):
                rows = [i for i, v in enumerate(c[by].tolist()) if str(v) == value]
                groups[value] = _metric(b.iloc[rows].reset_index(drop=True), c.iloc[rows].reset_index(drop=True), metric, scale,
                                        [kept[i] for i in rows], resamples)
            figures["by"] = groups
            figures["significant_slices"] = _correct(groups, correction, ALPHA if alpha is None else alpha)
        report["metrics"][metric] = figures
    report["diagnosis"] = _diagnosis_moves(baseline, current, at_b, at_c, common)
    return report


def _diagnosis_moves(baseline: Any, current: Any, at_b: list[int], at_c: list[int], ids: list[str]) -> dict[str, Any] | None:
    """How the diagnosis counts moved over the matched rows (positions ``at_b`` / ``at_c``):
    ``baseline`` and ``current`` counts per cell, ``change`` (current - baseline), ``moved`` (per
    ``FROM -> TO`` pair of cells, the rows that changed cell, most first) and ``moved_ids``
    (the first ``LISTED`` per pair). None when a table cannot have a diagnosis."""
    before, after = of_table(baseline), of_table(current)  # the whole tables: a trace's rows decide together
    if before is None or after is None:
        return None
    b, c = [before[i] for i in at_b], [after[i] for i in at_c]
    count_b, count_c = counts(b), counts(c)
    moved: dict[str, list[str]] = {}
    for ident, x, y in zip(ids, b, c):
        if x is not None and y is not None and x != y:
            moved.setdefault(f"{x} -> {y}", []).append(ident)
    order = sorted(moved, key=lambda key: (-len(moved[key]), key))
    return {"baseline": count_b, "current": count_c, "change": {name: count_c[name] - count_b[name] for name in CELLS},
            "moved": {key: len(moved[key]) for key in order}, "moved_ids": {key: moved[key][:LISTED] for key in order}}


def _drop_check(metric: str, m: dict[str, Any], max_drop: float, alpha: float | None, where: dict[str, Any] | None = None) -> Check | None:
    """The ``pass_rate_drop`` check of one metric's (or slice's) figures ``m``; None when no
    change was measured. With ``alpha`` it fails only when the drop exceeds ``max_drop`` and
    McNemar's test of it (adjusted across the slices for a slice) is at most ``alpha``."""
    unjudged = m.get("unjudged", 0)
    change = m["gated_change"] if unjudged else m["change"]
    if change is None:
        return None
    drop = -change
    counts = {"baseline_pass_rate": m["baseline_pass_rate"], "pass_rate": m["pass_rate"], "pairs": m["pairs"], "unjudged": unjudged,
              "interval": m.get("change_interval")}
    if unjudged:
        counts.update(gated_rows=m["gated_rows"], gated_baseline_pass_rate=m["gated_baseline_pass_rate"],
                      gated_pass_rate=m["gated_pass_rate"])
    past = drop > max_drop
    passed = not past
    if alpha is not None:
        key = "gated_mcnemar_p" if unjudged else "mcnemar_p"
        p = m.get(f"{key}_adjusted", m.get(key)) if where else m.get(key)
        counts.update(alpha=alpha, p=p, adjusted=bool(where) and f"{key}_adjusted" in m, past=past)
        passed = passed or p is None or p > alpha  # a drop past the bound that could be noise passes
    if where:
        counts.update(where)
    return Check(metric, Kind.PASS_RATE_DROP, passed, drop, max_drop, counts)


def checks(report: dict[str, Any], max_regressions: int | None = None, max_drop: float | None = None,
           alpha: float | None = None) -> list[Any]:
    """The regression gates on ``report``, as ``ragjudge.gate.Check`` results (per metric:
    ``nothing_compared`` when a gate is asked for and no row is ok in both tables,
    ``regressions`` against ``max_regressions``,
    ``pass_rate_drop`` against ``max_drop``). A row that passed in the baseline and is not
    judged now (error, skipped) counts as a regression and, for the drop, as failing now: a run
    that errors where it used to pass has not shown that nothing got worse.

    ``alpha`` (``--alpha``, 0..1): a drop fails only when it exceeds ``max_drop`` and McNemar's
    exact test of it has p at most ``alpha`` (a drop that noise explains passes); with ``by`` in
    the report each slice's drop is gated too, on its p-value adjusted across the slices
    (``report['correction']``). Without ``alpha`` the gates are the bounds alone, per metric."""
    out = []
    for metric, m in report["metrics"].items():
        unjudged = m.get("unjudged", 0)
        if (max_regressions is not None or max_drop is not None) and not m["pairs"]:
            # nothing compared is not "nothing got worse"
            out.append(Check(metric, Kind.NOTHING_COMPARED, False, counts={"rows": report.get("rows", 0), "matched_by": report.get("matched_by", "id")}))
            continue
        if max_regressions is not None:
            out.append(Check(metric, Kind.REGRESSIONS, m["regressed"] <= max_regressions, m["regressed"], max_regressions,
                             {"regressed": m["regressed"], "improved": m["improved"], "unjudged": unjudged}))
        if max_drop is not None and (check := _drop_check(metric, m, max_drop, alpha)) is not None:
            out.append(check)
        if max_drop is not None and alpha is not None:
            for value, g in m.get("by", {}).items():
                if g["pairs"] and (check := _drop_check(metric, g, max_drop, alpha, {"by": report.get("by"), "slice": value,
                                                                                       "correction": report.get("correction")})):
                    out.append(check)
    return out


# the words (ragjudge.compare_text) and the statistics (ragjudge.significance) are importable from here too
__all__ = ["adjusted", "change_lines", "compare", "checks", "corrected_lines", "diagnosis_lines", "paired_interval", "render", "markdown_view",
           "metrics_of", "slice_lines"]

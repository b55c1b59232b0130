"""Agreement between a judge's scores and human labels (``ragjudge agreement``).

- binary metric (sufficiency) vs boolean labels: n, accuracy with a 95% Wilson interval,
  precision / recall / F1 per class, Cohen's kappa, confusion matrix (scikit-learn, scipy);
- 1..5 metric (completeness) vs numeric labels: Spearman and Pearson correlation with 95%
  intervals (Fisher's z), mean absolute error, share within one point;
- pairwise: two scored tables of the same rows (response A, response B) and a signed human
  preference (positive = B better): how often sign(score_B - score_A) matches the label's
  sign, with ties (judge or human) reported apart.

Only rows whose ``M_status`` is ok and whose label is present are compared; the others
are counted and reported.
"""

from __future__ import annotations

import math
from typing import Any

from ragjudge.corrected_rates import label_rating, label_yes_no
from ragjudge.errors import InputError
from ragjudge.types import count_of
from ragjudge.counting import unit_rows
from ragjudge.judges import judge_class


_as_bool = label_yes_no  # a label as yes / no (None: no label): ragjudge.corrected_rates reads labels for both
_as_float = label_rating  # a label as a finite number (None: no rating)


def _require(table: Any, column: str, what: str) -> None:
    if column not in table.columns:
        raise InputError(f"column '{column}' ({what}) not found; available: {', '.join(map(str, table.columns))}")


def _reasons(table: Any, metric: str, labels: str, convert, labels_hint: str = "the human labels; set --labels") -> list[str | None]:
    """Per row, why it is left out of the comparison ("error", "skipped", "no_label"), or
    None when it is compared. Raises ``InputError`` for a missing column or a labels column
    without one usable label."""
    _require(table, f"{metric}_status", f"the {metric} status; score the table with -m {metric} first")
    _require(table, labels, labels_hint)
    reasons: list[str | None] = []
    labelled = 0
    for status, label in zip(table[f"{metric}_status"], table[labels]):
        usable = convert(label) is not None
        labelled += usable
        if status != "ok":
            reasons.append("error" if status == "error" else "skipped")
        else:
            reasons.append(None if usable else "no_label")
    if len(table) and not labelled:
        kind = "yes/no, true/false or 1/0" if convert is _as_bool else "finite numbers"
        raise InputError(f"column '{labels}' holds no usable label in {len(table)} rows (expected {kind}); set --labels to the human labels")
    return reasons


def _usable(reasons: list[str | None]) -> tuple[list[int], dict[str, int]]:
    """The compared rows' indices and the count of rows left out for each reason."""
    excluded = {"error": 0, "skipped": 0, "no_label": 0}
    for reason in reasons:
        if reason is not None:
            excluded[reason] += 1
    return [i for i, reason in enumerate(reasons) if reason is None], excluded


def binary_agreement(scores: list[float], labels: list[bool], threshold: float = 0.5) -> dict[str, Any]:
    """Judge scores (1.0/0.0) vs boolean labels: accuracy with 95% Wilson CI, per-class
    precision/recall/F1, Cohen's kappa, confusion matrix (rows = human, columns = judge)."""
    from scipy.stats import binomtest
    from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

    predicted = [s >= threshold for s in scores]
    n = len(labels)
    correct = sum(p == y for p, y in zip(predicted, labels))
    result: dict[str, Any] = {"n": n}
    if n == 0:
        return result | {"accuracy": None}
    interval = binomtest(correct, n).proportion_ci(confidence_level=0.95, method="wilson")
    precision, recall, f1, support = precision_recall_fscore_support(labels, predicted, labels=[True, False], zero_division=0)
    matrix = confusion_matrix(labels, predicted, labels=[True, False])
    kappa = cohen_kappa_score(labels, predicted) if len(set(labels) | set(predicted)) > 1 else None
    return result | {
        "accuracy": correct / n,
        "accuracy_ci95": [interval.low, interval.high],
        "cohen_kappa": None if kappa is None or math.isnan(kappa) else float(kappa),
        "per_class": {
            name: {"precision": float(precision[i]), "recall": float(recall[i]), "f1": float(f1[i]), "support": int(support[i])}
            for i, name in enumerate(("yes", "no"))
        },
        "confusion": {"human_yes": {"judge_yes": int(matrix[0][0]), "judge_no": int(matrix[0][1])},
                      "human_no": {"judge_yes": int(matrix[1][0]), "judge_no": int(matrix[1][1])}},
        "judge_yes_rate": sum(predicted) / n,
    }


def correlation_interval(r: float, n: int, spearman: bool = True) -> list[float] | None:
    """The 95% interval of a correlation ``r`` on ``n`` pairs by Fisher's z transform: standard
    error sqrt(1.06 / (n - 3)) for Spearman's rho (Fieller, Hartley and Pearson, 1957),
    1 / sqrt(n - 3) for Pearson's r. None for n < 5 (too few pairs for the approximation).
    [low, high], each in -1..1."""
    if n < 5 or r is None or math.isnan(r):
        return None
    if abs(r) >= 1.0:
        return [r, r]
    z = math.atanh(r)
    half = 1.959964 * math.sqrt((1.06 if spearman else 1.0) / (n - 3))
    return [math.tanh(z - half), math.tanh(z + half)]


def numeric_agreement(scores: list[float], labels: list[float]) -> dict[str, Any]:
    """Judge scores 1..5 vs numeric labels: Spearman and Pearson correlations with their 95%
    intervals (``correlation_interval``: ``spearman_ci95``, ``pearson_ci95``, None under 5
    pairs), MAE, share within one point."""
    from scipy.stats import pearsonr, spearmanr

    n = len(labels)
    result: dict[str, Any] = {"n": n}
    if n == 0:
        return result
    errors = [abs(s - y) for s, y in zip(scores, labels)]
    result |= {"mae": sum(errors) / n, "within_one": sum(e <= 1 for e in errors) / n}
    if n >= 3 and len(set(scores)) > 1 and len(set(labels)) > 1:
        spearman = spearmanr(scores, labels)
        pearson = pearsonr(scores, labels)
        result |= {"spearman": float(spearman.statistic), "spearman_p": float(spearman.pvalue),
                   "spearman_ci95": correlation_interval(float(spearman.statistic), n),
                   "pearson": float(pearson.statistic), "pearson_p": float(pearson.pvalue),
                   "pearson_ci95": correlation_interval(float(pearson.statistic), n, spearman=False)}
    else:
        result |= {"spearman": None, "pearson": None, "spearman_ci95": None, "pearson_ci95": None}
    return result


def pairwise_agreement(scores_a: list[float], scores_b: list[float], preferences: list[float]) -> dict[str, Any]:
    """Share of pairs where sign(score_B - score_A) equals sign(preference); judge ties and
    human ties are counted apart and left out of the share."""
    agree = disagree = judge_ties = human_ties = 0
    for a, b, pref in zip(scores_a, scores_b, preferences):
        if pref == 0:
            human_ties += 1
        elif a == b:
            judge_ties += 1
        elif (b - a > 0) == (pref > 0):
            agree += 1
        else:
            disagree += 1
    decided = agree + disagree
    return {
        "n": len(preferences),
        "decided": decided,
        "sign_agreement": agree / decided if decided else None,
        "judge_ties": judge_ties,
        "human_ties": human_ties,
    }


def _id(value: Any) -> str:
    """An id as text, the same for 1 and 1.0 (a CSV and a Parquet file of the same rows)."""
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _aligned(table: Any, pair: Any) -> tuple[Any, str]:
    """``pair`` in ``table``'s row order and how it was matched: by the ``id`` column when
    both have one, else by position. Raises ``InputError`` when the ids differ or repeat, or
    one is null (naming the rows)."""
    if "id" not in table.columns or "id" not in pair.columns:
        return pair, "position"
    import pandas as pd

    for name, frame in (("scored", table), ("pair", pair)):
        blank = [i + 1 for i, v in enumerate(frame["id"].tolist()) if v is None or (not isinstance(v, (list, dict)) and pd.isna(v))]
        if blank:
            rows = ", ".join(map(str, blank[:10])) + (f" and {len(blank) - 10} more" if len(blank) > 10 else "")
            raise InputError(f"the {name} table has no id on row(s) {rows}; every row needs an id to match the pair table's rows "
                             "(or drop the id column of both to match them by position)")
    ids_a, ids_b = [_id(v) for v in table["id"]], [_id(v) for v in pair["id"]]
    if ids_a == ids_b:
        return pair, "id"
    if len(set(ids_a)) != len(ids_a) or sorted(ids_a) != sorted(ids_b):
        missing = next((i for i in ids_a if i not in set(ids_b)), None)
        why = f"id '{missing}' is not in the pair table" if missing is not None else "an id repeats"
        raise InputError(f"the pair table does not hold the same rows: {why}; both tables need the same unique ids")
    position = {ident: i for i, ident in enumerate(ids_b)}
    return pair.iloc[[position[i] for i in ids_a]].reset_index(drop=True), "id"


def agreement(table: Any, metric: str, labels: str, by: str | None = None, pair: Any = None, kind: str | None = None,
              level: str = "span") -> dict[str, Any]:
    """Agreement report for ``metric`` in scored ``table`` against the ``labels`` column, over
    the metric's counted units (``level``: ``trace`` for a trace-level metric, whose verdict a
    table read from traces repeats on each of a trace's rows; ``ragjudge.counting.unit_rows``).

    ``kind``: the metric's judge kind, ``binary`` (yes/no against boolean labels) or ``scale``
    (a score against numeric labels); default: the built-in judge's.

    With ``pair`` (a second scored table of the same rows, response B; matched by ``id`` when
    both tables have one), the pairwise sign agreement. ``excluded`` counts each left-out row
    once. Raises ``InputError`` when a column is missing, the labels column holds no usable
    label (booleans, text or inf for a 1..5 metric; not yes/no for sufficiency), or the pair
    table's ids differ.
    """
    units = unit_rows(table, level)
    if len(units) < len(table):  # a trace's copies count once, in the pair table too
        if pair is not None and len(pair) == len(table):
            pair = pair.iloc[units].reset_index(drop=True)
        table = table.iloc[units].reset_index(drop=True)
    report: dict[str, Any] = {"metric": metric, "labels": labels, "rows": len(table)}
    if pair is not None:
        if len(pair) != len(table):
            raise InputError(f"the pair table has {len(pair)} rows, the scored table {len(table)}; they must hold the same rows")
        pair, report["matched_by"] = _aligned(table, pair)
        reasons_a = _reasons(table, metric, labels, _as_float)
        reasons_b = _reasons(pair, metric, labels, _as_float, "the human labels, in the --pair table too")
        keep, report["excluded"] = _usable([a or b for a, b in zip(reasons_a, reasons_b)])  # each row once: A's reason, else B's
        report["pairwise"] = pairwise_agreement(
            [float(table[f"{metric}_score"].iloc[i]) for i in keep],
            [float(pair[f"{metric}_score"].iloc[i]) for i in keep],
            [float(table[labels].iloc[i]) for i in keep],
        )
        return report
    if kind is None:
        kind = judge_class(metric).kind
    binary = kind == "binary"
    convert = _as_bool if binary else _as_float
    keep, report["excluded"] = _usable(_reasons(table, metric, labels, convert))

    def measure(indices: list[int]) -> dict[str, Any]:
        scores = [float(table[f"{metric}_score"].iloc[i]) for i in indices]
        values = [convert(table[labels].iloc[i]) for i in indices]
        return binary_agreement(scores, values) if binary else numeric_agreement(scores, values)

    report["overall"] = measure(keep)
    if by:
        _require(table, by, "the --by column")
        groups: dict[str, list[int]] = {}
        for i in keep:
            groups.setdefault(str(table[by].iloc[i]), []).append(i)
        report["by"] = {name: measure(indices) for name, indices in sorted(groups.items())}
    return report


def _ci(interval: Any) -> str:
    return f" [95% CI {_fmt(interval[0])}-{_fmt(interval[1])}]" if interval else ""


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render(report: dict[str, Any]) -> str:
    """A plain-text rendering of ``agreement()``'s report."""
    lines = [f"{report['metric']} vs {report['labels']}: {count_of(report['rows'])}; excluded: "
             + ", ".join(f"{k} {v}" for k, v in report["excluded"].items())]
    if "pairwise" in report:
        if report.get("matched_by") == "position":
            lines.append("rows matched by position: a table has no id column, so both must list the same rows in the same order")
        p = report["pairwise"]
        lines.append(f"pairwise: n {p['n']}, decided {p['decided']}, sign agreement {_fmt(p['sign_agreement'])}, "
                     f"judge ties {p['judge_ties']}, human ties {p['human_ties']}")
        return "\n".join(lines)
    groups = [("overall", report["overall"])] + [(f"{report.get('by_column', 'by')}={k}", v) for k, v in report.get("by", {}).items()]
    for name, m in groups:
        if "accuracy" in m:
            ci = m.get("accuracy_ci95") or [None, None]
            lines.append(f"{name}: n {m['n']}, accuracy {_fmt(m['accuracy'])} [95% CI {_fmt(ci[0])}-{_fmt(ci[1])}], "
                         f"kappa {_fmt(m.get('cohen_kappa'))}, judge yes rate {_fmt(m.get('judge_yes_rate'))}")
            if m["n"]:
                for cls, v in m["per_class"].items():
                    lines.append(f"  {cls}: precision {_fmt(v['precision'])}, recall {_fmt(v['recall'])}, f1 {_fmt(v['f1'])}, support {v['support']}")
                c = m["confusion"]
                lines.append(f"  confusion (human x judge): yes/yes {c['human_yes']['judge_yes']}, yes/no {c['human_yes']['judge_no']}, "
                             f"no/yes {c['human_no']['judge_yes']}, no/no {c['human_no']['judge_no']}")
        else:
            lines.append(f"{name}: n {m['n']}, spearman {_fmt(m.get('spearman'))}{_ci(m.get('spearman_ci95'))}, "
                         f"pearson {_fmt(m.get('pearson'))}{_ci(m.get('pearson_ci95'))}, "
                         f"mae {_fmt(m.get('mae'))}, within one {_fmt(m.get('within_one'))}")
    return "\n".join(lines)

"""The abstention audit: what the application did when the context was, or was not, enough.

Every row judged ``ok`` by sufficiency, abstention and completeness falls in one cell of
sufficient / insufficient x answered correctly / answered incorrectly / abstained, the table of
Joren et al., "Sufficient Context: A New Lens on Retrieval Augmented Generation Systems" (ICLR
2025, section 4):

| sufficiency | abstention | completeness | ``audit`` cell | meaning |
|---|---|---|---|---|
| passed | failed (answered) | passed | ``sufficient_correct`` | the context held the answer and the response gave it |
| passed | failed (answered) | failed | ``sufficient_incorrect`` | the context held it; the response got it wrong |
| passed | passed (declined) | any | ``sufficient_abstained`` | over-abstention: it could have answered |
| failed | failed (answered) | passed | ``insufficient_correct`` | answered right without the context's support (parametric knowledge) |
| failed | failed (answered) | failed | ``insufficient_incorrect`` | answered without support, and wrongly: the hallucination the study measured |
| failed | passed (declined) | any | ``insufficient_abstained`` | abstained as it should |

A row whose sufficiency or abstention verdict is not ok, or that answered with no ok completeness
verdict, has no cell (null): nothing is inferred from a verdict not given. Rows read from traces:
the trace's sufficiency is that of its retrieved spans together (``ragjudge.diagnosis``' trace
rule: sufficient when any span is), crossed with the root's response on the trace's first row.

Two rates, each a share of its own row of the table, are what ``gate.max_rate`` bounds:
``answered_insufficient`` (answered, right or wrong, among the insufficient rows) and
``abstained_sufficient`` (declined among the sufficient rows). Each count's share comes with its
Wilson 95% interval (scipy's ``binomtest``, as ``ragjudge.calibrate.wilson``).

The selective-generation curve (``curve``, section 5 of the study): given a score per row (the
sufficiency probability, or the application's own confidence), a rule that abstains below a
threshold ``t`` answers a row when the application answered it and its score is ``>= t``;
coverage is the share of audited rows answered, accuracy the share answered correctly among them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ragjudge.corrected_rates import RatioCorrected, ratio_corrected
from ragjudge.diagnosis import TRACE_COLUMNS, diagnose, share_bounds
from ragjudge.errors import InputError

SUFFICIENT, INSUFFICIENT = "sufficient", "insufficient"
CORRECT, INCORRECT, ABSTAINED = "correct", "incorrect", "abstained"
CELLS = tuple(f"{s}_{o}" for s in (SUFFICIENT, INSUFFICIENT) for o in (CORRECT, INCORRECT, ABSTAINED))
RATES = ("answered_insufficient", "abstained_sufficient")
COLUMN = "audit"
METRICS = ("sufficiency", "abstention", "completeness")


def cell(sufficient: bool | None, declined: bool | None, correct: bool | None) -> str | None:
    """The audit cell of one row (one of ``CELLS``), or None when a needed verdict is missing:
    ``sufficient`` (sufficiency passed), ``declined`` (abstention passed), ``correct`` (completeness
    passed, or the row's correctness label; not needed for a declined row)."""
    if sufficient is None or declined is None or (not declined and correct is None):
        return None
    side = SUFFICIENT if sufficient else INSUFFICIENT
    return f"{side}_{ABSTAINED if declined else CORRECT if correct else INCORRECT}"


def missing(value: Any) -> bool:
    """Whether a cell is empty: None, NaN, or pandas' missing value as text (``<NA>``)."""
    if value is None:
        return True
    try:
        return bool(math.isnan(value))
    except (TypeError, ValueError):
        return str(value) in ("<NA>", "nan", "None")


def verdict_of(status: Any, passed: Any) -> bool | None:
    """A table's ``(status, passed)`` as passed (True) / failed (False), or None when the status is
    not ok (a table read back from CSV holds text)."""
    if missing(status) or str(status).strip() != "ok" or missing(passed):
        return None
    if isinstance(passed, str):
        text = passed.strip().lower()
        return True if text in ("true", "1", "1.0") else False if text in ("false", "0", "0.0") else None
    return bool(passed)


def of_frame(frame: Any, source: Any = None, labels: dict[str, list[bool | None]] | None = None) -> list[str | None] | None:
    """Each row's audit cell in a scored table (pandas DataFrame with ``M_status`` and ``M_passed``
    of sufficiency, abstention and completeness); None when a metric's columns are missing. A
    traces table (``trace_id``, ``trace_first_row``; in ``source``, the input rows of the same
    index, when ``frame`` holds the verdicts only) gets cells on each trace's first row, from the
    trace's sufficiency (``ragjudge.diagnosis.diagnose``'s trace rule). ``labels``: per metric, each
    row's label as passed / failed (None: unlabelled; ``ragjudge.counting.label_passes``): where a
    row has one, it decides in place of the judge's verdict (a completeness label: whether the answer
    was correct)."""
    names = [f"{m}_{c}" for m in METRICS for c in ("status", "passed")]
    if not all(name in frame.columns for name in names):
        return None
    if source is not None:
        import pandas as pd

        traces = [c for c in TRACE_COLUMNS if c in source.columns and c not in frame.columns]
        frame = pd.concat([source[traces], frame], axis=1) if traces else frame
    pairs = {m: list(zip(frame[f"{m}_status"].tolist(), frame[f"{m}_passed"].tolist())) for m in METRICS}
    for metric, passes in (labels or {}).items():
        pairs[metric] = [("ok", label) if label is not None else pair for pair, label in zip(pairs[metric], passes)]
    if all(name in frame.columns for name in TRACE_COLUMNS):
        # the trace's sufficiency on its first row: the diagnosis's trace rule crossed with an always-complete response
        found = diagnose(pairs["sufficiency"], [("ok", True)] * len(frame), frame["trace_id"].tolist(), frame["trace_first_row"].tolist())
        sufficient = [None if d is None else d == "ok" for d in found]
    else:
        sufficient = [verdict_of(*p) for p in pairs["sufficiency"]]
    return [cell(s, verdict_of(*a), verdict_of(*c)) for s, a, c in zip(sufficient, pairs["abstention"], pairs["completeness"])]


def of_table(frame: Any, labels: dict[str, list[bool | None]] | None = None) -> list[str | None] | None:
    """Each row's cell in a scored table read back: its ``audit`` column, else worked out from the
    verdict columns (``of_frame``, with ``labels``); None when it has neither."""
    if COLUMN in frame.columns:
        return [None if missing(v) else str(v) for v in frame[COLUMN].tolist()]
    return of_frame(frame, labels=labels)


def check_scores(values: Sequence[Any], column: str, start: int = 0) -> None:
    """Refuse, before any call, a cell of the application's confidence column (``--app-confidence``
    ``column``; ``values``: its cells, in row order) that ``scores_of`` cannot read as a number
    (``float``); a null cell is allowed: that row has no score. Raises ``InputError`` (exit 2)
    naming the column, the first such row (``row N``, 1-based; ``start``: the position of the
    first value's row in the table) and the fix."""
    for i, value in enumerate(values):
        if missing(value):
            continue
        try:
            float(value)
        except (TypeError, ValueError):
            raise InputError(f"--app-confidence: the column '{column}' holds {value!r} on row {start + i + 1}, not a number: give "
                             "each row the application's confidence as a number (the audit's curve is drawn over it), or leave the "
                             "cell null (that row then has no score)") from None


def scores_of(frame: Any, column: str | None = None) -> list[float | None]:
    """Each row's score for the curve: ``column`` (the application's own confidence) when given,
    else the sufficiency probability (``sufficiency_probability``, else ``sufficiency_p_yes``);
    None where a row has none."""
    names = [column] if column else ["sufficiency_probability", "sufficiency_p_yes"]
    out: list[float | None] = [None] * len(frame)
    for name in names:
        if name in frame.columns:
            for i, value in enumerate(frame[name].tolist()):
                if out[i] is None and not missing(value):
                    out[i] = float(value)
    return out


def wilson(count: int, n: int) -> list[float] | None:
    """The Wilson 95% interval of ``count`` of ``n`` (scipy's ``binomtest``), None for n = 0."""
    if not n:
        return None
    from scipy.stats import binomtest

    interval = binomtest(count, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [float(interval.low), float(interval.high)]


def curve(cells: Sequence[str | None], scores: Sequence[float | None], target: float | None = None) -> dict[str, Any] | None:
    """The selective-generation curve over the rows with a cell and a score: for each threshold
    ``t`` (each distinct score, lowest first; at the lowest, the rule abstains on nothing), a point
    ``{"threshold": t, "coverage": share of the rows answered by the application with score >= t,
    "accuracy": share answered correctly among those (None when none), "answered": count}``.
    ``target``: the accuracy asked for; ``"reaches"`` is then the lowest threshold (the most
    coverage) whose accuracy is at least ``target`` (None when none does). None when no row has
    both a cell and a score."""
    rows = [(float(s), c) for c, s in zip(cells, scores) if c is not None and s is not None]
    if not rows:
        return None
    points = []
    for t in sorted({s for s, _ in rows}):
        answered = [c for s, c in rows if s >= t and not c.endswith(ABSTAINED)]
        right = sum(1 for c in answered if c.endswith(f"_{CORRECT}"))
        points.append({"threshold": t, "coverage": len(answered) / len(rows), "accuracy": right / len(answered) if answered else None,
                       "answered": len(answered)})
    reaches = next((p["threshold"] for p in points if target is not None and p["accuracy"] is not None and p["accuracy"] >= target), None)
    return {"rows": len(rows), "points": points, "target": target, "reaches": reaches}


@dataclass
class Audit:
    """A run's (or one chunk's) audit: rows per cell (every one of ``CELLS``), and the cells and
    scores of the rows with a score (for ``curve``); ``max_rate`` the gate's bounds (rate name ->
    the highest share that passes); ``target_accuracy`` the curve's target."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CELLS, 0))
    scored: list[tuple[str, float]] = field(default_factory=list)
    max_rate: dict[str, float] = field(default_factory=dict)
    target_accuracy: float | None = None
    # the rows for the label-corrected rates (``corrected``), when the run has sufficiency and abstention labels: per
    # row with a judge's cell, (the judge's cell, the labels' cell on a row labelled for both, else None); None: no labels
    pairs: list[tuple[str, str | None]] | None = None
    gate_on: dict[str, str] = field(default_factory=dict)  # rate -> gate.gate_on for it (judge / corrected)
    few_labels: str = "fail"  # gate.few_labels: too few labelled rows fail the corrected gate, or fall back to the judge's rate

    def add(self, cells: Sequence[str | None], scores: Sequence[float | None] | None = None) -> None:
        """Count ``cells`` (one per row; None: no cell) and keep each celled row's score."""
        for i, name in enumerate(cells):
            if name is None:
                continue
            self.counts[name] += 1
            if scores is not None and scores[i] is not None:
                self.scored.append((name, float(scores[i])))  # type: ignore[arg-type]

    def add_pairs(self, judged: Sequence[str | None], labelled: Sequence[str | None]) -> None:
        """Keep, for the corrected rates, each row's cell by the judge's verdicts alone (``judged``;
        None: no cell, the row is left out) and by the labels where the row is labelled for both
        sufficiency and abstention (``labelled``; None: unlabelled, or no cell)."""
        found = self.pairs if self.pairs is not None else []
        found.extend((j, lab) for j, lab in zip(judged, labelled) if j is not None)
        self.pairs = found

    def merge(self, other: "Audit") -> "Audit":
        pairs = None if self.pairs is None and other.pairs is None else [*(self.pairs or []), *(other.pairs or [])]
        return Audit({k: self.counts.get(k, 0) + other.counts.get(k, 0) for k in CELLS}, [*self.scored, *other.scored],
                     self.max_rate or other.max_rate, self.target_accuracy if self.target_accuracy is not None else other.target_accuracy,
                     pairs, self.gate_on or other.gate_on, self.few_labels)

    @property
    def rows(self) -> int:
        """Rows with a cell."""
        return sum(self.counts.values())

    def side(self, name: str) -> int:
        """Rows with a cell on one side (``sufficient`` / ``insufficient``)."""
        return sum(self.counts[f"{name}_{o}"] for o in (CORRECT, INCORRECT, ABSTAINED))

    def rate(self, name: str) -> tuple[int, int]:
        """A rate of ``RATES`` as (count, of rows): ``answered_insufficient`` answered among the
        insufficient rows, ``abstained_sufficient`` declined among the sufficient rows."""
        if name == "answered_insufficient":
            return self.counts["insufficient_correct"] + self.counts["insufficient_incorrect"], self.side(INSUFFICIENT)
        if name == "abstained_sufficient":
            return self.counts["sufficient_abstained"], self.side(SUFFICIENT)
        raise KeyError(name)

    def corrected(self, name: str) -> RatioCorrected | None:
        """The label-corrected ``name`` rate (``RATES``) with its 95% interval
        (``corrected_rates.ratio_corrected``: PPI++ means of its count's and its rows' indicators
        over the same rows, their ratio, a seeded bootstrap interval); None when the run has no
        sufficiency and abstention labels."""
        if self.pairs is None:
            return None
        if name not in RATES:
            raise KeyError(name)
        labelled = [(*indicators(name, lab), *indicators(name, j)) for j, lab in self.pairs if lab is not None]
        unlabelled = [indicators(name, j) for j, lab in self.pairs if lab is None]
        return ratio_corrected(labelled, unlabelled)

    def curve(self) -> dict[str, Any] | None:
        return curve([c for c, _ in self.scored], [s for _, s in self.scored], self.target_accuracy)

    def to_dict(self) -> dict[str, Any]:
        """The table for the summary JSON: per cell its count, share of the audited rows and Wilson
        interval; per rate its value, count, rows and interval, and where the run has sufficiency and
        abstention labels its ``corrected`` rate (``RatioCorrected.to_dict``); the curve (None without scores)."""
        n = self.rows
        cells = {k: {"count": v, "share": v / n if n else None, "interval": wilson(v, n)} for k, v in self.counts.items()}
        rates = {}
        for name in RATES:
            count, of = self.rate(name)
            found = self.corrected(name)
            rates[name] = {"value": count / of if of else None, "count": count, "rows": of, "interval": wilson(count, of),
                           "max": self.max_rate.get(name), **({} if found is None else {"corrected": found.to_dict()})}
        return {"rows": n, "cells": cells, "rates": rates, "curve": self.curve()}


def of_config(config: Any) -> Audit:
    """An empty audit with the run's gate settings (``config.gate``: ``max_rate``,
    ``target_accuracy``, ``gate_on`` per rate, ``few_labels``)."""
    gate = config.gate
    return Audit(max_rate=dict(gate.max_rate), target_accuracy=gate.target_accuracy, gate_on={name: gate.gates_on(name) for name in RATES},
                 few_labels=gate.few_labels)


def add_labelled(audit: Audit, frame: Any, source: Any, labels: dict[str, list[bool | None]], cells: Sequence[str | None]) -> None:
    """Keep in ``audit`` (``Audit.add_pairs``) the rows for its corrected rates when ``labels``
    (``ragjudge.counting.label_passes``) has sufficiency and abstention: each row's cell by the
    judge alone (``of_frame(frame, source)``) and, on a row labelled for both, its cell ``cells``
    (the labels deciding); nothing without both labels."""
    if "sufficiency" not in labels or "abstention" not in labels:
        return
    judged = of_frame(frame, source)
    if judged is None:
        return
    both = [s is not None and a is not None for s, a in zip(labels["sufficiency"], labels["abstention"])]
    audit.add_pairs(judged, [c if labelled else None for c, labelled in zip(cells, both)])


def corrected_gate(audit: Audit, name: str, bound: float, counts: dict[str, Any]) -> tuple[bool, float | None] | None:
    """``max_rate`` ``bound`` on the upper bound of the label-corrected ``name`` rate's 95% interval
    (``Audit.corrected``; ``gate_on: corrected``), as ``(passed, upper bound)``: passes when the
    upper bound is at or below ``bound``. Too few labelled rows, no row on the rate's side, or no
    sufficiency and abstention labels give ``(False, None)``, as the corrected pass rate; None: the
    uncorrected rate is gated instead (``bound`` 1, which no rate is above, or too few labels under
    ``few_labels: judge``: ``counts["fallback"]`` then says so). ``counts`` gets the figures the
    gate's line names (``ragjudge.reports.gate_text``)."""
    found = audit.corrected(name)
    counts.update(corrected=True, labelled=0 if found is None else found.labelled, unlabelled=0 if found is None else found.unlabelled,
                  needed=None if found is None else found.needed, estimate=None if found is None else found.estimate,
                  low=None if found is None else found.low, high=None if found is None else found.high, no_labels=found is None)
    if found is not None and found.high is not None:
        return not found.high > bound, found.high
    if bound >= 1:
        return None
    if audit.few_labels == "judge" and found is not None and found.needed is not None:
        counts["fallback"] = True
        return None
    return False, None


def indicators(name: str, cell_name: str) -> tuple[int, int]:
    """A row's cell (one of ``CELLS``) as the 0/1 pair (counted in the ``name`` rate, on its side of
    the table): ``answered_insufficient`` (answered with insufficient context, insufficient context),
    ``abstained_sufficient`` (declined with sufficient context, sufficient context)."""
    side, outcome = (INSUFFICIENT, None) if name == "answered_insufficient" else (SUFFICIENT, ABSTAINED)
    on_side = cell_name.startswith(f"{side}_")
    counted = on_side and (not cell_name.endswith(ABSTAINED) if outcome is None else cell_name.endswith(ABSTAINED))
    return int(counted), int(on_side)


def parse_bounds(value: Any) -> dict[str, float]:
    """``gate.max_rate`` checked: rate name (``RATES``) -> the highest share (0..1) that passes.
    Raises ``ValueError`` naming an unknown rate or a share out of range (``diagnosis.share_bounds``)."""
    return share_bounds(value, RATES, "rate")


def corrected_text(found: RatioCorrected) -> str:
    """A corrected rate in words: ``12.0% [5.1%, 20.3%] (40 labelled of 200 rows)``, or why there is none."""
    rows = f"{found.labelled} labelled of {found.labelled + found.unlabelled} rows"
    if found.needed is not None:
        return f"too few labels ({rows}, {found.needed} more needed)"
    if found.estimate is None:
        return f"no row on its side of the table ({rows})"
    return f"{found.estimate:.1%} [{found.low:.1%}, {found.high:.1%}] ({rows})"


def lines(audit: "Audit") -> list[str]:
    """The console's audit lines: the 2 x 3 table's counts and shares, then the two rates."""
    n = audit.rows
    if not n:
        return ["abstention audit: no row has sufficiency, abstention and completeness all ok"]

    def share(v: int, of: int) -> str:
        return f"{v} ({v / of:.0%})" if of else f"{v}"

    out = [f"abstention audit ({n} rows):"]
    for side in (SUFFICIENT, INSUFFICIENT):
        out.append(f"  {side:<12} correct {share(audit.counts[f'{side}_correct'], n)}, incorrect {share(audit.counts[f'{side}_incorrect'], n)}, "
                   f"abstained {share(audit.counts[f'{side}_abstained'], n)}")
    for name in RATES:
        count, of = audit.rate(name)
        out.append(f"  {name}: {count / of:.1%} ({count} of {of})" if of else f"  {name}: no row")
        found = audit.corrected(name)
        if found is not None:
            out.append(f"  {name} corrected by the labels: {corrected_text(found)}")
    found = audit.curve()
    if found and found["target"] is not None:
        out.append(f"  selective generation: accuracy {found['target']:.0%} reached at threshold {found['reaches']:g}" if found["reaches"] is not None
                   else f"  selective generation: no threshold reaches accuracy {found['target']:.0%}")
    return out


__all__ = ["ABSTAINED", "Audit", "CELLS", "COLUMN", "CORRECT", "INCORRECT", "RATES", "add_labelled", "cell", "corrected_gate", "corrected_text", "curve", "indicators", "lines",
           "of_config", "of_frame", "of_table", "parse_bounds", "scores_of", "verdict_of", "wilson"]

"""``ragjudge calibrate --cascade``: the cascade band fitted on labelled rows, from the first
stage's replies as the scored table holds them (no judge call).

A table scored with a cascade (``ragjudge score --cascade FIRST,THEN -o scored.parquet``) holds
per row the first stage's P(yes) and verdict (``M_cascade_FIRST_probability``, ``_passed``)
and, on the rows it escalated, the later stage's (the final ``M_passed`` where ``M_stage`` is
not the first). With the rows' labels, ``ragjudge.cascade.fit_band`` picks the band that reaches
``--target-agreement`` at the least escalation, or the best agreement within
``--max-escalate``, out of fold; a row the fitted band escalates but the scored run did not has
no later verdict and is counted as decided right (said, with how many).
"""

from __future__ import annotations

from typing import Any

from ragjudge.corrected_rates import label_pass
from ragjudge.cascade import BandFit, fit_band, stage_label
from ragjudge.calibrate import one_class
from ragjudge.errors import ConfigError, InputError

MIN_ROWS = 20  # labelled rows with a first-stage P(yes) below which no band is fitted


class NotFitted(Exception):
    """Labels no band can be fitted on, as ``ragjudge calibrate`` refuses them (``calibrate.one_class``:
    one class only, or fewer of the smaller than folds): ``n`` labelled rows, ``reason`` the words.
    ``calibrate --cascade`` then writes nothing, exit 1."""

    def __init__(self, metric: str, n: int, reason: str) -> None:
        super().__init__(reason)
        self.metric, self.n, self.reason = metric, n, reason

    def lines(self) -> list[str]:
        """The refusal for the terminal, as ``calibrate`` prints a metric it did not fit."""
        return [f"{self.metric}: {self.n} labelled rows", f"  not fitted: {self.reason}"]


def band_of(frame: Any, settings: Any, metric: str, column: str, *, target: float | None = None, max_escalate: float | None = None,
            folds: int = 5) -> BandFit:
    """The ``BandFit`` of ``metric`` on ``frame`` (a table scored with ``settings.judge.cascade``,
    its labels in ``column``). Raises ``ConfigError`` without a cascade in ``settings`` or without
    exactly one of ``target`` / ``max_escalate``; ``InputError`` for a table without the first
    stage's columns, or with fewer than ``MIN_ROWS`` labelled rows that have a first-stage P(yes);
    ``NotFitted`` for labels of one class, or fewer of the smaller class than ``folds`` (any band
    agrees with them all: the fit would measure nothing), as plain ``calibrate`` refuses them."""
    stages = settings.judge.cascade
    if not stages:
        raise ConfigError("--cascade fits the band of the cascade the table was scored with: give its config (-c) or "
                          "--set judge.cascade=FIRST,THEN")
    if (target is None) == (max_escalate is None):
        raise ConfigError("calibrate --cascade needs one of --target-agreement (the least escalation reaching it) or --max-escalate "
                          "(the best agreement within it)")
    first = stage_label(stages[0])
    probability, passed = f"{metric}_cascade_{first}_probability", f"{metric}_cascade_{first}_passed"
    if probability not in frame.columns or passed not in frame.columns:
        raise InputError(f"no column {probability}: calibrate --cascade reads the first stage's P(yes) from a table scored with the "
                         f"cascade (ragjudge score --cascade {','.join(stages)} -o scored.parquet)")
    low, high = settings.scale(metric)
    binary = (float(low), float(high)) == (0.0, 1.0)
    cut = float(settings.label_threshold(metric))
    rows = []
    labels: list[bool] = []  # each row's label as a pass
    for p, first_passed, stage, final, label in zip(frame[probability], frame[passed], frame.get(f"{metric}_stage", [None] * len(frame)),
                                                     frame.get(f"{metric}_passed", [None] * len(frame)), frame[column]):
        found = label_pass(label, binary, cut, (float(low), float(high)))
        if found is None or _missing(p) or _missing(first_passed):
            continue
        later = None if _missing(stage) or stage == first or _missing(final) else bool(final) == bool(found)
        rows.append((float(p), bool(first_passed) == bool(found), later))
        labels.append(bool(found))
    if len(rows) < MIN_ROWS:
        raise InputError(f"{metric}: {len(rows)} labelled row(s) with a first-stage P(yes) in '{column}'; calibrate --cascade needs "
                         f"at least {MIN_ROWS}")
    refused = one_class(labels, folds, binary, cut)
    if refused is not None:
        raise NotFitted(metric, len(rows), refused)
    return fit_band([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], target=target, max_escalate=max_escalate,
                    folds=folds)


def fit_lines(metric: str, found: BandFit, target: float | None, max_escalate: float | None) -> list[str]:
    """The fit's figures for the terminal."""
    aim = f"agreement {target:g} at the least escalation" if target is not None else f"the best agreement escalating at most {max_escalate:g}"
    lines = [f"{metric}: {found.n} labelled rows; cascade band for {aim}: [{found.band[0]:g}, {found.band[1]:g}]",
             f"  first stage alone: agreement {found.first_alone:.2f}",
             f"  with the band, every row: agreement {found.agreement:.2f}, escalated {found.escalated:.2f}",
             f"  out of fold: agreement {found.oof_agreement:.2f} [{found.oof_interval[0]:.2f}, {found.oof_interval[1]:.2f}], "
             f"escalated {found.oof_escalated:.2f}"]
    if found.assumed:
        lines.append(f"  {found.assumed} row(s) the band escalates were not escalated when scored: their later verdict is unknown and "
                     "counted right (score again with the band written, then calibrate again, for the figure with their verdicts)")
    if not found.met:
        lines.append(f"  not met: no band reaches agreement {target:g} on these rows" if target is not None else "  not met")
    return lines


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or str(value) in ("<NA>", "nan")


__all__ = ["MIN_ROWS", "NotFitted", "band_of", "fit_lines"]

"""Judge quality that holds on rows nobody has seen: the embedded judge's agreement with human
labels, its decision thresholds chosen by cross-validation (issue 21).

Rows: every development row of ../shared/data never used for a choice, i.e. all but the
calibration rows that chose earlier prompts and thresholds (bench/calibration_ids.txt) and the
24 SQuALITY rows that chose the completeness design (``design_rows``). Each row is scored once by
the embedded judge (configs/local.yaml) through the response cache; the judge's raw verdicts
(its written verdict and its token probabilities) are then read back from the cache, and every
decision is made again by the judges' own ``decide`` with each candidate setting.

Thresholds are chosen by stratified k-fold cross-validation (k = 5, seed 0): in each fold the
setting with the best accuracy on the other folds is applied to the held-out fold, and the
figure reported is the out-of-fold accuracy (with its Wilson 95% interval and n), never the
accuracy on the rows a threshold was fitted to. The setting to ship is the one fitted on all
rows; where the out-of-fold figure is no better than the written verdicts (or than always
answering the majority class) the threshold does not generalise, and the script says so.

The settings to ship are ``ragjudge calibrate``'s (``calibrate_figures``: ``ragjudge.calibrate.fit``,
the command's own code, on the same rows from a neutral start; it says whether it reproduces
configs/local.yaml); the grids below are the figures around them (each check alone, a blend,
the stability):

- reference-free sufficiency (CLAPNQ, SQuAD 2.0 unanswerable, pooled): ``sufficiency.yes_threshold``;
- grounded sufficiency (SQuAD 2.0 gold-removed): ``sufficiency.fact_threshold`` with
  ``sufficiency.fact_evidence``;
- completeness (SQuALITY): Spearman, Pearson, MAE, within one point (no choice: all rows),
  and the pass mark's agreement with "human rating >= 3", the pass mark itself chosen out of
  fold; RAGChecker pairs: sign agreement with the human preference.

    python bench/quality.py [--data ../shared/data] [--config configs/local.yaml] [--folds 5] [--cached-only]

Everything is answered from the response cache once the rows have been scored (the first run
scores them with the embedded model: hours on 2 cores). Writes bench/_work/quality/summary.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, machine

SUFFICIENCY = [("squad2_goldremoved_sufficiency_dev", "grounded"), ("clapnq_sufficiency_dev", "reference_free"),
               ("squad2_unanswerable_sufficiency_dev", "reference_free")]
CALIBRATION = {line.strip() for line in open(Path(__file__).with_name("calibration_ids.txt"), encoding="utf-8")
               if line.strip() and not line.startswith("#")}


def load(data: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in open(data / f"{name}.jsonl", encoding="utf-8")]


def design_ids(data: Path) -> set[str]:
    """The 24 SQuALITY rows on which bench/completeness_variants.py chose the two-call design
    (the same choice as bench/agreement.py made it: seed 0 for a 40-row held-out sample, seed 1
    for the design rows outside it)."""
    rows = load(data, "squality_completeness_dev")
    shuffled = [r for r in rows if r["id"] not in CALIBRATION]
    random.Random(0).shuffle(shuffled)
    held_out = {r["id"] for r in shuffled[:40]}
    rest = [r for r in rows if r["id"] not in held_out]
    random.Random(1).shuffle(rest)
    return {r["id"] for r in rest[:24]}


def wilson(k: int, n: int) -> list[float | None]:
    """The Wilson 95% interval of k of n (``ragjudge.calibrate.wilson``, what ``ragjudge calibrate`` prints)."""
    from ragjudge.calibrate import wilson as interval

    return interval(k, n) or [None, None]


def folds(labels: list[Any], k: int, seed: int) -> list[int]:
    """Fold of each row, stratified by label (``ragjudge.calibrate.folds``: the folds ``ragjudge calibrate`` uses)."""
    from ragjudge.calibrate import folds as stratified

    return stratified(labels, k, seed)


def best(candidates: list[Any], score: Any) -> Any:
    """The candidate with the best score; among equals, the middle one (a plateau's centre)."""
    scored = [(score(c), c) for c in candidates]
    top = max(s for s, _ in scored)
    tied = [c for s, c in scored if s == top]
    return tied[len(tied) // 2]


class Table:
    """Each row's decision under a setting, computed once per setting (``decide(row, setting)``)
    and looked up after: cross-validation asks for the same decisions many times."""

    def __init__(self, rows: list[Any], decide: Any) -> None:
        self.rows, self.decide, self.memo = rows, decide, {}

    def __call__(self, setting: Any) -> list[Any]:
        if setting not in self.memo:
            self.memo[setting] = [self.decide(row, setting) for row in self.rows]
        return self.memo[setting]


def cross_validate(rows: list[Any], labels: list[bool], candidates: list[Any], decide: Any, k: int, seed: int,
                   table: Table | None = None) -> dict[str, Any]:
    """Out-of-fold accuracy of choosing a candidate setting on k-1 folds, for each held-out fold;
    and the setting fitted on every row. ``table``: the decisions, when already made for another
    grid (shared, so a decision is made once)."""
    table = table or Table(rows, decide)
    fold = folds(labels, k, seed)
    right = [False] * len(rows)
    said = [None] * len(rows)
    chosen = []
    for f in range(k):
        train = [i for i in range(len(rows)) if fold[i] != f]
        pick = best(candidates, lambda c, train=train: sum(table(c)[i] == labels[i] for i in train))
        chosen.append(pick)
        for i in range(len(rows)):
            if fold[i] == f:
                said[i] = table(pick)[i]
                right[i] = said[i] == labels[i]
    fitted = best(candidates, lambda c: sum(d == y for d, y in zip(table(c), labels)))
    n, k_right = len(rows), sum(right)
    return {"n": n, "out_of_fold_accuracy": k_right / n if n else None, "interval": wilson(k_right, n), "chosen_per_fold": chosen,
            "fitted_on_all": fitted, "fitted_accuracy_in_sample": sum(d == y for d, y in zip(table(fitted), labels)) / n if n else None,
            "right": right, "said": said, "fold": fold, "table": table}


def logistic_cv(features: list[list[float]], labels: list[bool], k: int, seed: int, l2: float = 1.0) -> dict[str, Any]:
    """Out-of-fold accuracy of a logistic blend of ``features`` (one list of numbers per row): in
    each fold an L2-penalised logistic regression (``l2`` on the standardised weights; fitted
    with scipy's L-BFGS-B) fitted on the other folds, and the cut on its probability (0.05..0.95)
    with the best accuracy there, applied to the held-out fold. Same folds as
    ``cross_validate``. Returns n, out_of_fold_accuracy, interval, right and said per row, the
    cut per fold, and the weights fitted on all rows (intercept first, on standardised features)."""
    import numpy as np
    from scipy.optimize import minimize

    x, y = np.asarray(features, float), np.asarray(labels, float)
    fold = np.asarray(folds(labels, k, seed))
    cuts = [round(0.05 + 0.01 * c, 2) for c in range(91)]

    def fit(train: Any) -> tuple[Any, Any]:
        mean, scale = x[train].mean(0), x[train].std(0) + 1e-9
        z, target = (x[train] - mean) / scale, y[train]

        def loss(w: Any) -> float:
            logit = z @ w[1:] + w[0]
            return float(np.sum(np.logaddexp(0, logit) - target * logit) + l2 * np.sum(w[1:] ** 2))

        w = minimize(loss, np.zeros(x.shape[1] + 1), method="L-BFGS-B").x
        return (lambda rows: 1 / (1 + np.exp(-(((x[rows] - mean) / scale) @ w[1:] + w[0])))), w

    said = np.zeros(len(y), bool)
    chosen = []
    for f in range(k):
        train, test = fold != f, fold == f
        model, _ = fit(train)
        p = model(train)
        cut = best(cuts, lambda c, p=p, train=train: int(np.sum((p >= c) == y[train].astype(bool))))
        chosen.append(cut)
        said[test] = model(test) >= cut
    right = said == y.astype(bool)
    _, weights = fit(np.ones(len(y), bool))
    n, k_right = len(y), int(right.sum())
    return {"n": n, "out_of_fold_accuracy": k_right / n if n else None, "interval": wilson(k_right, n), "cut_per_fold": chosen,
            "weights_fitted_on_all": [float(w) for w in weights], "right": [bool(r) for r in right], "said": [bool(v) for v in said]}


DELTAS = (-0.05, -0.02, 0.02, 0.05)


def stability(cv: dict[str, Any], labels: list[bool], shift: Any, members: list[int] | None = None, flip: float = 0.02,
              deltas: tuple[float, ...] = DELTAS) -> dict[str, Any]:
    """How much the out-of-fold figure hangs on the exact threshold: the out-of-fold accuracy
    when each fold's chosen threshold is moved by each of ``deltas`` (``shift(setting, delta)``:
    the setting with its threshold moved), beside the headline figure; and the share of rows
    whose verdict differs between the chosen threshold - ``flip`` and + ``flip`` (the rows on
    the knife's edge). ``members``: the rows to report on (a slice of pooled rows)."""
    table, fold, chosen = cv["table"], cv["fold"], cv["chosen_per_fold"]
    members = list(range(len(labels))) if members is None else members
    n = len(members)
    if not n:
        return {"n": 0}

    def oof(delta: float) -> list[Any]:
        return [table(shift(chosen[fold[i]], delta))[i] for i in members]

    headline = sum(d == labels[i] for d, i in zip(oof(0.0), members)) / n
    out: dict[str, Any] = {"n": n, "out_of_fold_accuracy": headline}
    for delta in deltas:
        accuracy = sum(d == labels[i] for d, i in zip(oof(delta), members)) / n
        out[f"at_{delta:+.2f}"] = accuracy
    out["worst_loss_within_0.02"] = headline - min(out[f"at_{d:+.2f}"] for d in deltas if abs(d) <= flip + 1e-9)
    low, high = oof(-flip), oof(flip)
    out[f"flips_within_{flip:.2f}"] = sum(a != b for a, b in zip(low, high)) / n
    return out


def moved(value: float | None, delta: float, low: float = 0.01, high: float = 0.99) -> float | None:
    """A probability threshold moved by ``delta``, kept inside (0, 1); None stays None."""
    return None if value is None else round(min(high, max(low, value + delta)), 2)


class Judged:
    """The embedded judge's raw verdicts on rows (scored through the cache), and decisions made
    again from them with other settings."""

    def __init__(self, config_path: str, cached_only: bool = False) -> None:
        from ragjudge.config import read_raw_config as load_config  # the config as read, untyped
        from ragjudge.scoring import Scorer

        self.scorer = Scorer(load_config(ROOT / config_path))
        self.config = self.scorer.config
        self.cached_only = cached_only
        self._judges: dict[Any, Any] = {}  # a judge per setting tried, made once

    def score(self, rows: list[dict], metric: str, response: str = "response") -> None:
        """Fill the cache for ``rows`` (the embedded model answers what is not cached; with
        ``cached_only`` nothing is judged, and rows not in the cache count as excluded)."""
        import pandas as pd

        if self.cached_only:
            return
        frame = pd.DataFrame(rows)
        if response != "response":
            frame = frame.drop(columns=["response"]).rename(columns={response: "response"})
        config = self.config.model_copy(update={"metrics": [metric]})
        from ragjudge.scoring import Scorer

        scorer = Scorer(config)
        try:
            scorer.score(frame)
        finally:
            scorer.close()

    def raw(self, rows: list[dict], metric: str, response: str = "response") -> list[tuple[Any, Any, Any]]:
        """(judge, call, raw verdict) per row: the verdict the judge wrote, before any decision
        (None for a row the judge could not answer)."""
        import pandas as pd

        from ragjudge.judges import make_judges
        from ragjudge.types import Verdict

        frame = pd.DataFrame(rows)
        if response != "response":
            frame = frame.drop(columns=["response"]).rename(columns={response: "response"})
        judge = make_judges(self.config.model_copy(update={"metrics": [metric]}))[0]
        mapping = self.scorer.resolve(frame)
        out = []
        for record in self.scorer.records(frame, mapping):
            call = judge.prepare(record)
            if isinstance(call, Verdict):  # answered without a call (an empty retrieval, say)
                out.append((judge, None, call if call.status == "ok" else None))
                continue
            while not call.final:
                first = self.scorer.model.peek(call)
                call = judge.follow_up(call, first) if first is not None and first.status == "ok" else None
                if call is None:
                    break
            found = self.scorer.model.peek(call) if call is not None else None
            out.append((judge, call, found))
        return out

    def decided(self, judged: tuple[Any, Any, Any], **settings: Any) -> Any:
        """The verdict with ``settings`` (the metric's own settings, e.g. ``yes_threshold``) applied by
        the judge's own ``decide``."""
        from ragjudge.judges import judge_class

        judge, call, verdict = judged
        if verdict is None or call is None:
            return verdict
        if not settings:
            return judge.decide(verdict.copy(), call)
        key = (judge.name, tuple(sorted(settings.items())))
        other = self._judges.get(key)
        if other is None:
            other = self._judges[key] = judge_class(judge.name)(self.config.judge, judge.threshold,
                                                                options=judge.options.model_copy(update=settings))
        return other.decide(verdict.copy(), call)


def public(cv: dict[str, Any]) -> dict[str, Any]:
    """A cross-validation's figures, less its per-row working."""
    return {key: v for key, v in cv.items() if key not in ("right", "said", "fold", "table")}


CUTS = [round(0.30 + 0.01 * c, 2) for c in range(70)]  # yes_threshold candidates, 0.30..0.99
QUOTES = [0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # quote_check candidates (0.0: only a NONE quote turns yes into no)
REQUESTS = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # request_evidence candidates


def blend_features(item: tuple[Any, Any, Any]) -> list[float]:
    """A reference-free verdict's numbers for the logistic blend: the log-odds of P(yes) (clipped
    to 1e-4..1-1e-4) and how well its quote occurs in the passages (``words.quote_match``, 0 for
    NONE)."""
    import math

    from ragjudge.judges.words import quote_match, quotes_nothing

    _, call, verdict = item
    details = verdict.details or {}
    p = min(max(float(details["p_yes"]), 1e-4), 1 - 1e-4)
    quote = details.get("quote")
    return [math.log(p / (1 - p)), 0.0 if quotes_nothing(quote) else quote_match(str(quote), call.passages)]


def sufficiency_figures(judged: Judged, data: Path, k: int, seed: int) -> dict[str, Any]:
    rows = {name: [r for r in load(data, name) if r["id"] not in CALIBRATION] for name, _ in SUFFICIENCY}
    raw = {}
    for name, _ in SUFFICIENCY:  # the reference-free slices hold no reference: their rows are judged reference-free
        judged.score(rows[name], "sufficiency")
        raw[name] = judged.raw(rows[name], "sufficiency")
    out: dict[str, Any] = {}
    # reference-free: one yes_threshold (and quote_check) for both slices, chosen out of fold on the pooled rows
    pooled = [(name, i) for name, mode in SUFFICIENCY if mode == "reference_free" for i in range(len(rows[name]))]
    usable = [(name, i) for name, i in pooled if raw[name][i][2] is not None and (raw[name][i][2].details or {}).get("p_yes") is not None]
    labels = [bool(rows[name][i]["label_sufficient"]) for name, i in usable]
    items = [raw[name][i] for name, i in usable]
    # a setting: (yes_threshold, quote_check, request_evidence)
    decide = lambda item, setting: judged.decided(item, yes_threshold=setting[0], quote_check=setting[1],  # noqa: E731
                                                  request_evidence=setting[2]).score >= 0.5
    written = lambda item: item[2].score >= 0.5  # noqa: E731
    table = Table(items, decide)
    shift = lambda setting, delta: (moved(setting[0], delta), setting[1], setting[2])  # noqa: E731
    alone = cross_validate(items, labels, [(c, None, None) for c in CUTS], decide, k, seed, table)
    quoted = cross_validate(items, labels, [(c, q, None) for c in [None, *CUTS] for q in [None, *QUOTES]], decide, k, seed, table)
    quote_only = cross_validate(items, labels, [(None, q, None) for q in [None, *QUOTES]], decide, k, seed, table)
    requested = cross_validate(items, labels, [(c, None, r) for c in [None, *CUTS] for r in [None, *REQUESTS]], decide, k, seed, table)
    blended = logistic_cv([blend_features(item) for item in items], labels, k, seed)
    out["reference_free"] = {"n": len(items), "excluded": len(pooled) - len(usable), "cv": public(alone),
                             "logistic_blend": {key: v for key, v in blended.items() if key not in ("right", "said")},
                             "stability": stability(alone, labels, shift),
                             "with_quote_check": {"cv": public(quoted), "stability": stability(quoted, labels, shift)},
                             "quote_check_on_the_written_verdict": {"cv": public(quote_only)},
                             "with_request_check": {"cv": public(requested), "stability": stability(requested, labels, shift)}}
    for name, mode in SUFFICIENCY:
        if mode != "reference_free":
            continue
        mine = [j for j, (slice_name, _) in enumerate(usable) if slice_name == name]
        if not mine:
            out[name] = {"mode": mode, "n": 0, "excluded": len(rows[name]), "note": "no row judged yet"}
            continue
        right = sum(alone["right"][j] for j in mine)
        with_quote = sum(quoted["right"][j] for j in mine)
        with_request = sum(requested["right"][j] for j in mine)
        with_blend = sum(blended["right"][j] for j in mine)
        quote_written = sum(quote_only["right"][j] for j in mine)
        written_right = sum(written(items[j]) == labels[j] for j in mine)
        majority = max(sum(labels[j] for j in mine), len(mine) - sum(labels[j] for j in mine))
        out[name] = {"mode": mode, "n": len(mine), "excluded": len(rows[name]) - len(mine),
                     "out_of_fold_accuracy": right / len(mine), "interval": wilson(right, len(mine)),
                     "stability": stability(alone, labels, shift, mine),
                     "with_quote_check": {"out_of_fold_accuracy": with_quote / len(mine), "interval": wilson(with_quote, len(mine)),
                                          "stability": stability(quoted, labels, shift, mine),
                                          "judge_yes_rate_out_of_fold": sum(bool(quoted["said"][j]) for j in mine) / len(mine)},
                     "with_request_check": {"out_of_fold_accuracy": with_request / len(mine), "interval": wilson(with_request, len(mine)),
                                            "stability": stability(requested, labels, shift, mine),
                                            "judge_yes_rate_out_of_fold": sum(bool(requested["said"][j]) for j in mine) / len(mine)},
                     "logistic_blend": {"out_of_fold_accuracy": with_blend / len(mine), "interval": wilson(with_blend, len(mine))},
                     "quote_check_on_the_written_verdict": {"out_of_fold_accuracy": quote_written / len(mine),
                                                            "interval": wilson(quote_written, len(mine))},
                     "written_verdict_accuracy": written_right / len(mine), "written_interval": wilson(written_right, len(mine)),
                     "majority_accuracy": majority / len(mine),
                     "judge_yes_rate_out_of_fold": sum(bool(alone["said"][j]) for j in mine) / len(mine),
                     "human_yes_rate": sum(labels[j] for j in mine) / len(mine)}
    # grounded: fact_threshold with fact_evidence, chosen out of fold
    name = SUFFICIENCY[0][0]
    items = [item for item in raw[name] if item[2] is not None]
    labels = [bool(row["label_sufficient"]) for row, item in zip(rows[name], raw[name]) if item[2] is not None]
    if not items:
        out[name] = {"mode": "grounded", "n": 0, "excluded": len(rows[name]), "note": "no row judged yet"}
        return out
    thresholds = [None, *[round(0.30 + 0.05 * c, 2) for c in range(14)]]
    grid = [(t, e) for t in thresholds for e in [None, 0.3, 0.4, 0.5, 0.6, 0.7]]
    decide = lambda item, setting: judged.decided(item, fact_threshold=setting[0], fact_evidence=setting[1]).score >= 0.5  # noqa: E731
    table = Table(items, decide)
    cv = cross_validate(items, labels, grid, decide, k, seed, table)
    alone = cross_validate(items, labels, [(t, None) for t in thresholds], decide, k, seed, table)
    written_right = sum((item[2].score >= 0.5) == y for item, y in zip(items, labels))
    out[name] = {"mode": "grounded", "n": len(items), "excluded": len(rows[name]) - len(items),
                 "cv": public(cv), "out_of_fold_accuracy": cv["out_of_fold_accuracy"], "interval": cv["interval"],
                 "stability": stability(cv, labels, lambda setting, delta: (moved(setting[0], delta), setting[1])),
                 "without_evidence_check": public(alone),
                 "written_verdict_accuracy": written_right / len(items), "written_interval": wilson(written_right, len(items)),
                 "majority_accuracy": max(sum(labels), len(labels) - sum(labels)) / len(labels),
                 "judge_yes_rate_out_of_fold": sum(bool(x) for x in cv["said"]) / len(items), "human_yes_rate": sum(labels) / len(labels)}
    return out


# `ragjudge calibrate` chooses the settings to ship (issue 48): its fit (``ragjudge.calibrate.fit``) on
# the rows above, from a neutral start, so that a tie cannot keep the shipped value by default. The
# probability thresholds stay set (unset, the request asks for no log-probabilities: another cache key).
NEUTRAL = {"sufficiency": ["sufficiency.yes_threshold=0.5", "sufficiency.fact_threshold=0.5", "sufficiency.fact_evidence=null",
                           "sufficiency.quote_check=null", "sufficiency.request_evidence=null"],
           "completeness": ["thresholds.completeness=3", "completeness.statement_evidence=null", "completeness.evidence_weight=null"]}
# (group, metric, label column, slices): what calibrate fits on, each group on its own
CALIBRATED = [("reference_free", "sufficiency", "label_sufficient", [name for name, mode in SUFFICIENCY if mode == "reference_free"]),
              ("grounded", "sufficiency", "label_sufficient", [name for name, mode in SUFFICIENCY if mode == "grounded"]),
              ("squality", "completeness", "label_completeness", ["squality_completeness_dev"])]


def calibrate_figures(config: str, data: Path, k: int, seed: int, metrics: tuple[str, ...] = ("sufficiency", "completeness")) -> dict[str, Any]:
    """What ``ragjudge calibrate TABLE --labels METRIC=LABEL -c CONFIG --set ...`` (NEUTRAL)
    chooses on each group of development rows (the reference-free sufficiency slices pooled, the
    grounded slice, the SQuALITY rows outside the completeness design rows), from the cached
    replies (no call), beside the settings ``config`` ships; ``reproduces``: whether every chosen
    setting equals the shipped one."""
    import pandas as pd

    from ragjudge import options
    from ragjudge.calibrate import fit, start_settings
    from ragjudge.errors import RagjudgeError

    design = design_ids(data)
    out: dict[str, Any] = {}
    for group, metric, label, names in CALIBRATED:
        if metric not in metrics:
            continue
        shipped = start_settings(options.load(str(ROOT / config), {"metric": [metric]})[0], metric)
        settings, _ = options.load(str(ROOT / config), {"metric": [metric]}, NEUTRAL[metric])
        frame = pd.DataFrame([r for name in names for r in load(data, name) if r["id"] not in CALIBRATION and r["id"] not in design])
        try:
            found = fit(frame, settings, metric, label, k=k, seed=seed)
        except RagjudgeError as exc:  # too few rows with a cached reply: say so, with the count
            out[group] = {"rows": len(frame), "error": str(exc)}
            continue
        mine = {key: value for key, value in found.chosen.items() if key not in found.untried}
        out[group] = {"rows": len(frame), "n": found.n, "missing": found.missing, "start": found.start, "before": found.before,
                      "out_of_fold": found.after, "interval": found.after_interval, "chosen": found.chosen, "per_fold": found.per_fold,
                      "stability": found.stability, "moved": found.moved, "untried": found.untried,
                      "shipped": {key: shipped.get(key) for key in mine},
                      "reproduces": all(shipped.get(key) == value for key, value in mine.items())}
    return out


EVIDENCE = [None, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # completeness.statement_evidence candidates
WEIGHTS = [None, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # completeness.evidence_weight candidates
MARKS = [round(1 + 0.1 * m, 1) for m in range(41)]  # pass marks 1.0..5.0


def system_of(row: dict) -> str:
    return row["id"].split("-", 3)[-1]


def completeness_figures(judged: Judged, data: Path, k: int, seed: int) -> dict[str, Any]:
    design = design_ids(data)
    rows = [r for r in load(data, "squality_completeness_dev") if r["id"] not in design]
    judged.score(rows, "completeness")
    raw = judged.raw(rows, "completeness")
    kept = [(row, item) for row, item in zip(rows, raw) if item[2] is not None and item[2].status == "ok"]
    out: dict[str, Any] = {}
    fitted = None
    if len(kept) < 10:  # not judged yet (--cached-only before the rows are scored): no figure
        out["squality"] = {"n": len(kept), "excluded": len(rows) - len(kept), "note": "too few rows judged for a figure"}
    else:
        out["squality"] = _squality(judged, kept, rows, k, seed)
        chosen = shipped_check(out["squality"])
        out["squality"]["chosen_check"] = chosen
        if chosen is not None:
            fitted = {**out["squality"]["checks"][chosen]["fitted_on_all"], "check": chosen}
    out["ragchecker_pairs"] = _pairs(judged, data, fitted)
    out["short_answers"] = short_answers(judged, data)
    return out


SHORT_ANSWERS = 40  # SQuAD 2.0 answers judged by completeness (issue 44 item 9): each against itself and against another row's


def short_answers(judged: Judged, data: Path, count: int = SHORT_ANSWERS, seed: int = 7) -> dict[str, Any]:
    """Completeness on short answers (SQuAD 2.0 gold-removed rows, never calibration rows): the
    ground truth (a short answer) against a response that is exactly it (a pass is right) and
    against another row's answer that shares no word with it (a fail is right). The embedded
    judge once failed "quantum electrodynamics" against itself (2.3): this measures that kind.
    Returns pass agreement on each side with its Wilson interval and n, and the rows it got wrong."""
    from ragjudge.judges.words import content_words, stop_words

    english = stop_words("en")

    rows = [r for r in load(data, "squad2_goldremoved_sufficiency_dev") if r["id"] not in CALIBRATION and r.get("expected_response")]
    random.Random(seed).shuffle(rows)
    rows = rows[:count]
    pairs = []
    for i, row in enumerate(rows):
        words = set(content_words(row["expected_response"], english))
        other = next((r["expected_response"] for r in rows[i + 1:] + rows[:i]
                      if not words & set(content_words(r["expected_response"], english))), None)
        base = {"request": row["request"], "expected_response": row["expected_response"]}
        pairs.append(({**base, "id": f"{row['id']}/same", "response": row["expected_response"]}, True))
        if other is not None:
            pairs.append(({**base, "id": f"{row['id']}/other", "response": other}, False))
    table = [row for row, _ in pairs]
    judged.score(table, "completeness")
    out: dict[str, Any] = {"rows": len(rows)}
    for side, want in (("same", True), ("other", False)):
        chosen = [(row, label) for row, label in pairs if label is want]
        raw = judged.raw([row for row, _ in chosen], "completeness")
        decided = [judged.decided(item) for item in raw]
        ok = [(row, v) for (row, _), v in zip(chosen, decided) if v is not None and v.status == "ok"]
        right = sum(1 for _, v in ok if bool(v.passed) is want)
        # the judge without the word-for-word rule (the ground truth held whole scores 5): what the model itself said
        alone = [judged.decided((judge, _without_truth(call), verdict)) for judge, call, verdict in raw]
        alone_ok = [v for v in alone if v is not None and v.status == "ok"]
        alone_right = sum(1 for v in alone_ok if bool(v.passed) is want)
        out[side] = {"n": len(ok), "excluded": len(chosen) - len(ok), "agreement": right / len(ok) if ok else None,
                     "interval": wilson(right, len(ok)), "mean_score": statistics.fmean(float(v.score) for _, v in ok) if ok else None,
                     "without_the_whole_truth_rule": {"n": len(alone_ok), "agreement": alone_right / len(alone_ok) if alone_ok else None,
                                                      "interval": wilson(alone_right, len(alone_ok)),
                                                      "mean_score": statistics.fmean(float(v.score) for v in alone_ok) if alone_ok else None},
                     "wrong": [{"id": row["id"], "truth": row["expected_response"], "response": row["response"], "score": v.score}
                               for row, v in ok if bool(v.passed) is not want][:10]}
    return out


def _without_truth(call: Any) -> Any:
    """``call`` without the ground truth its decision reads (the whole-truth rule then never applies)."""
    if call is None:
        return None
    from dataclasses import replace

    return replace(call, data={k: v for k, v in call.data.items() if k != "truth"})


def shipped_check(sq: dict[str, Any]) -> str | None:
    """The completeness check the SQuALITY figures choose (``statement_evidence``,
    ``evidence_weight`` or ``joint``): of those whose out-of-fold Spearman beats the judge alone
    with a pass agreement no lower, the one with fewer settings unless another's Spearman is
    higher by more than ``PARSIMONY`` (a gap that small is far inside the intervals, about
    +-0.13 on 118 rows), then the higher Spearman; None when none beats the judge alone. (It
    ships only once at least 90% of the rows are judged: ``report``.)"""
    alone = sq["checks"]["judge_alone"]
    winners = [name for name in ("statement_evidence", "evidence_weight", "joint")
               if (sq["checks"][name].get("spearman") or -1) > (alone.get("spearman") or -1)
               and sq["checks"][name]["pass_agreement"] >= alone["pass_agreement"]]
    if not winners:
        return None
    top = max(sq["checks"][name]["spearman"] for name in winners)
    close = [name for name in winners if sq["checks"][name]["spearman"] >= top - PARSIMONY]
    return min(close, key=lambda name: (SETTINGS_OF[name], -sq["checks"][name]["spearman"]))


PARSIMONY = 0.02  # Spearman: a check with more settings must win by more than this
SETTINGS_OF = {"statement_evidence": 1, "evidence_weight": 1, "joint": 2}


def _spearman(scores: list[float], humans: list[float]) -> float:
    from scipy.stats import spearmanr

    if len(set(scores)) < 2 or len(set(humans)) < 2:
        return float("-inf")
    return float(spearmanr(scores, humans).statistic)


def _within_systems(scores: list[float], humans: list[float], systems: list[str]) -> dict[str, Any]:
    """Spearman within each system's responses, and their mean (the judge's ranking with the
    systems' order taken out)."""
    from ragjudge.agreement import numeric_agreement

    by_system = {}
    for system in sorted(set(systems)):
        mine = [i for i, s in enumerate(systems) if s == system]
        by_system[system] = {**numeric_agreement([scores[i] for i in mine], [humans[i] for i in mine]),
                             "judge_mean": statistics.mean(scores[i] for i in mine), "human_mean": statistics.mean(humans[i] for i in mine)}
    found = [v["spearman"] for v in by_system.values() if v.get("spearman") is not None]
    return {"by_system": by_system, "mean_within_system_spearman": statistics.mean(found) if found else None}


def _scores_cv(table: Table, humans: list[float], systems: list[str], candidates: list[Any], k: int, seed: int) -> dict[str, Any]:
    """Out-of-fold completeness scores: in each fold the setting with the best Spearman on the
    other folds, then the pass mark with the best agreement with "human rating >= 3" on them
    under that setting, both applied to the held-out fold. Figures over the pooled held-out
    scores; the setting and mark fitted on every row are the ones to ship."""
    from ragjudge.agreement import numeric_agreement

    passes = [h >= 3 for h in humans]
    fold = folds(passes, k, seed)
    scores: list[float] = [0.0] * len(humans)
    said: list[bool] = [False] * len(humans)
    chosen = []

    def fit(train: list[int]) -> tuple[Any, float]:
        setting = best(candidates, lambda c: _spearman([table(c)[i] for i in train], [humans[i] for i in train]))
        mark = best(MARKS, lambda m: sum((table(setting)[i] >= m) == passes[i] for i in train))
        return setting, mark

    for f in range(k):
        setting, mark = fit([i for i in range(len(humans)) if fold[i] != f])
        chosen.append([setting, mark])
        for i in range(len(humans)):
            if fold[i] == f:
                scores[i] = table(setting)[i]
                said[i] = scores[i] >= mark
    n = len(humans)
    right = sum(s == p for s, p in zip(said, passes))
    setting, mark = fit(list(range(n)))
    return {"n": n, **numeric_agreement(scores, humans), **_within_systems(scores, humans, systems),
            "pass_agreement": right / n, "pass_interval": wilson(right, n), "judge_passes": sum(said) / n,
            "chosen_per_fold": chosen, "fitted_on_all": {"setting": setting, "pass_mark": mark}, "scores": scores}


def _squality(judged: Judged, kept: list[tuple[dict, Any]], rows: list[dict], k: int, seed: int) -> dict[str, Any]:
    from ragjudge.agreement import numeric_agreement
    from ragjudge.judges.words import evidence_share

    items = [item for _, item in kept]
    humans = [float(row["label_completeness"]) for row, _ in kept]
    systems = [system_of(row) for row, _ in kept]
    scores = [judged.decided(item).score for item in items]  # the settings of the config (no choice)
    out: dict[str, Any] = {"n": len(kept), "excluded": len(rows) - len(kept), **numeric_agreement(scores, humans),
                           **_within_systems(scores, humans, systems)}
    # the same rows scored by word overlap alone, no judge: 1 + 4 x the share of the expected
    # response's content words found in the response (like ROUGE-1 recall), as a baseline
    overlap = [1 + 4 * evidence_share(row["expected_response"], [row["response"]]) for row, _ in kept]
    out["word_overlap_baseline"] = {**numeric_agreement(overlap, humans), **_within_systems(overlap, humans, systems)}
    passes = [h >= 3 for h in humans]
    cv = cross_validate(scores, passes, MARKS, lambda s, m: s >= m, k, seed)
    default_right = sum((s >= 3) == p for s, p in zip(scores, passes))
    out["pass_mark"] = {
        "default_3_agreement": default_right / len(kept), "default_3_interval": wilson(default_right, len(kept)),
        "judge_passes_at_3": sum(s >= 3 for s in scores) / len(kept), "people_pass": sum(passes) / len(kept),
        "cv": public(cv),
    }
    # the checks after the cache: statement_evidence (R) and evidence_weight (w), chosen out of fold by Spearman
    table = Table(items, lambda item, setting: judged.decided(item, statement_evidence=setting[0], evidence_weight=setting[1]).score)
    variants = {"judge_alone": [(None, None)],  # the config's settings: no choice but the pass mark
                "statement_evidence": [(r, None) for r in EVIDENCE],
                "evidence_weight": [(None, w) for w in WEIGHTS], "joint": [(r, w) for r in EVIDENCE for w in WEIGHTS]}
    out["checks"] = {}
    for name, candidates in variants.items():
        found = _scores_cv(table, humans, systems, candidates, k, seed)
        found.pop("scores")
        out["checks"][name] = found
    return out


def _pairs(judged: Judged, data: Path, fitted: dict[str, Any] | None = None) -> dict[str, Any]:
    """RAGChecker pairs: both responses scored, the sign of the difference against the human
    preference (only pairs with both responses judged count), with its Wilson interval; with the
    config's settings and, when given, with the completeness check the SQuALITY rows chose
    (``fitted``: ``shipped_check``'s setting fitted on all of them); and the word-overlap baseline."""
    from ragjudge.agreement import pairwise_agreement
    from ragjudge.judges.words import evidence_share

    pairs = load(data, "ragchecker_pairwise_completeness_dev")
    judged.score(pairs, "completeness")
    judged.score(pairs, "completeness", response="response_b")
    raw_a = judged.raw(pairs, "completeness")
    raw_b = judged.raw(pairs, "completeness", response="response_b")
    preferences = [float(p["label_completeness_pref"]) for p in pairs]

    def sign_agreement(**settings: Any) -> tuple[dict[str, Any], list[int]]:
        """The figure with ``settings``, and the pairs it was made on (both responses judged)."""
        a = [judged.decided(item, **settings) for item in raw_a]
        b = [judged.decided(item, **settings) for item in raw_b]
        keep = [i for i in range(len(pairs)) if a[i] is not None and b[i] is not None and a[i].status == b[i].status == "ok"]
        found: dict[str, Any] = {"pairs": len(pairs), "excluded": len(pairs) - len(keep)}
        if len(keep) < 10:
            return {**found, "note": "too few pairs judged for a figure"}, keep
        found.update(pairwise_agreement([a[i].score for i in keep], [b[i].score for i in keep], [preferences[i] for i in keep]))
        if found.get("decided"):
            found["interval"] = wilson(round(found["sign_agreement"] * found["decided"]), found["decided"])
        return found, keep

    out, scored_on = sign_agreement()
    if fitted is not None:
        r, w = fitted["setting"]
        with_checks, scored_on = sign_agreement(statement_evidence=r, evidence_weight=w)
        out["with_fitted_checks"] = {"check": fitted.get("check"), "statement_evidence": r, "evidence_weight": w, **with_checks}

    def overlap(indices: list[int]) -> dict[str, Any]:
        usable = [i for i in indices if pairs[i].get("expected_response") and pairs[i].get("response") and pairs[i].get("response_b")]
        found = pairwise_agreement(
            [evidence_share(pairs[i]["expected_response"], [pairs[i]["response"]]) for i in usable],
            [evidence_share(pairs[i]["expected_response"], [pairs[i]["response_b"]]) for i in usable],
            [preferences[i] for i in usable])
        if found.get("decided"):
            found["interval"] = wilson(round(found["sign_agreement"] * found["decided"]), found["decided"])
        return {"pairs": len(usable), "excluded": len(pairs) - len(usable), **found}

    out["word_overlap_baseline"] = overlap(list(range(len(pairs))))
    # the pairs the judge's last figure was made on (those judged so far are a seeded random draw of the 140)
    out["word_overlap_same_pairs"] = overlap(scored_on)
    settings = {} if fitted is None else {"statement_evidence": fitted["setting"][0], "evidence_weight": fitted["setting"][1]}
    usable = [i for i in scored_on if pairs[i].get("expected_response") and pairs[i].get("response") and pairs[i].get("response_b")]
    out["judge_against_overlap"] = paired_comparison(
        [judged.decided(raw_a[i], **settings).score for i in usable], [judged.decided(raw_b[i], **settings).score for i in usable],
        [evidence_share(pairs[i]["expected_response"], [pairs[i]["response"]]) for i in usable],
        [evidence_share(pairs[i]["expected_response"], [pairs[i]["response_b"]]) for i in usable],
        [preferences[i] for i in usable])
    return out


def paired_comparison(judge_a: list[float], judge_b: list[float], other_a: list[float], other_b: list[float],
                      preferences: list[float]) -> dict[str, Any]:
    """The judge against another scorer on the same pairs (people's ties left out): each is
    right on a pair when the sign of its B - A matches the preference (a tie is not right).
    ``judge_only``/``other_only``: the pairs only one of them gets right; ``p_value``: the exact
    two-sided McNemar test on those discordant pairs (scipy's binomial test, p 0.5), None when
    there is none. Overlapping intervals say little about two scorers on the same pairs; this
    counts only the pairs where they differ."""
    from scipy.stats import binomtest

    def right(a: float, b: float, preference: float) -> bool:
        return a != b and (b - a > 0) == (preference > 0)

    kept = [i for i, preference in enumerate(preferences) if preference != 0]
    judge = [right(judge_a[i], judge_b[i], preferences[i]) for i in kept]
    other = [right(other_a[i], other_b[i], preferences[i]) for i in kept]
    judge_only = sum(j and not o for j, o in zip(judge, other))
    other_only = sum(o and not j for j, o in zip(judge, other))
    discordant = judge_only + other_only
    return {"pairs": len(kept), "judge_right": sum(judge), "other_right": sum(other), "both_right": sum(j and o for j, o in zip(judge, other)),
            "judge_only": judge_only, "other_only": other_only,
            "p_value": float(binomtest(judge_only, discordant, 0.5).pvalue) if discordant else None}


def _calibrate_lines(found: dict[str, Any]) -> list[str]:
    """The settings to ship, as ``ragjudge calibrate`` chose them (``calibrate_figures``)."""
    if not found:
        return []
    lines = ["## The settings to ship: `ragjudge calibrate` on the development rows (no judge call)", "",
             *(f"`ragjudge calibrate TABLE --labels {metric}={label} -c configs/local.yaml --set " + " --set ".join(NEUTRAL[metric])
               + f"` ({group})" for group, metric, label, _ in CALIBRATED if group in found),
             "", "from the replies in the cache, 5-fold stratified, seed 0:", ""]
    for group, _, _, _ in CALIBRATED:
        item = found.get(group)
        if not item:
            continue
        if "error" in item:
            lines.append(f"- {group}: not fitted ({item['rows']} rows): {item['error']}")
            continue
        chosen = ", ".join(f"{key} {_setting(value)}" for key, value in item["chosen"].items() if key not in item["untried"])
        shipped = ", ".join(f"{key} {_setting(value)}" for key, value in item["shipped"].items())
        per_fold = "; ".join(", ".join(_setting(fold[key]) for key in item["shipped"]) for fold in item["per_fold"])
        lines.append(f"- {group}: {item['n']} labelled rows with a cached reply ({item['missing']} without); out of fold "
                     f"{_acc(item['out_of_fold'], item['interval'])} against {_f(item['before'])} at the neutral start; chosen: {chosen} "
                     f"(per fold: {per_fold}); shipped: {shipped}; **{'reproduced' if item['reproduces'] else 'differs'}**"
                     + (f"; stability of {item['moved']}: " + ", ".join(f"{d} {_f(v)}" for d, v in item["stability"].items()) if item["stability"] else ""))
    return [*lines, ""]


def _f(value: Any, digits: int = 2) -> str:
    return "n/a" if value is None or value == float("-inf") else f"{value:.{digits}f}"


def _acc(value: Any, interval: Any) -> str:
    if value is None:
        return "n/a"
    low, high = interval or (None, None)
    return f"{value:.2f} [{_f(low)}, {_f(high)}]" if low is not None else f"{value:.2f}"


def _setting(value: Any) -> str:
    return "off" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _stability_row(name: str, where: str, found: dict[str, Any]) -> str:
    if not found or not found.get("n"):
        return f"| {name} | {where} | 0 | | | | | | | |"
    cells = [_f(found.get(f"at_{d:+.2f}")) for d in DELTAS]
    return (f"| {name} | {where} | {found['n']} | {_f(found['out_of_fold_accuracy'])} | {' | '.join(cells)} | "
            f"{_f(found.get('worst_loss_within_0.02'))} | {_f(found.get('flips_within_0.02'))} |")


def report(results: dict[str, Any]) -> str:
    """The figures as Markdown (bench/_work/quality/summary.md), with the values to ship: what
    docs/quality.md's tables take."""
    lines: list[str] = [f"# bench/quality.py, {results['machine']}, {results['folds']}-fold CV, seed {results['seed']}", ""]
    suff = results.get("sufficiency")
    if suff:
        rf = suff["reference_free"]
        clap, squad = suff.get("clapnq_sufficiency_dev", {}), suff.get("squad2_unanswerable_sufficiency_dev", {})
        alone, quoted, written = rf["cv"], rf["with_quote_check"]["cv"], rf["quote_check_on_the_written_verdict"]["cv"]
        lines += ["## Reference-free sufficiency (CLAPNQ and SQuAD 2.0 unanswerable, one setting chosen on the pooled rows)", "",
                  f"n: pooled {rf['n']} (+{rf['excluded']} excluded), CLAPNQ {clap.get('n', 0)}, SQuAD 2.0 unanswerable {squad.get('n', 0)}", "",
                  "| setting | pooled (out of fold) | CLAPNQ | SQuAD 2.0 unanswerable | fitted on all rows | per fold |", "|---|---|---|---|---|---|"]

        def per_slice(found: dict[str, Any], key: str | None) -> str:
            if not found.get("n"):
                return "n/a"
            inner = found if key is None else found.get(key, {})
            return _acc(inner.get("out_of_fold_accuracy"), inner.get("interval"))

        lines.append(f"| yes_threshold alone | {_acc(alone['out_of_fold_accuracy'], alone['interval'])} | {per_slice(clap, None)} | "
                     f"{per_slice(squad, None)} | yes_threshold {_setting(alone['fitted_on_all'][0])} | "
                     f"{', '.join(_setting(c[0]) for c in alone['chosen_per_fold'])} |")
        t, q, _ = quoted["fitted_on_all"]
        lines.append(f"| yes_threshold + quote_check | {_acc(quoted['out_of_fold_accuracy'], quoted['interval'])} | "
                     f"{per_slice(clap, 'with_quote_check')} | {per_slice(squad, 'with_quote_check')} | yes_threshold {_setting(t)}, "
                     f"quote_check {_setting(q)} | {', '.join(f'{_setting(c[0])}/{_setting(c[1])}' for c in quoted['chosen_per_fold'])} |")
        requested = rf["with_request_check"]["cv"]
        rt, _, r = requested["fitted_on_all"]
        lines.append(f"| yes_threshold + request_evidence | {_acc(requested['out_of_fold_accuracy'], requested['interval'])} | "
                     f"{per_slice(clap, 'with_request_check')} | {per_slice(squad, 'with_request_check')} | yes_threshold {_setting(rt)}, "
                     f"request_evidence {_setting(r)} | {', '.join(f'{_setting(c[0])}/{_setting(c[2])}' for c in requested['chosen_per_fold'])} |")
        blend = rf.get("logistic_blend")
        if blend:
            lines.append(f"| logistic blend of P(yes) and the quote match (tried; not a setting) | "
                         f"{_acc(blend['out_of_fold_accuracy'], blend['interval'])} | {per_slice(clap, 'logistic_blend')} | "
                         f"{per_slice(squad, 'logistic_blend')} | weights {', '.join(_f(w) for w in blend['weights_fitted_on_all'])} "
                         f"(intercept, log-odds of P(yes), quote match; standardised) | cut {', '.join(_f(c) for c in blend['cut_per_fold'])} |")
        lines.append(f"| quote_check on the written verdict | {_acc(written['out_of_fold_accuracy'], written['interval'])} | "
                     f"{per_slice(clap, 'quote_check_on_the_written_verdict')} | {per_slice(squad, 'quote_check_on_the_written_verdict')} | "
                     f"quote_check {_setting(written['fitted_on_all'][1])} | {', '.join(_setting(c[1]) for c in written['chosen_per_fold'])} |")
        lines.append(f"| written verdict alone | | {_f(clap.get('written_verdict_accuracy'))} | {_f(squad.get('written_verdict_accuracy'))} | | |")
        lines.append(f"| majority | | {_f(clap.get('majority_accuracy'))} | {_f(squad.get('majority_accuracy'))} | | |")
        # ship the check that wins out of fold over the threshold alone (the better of the two when both do)
        base = alone["out_of_fold_accuracy"] or 0
        options = [("quote check", quoted, f"yes_threshold {_setting(t)}, quote_check {_setting(q)}, request_evidence off", q),
                   ("request check", requested, f"yes_threshold {_setting(rt)}, quote_check off, request_evidence {_setting(r)}", r)]
        winners = sorted([o for o in options if o[3] is not None and (o[1]["out_of_fold_accuracy"] or 0) > base],
                         key=lambda o: -(o[1]["out_of_fold_accuracy"] or 0))
        tried = "; ".join(f"{name} {_f(found['out_of_fold_accuracy'])}" for name, found, _, _ in options)
        if winners:
            name, found, shipped, _ = winners[0]
            ship = f"{shipped} (the {name} wins out of fold: {_f(found['out_of_fold_accuracy'])} against {_f(base)}; tried: {tried})"
        else:
            ship = (f"yes_threshold {_setting(alone['fitted_on_all'][0])}, quote_check off, request_evidence off (no check wins out of "
                    f"fold against {_f(base)}: {tried})")
        if rf["excluded"] > 0.1 * (rf["n"] + rf["excluded"]):
            ship = (f"nothing yet: only {rf['n']} of {rf['n'] + rf['excluded']} rows are judged (a decision needs at least 90% of "
                    f"them; `bash bench/agreement.sh` judges the rest); so far: " + ship)
        lines += ["", "**The grid above would ship (reference-free; the shipped settings are calibrate's, below):** " + ship, ""]
        g = suff.get("squad2_goldremoved_sufficiency_dev", {})
        if g.get("n"):
            lines += ["## Grounded sufficiency (SQuAD 2.0 gold-removed)", "",
                      f"n {g['n']} (+{g['excluded']} excluded): out of fold {_acc(g['out_of_fold_accuracy'], g['interval'])}; fitted "
                      f"fact_threshold {_setting(g['cv']['fitted_on_all'][0])}, fact_evidence {_setting(g['cv']['fitted_on_all'][1])} (per fold "
                      f"{', '.join(f'{_setting(a)}/{_setting(b)}' for a, b in g['cv']['chosen_per_fold'])}); without the evidence check "
                      f"{_acc(g['without_evidence_check']['out_of_fold_accuracy'], g['without_evidence_check']['interval'])}; written verdict "
                      f"{_f(g['written_verdict_accuracy'])}", ""]
        lines += ["## Stability: out-of-fold accuracy with each fold's chosen threshold moved", "",
                  "| threshold | rows | n | headline | -0.05 | -0.02 | +0.02 | +0.05 | largest drop within ±0.02 (negative: a gain) | verdicts flipping within ±0.02 |",
                  "|---|---|---|---|---|---|---|---|---|---|",
                  _stability_row("yes_threshold alone", "pooled", rf["stability"]),
                  _stability_row("yes_threshold alone", "CLAPNQ", clap.get("stability", {})),
                  _stability_row("yes_threshold alone", "SQuAD 2.0 unanswerable", squad.get("stability", {})),
                  _stability_row("yes_threshold + quote_check", "pooled", rf["with_quote_check"]["stability"]),
                  _stability_row("yes_threshold + quote_check", "CLAPNQ", clap.get("with_quote_check", {}).get("stability", {})),
                  _stability_row("yes_threshold + quote_check", "SQuAD 2.0 unanswerable", squad.get("with_quote_check", {}).get("stability", {})),
                  _stability_row("yes_threshold + request_evidence", "pooled", rf["with_request_check"]["stability"]),
                  _stability_row("yes_threshold + request_evidence", "CLAPNQ", clap.get("with_request_check", {}).get("stability", {})),
                  _stability_row("yes_threshold + request_evidence", "SQuAD 2.0 unanswerable",
                                 squad.get("with_request_check", {}).get("stability", {}))]
        if g.get("n"):
            lines.append(_stability_row("fact_threshold (with fact_evidence)", "SQuAD 2.0 gold-removed", g["stability"]))
        lines.append("")
    comp = results.get("completeness")
    short = (comp or {}).get("short_answers")
    if short:
        lines += [f"## Completeness on short answers (SQuAD 2.0 answers, {short['rows']} rows): the answer against itself, and against "
                  "another row's answer", ""]
        for side, label in (("same", "the response is the ground truth itself (passes are right)"),
                            ("other", "the response is another row's answer (fails are right)")):
            found = short[side]
            alone = found.get("without_the_whole_truth_rule", {})
            lines.append(f"- {label}: {_acc(found['agreement'], found['interval'])} on {found['n']} rows (excluded {found['excluded']}; "
                         f"mean score {_f(found['mean_score'])}); the judge without the whole-truth rule: "
                         f"{_acc(alone.get('agreement'), alone.get('interval'))} (mean score {_f(alone.get('mean_score'))})")
            for wrong in found["wrong"][:3]:
                lines.append(f"  - wrong: {wrong['id']}: truth {wrong['truth']!r}, response {wrong['response']!r}, score {wrong['score']}")
        lines.append("")
    if comp and "squality" in comp:
        sq = comp["squality"]
        if "checks" in sq:
            lines += [f"## Completeness (SQuALITY, n {sq['n']}, +{sq['excluded']} excluded): settings and pass mark chosen out of fold", "",
                      "| variant | Spearman [95% interval] | Pearson | MAE | within-system Spearman (mean; per system) | pass agreement with human >= 3 | "
                      "fitted on all (statement_evidence, evidence_weight; pass mark) | per fold |", "|---|---|---|---|---|---|---|---|"]

            def systems(found: dict[str, Any]) -> str:
                per = ", ".join(f"{k} {_f(v.get('spearman'))}" for k, v in found["by_system"].items())
                return f"{_f(found['mean_within_system_spearman'])}; {per}"

            for name, found in sq["checks"].items():
                fit = found["fitted_on_all"]
                lines.append(f"| {name} | {_acc(found.get('spearman'), found.get('spearman_ci95'))} | {_f(found.get('pearson'))} | {_f(found.get('mae'))} | {systems(found)} | "
                             f"{_acc(found['pass_agreement'], found['pass_interval'])} | {_setting(fit['setting'][0])}, "
                             f"{_setting(fit['setting'][1])}; {_setting(fit['pass_mark'])} | "
                             f"{'; '.join(f'{_setting(c[0][0])}, {_setting(c[0][1])}, {_setting(c[1])}' for c in found['chosen_per_fold'])} |")
            base = sq["word_overlap_baseline"]
            lines.append(f"| word overlap alone (no judge) | {_acc(base.get('spearman'), base.get('spearman_ci95'))} | {_f(base.get('pearson'))} | {_f(base.get('mae'))} | "
                         f"{systems(base)} | | | |")
            alone, ranked = sq["checks"]["judge_alone"], sq["chosen_check"]  # shipped_check, chosen by completeness_figures
            if sq["excluded"] > 0.1 * (sq["n"] + sq["excluded"]):
                lines += ["", f"**Ship (completeness):** nothing yet: only {sq['n']} of {sq['n'] + sq['excluded']} rows are judged "
                              f"(a decision needs at least 90% of them; `bash bench/agreement.sh` judges the rest)", ""]
            elif ranked is None:
                lines += ["", f"**Ship (completeness):** no check (none beats the judge alone out of fold on Spearman "
                              f"{_f(alone.get('spearman'))} with pass agreement no lower than {_f(alone['pass_agreement'])})", ""]
            else:
                fit = sq["checks"][ranked]["fitted_on_all"]
                lines += ["", f"**Ship (completeness):** {ranked}: statement_evidence {_setting(fit['setting'][0])}, evidence_weight "
                              f"{_setting(fit['setting'][1])}, pass mark (thresholds.completeness) {_setting(fit['pass_mark'])} "
                              f"(Spearman {_f(sq['checks'][ranked]['spearman'])} against {_f(alone.get('spearman'))} out of fold)", ""]
    if comp and "squality" in comp:
        pairs = comp.get("ragchecker_pairs", {})
        lines += ["## RAGChecker pairs: sign agreement with the human preference (human ties left out)", ""]

        def pair_line(name: str, found: dict[str, Any]) -> str:
            if found.get("decided") == 0:
                return f"- {name}: every judged pair tied (judge ties {found['judge_ties']}, human ties {found['human_ties']})"
            if not found.get("decided"):
                return f"- {name}: {found.get('note', 'no pair judged')} ({found.get('excluded', 0)} of {found.get('pairs', 0)} pairs not judged)"
            return (f"- {name}: {_acc(found['sign_agreement'], found.get('interval'))} on {found['decided']} pairs "
                    f"(judge ties {found['judge_ties']}, human ties {found['human_ties']}, excluded {found.get('excluded', 0)})")

        lines.append(pair_line("the config's settings", pairs))
        if "with_fitted_checks" in pairs:
            fit = pairs["with_fitted_checks"]
            lines.append(pair_line(f"with the check the SQuALITY rows chose ({fit.get('check')}: statement_evidence "
                                   f"{_setting(fit['statement_evidence'])}, evidence_weight {_setting(fit['evidence_weight'])})", fit))
        lines.append(pair_line("word overlap alone, every pair", pairs.get("word_overlap_baseline", {})))
        if pairs.get("word_overlap_same_pairs", {}).get("pairs"):
            lines.append(pair_line("word overlap alone, on the pairs the judge was scored on", pairs["word_overlap_same_pairs"]))
        versus = pairs.get("judge_against_overlap", {})
        if versus.get("pairs"):
            lines.append(f"- the judge against word overlap on the same {versus['pairs']} pairs (a tie is not right): the judge right on "
                         f"{versus['judge_right']}, word overlap on {versus['other_right']}; only the judge on {versus['judge_only']}, "
                         f"only word overlap on {versus['other_only']} (exact McNemar p {_f(versus['p_value'], 3)})")
        lines.append("")
    lines += _calibrate_lines(results.get("calibrate") or {})  # every group fitted: sufficiency's and completeness's
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--config", default="configs/local.yaml")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["sufficiency", "completeness", "short-answers"])
    parser.add_argument("--cached-only", action="store_true", help="judge nothing: rows not in the cache are excluded (and counted)")
    args = parser.parse_args()
    data = Path(args.data)
    started = time.perf_counter()
    judged = Judged(args.config, args.cached_only)
    results: dict[str, Any] = {"machine": machine(), "config": args.config, "folds": args.folds, "seed": args.seed}
    try:
        if args.only in (None, "sufficiency"):
            results["sufficiency"] = sufficiency_figures(judged, data, args.folds, args.seed)
            results["calibrate"] = calibrate_figures(args.config, data, args.folds, args.seed, ("sufficiency",))
        if args.only in (None, "completeness"):
            results["completeness"] = completeness_figures(judged, data, args.folds, args.seed)
            results.setdefault("calibrate", {}).update(calibrate_figures(args.config, data, args.folds, args.seed, ("completeness",)))
        if args.only == "short-answers":
            results["completeness"] = {"short_answers": short_answers(judged, data)}
    finally:
        judged.scorer.close()
    results["seconds"] = time.perf_counter() - started
    out = WORK / "quality"
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(results, indent=2, default=str))
    text = report(results)
    (out / "summary.md").write_text(text + "\n")
    print(text)
    print(f"every figure: {out / 'summary.json'}; this summary: {out / 'summary.md'}")


if __name__ == "__main__":
    main()

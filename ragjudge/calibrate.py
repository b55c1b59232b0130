"""``ragjudge calibrate``: a judge's decision settings chosen on the team's own labels, from the
replies already in the response cache (no judge call), and the rows worth labelling next.

A judge's reply is cached by its request; its verdict is decided after the cache by the judge's
own ``decide`` with the metric's settings (``sufficiency.yes_threshold``, ``fact_threshold``, the
checks after the cache, completeness's pass mark...). So every setting can be tried on every
labelled row at no cost: this module reads each row's cached reply once (``cached_replies``),
decides it again under each candidate setting (``Decisions``), and chooses the settings by
stratified k-fold cross-validation (``fit``): in each fold a coordinate search (one setting at a
time, in the order of the metric's ``Metric.knobs``, the best agreement on the other folds; among equals the middle of the
plateau; rounds repeated until one changes nothing) is fitted on the other folds and applied to the held-out fold. The figure reported is
the out-of-fold agreement with the labels and its Wilson 95% interval (scipy), beside the
agreement of the settings the rows were scored with; the settings written are those fitted on
every labelled row. Method as bench/quality.py used for configs/local.yaml (docs/quality.md).

``suggest`` ranks the unlabelled rows by how near their verdict is to the decision (P(yes) to
``yes_threshold``, a score to the pass mark): the labels that would move the corrected pass
rate's interval (``ragjudge.corrected_rates``) most are those the judge is least sure of.
"""

from __future__ import annotations

from collections import Counter
import random
from dataclasses import dataclass, field, replace
from typing import Any

from ragjudge.cache import reading
from ragjudge.corrected_rates import label_pass, label_rating
from ragjudge.config import FIELDS
from ragjudge.counting import has_path, row_ids
from ragjudge import metrics
from ragjudge.metrics import Knob, find
from ragjudge.errors import InputError
from ragjudge.judges import judge_class, make_judges
from ragjudge.scoring import Scorer
from ragjudge.types import Call, Verdict

FOLDS = 5
MIN_ROWS = 20  # labelled rows with a cached reply below which nothing is fitted


@dataclass
class Cached:
    """One row's cached reply: the ``judge`` and final ``call`` that asked for it and the raw
    ``verdict`` (before any decision); ``verdict`` None when the cache holds no usable reply.
    ``unjudged``: why the metric gives the row no verdict without any call (its ``skipped`` or
    input ``error`` reason, e.g. "no context"), None for a row it judges."""

    position: int
    judge: Any
    call: Call | None
    verdict: Verdict | None
    unjudged: str | None = None


def cached_replies(frame: Any, config: Any, metric: str) -> list[Cached]:
    """Each row of ``frame`` (a table ``ragjudge score`` read, or wrote) with its cached reply for
    ``metric`` under ``config`` (a ``ragjudge.settings.Config``: the model and prompt settings the
    rows were scored with; a different model or prompt finds nothing). Makes no call: the
    response cache (``judge.cache_dir``) is only read. A row answered without a call (an empty
    retrieval, say) keeps that verdict. Raises ``InputError`` for a panel of judges (each member is
    a model of its own: calibrate them one by one), and for a field the metric needs that no
    column holds (a table scored with ``--map``, calibrated without it), naming the field."""
    if config.judge.panel:
        raise InputError("calibrate chooses one judge model's settings, and this config has a panel (judge.panel): calibrate each "
                         "member alone, with a config without judge.panel and --model MEMBER (a member's replies are cached under its model)")
    config = reading(config)  # no cache: no reply, and calibrate only reads: it makes no folder
    scorer = Scorer(config.model_copy(update={"metrics": [metric]}))
    try:
        judge = make_judges(scorer.config)[0]
        mapping = scorer.resolve(frame)
        unmapped = [need.split("|") for need in judge.needs
                    if need.split("|")[0] in FIELDS and not any(mapping.paths.get(name) for name in need.split("|"))]
        if unmapped:  # no row can find its reply (a table scored with --map, calibrated without it): name the mapping
            fields = " and ".join(" or ".join(need) for need in unmapped)
            unread = [column for column in mapping.unused if column not in set(config.labels.values())]
            raise InputError(f"calibrate {metric}: no column of the table is mapped to the {fields} {metric} needs (columns not read: "
                             f"{', '.join(unread) or '(none)'}), so no row's cached reply can be found: calibrate reads the table as "
                             f"score did; give it the --map you scored with (e.g. --map {unmapped[0][0]}=COLUMN, or the config's "
                             "columns:)")
        records = scorer.records(frame, mapping)
        out = []
        for position, record in enumerate(records):
            call = judge.prepare(record)
            if isinstance(call, Verdict):
                out.append(Cached(position, judge, None, call if call.status == "ok" else None,
                                  None if call.status == "ok" else call.error or call.status))
                continue
            while call is not None and not call.final:
                first = scorer.model.peek(call)
                call = judge.follow_up(call, first) if first is not None and first.status == "ok" else None
            found = scorer.model.peek(call) if call is not None else None
            out.append(Cached(position, judge, call, found if found is not None and found.status == "ok" else None))
        return out
    finally:
        scorer.close()


class Decisions:
    """Each cached row's pass (True/False; None without a verdict) under a setting (a tuple of
    (key, value) pairs of the metric's section, ``threshold`` the pass mark), decided by the
    judge's own ``decide`` and remembered: cross-validation asks for the same ones many times."""

    def __init__(self, rows: list[Cached], config: Any, metric: str) -> None:
        self.rows, self.config, self.metric = rows, config, metric
        self.memo: dict[tuple[tuple[str, Any], ...], list[bool | None]] = {}
        self.scores: dict[tuple[tuple[str, Any], ...], list[float | None]] = {}

    def __call__(self, setting: tuple[tuple[str, Any], ...]) -> list[bool | None]:
        if setting not in self.memo:
            self._decide(setting)
        return self.memo[setting]

    def score(self, setting: tuple[tuple[str, Any], ...]) -> list[float | None]:
        """Each row's score under ``setting`` (P(yes)-driven 0/1 for sufficiency, 1..5 for completeness)."""
        if setting not in self.scores:
            self._decide(setting)
        return self.scores[setting]

    def _decide(self, setting: tuple[tuple[str, Any], ...]) -> None:
        values = dict(setting)
        threshold = values.pop("threshold", None)
        passes: list[bool | None] = []
        scores: list[float | None] = []
        judges: dict[Any, Any] = {}
        for row in self.rows:
            if row.verdict is None:
                passes.append(None)
                scores.append(None)
                continue
            if row.call is None:  # decided without a call: no setting moves it
                verdict = row.verdict
            else:
                judge = judges.get(id(row.judge))
                if judge is None:
                    base = row.judge
                    judge = judges[id(row.judge)] = judge_class(base.name)(
                        self.config.judge, base.threshold if threshold is None else threshold, extension=base.extension,
                        options=base.options.model_copy(update=values))
                verdict = judge.decide(row.verdict.copy(), row.call)
            if verdict.status != "ok" or verdict.score is None:
                passes.append(None)
                scores.append(None)
                continue
            scores.append(float(verdict.score))
            passes.append(bool(verdict.passed) if threshold is None else float(verdict.score) >= threshold)
        self.memo[setting] = passes
        self.scores[setting] = scores


def wilson(right: int, n: int) -> list[float] | None:
    """The Wilson 95% interval of ``right`` of ``n`` (scipy's ``binomtest``), None for n = 0."""
    if not n:
        return None
    from scipy.stats import binomtest

    interval = binomtest(right, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [float(interval.low), float(interval.high)]


def folds(labels: list[Any], k: int, seed: int = 0) -> list[int]:
    """Each row's fold (0..k-1), stratified by label (any values, compared as text;
    ``random.Random(seed)``)."""
    fold = [0] * len(labels)
    rng = random.Random(seed)
    for value in sorted(set(map(str, labels))):
        members = [i for i, label in enumerate(labels) if str(label) == value]
        rng.shuffle(members)
        for position, i in enumerate(members):
            fold[i] = position % k
    return fold


def _agreement(passes: list[bool | None], labels: list[bool], members: list[int]) -> int:
    return sum(passes[i] is labels[i] for i in members)


PASSES = 6  # coordinate-search rounds at most; a round that changes nothing ends it


def _search(decisions: Decisions, knobs: list[Knob], start: dict[str, Any], labels: list[bool], members: list[int]) -> dict[str, Any]:
    """Coordinate search: each knob in turn set to the candidate with the best agreement on
    ``members`` (the others as chosen so far); among equals the middle of the tied candidates,
    and the current value where it is among them (a change must earn its place). Rounds repeat
    until one changes nothing (at most ``PASSES``): knobs that act together (a fact threshold and
    the evidence check that overrides it) are not left where the first round's order put them."""
    chosen = dict(start)
    for _ in range(PASSES):
        before = dict(chosen)
        for knob in knobs:
            scored = []
            for candidate in knob.candidates:
                trial = {**chosen, knob.key: candidate}
                scored.append((_agreement(decisions(_key(trial)), labels, members), candidate))
            top = max(score for score, _ in scored)
            tied = [candidate for score, candidate in scored if score == top]
            chosen[knob.key] = chosen[knob.key] if chosen[knob.key] in tied else tied[len(tied) // 2]
        if chosen == before:
            break
    return chosen


def _key(setting: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(setting.items()))


@dataclass
class Fit:
    """What ``fit`` found for one metric: ``n`` labelled rows with a cached verdict (``missing``:
    labelled rows without one), the ``start`` settings (those the rows were scored with) and
    their agreement ``before`` (share of the n, with its Wilson ``before_interval``), the
    out-of-fold agreement of fitting (``after``, ``after_interval``), the settings ``chosen`` on
    every row and the ones each fold chose (``per_fold``), ``stability`` (agreement on every row
    with the first chosen numeric setting moved by +-0.02 and +-0.05), and ``better``: whether the
    fitted settings beat the start out of fold."""

    metric: str
    n: int
    missing: int
    start: dict[str, Any]
    before: float | None = None
    before_interval: list[float] | None = None
    after: float | None = None
    after_interval: list[float] | None = None
    chosen: dict[str, Any] = field(default_factory=dict)
    per_fold: list[dict[str, Any]] = field(default_factory=list)
    stability: dict[str, float] = field(default_factory=dict)
    moved: str | None = None  # the setting the stability figures move
    beyond: list[str] = field(default_factory=list)  # the moves (+0.02, +0.05) past the values the setting may hold (``span``): not measured
    span: tuple[float, float] | None = None  # the lowest and highest value the setting moved may hold
    better: bool = False
    untried: list[str] = field(default_factory=list)  # settings that change no verdict on these rows (P(yes) not read, a check that never applies)
    refused: str | None = None  # why nothing was fitted (labels of one class, or too few of one to fold): nothing is written
    held: tuple[float, float] | None = None  # the pass marks tried, lowest and highest: those at which the labels pass as at the start
    unjudged: dict[str, int] = field(default_factory=dict)  # of the ``missing``: rows the metric judges not at all, by reason ("no context": 8)

    def left_out(self) -> str:
        """The labelled rows without a verdict, said by why: those the metric does not judge (by
        reason) and those with no cached reply; "" when none is left out."""
        parts = [f"{count} that {self.metric} does not judge ({reason})" for reason, count in self.unjudged.items()]
        uncached = self.missing - sum(self.unjudged.values())
        if uncached:
            parts.append(f"{uncached} without a cached reply")
        return "; ".join(parts)

    @property
    def changes(self) -> dict[str, Any]:
        """The settings that differ from the start."""
        return {key: value for key, value in self.chosen.items() if self.start.get(key) != value}


def knobs_of(metric: str) -> tuple[Knob, ...]:
    """``metric``'s decision settings, in the order the search tries them (``Metric.knobs`` in
    ``ragjudge.metrics``); none for a metric that has none, or a custom judge."""
    found = find(metric)
    return found.knobs if found is not None else ()


def start_settings(config: Any, metric: str) -> dict[str, Any]:
    """The current value of each of ``metric``'s decision settings (``knobs``) under ``config``."""
    section = getattr(config, metric, None)  # the metric's own section (``Config.sufficiency``)
    out = {}
    for knob in knobs_of(metric):
        if knob.key == "threshold":
            out[knob.key] = float(config.threshold(metric))
        else:
            out[knob.key] = getattr(section, knob.key, None) if section is not None else None
    return out


def same_labels(ratings: list[float], mark: float, start: float) -> bool:
    """Whether every rating of ``ratings`` passes at ``mark`` as it does at ``start`` (a label
    passes at the verdicts' own mark: a pass mark that passes other labels redefines them)."""
    return all((rating >= mark) == (rating >= start) for rating in ratings)


def one_class(labels: list[bool], k: int, binary: bool, mark: float) -> str | None:
    """Why labels of one class (or with fewer than ``k`` of the smaller, one a fold) fit nothing,
    None where they can: a setting that passes every row agrees with every label that is a pass
    (every rating a pass gave pass mark 1.5 and out-of-fold agreement 1.00), and a fold with no
    label of a class cannot tell a setting that gets that class wrong."""
    passes = sum(labels)
    kinds = ("yes", "no") if binary else (f"a pass (rating >= {mark:g})", f"a fail (rating < {mark:g})")
    fewer, count = (kinds[0], passes) if passes <= len(labels) - passes else (kinds[1], len(labels) - passes)
    if count == 0:
        other = kinds[1] if fewer == kinds[0] else kinds[0]
        return (f"every one of the {len(labels)} labels is {other}: a setting that decides every row so agrees with all of them, "
                f"and no agreement tells settings apart; label rows that are {fewer} too (at least {k}, one a fold)")
    if count < k:
        return (f"only {count} of the {len(labels)} labels are {fewer}, fewer than the {k} folds (each needs one); label more "
                f"such rows (or give fewer --folds, at least 2)")
    return None


def fit(frame: Any, config: Any, metric: str, label_column: str, *, k: int = FOLDS, seed: int = 0) -> Fit:
    """Choose ``metric``'s decision settings on the labels in ``label_column`` of ``frame`` (see
    the module docstring). Raises ``InputError`` for a metric with no decision settings, a
    missing labels column, or fewer than ``MIN_ROWS`` labelled rows with a cached reply (score the
    table first, with the config given here)."""
    if not knobs_of(metric):
        known = [m.name for m in metrics.BUILT_IN if m.knobs]
        raise InputError(f"calibrate knows the decision settings of {', '.join(known)}; {metric} has none to choose")
    if not has_path(frame, label_column):
        raise InputError(f"--labels {metric}={label_column}: the table has no column {label_column!r}; its columns: "
                         f"{', '.join(map(str, frame.columns))}")
    low, high = config.scale(metric)
    binary = (float(low), float(high)) == (0.0, 1.0)
    default_threshold = config.label_threshold(metric)  # the labels' pass mark: the verdicts' one the rows were scored with
    cells = row_ids(frame, label_column)
    scale = (float(low), float(high))
    labelled = [i for i, cell in enumerate(cells) if label_pass(cell, binary, default_threshold, scale) is not None]
    sub = frame.iloc[labelled].reset_index(drop=True)
    rows = cached_replies(sub, config, metric)
    have = [i for i, row in enumerate(rows) if row.verdict is not None]
    start = start_settings(config, metric)
    out = Fit(metric, len(have), len(labelled) - len(have), start)
    out.unjudged = dict(Counter(row.unjudged for row in rows if row.verdict is None and row.unjudged is not None).most_common())
    if len(labelled) < MIN_ROWS:
        raise InputError(f"calibrate {metric}: {len(labelled)} row(s) of {len(frame)} carry a label in '{label_column}'; it needs at least "
                         f"{MIN_ROWS}: label more rows")
    if len(have) < MIN_ROWS:
        uncached = out.missing - sum(out.unjudged.values())
        todo = ([f"label more rows that {metric} judges"] if out.unjudged else []) + (
            ["score the table first (ragjudge score ... with the same model, --api-base, --map and config), then calibrate"]
            if uncached else [])
        raise InputError(f"calibrate {metric}: {len(have)} labelled row(s) have a cached reply ({len(labelled)} labelled"
                         + (f"; left out: {out.left_out()}" if out.unjudged else "") + f"); it needs at least {MIN_ROWS}: "
                         + "; ".join(todo))
    if k > len(have):
        raise InputError(f"--folds {k}: more folds than the {len(have)} labelled rows with a cached reply; give at most {len(have)} "
                         f"(default {FOLDS})")
    rows = [rows[i] for i in have]
    labels = [label_pass(cells[labelled[i]], binary, default_threshold, scale) == 1.0 for i in have]
    decisions = Decisions(rows, config, metric)
    out.refused = one_class(labels, k, binary, default_threshold)
    knobs = []
    ratings = sorted({label_rating(cells[labelled[i]], scale) or 0.0 for i in have}) if not binary else []
    for knob in knobs_of(metric):
        if knob.key == "threshold":  # the labels pass at the written mark too: only marks at which they pass as now
            kept = tuple(c for c in knob.candidates if same_labels(ratings, c, default_threshold))
            out.held = (kept[0], kept[-1]) if kept else None
            knob = replace(knob, candidates=kept)
        if knob.logprobs and start.get(knob.key) is not None:  # off would change the request: the replies are not cached
            knob = replace(knob, candidates=tuple(c for c in knob.candidates if c is not None))
        if len({tuple(decisions(_key({**start, knob.key: c}))) for c in knob.candidates}) > 1:
            knobs.append(knob)
        else:
            out.untried.append(knob.key)
    everyone = list(range(len(rows)))
    right = _agreement(decisions(_key(start)), labels, everyone)
    out.before, out.before_interval = right / len(rows), wilson(right, len(rows))
    if out.refused is not None:  # one class: any setting that passes (or fails) every row agrees with all of them
        out.chosen = dict(start)
        return out
    fold = folds(labels, k, seed)
    oof_right = 0
    for f in range(k):
        train = [i for i in everyone if fold[i] != f]
        test = [i for i in everyone if fold[i] == f]
        chosen = _search(decisions, knobs, start, labels, train)
        out.per_fold.append(chosen)
        oof_right += _agreement(decisions(_key(chosen)), labels, test)
    out.after, out.after_interval = oof_right / len(rows), wilson(oof_right, len(rows))
    out.chosen = _search(decisions, knobs, start, labels, everyone)
    out.better = out.after > out.before and bool(out.changes)
    moved = next((knob for knob in knobs if knob.numeric and isinstance(out.chosen.get(knob.key), float)), None)
    if moved is not None:
        out.moved = moved.key
        low, high = out.span = moved.bounds  # past them, a value no config may hold (request_evidence 1.02, a pass mark 5.05)
        for delta in (-0.05, -0.02, 0.02, 0.05):
            value = round(out.chosen[moved.key] + delta, 2)
            if not low <= value <= high:
                out.beyond.append(f"{delta:+.2f}")
                continue
            passes = decisions(_key({**out.chosen, moved.key: value}))
            out.stability[f"{delta:+.2f}"] = _agreement(passes, labels, everyone) / len(rows)
    return out


def suggest(frame: Any, config: Any, metric: str, label_column: str | None, count: int) -> tuple[list[int], str]:
    """The positions (in ``frame``) of up to ``count`` unlabelled rows with a cached verdict whose
    labels would narrow the corrected interval most: nearest the decision first (P(yes) to
    ``yes_threshold`` or 0.5, each fact's least P(supported) likewise; a 1..5 score to the pass
    mark), then rows whose samples disagree; ties in table order. Also returns how they were
    ranked, in words (a yes/no metric whose replies carry no P(yes) can only be listed in table
    order, and says so); where no row is chosen, why (every row labelled, or no unlabelled row
    with an ok cached verdict)."""
    low, high = config.scale(metric)
    binary = (float(low), float(high)) == (0.0, 1.0)
    threshold = float(config.threshold(metric))
    cells = row_ids(frame, label_column) if label_column else [None] * len(frame)
    unlabelled = [i for i, cell in enumerate(cells)
                  if label_pass(cell, binary, config.label_threshold(metric), (float(low), float(high))) is None]
    sub = frame.iloc[unlabelled].reset_index(drop=True)
    rows = cached_replies(sub, config, metric)
    section = getattr(config, metric, None)
    cut = getattr(section, "yes_threshold", None) or 0.5
    ranked = []
    read = 0  # rows whose P(yes) was read
    for row in rows:
        if row.verdict is None:
            continue
        verdict = row.verdict if row.call is None else row.judge.decide(row.verdict.copy(), row.call)
        if verdict.status != "ok" or verdict.score is None:
            continue
        p_yes = (verdict.details or {}).get("p_yes") if isinstance(verdict.details, dict) else None
        p_yes = verdict.probability if p_yes is None else p_yes  # a judge that gives P(yes) itself (a decision model)
        read += p_yes is not None
        distance = abs(float(p_yes) - cut) if binary and p_yes is not None else (
            0.5 if binary else abs(float(verdict.score) - threshold) / max(float(high) - float(low), 1.0))
        ranked.append((distance, -(1.0 - (verdict.agreement if verdict.agreement is not None else 1.0)), row.position))
    ranked.sort()
    if not binary:
        how = f"the score nearest the pass mark {threshold:g} first"
    elif read:
        how = f"P(yes) nearest {cut:g} first"
    else:
        how = (f"in table order: the cached replies carry no P(yes) (score with {metric}.yes_threshold set, e.g. --set "
               f"{metric}.yes_threshold=0.5, to rank rows by the judge's certainty)")
    if not unlabelled:
        how = f"every one of the {len(frame)} row(s) carries a label in '{label_column}': no row is left to label"
    elif not ranked:
        how = (f"none of the {len(unlabelled)} unlabelled row(s) has an ok verdict of {metric} in the cache: score the table first "
               "(ragjudge score ... with the same model, --api-base, --map and config)")
    return [unlabelled[position] for _, _, position in ranked[:count]], how


__all__ = ["FOLDS", "MIN_ROWS", "Cached", "Decisions", "Fit", "Knob", "cached_replies", "fit", "folds", "knobs_of", "start_settings",
           "suggest", "wilson"]

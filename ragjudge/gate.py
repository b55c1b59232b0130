"""Summary of a run and the gate: typed ``Check``s decide, and one ``GateResult`` drives both
the exit code and the printed verdict lines (worded from the checks by
``ragjudge.reports.gate_text``), so they can never disagree.

Pass rates and mean scores are over ``ok`` rows; the error rate is errors over judged
rows (ok + error); skipped rows count in neither. Exit codes: 0 every gate passed, 1 a
quality gate failed (pass rate, skip rate, diagnosis share, regressions), 3 an error-rate gate failed or the provider refused (auth, quota,
not found), 2 nothing was judged at all (no rows, or every row skipped by every metric),
130 interrupted.

The summary (counts that merge across chunks and Ray batches) and the typed checks that read
it are one contract, kept in one module; the checks' words are elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ragjudge.audit import METRICS as AUDIT_METRICS, corrected_gate
from ragjudge.corrected_rates import Corrected, ProbabilityStats, RateStats, blank, label_pass, label_rating
from ragjudge.errors import EXIT_GATE_FAILED, EXIT_JUDGE_ERRORS, EXIT_OK, EXIT_USAGE
from ragjudge.types import Reason, Usage
from ragjudge.diagnosis import shares
from ragjudge.panel import PanelCounts, members_of
from ragjudge.prefixes import PrefixCounts
from ragjudge.pairwise import DETAILS as PAIRWISE, PairwiseCounts, figures as pairwise_figures
from ragjudge.ranking import PER_PASSAGE_K, RankCounts, figures as rank_figures, grades, label_pass_at
from ragjudge.cascade import CascadeCounts, cascade_of
from ragjudge.metrics import measured as _measured

EXIT_INTERRUPTED = 130
IDS_KEPT = 100  # row ids kept per metric and outcome (failed, error, skipped); the counts stay whole
WORST_KEPT = 20  # failing rows kept per metric with their score and rationale, lowest score first


def row_name(ident: Any, index: int) -> str:
    """How a row is named in reports: its id, else ``row N`` (counting from 1)."""
    return str(ident) if ident is not None else f"row {index + 1}"


@dataclass
class MetricSummary:
    """Counts and aggregates for one metric. ``cost_usd`` in USD (None if any paid call
    had no known price); ``pass_rate`` and ``mean_score`` are None without ok rows. ``panel``:
    with a panel of judges (``judge.panel``), its ``ragjudge.panel.PanelCounts`` (each member's
    pass rate, errors and cost, pairwise agreement, Fleiss' kappa), else None."""

    metric: str
    threshold: float
    rows: int = 0
    ok: int = 0
    error: int = 0
    input_errors: int = 0  # error rows whose input was unusable (no judge call made)
    interrupted: int = 0  # error rows left unfinished by an interruption
    unsampled: int = 0  # rows left out by --limit / --sample (skipped, counted in no rate)
    unpaid: int = 0  # error rows left unjudged when the budget (judge.max_cost) was reached
    skipped: int = 0
    passed: int = 0
    cached: int = 0
    score_thousandths: int = 0  # the sum of ok scores in thousandths: exact, so chunk sums add up to the whole
    usage: Usage = field(default_factory=Usage)
    skipped_by: dict[str, int] = field(default_factory=dict)  # skip reason -> rows
    min_pass_rate: float = 1.0
    max_error_rate: float = 0.0
    max_skip_rate: float = 1.0
    prompt_version: str = ""  # the judge's prompt version (changes with its prompt, extensions included)
    ids: dict[str, list[str]] = field(default_factory=lambda: {"failed": [], "error": [], "skipped": []})  # the first IDS_KEPT of each
    worst: list[dict[str, Any]] = field(default_factory=list)  # failing rows, lowest score first: row, id, score, rationale, missing
    ground_truth: dict[str, int] = field(default_factory=dict)  # judged rows per ground truth used (expected_response / expected_facts)
    bounds: tuple[str, ...] = ()  # the bounds on judged rows the user set (gate.bounds_set): judging no row fails them
    errors_by: dict[str, int] = field(default_factory=dict)  # error reason -> rows (reasons cut at 300 characters)
    label_column: str | None = None  # the column of the team's labels (config labels:): the pass rate is corrected by them
    binary: bool = True  # a yes/no metric (a label is yes/no), else a scale (a label is a rating)
    label_scale: tuple[float, float] | None = None  # the metric's scale: a rating label off it is unreadable
    label_threshold: float | None = None  # a rating label passes at it (``Config.label_threshold``; None: ``threshold``)
    label_pass: RateStats = field(default_factory=RateStats)  # judged pass vs labelled pass, on ok rows
    label_score: RateStats = field(default_factory=RateStats)  # judged score vs labelled rating, on ok rows (a scale)
    gate_on: str = "judge"  # gate.gate_on: what min_pass_rate gates on (judge, or the corrected interval's lower bound)
    few_labels: str = "fail"  # gate.few_labels: with too few labels for an interval, fail (fail) or gate on the judge (judge)
    panel: PanelCounts | None = None  # with a panel of judges (judge.panel): each member's counts, their agreement and kappa
    rank_ks: tuple[int, ...] = ()  # passage_relevance with per-passage labels: the ks of nDCG@k and recall@k (ragjudge.ranking)
    ranks: RankCounts | None = None  # passage_relevance with per-passage labels: the sums of the rows' nDCG@k and recall@k
    label_k: int = PER_PASSAGE_K  # per-passage labels: a row's label passes at precision@label_k >= threshold, as the judge's pass (ranking.label_pass_at)
    prefixes: PrefixCounts | None = None  # sufficient_k: rows per smallest sufficient k, tokens a top-k saves (ragjudge.prefixes)
    pairwise: PairwiseCounts | None = None  # pairwise (--pairwise): rows won by A and B, ties, inconsistency, B's win rate (ragjudge.pairwise)
    probability: ProbabilityStats = field(default_factory=ProbabilityStats)  # ok verdicts' probabilities; with labels, the calibration curve
    cascade: CascadeCounts | None = None  # with a cascade (judge.cascade): per stage the rows judged and decided, calls, cost

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ok if self.ok else None

    @property
    def measured(self) -> bool:
        """Whether this metric is a measurement, not a pass/fail (``ragjudge.metrics.measured``: a
        built-in whose pass is no quality, at a floor of 0), or a comparison of two responses (its
        pairwise counts) at a floor of 0: its failed rows are no failing rows in the reports."""
        return _measured(self.metric, self.min_pass_rate) or (self.pairwise is not None and self.min_pass_rate == 0.0)

    @property
    def mean_score(self) -> float | None:
        return self.score_thousandths / 1000 / self.ok if self.ok else None

    @property
    def error_rate(self) -> float:
        judged = self.ok + self.error
        return self.error / judged if judged else 0.0

    def add(self, verdict: Any, ident: Any = None, index: int | None = None) -> None:
        """Count one row's ``Verdict``; ``ident`` (the row's id) and ``index`` (its position in
        the input, from 0) name it among the failing, error and skipped rows kept."""
        self.rows += 1
        index = self.rows - 1 if index is None else index
        outcome = None
        if verdict.status == "ok":
            self.ok += 1
            self.score_thousandths += round(float(verdict.score) * 1000)
            self.passed += bool(verdict.passed)
            if verdict.probability is not None:
                self.probability.add(verdict.probability)
            if not verdict.passed:
                outcome = "failed"
                self._keep_worst({"row": index + 1, "id": row_name(ident, index), "score": verdict.score,
                                  "rationale": verdict.rationale, "missing": list(verdict.missing)})
        elif verdict.status == "error":
            self.error += 1
            reason = (verdict.error or "error")[:300]
            self.errors_by[reason] = self.errors_by.get(reason, 0) + 1
            self.input_errors += verdict.input_error
            self.interrupted += verdict.reason is Reason.INTERRUPTED
            self.unpaid += verdict.reason is Reason.BUDGET_REACHED
            outcome = "error"
        elif verdict.reason is Reason.NOT_SAMPLED:
            self.unsampled += 1
        else:
            self.skipped += 1
            reason = verdict.error or "skipped"
            self.skipped_by[reason] = self.skipped_by.get(reason, 0) + 1
            outcome = "skipped"
        if outcome and len(self.ids[outcome]) < IDS_KEPT:
            self.ids[outcome].append(row_name(ident, index))
        if verdict.cached:
            self.cached += 1
        members = members_of(verdict.details)
        if members:
            if self.panel is None:
                self.panel = PanelCounts()
            self.panel.add(members)
        found = verdict.details if verdict.status == "ok" and isinstance(verdict.details, dict) else {}
        if isinstance(found.get("prefixes"), dict):  # sufficient_k: the row's smallest sufficient k
            self.prefixes = self.prefixes or PrefixCounts()
            self.prefixes.add(found["prefixes"])
        if isinstance(found.get(PAIRWISE), dict):  # pairwise: the row's outcome and its two orders
            self.pairwise = self.pairwise or PairwiseCounts()
            self.pairwise.add(float(verdict.score), found[PAIRWISE])
        staged = cascade_of(verdict.details)
        if staged:
            if self.cascade is None:
                self.cascade = CascadeCounts()
            self.cascade.add(staged)
        used = (verdict.details or {}).get("ground_truth") if isinstance(verdict.details, dict) else None
        if used:
            self.ground_truth[used] = self.ground_truth.get(used, 0) + 1
        self.usage = self.usage + verdict.usage

    def add_label(self, verdict: Any, label: Any) -> None:
        """Count one counted row's ``label`` (a cell of ``label_column``; None: unlabelled) against
        its ok ``verdict`` (``ragjudge.corrected_rates``): the pass, and the score on a scale."""
        if self.label_column is None:
            return
        if self.rank_ks:  # a list of grades per passage (passage_relevance): nDCG@k and recall@k, and the row's label pass below
            self._add_ranks(verdict, label)
        if verdict.status != "ok":  # no verdict to correct: the label is left out, and counted
            if not blank(label):
                if verdict.status == "skipped":
                    self.label_pass.on_skipped += 1
                else:
                    self.label_pass.on_errors += 1
            return
        found = (label_pass_at(label, self.label_k, self.threshold, (verdict.details or {}).get("relevant")) if self.rank_ks
                 else label_pass(label, self.binary, self.threshold if self.label_threshold is None else self.label_threshold, self.label_scale))
        if found is None and not blank(label):  # a cell that holds no label (text, a rating off the scale): left out, and counted
            self.label_pass.unreadable += 1
        self.label_pass.add(1.0 if verdict.passed else 0.0, found)
        if found is not None and verdict.probability is not None:
            self.probability.add_label(verdict.probability, found)
        if not self.binary and not self.rank_ks:
            self.label_score.add(float(verdict.score), label_rating(label, self.label_scale))

    def _add_ranks(self, verdict: Any, label: Any) -> None:
        """Count one ok row's per-passage ``label`` (grades in retrieved order): its nDCG@k and
        recall@k for each k of ``rank_ks``; a cell that is no list of grades, or that has as many
        grades as the verdict has passages, counts as unreadable."""
        if verdict.status != "ok" or blank(label):
            return
        if self.ranks is None:
            self.ranks = RankCounts()
        found = grades(label)
        judged = (verdict.details or {}).get("relevant") if isinstance(verdict.details, dict) else None
        if found is None or (judged is not None and len(judged) != len(found)):
            self.ranks.unreadable += 1
            return
        self.ranks.add(rank_figures(found, list(self.rank_ks)))

    def corrected(self) -> dict[str, Corrected] | None:
        """The label-corrected pass rate (``pass_rate``) and, on a scale, mean score (``mean_score``); None without labels."""
        if self.label_column is None:
            return None
        found = {"pass_rate": self.label_pass.corrected()}
        if not self.binary and not self.rank_ks:
            found["mean_score"] = self.label_score.corrected()
            found["mean_score"].agreement = None  # a score equal to a rating is no figure of a mean (0.0 for coverage scores)
        return found

    def merge(self, other: "MetricSummary") -> "MetricSummary":
        """This summary and ``other`` (the same metric over other rows) added together."""
        merged = MetricSummary(self.metric, self.threshold, min_pass_rate=self.min_pass_rate, max_error_rate=self.max_error_rate,
                               max_skip_rate=self.max_skip_rate, prompt_version=self.prompt_version or other.prompt_version,
                               bounds=self.bounds or other.bounds, label_column=self.label_column or other.label_column,
                               binary=self.binary, label_scale=self.label_scale or other.label_scale,
                               label_threshold=self.label_threshold if self.label_threshold is not None else other.label_threshold,
                               label_pass=self.label_pass.merge(other.label_pass),
                               label_score=self.label_score.merge(other.label_score), gate_on=self.gate_on, few_labels=self.few_labels,
                               probability=self.probability.merge(other.probability))
        for name in ("rows", "ok", "error", "input_errors", "interrupted", "unsampled", "unpaid", "skipped", "passed", "cached", "score_thousandths"):
            setattr(merged, name, getattr(self, name) + getattr(other, name))
        merged.usage = self.usage + other.usage
        merged.skipped_by = dict(self.skipped_by)
        for reason, count in other.skipped_by.items():
            merged.skipped_by[reason] = merged.skipped_by.get(reason, 0) + count
        merged.errors_by = dict(self.errors_by)
        for reason, count in other.errors_by.items():
            merged.errors_by[reason] = merged.errors_by.get(reason, 0) + count
        merged.ids = {key: (self.ids[key] + other.ids[key])[:IDS_KEPT] for key in self.ids}
        merged.ground_truth = {k: self.ground_truth.get(k, 0) + other.ground_truth.get(k, 0) for k in {**self.ground_truth, **other.ground_truth}}
        merged.worst = sorted(self.worst + other.worst, key=lambda row: (row["score"], row["row"]))[:WORST_KEPT]
        for name in ("panel", "prefixes", "pairwise", "cascade"):
            mine = getattr(self, name)
            setattr(merged, name, mine.merge(getattr(other, name)) if mine is not None else getattr(other, name))
        merged.rank_ks, merged.label_k = self.rank_ks or other.rank_ks, self.label_k
        merged.ranks = self.ranks.merge(other.ranks) if self.ranks is not None else other.ranks
        return merged

    def _keep_worst(self, row: dict[str, Any]) -> None:
        if len(self.worst) >= WORST_KEPT and (row["score"], row["row"]) >= (self.worst[-1]["score"], self.worst[-1]["row"]):
            return
        self.worst.append(row)
        self.worst.sort(key=lambda kept: (kept["score"], kept["row"]))
        del self.worst[WORST_KEPT:]

    @property
    def failed(self) -> int:
        """Ok rows that did not pass."""
        return self.ok - self.passed

    @property
    def skip_rate(self) -> float:
        """Skipped rows over the rows chosen to judge (rows left out by --sample do not count)."""
        chosen = self.rows - self.unsampled
        return self.skipped / chosen if chosen else 0.0

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens

    @property
    def cost_usd(self) -> float | None:
        """USD for this metric's calls; None when a call that got a reply had no known price."""
        return self.usage.cost_usd

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "ok": self.ok,
            "error": self.error,
            "input_errors": self.input_errors,
            "skipped": self.skipped,
            "not_sampled": self.unsampled,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "mean_score": self.mean_score,
            "error_rate": self.error_rate,
            "skip_rate": self.skip_rate,
            "skipped_by": dict(sorted(self.skipped_by.items(), key=lambda item: -item[1])),
            "errors_by": dict(sorted(self.errors_by.items(), key=lambda item: -item[1])[:20]),
            "threshold": self.threshold,
            "min_pass_rate": self.min_pass_rate,
            "max_error_rate": self.max_error_rate,
            "max_skip_rate": self.max_skip_rate,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "prompt_version": self.prompt_version,
            # the rows behind the counts: the first ids of each outcome (capped), with the whole count
            "failed_rows": {"count": self.failed, "ids": self.ids["failed"]},
            "error_rows": {"count": self.error, "ids": self.ids["error"]},
            "skipped_rows": {"count": self.skipped, "ids": self.ids["skipped"]},
            **({"ground_truth": dict(sorted(self.ground_truth.items()))} if self.ground_truth else {}),
            **({"panel": self.panel.to_dict()} if self.panel is not None else {}),
            **({"sufficient_k": self.prefixes.to_dict()} if self.prefixes is not None else {}),
            **({"pairwise": pairwise_figures(self)} if self.pairwise is not None else {}),
            # passage_relevance against per-passage labels: the mean nDCG@k and recall@k of the labelled rows
            **({"rank_labels": self.ranks.to_dict()} if self.ranks is not None else {}),
            # ok verdicts' probabilities (P(yes) / P(pass)): the mean, and with labels the calibration curve and Brier score
            **({"probability": self.probability.to_dict()} if self.probability.n else {}),
            **({"cascade": self.cascade.to_dict()} if self.cascade is not None else {}),
            **({"corrected": {"labels": self.label_column, **{k: v.to_dict() for k, v in corrected.items()}}}
               if (corrected := self.corrected()) is not None else {}),
        }


@dataclass
class Summary:
    """A run's (or one chunk's) counts: ``rows``, one ``MetricSummary`` per metric, the fatal
    provider error that stopped it (if any), whether it was interrupted, provider requests
    made (``provider_calls``), the judge model and the rows that lost sentences addressed to
    the judge. ``merge`` adds the summaries of chunks into the summary of the whole."""

    rows: int = 0
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    fatal: str | None = None
    interrupted: bool = False
    provider_calls: int = 0
    judge_model: str = ""
    rows_with_removed_instructions: int = 0
    budget_reached: bool = False
    max_cost: float | None = None
    # rows per diagnosis (ragjudge.diagnosis.CELLS); None: the run did not judge both sufficiency and completeness
    diagnosis: dict[str, int] | None = None
    max_diagnosis: dict[str, float] = field(default_factory=dict)  # gate.max_diagnosis: diagnosis -> highest share
    cache: bool = True  # the run read and wrote the response cache (False: --no-cache)
    allow_undiagnosed: bool = False  # gate.allow_unjudged lists 'diagnosis': a max_diagnosis bound may find no row with a diagnosis
    audit: Any = None  # ragjudge.audit.Audit: the abstention audit; None: not sufficiency, abstention and completeness all judged

    @property
    def diagnosed(self) -> int:
        """Rows with a diagnosis."""
        return sum((self.diagnosis or {}).values())

    def diagnosis_shares(self) -> dict[str, float | None]:
        """Each diagnosis's share among the rows with one (None without such rows)."""
        return shares(self.diagnosis or {})

    @property
    def usage(self) -> Usage:
        return Usage.total([m.usage for m in self.metrics.values()])

    @property
    def cost_usd(self) -> float | None:
        """USD for the whole run; None when some call that got a reply had no known price."""
        return self.usage.cost_usd

    def merge(self, other: "Summary") -> "Summary":
        """This summary and ``other`` (the same run's other rows) added together; the first
        fatal error is kept, and an interruption of either is one of both."""
        metrics = dict(self.metrics)
        for name, theirs in other.metrics.items():
            metrics[name] = metrics[name].merge(theirs) if name in metrics else theirs
        return Summary(
            rows=self.rows + other.rows,
            metrics=metrics,
            fatal=self.fatal or other.fatal,
            interrupted=self.interrupted or other.interrupted,
            provider_calls=self.provider_calls + other.provider_calls,
            judge_model=self.judge_model or other.judge_model,
            rows_with_removed_instructions=self.rows_with_removed_instructions + other.rows_with_removed_instructions,
            budget_reached=self.budget_reached or other.budget_reached,
            max_cost=self.max_cost if self.max_cost is not None else other.max_cost,
            diagnosis=_add_counts(self.diagnosis, other.diagnosis),
            max_diagnosis=self.max_diagnosis or other.max_diagnosis,
            cache=self.cache and other.cache,
            allow_undiagnosed=self.allow_undiagnosed or other.allow_undiagnosed,
            audit=self.audit.merge(other.audit) if self.audit is not None and other.audit is not None else self.audit or other.audit,
        )


def _add_counts(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int] | None:
    if a is None or b is None:
        return a if b is None else b
    return {key: a.get(key, 0) + b.get(key, 0) for key in dict.fromkeys([*a, *b])}


class Kind(str, Enum):
    """What a gate ``Check`` tested. Per metric: ``skip_rate``, ``no_row_judged`` (the metric judged
    no row, or none ok: failed when the user set a bound on it, ``gate.bounds_set``; else not applied), ``error_rate``, ``pass_rate``; for the run: ``judge_stopped`` (a
    fatal provider error), ``budget_reached``, ``interrupted``, ``nothing_judged`` (no row, or
    every row skipped), ``unusable_input`` (every judged row's input was unusable), ``diagnosis_share``
    (per diagnosis, in ``metric``: its share among the rows with one, against ``gate.max_diagnosis``;
    failed when no row has one, unless ``gate.allow_unjudged`` lists diagnosis); ``corrected_pass_rate``
    (``gate.gate_on: corrected``: the lower bound of the label-corrected pass rate's 95% interval,
    ``ragjudge.corrected_rates``, against ``min_pass_rate``; failed when too few rows are labelled
    unless ``gate.few_labels: judge``); ``audit_rate``, ``corrected_audit_rate`` (``gate.max_rate``;
    ``ragjudge.audit.corrected_gate``); against a baseline (``ragjudge.compare.checks``): ``nothing_compared``, ``regressions``, ``pass_rate_drop``."""

    SKIP_RATE = "skip_rate"
    NO_ROW_JUDGED = "no_row_judged"
    ERROR_RATE = "error_rate"
    PASS_RATE = "pass_rate"
    JUDGE_STOPPED = "judge_stopped"
    BUDGET_REACHED = "budget_reached"
    INTERRUPTED = "interrupted"
    NOTHING_JUDGED = "nothing_judged"
    UNUSABLE_INPUT = "unusable_input"
    NOTHING_COMPARED = "nothing_compared"
    REGRESSIONS = "regressions"
    PASS_RATE_DROP = "pass_rate_drop"
    DIAGNOSIS_SHARE = "diagnosis_share"
    CORRECTED_PASS_RATE = "corrected_pass_rate"
    AUDIT_RATE = "audit_rate"
    CORRECTED_AUDIT_RATE = "corrected_audit_rate"


@dataclass(frozen=True)
class Check:
    """One check of the gate: the ``metric`` it applies to (None: the whole run), the ``check``
    made (a ``Kind``), the measured ``value`` and its ``bound`` (rates 0..1, rows, USD), and
    ``passed`` (None: not applied). ``counts`` holds the figures its line names (rows, ok,
    errors...), ``detail`` a message it quotes (the provider's fatal error). The exit code is
    derived from checks (``exit_code``); their text is rendered from them (``line``)."""

    metric: str | None
    check: Kind
    passed: bool | None
    value: float | None = None
    bound: float | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    detail: str | None = None

    @property
    def failed(self) -> bool:
        return self.passed is False


_PASS_GATES = (Kind.SKIP_RATE, Kind.PASS_RATE, Kind.NOTHING_COMPARED, Kind.REGRESSIONS, Kind.PASS_RATE_DROP, Kind.DIAGNOSIS_SHARE,
               Kind.NO_ROW_JUDGED, Kind.CORRECTED_PASS_RATE, Kind.AUDIT_RATE, Kind.CORRECTED_AUDIT_RATE)


def exit_code(checks: list[Check]) -> int:
    """The exit code of a run whose gate made ``checks``: 130 interrupted; 2 nothing judged,
    every input unusable, or an error-rate gate broken by unusable inputs alone; 3 the judge
    stopped, the budget was reached or judge errors broke an error-rate gate; 1 a pass-rate,
    skip-rate, diagnosis-share or regression gate failed; 0 none failed."""
    failed = {c.check for c in checks if c.failed}
    judge_errors = any(c.check is Kind.ERROR_RATE and c.failed and (c.counts["error"] - c.counts["input_errors"]) / c.counts["judged"] > c.bound
                       for c in checks)
    if Kind.INTERRUPTED in failed:
        return EXIT_INTERRUPTED
    if failed & {Kind.NOTHING_JUDGED, Kind.UNUSABLE_INPUT}:
        return EXIT_USAGE
    if failed & {Kind.JUDGE_STOPPED, Kind.BUDGET_REACHED} or judge_errors:
        return EXIT_JUDGE_ERRORS
    if Kind.ERROR_RATE in failed:  # every error row that broke the gate failed on its own input: no judge failed
        return EXIT_USAGE
    if failed & set(_PASS_GATES):
        return EXIT_GATE_FAILED
    return EXIT_OK


@dataclass
class GateResult:
    """The gate's ``checks`` (``Check``, in the order they print) and the ``exit_code`` derived
    from them; ``passed`` is derived too. Their words (the printed lines, the failures, the
    closing verdict) are ``ragjudge.reports.gate_text``'s, rendered from the checks."""

    checks: list[Check]
    exit_code: int

    @property
    def passed(self) -> bool:
        return self.exit_code == EXIT_OK


def check_gate(summary: Summary) -> GateResult:
    """Apply each metric's max skip rate, max error rate and min pass rate to ``summary``, and
    the run-wide checks (interrupted, budget, fatal provider error, nothing judged)."""
    per_metric: list[Check] = []
    for name, m in summary.metrics.items():
        judged = m.ok + m.error
        skips = {"skipped": m.skipped, "rows": m.rows - m.unsampled, "skipped_by": dict(m.skipped_by)}  # of the rows chosen to judge
        if m.rows:
            per_metric.append(Check(name, Kind.SKIP_RATE, not m.skip_rate > m.max_skip_rate, m.skip_rate, m.max_skip_rate, skips))
        bounds = {"min_pass_rate": m.min_pass_rate, "max_error_rate": m.max_error_rate}
        set_bounds = {b: bounds[b] for b in m.bounds}
        if judged == 0:  # a bound the user set on a metric that measured nothing fails; a default one is not applied
            per_metric.append(Check(name, Kind.NO_ROW_JUDGED, False if set_bounds else None, counts={**skips, "bounds": set_bounds}))
            continue
        per_metric.append(Check(name, Kind.ERROR_RATE, not m.error_rate > m.max_error_rate, m.error_rate, m.max_error_rate,
                                {"error": m.error, "judged": judged, "input_errors": m.input_errors}))
        if m.ok == 0:
            if "min_pass_rate" in set_bounds:  # every judged row is an error: the pass rate measured nothing
                per_metric.append(Check(name, Kind.NO_ROW_JUDGED, False, counts={**skips, "error": m.error,
                                                                                 "bounds": {"min_pass_rate": m.min_pass_rate}}))
            continue
        assert m.pass_rate is not None
        per_metric.append(_pass_rate_check(name, m))
    run: list[Check] = []
    nothing = not summary.interrupted and not summary.fatal and all(m.ok + m.error == 0 for m in summary.metrics.values())
    # every row a metric judged failed on its own input (an unusable context): no judge ran,
    # so this is an input error (exit 2), not a judge failure (exit 3)
    unusable = (
        not nothing and not summary.interrupted and not summary.fatal
        and all(m.ok == 0 and m.error == m.input_errors for m in summary.metrics.values())
    )
    if unusable:
        run.append(Check(None, Kind.UNUSABLE_INPUT, False, counts={"rows": max(m.input_errors for m in summary.metrics.values())}))
    if nothing:
        run.append(Check(None, Kind.NOTHING_JUDGED, False, counts={"rows": summary.rows}))
    if summary.interrupted:
        run.append(Check(None, Kind.INTERRUPTED, False, counts={name: m.interrupted for name, m in summary.metrics.items()}))
    if summary.budget_reached:
        # per metric: a row may be judged by one metric and not by another
        run.append(Check(None, Kind.BUDGET_REACHED, False, summary.cost_usd or 0.0, summary.max_cost,
                         {"unpaid": {name: m.unpaid for name, m in summary.metrics.items()}, "cache": summary.cache}))
    if summary.fatal:
        run.append(Check(None, Kind.JUDGE_STOPPED, False, detail=summary.fatal))
    checks = run + per_metric + diagnosis_checks(summary) + audit_checks(summary)
    return GateResult(checks, exit_code(checks))


def _pass_rate_check(name: str, m: MetricSummary) -> Check:
    """``min_pass_rate`` on the judge's pass rate, or (``gate_on: corrected``, with labels) on the
    lower bound of the label-corrected pass rate's interval; too few labels fail it, or fall
    back to the judge's rate when ``few_labels: judge`` (the line says so)."""
    counts: dict[str, Any] = {"passed": m.passed, "ok": m.ok}
    if m.gate_on == "corrected" and m.label_column is not None:
        found = m.label_pass.corrected()
        counts.update(labelled=found.labelled, estimate=found.estimate, low=found.low, high=found.high, judge=m.pass_rate,
                      needed=found.needed, column=m.label_column)
        if found.low is not None:
            return Check(name, Kind.CORRECTED_PASS_RATE, not found.low < m.min_pass_rate, found.low, m.min_pass_rate, counts)
        if m.min_pass_rate <= 0:  # no rate is below 0: the bound holds whatever the labels, as on the judge's rate
            return Check(name, Kind.PASS_RATE, True, m.pass_rate, m.min_pass_rate, {"passed": m.passed, "ok": m.ok})
        if m.few_labels != "judge":
            return Check(name, Kind.CORRECTED_PASS_RATE, False, None, m.min_pass_rate, counts)
        counts["fallback"] = True
    return Check(name, Kind.PASS_RATE, not m.pass_rate < m.min_pass_rate, m.pass_rate, m.min_pass_rate, counts)


def diagnosis_checks(summary: Summary) -> list[Check]:
    """``summary.max_diagnosis`` applied: per bounded diagnosis, a ``DIAGNOSIS_SHARE`` check
    (metric: the diagnosis) that fails when its share among the rows with a diagnosis is above
    the bound (a share equal to it passes); when no row has a diagnosis, it fails (the bound
    measured nothing), or is not applied (None) where ``gate.allow_unjudged`` lists diagnosis."""
    out = []
    diagnosed = summary.diagnosed
    for name, bound in summary.max_diagnosis.items():
        count = (summary.diagnosis or {}).get(name, 0)
        counts = {"count": count, "diagnosed": diagnosed}
        if not diagnosed:  # a bound set that measured nothing fails, unless gate.allow_unjudged lists diagnosis
            out.append(Check(name, Kind.DIAGNOSIS_SHARE, None if summary.allow_undiagnosed else False, None, bound, counts))
            continue
        share = count / diagnosed
        out.append(Check(name, Kind.DIAGNOSIS_SHARE, not share > bound, share, bound, counts))
    return out


def audit_checks(summary: Summary) -> list[Check]:
    """``gate.max_rate`` applied to the abstention audit (``ragjudge.audit``): per bounded rate an
    ``AUDIT_RATE`` check (metric: the rate's name) that fails when the rate is above the bound (equal
    passes); a bound whose rate has no row (no audit, or no row on its side of the table) fails, as a
    bound that measured nothing."""
    audit = summary.audit
    out = []
    for name, bound in (getattr(audit, "max_rate", None) or {}).items():
        count, rows = audit.rate(name)
        counts = {"count": count, "rows": rows,  # the audit's metrics this run does not judge: the fix a bound that measured nothing names
                  "unjudged": [m for m in AUDIT_METRICS if m not in summary.metrics]}
        if (audit.gate_on or {}).get(name) == "corrected":
            found = corrected_gate(audit, name, bound, counts)
            if found is not None:
                out.append(Check(name, Kind.CORRECTED_AUDIT_RATE, *found, bound, counts))
                continue
        out.append(Check(name, Kind.AUDIT_RATE, False, None, bound, counts) if not rows
                   else Check(name, Kind.AUDIT_RATE, not count / rows > bound, count / rows, bound, counts))
    return out


def with_regressions(gate: GateResult, checks: list[Check]) -> GateResult:
    """``gate`` joined by the regression gates' ``checks`` (from ``ragjudge.compare.checks``): a
    failed one fails the run with exit 1 unless it already fails with another code."""
    joined = [*gate.checks, *checks]
    return GateResult(joined, exit_code(joined))

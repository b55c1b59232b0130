"""A cascade of judges (``judge.cascade``, ``--cascade FIRST,THEN``): a cheap judge decides the
rows it is sure of, the next stage the rest.

The first stage (a judge that gives P(yes): the embedded judge, a chat model read with
log-probabilities, a decision model) judges every row; a row whose P(yes) (``Verdict.probability``:
P(pass) of a score) lies in ``judge.cascade_band`` [LO, HI], bounds included, goes to the next
stage, and so on; the last stage (a model, or ``panel``: the configured ``judge.panel``) decides
every row that reaches it. A stage whose verdict is an error, or carries no probability, sends
the row on as well (the rationale says why). Each stage is a model of its own, with its own
cache keys: widening the band pays only for the rows newly escalated.

The rows still uncertain after the last stage (its own P(yes) in the band, or a panel whose
members split) are the rows to label next (``M_to_label``; ``ragjudge score --to-label FILE``).

This module holds the plain parts: the stages' names (``stage_label``), the run's model of
stages (``CascadeModel``: the scorer runs each stage through ``Scorer._chain`` / ``_panel``),
one row's final verdict from its stages' (``decide``), the per-row columns (``stage_values``),
the summary's counts per stage (``CascadeCounts``) and the band fitted on labelled rows
(``fit_band``, ``ragjudge calibrate --cascade``).

References: accept-or-escalate routing of confident judge answers (Jung et al., "Trust or
Escalate", 2024); LangSmith's chained evaluators (a hand-set gate between two judges).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragjudge.panel import stage_label
from ragjudge.types import OK, Usage, Verdict

CASCADE = "cascade"  # the key of a verdict's ``details`` that holds its stages' results
# a stage's columns ``M_cascade_NAME_SUFFIX``: suffix -> type
STAGE_COLUMNS = {"probability": "float64", "score": "float64", "passed": "bool", "status": "string", "cost_usd": "float64"}


def in_band(probability: float | None, band: tuple[float, float]) -> bool:
    """Whether ``probability`` (0..1, or None) lies in ``band`` [LO, HI], bounds included."""
    return probability is not None and band[0] <= probability <= band[1]


class CascadeModel:
    """The stages of a cascade, seen by the run as one model: ``stages`` is [(name, model)] in
    order, each a ``ragjudge.model.Model`` or ``PanelModel`` made by the scorer; they share one
    budget (``ledger``: ``judge.max_cost`` covers every stage). ``band``: [LO, HI]. The scorer
    asks each stage in turn (``Scorer._cascade``); a panel stage's members are the panel's."""

    def __init__(self, stages: list[tuple[str, Any]], band: tuple[float, float], ledger: Any) -> None:
        self.stages = stages
        self.band = (float(band[0]), float(band[1]))
        self.ledger = ledger
        self.provider_model = "cascade: " + " -> ".join(model.provider_model for _, model in stages)
        self.transport = stages[0][1].transport

    @property
    def names(self) -> list[str]:
        """The stages' names (columns ``M_cascade_NAME_*``), in order."""
        return [name for name, _ in self.stages]

    @property
    def fatal(self) -> Any:
        """The last stage's fatal error, if any: an earlier stage's own leaves its rows to the next."""
        return self.stages[-1][1].fatal

    @fatal.setter
    def fatal(self, value: Any) -> None:
        for _, model in self.stages:
            model.fatal = value

    @property
    def budget_reached(self) -> bool:
        return any(model.budget_reached for _, model in self.stages)

    @property
    def spent(self) -> float:
        return self.ledger.spent

    @property
    def calls(self) -> int:
        return sum(model.calls for _, model in self.stages)

    @property
    def retries(self) -> int:
        return sum(model.retries for _, model in self.stages)

    @property
    def stopping(self) -> bool:
        return any(model.stopping for _, model in self.stages)

    @property
    def on_wire(self) -> int:
        return sum(model.on_wire for _, model in self.stages)

    def prepare(self) -> None:
        for _, model in self.stages:
            getattr(model, "prepare", lambda: None)()

    def prefetch(self, calls: list[Any]) -> None:
        """Nothing: each stage looks its calls up as it makes them."""

    def group(self, calls: list[Any]) -> None:
        """The first stage groups a row's calls as its kind does (a decision model asks the row's
        metrics in one request: ``DecisionModel.group``); a later stage is asked per metric, for
        the rows the band escalates."""
        self.stages[0][1].group(calls)

    def peek(self, call: Any, sample: int = 0, key: str | None = None) -> Verdict | None:
        """None: a cascade's verdict is its stages' (each reads its own cache when asked)."""
        return None

    def interrupt(self) -> None:
        for _, model in self.stages:
            model.interrupt()

    async def aclose(self) -> None:
        for _, model in self.stages:
            await model.aclose()


def escalation(verdict: Verdict, band: tuple[float, float]) -> str | None:
    """Why a stage's ``verdict`` sends its row to the next stage, in words, or None when the
    stage decides it: an error, no probability, or P(yes) in ``band``."""
    if verdict.status != OK:
        return f"{verdict.status}: {verdict.error or verdict.status}"
    if verdict.probability is None:
        return "no probability"
    if in_band(verdict.probability, band):
        return f"P(yes) {verdict.probability:.2f} in the band [{band[0]:g}, {band[1]:g}]"
    return None


def uncertain(verdict: Verdict, band: tuple[float, float]) -> bool:
    """Whether the last stage's ok ``verdict`` is itself unsure: its P(yes) in ``band``, or a
    panel whose members that answered did not all agree."""
    if verdict.status != OK:
        return False
    if in_band(verdict.probability, band):
        return True
    panel = (verdict.details or {}).get("panel") if isinstance(verdict.details, dict) else None
    agreement = panel.get("agreement") if isinstance(panel, dict) else None
    return agreement is not None and agreement < 1.0


def stage_result(name: str, model: str, verdict: Verdict) -> dict[str, Any]:
    """One stage's result as the final verdict's ``details["cascade"]["stages"]`` keeps it."""
    return {"name": name, "model": model, "status": verdict.status, "probability": verdict.probability, "score": verdict.score,
            "passed": verdict.passed, "error": verdict.error, "cost_usd": verdict.usage.cost_usd if verdict.cached is not None else None,
            "calls": verdict.usage.calls, "cached": verdict.cached}


def decide(metric: str, results: list[tuple[str, str, Verdict]], band: tuple[float, float], last: bool) -> Verdict:
    """A row's final verdict from the stages that judged it, ``results`` = [(name, model,
    verdict)] in order (the first stage's first); ``last``: whether the last stage of the
    cascade is among them. The final verdict is the last of them, with ``usage`` the stages'
    total, ``cached`` true only when no stage made a call, the rationale prefixed by the stage
    that decided (and why the ones before it escalated), and ``details["cascade"]`` = ``{"stages":
    [stage_result...], "decided": NAME, "escalated": bool, "to_label": bool}``."""
    name, model, final = results[-1]
    usage = Usage.total([v.usage for _, _, v in results])
    verdicts = [v for _, _, v in results]
    cached = None if all(v.cached is None for v in verdicts) else all(v.cached is not False for v in verdicts)
    out = final.copy(usage=usage, cached=cached)
    passed_on = [f"{n} {escalation(v, band)}" for n, _, v in results[:-1]]
    said = f"[{name}{', after ' + '; '.join(passed_on) if passed_on else ''}] "
    if out.status == OK:
        out.rationale = said + (out.rationale or "")
    else:
        out.error = said + (out.error or out.status)
    details = dict(out.details) if isinstance(out.details, dict) else {}
    details[CASCADE] = {"stages": [stage_result(n, m, v) for n, m, v in results], "decided": name,
                        "escalated": len(results) > 1, "to_label": last and uncertain(final, band)}
    out.details = details
    return out


def cascade_of(details: Any) -> dict[str, Any] | None:
    """The cascade's record in a verdict's ``details`` (``decide``), else None."""
    if not isinstance(details, dict):
        return None
    found = details.get(CASCADE)
    return found if isinstance(found, dict) else None


def stage_values(metric: str, names: list[str], column: list[Verdict]) -> dict[str, list[Any]]:
    """The cascade's columns of ``metric`` for ``column`` (one verdict per row): ``M_stage`` (the
    stage that decided), ``M_to_label`` (still uncertain after the last stage) and per stage
    ``M_cascade_NAME_{probability,score,passed,status,cost_usd}``; null where no stage judged
    the row, and a stage's where the row did not reach it."""
    out: dict[str, list[Any]] = {f"{metric}_stage": [], f"{metric}_to_label": []}
    for name in names:
        for suffix in STAGE_COLUMNS:
            out[f"{metric}_cascade_{name}_{suffix}"] = []
    for verdict in column:
        found = cascade_of(verdict.details)
        out[f"{metric}_stage"].append(found.get("decided") if found else None)
        out[f"{metric}_to_label"].append(bool(found.get("to_label")) if found else None)
        stages = {item["name"]: item for item in (found or {}).get("stages", [])}
        for name in names:
            item = stages.get(name) or {}
            for suffix in STAGE_COLUMNS:
                out[f"{metric}_cascade_{name}_{suffix}"].append(item.get(suffix))
    return out


@dataclass
class StageCounts:
    """One stage's counts over a metric's rows: ``judged`` (rows it was asked), ``decided``
    (rows whose final verdict is its), ``passed`` (of those decided and ok), ``calls`` and
    ``cost_usd`` (USD of its calls; None once a paid call had no known price)."""

    model: str = ""
    judged: int = 0
    decided: int = 0
    passed: int = 0
    calls: int = 0
    cost_usd: float | None = 0.0

    def merge(self, other: "StageCounts") -> "StageCounts":
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return StageCounts(self.model or other.model, self.judged + other.judged, self.decided + other.decided,
                           self.passed + other.passed, self.calls + other.calls, cost)


@dataclass
class CascadeCounts:
    """A metric's cascade figures over its rows, added row by row (``add``) and over chunks
    (``merge``): per stage its ``StageCounts``; ``rows`` (rows the first stage judged),
    ``escalated`` (rows sent past the first stage), ``both`` / ``agreed`` (escalated rows where
    the first stage and the deciding stage both gave a verdict, and those where they agreed on
    pass / fail), ``to_label`` (rows still uncertain after the last stage)."""

    stages: dict[str, StageCounts] = field(default_factory=dict)
    rows: int = 0
    escalated: int = 0
    both: int = 0
    agreed: int = 0
    to_label: int = 0

    def add(self, found: dict[str, Any]) -> None:
        """Count one row's cascade record (``cascade_of``)."""
        stages = found.get("stages") or []
        if not stages:
            return
        self.rows += 1
        self.escalated += bool(found.get("escalated"))
        self.to_label += bool(found.get("to_label"))
        for item in stages:
            counts = self.stages.setdefault(item["name"], StageCounts(item.get("model") or ""))
            counts.judged += 1
            counts.calls += int(item.get("calls") or 0)
            cost = item.get("cost_usd")
            counts.cost_usd = None if counts.cost_usd is None or (cost is None and item.get("calls")) else counts.cost_usd + (cost or 0.0)
        last = stages[-1]
        decider = self.stages[last["name"]]
        decider.decided += 1
        decider.passed += bool(last.get("status") == OK and last.get("passed"))
        first = stages[0]
        if len(stages) > 1 and first.get("status") == OK and last.get("status") == OK and first.get("passed") is not None:
            self.both += 1
            self.agreed += bool(first.get("passed")) == bool(last.get("passed"))

    def merge(self, other: "CascadeCounts | None") -> "CascadeCounts":
        """These counts and ``other``'s (the same cascade over other rows) added together."""
        if other is None:
            return self
        out = CascadeCounts()
        for name in dict.fromkeys([*self.stages, *other.stages]):
            mine, theirs = self.stages.get(name), other.stages.get(name)
            out.stages[name] = mine.merge(theirs) if mine and theirs else (mine or theirs)  # type: ignore[assignment]
        out.rows = self.rows + other.rows
        out.escalated = self.escalated + other.escalated
        out.both = self.both + other.both
        out.agreed = self.agreed + other.agreed
        out.to_label = self.to_label + other.to_label
        return out

    @property
    def escalated_fraction(self) -> float | None:
        return self.escalated / self.rows if self.rows else None

    @property
    def agreement(self) -> float | None:
        """On the escalated rows, the share where the first stage's pass / fail agreed with the deciding stage's."""
        return self.agreed / self.both if self.both else None

    def lines(self, metric: str) -> list[str]:
        """The cascade's lines for the console and the Markdown summary: per stage the rows
        judged and decided, calls and cost, then the escalated fraction, the agreement on the
        escalated rows and the rows to label."""
        out = []
        for name, s in self.stages.items():
            cost = "cost unknown" if s.cost_usd is None else f"${s.cost_usd:.4f}"
            out.append(f"{metric}: cascade {name} judged {s.judged}, decided {s.decided} ({s.calls} calls, {cost})")
        fraction = "-" if self.escalated_fraction is None else f"{self.escalated_fraction:.2f}"
        agreement = "-" if self.agreement is None else f"{self.agreement:.2f}"
        out.append(f"{metric}: cascade escalated {self.escalated} of {self.rows} rows ({fraction}); first stage agreed with the "
                   f"deciding stage on {agreement} of {self.both} escalated rows; {self.to_label} to label")
        return out

    def to_dict(self) -> dict[str, Any]:
        """The summary JSON's ``cascade`` of a metric: ``stages`` (per stage: model, judged,
        decided, passed, calls, cost_usd), ``rows``, ``escalated``, ``escalated_fraction``,
        ``agreement_escalated`` (0..1 or None), ``escalated_both_judged`` and ``to_label``."""
        return {
            "stages": {name: {"model": s.model, "judged": s.judged, "decided": s.decided, "passed": s.passed, "calls": s.calls,
                              "cost_usd": s.cost_usd} for name, s in self.stages.items()},
            "rows": self.rows,
            "escalated": self.escalated,
            "escalated_fraction": self.escalated_fraction,
            "agreement_escalated": self.agreement,
            "escalated_both_judged": self.both,
            "to_label": self.to_label,
        }


GRID = tuple(round(i / 40, 3) for i in range(41))  # the band's bounds fit_band tries: 0, 0.025, ..., 1


@dataclass
class BandFit:
    """The band ``fit_band`` chose, and its figures: ``band`` [LO, HI] (fitted on every row),
    ``n`` labelled rows; on every row with that band ``agreement`` (0..1, with the later stages'
    verdicts) and ``escalated`` (share of rows sent on); out of fold (the band fitted on the other
    folds, judged on each held-out fold) ``oof_agreement`` with its 95% Wilson ``oof_interval``
    and ``oof_escalated``; ``first_alone``: the first stage's agreement on its own;
    ``assumed``: rows the band escalates whose later verdict is unknown (not escalated when
    scored), counted as decided right; ``met``: the target (or budget) was reachable;
    ``curve``: [(escalated share, agreement)] over the bands tried, the accept-or-escalate curve
    (the best agreement at each escalated share)."""

    band: tuple[float, float]
    n: int
    agreement: float
    escalated: float
    oof_agreement: float
    oof_interval: tuple[float, float]
    oof_escalated: float
    first_alone: float
    assumed: int
    met: bool
    curve: list[tuple[float, float]] = field(default_factory=list)


def fit_band(probability: list[float], first_right: list[bool], later_right: list[bool | None], *, target: float | None = None,
             max_escalate: float | None = None, folds: int = 5, seed: int = 0) -> BandFit:
    """The cascade band for labelled rows: per row the first stage's ``probability`` (P(yes), 0..1),
    whether its verdict agrees with the label (``first_right``) and whether the later stages'
    does (``later_right``; None where unknown: counted right, the upper bound an accept-or-escalate
    study reports, and counted in ``assumed``). Bands [LO, HI] from ``GRID``: with ``target``,
    the least escalation whose agreement reaches it (else the best agreement, ``met`` False);
    with ``max_escalate``, the best agreement escalating at most that share; ties to the least
    escalation, then the narrower band. Out of fold over ``folds`` folds (rows shuffled with
    ``seed``). Raises ``ValueError`` without exactly one of ``target`` and ``max_escalate``, or
    with fewer rows than folds. Wilson's interval is scipy's (``binomtest.proportion_ci``)."""
    import numpy as np
    from scipy.stats import binomtest

    if (target is None) == (max_escalate is None):
        raise ValueError("give one of a target agreement and an escalation budget")
    p = np.asarray(probability, dtype=float)
    n = len(p)
    if n < folds:
        raise ValueError(f"{n} labelled rows for {folds} folds")
    first = np.asarray(first_right, dtype=bool)
    known = np.array([v is not None for v in later_right])
    later = np.array([True if v is None else bool(v) for v in later_right])
    bands = [(lo, hi) for lo in GRID for hi in GRID if lo <= hi]
    low = np.array([b[0] for b in bands])[:, None]
    high = np.array([b[1] for b in bands])[:, None]
    sent = (p[None, :] >= low) & (p[None, :] <= high)  # band x row
    right = np.where(sent, later[None, :], first[None, :])

    def choose(rows: Any) -> int:
        escalated = sent[:, rows].mean(axis=1)
        agreement = right[:, rows].mean(axis=1)
        width = (high - low)[:, 0]
        if target is not None:
            feasible = agreement >= target - 1e-12
            if not feasible.any():
                return int(np.lexsort((width, escalated, -agreement))[0])
            order = np.lexsort((width, -agreement, escalated))
        else:
            feasible = escalated <= max_escalate + 1e-12
            order = np.lexsort((width, escalated, -agreement))
        return int(next(i for i in order if feasible[i]))

    shuffled = np.random.default_rng(seed).permutation(n)
    correct = sent_out = 0
    for fold in range(folds):
        held = shuffled[fold::folds]
        chosen = choose(np.setdiff1d(shuffled, held))
        correct += int(right[chosen, held].sum())
        sent_out += int(sent[chosen, held].sum())
    everything = np.arange(n)
    chosen = choose(everything)
    escalated, agreement = sent.mean(axis=1), right.mean(axis=1)
    met = bool(agreement[chosen] >= target - 1e-12) if target is not None else bool(escalated[chosen] <= max_escalate + 1e-12)
    interval = binomtest(correct, n).proportion_ci(method="wilson")
    best: dict[float, float] = {}
    for e, a in zip(escalated.round(3).tolist(), agreement.tolist()):
        best[e] = max(best.get(e, 0.0), a)
    return BandFit(band=bands[chosen], n=n, agreement=float(agreement[chosen]), escalated=float(escalated[chosen]),
                   oof_agreement=correct / n, oof_interval=(float(interval.low), float(interval.high)), oof_escalated=sent_out / n,
                   first_alone=float(first.mean()), assumed=int((sent[chosen] & ~known).sum()), met=met, curve=sorted(best.items()))


__all__ = ["CASCADE", "GRID", "STAGE_COLUMNS", "BandFit", "CascadeCounts", "CascadeModel", "fit_band", "StageCounts", "cascade_of", "decide", "escalation", "in_band",
           "stage_label", "stage_values", "uncertain"]

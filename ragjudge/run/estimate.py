"""``ragjudge score --dry-run``: what a run will cost, before it spends anything.

The input is read, mapped and checked exactly as a real run does (bad input is the same exit
2), every prompt is rendered and looked up in the response cache, and per metric it counts
the rows to judge, the rows skipped (with the reasons), the cache hits, the rows whose prompt
is past the model's known input limit (error rows in a run, no call) and the calls to make
(completeness's statements calls included, once per distinct ground truth; sufficient_k's search
as a row whose first passage suffices makes it: ``SufficientKJudge.unanswered``). No provider is
called and no table is written.

Tokens: prompt tokens are counted with the judge model's tokenizer where litellm ships one
for it (OpenAI's models through tiktoken, Anthropic's), else estimated at 4 characters a
token (said so). A coverage call that follows an uncached statements call cannot be rendered
yet: its prompt is estimated from the expected response's sentences. Completion tokens:
an expected figure per kind of call, and the upper bound: the ``max_tokens`` each call asks for
(``judge.max_tokens``, or the call's larger reply budget, ``budget``). Cost: USD
from ``judge.price`` or litellm's price table, as a range (expected to upper bound), or
"unknown price"; at the batch API's price with ``judge.batch`` (``--batch``), and the total at
both prices either way (``cost_by_api``).

A cascade (``judge.cascade``) is priced as its first stage's calls on every row plus each later
stage's on the escalated fraction of them: the share of the rows whose first-stage reply is
cached with a P(yes) in the band (a sample: score some rows first, e.g. ``--limit 200``), else
the band's width as a stated guess (``cascade_escalated``, said in the notes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ragjudge.types import Call, Verdict, count_of
from ragjudge.run.source import Source
from ragjudge.model import PanelModel
from ragjudge.cascade import CascadeModel, in_band
from ragjudge.judges.panel_rule import tempered
from ragjudge.scoring import Scorer
from ragjudge.cache import reading

# expected completion tokens of one call: a base and a part per judged item (fact, statement, claim)
_EXPECTED = {"grounded": (60, 45), "reference_free": (90, 0), "statements": (20, 25), "coverage": (60, 12), None: (70, 40)}


@dataclass
class MetricEstimate:
    """One metric's figures (tokens and USD for the calls still to make)."""

    rows: int = 0
    to_judge: int = 0
    skipped: int = 0
    skipped_by: dict[str, int] = field(default_factory=dict)
    cache_hits: int = 0
    over_input_limit: int = 0  # rows whose prompt is past the model's input limit: error rows, no call
    input_errors: int = 0  # rows to judge whose input is unusable (an error row, no call): counted in to_judge
    calls: int = 0
    prompt_tokens: int = 0
    expected_completion_tokens: int = 0
    max_completion_tokens: int = 0
    cost_low: float | None = 0.0
    cost_high: float | None = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def estimate(source: Any, config: Any, input_format: str | None = None, flag_fields: frozenset[str] = frozenset(),
             limit: int | None = None, sample: int | None = None, seed: int = 0) -> dict[str, Any]:
    """The dry run of ``ragjudge score`` on ``source`` (a ``ragjudge.run.source.Source``, or a path
    or ``-`` read in ``input_format``) with ``config``; the
    same row selection as the run (``limit``, ``sample``; checked by ``ragjudge.run.ScoreRequest.check``). Returns a dict: ``rows``, per metric
    the ``MetricEstimate`` figures, their totals, ``tokens`` ("counted" or "estimated"),
    ``price`` (USD per million input and output tokens, or None), ``batch`` (the run goes through
    the batch API), ``cost_by_api`` (the total's USD range at the ``direct`` and the ``batch``
    price, each {"low", "high"}; None for an unknown price) and ``notes``. Raises what a
    real run raises for bad input or settings."""
    if not isinstance(source, Source):
        source = Source.of(source, input_format, sample)
    config = reading(config)  # no cache yet: no hits, and the dry run makes no folder
    scorer = Scorer(config)
    try:
        staged = _stages(scorer)
        judges = [_Judged(name, model, temperature, {judge.name: MetricEstimate() for judge in scorer.judges}, stage)
                  for name, model, temperature, stage in staged]
        read = [0, 0]  # a cascade's first-stage replies cached with a P(yes), and those in the band
        plan = scorer.plan(source.chunks(scorer.config.chunk_size), source.name, flag_fields)
        chosen = source.selection(scorer.config.chunk_size, limit, sample, seed)
        notes: list[str] = list(plan.notes)
        start = 0
        for chunk in plan.chunks():
            records = scorer.records(chunk, plan.mapping)
            for offset, record in enumerate(records):
                before = [sum(item.calls for item in judged.figures.values()) for judged in judges]
                for judge in scorer.judges:
                    for judged in judges:  # each member of a panel makes its own calls
                        item = judged.figures[judge.name]
                        item.rows += 1
                        if chosen is not None and start + offset not in chosen:
                            _skip(item, "not sampled")
                            continue
                        _row(scorer, judge, record, item, judged.counter, judged.seen, judged.model, judged.temperature,
                             read if judged.stage == 0 and isinstance(scorer.model, CascadeModel) else None)
                for judged, made in zip(judges, before):  # a decision model asks a row's metrics in one request
                    judged.requests += sum(item.calls for item in judged.figures.values()) > made
            start += len(records)
        samples = scorer.config.judge.samples
        escalated = None
        if isinstance(scorer.model, CascadeModel):
            band = scorer.model.band
            escalated = read[1] / read[0] if read[0] else band[1] - band[0]
            notes.append(f"cascade: the later stages priced on {escalated:.0%} of the rows, "
                         + (f"the share of the {read[0]} row(s) with a cached first-stage P(yes) in the band [{band[0]:g}, {band[1]:g}]"
                            if read[0] else f"a guess: the band [{band[0]:g}, {band[1]:g}]'s width (no first-stage reply cached yet; "
                                            "score a sample first, e.g. --limit 200, for the share of your rows)"))
            for judged in judges:
                if judged.stage:
                    for item in judged.figures.values():
                        _scale(item, escalated)
        for judged in judges:
            price = judged.price
            for item in judged.figures.values():
                if price is None:
                    item.cost_low = item.cost_high = None
                else:
                    per_in, per_out = price
                    item.cost_low = (item.prompt_tokens * per_in + item.expected_completion_tokens * per_out) / 1e6
                    item.cost_high = (item.prompt_tokens * per_in + item.max_completion_tokens * per_out) / 1e6
        figures = {name: _together([judged.figures[name] for judged in judges]) for name in judges[0].figures}
        total = _total(figures, start)
        if all(judged.decides for judged in judges):  # one request a row and member, whatever its metrics' calls
            total.calls = sum(judged.requests for judged in judges)
        first = judges[0]
        prices = {judged.price for judged in judges}
        both = {}  # the total at the direct price and at the batch API's (half), whichever this run pays
        for kind, batch in (("direct", False),) + ((("batch", True),) if not any(judged.decides for judged in judges) else ()):
            ranges = []
            for judged in judges:
                rates, own = judged.model.price(batch), _total(judged.figures, start)
                if rates is None:
                    break
                ranges.append(((own.prompt_tokens * rates[0] + own.expected_completion_tokens * rates[1]) / 1e6,
                               (own.prompt_tokens * rates[0] + own.max_completion_tokens * rates[1]) / 1e6))
            else:
                both[kind] = {"low": sum(low for low, _ in ranges), "high": sum(high for _, high in ranges)}
        report = {
            "rows": start,
            "judge_model": scorer.judge_model,
            "samples": samples,
            "metrics": {name: item.to_dict() for name, item in figures.items()},
            "total": total.to_dict(),
            "tokens": "counted with the model's tokenizer" if all(j.counter.counted for j in judges) else "estimated at 4 characters a token",
            "price_per_million_tokens": None if first.price is None or len(prices) > 1 else {"input": first.price[0], "output": first.price[1]},
            "batch": bool(scorer.config.judge.batch),
            "cost_by_api": both or None,
            "notes": notes,
        }
        if escalated is not None:
            report["cascade_escalated"] = escalated
        if first.name is not None:  # a panel or a cascade: each member's or stage's own figures
            report["members"] = {judged.name: {"model": judged.model.provider_model,
                                               "metrics": {name: item.to_dict() for name, item in judged.figures.items()},
                                               "total": _total(judged.figures, start).to_dict()} for judged in judges}
        return report
    finally:
        scorer.close()


class _Judged:
    """One judge model's share of a dry run: a panel member's (``name``) or the only model's
    (``name`` None), with its token counter, price and the calls already counted (``seen``)."""

    def __init__(self, name: str | None, model: Any, temperature: float | None, figures: dict[str, MetricEstimate], stage: int = 0) -> None:
        self.name, self.model, self.temperature, self.figures, self.stage = name, model, temperature, figures, stage
        self.counter = model.counter()
        self.price = model.price()
        self.seen: set[str] = set()
        self.decides = hasattr(model, "request_tokens")  # a decision model (``model.DecisionModel``): no batch API
        self.requests = 0  # rows it makes a call for: a decision model's requests


def _stages(scorer: Any) -> list[tuple[str | None, Any, float | None, int]]:
    """The models a dry run counts: (name, model, temperature, stage) per panel member, per
    cascade stage (a panel stage's members each), or the one model (name None, stage 0)."""
    panel = scorer.config.judge.panel
    if isinstance(scorer.model, CascadeModel):
        out: list[tuple[str | None, Any, float | None, int]] = []
        for stage, (name, model) in enumerate(scorer.model.stages):
            if isinstance(model, PanelModel):
                out += [(f"{name}:{label}", member, own.temperature, stage) for (label, member), own in zip(model.members, panel)]
            else:
                out.append((name, model, None, stage))
        return out
    if isinstance(scorer.model, PanelModel):
        return [(name, model, own.temperature, 0) for (name, model), own in zip(scorer.model.members, panel)]
    return [(None, scorer.model, None, 0)]


def _scale(item: MetricEstimate, share: float) -> None:
    """A later cascade stage's figures for ``share`` (0..1) of the rows: its calls, cache hits and tokens."""
    for name in ("cache_hits", "calls", "prompt_tokens", "expected_completion_tokens", "max_completion_tokens"):
        setattr(item, name, round(getattr(item, name) * share))


def _together(items: list[MetricEstimate]) -> MetricEstimate:
    """One metric's figures over every member of a panel: its rows as each member sees them (the
    first's), the calls, tokens, cache hits and cost of all of them (cost unknown when a
    member's price is)."""
    out = MetricEstimate(**{name: getattr(items[0], name) for name in ("rows", "to_judge", "skipped", "over_input_limit", "input_errors")},
                         skipped_by=dict(items[0].skipped_by))
    for name in ("cache_hits", "calls", "prompt_tokens", "expected_completion_tokens", "max_completion_tokens"):
        setattr(out, name, sum(getattr(item, name) for item in items))
    for name in ("cost_low", "cost_high"):
        values = [getattr(item, name) for item in items]
        setattr(out, name, None if any(v is None for v in values) else sum(values))
    return out


def _total(figures: dict[str, MetricEstimate], rows: int) -> MetricEstimate:
    """The figures of every metric added up (``rows``: the input's)."""
    total = MetricEstimate()
    for item in figures.values():
        for name in ("rows", "to_judge", "skipped", "cache_hits", "over_input_limit", "input_errors", "calls", "prompt_tokens", "expected_completion_tokens", "max_completion_tokens"):
            setattr(total, name, getattr(total, name) + getattr(item, name))
    total.rows = rows
    unknown = any(i.cost_low is None for i in figures.values())
    total.cost_low = None if unknown else sum(i.cost_low or 0.0 for i in figures.values())
    total.cost_high = None if unknown else sum(i.cost_high or 0.0 for i in figures.values())
    return total


def _skip(item: MetricEstimate, reason: str) -> None:
    item.skipped += 1
    item.skipped_by[reason] = item.skipped_by.get(reason, 0) + 1


def _expected(call: Call, items: int) -> int:
    base, per = _EXPECTED.get(call.mode, _EXPECTED[None])
    return base + per * max(items, 1 if call.mode in (None, "grounded") else 0)


def _row(scorer: Any, judge: Any, record: Any, item: MetricEstimate, counter: Any, seen: set[str], model: Any,
         temperature: float | None = None, read: list[int] | None = None) -> None:
    """Count one row of one metric for ``model`` (a panel member at its own ``temperature``): a
    verdict without a call, cache hits, and the calls left. ``read``: for a cascade's first stage
    (asked with log-probabilities, as ``Scorer._cascade`` asks it), the counts of its cached
    replies with a P(yes) and of those in the band, added to."""
    call = judge.prepare(record)
    if read is not None and isinstance(call, Call) and call.final and not call.logprobs:
        call = replace(call, logprobs=True)
    if isinstance(call, Verdict):
        if call.status == "skipped":
            _skip(item, call.error or "skipped")
        else:
            item.to_judge += 1  # an answer without a call: an input error, or an empty retrieval's "no"
            item.input_errors += call.status == "error" and call.input_error
        return
    item.to_judge += 1
    samples = scorer.config.judge.samples
    call = tempered(call, temperature, samples)
    while not call.final:
        found = model.peek(call)
        if found is not None and found.status == "ok":
            call = tempered(judge.follow_up(call, found), temperature, samples)
            continue
        if model.too_long(call.messages):
            item.over_input_limit += 1
            return
        key = model.key(call)
        if key not in seen:  # rows sharing a ground truth share this call
            seen.add(key)
            item.calls += 1
            item.prompt_tokens += counter(call.messages)
            item.expected_completion_tokens += _expected(call, 8)
            item.max_completion_tokens += budget(model, call)
        ahead = getattr(judge, "unanswered", None)
        if ahead is not None:  # the judge renders the calls it expects after a reply not known yet (sufficient_k's search)
            for later in ahead(call):
                _final(model, tempered(later, temperature, samples), item, counter, seen, 1, cached=True)
            return
        # the next call cannot be rendered before this one's reply: rendered from the reference's sentences
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", record.expected_response or "") if s.strip()][:8]
        call = judge.follow_up(call, Verdict(metric=judge.name, status="ok", details={"statements": sentences or ["(statement)"]}))
        _final(model, tempered(call, temperature, samples), item, counter, seen, samples, cached=False)
        return
    if read is not None:
        found = model.peek(call)
        verdict = judge.decide(found.copy(), call) if found is not None and found.status == "ok" else None
        if verdict is not None and verdict.probability is not None:
            read[0] += 1
            read[1] += in_band(verdict.probability, scorer.model.band)
    _final(model, call, item, counter, seen, samples, cached=True)


def _final(model: Any, call: Call, item: MetricEstimate, counter: Any, seen: set[str], samples: int, cached: bool) -> None:
    if model.too_long(call.messages):  # an error row before the call
        item.over_input_limit += 1
        return
    for sample in range(samples):
        key = model.key(call, sample)
        if cached and model.peek(call, sample, key) is not None:
            item.cache_hits += 1
            continue
        if key in seen:  # an identical call of another row: made once
            continue
        seen.add(key)
        item.calls += 1
        if hasattr(model, "request_tokens"):  # a decision model: its questions and state are the input; output is free
            item.prompt_tokens += model.request_tokens(call)
            continue
        item.prompt_tokens += counter(call.messages)
        item.expected_completion_tokens += _expected(call, len(call.items))
        item.max_completion_tokens += budget(model, call)


def budget(model: Any, call: Call) -> int:
    """The most output tokens ``call`` may be billed: the ``max_tokens`` its request asks for,
    ``judge.max_tokens`` or the call's own larger budget (``Call.reply_tokens``: a reply that
    writes its input again; docs/judges.md#reply-budget)."""
    return max(model.settings.max_tokens, call.reply_tokens)


def render(report: dict[str, Any]) -> list[str]:
    """The dry run's lines for the terminal."""
    def usd(low: float | None, high: float | None) -> str:
        return "unknown (no price for this model)" if low is None else f"${low:.4f} to ${high:.4f}"

    lines = [f"dry run: {count_of(report['rows'])}, judge {report['judge_model']}; no call made, nothing written"]
    for name, m in report["metrics"].items():
        reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(m["skipped_by"].items(), key=lambda x: -x[1]))
        over = (f"{count_of(m['over_input_limit'])} over the model's input limit (error rows, no call); "
                if m.get("over_input_limit") else "")
        lines.append(f"{name}: {count_of(m['to_judge'])} to judge, {m['skipped']} skipped{f' ({reasons})' if reasons else ''}, "
                     f"{count_of(m['cache_hits'], 'cache hit')}; {over}{count_of(m['calls'], 'call')} to make; prompt tokens {m['prompt_tokens']}; "
                     f"completion tokens about {m['expected_completion_tokens']}, at most {m['max_completion_tokens']}; "
                     f"cost {usd(m['cost_low'], m['cost_high'])}")
    for name, member in (report.get("members") or {}).items():
        m = member["total"]
        kind = "cascade stage" if "cascade_escalated" in report else "panel member"
        lines.append(f"{kind} {name} ({member['model']}): {count_of(m['cache_hits'], 'cache hit')}; {count_of(m['calls'], 'call')} to make; prompt tokens "
                     f"{m['prompt_tokens']}; cost {usd(m['cost_low'], m['cost_high'])}")
    total = report["total"]
    lines.append(f"total: {count_of(total['calls'], 'call')}, {count_of(total['prompt_tokens'], 'prompt token')} ({report['tokens']}), "
                 f"cost {usd(total['cost_low'], total['cost_high'])}")
    both = report.get("cost_by_api")
    if both and "batch" in both and "direct" in both and both["batch"] != both["direct"]:
        this = "batch" if report.get("batch") else "direct"
        lines.append(f"cost by API: direct {usd(both['direct']['low'], both['direct']['high'])}; batch API (--batch) "
                     f"{usd(both['batch']['low'], both['batch']['high'])}; this run: {this}")
    lines += report.get("gate_lines") or []  # what the run would fail on, as it would say it (ragjudge.run's dry run)
    return lines

"""A row's calls: each metric's chain of calls made through the model (``Chains._chain``), a
panel's members each asked and combined by its rule (``_panel``), a cascade's stages asked in turn
(``_cascade``), and the error verdicts of a row that could not be judged."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from ragjudge.model import CANCELLED, Ledger, PanelModel, model_for
from ragjudge.cascade import CascadeModel, decide as cascade_decide, escalation, stage_label
from ragjudge.judges.panel_rule import decide as panel_decide, tempered
from ragjudge.records import EMPTY_ROW, EvalRecord
from ragjudge.settings import Config
from ragjudge.types import OK, Call, Reason, Usage, Verdict
from ragjudge.judges.base import BINARY
from ragjudge.http_errors import redact
from ragjudge.transports import resolve_model
from ragjudge.scoring.trace_order import _trace_held


class Chains:
    """The ``Scorer``'s part that judges one row: its verdicts settled from the cache, its calls
    made (``_row``), through the model, a panel or a cascade."""

    config: Config
    judges: list[Any]
    model: Any
    _tasks: set[asyncio.Future]

    async def _row(self, row: list[Verdict | Call], on_progress: Any, reporter: Any = None, record: Any = None) -> list[Verdict]:
        calls = [(judge, item) for judge, item in zip(self.judges, row) if isinstance(item, Call)]
        self.model.group([item for _, item in calls])  # a decision model asks the row's metrics in one request
        if len(calls) == 1:  # one call: made in this row's own task (an interrupt cancels it here)
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            try:
                results: list[Any] = [await self._run(*calls[0], wait_turn=True)]
            finally:
                self._tasks.discard(task)
        else:
            leaves = [asyncio.ensure_future(self._run(judge, item)) for judge, item in calls]
            self._tasks.update(leaves)
            try:
                results = await asyncio.gather(*leaves, return_exceptions=True)
            finally:
                self._tasks.difference_update(leaves)
        pending = iter(results)
        verdicts: list[Verdict] = []
        for judge, item in zip(self.judges, row):
            if isinstance(item, Call):
                result = next(pending)
                if isinstance(result, asyncio.CancelledError):
                    result = Verdict.failed(judge.name, Reason.INTERRUPTED, mode=item.mode)
                elif isinstance(result, Exception):  # one row's fault stays in its row
                    result = unexpected(judge.name, result, item.mode)
                elif isinstance(result, BaseException):
                    raise result
                item = result
            verdicts.append(item)
        if on_progress:
            on_progress(1, _cost(verdicts))
        if reporter:
            reporter(record, verdicts)
        return verdicts

    @staticmethod
    def _guarded(step: Any, judge: Any, item: Any) -> Verdict | Call:
        """``step(judge, item)``, or the row's error verdict when it raises something unplanned."""
        try:
            return step(judge, item)
        except Exception as exc:  # noqa: BLE001 - one row's fault stays in its row
            return unexpected(judge.name, exc, getattr(item, "mode", None))

    def _prepare(self, judge: Any, record: EvalRecord) -> Verdict | Call:
        """The verdict when the row needs no call at all (skipped, input error, held by its
        trace), else the judge's first call."""
        if record.empty:
            return Verdict.failed(judge.name, EMPTY_ROW, input_error=True)
        held = _trace_held(judge, record)
        if held is not None:
            return held
        return judge.prepare(record)

    def _settle(self, judge: Any, call: Call) -> Verdict | Call:
        """The verdict when every call of ``call``'s chain is remembered or cached, else the call
        to make next."""
        if self.config.judge.panel:  # each member reads its own cache as it is asked (``_panel``)
            return call
        while not call.final:
            found = self.model.peek(call)
            if found is None or found.status != OK:
                return call
            call = judge.follow_up(call, found)
        if self.config.judge.samples == 1:
            found = self.model.peek(call)
            if found is not None:
                return judge.decide(found, call)
        return call

    async def _run(self, judge: Any, call: Call, wait_turn: bool = False) -> Verdict:
        """Make ``call`` (and any follow-up), then decide; samples are decided one by one,
        then combined; with a panel, each member does so and the panel's rule decides
        (``_panel``). ``wait_turn``: first let the tasks made before this one start (a call
        made in its row's own task then goes out when a task of its own would have)."""
        if wait_turn:
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                return Verdict.failed(judge.name, Reason.INTERRUPTED, mode=call.mode)
        if isinstance(self.model, CascadeModel):
            return await self._cascade(judge, call)
        if isinstance(self.model, PanelModel):
            return await self._panel(judge, call)
        return await self._chain(judge, call, self.model)

    async def _cascade(self, judge: Any, call: Call) -> Verdict:
        """``call`` judged by the cascade's stages in turn (``ragjudge.cascade``): each stage by
        ``_chain`` (a panel by ``_panel``), the next asked only while the last one's verdict
        escalates (an error, no probability, or P(yes) in the band). Every stage but the last is
        asked with log-probabilities, so that a chat judge's verdict carries P(yes); the last is
        asked as the judge asks it alone (its cache is a plain run's)."""
        model = self.model
        results: list[tuple[str, str, Verdict]] = []
        for position, (name, stage) in enumerate(model.stages):
            last = position == len(model.stages) - 1
            asked = call if last or not call.final or call.logprobs else replace(call, logprobs=True)
            verdict = await (self._panel(judge, asked, stage) if isinstance(stage, PanelModel) else self._chain(judge, asked, stage))
            results.append((name, stage.provider_model, verdict))
            if verdict.reason is Reason.INTERRUPTED or last or escalation(verdict, model.band) is None:
                break
        return cascade_decide(judge.name, results, model.band, len(results) == len(model.stages))

    async def _panel(self, judge: Any, call: Call, model: Any = None) -> Verdict:
        """Every member's verdict of ``call`` (its own calls, cache and samples: ``_chain``),
        combined by the panel's rule and quorum (``ragjudge.judges.panel_rule.decide``). ``model``:
        the ``PanelModel`` (default: the run's; a cascade's panel stage)."""
        model = model or self.model
        settings = self.config.judge
        if model.fatal is not None:  # fewer members than the quorum can answer: no member is asked
            return Verdict.failed(judge.name, f"not run: {model.fatal}", mode=call.mode)
        tasks = [asyncio.ensure_future(self._chain(judge, call, member, own.temperature))
                 for (_, member), own in zip(model.members, settings.panel)]
        try:
            verdicts = list(await asyncio.gather(*tasks))
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            return _interrupted(judge.name, call.mode, _usage_of(tasks))
        return panel_decide(judge.name, verdicts, model.names, [m.provider_model for _, m in model.members], settings.panel_rule,
                            settings.quorum, judge.threshold, judge.kind == BINARY)

    async def _chain(self, judge: Any, call: Call, model: Any, temperature: float | None = None) -> Verdict:
        """``call`` and its follow-ups made through ``model``, then decided (samples: each
        decided, then combined). ``temperature``: a panel member's own, in place of
        ``judge.temperature`` (raised to 0.7 for samples as ``Judge.temperature`` does)."""
        spent = Usage()
        paid = False
        samples = self.config.judge.samples
        drawing: list[asyncio.Future] = []
        lost: list[Usage] = []  # what this chain's calls cancelled in flight had cost (``model.CANCELLED``)
        unset = CANCELLED.set(lost)
        try:
            call = tempered(call, temperature, samples)
            while not call.final:
                first = await model.call(call, judge.parse)
                spent = spent + first.usage
                paid |= first.cached is False and first.usage.calls > 0
                if first.status != OK:
                    first.usage = spent
                    return first
                call = tempered(judge.follow_up(call, first), temperature, samples)
            if samples == 1:
                verdict = judge.decide(await model.call(call, judge.parse), call)
            else:
                drawing = [asyncio.ensure_future(model.call(call, judge.parse, sample)) for sample in range(samples)]
                drawn = await asyncio.gather(*drawing)
                verdict = judge.combine([judge.decide(v, call) for v in drawn])
        except asyncio.CancelledError:  # interrupted: what the calls made so far were paid is counted all the same
            for task in drawing:
                task.cancel()
            return _interrupted(judge.name, call.mode, sum(lost, spent + _usage_of(drawing)))
        except Exception as exc:  # noqa: BLE001 - a transport, parser or judge that raises something unplanned: this row's error
            return unexpected(judge.name, exc, call.mode, spent)
        finally:
            CANCELLED.reset(unset)
        verdict.usage = spent + verdict.usage
        if paid:
            verdict.cached = False
        return verdict


def _usage_of(tasks: list[asyncio.Future]) -> Usage:
    """The usage of the verdicts that ``tasks`` (calls, or a panel's members) brought back."""
    total = Usage()
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is None:
            total = total + task.result().usage
    return total


def _interrupted(metric: str, mode: str | None, spent: Usage) -> Verdict:
    """The verdict "interrupted" of a row whose calls were cancelled, carrying what its replies
    already received cost (``spent``: counted in calls, tokens and cost; ``M_cached`` false)."""
    verdict = Verdict.failed(metric, Reason.INTERRUPTED, mode=mode, usage=spent)
    if spent.calls:
        verdict.cached = False
    return verdict


def _cascade_model(settings: Any, cache: Any, transport: Any) -> CascadeModel:
    """The cascade of ``settings.cascade``: one ``Model`` per stage (a ``PanelModel`` for
    ``panel``), each with its own cache keys, all sharing one budget (``judge.max_cost``).
    ``transport``: as ``Model``'s, through its ``for_model`` (the fake's gives each stage its own)."""
    ledger = Ledger()
    stages: list[tuple[str, Any]] = []
    for stage in settings.cascade:
        own = settings.stage(stage)
        if stage == "panel":
            panel = PanelModel(own, cache, transport)
            panel.ledger = ledger  # every member's budget is the cascade's
            for _, member in panel.members:
                member.ledger = ledger
            stages.append((stage_label(stage), panel))
            continue
        given = transport.for_model(resolve_model(own)) if transport is not None else None
        stages.append((stage_label(stage), model_for(own, cache, given, ledger)))
    return CascadeModel(stages, settings.cascade_band, ledger)


def unexpected(metric: str, exc: Exception, mode: str | None = None, usage: Usage | None = None) -> Verdict:
    """The error verdict of a row whose judging raised something no step planned for (a bug, a
    transport or parser that raises an unknown exception): the exception's type and first line,
    keys redacted. The run goes on; ``RAGJUDGE_DEBUG=1`` raises it instead, with its traceback."""
    import os

    if os.environ.get("RAGJUDGE_DEBUG"):
        raise exc

    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return Verdict.failed(metric, f"unexpected {type(exc).__name__}" + (f": {redact(text)}" if text else ""), mode=mode, usage=usage)


def _cost(verdicts: list[Any]) -> float | None:
    """USD spent on one row's verdicts (None when a priced call's price is unknown)."""
    return Usage.total([v.usage for v in verdicts if isinstance(v, Verdict)]).cost_usd

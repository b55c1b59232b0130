"""``DecisionModel``: the chokepoint for a decision model (a row's metrics asked in one request,
``ragjudge.transports.decision_models``), and ``model_for``, which picks it or ``Model``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ragjudge.cache import cache_key
from ragjudge.model.chokepoint import Model
from ragjudge.model.retry import Ledger, _Failed
from ragjudge.transports import base, decision_model
from ragjudge.types import Call, ParseError, Reply, Usage, Verdict


class _Group:
    """The calls of one row that a decision model asks in one request (``DecisionModel.group``):
    the first member to be sent sends every member's questions about the union of their
    states; the others take their answers from that reply."""

    def __init__(self, members: list[Call]) -> None:
        self.members = members
        self.task: asyncio.Future | None = None
        self.paid = False  # the request's count (calls, retries) goes to the first member that takes the reply

    def union(self) -> Call:
        """One ``Call`` asking every member's questions about every field any member reads; a
        question two members ask (sufficient_k's whole-context probe is sufficiency's) once."""
        first = self.members[0]
        state: dict[str, Any] = {}
        for member in self.members:
            state.update(member.state)
        questions = list({q.id: q for m in self.members for q in m.questions}.values())
        return Call(first.metric, first.version, first.mode, first.messages, None, questions=questions, state=state)

    def share(self, reply: Reply, call: Call) -> Reply:
        """``call``'s part of the row's ``reply``: its own answers, and its share of the input
        tokens and cost by its share of the questions (the request, calls and retries, counted once)."""
        asked = sum(len(m.questions) for m in self.members)
        mine = len(call.questions) / asked if asked else 0.0
        usage = reply.usage
        share = Usage(round(usage.prompt_tokens * mine), 0, None if usage.cost_usd is None else usage.cost_usd * mine,
                      0 if self.paid else usage.calls, 0 if self.paid else usage.retries, usage.estimated)
        self.paid = True
        answers = reply.answers or {}
        return Reply(None, reply.finish_reason, usage=share, answers={q.id: answers[q.id] for q in call.questions if q.id in answers})


class DecisionModel(Model):
    """The chokepoint for a decision model (``--model openai-decisions/...``, ``systemone/...``;
    ``ragjudge.transports.decision_models``): a ``Call``'s ``questions`` about its ``state`` are
    sent, never its chat messages; ``call(call, parse)`` gives the metric's ``Verdict`` as
    ``Model.call`` does (cache, limits, retries after the servers' delays, the budget), so
    panels and the scorer's chains use it unchanged.

    Every metric of a row goes in one request (``group``, called by the scorer for each row),
    split only past the protocol's limits: OpenAI's 200 questions, and a System One request over
    the model's token limit (``max_tokens_exceeded``: each metric is then asked alone); each metric's verdict is
    cached under its own key (``key``: the model, its API base, the metric, its prompt version,
    its own questions and the fields it reads), so a metric added later pays for its own
    questions only. A request's input tokens and cost are shared among its metrics by their
    number of questions; its call is counted once."""

    LIMITS = {"openai-decisions": 200}  # questions a request takes (System One has no count limit: its token budget)

    def key(self, call: Call, sample: int = 0) -> str:
        """The cache key of ``call``: model, API base, metric, prompt version, the metric's own
        questions and the row fields it reads (``call.state``). Not the chat messages."""
        memo = call.memo.get((id(self), sample))
        if memo is not None:
            return memo
        from dataclasses import asdict

        key = call.memo[(id(self), sample)] = cache_key(
            model=self.provider_model, api_base=self.api_base, metric=call.metric, prompt_version=call.version, sample=sample,
            questions=[asdict(q) for q in call.questions], state=call.state)
        return key

    def request_tokens(self, call: Call) -> int:
        """The input tokens of ``call``'s request as the dry run and ``--max-cost`` count them: its
        questions and state as JSON text, 4 characters a token (the providers publish no tokenizer)."""
        import json
        from dataclasses import asdict

        text = json.dumps({"state": call.state, "questions": [asdict(q) for q in call.questions]}, ensure_ascii=False)
        return max(1, len(text) // 4)

    def too_long(self, messages: list[dict[str, Any]]) -> str | None:
        """None: the chat messages are not sent (the provider refuses a state past its limit)."""
        return None

    def group(self, calls: list[Call]) -> None:
        """Ask ``calls`` (one row's, each a metric's) in one request: the first sent sends them all;
        a new request only where the next metric's questions would pass the protocol's limit."""
        asked = [call for call in calls if call.questions]
        if len(asked) < 2:
            return
        limit = self.LIMITS.get(self.provider_model.partition("/")[0])
        groups: list[list[Call]] = [[]]
        count = 0
        for call in asked:
            if groups[-1] and limit is not None and count + len(call.questions) > limit:
                groups.append([])
                count = 0
            groups[-1].append(call)
            count += len(call.questions)
        for members in groups:
            if len(members) > 1:
                found = _Group(members)
                for call in members:
                    call.memo[(id(self), "group")] = found

    async def _send(self, call: Call, messages: list[dict[str, Any]], probe: bool, key: str | None = None, ask: int = 0) -> Reply:
        found: _Group | None = call.memo.get((id(self), "group"))
        if found is None:
            return await super()._send(call, messages, probe, key, ask)
        if found.task is None:
            found.task = asyncio.ensure_future(super()._send(found.union(), messages, probe, None, ask))
        try:
            reply = await asyncio.shield(found.task)
        except _Failed as failure:
            usage = Usage() if found.paid else failure.usage
            found.paid = True
            if failure.kind == base.TOKENS_EXCEEDED:  # the row's request is over the model's token limit: this metric asked alone
                reply = await super()._send(call, messages, probe, key, ask)
                reply.usage = reply.usage + usage
                return reply
            raise _Failed(failure.reason or str(failure), usage, failure.fatal, failure.kind) from None
        return found.share(reply, call)

    async def _ask(self, call: Call, parse: Callable[[Reply, Call], Verdict], probe: bool, key: str | None = None) -> tuple[Verdict, bool]:
        """The request (``_send``: the row's, where grouped), then ``parse`` of the metric's answers;
        no re-ask (a malformed reply is a server error, retried by ``_send``)."""
        try:
            reply = await self._send(call, [], probe, key, 0)
        except _Failed as failure:
            if failure.fatal is not None and self.fatal is None:
                self.fatal = failure.fatal
            return Verdict.failed(call.metric, failure.reason or str(failure), mode=call.mode, usage=failure.usage), False
        reply.usage = self._priced(reply.usage)
        self.spent += reply.usage.cost_usd or 0.0
        try:
            verdict = parse(reply, call)
        except ParseError as exc:
            return Verdict.failed(call.metric, f"unreadable decision reply: {exc}", mode=call.mode, usage=reply.usage), True
        verdict.usage = reply.usage
        return verdict, True


def model_for(settings: Any, cache: Any = None, transport: Any = None, ledger: Ledger | None = None) -> Model:
    """The chokepoint for ``settings.model``: a ``DecisionModel`` for a decision model, else a ``Model``."""
    if decision_model(settings.model):
        return DecisionModel(settings, cache, transport, ledger)
    return Model(settings, cache, transport, ledger)

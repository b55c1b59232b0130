"""The fake judge in-process, as a transport: the unit tier's model (inspect_ai's ``mockllm``
pattern: scripted replies, no sockets).

``FakeTransport`` answers each ``Request`` as ``ragjudge.fakeserver.FakeJudgeServer`` answers
the same request over HTTP, and as ``OpenAIHTTPTransport`` then reads it: the queued
``replies`` first, else the server's own word-overlap rule (``fake_rule.heuristic_reply``,
imported, not copied); token counts as the server reports them (characters / 4); the cost
from the price table as the HTTP path prices it. So a test through it asserts the values a
loopback test asserts::

    judge = FakeTransport()
    judge.replies.append('{"verdict": "yes", "rationale": "r", "needed": "n", "quote": "q"}')
    with Scorer(config, transport=judge) as scorer:
        scorer.score(frame)
    judge.calls, judge.requests[-1]["temperature"]

Only judging, gate, records and summary values belong on it; how a provider behaves (HTTP
statuses, headers, bodies that are not JSON, litellm) stays with the loopback server.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

from ragjudge.transports import base
from ragjudge.transports.base import AUTH, TIMEOUT, TransportError, chat_body
from ragjudge.transports.fake_rule import fake_logprobs, fault_of, heuristic_reply
from ragjudge.types import Reply, Usage
from ragjudge import prices


class FakeTransport(base.Transport):
    """A scripted judge transport (``Scorer(config, transport=FakeTransport())``).

    Knobs, named as ``FakeJudgeServer``'s: ``replies`` (a queue of raw reply texts served
    first), ``errors`` (a queue of ``TransportError`` raised before anything else), ``p_yes``
    / ``p_true`` / ``p_scores`` (the log-probabilities ``fake_rule.fake_logprobs`` gives when
    a request asks for them), ``truncate`` (every reply ends at max_tokens: finish_reason
    'length'), ``usage`` (False: replies carry no token counts, as some servers send),
    ``latency`` (seconds per call), ``price_per_token`` (USD per token, prompt and completion
    alike; None: the price table's price of ``provider_model``, as the HTTP path prices it),
    ``model_faults`` (per model name: (calls answered first, then faults in turn, the last
    repeated: ``"401"`` an authentication error, ``"timeout"`` no answer in time), as
    ``FakeJudgeServer.model_faults``). Its verdicts lean as the model's name says
    (``fake_rule.leaning``: ``lenient``, ``strict``).

    A panel (``judge.panel``) gives each member its own transport: ``for_model`` makes it, with
    these knobs (its own queues), kept in ``members`` by provider model.

    Records: ``calls`` (every request), ``requests`` (each request's OpenAI JSON body, as
    ``OpenAIHTTPTransport.body`` sends it and ``FakeJudgeServer.requests`` keeps it:
    ``messages``, ``temperature``, ``max_tokens``, ``response_format``, ``seed``,
    ``logprobs``), ``sent`` (the ``Request`` objects themselves).
    """

    free = False

    def __init__(self, provider_model: str = "openai/fake-judge", latency: float = 0.0) -> None:
        self.provider_model = provider_model
        self.where = "the in-process fake judge"
        self.latency = latency
        self.replies: deque[str] = deque()
        self.errors: deque[Any] = deque()
        self.requests: list[dict[str, Any]] = []
        self.sent: list[Any] = []
        self.keep_requests = True  # FakeJudgeServer's switch; kept always here
        self.calls = 0
        self.p_yes = 0.8
        self.p_true = 0.9
        self.p_scores: dict[int, float] | None = None
        self.truncate = False
        self.usage = True
        self.price_per_token: float | None = None
        self.model_faults: dict[str, tuple[int, list[str]]] = {}
        self.members: dict[str, FakeTransport] = {}
        self._answered = 0

    def for_model(self, provider_model: str) -> "FakeTransport":
        """The transport of the panel member ``provider_model``: a fake with this one's knobs
        (``latency``, ``p_yes``, ``p_true``, ``p_scores``, ``truncate``, ``usage``,
        ``price_per_token``, ``model_faults``: shared; queues of its own), kept in ``members``."""
        member = FakeTransport(provider_model, self.latency)
        for knob in ("p_yes", "p_true", "p_scores", "truncate", "usage", "price_per_token", "model_faults"):
            setattr(member, knob, getattr(self, knob))
        self.members[provider_model] = member
        return member

    def body(self, request: Any) -> dict[str, Any]:
        """The JSON body ``request`` would be sent as (``OpenAIHTTPTransport.body``'s shape)."""
        return chat_body(self.provider_model.partition("/")[2] or self.provider_model, request)

    async def complete(self, request: Any) -> Reply:

        self.calls += 1
        self.sent.append(request)
        self.requests.append(self.body(request))
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.errors:
            raise self.errors.popleft()
        fault = fault_of(self.model_faults, self.provider_model, self._answered)
        self._answered += 1
        if fault == "401":
            raise TransportError(AUTH, "Incorrect API key provided: sk-te****1234.", status=401)
        if fault == "timeout":
            raise TransportError(TIMEOUT, f"no answer within {request.timeout:g} s")
        schema = (request.response_format or {}).get("json_schema") or {}
        content = self.replies.popleft() if self.replies else json.dumps(
            heuristic_reply(request.messages, schema.get("name"), schema.get("schema"), self.provider_model))
        cut = len(content) // 4 > request.max_tokens  # a reply longer than max_tokens is cut there, as a provider cuts it
        content = content[:request.max_tokens * 4] if cut else content
        prompt = sum(len(str(m.get("content", ""))) for m in request.messages) // 4 if self.usage else 0
        completion = len(content) // 4 if self.usage else 0
        return Reply(text=content, finish_reason="length" if self.truncate or cut else "stop",
                     logprobs=fake_logprobs(content, self.p_yes, self.p_true, self.p_scores) if request.logprobs else None,
                     usage=Usage(prompt, completion, self._cost(prompt, completion), 1, estimated=prompt <= 0))

    def _cost(self, prompt: int, completion: int) -> float | None:
        if self.price_per_token is not None:
            return (prompt + completion) * self.price_per_token

        provider, _, name = self.provider_model.partition("/")
        return prices.cost(provider, [name], prompt, completion, 0)

    async def aclose(self) -> None:
        return None

"""Decision models over aiohttp: typed questions in (``ragjudge.types.Question``), answers with
probabilities out (``DecisionReply``), mapped by hand as ``openai_http`` maps chat completions.

``--model openai-decisions/MODEL`` and ``--model systemone/MODEL`` reach them through
``DecisionTransport`` (the ``Transport`` the model chokepoint calls: a ``Request``'s ``questions``
and ``state`` in, a ``Reply`` with ``answers`` out, priced at ``ragjudge.prices.DECISION_PRICES``);
``ragjudge.model.DecisionModel`` asks every metric of a row in one request.

Two protocols, as published (/work/shared/protocols/decision-models.md, sections 1-3 and the
example pairs of section 10):

- OpenAI Decisions (``OpenAIDecisions``, ``openai-decisions/gpt-6-luna``): ``POST
  {api_base}/decisions`` with ``model``, ``input`` (a string; a list of user messages as it is;
  any other structure as JSON text, as the SDK ports send it), ``questions`` (a list, each with
  its ``name``) and ``safety_identifier``; answers come back in question order, a ``refusal``
  answer inside a 200 for a question the host declines; usage with five counters. Base
  ``https://api.openai.com/v1``, key ``OPENAI_API_KEY``. Errors in OpenAI's ``{"error": ...}``
  envelope, mapped as the chat transport maps them (429 waits ``retry-after-ms`` /
  ``retry-after``).
- System One (``SystemOne``): TypeSafe's Jev (``systemone/jev-latest``, base
  ``https://api.typesafe.ai/v1``, key ``TYPESAFE_API_KEY``) and Upstage's Solar Decide
  (``systemone/solar-decide``, base ``https://api.upstage.ai/v1``, key ``UPSTAGE_API_KEY``):
  ``POST {api_base}/systemone`` with ``state``, ``model`` and ``questions`` keyed by id (``noul``
  with ``criteria: {"true", "false"}``, ``choice`` with ``criteria: {option: description}``,
  ``score`` with ``criteria: [level, ...]`` lowest first); answers keyed by id. Errors: 401
  ``AUTH``, 403 ``PERMISSION``, 400 ``detail: {error_type, message}`` (``Unknown model``:
  ``NOT_FOUND``, fatal; ``max_tokens_exceeded`` / ``tokens_exceeded``: ``TOKENS_EXCEEDED`` naming
  the token limit), 422 ``detail: [{loc, msg}]`` (``BAD_REQUEST`` naming the field), 429 and 529
  (overloaded) ``RATE_LIMIT`` / ``SERVER``, retried after ``retry-after``.

A body that is not the protocol's reply, answers that do not match the questions (their
number, names, ids or kinds; a score's levels), a probability that is not a JSON number (a bool,
a string) or lies outside 0..1, a distribution not summing to 1 (within 0.01), a score outside
0..N-1 for N levels or not its distribution's expected level sum(level * p) (within 0.01), is a
``SERVER`` error (retried), never a verdict; so is an answer type neither protocol publishes.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import replace
from typing import Any

from ragjudge import prices
from ragjudge.http_errors import parse_retry_after, redact
from ragjudge.transports import base
from ragjudge.transports.base import OPENAI_BASE, TransportError
from ragjudge.transports.openai_http import _one_line, _snippet, _status_error, dumps, loads, loop_session, release_session, status_error
from ragjudge.types import CHOICE, PREDICATE, REFUSAL, SCORE, Answer, DecisionReply, Question, Reply, Usage, decision_model  # noqa: F401 - re-exported

TYPESAFE_BASE = "https://api.typesafe.ai/v1"
UPSTAGE_BASE = "https://api.upstage.ai/v1"
OPENAI_LIMITS = {"questions": 200, "options": 255, "levels": 10}  # section 1.2 (the pinned OpenAPI)
SYSTEMONE_LIMITS = {"options": 255, "levels": 10}  # section 2.2; Solar Decide takes 26 options (section 3)
SOLAR_OPTIONS = 26


def check(questions: list[Question], limits: dict[str, int]) -> None:
    """Raise ``TransportError`` (``BAD_REQUEST``) for questions the protocol refuses: none, more
    than ``limits["questions"]`` (where it has one), duplicate ids, an unknown kind, a choice
    outside 2..``limits["options"]`` options, a score outside 2..``limits["levels"]`` levels."""
    if not questions:
        raise TransportError(base.BAD_REQUEST, "a decision request needs at least one question")
    if "questions" in limits and len(questions) > limits["questions"]:
        raise TransportError(base.BAD_REQUEST, f"{len(questions)} questions in one request; the protocol takes at most {limits['questions']}")
    if len({q.id for q in questions}) != len(questions):
        raise TransportError(base.BAD_REQUEST, "two questions share an id")
    for q in questions:
        if q.kind not in (PREDICATE, CHOICE, SCORE):
            raise TransportError(base.BAD_REQUEST, f"question {q.id!r}: unknown kind {q.kind!r}")
        if q.kind == CHOICE and not 2 <= len(q.options) <= limits["options"]:
            raise TransportError(base.BAD_REQUEST, f"question {q.id!r}: {len(q.options)} options; the protocol takes 2..{limits['options']}")
        if q.kind == SCORE and not 2 <= len(q.levels) <= limits["levels"]:
            raise TransportError(base.BAD_REQUEST, f"question {q.id!r}: {len(q.levels)} levels; the protocol takes 2..{limits['levels']}")


class _DecisionHTTP:
    """The aiohttp part both protocols share: one session per event loop (``openai_http``'s),
    the key read once from the environment, statuses and dropped connections mapped to
    ``TransportError`` kinds. Subclasses set ``path``, ``key_env`` and the body and reply."""

    free = False
    path = ""
    default_base = ""
    request_id_header = "x-request-id"

    def __init__(self, model: str, api_base: str | None = None, api_key_env: str | None = None) -> None:
        self.name = model
        self.api_base = api_base
        self.where = (api_base or self.default_base).rstrip("/")
        self.url = self.where + self.path
        self.key_env = api_key_env or self.default_key_env()
        self.explicit_key_env = api_key_env is not None
        self._session: Any = None
        self._headers: dict[str, str] | None = None

    def default_key_env(self) -> str:
        return "OPENAI_API_KEY"

    def prepare(self) -> None:
        """Import aiohttp now, in the calling thread (as ``OpenAIHTTPTransport.prepare``)."""
        import aiohttp  # noqa: F401

    def _read_headers(self) -> dict[str, str]:
        if self._headers is None:
            key = os.environ.get(self.key_env)
            if not key and self.api_base and not self.explicit_key_env:
                key = "no-key-needed"  # a local server at a custom api_base needs none (as the chat transport does)
            if not key:
                raise TransportError(base.NO_KEY, f"no API key in {self.key_env}")
            self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        return self._headers

    async def _client(self) -> Any:
        if self._session is None:
            self._session = loop_session()
        return self._session

    async def _post(self, body: dict[str, Any], timeout: float) -> tuple[Any, Any]:
        """POST ``body``; the parsed JSON and the response headers of a 200, else raise."""
        import aiohttp

        session = await self._client()
        headers = self._read_headers()
        try:
            async with session.post(self.url, data=dumps(body), headers=headers,
                                    timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                raw, status, response_headers = await response.read(), response.status, response.headers
        except asyncio.TimeoutError:
            raise TransportError(base.TIMEOUT, f"no reply within {timeout:g} s from {self.where}") from None
        except aiohttp.ClientConnectorError as exc:
            raise TransportError(base.CONNECT, _one_line(exc.os_error) if getattr(exc, "os_error", None) else _one_line(exc)) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise TransportError(base.DISCONNECTED, _one_line(exc) or type(exc).__name__) from None
        if status != 200:
            raise self._status_error(status, raw, response_headers)
        try:
            return loads(raw), response_headers
        except ValueError:
            raise TransportError(base.SERVER, f"HTTP 200 with a body that is not JSON: {_snippet(raw)}") from None

    def _status_error(self, status: int, raw: bytes, headers: Any) -> TransportError:
        return _status_error(status, raw, headers)

    async def decide(self, state: Any, questions: list[Question], timeout: float = 120.0,
                     safety_identifier: str | None = None) -> DecisionReply:
        """Ask ``questions`` about ``state`` (text, or a JSON-able object or list) in one
        request; the answers keyed by question id, or ``TransportError``."""
        body = self.body(state, questions, safety_identifier)
        data, headers = await self._post(body, timeout)
        try:
            reply = self.reply(data, questions)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise TransportError(base.SERVER, f"HTTP 200 with a body that is not a decision reply ({exc}): "
                                              f"{_snippet(dumps(data) if isinstance(data, (dict, list)) else str(data).encode())}") from None
        cost = prices.cost(self.provider_model.partition("/")[0], [reply.model, self.name], reply.input_tokens, 0, reply.cached_tokens)
        return replace(reply, request_id=headers.get(self.request_id_header), cost_usd=cost)

    def body(self, state: Any, questions: list[Question], safety_identifier: str | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def reply(self, data: Any, questions: list[Question]) -> DecisionReply:
        raise NotImplementedError

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await release_session(session)


def _number(value: Any, what: str) -> float:
    """``value`` as a float when the reply gave a JSON number (an int or a float, not a bool nor a
    string); raises ``ValueError`` (a malformed reply) otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} {json.dumps(value)} is not a number")
    return float(value)


def _probability(value: Any) -> float:
    p = _number(value, "probability")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability {p} outside 0..1")
    return p


SUM_TOLERANCE = 0.01  # promptfoo's check of a distribution's sum (section 1.3); MLflow's is 1e-3
# |score - sum(level * p)| / (N - 1) for N levels, as promptfoo checks it ([pf-src]): a distribution may sum to 1 within
# SUM_TOLERANCE, which moves its expected level by up to that share of the scale; section 10's pairs agree within 1e-5
SCORE_TOLERANCE = 0.01


def _score(value: Any, pairs: tuple[tuple[Any, float], ...], question: Question) -> float:
    """A score answer's ``score`` checked against its (checked) distribution ``pairs``: a number in
    0..N-1 for the question's N levels and the distribution's expected level, sum(level * p),
    within ``SCORE_TOLERANCE`` of the scale (N - 1 levels) (the score is the expected zero-based level: sections 1.3 and
    2.3, [pf-src], [ts-spec]); raises ``ValueError`` (a malformed reply) otherwise."""
    score = _number(value, "score")
    top = len(question.levels) - 1
    if not 0.0 <= score <= top:
        raise ValueError(f"score {score:g} of {question.id!r} outside 0..{top}")
    expected = sum(level * p for level, p in pairs)
    if abs(score - expected) > SCORE_TOLERANCE * max(top, 1):
        raise ValueError(f"score {score:g} of {question.id!r} is not its distribution's expected level {expected:.4g}")
    return score


def _distribution(pairs: tuple[tuple[Any, float], ...], question: Question) -> tuple[tuple[Any, float], ...]:
    """``pairs`` checked: a score's levels exactly 0..N-1 for its N levels, the probabilities
    summing to 1 within ``SUM_TOLERANCE``; raises ``ValueError`` (a malformed reply) otherwise."""
    if question.kind == SCORE and [level for level, _ in pairs] != list(range(len(question.levels))):
        raise ValueError(f"score levels {[level for level, _ in pairs]} for {len(question.levels)} levels")
    total = sum(p for _, p in pairs)
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"the probabilities of {question.id!r} sum to {total:g}, not 1")
    return pairs


class OpenAIDecisions(_DecisionHTTP):
    """OpenAI's Decisions API (section 1). ``model``: e.g. ``gpt-6-luna``; ``api_base``: else
    ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE``, else OpenAI's; ``api_key_env``: else ``OPENAI_API_KEY``."""

    path = "/decisions"
    default_base = OPENAI_BASE

    def __init__(self, model: str, api_base: str | None = None, api_key_env: str | None = None) -> None:
        super().__init__(model, api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE"), api_key_env)
        self.provider_model = "openai-decisions/" + model

    def body(self, state: Any, questions: list[Question], safety_identifier: str | None = None) -> dict[str, Any]:
        """The request body (section 1.2): ``input`` is ``state`` when it is text or a list of user
        messages, else its JSON text; one question object per question, ``name`` its id."""
        check(questions, OPENAI_LIMITS)
        messages = isinstance(state, list) and state and all(isinstance(m, dict) and m.get("role") == "user" for m in state)
        out: dict[str, Any] = {"model": self.name, "input": state if isinstance(state, str) or messages else json.dumps(state),
                               "questions": [_openai_question(q) for q in questions]}
        if safety_identifier is not None:
            out["safety_identifier"] = safety_identifier
        return out

    def reply(self, data: Any, questions: list[Question]) -> DecisionReply:
        """The reply (section 1.3): answers in question order, each ``name`` (when not null) its
        question's id; a ``refusal`` answer as ``Answer(kind=REFUSAL)``."""
        answers = data["answers"]
        if len(answers) != len(questions):
            raise ValueError(f"{len(answers)} answers to {len(questions)} questions")
        out: dict[str, Answer] = {}
        for question, answer in zip(questions, answers):
            if answer.get("name") is not None and answer["name"] != question.id:
                raise ValueError(f"answer {answer['name']!r} where {question.id!r} was asked")
            kind = answer["type"]
            if kind == REFUSAL:
                out[question.id] = Answer(question.id, REFUSAL)
            elif kind != question.kind:
                raise ValueError(f"a {kind} answer to the {question.kind} question {question.id!r}")
            elif kind == PREDICATE:
                out[question.id] = Answer(question.id, PREDICATE, probability=_probability(answer["probability"]))
            elif kind == CHOICE:
                pairs = tuple((p["value"], _probability(p["probability"])) for p in answer["probabilities"])
                out[question.id] = Answer(question.id, CHOICE, choice=answer["choice"], confidence=answer.get("confidence"),
                                          probabilities=_distribution(pairs, question))
            else:
                pairs = tuple(sorted((int(p["value"]), _probability(p["probability"])) for p in answer["probabilities"]))
                pairs = _distribution(pairs, question)
                out[question.id] = Answer(question.id, SCORE, score=_score(answer["score"], pairs, question), confidence=answer.get("confidence"),
                                          probabilities=pairs)
        usage = data["usage"]
        return DecisionReply(out, str(data.get("model") or self.name), int(usage["input_tokens"]),
                             int((usage.get("input_tokens_details") or {}).get("cached_tokens") or 0), int(usage.get("output_tokens") or 0))


def _openai_question(q: Question) -> dict[str, Any]:
    instructions = q.instructions
    if q.kind == PREDICATE and (q.yes_means or q.no_means):
        instructions += "".join(f"\n{word} means: {text}" for word, text in (("Yes", q.yes_means), ("No", q.no_means)) if text)
    out: dict[str, Any] = {"type": q.kind, "name": q.id, "instructions": instructions}
    if q.kind == CHOICE:
        out["choices"] = [{"value": value, **({"description": text} if text else {})} for value, text in q.options]
    elif q.kind == SCORE:
        out["levels"] = [{"label": label, **({"description": text} if text else {})} for label, text in q.levels]
    return out


SYSTEMONE_KEYS = (("solar-", "UPSTAGE_API_KEY", UPSTAGE_BASE), ("", "TYPESAFE_API_KEY", TYPESAFE_BASE))


class SystemOne(_DecisionHTTP):
    """The System One API (sections 2, 3): TypeSafe's Jev (``jev-latest``, ``jev-1.13.0``...) and
    Upstage's Solar Decide (``solar-decide``, ``solar-decide-flash``: Upstage's base and key).
    ``api_base`` / ``api_key_env`` override the model's own."""

    path = "/systemone"
    request_id_header = "x-typesafe-request-id"

    def __init__(self, model: str, api_base: str | None = None, api_key_env: str | None = None) -> None:
        self.default_base = next(url for prefix, _, url in SYSTEMONE_KEYS if model.startswith(prefix))
        super().__init__(model, api_base, api_key_env)
        self.provider_model = "systemone/" + model

    def default_key_env(self) -> str:
        return next(env for prefix, env, _ in SYSTEMONE_KEYS if self.name.startswith(prefix))

    def body(self, state: Any, questions: list[Question], safety_identifier: str | None = None) -> dict[str, Any]:
        """The request body (section 2.2): ``state`` as it is (text, object or list), ``model``,
        and ``questions`` keyed by id; ``safety_identifier`` has no System One field (unused)."""
        limits = {**SYSTEMONE_LIMITS, "options": SOLAR_OPTIONS} if self.name.startswith("solar-") else SYSTEMONE_LIMITS
        check(questions, limits)
        return {"state": state, "model": self.name, "questions": {q.id: _systemone_question(q) for q in questions}}

    def reply(self, data: Any, questions: list[Question]) -> DecisionReply:
        """The reply (section 2.3): answers keyed by question id (every question answered);
        a score's ``probabilities`` keyed "0".."N-1"."""
        answers = data["answers"]
        out: dict[str, Answer] = {}
        for q in questions:
            answer = answers[q.id]
            kind = {"noul": PREDICATE}.get(answer["type"], answer["type"])
            if kind != q.kind:
                raise ValueError(f"a {answer['type']} answer to the {q.kind} question {q.id!r}")
            if kind == PREDICATE:
                out[q.id] = Answer(q.id, PREDICATE, probability=_probability(answer["noul"]))
            elif kind == CHOICE:
                pairs = tuple((value, _probability(p)) for value, p in answer["probabilities"].items())
                out[q.id] = Answer(q.id, CHOICE, choice=answer["choice"], confidence=answer.get("confidence"),
                                   probabilities=_distribution(pairs, q))
            else:
                pairs = tuple(sorted((int(level), _probability(p)) for level, p in answer["probabilities"].items()))
                pairs = _distribution(pairs, q)
                out[q.id] = Answer(q.id, SCORE, score=_score(answer["score"], pairs, q), confidence=answer.get("confidence"),
                                   probabilities=pairs)
        usage = data["usage"]
        return DecisionReply(out, str(data.get("model") or self.name), int(usage["input_tokens"]), 0, int(usage.get("output_tokens") or 0))

    def _status_error(self, status: int, raw: bytes, headers: Any) -> TransportError:
        return systemone_error(status, raw, headers)


def _systemone_question(q: Question) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "noul" if q.kind == PREDICATE else q.kind, "instructions": q.instructions}
    if q.kind == PREDICATE and (q.yes_means or q.no_means):  # Solar Decide refuses an explicit null: omit what is not given
        out["criteria"] = {word: text for word, text in (("true", q.yes_means), ("false", q.no_means)) if text}
    elif q.kind == CHOICE:
        out["criteria"] = {json.dumps(value) if isinstance(value, bool) else str(value): text for value, text in q.options}  # labels are text
    elif q.kind == SCORE:
        out["criteria"] = [f"{label}: {text}" if text else label for label, text in q.levels]
    return out


def systemone_error(status: int, raw: bytes, headers: Any) -> TransportError:
    """A System One error status -> ``TransportError`` (section 2.4): ``detail`` read as a map
    (``{error_type, message}``), a list (``[{loc, msg}]``) or a string."""
    try:
        detail = json.loads(raw).get("detail")
    except (ValueError, AttributeError):
        detail = raw[:200].decode("utf-8", "replace")
    error_type = ""
    if isinstance(detail, dict):
        error_type = str(detail.get("error_type") or "")
        message = str(detail.get("message") or "")
    elif isinstance(detail, list):
        message = "; ".join(f"{'.'.join(str(part) for part in item.get('loc', []))}: {item.get('msg', '')}" if isinstance(item, dict) else str(item)
                            for item in detail)
    else:
        message = str(detail or "")
    if error_type in ("max_tokens_exceeded", "tokens_exceeded"):
        message = f"the request is over the model's token limit ({error_type}){': ' + message if message else ''}"
    line = redact(f"HTTP {status}: {' '.join(message.split()) or error_type or 'no message'}")[:300]
    if status == 400 and "unknown model" in message.lower():
        return TransportError(base.NOT_FOUND, line, status=status)
    if error_type in ("max_tokens_exceeded", "tokens_exceeded"):  # a row's metrics are then asked apart (``DecisionModel``)
        return TransportError(base.TOKENS_EXCEEDED, line, status=status)
    return status_error(status, line, parse_retry_after(headers), message)  # 529 (overloaded): SERVER, after its retry-after


class DecisionTransport(base.Transport):
    """The ``Transport`` of a decision model (``--model openai-decisions/gpt-6-luna``,
    ``systemone/jev-latest``, ``systemone/solar-decide``): ``complete(request)`` asks the
    request's ``questions`` about its ``state`` in one request and returns a ``Reply`` with no
    text and the ``answers`` keyed by question id; ``usage`` counts the input tokens (output is
    free) priced by ``ragjudge.prices`` (cached input at its own price). ``settings``:
    ``JudgeSettings`` (``model``, ``api_base``, ``api_key_env``)."""

    free = False
    cacheable = True

    def __init__(self, settings: Any) -> None:
        provider, _, name = settings.model.partition("/")
        kind = OpenAIDecisions if provider == "openai-decisions" else SystemOne
        self.client = kind(name, settings.api_base, settings.api_key_env)
        self.provider_model = self.client.provider_model
        self.where = self.client.where
        self.provider = provider

    @property
    def key_env(self) -> str:  # type: ignore[override]
        """The variable the key is read from (``judge.api_key_env``, else the protocol's own)."""
        return self.client.key_env

    def prepare(self) -> None:
        self.client.prepare()

    async def complete(self, request: Any) -> Any:
        if not request.questions:
            raise TransportError(base.BAD_REQUEST, "a decision model judges by questions; this metric asks none")
        reply = await self.client.decide(request.state, list(request.questions), request.timeout)
        return Reply(None, "stop", usage=Usage(reply.input_tokens, 0, reply.cost_usd, 1), answers=reply.answers)

    async def aclose(self) -> None:
        await self.client.aclose()

"""The fake server's decision-model APIs (``ragjudge.fakes.server.FakeJudgeServer`` is a
``FakeDecisions``): OpenAI's Decisions API (``POST /v1/decisions``) and the System One API of
TypeSafe's Jev and Upstage's Solar Decide (``POST /v1/systemone``, ``GET /v1/models``), as
/work/shared/protocols/decision-models.md (sections 1-3, 9) describes them, with a knob for each
error. A test double: its probabilities are fixed knobs, never quality figures.

Answers: a predicate / noul is P(yes) = ``p_yes`` (the server's knob); a choice gives its first
option 0.7 and shares 0.3 among the others; a score's level i weighs i + 1 (exact distributions,
the score their mean level); ``decision_replies`` (a queue of raw reply bodies) are served first.
Usage: input tokens are the body's characters / 4 (OpenAI: ``decision_cached_tokens`` of them
cached, output 0; System One: 4 output tokens a question, reported as the providers do).

Knobs (attributes, changed while it runs): ``decision_faults`` (a queue: the next requests fail
in turn with ``"429"`` (OpenAI: ``retry-after-ms``; System One: ``retry-after``, both from the
server's ``retry_after``), ``"500"``, ``"529"`` (System One's overloaded, with ``retry-after``;
OpenAI answers it as a 500), ``"401"``, ``"max_tokens"`` (System One's ``max_tokens_exceeded``,
a 400 with no message)); the server's ``rate_429`` and ``rate_500`` (shares of requests drawn
from its ``seed`` as its chat calls draw them, ``--rate-429`` / ``--rate-500`` on the command
line; System One answers the second kind 529, OpenAI 500); ``decision_refuse`` (OpenAI question
names answered with a ``refusal``); ``systemone_max_tokens`` (a System One body over that many
tokens is ``max_tokens_exceeded``); ``auth_error`` (the server's: every call 401). Without faults the servers validate as published: OpenAI 400s in its
``error`` envelope (1-200 questions, 2-255 choices, 2-10 levels, ``model`` and ``input``); System
One 403 without an ``Authorization`` header, 400 ``{"detail": {"error_type", "message"}}`` for an
unknown model, 422 ``{"detail": [{"loc", "msg"}]}`` for a schema error (unknown fields, a missing
``criteria``, 2-255 options (26 for ``solar-*``), 2-10 levels).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

JEV_MODELS = {"jev-latest": "jev-1.13.0", "jev-preview": "jev-1.13.0", "jev-1.13.0": "jev-1.13.0"}
SOLAR_MODELS = ("solar-decide", "solar-decide-flash")


def spread(weights: list[float]) -> list[float]:
    """``weights`` as probabilities rounded to 6 decimals that sum to exactly 1 (the last takes the rest)."""
    total = sum(weights)
    out = [round(w / total, 6) for w in weights[:-1]]
    return out + [round(1.0 - sum(out), 6)]


class FakeDecisions:
    """The decision endpoints of ``FakeJudgeServer``, as a mixin (``_init_decisions`` from its
    ``__init__``; ``p_yes``, ``latency``, ``retry_after``, ``auth_error``, ``calls``,
    ``statuses``, ``requests`` and ``keep_requests`` are the server's)."""

    def _init_decisions(self) -> None:
        self.decision_replies: deque[dict[str, Any]] = deque()
        self.decision_faults: deque[str] = deque()
        self.decision_refuse: set[str] = set()
        self.decision_cached_tokens = 0
        self.systemone_max_tokens = 64_000
        self.decision_calls = 0
        # a predicate's P(yes) per request: a function of the request's input as text (OpenAI's ``input``, System One's
        # ``state``, JSON text where it is not a string) -> a probability, or None for ``p_yes`` (tests give rows their own P)
        self.decision_p_yes: Any = None
        # a predicate's P(yes) by its question's name (``passage_relevance.passage_2``), over ``decision_p_yes`` and ``p_yes``
        self.decision_p_question: dict[str, float] = {}

    def _decision_routes(self, app: Any) -> None:
        app.router.add_post("/v1/decisions", self._decisions)
        app.router.add_post("/v1/systemone", self._systemone)
        app.router.add_get("/v1/models", self._models)

    async def _received(self, request: Any) -> Any:
        self.calls += 1
        self.decision_calls += 1
        body = await request.json()
        if self.keep_requests:
            self.requests.append(body)
        if self.latency:
            await asyncio.sleep(self.latency)
        return body

    def _next_fault(self, body: Any, overloaded: str) -> str | None:
        """The request's fault: the next of ``decision_faults``, else one drawn as chat calls
        draw theirs (``rate_429``; ``rate_500``, answered ``overloaded``: "500" or System One's
        "529"; one body fails at most ``max_failures_per_request`` times), else None."""
        if self.decision_faults:
            return self.decision_faults.popleft()
        if not self.rate_429 and not self.rate_500:
            return None
        key = hash(json.dumps(body, sort_keys=True))
        draw = self._random.random()
        if self._failures[key] >= self.max_failures_per_request or draw >= self.rate_429 + self.rate_500:
            return None
        self._failures[key] += 1
        return "429" if draw < self.rate_429 else overloaded

    def _reply(self, web: Any, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Any:
        self.statuses[status] += 1
        return web.json_response(body, status=status, headers=headers)

    # -- OpenAI Decisions ---------------------------------------------------------------
    def _openai_error(self, web: Any, status: int, code: str, message: str) -> Any:
        headers = {"x-request-id": f"req_fake_{self.calls}"}
        if status in (429, 500):
            headers["retry-after-ms"] = f"{self.retry_after * 1000:g}"
        kind = {401: "invalid_request_error", 429: "requests", 400: "invalid_request_error"}.get(status, "server_error")
        return self._reply(web, {"error": {"message": message, "type": kind, "param": None, "code": code}}, status, headers)

    async def _decisions(self, request: Any) -> Any:
        from aiohttp import web

        body = await self._received(request)
        fault = self._next_fault(body, "500")
        if fault == "429":
            return self._openai_error(web, 429, "rate_limit_exceeded", f"Rate limit reached for {body.get('model')}.")
        if fault in ("500", "529"):
            return self._openai_error(web, 500, "server_error", "The server had an error while processing your request.")
        if fault == "401" or self.auth_error:
            return self._openai_error(web, 401, "invalid_api_key", "Incorrect API key provided: sk-te****1234.")
        problem = _openai_problem(body)
        if problem:
            return self._openai_error(web, 400, "invalid_request_error", problem)
        if self.decision_replies:
            return self._reply(web, self.decision_replies.popleft(), headers={"x-request-id": f"req_fake_{self.calls}"})
        answers = [self._openai_answer(q, self._p_yes_of(body.get("input"))) for q in body["questions"]]
        tokens = len(json.dumps(body)) // 4
        cached = min(self.decision_cached_tokens, tokens)
        usage = {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                 "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens}
        return self._reply(web, {"model": body["model"], "answers": answers, "usage": usage}, headers={"x-request-id": f"req_fake_{self.calls}"})

    def _p_yes_of(self, given: Any) -> float:
        """P(yes) of the predicates of a request whose input (state) is ``given``: ``decision_p_yes``'s, else ``p_yes``."""
        if self.decision_p_yes is not None:
            found = self.decision_p_yes(given if isinstance(given, str) else json.dumps(given))
            if found is not None:
                return float(found)
        return self.p_yes

    def _openai_answer(self, q: dict[str, Any], p_yes: float | None = None) -> dict[str, Any]:
        name = q.get("name")
        if name is not None and name in self.decision_refuse:
            return {"type": "refusal", "name": name}
        if q["type"] == "predicate":
            p = self.decision_p_question.get(name, self.p_yes if p_yes is None else p_yes)
            return {"type": "predicate", "name": name, "probability": p}
        if q["type"] == "choice":
            ps = spread([7.0] + [3.0 / (len(q["choices"]) - 1)] * (len(q["choices"]) - 1))
            return {"type": "choice", "name": name, "choice": q["choices"][0]["value"], "confidence": max(ps),
                    "probabilities": [{"value": c["value"], "probability": p} for c, p in zip(q["choices"], ps)]}
        ps = spread([i + 1.0 for i in range(len(q["levels"]))])
        return {"type": "score", "name": name, "score": round(sum(i * p for i, p in enumerate(ps)), 6), "confidence": max(ps),
                "probabilities": [{"value": i, "label": level["label"], "probability": p} for i, (level, p) in enumerate(zip(q["levels"], ps))]}

    # -- System One (Jev, Solar Decide) ------------------------------------------------------
    def _detail(self, web: Any, status: int, detail: Any, after: bool = False) -> Any:
        headers = {"x-typesafe-request-id": f"req_fake_{self.calls}"}
        if after:
            headers["retry-after"] = f"{self.retry_after:g}"
        return self._reply(web, {"detail": detail}, status, headers)

    async def _systemone(self, request: Any) -> Any:
        from aiohttp import web

        body = await self._received(request)
        if not request.headers.get("Authorization"):
            return self._detail(web, 403, "Not authenticated")
        fault = self._next_fault(body, "529")
        if fault == "401" or self.auth_error:
            return self._detail(web, 401, {"error_type": "authentication_error", "message": "Invalid API key"})
        if fault == "429":
            return self._detail(web, 429, {"error_type": "rate_limit", "message": "Rate limit exceeded"}, after=True)
        if fault == "529":
            return self._detail(web, 529, {"error_type": "overloaded", "message": "Overloaded"}, after=True)
        if fault == "500":
            return self._detail(web, 500, {"error_type": "unknown", "message": "Internal server error"})
        model = body.get("model") if isinstance(body, dict) else None
        if isinstance(model, str) and model not in JEV_MODELS and model not in SOLAR_MODELS:
            return self._detail(web, 400, {"message": "Unknown model", "error_type": "unknown"})
        problems = _systemone_problems(body)
        if problems:
            return self._detail(web, 422, problems)
        if fault == "max_tokens" or len(json.dumps(body)) // 4 > self.systemone_max_tokens:
            return self._detail(web, 400, {"error_type": "max_tokens_exceeded"})
        if self.decision_replies:
            return self._reply(web, self.decision_replies.popleft(), headers={"x-typesafe-request-id": f"req_fake_{self.calls}"})
        answers = {key: self._systemone_answer(q, self.decision_p_question.get(key, self._p_yes_of(body.get("state"))))
                   for key, q in body["questions"].items()}
        usage = {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 4 * len(answers)}
        return self._reply(web, {"model": JEV_MODELS.get(model, model), "answers": answers, "usage": usage},
                           headers={"x-typesafe-request-id": f"req_fake_{self.calls}"})

    def _systemone_answer(self, q: dict[str, Any], p_yes: float | None = None) -> dict[str, Any]:
        if q["type"] == "noul":
            return {"type": "noul", "noul": self.p_yes if p_yes is None else p_yes}
        if q["type"] == "choice":
            options = list(q["criteria"])
            ps = spread([7.0] + [3.0 / (len(options) - 1)] * (len(options) - 1))
            return {"type": "choice", "choice": options[0], "probabilities": dict(zip(options, ps)), "confidence": max(ps)}
        ps = spread([i + 1.0 for i in range(len(q["criteria"]))])
        return {"type": "score", "score": round(sum(i * p for i, p in enumerate(ps)), 6), "confidence": max(ps),
                "legend": {str(i): text for i, text in enumerate(q["criteria"])}, "probabilities": {str(i): p for i, p in enumerate(ps)}}

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        names = list(JEV_MODELS) + list(SOLAR_MODELS)
        return self._reply(web, {"models": [{"name": name, "description": "fake", "release_date": "2026-09-15"} for name in names]})


def _openai_problem(body: Any) -> str:
    """What OpenAI's Decisions API refuses in ``body`` (section 1.2), or ""."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "Missing required parameter: 'model'."
    if not isinstance(body.get("input"), (str, list)):
        return "Missing required parameter: 'input'."
    questions = body.get("questions")
    if not isinstance(questions, list) or not 1 <= len(questions) <= 200:
        return "'questions' must hold 1 to 200 questions."
    for i, q in enumerate(questions):
        if not isinstance(q, dict) or q.get("type") not in ("predicate", "choice", "score") or not isinstance(q.get("instructions"), str):
            return f"Invalid value for 'questions[{i}]'."
        if q["type"] == "choice" and not (isinstance(q.get("choices"), list) and 2 <= len(q["choices"]) <= 255):
            return f"'questions[{i}].choices' must hold 2 to 255 choices."
        if q["type"] == "score" and not (isinstance(q.get("levels"), list) and 2 <= len(q["levels"]) <= 10):
            return f"'questions[{i}].levels' must hold 2 to 10 levels."
    return ""


def _systemone_problems(body: Any) -> list[dict[str, Any]]:
    """FastAPI-style validation errors for ``body`` (section 2.2; Solar's 26 options, section 3)."""
    if not isinstance(body, dict):
        return [{"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be an object", "input": body}]
    out = [{"type": "extra_forbidden", "loc": ["body", key], "msg": "Extra inputs are not permitted", "input": body[key]}
           for key in body if key not in ("state", "model", "questions")]
    out += [{"type": "missing", "loc": ["body", key], "msg": "Field required", "input": body} for key in ("state", "model", "questions") if key not in body]
    questions = body.get("questions")
    if not isinstance(questions, dict) or not questions:
        return out + ([{"type": "dict_type", "loc": ["body", "questions"], "msg": "Input should be a non-empty object", "input": questions}]
                      if "questions" in body else [])
    options = 26 if str(body.get("model", "")).startswith("solar-") else 255
    for key, q in questions.items():
        where = ["body", "questions", key]
        kind = q.get("type") if isinstance(q, dict) else None
        if kind not in ("noul", "choice", "score"):
            out.append({"type": "literal_error", "loc": where + ["type"], "msg": "Input should be 'noul', 'choice' or 'score'", "input": q})
        elif kind != "noul" and "criteria" not in q:
            out.append({"type": "missing", "loc": where + ["criteria"], "msg": "Field required", "input": q})
        elif kind == "choice" and not (isinstance(q["criteria"], dict) and 2 <= len(q["criteria"]) <= options):
            out.append({"type": "value_error", "loc": where + ["criteria"], "msg": f"choice questions accept 2 to {options} options", "input": q})
        elif kind == "score" and not (isinstance(q["criteria"], list) and 2 <= len(q["criteria"]) <= 10):
            out.append({"type": "value_error", "loc": where + ["criteria"], "msg": "score questions accept 2 to 10 levels", "input": q})
        elif kind == "noul" and "criteria" in q and not isinstance(q["criteria"], dict):
            out.append({"type": "dict_type", "loc": where + ["criteria"], "msg": "Input should be an object", "input": q})
    return out

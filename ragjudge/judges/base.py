"""What every judge shares: the ``Verdict`` shape, fencing of untrusted text, JSON parsing.

A judge module owns its prompt, its ``PROMPT_VERSION`` and its ``parse``; this module owns
what they have in common. Untrusted text (request, context, response, references) is
wrapped in tags it cannot close: any tag-like text of ours inside it is neutralised, as
inspect_ai's ``neutralize_structural_delimiters`` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

OK, ERROR, SKIPPED = "ok", "error", "skipped"

TAGS = ("request", "context", "passage", "expected_facts", "expected_response", "response", "ground_truth", "fact", "statements")
_TAG_RE = re.compile(r"<(\s*/?\s*)(" + "|".join(TAGS) + r")\b", re.IGNORECASE)


class ParseError(ValueError):
    """The judge's reply could not be read as the expected structure."""


@dataclass
class Verdict:
    """One judge's result for one row and metric.

    ``score``: sufficiency 1.0 (yes) / 0.0 (no); completeness 1..5 (Azure AI Evaluation's
    response completeness scale). ``passed`` is None unless ``status`` is ``ok``.
    ``missing``: the expected facts or ground-truth statements judged absent.
    ``cost_usd``: litellm's price for the call(s), None when the model has no price, 0 when
    every call came from the cache. ``agreement``: with several samples, the share (0..1)
    that agree with the majority verdict. ``input_error``: the error lies in the row's input
    (an unusable context), not in the judge; no call was made.
    """

    metric: str
    status: str
    score: float | None = None
    passed: bool | None = None
    rationale: str | None = None
    error: str | None = None
    missing: list[str] = field(default_factory=list)
    mode: str | None = None
    raw: str | None = None
    cached: bool | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    agreement: float | None = None
    details: dict[str, Any] | None = None
    input_error: bool = False

    @classmethod
    def skipped(cls, metric: str, reason: str, mode: str | None = None) -> "Verdict":
        return cls(metric=metric, status=SKIPPED, error=reason, mode=mode)

    @classmethod
    def failed(cls, metric: str, reason: str, raw: str | None = None, mode: str | None = None, input_error: bool = False) -> "Verdict":
        return cls(metric=metric, status=ERROR, error=reason, raw=raw, mode=mode, input_error=input_error)


@dataclass
class Prepared:
    """A rendered judge call: messages, structured-output schema, and what parse needs."""

    metric: str
    mode: str | None
    messages: list[dict[str, str]]
    response_format: dict[str, Any]
    items: list[str] = field(default_factory=list)
    cache_key: str | None = None  # set once the cache was looked up for it, and missed
    passages: list[str] = field(default_factory=list)  # the context, for checks after the call


def neutralise(text: str) -> str:
    """Make ``text`` unable to open or close one of the prompt's tags (``<context>`` etc.)."""
    return _TAG_RE.sub(lambda m: "\u2039" + m.group(1) + m.group(2), text)


def fence(tag: str, text: str) -> str:
    return f"<{tag}>\n{neutralise(text)}\n</{tag}>"


def numbered(lines: list[str], prefix: str = "") -> str:
    return "\n".join(f"[{prefix}{i}] {neutralise(line)}" for i, line in enumerate(lines, start=1))


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def load_reply(text: str | None) -> dict[str, Any]:
    """Reply text -> dict. Accepts code fences and minor JSON damage (json-repair).

    Raises ``ParseError`` when no JSON object can be recovered.
    """
    import json_repair

    if not text or not text.strip():
        raise ParseError("empty reply")
    try:
        value = json_repair.loads(text)
    except Exception as exc:  # json-repair raises plain exceptions on hopeless input
        raise ParseError(f"unreadable reply ({exc})") from None
    if isinstance(value, list):
        value = next((v for v in reversed(value) if isinstance(v, dict)), None)
    if not isinstance(value, dict) or not value:
        raise ParseError("the reply holds no JSON object")
    return value


def as_bool(value: Any) -> bool | None:
    """Read a yes/no style value; None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".\"'").lower()
        if word in ("yes", "true", "y", "sufficient", "supported", "covered"):
            return True
        if word in ("no", "false", "n", "insufficient", "not supported", "unsupported", "not covered"):
            return False
    return None


def item_index(value: Any, position: int, count: int) -> int:
    """0-based index of the item a judge's entry names (``value``: 1-based number, or a string
    holding one), else the entry's ``position``, capped to ``count - 1``."""
    if isinstance(value, (int, float)) and 1 <= int(value) <= count:
        return int(value) - 1
    if isinstance(value, str):
        digits = "".join(ch for ch in value if ch.isdigit())
        if digits and 1 <= int(digits) <= count:
            return int(digits) - 1
    return min(position, count - 1)


def field_probability(logprobs: Any, field: str = "verdict", yes: str = "yes", no: str = "no") -> float | None:
    """P(yes) / (P(yes) + P(no)) at the first token of JSON string field ``field``, from an
    OpenAI-style ``logprobs`` object (``content``: tokens with ``top_logprobs``); None when
    the reply has no such token or neither word is among the top candidates."""
    found = field_probabilities(logprobs, f'"{field}":"', yes, no)
    return found[0] if found else None


def _tokens_after(logprobs: Any, key: str) -> Iterator[Any]:
    """Each token of an OpenAI-style ``logprobs`` object (``content``: tokens with
    ``top_logprobs``) that starts a value right after ``key`` in the reply's text (spaces
    and newlines removed), e.g. the ``yes`` after ``"verdict":"``."""
    text = ""
    for token in _get(logprobs, "content") or []:
        piece = str(_get(token, "token") or "")
        if piece.strip() and text.replace(" ", "").replace("\n", "").endswith(key):
            yield token
        text += piece


def field_probabilities(logprobs: Any, key: str, yes: str = "true", no: str = "false") -> list[float | None]:
    """Like ``field_probability`` for every place where the reply's text (spaces removed)
    ends with ``key``, e.g. ``'"supported":'`` for each fact's boolean."""
    import math

    found: list[float | None] = []
    for token in _tokens_after(logprobs, key):
        p_yes = p_no = 0.0
        for candidate in _get(token, "top_logprobs") or []:
            word = str(_get(candidate, "token") or "").strip().lower()
            if not word:
                continue
            p = math.exp(float(_get(candidate, "logprob")))
            if yes.startswith(word) or word.startswith(yes):
                p_yes += p
            elif no.startswith(word) or word.startswith(no):
                p_no += p
        found.append(p_yes / (p_yes + p_no) if p_yes + p_no > 0 else None)
    return found


def score_distribution(logprobs: Any, key: str = '"score":', scores: tuple[int, ...] = (1, 2, 3, 4, 5)) -> dict[int, float] | None:
    """P(score) over ``scores`` at the first token after ``key`` (e.g. ``"score": 4``),
    renormalised over the scores found among the top candidates; None when the reply has
    no such token or no score among its candidates. G-Eval (Liu et al., 2023) weights the
    score by these probabilities instead of taking the written one."""
    import math

    token = next(_tokens_after(logprobs, key), None)
    if token is None:
        return None
    found: dict[int, float] = {}
    for candidate in _get(token, "top_logprobs") or []:
        word = str(_get(candidate, "token") or "").strip()
        if word.isdigit() and int(word) in scores:
            found[int(word)] = found.get(int(word), 0.0) + math.exp(float(_get(candidate, "logprob")))
    total = sum(found.values())
    return {k: v / total for k, v in sorted(found.items())} if total > 0 else None


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

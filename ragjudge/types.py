"""The values that flow between the scorer, the judges and the model chokepoint.

- ``Usage``: tokens, cost (USD, or unknown) and provider requests behind a verdict; added with ``+``.
- ``Call``: one rendered judge call (messages, structured-output schema, sampling needs), made
  by a judge and sent by the model chokepoint, which reads none of its metric-specific parts.
- ``Reply``: what a transport returns for one request (text, finish reason, log-probabilities, usage).
- ``Verdict``: one judge's result for one row and metric (status ok / error / skipped).
- ``Question``, ``Answer``, ``DecisionReply``: typed questions to a decision model and its
  answers with probabilities (``ragjudge.transports.decision_models``, ``ragjudge.judges.questions``).

None of these imports anything heavy; the cache stores a ``Verdict``'s fields as plain data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any

OK, ERROR, SKIPPED = "ok", "error", "skipped"
SPAN, TRACE = "span", "trace"  # a judge's level on rows read from traces: one verdict per retriever span, or per trace


@dataclass(frozen=True)
class MetricShape:
    """What the trace sinks (MLflow feedback, Phoenix annotations) need of a metric, read from
    its definition (``Judge.shape``, ``Config.shape``), never from its name: ``level`` (``SPAN``:
    one verdict per retriever span, logged on that span; ``TRACE``: one per trace, logged on the
    trace), ``binary`` (a yes/no verdict, score 1.0/0.0: logged as the label ``yes``/``no``;
    else a score on a scale, logged as the number) and ``mlflow_name`` (the feedback name of
    MLflow's built-in scorer of the same judgment, e.g. ``retrieval_sufficiency``; None where
    MLflow has none: the feedback is then named after the metric)."""

    level: str = TRACE
    binary: bool = True
    mlflow_name: str | None = None


def level_of(needs: "tuple[str, ...] | list[str]") -> str:
    """A judge's level from the fields it ``needs``: ``span`` when it reads the retrieved context
    (one verdict per retriever span of a trace), else ``trace`` (one verdict per trace)."""
    return SPAN if any(need.split("|")[0] in ("context", "passages") for need in needs) else TRACE

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every unpaired surrogate (half an emoji, from a ``\\ud83d`` JSON escape)
    replaced by U+FFFD, so that it can be written as UTF-8; a surrogate pair becomes its
    character."""
    if not _LONE_SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def clean(value: Any) -> Any:
    """``value`` (strings, lists, tuples and dicts, keys too, at any depth) with ``clean_text``
    applied to every string."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean(item) for item in value]
    if isinstance(value, tuple):
        return tuple(clean(item) for item in value)
    if isinstance(value, dict):
        return {clean(key): clean(item) for key, item in value.items()}
    return value


def _surely_clean(value: Any) -> bool:
    """True when ``value`` holds no lone surrogate for certain: orjson writes it (it refuses
    text that is not valid UTF-8, and types it does not know). False means: look (``clean``)."""
    try:
        import orjson

        orjson.dumps(value)
    except (ImportError, TypeError):
        return False
    return True


class ParseError(ValueError):
    """The judge's reply could not be read as the expected structure (the chokepoint asks once
    more, then the row is an error with the raw reply kept)."""


def count_of(number: int, noun: str = "row", plural: str | None = None) -> str:
    """``number`` and ``noun`` as a reader writes them: "1 row", "2 rows", "0 rows"."""
    return f"{number} {noun if number == 1 else (plural or noun + 's')}"


def score_text(value: float) -> str:
    """A judge's score (or a label's rating) as every line shows one: rounded half up to 2
    decimals as written (2.755 is 2.76, though the float 2.755 is 2.75499...), trailing zeros
    dropped (1, 0.5, 4.48)."""
    from decimal import ROUND_HALF_UP, Decimal

    shown = Decimal(repr(float(value))).quantize(Decimal("0.01"), ROUND_HALF_UP).normalize()
    return format(shown + 0, "f")  # + 0: -0 is 0; "f": 1E+1 is 10


def distinct(value: float, limit: float, digits: int = 2) -> tuple[str, str]:
    """``value`` and ``limit`` printed with the fewest decimals (at least ``digits``, at most 6)
    that show them unequal when they are: a comparison never reads "0.95 < 0.95", nor "-0 <= 0"."""
    value, limit = value + 0.0, limit + 0.0  # -0.0 (a drop of nothing, 0.5 - 0.5 negated) prints as 0
    for places in range(digits, 7):
        a, b = f"{value:.{places}f}", f"{limit:.{places}f}"
        if (a != b) == (value != limit):
            return a, b
    return f"{value:g}", f"{limit:g}"


def against(value: float, limit: float, digits: int = 2) -> str:
    """``value`` printed with the fewest decimals (at least ``digits``) at which it compares with
    ``limit`` as the exact value does: P(yes) 0.838 against 0.84 prints "0.838", not "0.84"."""
    for places in range(digits, 10):
        shown = float(f"{value:.{places}f}")
        if (shown < limit) == (value < limit) and (shown == limit) == (value == limit):
            return f"{value:.{places}f}"
    return repr(value)


def score_against(value: float, limit: float) -> str:
    """A failing (or passing) row's score as ``score_text`` shows it (2.501 is 2.5, as ``ragjudge
    score -v`` and the demo print it), with more decimals only where that text would compare with
    the pass mark ``limit`` otherwise than the score does (2.899 against 2.9 is "2.899", not 2.9)."""
    shown = score_text(value)
    same = (float(shown) < limit) == (value < limit) and (float(shown) == limit) == (value == limit)
    return shown if same else against(value, limit, 3)


@dataclass(frozen=True)
class Usage:
    """What the provider calls behind one verdict cost.

    ``prompt_tokens`` and ``completion_tokens``: token counts the provider reported.
    ``cost_usd``: USD from the price table; ``None`` when a call that got a reply has no known
    price (the sum is then unknown too), ``0.0`` when nothing was paid (cache hits, calls that
    got no reply, the embedded judge). ``calls``: provider (HTTP) requests made, retries and
    re-asks included. ``retries``: those of ``calls`` that repeated a request after a failed
    attempt (429, 5xx, timeout, dropped connection, ``response_format`` refused).
    ``estimated``: some reply reported no token counts (no ``usage``), so its tokens (and the
    cost from them) were estimated from the texts, as ``--dry-run`` counts them.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0
    retries: int = 0
    estimated: bool = False

    def __add__(self, other: "Usage") -> "Usage":
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens, cost,
                     self.calls + other.calls, self.retries + other.retries, self.estimated or other.estimated)

    @staticmethod
    def total(items: "list[Usage]") -> "Usage":
        out = Usage()
        for item in items:
            out = out + item
        return out


@dataclass
class Call:
    """One judge call, rendered by a judge; the model chokepoint sends it as it is.

    ``metric`` and ``version`` (the judge's name and prompt version) are parts of the cache key
    the chokepoint treats as opaque. ``temperature`` and ``logprobs`` are what the judge needs
    from this call. ``final`` is False for a first call whose verdict only feeds the judge's
    ``follow_up`` (such a call is never sampled twice). ``items`` are the numbered things the
    reply judges (facts, statements), ``passages`` the context texts for checks after the
    call, ``data`` whatever else the judge carries to ``follow_up``. ``reply_tokens``: the
    least reply budget the call needs (a verdict per fact grows with the facts); the request's
    ``max_tokens`` is the larger of it and ``judge.max_tokens``.
    """

    metric: str
    version: str
    mode: str | None
    messages: list[dict[str, Any]]
    response_format: dict[str, Any] | None
    temperature: float = 0.0
    logprobs: bool = False
    final: bool = True
    items: list[str] = field(default_factory=list)
    passages: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    reply_tokens: int = 0  # the reply this call needs at least (tokens): the chokepoint raises max_tokens to it
    # a decision model's view of the same call (issue 61): the typed questions this metric asks, and the row's fields
    # it reads (a JSON-able dict, the request's ``state``); a chat model reads neither, a decision model only these
    questions: "list[Question]" = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    # the chokepoint's memo of this call: its cache key per (model, sample), and look-ups that missed
    memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)


@dataclass
class Reply:
    """A transport's answer to one request: the message ``text`` (None when empty),
    ``finish_reason`` (``length`` means cut at max_tokens), OpenAI-style ``logprobs`` (a dict
    with ``content``: tokens with ``top_logprobs``; None unless asked for), ``usage``
    (tokens and cost of this one request, ``calls`` 1; ``estimated`` when the reply reported
    no token counts, which the chokepoint then estimates), ``reasoning`` (the message's
    ``reasoning_content`` / ``reasoning`` text of a reasoning model, else None), ``batch``
    (True: the reply came through the provider's batch API, priced at its batch price) and
    ``answers`` (a decision model's reply: the ``Answer`` to each of the call's questions, keyed
    by question id; ``text`` is then None)."""

    text: str | None
    finish_reason: str | None = None
    logprobs: Any = None
    usage: Usage = field(default_factory=lambda: Usage(calls=1))
    reasoning: str | None = None
    batch: bool = False
    answers: "dict[str, Answer] | None" = None  # a decision model's answers to the call's questions (keyed by id); None for chat


# the Verdict fields kept in the response cache (usage, raw and flags of one run are not)
_CACHED_FIELDS = ("metric", "status", "score", "passed", "rationale", "error", "missing", "mode", "details", "input_error", "probability",
                  "distribution", "confidence")


@dataclass(frozen=True)
class TraceStatus:
    """A row read from a trace, as its trace source reads it (``ragjudge.traces.spans.trace_status``):
    the trace's id, whether the row is its first (trace-level metrics are judged there only), and
    why every metric (``skip_all``) or the span-level ones (``span_skip``, ``span_error``) get
    no call."""

    trace_id: str
    first: bool = True
    skip_all: str | None = None
    span_skip: str | None = None
    span_error: str | None = None


class Reason(str, Enum):
    """Why a row has no verdict, where code acts on it (the closed set; ``Verdict.reason``). Its
    value is the text shown in ``M_error``: ``interrupted`` (a Ctrl-C or a stop), ``budget
    reached`` (``judge.max_cost`` spent), ``not sampled`` (left out by ``--limit`` / ``--sample``),
    ``SAME_TRACE`` (a trace-level metric on a trace's later row, which gets the first row's verdict),
    ``refused`` (a decision model declined to answer the metric's question: an error, never a verdict)."""

    INTERRUPTED = "interrupted"
    BUDGET_REACHED = "budget reached"
    NOT_SAMPLED = "not sampled"
    SAME_TRACE = "judged on the trace's first row"  # a trace-level metric on a trace's other rows, until its verdict is copied
    REFUSED = "refused"  # a decision model declined the metric's question (OpenAI's ``refusal`` answer): no verdict

    @classmethod
    def read(cls, status: str | None, error: str | None) -> "Reason | None":
        """The reason a scored table's row holds (a table keeps it as the ``M_error`` text, with
        its ``M_status``: skipped for not sampled, error for the others), else None."""
        found = next((reason for reason in cls if reason.value == error), None)
        if found is None or (found in (cls.NOT_SAMPLED, cls.SAME_TRACE)) != (status == SKIPPED) or status not in (SKIPPED, ERROR):
            return None
        return found


@dataclass
class Verdict:
    """One judge's result for one row and metric.

    ``status``: ``ok``, ``error`` (no verdict: ``error`` says why; ``raw`` keeps the reply) or
    ``skipped`` (the row lacks what the metric needs; ``error`` says what). ``score``: the
    judge's scale (sufficiency 1.0 yes / 0.0 no; completeness 1..5). ``passed``: score >=
    threshold, None unless ok. ``missing``: the expected facts or ground-truth statements
    judged absent. ``cached``: no provider call was made for this row's verdict (cache, or a
    call another row made). ``usage``: tokens, cost (USD) and calls spent on this row in this
    run. ``agreement``: with several samples, the share (0..1) agreeing with the majority.
    ``input_error``: the error lies in the row's input (an unusable context); no call was made.
    ``details``: judge-specific data (per-fact flags, probabilities). ``reason``: a ``Reason``
    when the row's status stems from one (its text is ``error``), else None.

    Probabilities, where the judge gives them (a decision model; the embedded judge; a chat judge
    whose reply carries log-probabilities of the verdict token), else None: ``probability`` in
    0..1 is P(yes) for a binary metric and P(pass) (the probability mass of the levels at or
    above the threshold) for a scored one; ``distribution`` (scored metrics) the probability of
    each level of the scale, lowest first (completeness: five values summing to 1);
    ``confidence`` (scored metrics) the provider's concentration measure in 0..1, not a
    calibrated probability of being right.
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
    agreement: float | None = None
    details: dict[str, Any] | None = None
    input_error: bool = False
    usage: Usage = field(default_factory=Usage)
    reason: Reason | None = None
    probability: float | None = None
    distribution: tuple[float, ...] | None = None
    confidence: float | None = None

    @classmethod
    def skipped(cls, metric: str, reason: str | Reason, mode: str | None = None) -> "Verdict":
        code = reason if isinstance(reason, Reason) else None
        return cls(metric=metric, status=SKIPPED, error=code.value if code else reason, mode=mode, reason=code)

    @classmethod
    def failed(cls, metric: str, reason: str | Reason, raw: str | None = None, mode: str | None = None, input_error: bool = False,
               usage: Usage | None = None) -> "Verdict":
        code = reason if isinstance(reason, Reason) else None
        return cls(metric=metric, status=ERROR, error=code.value if code else reason, raw=raw, mode=mode, input_error=input_error,
                   usage=usage or Usage(), reason=code)

    def copy(self, **changes: Any) -> "Verdict":
        """A shallow copy with ``changes`` applied (lists and details are copied, not shared)."""
        base = replace(self, missing=list(self.missing), details=dict(self.details) if self.details is not None else None)
        return replace(base, **changes) if changes else base

    def to_cache(self) -> dict[str, Any]:
        """The plain data kept in the response cache (the shape earlier versions stored)."""
        return {name: getattr(self, name) for name in _CACHED_FIELDS}

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> "Verdict":
        """A verdict from ``to_cache`` data (unknown keys of other versions are ignored), its
        text cleaned (``clean``) where it holds a lone surrogate."""
        kept = {k: v for k, v in data.items() if k in _FROM_CACHE}
        return cls(**(kept if _surely_clean(kept) else clean(kept)))

    # the per-row usage figures, as the output columns name them
    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens

    @property
    def cost_usd(self) -> float | None:
        return self.usage.cost_usd


# the fields a cached verdict restores (the rest are this run's: usage, cached, raw, agreement, reason)
_FROM_CACHE = frozenset(f.name for f in fields(Verdict)) - {"usage", "cached", "raw", "agreement", "reason"}


# -- decision models (issue 61): typed questions in, answers with probabilities out ----------------
# The wire protocols (OpenAI Decisions, System One) are mapped in ragjudge.transports.decision_models;
# /work/shared/protocols/decision-models.md (sections 1-3) gives both; ragjudge.judges.questions asks them.
PREDICATE, CHOICE, SCORE, REFUSAL = "predicate", "choice", "score", "refusal"
DECISION_PREFIXES = ("openai-decisions/", "systemone/")


def decision_model(model: str) -> bool:
    """True when ``model`` (``--model``) names a decision model: ``openai-decisions/...`` or ``systemone/...``."""
    return model.startswith(DECISION_PREFIXES)


@dataclass(frozen=True)
class Question:
    """One typed question to a decision model, provider-neutral.

    ``id``: the caller's key (System One's question id; OpenAI's ``name``); answers come back
    under it. ``kind``: ``PREDICATE`` (yes/no: OpenAI's ``predicate``, System One's ``noul``),
    ``CHOICE`` or ``SCORE``. ``instructions``: the question's text. ``yes_means`` /
    ``no_means`` (predicate only): what yes and no mean (System One's ``criteria.true`` /
    ``criteria.false``; OpenAI has no such fields, so they are appended to its instructions as
    text, as LangChain's port does). ``options`` (choice): ``(value, description or None)``
    pairs, 2..255. ``levels`` (score): ``(label, description or None)`` pairs, lowest first,
    2..10 (System One sends one text per level: ``"label: description"``, or the label alone).
    """

    id: str
    kind: str
    instructions: str
    yes_means: str | None = None
    no_means: str | None = None
    options: tuple[tuple[Any, str | None], ...] = ()
    levels: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class Answer:
    """A decision model's answer to one ``Question`` (same ``id``).

    ``kind``: the question's kind, or ``REFUSAL`` (OpenAI declined this question inside a 200:
    no probability, never a verdict). ``probability``: P(yes) in 0..1 for a predicate.
    ``choice``: the most probable option value. ``score``: the expected zero-based level (a
    float between levels, Σ level·p). ``probabilities``: ``(option value, p)`` pairs for a
    choice, or ``(zero-based level, p)`` pairs lowest first for a score; each sums to 1.
    ``confidence``: the provider's concentration measure in 0..1 (choice and score only; not a
    calibrated probability of being right)."""

    id: str
    kind: str
    probability: float | None = None
    choice: Any = None
    score: float | None = None
    probabilities: tuple[tuple[Any, float], ...] = ()
    confidence: float | None = None


@dataclass(frozen=True)
class DecisionReply:
    """A decision model's reply to one request: ``answers`` keyed by question id, in question
    order; ``model`` as the provider reports it (a versioned id for a System One alias);
    ``input_tokens`` (all input, cached included), ``cached_tokens`` (of those, read from the
    provider's cache; OpenAI's ``input_tokens_details.cached_tokens``, 0 where the protocol has
    none) and ``output_tokens`` (reported; unbilled by every provider); ``request_id`` from
    the response header (``x-request-id``, ``x-typesafe-request-id``) or None; ``cost_usd``: USD
    of the input tokens at the model's price (``ragjudge.prices``; cached ones at their own
    price, output free), None where the model has no known price."""

    answers: dict[str, Answer]
    model: str
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    request_id: str | None = None
    cost_usd: float | None = None

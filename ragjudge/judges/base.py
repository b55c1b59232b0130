"""What every judge shares: the ``Judge`` protocol, fencing of untrusted text, JSON parsing,
and reading token log-probabilities.

A judge owns its metric: it prepares the prompt (``prepare``, and ``follow_up`` for a second
call), says what each call needs (temperature, log-probabilities: fields of the ``Call``),
parses the reply and reads its log-probabilities (``parse``), decides (thresholds, checks:
``decide``), combines samples (``combine``) and names its own output columns (``columns``,
``values``). The scorer and the model chokepoint never branch on a metric's name or mode.

Untrusted text (request, context, response, references) is wrapped in tags it cannot close:
any tag-like text of ours inside it is neutralised, as inspect_ai's
``neutralize_structural_delimiters`` does.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterator
from typing import Any, ClassVar

# a token, counted without the model's tokenizer: 4 UTF-8 bytes (in ragjudge.prefixes, so that a scored table's
# passages are counted again as the judges count them, ragjudge.counting)
from ragjudge.prefixes import BYTES_PER_TOKEN
from ragjudge.types import ERROR, OK, SKIPPED, Call, MetricShape, ParseError, Reply, Usage, Verdict, clean, level_of

__all__ = ["OK", "ERROR", "SKIPPED", "Call", "ParseError", "Reply", "Usage", "Verdict", "Judge"]

TAGS = ("request", "context", "passage", "expected_facts", "expected_response", "response", "ground_truth", "fact", "statements")
_TAG_RE = re.compile(r"<(\s*/?\s*)(" + "|".join(TAGS) + r")\b", re.IGNORECASE)

BINARY, SCALE = "binary", "scale"


class Judge:
    """Base class of a metric's judge; one instance per metric and run configuration.

    Class attributes: ``name`` (the metric: ``-m NAME`` and the prefix of its columns),
    ``version`` (prompt version; part of the cache key, changed with the prompt), ``kind``
    (``binary``: score 1.0 yes / 0.0 no; ``scale``: a number in ``scale``), ``scale`` (lowest,
    highest score), ``default_threshold`` (a row passes at score >= threshold), ``needs``
    (the canonical fields a row must have), ``inputs`` (every field it reads, that the
    examples of ``extend.NAME`` may give), ``description``, ``mlflow_name`` (the feedback name
    of MLflow's built-in scorer of the same judgment, which ``--mlflow-log-feedback`` logs it
    under; None: the metric's name) and ``Settings`` (the pydantic
    model of its own settings, read from the config's section ``NAME:``; None when it has
    none).

    ``settings`` is the run's ``JudgeSettings`` (the model and how it is called);
    ``threshold`` the pass threshold in use; ``options`` this metric's ``Settings`` (default:
    its defaults).
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = ""
    kind: ClassVar[str] = BINARY
    scale: ClassVar[tuple[float, float]] = (0.0, 1.0)
    default_threshold: ClassVar[float] = 0.5
    needs: ClassVar[tuple[str, ...]] = ()
    inputs: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    mlflow_name: ClassVar[str | None] = None
    Settings: ClassVar[Any] = None

    def __init__(self, settings: Any, threshold: float | None = None, extension: Any = None, options: Any = None) -> None:
        self.settings = settings
        self.options = options if options is not None else (self.Settings() if self.Settings is not None else None)
        self.threshold = self.default_threshold if threshold is None else threshold
        self.extension = extension if extension is not None and (extension.instructions or extension.examples) else None
        self.version = self.base_version() + self._version_suffix()  # type: ignore[misc]

    @property
    def level(self) -> str:
        """``span`` when the judge reads the retrieved context (one verdict per retriever span of
        a trace), else ``trace`` (one verdict per trace): ``ragjudge.types.level_of``."""
        return level_of(self.needs)

    def shape(self) -> MetricShape:
        """What the trace sinks need of this metric (``ragjudge.types.MetricShape``): its
        ``level``, whether it is ``binary`` (``kind``), and ``mlflow_name``."""
        return MetricShape(level=self.level, binary=self.kind == BINARY, mlflow_name=self.mlflow_name)

    def base_version(self) -> str:
        """The prompt version before any extension (a judge with several prompts picks one)."""
        return type(self).version

    def _version_suffix(self) -> str:
        if self.extension is None:
            return ""
        import hashlib

        return "+" + hashlib.sha256(self.extension.model_dump_json().encode("utf-8")).hexdigest()[:8]

    def domain(self) -> list[str]:
        """The config's ``extend.NAME`` for this metric, as prompt parts: the domain instructions,
        then the examples with their verdicts (placed before the task)."""
        if self.extension is None:
            return []
        parts = []
        if self.extension.instructions:
            parts.append("Instructions for this domain:\n" + self.extension.instructions.strip())
        if self.extension.examples:
            blocks = []
            for example in self.extension.examples:
                lines = []
                for name, value in example.inputs.items():
                    items = [str(v) for v in value] if isinstance(value, list) else [str(value)]
                    lines.append(f"<{name}>\n" + (numbered(items) if isinstance(value, list) else neutralise(items[0])) + f"\n</{name}>")
                verdict = example.verdict if not isinstance(example.verdict, bool) else ("yes" if example.verdict else "no")
                lines.append(f"Verdict: {verdict}" + (f". Why: {example.rationale.strip()}" if example.rationale else ""))
                blocks.append("<example>\n" + "\n".join(lines) + "\n</example>")
            parts.append("Examples of verdicts in this domain:\n" + "\n\n".join(blocks))
        return parts

    # -- the protocol ------------------------------------------------------------------
    def prepare(self, record: Any) -> Call | Verdict:
        """The first call for ``record`` (an ``EvalRecord``), or a final ``Verdict`` when no call
        is needed (skipped: the row lacks a field; error: its input is unusable)."""
        raise NotImplementedError

    def asks_questions(self) -> bool:
        """True when this judge can be answered by a decision model: its calls carry typed questions
        (``Call.questions``, ``ragjudge.judges.questions``). False by default: a run whose judge (or a
        panel member, or a cascade stage) is a decision model refuses such a metric before any call
        (``ConfigError``, exit 2; ``ragjudge.scoring.check_decision_metrics``)."""
        return False

    def follow_up(self, call: Call, verdict: Verdict) -> Call:
        """The next call after the ok ``verdict`` of a non-final ``call`` (completeness: the
        coverage call after the ground truth's statements)."""
        raise NotImplementedError(f"{self.name} makes one call per row")

    def parse(self, reply: Reply, call: Call) -> Verdict:
        """The reply to ``call`` -> an ok ``Verdict`` (log-probabilities read into ``details``).
        Raises ``ParseError`` when the reply cannot be read."""
        raise NotImplementedError

    def decide(self, verdict: Verdict, call: Call) -> Verdict:
        """Final decisions on an ok verdict after the cache (thresholds, checks), then
        ``passed``. Runs on cached verdicts too, so changing a decision setting costs no call."""
        if verdict.status == OK:
            verdict.passed = self.passes(verdict.score)
        return verdict

    def combine(self, samples: list[Verdict]) -> Verdict:
        """The majority of several decided samples of one row: binary judges take the majority
        (ties: no), scales the median: of an even number of samples, the lower of the two middle
        scores (``statistics.median_low``), so that a tie never passes either; ``agreement``
        is the share of samples agreeing with it (to the nearest point on a scale)."""
        ok = [v for v in samples if v.status == OK]
        if not ok:
            return samples[0]
        scores = [float(v.score) for v in ok]  # type: ignore[arg-type]
        if self.kind == BINARY:
            high = self.scale[1]
            yes = sum(1 for s in scores if s >= (self.scale[0] + high) / 2)
            majority = high if yes * 2 > len(scores) else self.scale[0]
        else:  # the median; of an even number, the lower middle value, so that a tie never passes
            majority = round(float(statistics.median_low(scores)), 3)
        agreeing = [v for v in ok if round(v.score) == round(majority)]  # type: ignore[arg-type]
        chosen = min(ok, key=lambda v: abs(v.score - majority))  # type: ignore[operator]
        result = chosen.copy(score=majority, agreement=len(agreeing) / len(samples))
        result.cached = all(bool(v.cached) for v in samples)
        result.usage = Usage.total([v.usage for v in samples])
        result.passed = self.passes(majority)
        return result

    def columns(self) -> dict[str, str]:
        """This judge's own output columns beyond the common ``NAME_*`` ones: name -> type
        (``string``, ``float64``, ``int64``, ``bool``, ``list<string>``)."""
        return {}

    def values(self, verdict: Verdict) -> dict[str, Any]:
        """The values of ``columns()`` for one row's verdict."""
        return {}

    # -- helpers -----------------------------------------------------------------------
    def passes(self, score: float | None) -> bool | None:
        return None if score is None else bool(score >= self.threshold)

    def temperature(self, final: bool = True) -> float:
        """``judge.temperature``, raised to 0.7 when ``judge.samples`` > 1 would otherwise draw
        the same reply N times; a non-final call is made once and shared by every sample, so it
        keeps ``judge.temperature``."""
        if self.settings.samples > 1 and self.settings.temperature == 0.0 and final:
            return 0.7
        return self.settings.temperature

    def call(self, mode: str | None, messages: list[dict[str, Any]], response_format: dict[str, Any] | None, *,
             final: bool = True, logprobs: bool = False, **extra: Any) -> Call:
        """A ``Call`` of this judge (name and version filled in)."""
        return Call(self.name, self.version, mode, messages, response_format, temperature=self.temperature(final),
                    logprobs=logprobs, final=final, **extra)


def note(verdict: Verdict, text: str) -> None:
    """Put ``text`` (why ragjudge's decision differs from the verdict the judge wrote) in front
    of the judge's rationale."""
    verdict.rationale = f"{text}. {verdict.rationale}" if verdict.rationale else text


def neutralise(text: str) -> str:
    """Make ``text`` unable to open or close one of the prompt's tags (``<context>`` etc.)."""
    return _TAG_RE.sub(lambda m: "\u2039" + m.group(1) + m.group(2), text)


def fence(tag: str, text: str) -> str:
    return f"<{tag}>\n{neutralise(text)}\n</{tag}>"



def reply_budget(text: str, base: int, per_token: float, per_sentence: int = 0) -> int:
    """The least reply budget (tokens) of a call whose reply writes ``text`` again (a ground
    truth split into statements, a response split into claims): ``base`` + ``per_token`` x
    ``text``'s tokens (its UTF-8 bytes / ``BYTES_PER_TOKEN``) + ``per_sentence`` x its sentences
    (split after . ! ?: a reason written for each), rounded up. The request's ``max_tokens`` is
    the larger of it and ``judge.max_tokens`` (``Call.reply_tokens``), so a short row keeps its
    request and its cache key (issue 60 item 22)."""
    parts = len([part for part in re.split(r"(?<=[.!?])\s+", text.strip()) if part.strip()]) if per_sentence else 0
    return base + math.ceil(per_token * len(text.encode("utf-8")) / BYTES_PER_TOKEN) + per_sentence * parts


def numbered(lines: list[str], prefix: str = "") -> str:
    return "\n".join(f"[{prefix}{i}] {neutralise(line)}" for i, line in enumerate(lines, start=1))


_FORMATS: dict[tuple[str, int], tuple[dict[str, Any], dict[str, Any]]] = {}


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI ``response_format`` asking for ``schema`` (strict) under ``name``. The same
    object for the same name and schema object: the cache key's check that orjson writes it as
    ``json`` does (``ragjudge.cache.key_bytes``) is then made once, not once per row (bench
    figure 1c). Treat it as read-only; a transport that changes it must copy it first."""
    held = _FORMATS.get((name, id(schema)))
    if held is not None and held[0] is schema:
        return held[1]
    made = {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
    if len(_FORMATS) >= 256:  # the oldest goes: a long session (a notebook, a test run) keeps its newest judges' formats
        _FORMATS.pop(next(iter(_FORMATS)))
    _FORMATS[(name, id(schema))] = (schema, made)
    return made


def load_reply(text: str | None, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """Reply text -> the verdict's JSON object. Accepts code fences, prose around the object
    and minor JSON damage (json-repair).

    The verdict is the reply's *first* complete object that fits ``schema`` (a JSON schema,
    e.g. ``schema_of(call)``: it holds every required property); prose around it, even prose
    that quotes another object (``... a reply like {"verdict": "no"}``), is ignored. Damaged
    JSON is repaired by json-repair when no complete object fits. When no object holds every
    required property, the first that holds any of the schema's properties; without a
    schema, the first object.

    Raises ``ParseError`` when no JSON object can be recovered.
    """
    if not text or not text.strip():
        raise ParseError("empty reply")
    complete = _complete_objects(text)
    repaired: list[dict[str, Any]] = []
    if not complete or (schema and not any(_fits(schema, o, whole=True) for o in complete)):
        import json_repair  # only for damaged replies (10 ms to import)

        try:
            value = json_repair.loads(text)
        except Exception as exc:  # json-repair raises plain exceptions on hopeless input
            if not complete:
                raise ParseError(f"unreadable reply ({exc})") from None
            value = None
        repaired = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, dict) and v]
    if not complete and not repaired:
        raise ParseError("the reply holds no JSON object")
    chosen = None
    if schema:
        for whole in (True, False):  # every required property, else any property of the schema
            chosen = next((o for o in [*complete, *repaired] if _fits(schema, o, whole)), None)
            if chosen is not None:
                break
    return clean(chosen or (complete or repaired)[0])  # a \ud83d escape (half an emoji) must not make the row unwritable


def _complete_objects(text: str) -> list[dict[str, Any]]:
    """The complete JSON objects written in ``text``, in order (an object inside another is
    part of it; prose, code fences and damaged JSON between them are skipped)."""
    import json

    decoder = json.JSONDecoder(strict=False)
    found: list[dict[str, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict) and value:
            found.append(value)
        position = text.find("{", end)
    return found


def _fits(schema: dict[str, Any], candidate: dict[str, Any], whole: bool) -> bool:
    """Whether ``candidate`` holds every property ``schema`` requires (``whole``), or any of its properties."""
    required = set(schema.get("required") or ())
    if whole:
        return bool(required) and required <= set(candidate)
    return bool((set(schema.get("properties") or ()) | required) & set(candidate))


def schema_of(call: Call) -> dict[str, Any] | None:
    """The JSON schema ``call`` asks the reply to follow (its ``response_format``), or None."""
    form = call.response_format or {}
    schema = (form.get("json_schema") or {}).get("schema") if isinstance(form, dict) else None
    return schema if isinstance(schema, dict) else None


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


def item_number(value: Any, count: int) -> int | None:
    """0-based index of the item a judge's entry names (``value``: a 1-based whole number, or a
    string holding one, "fact 2"); None when it names no item in 1..``count``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and float(value).is_integer() and 1 <= int(value) <= count:
        return int(value) - 1
    if isinstance(value, str):
        digits = "".join(ch for ch in value if ch.isdigit())
        if digits and 1 <= int(digits) <= count:
            return int(digits) - 1
    return None


def read_items(entries: list[Any], key: str, flag: str, count: int, conflict_unjudged: bool = False
               ) -> tuple[list[bool | None], list[int | None], list[str]]:
    """A judge's per-item marks (``entries``: objects naming an item under ``key`` and a
    boolean under ``flag``) for ``count`` items.

    Returns ``(flags, entry_items, problems)``: each item's flag (None when no entry judged it
    readably), the item each entry judged (None for an entry that judged none), and what was
    wrong. An entry counts only with a number in 1..count (or, when no entry has a number, its
    position) and a readable flag. An item judged twice keeps its first mark; with
    ``conflict_unjudged``, two different marks leave it unjudged.
    """
    flags: list[bool | None] = [None] * count
    entry_items: list[int | None] = []
    problems: list[str] = []
    conflicted: set[int] = set()
    numbered = any(isinstance(e, dict) and e.get(key) is not None for e in entries)
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append(f"entry {position + 1} is not an object")
            entry_items.append(None)
            continue
        index = item_number(entry.get(key), count) if numbered else (position if position < count else None)
        value = as_bool(entry.get(flag)) if index is not None else None
        if index is None:
            problems.append(f"entry {position + 1} names {key} {entry.get(key)!r}, not one of 1..{count}")
        elif value is None:
            problems.append(f"{key} {index + 1}: '{flag}' is {entry.get(flag)!r}, not true or false")
            index = None
        elif index in conflicted or flags[index] is not None:
            problems.append(f"{key} {index + 1} is judged twice")
            if conflict_unjudged and flags[index] != value:
                conflicted.add(index)
                flags[index] = None
            index = None
        else:
            flags[index] = value
        entry_items.append(index)
    return flags, entry_items, problems


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

"""The definitions the config holds for judges: a judge defined in YAML (``JudgeDefinition``,
the config's ``judges:`` and the bundled ones), an extension of a built-in metric's prompt
(``Extension``, the config's ``extend:``) and their few-shot examples (``Example``).

Each checks itself when it is made, and raises ``ValueError`` naming the judge or metric and
the fix (a ``ConfigError``, exit 2, once the config is read): a definition's templates are
compiled and tried in the sandbox (``ragjudge.judges.custom.check``); an extension's examples
are checked against the fields its metric reads (the judge's ``inputs``) and the verdicts it
can give.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ragjudge.strict import Strict
from ragjudge.judges.custom import check


class Example(Strict):
    """A few-shot example of a judge: the row's fields (``inputs``: field -> value), the verdict
    it deserves (``yes``/``no`` for a binary judge, a number on a scale) and why."""

    inputs: dict[str, Any] = Field(default_factory=dict)
    verdict: str | float | bool
    rationale: str = ""

    def verdict_problem(self, kind: str, low: float, high: float) -> str | None:
        """None when ``verdict`` suits a judge of ``kind`` (``binary``: yes/no or true/false;
        ``scale``: a number from ``low`` to ``high``); else the values it may take, as words."""
        verdict = self.verdict
        if kind == "binary":
            if isinstance(verdict, bool) or (isinstance(verdict, str) and verdict.strip().lower() in ("yes", "no", "true", "false")):
                return None
            return "yes or no (true or false)"
        number: float | None = None
        if isinstance(verdict, (int, float)) and not isinstance(verdict, bool):
            number = float(verdict)
        elif isinstance(verdict, str):
            try:
                number = float(verdict.strip())
            except ValueError:
                number = None
        if number is not None and math.isfinite(number) and low <= number <= high:
            return None
        return f"a number from {low:g} to {high:g}"

    def shown(self) -> str:
        """``verdict`` as the config wrote it: yes/no, a number, or quoted text."""
        if isinstance(self.verdict, bool):
            return "yes" if self.verdict else "no"
        return f"{self.verdict:g}" if isinstance(self.verdict, float) else repr(self.verdict)


class Extension(Strict):
    """Domain knowledge added to a built-in metric's prompt: ``instructions`` (text placed before
    the task) and few-shot ``examples``. Changing either changes the prompt version and so the
    cache key. ``check`` refuses examples that do not suit the metric (the config calls it)."""

    instructions: str | None = None
    examples: list[Example] = Field(default_factory=list)

    def check(self, metric: str, judge: Any) -> None:
        """Refuse an example that does not suit the built-in ``metric``, judged by the ``Judge``
        class ``judge`` (``judges.judge_class(metric)``): a field it does not read (its
        ``inputs``), or a verdict it cannot give (sufficiency: yes or no; completeness: a number
        from 1 to 5). Raises ``ValueError`` naming the metric, the example and what it takes."""
        allowed = judge.inputs  # the config calls this for built-in metrics only
        for number, example in enumerate(self.examples, 1):
            unknown = sorted(set(example.inputs) - set(allowed))
            if unknown:
                raise ValueError(f"extend.{metric}: example {number} gives unknown field(s) {', '.join(unknown)}; "
                                 f"{metric} reads {', '.join(allowed)}")
            problem = example.verdict_problem(judge.kind, *judge.scale)
            if problem:
                raise ValueError(f"extend.{metric}: example {number} has verdict {example.shown()}; {metric} takes {problem}")


class JudgeDefinition(Strict):
    """A metric defined in the config (``judges:``), judged like a built-in one.

    ``name``: ``-m NAME`` and the prefix of its output columns (1 to 40 lower case letters,
    digits and ``_``, starting with a letter).
    ``needs``: the fields it reads: canonical fields (id, request, context, expected_facts,
    expected_response, response) or other columns of the input; a row lacking one is skipped.
    ``prompt``: a Jinja2 template (sandboxed) over ``request``, ``passages`` (the numbered
    context), ``context`` (the same), ``response``, ``expected_response``, ``expected_facts``,
    ``id`` and the columns in ``needs``, each of ``needs`` also as ``columns['NAME']`` (a name
    that is no identifier, ``source-title``, only so); every value arrives fenced as data, with sentences
    addressed to the judge removed. Its size is limited (``ragjudge.judges.sandbox.MAX_*``:
    for-loops nested at most 2 deep, range() of at most 1,000 numbers, no loop over a text's
    characters, ...). ``system``: the system message (default: a strict, impartial judge).
    ``kind``: ``binary`` (yes/no, 1.0/0.0) or ``scale`` from ``min`` to ``max`` (finite
    numbers). ``threshold``: a row passes at score >= threshold (default 0.5 for binary, the
    middle of a scale). ``integer``: whether a scale's scores are whole numbers (the reply's
    schema then takes only them, and any other number is an error row); unset: yes when
    ``min``, ``max`` and the threshold are all whole numbers (1..5, pass at 3), else a number
    (0..1, pass at 0.7).
    ``claims``: the judge lists the response's claims and marks each supported or not; the
    verdict is yes only when every claim is, and ``M_missing`` lists the unsupported ones
    (binary only). ``examples``: few-shot examples, shown as earlier turns of the conversation;
    each verdict yes/no (true/false) for a binary judge, a number from min to max on a scale.
    ``per``: ``row`` (default, one verdict a row) or ``passage``: the judge answers its prompt
    for each retrieved passage on its own, one yes/no a passage in one call per row (the passages
    numbered, as ``passage_relevance`` judges them), and the row gets passage_relevance's columns
    (``M_verdicts``, ``M_precision_at_K`` for the run's ``passage_relevance.at_k``,
    ``M_first_relevant``, ``M_reciprocal_rank``; nDCG@k and recall@k against ``--labels M=COL``) and
    scores precision@``k`` (default 3), 0..1, passing at ``threshold`` (0.5). Binary, no claims
    and no examples; ``needs`` must hold ``context``.
    ``per: pair``: the judge compares two responses (the run's ``--pairwise A,B``, the config's
    ``pairwise.responses``), as the built-in ``pairwise`` does: its prompt reads ``response_a`` and
    ``response_b`` (the two as shown in one order: each pair is asked twice, swapped), the reply
    is ``{"verdict": "A"|"B"|"tie", "reason"}`` and the row gets pairwise's score (-1, 0, 1),
    columns and summary (``ragjudge.judges.pairwise``); no kind, min, max, integer, claims or examples.
    ``mlflow_name``: the feedback name of MLflow's built-in scorer of the same judgment
    (``retrieval_groundedness``), under which ``--mlflow-log-feedback`` logs the verdicts so
    that MLflow's own views see them (default: the judge's name); not part of the prompt
    version. Any of these that is wrong raises ``ValueError`` naming the judge (a ``ConfigError``, exit
    2, once the config is read).
    """

    NAME: ClassVar[str] = r"[a-z][a-z0-9_]{0,39}"

    name: str = Field(pattern=f"^{NAME}$")
    description: str = ""
    needs: list[str] = Field(default_factory=list)
    prompt: str = Field(min_length=1)
    system: str | None = None
    kind: Literal["binary", "scale"] = "binary"
    min: float = 1.0
    max: float = 5.0
    threshold: float | None = None
    integer: bool | None = None
    claims: bool = False
    examples: list[Example] = Field(default_factory=list)
    mlflow_name: str | None = Field(default=None, min_length=1)
    per: Literal["row", "passage", "pair"] = "row"
    k: int | None = Field(default=None, ge=1)

    @field_validator("name", mode="before")
    @classmethod
    def _name_pattern(cls, value: Any) -> Any:
        # said here rather than by the pattern, whose own message the config's errors cannot show
        if isinstance(value, str) and not re.fullmatch(cls.NAME, value):
            raise ValueError("should be 1 to 40 characters: lower case letters a-z, digits and _, starting with a letter")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "JudgeDefinition":
        for key in ("min", "max", "threshold"):
            value = getattr(self, key)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"judge '{self.name}': {key} must be a finite number (got {value})")
        low, high = self.scale
        if self.kind == "scale" and self.min >= self.max:
            raise ValueError(f"judge '{self.name}': min ({self.min:g}) must be below max ({self.max:g})")
        if self.threshold is not None and not low <= self.threshold <= high:
            raise ValueError(f"judge '{self.name}': threshold {self.threshold:g} is outside its scale {low:g}..{high:g}")
        if self.integer is not None and self.kind != "scale":
            raise ValueError(f"judge '{self.name}': integer: is taken by kind: scale only")
        if self.integer and not (float(self.min).is_integer() and float(self.max).is_integer()):
            raise ValueError(f"judge '{self.name}': integer: true needs whole numbers for min and max (got {self.min:g}, {self.max:g})")
        if self.per == "passage":
            problem = ("kind: binary" if self.kind != "binary" else "no claims: true" if self.claims else
                       "no examples" if self.examples else None if {"context", "passages"} & set(self.needs) else "context in needs")
            if problem:
                raise ValueError(f"judge '{self.name}': per: passage needs {problem} (each passage gets a yes/no mark)")
        elif self.k is not None:
            raise ValueError(f"judge '{self.name}': k: is taken with per: passage only (the k of its precision@k score)")
        if self.per == "pair":
            given = [key for key in ("kind", "min", "max", "integer", "claims", "examples") if key in self.model_fields_set]
            if given:
                raise ValueError(f"judge '{self.name}': per: pair takes no {', '.join(given)} (its verdict is A, B or a tie, "
                                 "scored -1, 0 or 1, each pair asked in both orders)")
        if self.claims and self.kind != "binary":
            raise ValueError(f"judge '{self.name}': claims: true needs kind: binary")
        for number, example in enumerate(self.examples, 1):
            problem = example.verdict_problem(self.kind, low, high)
            if problem:
                raise ValueError(f"judge '{self.name}': example {number} has verdict {example.shown()}; a {self.kind} judge "
                                 f"takes {problem}")
        check(self)
        return self

    @property
    def scale(self) -> tuple[float, float]:
        if self.per == "pair":  # -1 A, 0 a tie, 1 B (ragjudge.judges.pairwise)
            return (-1.0, 1.0)
        return (0.0, 1.0) if self.kind == "binary" else (self.min, self.max)

    @property
    def whole(self) -> bool:
        """Whether the scale's scores are whole numbers: ``integer`` when set, else whether
        ``min``, ``max`` and the pass threshold all are (False for a binary judge)."""
        if self.kind != "scale":
            return False
        if self.integer is not None:
            return self.integer
        return all(float(v).is_integer() for v in (self.min, self.max, self.default_threshold))

    def digest_json(self) -> str:
        """The definition as JSON for its prompt version's hash: ``integer``, ``per`` and ``k``
        only when set, so that definitions written before them keep their version (and their cache); never
        ``mlflow_name``, which names the feedback, not the judgment."""
        unset = {key for key, default in (("integer", None), ("per", "row"), ("k", None)) if getattr(self, key) == default}
        return self.model_dump_json(exclude={"mlflow_name", *unset})

    @property
    def per_passage(self) -> bool:
        """Whether the judge gives one yes/no per passage (``per: passage``), its row score precision@k (0..1)."""
        return self.per == "passage"

    @property
    def default_threshold(self) -> float:
        if self.threshold is not None:
            return self.threshold
        if self.per == "pair":  # passes when B is at least as good as A
            return 0.0
        low, high = self.scale
        return 0.5 if self.kind == "binary" else low + (high - low) / 2

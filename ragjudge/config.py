"""The run configuration: pydantic models of the YAML config, merged with command-line flags.

A config file holds the same settings as the flags (``configs/default.yaml``, printed by
``ragjudge config show``, documents every key); flags override the file; an unknown key is a
``ConfigError`` (exit 2) that names it. The bundled configs (``BUNDLED``) ship inside the
package, so ``-c mlflow`` works wherever ragjudge is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragjudge.errors import ConfigError
from ragjudge.judges import BUILT_IN, judge_class

METRICS: tuple[str, ...] = tuple(BUILT_IN)
FIELDS: tuple[str, ...] = ("id", "request", "context", "expected_facts", "expected_response", "response")


def _default_thresholds() -> dict[str, float]:
    return {name: float(judge_class(name).default_threshold) for name in METRICS}

BUNDLED: tuple[str, ...] = ("default", "local", "mlflow")
"""Configs shipped in the package (``ragjudge/configs/NAME.yaml``; ``configs/`` in a checkout):
every key with its default, the embedded judge's calibrated settings, MLflow-shaped records."""


def bundled_config(name: str) -> Path:
    """Path of the bundled config ``name`` (one of ``BUNDLED``; ``.yaml`` may be given).
    Raises ``ConfigError`` naming the bundled configs for any other name."""
    stem = name.removesuffix(".yaml")
    if stem not in BUNDLED:
        raise ConfigError(f"no bundled config '{name}'; bundled: {', '.join(BUNDLED)}")
    return Path(__file__).parent / "configs" / f"{stem}.yaml"


def _config_path(path: str | Path) -> Path:
    """``path`` itself when it exists (or names a folder); else, for a bare bundled name
    (``mlflow``, ``local.yaml``: no folder part), the bundled file."""
    given = Path(path)
    if given.exists() or given.parent != Path(".") or given.name.removesuffix(".yaml") not in BUNDLED:
        return given
    return bundled_config(given.name)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, value: Any, info: Any) -> Any:
        # YAML's true/false would otherwise pass as 1/0 for a number (workers: true -> 1)
        if isinstance(value, bool):
            annotation = str(cls.model_fields[info.field_name].annotation)
            if ("int" in annotation or "float" in annotation) and "bool" not in annotation:
                raise ValueError("expected a number, not true/false")
        return value


class Columns(_Strict):
    """Where each canonical field lives in the input: a column name or a dotted path into a
    nested object (``inputs.query``). ``None`` means: the same-named column, else a common
    alias (see ``ragjudge.records.ALIASES``)."""

    id: str | None = None
    request: str | None = None
    context: str | None = None
    expected_facts: str | None = None
    expected_response: str | None = None
    response: str | None = None


class Price(_Strict):
    """USD per million tokens, for a model litellm's price table does not know (self-hosted,
    new): ``input_per_mtok`` for prompt tokens, ``output_per_mtok`` for completion tokens."""

    input_per_mtok: float = Field(ge=0.0)
    output_per_mtok: float = Field(ge=0.0)


class JudgeSettings(_Strict):
    """The judge model and how it is called (timeouts in seconds).

    ``transport``: ``auto`` sends OpenAI-compatible models (``openai/...``, with or without
    ``api_base``) over ragjudge's own aiohttp client, which makes a call for a fraction of
    litellm's CPU, and every other model through litellm; ``litellm`` sends every model
    through litellm. Verdicts, cache keys and costs are the same either way.

    ``samples``: judge each row and metric this many times and take the majority (the
    output's ``M_agreement`` is the share agreeing); with ``temperature`` 0 the samples are
    drawn at 0.7, except completeness's statements call, which is made once per ground
    truth and shared by every sample.

    ``yes_threshold``: for reference-free sufficiency, decide yes/no by the judge's
    probability of "yes" at the verdict token (read from token log-probabilities, which
    OpenAI and llama.cpp return) against this threshold, instead of the token it wrote.
    None: take the written verdict. ``fact_threshold``: the same for each expected fact's
    "supported" in grounded sufficiency. ``fact_evidence``: in grounded sufficiency, a fact
    counts as supported only if at least this share (0..1] of its content words occur in
    the passages (``judges.sufficiency.evidence_share``); None: trust the judge alone.
    ``expected_score``: completeness is the probability-weighted mean of the score token
    (1.0..5.0, G-Eval) instead of the written integer. ``coverage_score``: completeness is
    ``1 + 4 x`` the share of the ground truth's statements covered (the mean P(covered) where
    log-probabilities come back), a float in 1..5, instead of the written integer; it takes
    precedence over ``expected_score``. ``strip_instructions``: remove sentences addressed to
    the judge ("ignore all previous instructions ...") from passages and responses before
    judging (``ragjudge.injection``); the output's ``removed_instructions`` lists them.
    ``reasoning_first``: sufficiency's reply gives the reasoning before each verdict (as
    MLflow's and Google's judges ask); None: on for every model except ``local/...``, whose
    1.5B judge was measured best deciding first. Each order has its own prompt version.
    ``price``: USD per million input and output tokens, overriding litellm's price table
    (fills ``M_cost_usd``). ``max_cost``: a budget in USD; once the cost spent reaches it, no
    new call starts (calls in flight finish) and the rest of the rows are errors "budget
    reached"; a model without a price needs ``price`` for it."""

    model: str = "openai/gpt-4o-mini"
    transport: Literal["auto", "litellm"] = "auto"
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, ge=16)
    seed: int | None = None
    timeout: float = Field(120.0, gt=0, allow_inf_nan=False)
    concurrency: int = Field(16, ge=1, le=1024)
    workers: int = Field(1, ge=1, le=64)
    max_retries: int = Field(6, ge=0, le=20)
    rpm: float | None = Field(None, gt=0)
    samples: int = Field(1, ge=1, le=15)
    yes_threshold: float | None = Field(None, gt=0.0, lt=1.0)
    fact_threshold: float | None = Field(None, gt=0.0, lt=1.0)
    fact_evidence: float | None = Field(None, gt=0.0, le=1.0)
    expected_score: bool = False
    coverage_score: bool = False
    strip_instructions: bool = True
    reasoning_first: bool | None = None
    price: Price | None = None
    max_cost: float | None = Field(None, gt=0.0, allow_inf_nan=False)
    local_model_path: str | None = None


class GateSettings(_Strict):
    """Pass-rate floors (0..1, per metric), the error-rate ceiling (0..1, per metric: errors /
    judged rows) and the skip-rate ceiling (0..1, per metric: skipped / all rows; 1.0 never
    fails), e.g. 0.1 to fail a run where a retriever left many rows without context."""

    min_pass_rate: dict[str, float] = Field(default_factory=lambda: {m: 1.0 for m in METRICS})
    max_error_rate: float = Field(0.0, ge=0.0, le=1.0)
    max_skip_rate: float = Field(1.0, ge=0.0, le=1.0)

    @field_validator("min_pass_rate", mode="before")
    @classmethod
    def _scalar_applies_to_all(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return {m: float(value) for m in METRICS}
        return value

    @field_validator("min_pass_rate")
    @classmethod
    def _in_unit_range(cls, value: dict[str, float]) -> dict[str, float]:
        for metric, rate in value.items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{metric}: {rate} is not between 0 and 1")
        return value


class CacheSettings(_Strict):
    """The response cache: ``enabled``, and ``dir`` (None: the per-user cache folder)."""

    enabled: bool = True
    dir: str | None = Field(None, pattern=r"\S")  # not empty or blank


class Example(_Strict):
    """A few-shot example of a judge: the row's fields (``inputs``: field -> value), the verdict
    it deserves (``yes``/``no`` for a binary judge, a number on a scale) and why."""

    inputs: dict[str, Any] = Field(default_factory=dict)
    verdict: str | float | bool
    rationale: str = ""


class Extension(_Strict):
    """Domain knowledge added to a built-in metric's prompt: ``instructions`` (text placed before
    the task) and few-shot ``examples``. Changing either changes the prompt version and so the
    cache key."""

    instructions: str | None = None
    examples: list[Example] = Field(default_factory=list)


class JudgeDefinition(_Strict):
    """A metric defined in the config (``judges:``), judged like a built-in one.

    ``name``: ``-m NAME`` and the prefix of its output columns (lower case, digits, ``_``).
    ``needs``: the fields it reads: canonical fields (request, context, expected_facts,
    expected_response, response) or other columns of the input; a row lacking one is skipped.
    ``prompt``: a Jinja2 template (sandboxed) over ``request``, ``passages`` (the numbered
    context), ``context`` (the same), ``response``, ``expected_response``, ``expected_facts``
    and the columns in ``needs``; every value arrives fenced as data, with sentences addressed
    to the judge removed. ``system``: the system message (default: a strict, impartial judge).
    ``kind``: ``binary`` (yes/no, 1.0/0.0) or ``scale`` from ``min`` to ``max``. ``threshold``:
    a row passes at score >= threshold (default 0.5 for binary, the middle of a scale).
    ``claims``: the judge lists the response's claims and marks each supported or not; the
    verdict is yes only when every claim is, and ``M_missing`` lists the unsupported ones
    (binary only). ``examples``: few-shot examples, shown as earlier turns of the conversation.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")
    description: str = ""
    needs: list[str] = Field(default_factory=list)
    prompt: str = Field(min_length=1)
    system: str | None = None
    kind: Literal["binary", "scale"] = "binary"
    min: float = 1.0
    max: float = 5.0
    threshold: float | None = None
    claims: bool = False
    examples: list[Example] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> "JudgeDefinition":
        low, high = self.scale
        if self.kind == "scale" and self.min >= self.max:
            raise ValueError(f"judge '{self.name}': min ({self.min:g}) must be below max ({self.max:g})")
        if self.threshold is not None and not low <= self.threshold <= high:
            raise ValueError(f"judge '{self.name}': threshold {self.threshold:g} is outside its scale {low:g}..{high:g}")
        if self.claims and self.kind != "binary":
            raise ValueError(f"judge '{self.name}': claims: true needs kind: binary")
        from ragjudge.judges.custom import check

        check(self)
        return self

    @property
    def scale(self) -> tuple[float, float]:
        return (0.0, 1.0) if self.kind == "binary" else (self.min, self.max)

    @property
    def default_threshold(self) -> float:
        if self.threshold is not None:
            return self.threshold
        low, high = self.scale
        return 0.5 if self.kind == "binary" else low + (high - low) / 2


class Config(_Strict):
    """Everything one ``ragjudge score`` run needs; ``load_config`` builds it."""

    columns: Columns = Field(default_factory=Columns)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    metrics: list[str] = Field(default_factory=lambda: list(METRICS), min_length=1)
    thresholds: dict[str, float] = Field(default_factory=_default_thresholds)
    gate: GateSettings = Field(default_factory=GateSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    chunk_size: int = Field(10_000, ge=1, le=10_000_000)
    judges: list[JudgeDefinition] = Field(default_factory=list)
    extend: dict[str, Extension] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _scalar_pass_rate(cls, data: Any) -> Any:
        # a single min_pass_rate (or the key "*") applies to every metric of the run, those
        # defined in YAML too; named metrics keep their own
        gate = data.get("gate") if isinstance(data, dict) else None
        rate = gate.get("min_pass_rate") if isinstance(gate, dict) else None
        every = rate if isinstance(rate, (int, float)) and not isinstance(rate, bool) else (rate.get("*") if isinstance(rate, dict) else None)
        if every is None:
            return data
        names = list(METRICS)
        metrics = data.get("metrics")
        names += [m for m in metrics if isinstance(m, str)] if isinstance(metrics, list) else []
        judges = data.get("judges")
        names += [j.get("name") for j in judges if isinstance(j, dict) and isinstance(j.get("name"), str)] if isinstance(judges, list) else []
        named = {k: v for k, v in rate.items() if k != "*"} if isinstance(rate, dict) else {}
        expanded = {name: every for name in dict.fromkeys(names)} | named
        return {**data, "gate": {**gate, "min_pass_rate": expanded}}

    @field_validator("metrics")
    @classmethod
    def _no_repeats(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("thresholds")
    @classmethod
    def _fill_thresholds(cls, value: dict[str, float]) -> dict[str, float]:
        merged = _default_thresholds()
        merged.update(value)
        return merged

    @model_validator(mode="after")
    def _known_metrics(self) -> "Config":
        from ragjudge.judges import BUILT_IN, bundled_definitions

        bundled = bundled_definitions()
        names = [d.name for d in self.judges]
        for name in names:
            if name in BUILT_IN or name in bundled:
                fix = f"; to add instructions or examples to it, use extend.{name}" if name in BUILT_IN else ""
                raise ValueError(f"judges: '{name}' is a metric that ships with ragjudge; give your judge another name{fix}")
        twice = [name for i, name in enumerate(names) if name in names[:i]]
        if twice:
            raise ValueError(f"judges: '{twice[0]}' is defined twice")
        known = [*METRICS, *bundled, *names]
        for where, keys in (("metrics", self.metrics), ("thresholds", list(self.thresholds)), ("gate.min_pass_rate", list(self.gate.min_pass_rate))):
            for name in keys:
                if name not in known:
                    raise ValueError(f"unknown metric '{name}'" + (f" in {where}" if where != "metrics" else "")
                                     + f"; use {', '.join(known)} or a judge defined in the config")
        for name in self.extend:
            if name not in BUILT_IN:
                raise ValueError(f"extend: '{name}' is not a built-in metric; use {', '.join(BUILT_IN)} (define your own under judges:)")
        for name, value in self.thresholds.items():
            low, high = self.scale(name)
            if not low <= value <= high:
                raise ValueError(f"{name} threshold must be between {low:g} and {high:g}")
        return self

    def definition(self, metric: str) -> "JudgeDefinition | None":
        """The definition of a metric defined in YAML (the config's ``judges:`` or a bundled
        one), None for a built-in metric."""
        from ragjudge.judges import bundled_definitions

        for item in self.judges:
            if item.name == metric:
                return item
        return bundled_definitions().get(metric)

    def scale(self, metric: str) -> tuple[float, float]:
        """(lowest, highest) score of ``metric``."""
        found = self.definition(metric)
        return found.scale if found is not None else judge_class(metric).scale

    def updated(self, overrides: dict[str, Any]) -> "Config":
        """A copy with ``overrides`` applied (the keywords ``load_config`` takes); settings left
        at their defaults stay unset, so the embedded judge's calibrated values still apply."""
        try:
            return Config.model_validate(_deep_merge(self.model_dump(exclude_unset=True), _nest(overrides)))
        except ValidationError as exc:
            raise ConfigError(_describe(exc, "options")) from None

    def threshold(self, metric: str) -> float:
        """The pass threshold of ``metric`` (a row passes at score >= threshold)."""
        if metric in self.thresholds:
            return self.thresholds[metric]
        found = self.definition(metric)
        return found.default_threshold if found is not None else judge_class(metric).default_threshold

    def min_pass_rate(self, metric: str) -> float:
        """The gate's pass-rate floor (0..1) for ``metric``; 1.0 unless set."""
        return self.gate.min_pass_rate.get(metric, 1.0)


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _where(loc: tuple[Any, ...]) -> str:
    """A validation error's location as the config's keys: ``metrics item 2``, ``judge.timeout``."""
    text = ""
    for part in loc:
        text += f" item {part + 1}" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _has(data: Any, loc: tuple[Any, ...]) -> bool:
    for part in loc:
        if isinstance(part, int):
            return True
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _describe(err: ValidationError, source: str, overrides: dict[str, Any] | None = None, flags: dict[str, str] | None = None) -> str:
    """One line for the first validation error: the key (or the flag, when ``flags`` names the
    one it came from in ``overrides``), what it should be and what it was; no internal paths."""
    first = err.errors()[0]
    loc = tuple(first["loc"])
    where = _where(loc)
    prefix = "" if source == "options" else f"{source}: "
    if first["type"] == "extra_forbidden":
        return f"{prefix}unknown key '{where}'; `ragjudge config show` lists every key"
    message = str(first["msg"]).removeprefix("Value error, ")
    if not loc:  # a check across keys: its message names what it is about
        return prefix + message
    if first["type"] == "string_pattern_mismatch":
        message = "should not be empty or blank"
    message = message.replace("Input should be", "should be").replace("String should", "should")
    given = first.get("input")
    got = f" (got {given!r})" if isinstance(given, (str, int, float, bool)) or given is None else ""
    dotted = ".".join(str(p) for p in loc if not isinstance(p, int))
    if flags and dotted in flags and overrides is not None and _has(overrides, loc):
        return f"{flags[dotted]}: {message}{got}"
    return f"{prefix}invalid value for '{where}': {message}{got}"


def _unique_keys_loader() -> Any:
    """PyYAML's SafeLoader, except that a key given twice in one mapping is an error (YAML
    forbids it; PyYAML would keep the last value silently)."""
    import yaml

    class UniqueKeys(yaml.SafeLoader):
        pass

    def mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        # only the mapping's own plain keys are compared, before merge keys ('<<') are
        # resolved: a key that overrides a merged one is what merging is for; other keys
        # (lists, ...) are left to PyYAML, which refuses unhashable ones
        seen = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key '{key_node.value}' appears twice in one mapping", key_node.start_mark)
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return UniqueKeys


def _nest(overrides: dict[str, Any]) -> dict[str, Any]:
    """Keyword overrides as the config's nested keys: a judge setting given flat
    (``model="openai/gpt-4o-mini"``) goes under ``judge``; config keys stay as they are."""
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in Config.model_fields and key in JudgeSettings.model_fields:
            nested.setdefault("judge", {})[key] = value
        elif key == "judge" and isinstance(value, dict) and isinstance(nested.get("judge"), dict):
            nested["judge"] = {**value, **nested["judge"]}
        else:
            nested[key] = dict(value) if isinstance(value, dict) else value
    return nested


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None, *, flags: dict[str, str] | None = None,
                **settings: Any) -> Config:
    """Read a YAML config (optional) and apply overrides, e.g. from flags.

    ``path``: a YAML file, or the bare name of a bundled config (``BUNDLED``: ``mlflow``,
    ``local``, ``default``) when no such file exists. ``overrides`` (a nested dict) and
    keyword ``settings`` take the config's keys (``metrics=["sufficiency"]``,
    ``judge={"model": ...}``, ``gate={...}``); a judge setting may also be given flat
    (``model="openai/gpt-4o-mini"``, ``concurrency=8``). Returns a validated ``Config``.
    Raises ``ConfigError`` (exit 2) for a missing or unreadable file, YAML that is not a
    mapping, an unknown key (named) or a bad value; ``flags`` (dotted key -> option, e.g.
    ``{"judge.concurrency": "--concurrency"}``) names the option a bad value came from.
    """
    overrides = _deep_merge(_nest(overrides or {}), _nest(settings)) if settings else (_nest(overrides) if overrides else None)
    import yaml

    data: dict[str, Any] = {}
    source = "config"
    if path is not None:
        source = str(path)
        try:
            text = _config_path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc.strerror or exc} (bundled configs: -c {' | '.join(BUNDLED)})") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text; save the config as UTF-8") from None
        try:
            loaded = yaml.load(text, Loader=_unique_keys_loader())  # noqa: S506 (a SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f" line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"{path}:{line} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the config must be a mapping of keys (`ragjudge config show` lists them)")
        data = loaded
    if overrides:
        data = _deep_merge(data, overrides)
        if path is None:
            source = "options"
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, overrides, flags)) from None

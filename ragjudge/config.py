"""The run configuration as read: pydantic models of the YAML config, merged with command-line flags.

A config file holds the same settings as the flags (``configs/default.yaml``, printed by
``ragjudge config show``, documents every key); flags override the file; an unknown key is a
``ConfigError`` (exit 2) that names it. The bundled configs (``BUNDLED``) ship inside the
package, so ``-c mlflow`` works wherever ragjudge is installed.

This module imports no judge (it sits below them, see CONTRIBUTING.md's Layers). It checks the
judge model's settings (``judge:``), the columns, the gate and the cache; what belongs to the
judges stays raw data here (``RawConfig``): each built-in metric's own section
(``sufficiency:``, ``completeness:``), the judges defined in YAML (``judges:``) and the
extensions of built-in prompts (``extend:``). ``ragjudge.settings.Config`` (above both this
module and the judges) types those with the judges' own models (their settings models,
``ragjudge.judges.definitions``) and checks the metrics a config names; ``ragjudge.load_config``
(``ragjudge.settings.load_config``) reads a config through it, which is what a run uses.
``read_raw_config`` here reads one without the judges (``RawConfig``); ``load_as`` reads one as any
subclass of ``RawConfig``, with the same errors.

Why it is over 600 lines: it is the config file's whole shape, every key with its type, default,
range and description (``configs/default.yaml`` and docs/configuration.md are generated from
them), and the messages that name a bad key where it stands; the judges' sections, the layering
of file, ``--set`` and flags (``ragjudge.options``) and the typed checks (``ragjudge.settings``) live apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from ragjudge import metrics as _metrics
from ragjudge.errors import ConfigError
from ragjudge.strict import Strict as _Strict
from ragjudge.diagnosis import parse_bounds
from ragjudge.audit import METRICS as AUDIT_METRICS, parse_bounds as parse_rates
from ragjudge.panel import RULES as PANEL_RULES, default_quorum, member_name, stage_label

METRICS: tuple[str, ...] = _metrics.names()
"""The built-in metrics, each a section of the config named after it: ``ragjudge.metrics.BUILT_IN``,
the one registry (its judges, in this order)."""
DEFAULT_METRICS: tuple[str, ...] = _metrics.defaults()
"""The built-in metrics a run judges when none is named (``Metric.default``); the gate's default
bounds and a single ``min_pass_rate`` number name these, and any other metric the config names."""
FIELDS: tuple[str, ...] = ("id", "request", "context", "expected_facts", "expected_response", "response")

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


# the judge settings that moved to their metric's own section (judge.fact_threshold is now
# sufficiency.fact_threshold), key -> metric: each metric's ``Metric.moved``; the old keys still
# load, with a note naming the new place
MOVED: dict[str, str] = {key: metric.name for metric in _metrics.BUILT_IN for key in metric.moved}

__all__ = ["BUNDLED", "DEFAULT_METRICS", "FIELDS", "METRICS", "MOVED", "PANEL_RULES", "BadEntry", "CacheSettings", "Columns", "GateSettings", "JudgeSettings",
           "PanelMember", "Price", "RawConfig",
           "bundled_config", "load_as", "read_raw_config", "read_file", "validate"]


class BadEntry(ValueError):
    """A check's error about one entry below the value it checks: ``keys``, the entry's dotted
    path below the check's place (a metric under ``gate.max_error_rate``; for a check of the
    whole config, the full key, ``("thresholds", "completeness")``), and ``detail``, the message
    without the entry's name, so that the error is named where that entry was set (the file,
    ``--set KEY``, the option). ``str()``: ``message``, else ``KEY: detail``."""

    def __init__(self, keys: tuple[str, ...], detail: str, message: str | None = None) -> None:
        super().__init__(message if message is not None else f"{keys[-1]}: {detail}")
        self.keys = tuple(keys)
        self.detail = detail


class Columns(_Strict):
    """Where each canonical field lives in the input: a column name or a dotted path into a
    nested object (``inputs.query``). ``None`` means: the same-named column, else a common
    alias (see ``ragjudge.records.ALIASES``)."""

    id: str | None = Field(None, description="the input column holding each row's id (kept in reports, used to match rows); null: the column id")
    request: str | None = Field(None, description="the column holding the user's request; null: request, else question / query / input, ...")
    context: str | None = Field(None, description="the column holding the retrieved context: a string, a list of strings, or a list of "
                                                  "{content|page_content|text, id, doc_uri, metadata}; null: context, else contexts / "
                                                  "retrieved_context / documents, ...")
    expected_facts: str | None = Field(None, description="the column holding the expected facts (a list, or a list encoded as JSON; a "
                                                         "plain string is one fact); null: expected_facts, else facts / key_facts, ...")
    expected_response: str | None = Field(None, description="the column holding the expected (reference) response; null: "
                                                            "expected_response, else ground_truth / reference / expected_output, ...")
    response: str | None = Field(None, description="the column holding the response under test; null: response, else answer / output, ...")


class Price(_Strict):
    """USD per million tokens, for a model litellm's price table does not know (self-hosted,
    new): ``input_per_mtok`` for prompt tokens, ``output_per_mtok`` for completion tokens."""

    input_per_mtok: float = Field(ge=0.0, description="USD per million prompt tokens")
    output_per_mtok: float = Field(ge=0.0, description="USD per million completion tokens")


MODEL_EXAMPLES = {"openai-decisions": "openai-decisions/gpt-6-luna", "systemone": "systemone/jev-latest", "openai": "openai/gpt-4o-mini"}


def named_model(value: str) -> str:
    """``value`` (a judge model string: ``judge.model``, a panel member's, a cascade stage) when
    it names a model after its provider; raises ``ValueError`` for ``PROVIDER/`` with no model
    name (``openai-decisions/``, ``systemone/``: the request would send ``"model": ""``), with an
    example of the provider's (``openai-decisions/gpt-6-luna``, ``systemone/jev-latest``).
    ``local/`` (the embedded judge) is left as it is."""
    provider, sep, name = value.partition("/")
    if sep and provider != "local" and not name.strip():
        example = MODEL_EXAMPLES.get(provider, f"{provider}/MODEL")
        raise ValueError(f"no model name after '{provider}/': give one, e.g. {example}")
    return value


class PanelMember(_Strict):
    """One judge of a panel (``judge.panel``): its model and the call settings it does not share
    with ``judge:`` (each unset one is ``judge:``'s). Written as a mapping, or as the bare model
    string."""

    model: str = Field(description="the member's judge model: any litellm model string")
    name: str | None = Field(None, pattern=r"^[a-z0-9_]+$", description="the member's name in the columns M_panel_NAME_*; null: from "
                                                                        "the model (openai/gpt-4o-mini -> gpt_4o_mini)")
    api_base: str | None = Field(None, description="the member's OpenAI-compatible server; null: judge.api_base")
    transport: Literal["auto", "litellm"] | None = Field(None, description="auto or litellm for this member; null: judge.transport")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="the member's sampling temperature; null: judge.temperature")
    concurrency: int | None = Field(None, ge=1, le=1024, description="the member's calls in flight at once; null: judge.concurrency")

    @field_validator("model")
    @classmethod
    def _named(cls, value: str) -> str:
        return named_model(value)

    @property
    def label(self) -> str:
        """The member's name in columns and reports: ``name``, else ``member_name(model)``."""
        return self.name or member_name(self.model)


class JudgeSettings(_Strict):
    """The judge model and how it is called, for every metric; each field's description is its
    documentation (``docs/configuration.md`` and ``configs/default.yaml`` are generated from
    them). A metric's own settings are in its section (``sufficiency:``, ``completeness:``)."""

    model: str = Field("openai/gpt-4o-mini", description="the judge model: any litellm model string, local/qwen2.5-coder-1.5b for the "
                                                         "embedded offline judge, or a decision model (openai-decisions/gpt-6-luna, "
                                                         "systemone/jev-latest, systemone/solar-decide: every metric of a row in one call, "
                                                         "docs/judges.md#decision-models)")
    transport: Literal["auto", "litellm"] = Field("auto", description="auto: OpenAI-compatible models (openai/..., with or without "
                                                  "api_base) over ragjudge's own aiohttp client (a fraction of litellm's CPU per call), "
                                                  "the others through litellm; litellm: every model through litellm. Verdicts, cache "
                                                  "keys and costs are the same either way")
    api_base: str | None = Field(None, description="base URL of an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    api_key_env: str | None = Field(None, description="the environment variable holding the API key (default: the provider's own, "
                                                      "e.g. OPENAI_API_KEY)")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature (raised to 0.7 when samples > 1 would otherwise "
                                                               "draw the same reply)")
    max_tokens: int = Field(1024, ge=16, description="output tokens per judge reply, at least: a call whose reply writes its input "
                                                     "again (a verdict per fact, the ground truth's statements, the response's "
                                                     "claims) asks for more as its input grows; a reply cut at its limit is an error "
                                                     "row")
    seed: int | None = Field(None, description="sampling seed, for providers that take one")
    timeout: float = Field(120.0, gt=0, allow_inf_nan=False, description="seconds per call before it is retried")
    concurrency: int = Field(16, ge=1, le=1024, description="judge calls in flight at once, across every row and metric (with Ray: per "
                                                          "actor)")
    workers: int = Field(1, ge=1, le=64, description="ignored (one process makes every call); kept so that older configs still load")
    max_retries: int = Field(6, ge=0, le=20, description="retries on 429 (Retry-After and retry-after-ms honoured), 5xx, timeouts and "
                                                        "dropped connections")
    rpm: float | None = Field(None, gt=0, description="cap on requests per minute, evenly spaced (with Ray: split across the actors)")
    samples: int = Field(1, ge=1, le=15, description="judge samples per row and metric; the majority wins and M_agreement is the share "
                                                     "agreeing (completeness's statements call is made once, at temperature)")
    strip_instructions: bool = Field(True, description="remove sentences addressed to the judge ('ignore all previous instructions "
                                                       "...') from passages and responses before judging; column removed_instructions "
                                                       "lists them")
    price: Price | None = Field(None, description="USD per million tokens for a model litellm has no price for, e.g. "
                                                  "{input_per_mtok: 0.5, output_per_mtok: 1.5}; fills M_cost_usd")
    max_cost: float | None = Field(None, gt=0.0, allow_inf_nan=False, description="budget in USD: once spent, no new call starts and "
                                                                                "the remaining rows are errors 'budget reached' (exit "
                                                                                "3); a re-run pays only for them")
    local_model_path: str | None = Field(None, description="embedded judge: a GGUF file to use instead of the bundled model")
    batch: bool = Field(False, description="judge through the provider's batch API (OpenAI-compatible models, Anthropic's): half the "
                                           "price, replies within 24 hours; a run submits and exits 4 until the replies are in "
                                           "(docs/batch.md)")
    batch_fallback: Literal["resubmit", "direct"] = Field("resubmit", description="with batch: a call the batch failed or let expire "
                                                                                  "is submitted again (resubmit, up to 3 times) or "
                                                                                  "judged directly at the full price (direct)")
    batch_poll: float = Field(30.0, gt=0, allow_inf_nan=False, description="with batch and --batch-wait: seconds between polls of the "
                                                                           "batches' status")
    panel: list[PanelMember] = Field(default_factory=list, description="a panel of judge models that decide each row together instead "
                                                                      "of judge.model: at least 2, each a model string or {model, name, "
                                                                      "api_base, transport, temperature, concurrency} (docs/judges.md)")
    panel_rule: Literal["majority", "all", "any", "mean"] = Field("majority", description="how the panel decides: majority (a tie is "
                                                                 "no), all, any, or mean (the lower median of the members' scores)")
    panel_quorum: int | None = Field(None, ge=1, description="members that must answer for a verdict; below it the row is an error; "
                                                            "null: more than half of the members")
    cascade: list[str] = Field(default_factory=list, description="a cascade of judges instead of judge.model: the first (a judge that "
                                                                "gives P(yes): the embedded judge, a chat model with log-probabilities, "
                                                                "a decision model) judges every row; a row whose P(yes) lies in "
                                                                "cascade_band goes to the next stage: a model string, or panel (the "
                                                                "configured judge.panel, last only); at least 2 (docs/judges.md)")
    cascade_band: tuple[float, float] = Field((0.2, 0.8), description="[LO, HI]: a cascade stage's P(yes) (P(pass) of a score) in this "
                                                                      "band, bounds included, sends the row to the next stage; the last "
                                                                      "stage's in it marks the row to label (--to-label)")

    @field_validator("panel", mode="before")
    @classmethod
    def _bare_models(cls, value: Any) -> Any:  # a member may be written as its model string (--panel a,b,c)
        if isinstance(value, str):
            given, value = value, [part.strip() for part in value.split(",") if part.strip()]
            if not value:
                raise ValueError(f"a panel lists its members' models, comma-separated ({given!r} names none); for one judge set "
                                 "judge.model instead")
        if isinstance(value, list):
            return [{"model": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("panel")
    @classmethod
    def _panel_members(cls, value: list[PanelMember]) -> list[PanelMember]:
        if len(value) == 1:
            raise ValueError("a panel needs at least 2 members; for one judge set judge.model instead")
        seen: dict[str, int] = {}
        for position, member in enumerate(value):
            if member.model.startswith("local/"):
                raise BadEntry((position, "model"), "the embedded judge cannot sit on a panel; use API or OpenAI-compatible models")
            if member.label in seen:
                raise BadEntry((position, "name"), f"two members are named '{member.label}' (members {seen[member.label] + 1} and "
                                                   f"{position + 1}); give one a name of its own in the config's judge.panel, e.g. "
                                                   f"- {{model: {member.model}, name: {member.label}_2}} (--panel lists models, not names)")
            seen[member.label] = position
        return value

    @field_validator("cascade", mode="before")
    @classmethod
    def _cascade_stages(cls, value: Any) -> Any:  # --cascade a,b: the stages comma-separated
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("cascade_band", mode="before")
    @classmethod
    def _band_text(cls, value: Any) -> Any:  # --cascade-band 0.2,0.8
        if isinstance(value, str):
            parts = [part.strip() for part in value.split(",")]
            if len(parts) != 2:
                raise ValueError(f"a cascade band is LO,HI, two probabilities, e.g. 0.2,0.8 ({value!r})")
            return parts
        return value

    @model_validator(mode="after")
    def _cascade_fits(self) -> "JudgeSettings":
        low, high = self.cascade_band
        if not 0.0 <= low <= high <= 1.0:
            raise BadEntry(("cascade_band",), f"[{low:g}, {high:g}] is no band of probabilities: give LO,HI with 0 <= LO <= HI <= 1, "
                                              "e.g. 0.2,0.8")
        if not self.cascade:
            return self
        if len(self.cascade) == 1:
            raise BadEntry(("cascade",), "a cascade needs at least 2 stages (FIRST,THEN); for one judge set judge.model instead")
        seen: dict[str, int] = {}
        for position, stage in enumerate(self.cascade):
            if stage == "panel" and position != len(self.cascade) - 1:
                raise BadEntry(("cascade", position), "panel decides by its members' votes and gives no P(yes) to escalate on: it can "
                                                      "only be a cascade's last stage")
            if stage == "panel" and not self.panel:
                raise BadEntry(("cascade", position), "the stage 'panel' is the configured panel: set judge.panel (--panel MODEL,MODEL)")
            try:
                named_model(stage)
            except ValueError as exc:
                raise BadEntry(("cascade", position), str(exc)) from None
            if stage.startswith("local/") and position:
                raise BadEntry(("cascade", position), "the embedded judge can only be a cascade's first stage")
            label = stage_label(stage)
            if label in seen:
                raise BadEntry(("cascade", position), f"stages {seen[label] + 1} and {position + 1} are both '{label}': a stage's "
                                                      "cache keys are its model's, so the same model twice would decide nothing new")
            seen[label] = position
        if self.batch:
            raise BadEntry(("batch",), "a cascade cannot judge through the batch API: its later stages are asked only once the first "
                                       "stage's replies are in; run the first stage with --batch alone, then the cascade on its cache")
        return self

    @model_validator(mode="after")
    def _quorum_fits(self) -> "JudgeSettings":
        if self.panel_quorum is not None and self.panel and self.panel_quorum > len(self.panel):
            raise BadEntry(("panel_quorum",), f"{self.panel_quorum} is more than the panel's {len(self.panel)} members; set it to "
                                              f"1..{len(self.panel)}")
        return self

    @property
    def quorum(self) -> int:
        """The members that must answer for a panel's verdict: ``panel_quorum``, else more than
        half of ``panel``; 1 without a panel."""
        if not self.panel:
            return 1
        return self.panel_quorum if self.panel_quorum is not None else default_quorum(len(self.panel))

    @property
    def judge_model(self) -> str:
        """The judge as the ``judge_model`` column, the summary and the reports name it: ``model``,
        or with a panel ``panel: MODEL, MODEL, ...``."""
        if self.cascade:
            return "cascade: " + " -> ".join(self.stage_model(stage) for stage in self.cascade)
        return "panel: " + ", ".join(member.model for member in self.panel) if self.panel else self.model

    def stage_model(self, stage: str) -> str:
        """A cascade ``stage`` as the judge names it: its model string, or the panel's ``panel:
        MODEL, MODEL``."""
        return "panel: " + ", ".join(member.model for member in self.panel) if stage == "panel" else stage

    def stage(self, stage: str) -> "JudgeSettings":
        """The settings one cascade ``stage`` (a model string, or ``panel``) is judged with: these,
        with the stage's model (the panel keeps ``panel``) and no cascade."""
        if stage == "panel":
            return self.model_copy(update={"cascade": []})
        return self.model_copy(update={"model": stage, "panel": [], "cascade": []})

    def member(self, member: PanelMember) -> "JudgeSettings":
        """The settings one panel ``member``'s calls are made with: these, with the member's model
        and its own api_base, transport, temperature and concurrency where set, and no panel."""
        own = {key: getattr(member, key) for key in ("api_base", "transport", "temperature", "concurrency")
               if getattr(member, key) is not None}
        return self.model_copy(update={"model": member.model, "panel": [], **own})

    @field_validator("model")
    @classmethod
    def _mlflow_model_form(cls, value: str) -> str:  # MLflow's "openai:/gpt-4.1-mini" is litellm's "openai/gpt-4.1-mini"
        provider, sep, name = value.partition(":/")
        value = f"{provider}/{name}" if sep and provider.replace("_", "").replace("-", "").isalnum() and name[:1] not in ("", "/") else value
        return named_model(value)


def _per_metric(value: float | dict[str, float], metric: str, default: float) -> float:
    if not isinstance(value, dict):
        return float(value)
    return float(value.get(metric, value.get("*", default)))


class GateSettings(_Strict):
    """Pass-rate floors (0..1, per metric), the error-rate ceiling (0..1, per metric: errors /
    judged rows) and the skip-rate ceiling (0..1, per metric: skipped / all rows; 1.0 never
    fails), e.g. 0.1 to fail a run where a retriever left many rows without context."""

    min_pass_rate: dict[str, float] = Field(default_factory=lambda: {m.name: m.min_pass_rate for m in _metrics.BUILT_IN},
                                            description="per metric, the lowest pass rate over ok rows that passes the gate (0..1); a "
                                                        "single number applies to every metric")
    max_error_rate: float | dict[str, float] = Field(0.0, description="per metric, the highest share of judged rows with status error "
                                                                     "(errors / (ok + errors)), 0..1; a single number applies to every "
                                                                     "metric, e.g. {completeness: 0.1, '*': 0.0}")
    max_skip_rate: float | dict[str, float] = Field(1.0, description="per metric, the highest share of rows skipped (1.0: never fails), "
                                                                    "0..1; a single number applies to every metric, e.g. {completeness: 0.25}")
    max_diagnosis: dict[str, float] = Field(default_factory=dict,
                                            description="per diagnosis (ok, generation, retrieval, beyond_context), the highest share "
                                                        "among the rows with a diagnosis that passes the gate (0..1), e.g. {retrieval: 0.1}; "
                                                        "none by default")
    max_rate: dict[str, float] = Field(default_factory=dict,
                                       description="the abstention audit's rates (answered_insufficient: answered among the rows whose "
                                                   "context was insufficient; abstained_sufficient: declined among the rows whose context "
                                                   "was sufficient), each the highest share that passes the gate (0..1), e.g. "
                                                   "{answered_insufficient: 0.1}; needs sufficiency, abstention and completeness; none by "
                                                   "default")
    target_accuracy: float | None = Field(None, gt=0.0, le=1.0,
                                          description="the abstention audit's selective-generation curve: the accuracy among answered "
                                                      "rows asked for; the summary names the lowest threshold on the score that reaches it "
                                                      "(0..1]; null: the curve alone")
    audit: list[Literal["abstention"]] = Field(default_factory=list,
                                               description="audits to run: abstention (--audit abstention) turns the abstention audit on, "
                                                           "adding to the metrics those of sufficiency, abstention and completeness not "
                                                           "named (a note says which); the audit is on without it whenever the run judges "
                                                           "all three")
    app_confidence: str | None = Field(None, description="the input column holding the application's own confidence in its response "
                                                         "(a number per row): the score of the abstention audit's curve in place of the "
                                                         "sufficiency probability; null: the sufficiency probability")

    allow_unjudged: list[str] = Field(default_factory=list,
                                      description="metrics (or 'diagnosis', or '*' for all) whose bounds may measure nothing: "
                                                  "a pass-rate or error-rate bound set on a metric that judged no row (or a "
                                                  "max_diagnosis bound on a run where no row has a diagnosis) fails the gate "
                                                  "(exit 1) unless the metric is listed here")

    gate_on: Literal["judge", "corrected"] | dict[str, Literal["judge", "corrected"]] = Field(
        "judge", description="what min_pass_rate gates on: judge (the judge's pass rate) or corrected (the lower bound of the 95% "
                             "interval of the pass rate corrected by the labels: labels:; docs/calibration.md); per metric as a map, "
                             "e.g. {sufficiency: corrected, '*': judge}")
    few_labels: Literal["fail", "judge"] = Field("fail", description="with gate_on: corrected, a metric with too few labelled rows for "
                                                                      "an interval (30): fail its pass-rate check (fail), or gate on the "
                                                                      "judge's pass rate, saying so (judge)")

    _named: frozenset[str] = PrivateAttr(default_factory=frozenset)  # metrics min_pass_rate names (not only through one number or "*")

    def __eq__(self, other: object) -> bool:  # the values, as pydantic compares them, less how min_pass_rate was written
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

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
                raise BadEntry((metric,), f"{rate} is not between 0 and 1")
        return value

    @field_validator("max_error_rate", "max_skip_rate")
    @classmethod
    def _rates_in_unit_range(cls, value: float | dict[str, float]) -> float | dict[str, float]:
        if not isinstance(value, dict):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{value} is not between 0 and 1")
            return value
        for metric, rate in value.items():
            if not 0.0 <= rate <= 1.0:
                raise BadEntry((metric,), f"{rate} is not between 0 and 1", None if metric != "*" else f"{rate} is not between 0 and 1")
        return value

    def error_ceiling(self, metric: str) -> float:
        """``max_error_rate`` for ``metric`` (0..1): its own, else the key "*", else 0.0."""
        return _per_metric(self.max_error_rate, metric, 0.0)

    def gates_on(self, metric: str) -> str:
        """``gate_on`` for ``metric``: its own, else the key "*", else judge."""
        value = self.gate_on
        return value if isinstance(value, str) else value.get(metric, value.get("*", "judge"))

    def skip_ceiling(self, metric: str) -> float:
        """``max_skip_rate`` for ``metric`` (0..1): its own, else the key "*", else 1.0."""
        return _per_metric(self.max_skip_rate, metric, 1.0)

    @field_validator("max_rate")
    @classmethod
    def _known_rates(cls, value: dict[str, float]) -> dict[str, float]:
        for name, bound in value.items():
            try:
                parse_rates({name: bound})
            except ValueError as exc:
                raise BadEntry((name,), str(exc).removeprefix(f"{name}: "), str(exc)) from None
        return parse_rates(value)

    @field_validator("max_diagnosis")
    @classmethod
    def _known_diagnoses(cls, value: dict[str, float]) -> dict[str, float]:
        for name, bound in value.items():  # one entry at a time: the error is named where that entry was set
            try:
                parse_bounds({name: bound})
            except ValueError as exc:
                raise BadEntry((name,), str(exc).removeprefix(f"{name}: "), str(exc)) from None
        return parse_bounds(value)


class CacheSettings(_Strict):
    """The response cache: ``enabled``, and ``dir`` (None: the per-user cache folder)."""

    enabled: bool = Field(True, description="read and write the on-disk response cache")
    dir: str | None = Field(None, pattern=r"\S", description="the cache folder; null: the per-user cache folder (~/.cache/ragjudge on "
                                                              "Linux)")


class _RawConfigBase(_Strict):
    """``RawConfig`` less the built-in metrics' sections, which ``RawConfig`` adds from the
    registry (``ragjudge.metrics``)."""

    columns: Columns = Field(default_factory=Columns, description="where each canonical field is in the input")
    judge: JudgeSettings = Field(default_factory=JudgeSettings, description="the judge model and how it is called")
    metrics: list[str] = Field(default_factory=lambda: list(_metrics.defaults()), min_length=1,
                               description="the metrics to judge: sufficiency, completeness, passage_relevance, sufficient_k, abstention, groundedness or a judge defined under judges:")
    thresholds: dict[str, float] = Field(default_factory=dict,
                                         description="per metric, a row passes at score >= threshold (sufficiency: 1.0 yes / 0.0 no; "
                                                     "completeness: 1..5, Azure AI Evaluation's scale)")
    labels: dict[str, str] = Field(default_factory=dict, description="per metric, the column of the team's own labels (sufficiency: "
                                                                     "yes/no, true/false or 1/0; a 1..5 metric: a rating): the labelled "
                                                                     "rows correct the judge's pass rate, with a 95% interval "
                                                                     "(docs/calibration.md), e.g. {sufficiency: human_label}")
    gate: GateSettings = Field(default_factory=GateSettings, description="what fails the run (exit 1)")
    cache: CacheSettings = Field(default_factory=CacheSettings, description="the response cache")
    chunk_size: int = Field(10_000, ge=1, le=10_000_000, description="rows read, judged and written at a time (memory stays flat)")
    judges: list[dict[str, Any]] = Field(default_factory=list, description="metrics of your own, each a Jinja2 prompt (see "
                                                                           "docs/custom-judges.md)")
    extend: dict[str, dict[str, Any]] = Field(default_factory=dict, description="per built-in metric, domain instructions and few-shot "
                                                                          "examples added to its prompt (a new prompt version)")

    _notes: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _moved_keys(cls, data: Any, handler: Any) -> "RawConfig":
        # judge.KEY of a setting that moved (MOVED) is read as METRIC.KEY, with a note; a
        # value the section sets itself wins; a bad value is reported where it was written
        moved: dict[tuple[str, str], tuple[str, str]] = {}
        judge = data.get("judge") if isinstance(data, dict) else None
        if isinstance(judge, dict) and any(key in MOVED for key in judge):
            data = {**data, "judge": {k: v for k, v in judge.items() if k not in MOVED}}
            for key, value in judge.items():
                metric = MOVED.get(key)
                if metric is None:
                    continue
                section = data.get(metric)
                if section is None or isinstance(section, dict):
                    data[metric] = {key: value, **(section or {})}
                moved[(metric, key)] = ("judge", key)
        try:
            config = handler(data)
        except ValidationError as exc:
            if not moved:
                raise
            errors = []
            for error in exc.errors():
                loc = tuple(error["loc"])
                detail = {"type": error["type"], "loc": moved.get(loc[:2], loc[:2]) + loc[2:], "input": error.get("input")}
                if "ctx" in error:
                    detail["ctx"] = error["ctx"]
                errors.append(detail)
            raise ValidationError.from_exception_data(exc.title, errors) from None
        config._notes = [*config._notes, *(f"note: judge.{key} is now {metric}.{key} (the old key still works)"
                                           for (metric, key) in moved)]
        return config

    @property
    def notes(self) -> list[str]:
        """What the reader of the run should know about this config: each key read from an
        old place (``note: judge.fact_threshold is now sufficiency.fact_threshold ...``)."""
        return list(self._notes)

    @model_validator(mode="wrap")
    @classmethod
    def _scalar_pass_rate(cls, data: Any, handler: Any) -> Any:
        # a single min_pass_rate (or the key "*") applies to every metric of the run, those
        # defined in YAML too; named metrics keep their own, and the gate remembers which were named
        gate = data.get("gate") if isinstance(data, dict) else None
        rate = gate.get("min_pass_rate") if isinstance(gate, dict) else None
        every = rate if isinstance(rate, (int, float)) and not isinstance(rate, bool) else (rate.get("*") if isinstance(rate, dict) else None)
        named = [k for k in rate if k != "*"] if isinstance(rate, dict) else []
        if every is not None:
            names = list(METRICS)
            metrics = data.get("metrics")
            names += [m for m in metrics if isinstance(m, str)] if isinstance(metrics, list) else []
            judges = data.get("judges")
            names += [j.get("name") for j in judges if isinstance(j, dict) and isinstance(j.get("name"), str)] if isinstance(judges, list) else []
            own = {k: v for k, v in rate.items() if k != "*"} if isinstance(rate, dict) else {}
            data = {**data, "gate": {**gate, "min_pass_rate": {name: every for name in dict.fromkeys(names)} | own}}
        config = handler(data)
        if isinstance(config, RawConfig) and rate is not None:
            config.gate._named = frozenset(named)
        return config

    def gate_given(self) -> dict[str, Any]:
        """The gate's settings as they were given (JSON values, the keys set), its
        ``min_pass_rate`` as written: one number for every metric stays one (the key ``*``), a
        metric named keeps its own, so that reading it back gives the same gate (which bounds
        count as set: ``bounds_set``). A manifest or a scored table records this."""
        gate = self.gate.model_dump(mode="json", exclude_unset=True)
        if "min_pass_rate" in gate:
            rates, named = self.gate.min_pass_rate, self.gate._named
            every = {value for metric, value in rates.items() if metric not in named}
            gate["min_pass_rate"] = ({"*": every.pop()} if len(every) == 1 else {}) | {metric: rates[metric] for metric in sorted(named)}
        return gate

    def bounds_set(self, metric: str) -> tuple[str, ...]:
        """The bounds on judged rows that the config (or an option) set for ``metric`` and that can
        fail: ``min_pass_rate`` above 0, ``max_error_rate`` below 1, each given for the metric by
        name, or as one number (or the key "*") for every metric when the metrics were asked for
        (``metrics`` set: ``-m``). A metric that judged no row fails them (``ragjudge.gate``),
        unless ``gate.allow_unjudged`` lists it."""
        gate = self.gate
        if metric in gate.allow_unjudged or "*" in gate.allow_unjudged:
            return ()
        asked = "metrics" in self.model_fields_set
        out = []
        if "min_pass_rate" in gate.model_fields_set and metric in gate.min_pass_rate and gate.min_pass_rate[metric] > 0 and \
                (metric in gate._named or asked):
            out.append("min_pass_rate")
        rate = gate.max_error_rate
        if "max_error_rate" in gate.model_fields_set and gate.error_ceiling(metric) < 1 and \
                ((isinstance(rate, dict) and metric in rate) or (asked and (not isinstance(rate, dict) or "*" in rate))):
            out.append("max_error_rate")
        return tuple(out)

    @field_validator("metrics")
    @classmethod
    def _no_repeats(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _audit_metrics(self) -> Self:
        # gate.audit: [abstention] (--audit abstention) judges the audit's metrics the run does not name; which were
        # added is a note. Set without validation so that ``metrics`` stays unset where it was (bounds_set reads that)
        if "abstention" in self.gate.audit:
            missing = [m for m in AUDIT_METRICS if m not in self.metrics]
            if missing:
                self.__dict__["metrics"] = [*self.metrics, *missing]
                self._notes = [*self._notes, f"note: --audit abstention added {', '.join(missing)} to the metrics (the audit judges "
                                             "sufficiency, abstention and completeness)"]
        return self

    def updated(self, overrides: dict[str, Any]) -> Self:
        """A copy (of the same class) with ``overrides`` applied (the keywords ``load_config``
        takes); settings left at their defaults stay unset, so the embedded judge's calibrated
        values still apply."""
        nested = _nest(overrides)
        try:
            merged = _deep_merge(self.model_dump(exclude_unset=True), nested)
            updated = type(self).model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, "options", data=merged)) from None
        updated._notes = list(dict.fromkeys([*self._notes, *updated._notes]))
        if "min_pass_rate" not in (nested.get("gate") or {}):  # the dump names every metric: keep which the config named
            updated.gate._named = self.gate._named
        return updated

    def threshold_set(self, metric: str) -> bool:
        """Whether the config (or a flag) set ``metric``'s threshold, rather than leaving it at
        its default."""
        return "thresholds" in self.model_fields_set and metric in self.thresholds

    def min_pass_rate(self, metric: str) -> float:
        """The gate's pass-rate floor (0..1) for ``metric``; 1.0 unless set."""
        return self.gate.min_pass_rate.get(metric, 1.0)


RawConfig = create_model(
    "RawConfig", __base__=_RawConfigBase, __module__=__name__,
    __doc__="""Everything one ``ragjudge score`` run needs, as read: the sections the judges own (one per
    built-in metric of ``ragjudge.metrics``, ``judges``, ``extend``) are raw data here, typed and
    checked by ``ragjudge.settings.Config`` (this class's subclass, the one a run uses);
    ``read_raw_config`` builds this one, ``ragjudge.load_config`` that one.""",
    **{metric.name: (dict[str, Any], Field(default_factory=dict, description=metric.about)) for metric in _metrics.BUILT_IN},
)


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


# the name pydantic gives a union's branch in an error's location (gate.max_error_rate.float, ...dict[str,float].completeness)
_BRANCH = re.compile(r"(float|int|str|bool|none|dict|list|tuple|set|decimal|function-[a-z-]+|constrained-[a-z-]+|lax-[a-z-]+|json-or-python)(\[.*\])?")


def _keys(data: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], int | None]:
    """An error's location as the config's keys, the union branches pydantic names in it left
    out (``gate.max_error_rate.float`` is ``gate.max_error_rate``), and the position of the first
    branch left out (None: none). ``data``: the values validated (a key of theirs is a key,
    whatever its name)."""
    out: list[Any] = []
    branch = None
    node = data
    for position, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(part, str) and _BRANCH.fullmatch(part):
            branch = position if branch is None else branch
            continue
        else:
            node = None
        out.append(part)
    return tuple(out), branch


def _shown(err: ValidationError, data: Any) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The error a message shows and its location as the config's keys (``_keys``): the first,
    except that where every branch of a union failed, the branch that reached furthest into the
    value given (``{completeness: x}``: its entry, not "should be a valid number")."""
    errors = err.errors()
    first = errors[0]
    loc, branch = _keys(data, tuple(first["loc"]))
    if branch is not None:
        for other in errors[1:]:
            keys, at = _keys(data, tuple(other["loc"]))
            if at == branch and tuple(other["loc"])[:branch] == tuple(first["loc"])[:branch] and len(keys) > len(loc):
                first, loc = other, keys
    return first, loc


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


def _describe(err: ValidationError, source: str, overrides: dict[str, Any] | None = None, flags: dict[str, str] | None = None, *,
              data: Any = None, setter: Callable[[str], str | None] | None = None) -> str:
    """One line for the first validation error: the key (or what set it), what it should be and
    what it was; no internal paths, no union branch (``data``: the values validated). An unknown
    key is named with every other unknown key set in the same place (the file, or the same
    option), so that each typo is found in one run. What set
    it: ``setter`` (dotted key -> the option, or ``--set KEY``, that set it; None for the file
    or a default), else ``flags`` (dotted key -> option) for a key that ``overrides`` gives."""
    first, loc = _shown(err, data)
    entry = first.get("ctx", {}).get("error") if first["type"] == "value_error" else None
    detail = None
    if isinstance(entry, BadEntry):  # a check's error about one entry below its place: named at that entry
        loc, detail = loc + entry.keys, entry.detail
    where = _where(loc)
    prefix = "" if source == "options" else f"{source}: "

    def set_by(loc: tuple[Any, ...]) -> str | None:
        dotted = ".".join(str(p) for p in loc if not isinstance(p, int))
        if setter is not None and dotted:
            return setter(dotted)
        if flags and dotted in flags and overrides is not None and _has(overrides, loc):
            return flags[dotted]
        return None

    by = set_by(loc)
    if first["type"] == "extra_forbidden":  # every unknown key set in the same place, in one message: each typo in one run
        unknown = [where, *(_where(keys) for keys in (_keys(data, tuple(other["loc"]))[0] for other in err.errors()[1:]
                                                      if other["type"] == "extra_forbidden") if set_by(keys) == by)]
        unknown = list(dict.fromkeys(unknown))
        return (f"{f'{by}: ' if by else prefix}unknown key{'s' if len(unknown) > 1 else ''} {', '.join(repr(k) for k in unknown)}; "
                "`ragjudge config show` lists every key")
    message = str(first["msg"]).removeprefix("Value error, ")
    if not first["loc"]:  # a check across keys: its message names what it is about
        return f"{by}: {message}" if by else prefix + message
    if first["type"] == "string_pattern_mismatch":
        wanted = str((first.get("ctx") or {}).get("pattern", ""))
        message = "should be lower-case letters, digits and _ only" if wanted == "^[a-z0-9_]+$" else "should not be empty or blank"
    message = message.replace("Input should be", "should be").replace("String should", "should")
    given = first.get("input")
    got = f" (got {given!r})" if isinstance(given, (str, int, float, bool)) or given is None else ""
    if by is not None:  # --set KEY names the entry itself; an option its value as given (--min-pass-rate: completeness: 2.0 ...)
        said = detail if detail is not None and by.startswith('--set ') else message
        return f"{by}: {said}{'' if repr(given) in said else got}"  # a message that names the value already: once
    said = detail if detail is not None else message
    return f"{prefix}invalid value for '{where}': {said}{'' if repr(given) in said else got}"


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
    (``model="openai/gpt-4o-mini"``) goes under ``judge``, a metric's own setting given flat
    (``fact_threshold=0.3``) under its section (``sufficiency``); config keys stay as they are."""
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in RawConfig.model_fields and key in JudgeSettings.model_fields:
            nested.setdefault("judge", {})[key] = value
        elif key not in RawConfig.model_fields and key in MOVED:
            nested.setdefault(MOVED[key], {})[key] = value
        elif key == "judge" and isinstance(value, dict) and isinstance(nested.get("judge"), dict):
            nested["judge"] = {**value, **nested["judge"]}
        else:
            nested[key] = dict(value) if isinstance(value, dict) else value
    return nested


def read_raw_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None, *, flags: dict[str, str] | None = None,
                    **settings: Any) -> RawConfig:
    """The config as read, without the judges' checks (``RawConfig``): ``load_as(RawConfig,
    ...)``. A run reads its config with ``ragjudge.load_config`` (``ragjudge.settings``), which
    takes the same arguments and also checks the metrics, their sections and definitions."""
    return load_as(RawConfig, path, overrides, flags=flags, **settings)


C = TypeVar("C", bound=RawConfig)


def read_file(path: str | Path) -> dict[str, Any]:
    """The keys of the YAML config file ``path`` (or of a bundled config, by its bare name), as
    written: a dict, not yet checked. Raises ``ConfigError`` (exit 2) for a missing or
    unreadable file, text that is not UTF-8, YAML that is not valid (naming the line), a key
    given twice in one mapping, or a document that is not a mapping."""
    import yaml  # only with a config file: 30 ms of a small run's start-up

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
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the config must be a mapping of keys (`ragjudge config show` lists them)")
    return loaded


def load_as(model: type[C], /, path: str | Path | None = None, overrides: dict[str, Any] | None = None, *,
            flags: dict[str, str] | None = None, **settings: Any) -> C:
    """Read a YAML config (optional) and apply overrides, e.g. from flags, validated as
    ``model`` (``RawConfig`` or a subclass, e.g. ``ragjudge.settings.Config``).

    ``path``: a YAML file, or the bare name of a bundled config (``BUNDLED``: ``mlflow``,
    ``local``, ``default``) when no such file exists. ``overrides`` (a nested dict) and
    keyword ``settings`` take the config's keys (``metrics=["sufficiency"]``,
    ``judge={"model": ...}``, ``sufficiency={"fact_threshold": 0.3}``, ``gate={...}``); a
    judge setting or a built-in metric's own setting may also be given flat
    (``model="openai/gpt-4o-mini"``, ``concurrency=8``, ``fact_threshold=0.3``). The old place
    of a metric's setting (``judge.fact_threshold``) still loads, with a note in
    ``notes``. Returns a validated ``model``.
    Raises ``ConfigError`` (exit 2) for a missing or unreadable file, YAML that is not a
    mapping, an unknown key (named) or a bad value; ``flags`` (dotted key -> option, e.g.
    ``{"judge.concurrency": "--concurrency"}``) names the option a bad value came from.
    """
    overrides = _deep_merge(_nest(overrides or {}), _nest(settings)) if settings else (_nest(overrides) if overrides else None)
    data: dict[str, Any] = read_file(path) if path is not None else {}
    source = "config" if path is None else str(path)
    if overrides:
        data = _deep_merge(data, overrides)
        if path is None:
            source = "options"
    return validate(model, data, source, overrides, flags)


def validate(model: type[C], data: dict[str, Any], source: str = "config", given: dict[str, Any] | None = None,
             flags: dict[str, str] | None = None, setter: Callable[[str], str | None] | None = None) -> C:
    """``data`` (the config's keys) validated as ``model``. Raises ``ConfigError`` (exit 2) for
    the first bad key, named as it was written: in ``source`` (the file, or ``options``), or as
    what set it: ``setter`` (dotted key -> the option or ``--set KEY``; None: the file or a
    default), else the option (``flags``: dotted key -> option) that set it in ``given`` (the
    keys the options set)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, given, flags, data=data, setter=setter)) from None

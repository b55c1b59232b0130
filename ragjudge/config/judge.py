"""The judge's section of the config (``judge:``): the model and how it is called
(``JudgeSettings``), a panel's members (``PanelMember``), a model's price (``Price``). Part of
``ragjudge.config``, which re-exports every name."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from ragjudge.strict import Strict as _Strict
from ragjudge.panel import default_quorum, member_name, stage_label
from ragjudge.config.base import BadEntry

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


__all__ = ["MODEL_EXAMPLES", "JudgeSettings", "PanelMember", "Price", "named_model"]

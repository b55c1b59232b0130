"""The config file's shape: ``RawConfig`` (every key with its type, default, range and
description: configs/default.yaml and docs/configuration.md are generated from them) with its
sections ``Columns``, ``GateSettings`` and ``CacheSettings`` (the judge's: ``ragjudge.config.judge``);
the built-in metrics' own sections stay raw here (``ragjudge.settings`` types them). Part of
``ragjudge.config``, which re-exports every name."""

from __future__ import annotations

from typing import Any, Literal, Self

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
from ragjudge.config.base import METRICS, MOVED, BadEntry
from ragjudge.config.judge import JudgeSettings
from ragjudge.config.messages import _deep_merge, _describe

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
                               description="the metrics to judge: sufficiency, completeness, passage_relevance, sufficient_k, abstention, pairwise (with pairwise.responses), groundedness or a judge defined under judges:")
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
        """The gate's pass-rate floor (0..1) for ``metric``: as set, else its built-in floor
        (``ragjudge.metrics.Metric.min_pass_rate``: 0.0 for abstention and pairwise; a map that names
        other metrics does not replace it), 0.0 for a judge defined with ``per: pair`` (a comparison,
        as pairwise), else 1.0."""
        floors = {m.name: m.min_pass_rate for m in _metrics.BUILT_IN}
        for item in self.judges:  # raw (dicts) here, JudgeDefinitions in ragjudge.settings.Config
            found = item if isinstance(item, dict) else {"name": getattr(item, "name", None), "per": getattr(item, "per", None)}
            if found.get("per") == "pair" and found.get("name"):
                floors[found["name"]] = 0.0
        return self.gate.min_pass_rate.get(metric, floors.get(metric, 1.0))


RawConfig = create_model(
    "RawConfig", __base__=_RawConfigBase, __module__=__name__,
    __doc__="""Everything one ``ragjudge score`` run needs, as read: the sections the judges own (one per
    built-in metric of ``ragjudge.metrics``, ``judges``, ``extend``) are raw data here, typed and
    checked by ``ragjudge.settings.Config`` (this class's subclass, the one a run uses);
    ``read_raw_config`` builds this one, ``ragjudge.load_config`` that one.""",
    **{metric.name: (dict[str, Any], Field(default_factory=dict, description=metric.about)) for metric in _metrics.BUILT_IN},
)

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


__all__ = ["CacheSettings", "Columns", "GateSettings", "RawConfig"]

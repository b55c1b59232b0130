"""The run's config, typed by the judges: ``Config`` and ``load_config`` (``ragjudge.load_config``).

``ragjudge.config`` reads a config (YAML, flags, keywords) and checks everything that is not a
judge's (``RawConfig``); it imports no judge, so that the judges may import it. This module sits
above both (in the judges' layer, importing ``ragjudge.judges`` and ``ragjudge.config``; neither
imports it) and completes the config with what the judges own:

- each built-in metric's section (``sufficiency:``, ``completeness:``) is read by that judge's
  own settings model (``judge_class(NAME).Settings``);
- ``judges:`` holds ``JudgeDefinition``s and ``extend:`` ``Extension``s
  (``ragjudge.judges.definitions``), each checked when made;
- the metrics a config names (``metrics``, ``thresholds``, ``gate.min_pass_rate``) must be
  built-in, bundled or defined under ``judges:``; a threshold must lie on its metric's scale;
  an extension's examples must suit its metric.

Every check raises ``ConfigError`` (exit 2) when the config is loaded, with the same messages
as before the split. A run (``Scorer``, ``evaluate``, the CLI) uses this ``Config``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, create_model, model_validator

from ragjudge.audit import RATES as AUDIT_RATES
from ragjudge.config import DEFAULT_METRICS, METRICS, BadEntry, RawConfig, _describe, load_as
from ragjudge.errors import ConfigError
from ragjudge.judges import BUILT_IN, bundled_definitions, bundled_names, judge_class
from ragjudge.judges.definitions import Extension, JudgeDefinition
from ragjudge.types import MetricShape, level_of

__all__ = ["Config", "load_config"]


def _default_thresholds() -> dict[str, float]:
    return {name: float(judge_class(name).default_threshold) for name in METRICS}


def _about(name: str) -> str | None:
    """The description ``RawConfig`` gives its field ``name`` (said once, there)."""
    return RawConfig.model_fields[name].description


class _ConfigBase(RawConfig):
    """``Config`` less the built-in metrics' sections, which ``Config`` types from the registry
    (``ragjudge.metrics``) with each judge's own ``Settings``."""

    thresholds: dict[str, float] = Field(default_factory=_default_thresholds, description=_about("thresholds"))
    judges: list[JudgeDefinition] = Field(default_factory=list, description=_about("judges"))
    extend: dict[str, Extension] = Field(default_factory=dict, description=_about("extend"))

    @classmethod
    def of(cls, config: RawConfig) -> "Config":
        """``config`` (a ``RawConfig``, as ``ragjudge.config.read_raw_config`` reads it) typed and
        checked, its notes kept; a ``Config`` is returned as it is. Raises ``ConfigError``."""
        if isinstance(config, cls):
            return config
        data = config.model_dump(exclude_unset=True)
        try:
            typed = cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, "config", data=data)) from None
        typed._notes = list(dict.fromkeys([*config.notes, *typed._notes]))
        typed.gate._named = config.gate._named  # the dump names every metric: keep which the config named
        return typed

    @model_validator(mode="after")
    def _known_metrics(self) -> "Config":
        # each error names the key it is about (BadEntry), so that it is named where that key was set
        def bad(keys: tuple[str, ...], message: str) -> BadEntry:
            return BadEntry(keys, message, message)

        bundled = bundled_names()
        names = [d.name for d in self.judges]
        for name in names:
            if name in BUILT_IN or name in bundled:
                fix = f"; to add instructions or examples to it, use extend.{name}" if name in BUILT_IN else ""
                raise bad(("judges",), f"judges: '{name}' is a metric that ships with ragjudge; give your judge another name{fix}")
            if name in type(self).model_fields:
                raise bad(("judges",), f"judges: '{name}' is a section of the config ({name}:); give your judge another name")
        twice = [name for i, name in enumerate(names) if name in names[:i]]
        if twice:
            raise bad(("judges",), f"judges: '{twice[0]}' is defined twice")
        known = [*METRICS, *bundled, *names]
        gate = self.gate
        keyed = [(name, list(value) if isinstance(value, dict) else []) for name, value in
                 (("gate.max_error_rate", gate.max_error_rate), ("gate.max_skip_rate", gate.max_skip_rate), ("gate.gate_on", {m: v for m, v in gate.gate_on.items() if m not in AUDIT_RATES} if isinstance(gate.gate_on, dict) else gate.gate_on))]
        allowed = [("gate.allow_unjudged", [m for m in gate.allow_unjudged if m != "diagnosis"])]
        every = "'*' is allowed only as the all-metrics key of gate.min_pass_rate / max_error_rate / max_skip_rate"
        first: tuple[tuple[str, ...], str] | None = None  # the first unknown metric: the key it is named at, and its message
        also: list[str] = []  # the unknown metrics after it
        for where, keys in (("metrics", self.metrics), ("thresholds", list(self.thresholds)), ("gate.min_pass_rate", list(gate.min_pass_rate)),
                            *keyed, *allowed, ("labels", list(self.labels))):
            for name in keys:
                key = (*where.split("."), *([] if where in ("metrics", "gate.allow_unjudged") else [name]))
                if name == "*" and where == "metrics":
                    raise bad(key, f"'*' in metrics is not a metric; name each metric to judge "
                                   f"({' '.join(f'-m {m}' for m in DEFAULT_METRICS)}, or metrics: [{', '.join(DEFAULT_METRICS)}]); {every}")
                if name == "*" and where == "labels":
                    raise bad(key, f"'*' in labels is not a metric; give each metric its own labels column (labels.sufficiency: COLUMN); {every}")
                if name == "*" and where == "thresholds":
                    run = [m for m in self.metrics if m != "*"]
                    raise bad(key, f"'*' in thresholds is not a metric; give each metric its own threshold "
                                   f"({', '.join(f'thresholds.{m}' for m in run)}); {every}")
                if name in known or name == "*":
                    continue
                hint = _did_you_mean(name, known)
                if first is not None:  # each unknown metric in one message: every typo found in one run
                    also.append(f"'{name}' in {where}" + (f" ({hint})" if hint else ""))
                elif where == "metrics":
                    first = (key, f"unknown metric '{name}'" + (f"; {hint} (known metrics: {', '.join(known)} or a judge defined in the "
                                                                "config)" if hint else f"; use {', '.join(known)} or a judge defined in the config"))
                else:
                    first = (key, f"unknown metric '{name}' in {where}; this run judges {', '.join(self.metrics)}{f'; {hint}' if hint else ''} "
                                  f"(known metrics: {', '.join(known)} or a judge defined in the config)")
        if first is not None:
            raise bad(first[0], first[1] + (f"; also unknown: {', '.join(also)}" if also else ""))
        unlabelled = [m for m in self.metrics if gate.gates_on(m) == "corrected" and m not in self.labels and self.min_pass_rate(m) > 0]
        if unlabelled:  # the bound the gate applies, on labels there are not
            raise bad(("gate", "gate_on"), f"gate.gate_on: corrected gates on label-corrected pass rates, and {', '.join(unlabelled)} "
                                           f"{'has' if len(unlabelled) == 1 else 'have'} no labels column: give labels.{unlabelled[0]} "
                                           f"(--labels {unlabelled[0]}=COLUMN), or gate it on the judge (gate.gate_on: "
                                           f"{{{unlabelled[0]}: judge, '*': corrected}})")
        lacking = [m for m in ("sufficiency", "abstention") if m not in self.labels]
        corrected_rates = [r for r in AUDIT_RATES if gate.gates_on(r) == "corrected" and gate.max_rate.get(r, 1.0) < 1.0]
        if corrected_rates and lacking:  # the audit's corrected rate needs both labels: without them its gate could only fail
            rate = corrected_rates[0]
            raise bad(("gate", "gate_on"), f"gate.gate_on: corrected gates the audit rate {rate} (gate.max_rate) on labels of sufficiency "
                                           f"and abstention, and {' and '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no labels "
                                           f"column: give {' '.join(f'labels.{m}' for m in lacking)} "
                                           f"({' '.join(f'--labels {m}=COLUMN' for m in lacking)}), or gate it on the judge "
                                           f"(gate.gate_on: {{{rate}: judge}})")
        for name in self.extend:
            if name not in BUILT_IN:
                raise bad(("extend", name), f"extend: '{name}' is not a built-in metric; use {', '.join(BUILT_IN)} (define your own under judges:)")
            try:
                self.extend[name].check(name, judge_class(name))
            except ValueError as exc:
                raise bad(("extend", name), str(exc)) from None
        pairs = [m for m in self.metrics if m == "pairwise" or getattr(self.definition(m), "per", None) == "pair"]
        responses = self.pairwise.responses  # type: ignore[attr-defined]
        if pairs and responses is None:
            raise bad(("pairwise", "responses"), f"{pairs[0]} compares two responses: give their columns, A then B "
                                                 "(--pairwise response_a,response_b, or pairwise.responses: [response_a, response_b])")
        if responses is not None and not pairs:
            raise bad(("pairwise", "responses"), f"pairwise.responses ({', '.join(responses)}) names two responses to compare, and none of "
                                                 f"the metrics judged ({', '.join(self.metrics)}) compares two: add -m pairwise (or a judge "
                                                 "defined with per: pair)")
        for name, value in self.thresholds.items():
            low, high = self.scale(name)
            if not low <= value <= high:
                raise bad(("thresholds", name), f"{name} threshold must be between {low:g} and {high:g} (got {value:g})")
        return self

    def definition(self, metric: str) -> "JudgeDefinition | None":
        """The definition of a metric defined in YAML (the config's ``judges:`` or a bundled
        one), None for a built-in metric."""
        for item in self.judges:
            if item.name == metric:
                return item
        return bundled_definitions().get(metric) if metric in bundled_names() else None

    def scale(self, metric: str) -> tuple[float, float]:
        """(lowest, highest) score of ``metric``."""
        found = self.definition(metric)
        return found.scale if found is not None else judge_class(metric).scale

    def level(self, metric: str) -> str:
        """Whether ``metric`` is judged per retriever span (``span``: it reads the retrieved
        context) or once per trace (``trace``) on rows read from traces
        (``ragjudge.types.level_of``). Raises ``KeyError`` for a metric it does not know."""
        found = self.definition(metric)
        return level_of(found.needs if found is not None else judge_class(metric).needs)

    def shape(self, metric: str) -> MetricShape:
        """What the trace sinks need of ``metric``'s definition (``ragjudge.types.MetricShape``):
        its level (``level``), whether it is binary (its ``kind``) and the feedback name of
        MLflow's scorer of the same judgment (``mlflow_name``). Raises ``KeyError`` for a metric
        it does not know."""
        found = self.definition(metric)
        if found is not None:
            return MetricShape(level=level_of(found.needs), binary=found.kind == "binary" and not found.per_passage, mlflow_name=found.mlflow_name)
        judge = judge_class(metric)
        return MetricShape(level=level_of(judge.needs), binary=judge.kind == "binary", mlflow_name=judge.mlflow_name)

    def label_threshold(self, metric: str) -> float:
        """The pass mark of ``metric``'s labels (a 1..5 rating passes at it): the very mark its
        verdicts pass at (``threshold``), wherever that comes from (``--threshold``, the config
        file, a config ``ragjudge calibrate`` wrote), so that a label and the verdict it corrects
        mean the same pass (issue 60: with ``--threshold completeness=4``, ratings of 3 passed at
        the reference mark 3 and corrected a judge's 0.00 to 1.00). ``ragjudge calibrate`` keeps
        what the labels mean by moving the pass mark only where its labelled rows pass as they do
        at the mark it starts from (``ragjudge.calibrate.fit``)."""
        return float(self.threshold(metric))

    def threshold(self, metric: str) -> float:
        """The pass threshold of ``metric`` (a row passes at score >= threshold): the one set,
        else the metric's default."""
        if metric in self.thresholds:
            return self.thresholds[metric]
        found = self.definition(metric)
        return found.default_threshold if found is not None else judge_class(metric).default_threshold


Config = create_model(
    "Config", __base__=_ConfigBase, __module__=__name__,
    __doc__="""Everything one ``ragjudge score`` run needs, typed and checked by the judges;
    ``load_config`` builds it. Each built-in metric's section is typed by its judge's own
    ``Settings`` (``ragjudge.metrics``: one registry line a metric). Raises ``ValidationError``
    (``ConfigError`` through ``load_config``) for a metric it does not know, a threshold off its
    scale, a custom judge named like a built-in metric or a config section, or a bad definition
    or extension.""",
    **{name: (judge_class(name).Settings, Field(default_factory=judge_class(name).Settings, description=_about(name))) for name in METRICS},
)


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None, *, flags: dict[str, str] | None = None,
                **settings: Any) -> Config:
    """Read a YAML config (optional) and apply overrides, e.g. from flags; the arguments are
    ``ragjudge.config.load_as``'s (a path or bundled name, nested ``overrides``, keyword or flat
    ``settings``, old metric keys with a note in ``Config.notes``). Returns a validated ``Config``.
    Raises ``ConfigError`` (exit 2) for a missing or unreadable file, YAML that is not a
    mapping, an unknown key (named) or a bad value, the judges' checks included; ``flags``
    (dotted key -> option, e.g. ``{"judge.concurrency": "--concurrency"}``) names the option a
    bad value came from.
    """
    return load_as(Config, path, overrides, flags=flags, **settings)


def _did_you_mean(name: str, known: list[str]) -> str:
    """The fix for an unknown metric ``name`` among the ``known`` ones, as the gate's flags say it:
    the closest name (difflib), or for several names in one (``sufficiency,completeness``) one
    ``-m`` each (a misspelt part read as its closest name, and said so; a quoted ``-m`` dropped);
    empty when no name is close."""
    import difflib

    parts = [part.strip() for part in re.split(r"[,\s]+", name) if part.strip() and part.strip() not in ("-m", "--metric")]
    if len(parts) > 1:  # a list in one -m (or a quoted "a -m b"): each part, misspelt ones read as the closest name
        fixed = {part: part if part in known else next(iter(difflib.get_close_matches(part, known, n=1)), None) for part in parts}
        if all(fixed.values()):
            names = list(dict.fromkeys(fixed[part] for part in parts))
            read_as = [f"'{part}' read as '{fixed[part]}'" for part in parts if fixed[part] != part]
            return (f"one metric per -m: {' '.join(f'-m {m}' for m in names)} (metrics: [{', '.join(names)}] in a config)"
                    + (f"; {', '.join(read_as)}" if read_as else ""))
        unknown = [part for part in parts if not fixed[part]]
        return f"one metric per -m; {', '.join(repr(part) for part in unknown)} is not a metric"
    close = difflib.get_close_matches(name, known, n=1)
    return f"did you mean '{close[0]}'?" if close else ""

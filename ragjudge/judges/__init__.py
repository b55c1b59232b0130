"""The judges: one ``Judge`` per metric, each owning its prompt, version, parsing,
decisions and output columns.

- built-in: ``BUILT_IN`` names a class per metric (``sufficiency``, ``completeness``); the
  config's ``extend:`` adds domain instructions and examples to their prompts;
- defined in YAML: bundled definitions (``ragjudge/judges/bundled/*.yaml``, e.g.
  ``groundedness``) and the config's ``judges:``, judged by ``custom.CustomJudge``.

Adding a metric means adding a module and its line in ``ragjudge.metrics.BUILT_IN`` (CONTRIBUTING.md),
or a YAML definition.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ragjudge import metrics
from ragjudge.ranking import ks_of
from ragjudge.judges.custom import CustomJudge
from ragjudge.judges.definitions import Extension, JudgeDefinition
from ragjudge.judges.pairwise import PairJudge, PairwiseSettings

# metric name -> (module, class), from the one registry (ragjudge.metrics); imported on first use
BUILT_IN: dict[str, tuple[str, str]] = {metric.name: (metric.module, metric.judge) for metric in metrics.BUILT_IN}
BUNDLED_DIR = Path(__file__).parent / "bundled"


def judge_class(name: str) -> Any:
    """The ``Judge`` subclass of the built-in metric ``name``. Raises ``KeyError``."""
    import importlib

    module, attr = BUILT_IN[name]
    return getattr(importlib.import_module(module), attr)


@lru_cache(maxsize=1)
def bundled_names() -> tuple[str, ...]:
    """The names of the bundled definitions, from their file names (``NAME.yaml`` defines the
    judge ``NAME``), without reading them: a run of built-in metrics never parses YAML."""
    return tuple(path.stem for path in sorted(BUNDLED_DIR.glob("*.yaml")))


@lru_cache(maxsize=1)
def bundled_definitions() -> dict[str, Any]:
    """The judge definitions that ship with ragjudge (name -> ``JudgeDefinition``)."""
    import yaml

    found = {}
    for path in sorted(BUNDLED_DIR.glob("*.yaml")):
        definition = JudgeDefinition.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        found[definition.name] = definition
    return found


def make_judges(config: Any) -> list[Any]:
    """One judge per metric of ``config``, in its order, with its threshold and, for a built-in
    metric, its extension (``extend.NAME``) and its own settings (the section ``NAME:``).

    ``config``: a ``ragjudge.settings.Config`` (typed and checked when loaded), or a raw
    ``ragjudge.config.RawConfig`` (``ragjudge.config.read_raw_config``), whose sections and
    definitions each judge reads here with its own model (``Settings``, ``JudgeDefinition``,
    ``Extension``; a typed one is taken as it is). Raises ``KeyError`` for a metric that is
    neither built-in nor defined (a typed config has refused it already) and pydantic's
    ``ValidationError`` for a raw section a judge's model refuses."""
    own = [JudgeDefinition.model_validate(item) for item in config.judges]
    judges = []
    for name in config.metrics:
        definition = next((item for item in own if item.name == name), None)
        if definition is None and name not in BUILT_IN:  # a built-in name is never a bundled definition's
            definition = bundled_definitions().get(name)
        if definition is not None and definition.per == "pair":  # two responses compared, both orders (ragjudge.judges.pairwise)
            section = getattr(config, "pairwise", None)
            options = section if isinstance(section, PairwiseSettings) else PairwiseSettings.model_validate(section or {})
            judges.append(PairJudge(definition, config.judge, config.thresholds.get(name, definition.default_threshold), options=options))
        elif definition is not None:
            threshold = config.thresholds.get(name, definition.default_threshold)
            judges.append(CustomJudge(definition, config.judge, threshold, at_k=ks_of(getattr(config, "passage_relevance", None))))
        else:
            cls = judge_class(name)
            extension = config.extend.get(name)
            options = getattr(config, name, None)
            shared = {other: _section(config, other) for other in getattr(cls, "shares", ())}
            judges.append(cls(config.judge, config.thresholds.get(name, cls.default_threshold),
                              extension=None if extension is None else Extension.model_validate(extension),
                              options=None if options is None or cls.Settings is None else cls.Settings.model_validate(options),
                              **({"shared": shared} if shared else {})))
    return judges


def _section(config: Any, name: str) -> tuple[Any, Any, float]:
    """What a judge that makes the built-in metric ``name``'s calls (``Judge.shares``: sufficient_k
    makes sufficiency's) needs to make them as that metric does, so that they share its cache
    keys and decisions: ``name``'s extension, own settings and threshold in ``config``."""
    cls = judge_class(name)
    extension = config.extend.get(name)
    options = getattr(config, name, None)
    return (None if extension is None else Extension.model_validate(extension),
            None if options is None or cls.Settings is None else cls.Settings.model_validate(options),
            config.thresholds.get(name, cls.default_threshold))

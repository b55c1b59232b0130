"""The judges: one ``Judge`` per metric, each owning its prompt, version, parsing,
decisions and output columns.

- built-in: ``BUILT_IN`` names a class per metric (``sufficiency``, ``completeness``); the
  config's ``extend:`` adds domain instructions and examples to their prompts;
- defined in YAML: bundled definitions (``ragjudge/judges/bundled/*.yaml``, e.g.
  ``groundedness``) and the config's ``judges:``, judged by ``custom.CustomJudge``.

Adding a metric means adding a module and a line in ``BUILT_IN``, or a YAML definition.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

# metric name -> (module, class); imported on first use
BUILT_IN: dict[str, tuple[str, str]] = {
    "sufficiency": ("ragjudge.judges.sufficiency", "SufficiencyJudge"),
    "completeness": ("ragjudge.judges.completeness", "CompletenessJudge"),
}
BUNDLED_DIR = Path(__file__).parent / "bundled"


def judge_class(name: str) -> Any:
    """The ``Judge`` subclass of the built-in metric ``name``. Raises ``KeyError``."""
    import importlib

    module, attr = BUILT_IN[name]
    return getattr(importlib.import_module(module), attr)


@lru_cache(maxsize=1)
def bundled_definitions() -> dict[str, Any]:
    """The judge definitions that ship with ragjudge (name -> ``JudgeDefinition``)."""
    import yaml

    from ragjudge.judges.definitions import JudgeDefinition

    found = {}
    for path in sorted(BUNDLED_DIR.glob("*.yaml")):
        definition = JudgeDefinition.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        found[definition.name] = definition
    return found


def make_judges(config: Any) -> list[Any]:
    """One judge per metric of ``config`` (a ``Config``), in its order, with its threshold and,
    for a built-in metric, its extension (``extend.NAME``) and its own settings (the section
    ``NAME:``)."""
    judges = []
    for name in config.metrics:
        definition = config.definition(name)
        if definition is not None:
            from ragjudge.judges.custom import CustomJudge

            judges.append(CustomJudge(definition, config.judge, config.threshold(name)))
        else:
            judges.append(judge_class(name)(config.judge, config.threshold(name), extension=config.extend.get(name),
                                            options=getattr(config, name, None)))
    return judges

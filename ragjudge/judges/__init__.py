"""The judges: one ``Judge`` class per metric, each owning its prompt, version, parsing,
decisions and output columns. ``BUILT_IN`` names them; adding a metric means adding a module
and a line here."""

from __future__ import annotations

from typing import Any

# metric name -> (module, class); imported on first use
BUILT_IN: dict[str, tuple[str, str]] = {
    "sufficiency": ("ragjudge.judges.sufficiency", "SufficiencyJudge"),
    "completeness": ("ragjudge.judges.completeness", "CompletenessJudge"),
}


def judge_class(name: str) -> Any:
    """The ``Judge`` subclass of the built-in metric ``name``. Raises ``KeyError``."""
    import importlib

    module, attr = BUILT_IN[name]
    return getattr(importlib.import_module(module), attr)


def make_judges(config: Any) -> list[Any]:
    """One judge per metric of ``config`` (a ``Config``), in its order, with its threshold."""
    return [judge_class(name)(config.judge, config.threshold(name)) for name in config.metrics]

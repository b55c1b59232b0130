"""The judges: one module per metric, each owning its prompt, PROMPT_VERSION and parser."""

from __future__ import annotations

from types import ModuleType


def get_judge(metric: str) -> ModuleType:
    """The judge module for ``metric`` ('sufficiency' or 'completeness')."""
    if metric == "sufficiency":
        from ragjudge.judges import sufficiency

        return sufficiency
    if metric == "completeness":
        from ragjudge.judges import completeness

        return completeness
    raise KeyError(metric)

"""Axion's ``ContextualSufficiency`` call shape on ragjudge's judge.

    from ragjudge.compat.axion import ContextualSufficiency
    metric = ContextualSufficiency()
    result = await metric.execute({"query": "...", "retrieved_content": ["...", "..."]})
    result.score, result.signals["is_sufficient"]    # 1.0, True
    print(result.pretty())

Reference-free, as Axion's metric is (``sufficiency.mode: reference_free``: a reference on the
item is ignored). The item is an object or a dict with ``query`` and ``retrieved_content`` (a
string or a list of passages). Every call goes through ``ragjudge.compat.ajudge_row``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragjudge.compat import ajudge_row, judge_row

__all__ = ["ContextualSufficiency", "MetricEvaluationResult"]

AXION_SETTINGS = {"sufficiency": {"mode": "reference_free"}}


@dataclass
class MetricEvaluationResult:
    """Axion's result shape: ``score`` (1.0 sufficient / 0.0 not; None when no verdict),
    ``explanation`` (the judge's rationale, or why there is no verdict) and ``signals``
    (``sufficiency_score``, ``is_sufficient``, ``reasoning``, ``query``, ``context``; ragjudge adds
    ``status`` and ``error``)."""

    score: float | None
    explanation: str | None = None
    signals: dict[str, Any] = field(default_factory=dict)
    metric_name: str = "Contextual Sufficiency"

    def pretty(self) -> str:
        """The result as a few lines of text to print."""
        verdict = {True: "sufficient", False: "insufficient", None: "no verdict"}[self.signals.get("is_sufficient")]
        lines = [f"{self.metric_name}: {'-' if self.score is None else f'{self.score:.1f}'} ({verdict})",
                 f"  query: {self.signals.get('query')}",
                 f"  reasoning: {self.signals.get('reasoning') or self.explanation or ''}"]
        if self.signals.get("error"):
            lines.append(f"  error: {self.signals['error']}")
        return "\n".join(lines)


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


class ContextualSufficiency:
    """Axion's reference-free context sufficiency: does ``retrieved_content`` hold what the
    ``query`` needs? ``model``: a litellm model string (default: the configured judge)."""

    name = "contextual_sufficiency"

    def __init__(self, model: str | None = None, **kwargs: Any) -> None:
        self.model = model

    @staticmethod
    def _row(item: Any) -> dict[str, Any]:
        return {"request": _get(item, "query"), "context": _get(item, "retrieved_content")}

    @staticmethod
    def _result(judged: Any, row: dict[str, Any]) -> MetricEvaluationResult:
        status = judged.get("sufficiency_status")
        score = judged.get("sufficiency_score") if status == "ok" else None
        sufficient = None if score is None else score == 1.0
        reasoning = judged.get("sufficiency_rationale")
        context = row["context"]
        signals = {"sufficiency_score": score, "is_sufficient": sufficient, "reasoning": reasoning, "query": row["request"],
                   "context": context if isinstance(context, str) or context is None else list(context),
                   "status": status, "error": judged.get("sufficiency_error")}
        return MetricEvaluationResult(score=score, explanation=reasoning if status == "ok" else judged.get("sufficiency_error"),
                                      signals=signals)

    async def execute(self, item: Any) -> MetricEvaluationResult:
        """Judge one item (object or dict with ``query`` and ``retrieved_content``)."""
        row = self._row(item)
        return self._result(await ajudge_row("sufficiency", row, model=self.model, **AXION_SETTINGS), row)

    def execute_sync(self, item: Any) -> MetricEvaluationResult:
        """``execute`` without ``await`` (also inside a running event loop)."""
        row = self._row(item)
        return self._result(judge_row("sufficiency", row, model=self.model, **AXION_SETTINGS), row)

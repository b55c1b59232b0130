"""The library's one-line calls: ``ragjudge.score(df, ...)`` and ``await ragjudge.ascore(df, ...)``,
each a ``Scorer`` made, used once and closed."""

from __future__ import annotations

from typing import Any

from ragjudge import _loop
from ragjudge.settings import load_config, Config
from ragjudge.scoring.schema import Scored
from ragjudge.scoring.scorer import Scorer


def _one_call_scorer(metrics: list[str] | str | None, config: Config | str | None, settings: dict[str, Any]) -> "Scorer":
    """The ``Scorer`` of one ``score`` / ``ascore`` call: ``config`` (a ``Config``, or a YAML path
    or bundled name read with ``settings`` laid over it) with ``metrics`` chosen."""
    if metrics is not None:
        settings["metrics"] = [metrics] if isinstance(metrics, str) else list(metrics)
    if not isinstance(config, Config):
        config = load_config(config, settings)
        settings = {}
    return Scorer(config, **settings)


def score(frame: Any, metrics: list[str] | None = None, config: Config | str | None = None, **settings: Any) -> Scored:
    """Score ``frame`` (a pandas DataFrame) in one line: ``ragjudge.score(df, metrics=["sufficiency"],
    model="openai/gpt-4o-mini")``. ``config``: a ``Config`` or the path (or bundled name) of a
    YAML config; ``settings`` override it (``load_config``'s keywords). Returns ``Scored``."""
    with _one_call_scorer(metrics, config, settings) as scorer:
        return scorer.score(frame)


async def ascore(frame: Any, metrics: list[str] | None = None, config: Config | str | None = None, **settings: Any) -> Scored:
    """``score`` for async code: ``await ragjudge.ascore(df, ...)``."""
    scorer = _one_call_scorer(metrics, config, settings)
    try:
        return await scorer.ascore(frame)
    finally:
        await _loop.arun(scorer.model.aclose())
        scorer._closed = True
        scorer._close_cache()

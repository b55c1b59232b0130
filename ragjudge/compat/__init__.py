"""One-row calls in the references' own shapes (issue 27): ``ragjudge.compat.mlflow``
(``is_context_sufficient``, ``RetrievalSufficiency``), ``ragjudge.compat.azure``
(``ResponseCompletenessEvaluator``) and ``ragjudge.compat.axion`` (``ContextualSufficiency``).

Each is a thin adapter over ``judge_row`` / ``ajudge_row``: one row through a ``Scorer``, so
every adapter shares one response cache, one concurrency limit per model (the process-wide
one of ``ragjudge.model``) and ragjudge's own event loop: the sync form works in a script and
inside a notebook's running loop, the async form from any loop. Scorers are kept per settings
(``configure`` sets the defaults: a config file, ``api_base``, ``cache``...) and closed at exit.

    from ragjudge.compat import configure
    configure(api_base="http://localhost:8000/v1")   # optional: settings as ``Scorer`` takes them
"""

from __future__ import annotations

import atexit
import json
import threading
from typing import Any
from ragjudge.scoring import Scorer
from ragjudge.settings import Config, load_config

__all__ = ["Judged", "ajudge_row", "configure", "judge_row"]

_lock = threading.Lock()
_scorers: dict[str, Any] = {}
_defaults: dict[str, Any] = {"config": None, "settings": {}}


class Judged(dict):
    """One row's scored values, ``M_*`` columns by name (``M_score``, ``M_rationale``,
    ``M_status``, ``M_error``, ``M_missing``, ``M_prompt_tokens``, ``M_completion_tokens``,
    ``M_cost_usd``, ``M_cached``, ``judge_model``, and the judge's own columns), plus
    ``metric`` and ``notes`` (how the row was read)."""

    @property
    def metric(self) -> str:
        return self["metric"]

    def get_metric(self, suffix: str) -> Any:
        """The value of column ``METRIC_suffix`` (None when absent)."""
        return self.get(f"{self['metric']}_{suffix}")


def configure(config: Any = None, **settings: Any) -> None:
    """Defaults for every adapter's scorer: ``config`` (a ``Config``, or the path or bundled
    name of a YAML config) and ``settings`` as ``Scorer`` / ``load_config`` take them
    (``model=``, ``api_base=``, ``cache={"dir": ...}``, ``judge={...}``). Closes the scorers
    made so far; the next call makes new ones."""
    with _lock:
        _defaults["config"] = config
        _defaults["settings"] = dict(settings)
        scorers = list(_scorers.values())
        _scorers.clear()
    for scorer in scorers:
        scorer.close()


def _scorer(metric: str, model: str | None, settings: dict[str, Any]) -> Any:
    merged: dict[str, Any] = {**_defaults["settings"], **settings, "metrics": [metric]}
    if model:
        merged["model"] = model
    key = json.dumps([repr(_defaults["config"]), merged], sort_keys=True, default=str)
    with _lock:
        found = _scorers.get(key)
        if found is None:
            base = _defaults["config"]
            config = base.updated(merged) if isinstance(base, Config) else load_config(base, merged)
            found = _scorers[key] = Scorer(config)
        return found


def _frame(row: dict[str, Any]) -> Any:
    import pandas as pd

    return pd.DataFrame([{k: v for k, v in row.items() if v is not None}])


def _judged(metric: str, scored: Any) -> Judged:
    values = scored.frame.to_dict("records")[0]
    out = Judged({k: (None if _missing(v) else v) for k, v in values.items()})
    out[f"{metric}_missing"] = list(values.get(f"{metric}_missing") or [])
    out["metric"] = metric
    out["notes"] = list(scored.notes)
    return out


def _missing(value: Any) -> bool:
    try:
        import pandas as pd

        return not isinstance(value, (list, tuple, dict)) and bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _lacking(metric: str, scorer: Any, row: dict[str, Any]) -> Judged | None:
    """The result of a row without a field its judge needs (``context=None``): skipped, the
    error naming the argument, as a table's row without it is skipped, no call made; None
    when the row has every field (a table would have no such column, an error about columns
    that a one-row call has not)."""
    for judge in scorer.judges:
        for need in judge.needs:
            names = need.split("|")
            if any(name in row for name in names) and all(row.get(name) is None for name in names):
                given = " or ".join(names)
                out = Judged({f"{metric}_status": "skipped", f"{metric}_score": None, f"{metric}_missing": [],
                              f"{metric}_error": f"no {given} given ({'=None, '.join(names)}=None): {metric} needs it; nothing was judged",
                              "judge_model": scorer.config.judge.model})
                out["metric"], out["notes"] = metric, []
                return out
    return None


def judge_row(metric: str, row: dict[str, Any], *, model: str | None = None, **settings: Any) -> Judged:
    """Judge one row (canonical field names: ``request``, ``context``, ``expected_facts``,
    ``expected_response``, ``response``) with ``metric``, on the scorer kept for ``model`` and
    ``settings`` (``sufficiency={"mode": "grounded"}`` etc.). Blocks; works inside a running
    event loop (the calls run on ragjudge's own). A field the judge needs given as None
    (``context=None``) gives a skipped result whose error names it, no call made. Raises
    ``InputError`` / ``ConfigError`` as ``Scorer`` does; a provider failure is an error status
    in the result."""
    scorer = _scorer(metric, model, settings)
    lacking = _lacking(metric, scorer, row)
    return lacking if lacking is not None else _judged(metric, scorer.score(_frame(row)))


async def ajudge_row(metric: str, row: dict[str, Any], *, model: str | None = None, **settings: Any) -> Judged:
    """``judge_row`` for async code: ``await ajudge_row(...)`` from any event loop."""
    scorer = _scorer(metric, model, settings)
    lacking = _lacking(metric, scorer, row)
    return lacking if lacking is not None else _judged(metric, await scorer.ascore(_frame(row)))


@atexit.register
def _close_all() -> None:
    with _lock:
        scorers = list(_scorers.values())
        _scorers.clear()
    for scorer in scorers:
        try:
            scorer.close()
        except Exception:  # noqa: BLE001 - at exit, nothing to report to
            pass

"""The config's names: the built-in metrics (``METRICS``, ``DEFAULT_METRICS``, from
``ragjudge.metrics``), the canonical fields (``FIELDS``), the bundled configs (``BUNDLED``,
``bundled_config``), the keys that moved to a metric's section (``MOVED``) and ``BadEntry``, a
check's error about one entry. Part of ``ragjudge.config``, which re-exports every name."""

from __future__ import annotations

from pathlib import Path

from ragjudge import metrics as _metrics
from ragjudge.errors import ConfigError

METRICS: tuple[str, ...] = _metrics.names()
"""The built-in metrics, each a section of the config named after it: ``ragjudge.metrics.BUILT_IN``,
the one registry (its judges, in this order)."""
DEFAULT_METRICS: tuple[str, ...] = _metrics.defaults()
"""The built-in metrics a run judges when none is named (``Metric.default``); the gate's default
bounds and a single ``min_pass_rate`` number name these, and any other metric the config names."""
FIELDS: tuple[str, ...] = ("id", "request", "context", "expected_facts", "expected_response", "response")

BUNDLED: tuple[str, ...] = ("default", "local", "mlflow")
"""Configs shipped in the package (``ragjudge/configs/NAME.yaml``; ``configs/`` in a checkout):
every key with its default, the embedded judge's calibrated settings, MLflow-shaped records."""

def bundled_config(name: str) -> Path:
    """Path of the bundled config ``name`` (one of ``BUNDLED``; ``.yaml`` may be given).
    Raises ``ConfigError`` naming the bundled configs for any other name."""
    stem = name.removesuffix(".yaml")
    if stem not in BUNDLED:
        raise ConfigError(f"no bundled config '{name}'; bundled: {', '.join(BUNDLED)}")
    return Path(__file__).parent.parent / "configs" / f"{stem}.yaml"

def _config_path(path: str | Path) -> Path:
    """``path`` itself when it exists (or names a folder); else, for a bare bundled name
    (``mlflow``, ``local.yaml``: no folder part), the bundled file."""
    given = Path(path)
    if given.exists() or given.parent != Path(".") or given.name.removesuffix(".yaml") not in BUNDLED:
        return given
    return bundled_config(given.name)


# the judge settings that moved to their metric's own section (judge.fact_threshold is now
# sufficiency.fact_threshold), key -> metric: each metric's ``Metric.moved``; the old keys still
# load, with a note naming the new place
MOVED: dict[str, str] = {key: metric.name for metric in _metrics.BUILT_IN for key in metric.moved}

class BadEntry(ValueError):
    """A check's error about one entry below the value it checks: ``keys``, the entry's dotted
    path below the check's place (a metric under ``gate.max_error_rate``; for a check of the
    whole config, the full key, ``("thresholds", "completeness")``), and ``detail``, the message
    without the entry's name, so that the error is named where that entry was set (the file,
    ``--set KEY``, the option). ``str()``: ``message``, else ``KEY: detail``."""

    def __init__(self, keys: tuple[str, ...], detail: str, message: str | None = None) -> None:
        super().__init__(message if message is not None else f"{keys[-1]}: {detail}")
        self.keys = tuple(keys)
        self.detail = detail


__all__ = ["BUNDLED", "DEFAULT_METRICS", "FIELDS", "METRICS", "MOVED", "BadEntry", "bundled_config"]

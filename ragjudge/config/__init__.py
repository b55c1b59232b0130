"""The run configuration as read: pydantic models of the YAML config, merged with command-line flags.

A config file holds the same settings as the flags (``configs/default.yaml``, printed by
``ragjudge config show``, documents every key); flags override the file; an unknown key is a
``ConfigError`` (exit 2) that names it. The bundled configs (``BUNDLED``) ship inside the
package, so ``-c mlflow`` works wherever ragjudge is installed.

This package imports no judge (it sits below them, see CONTRIBUTING.md's Layers). It checks the
judge model's settings (``judge:``), the columns, the gate and the cache; what belongs to the
judges stays raw data here (``RawConfig``): each built-in metric's own section
(``sufficiency:``, ``completeness:``), the judges defined in YAML (``judges:``) and the
extensions of built-in prompts (``extend:``). ``ragjudge.settings.Config`` (above both this
package and the judges) types those with the judges' own models (their settings models,
``ragjudge.judges.definitions``) and checks the metrics a config names; ``ragjudge.load_config``
(``ragjudge.settings.load_config``) reads a config through it, which is what a run uses.
``read_raw_config`` here reads one without the judges (``RawConfig``); ``load_as`` reads one as any
subclass of ``RawConfig``, with the same errors.

Its modules: ``base`` (the names: metrics, fields, bundled configs, moved keys; ``BadEntry``),
``judge`` (``judge:``: ``JudgeSettings``, ``PanelMember``, ``Price``), ``raw`` (the file's shape,
``RawConfig``, with ``Columns``, ``GateSettings`` and ``CacheSettings``; configs/default.yaml and
docs/configuration.md are generated from its descriptions), ``layers`` (``layered``: the one
layering of files or keywords, ``--set`` and flags, for the command line, the Action, the pytest
plugin and ``load_as``), ``reading`` (YAML, overrides, validation) and ``messages`` (merging keys;
the message that names a bad key where it stands). Every name is imported from here
(``from ragjudge.config import RawConfig``); the judges' sections, the flags and ``--set`` items
as ``Assignment``s (``ragjudge.options``) and the typed checks (``ragjudge.settings``) live apart.
"""

from __future__ import annotations

from ragjudge.config.base import BUNDLED, DEFAULT_METRICS, FIELDS, METRICS, MOVED, BadEntry, _config_path, bundled_config  # noqa: F401
from ragjudge.config.judge import MODEL_EXAMPLES, JudgeSettings, PanelMember, Price, named_model  # noqa: F401
from ragjudge.config.raw import CacheSettings, Columns, GateSettings, RawConfig
from ragjudge.config.messages import _deep_merge, _describe  # noqa: F401 (imported from here: ragjudge.settings, ragjudge.testing)
from ragjudge.config.layers import PER_METRIC_KEYS, Assignment, lay, layered
from ragjudge.config.reading import load_as, read_file, read_raw_config, validate
from ragjudge.panel import RULES as PANEL_RULES

__all__ = ["BUNDLED", "DEFAULT_METRICS", "FIELDS", "METRICS", "MOVED", "PANEL_RULES", "BadEntry", "CacheSettings", "Columns", "GateSettings", "JudgeSettings",
           "PER_METRIC_KEYS", "PanelMember", "Price", "RawConfig", "Assignment",
           "bundled_config", "lay", "layered", "load_as", "read_raw_config", "read_file", "validate"]

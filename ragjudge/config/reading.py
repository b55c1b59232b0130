"""Reading a config: a YAML file (``read_file``, a key given twice refused), keyword and flag
overrides nested and merged over it (``load_as``, ``read_raw_config``), validated as ``RawConfig``
or a subclass (``validate``), a bad key's error named where it was set (``ragjudge.config.messages``).
Part of ``ragjudge.config``, which re-exports every name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import (
    ValidationError,
)

from ragjudge.errors import ConfigError
from ragjudge.config.base import BUNDLED, _config_path
from ragjudge.config.layers import layered
from ragjudge.config.messages import _deep_merge, _describe
from ragjudge.config.raw import RawConfig, _nest

def _unique_keys_loader() -> Any:
    """PyYAML's SafeLoader, except that a key given twice in one mapping is an error (YAML
    forbids it; PyYAML would keep the last value silently)."""
    import yaml

    class UniqueKeys(yaml.SafeLoader):
        pass

    def mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        # only the mapping's own plain keys are compared, before merge keys ('<<') are
        # resolved: a key that overrides a merged one is what merging is for; other keys
        # (lists, ...) are left to PyYAML, which refuses unhashable ones
        seen = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key '{key_node.value}' appears twice in one mapping", key_node.start_mark)
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return UniqueKeys

def read_raw_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None, *, flags: dict[str, str] | None = None,
                    **settings: Any) -> RawConfig:
    """The config as read, without the judges' checks (``RawConfig``): ``load_as(RawConfig,
    ...)``. A run reads its config with ``ragjudge.load_config`` (``ragjudge.settings``), which
    takes the same arguments and also checks the metrics, their sections and definitions."""
    return load_as(RawConfig, path, overrides, flags=flags, **settings)


C = TypeVar("C", bound=RawConfig)

def read_file(path: str | Path) -> dict[str, Any]:
    """The keys of the YAML config file ``path`` (or of a bundled config, by its bare name), as
    written: a dict, not yet checked. Raises ``ConfigError`` (exit 2) for a missing or
    unreadable file, text that is not UTF-8, YAML that is not valid (naming the line), a key
    given twice in one mapping, or a document that is not a mapping."""
    import yaml  # only with a config file: 30 ms of a small run's start-up

    try:
        text = _config_path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc} (bundled configs: -c {' | '.join(BUNDLED)})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save the config as UTF-8") from None
    try:
        loaded = yaml.load(text, Loader=_unique_keys_loader())  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{line} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the config must be a mapping of keys (`ragjudge config show` lists them)")
    return loaded

def load_as(model: type[C], /, path: str | Path | None = None, overrides: dict[str, Any] | None = None, *,
            flags: dict[str, str] | None = None, **settings: Any) -> C:
    """Read a YAML config (optional) and apply overrides, e.g. from flags, validated as
    ``model`` (``RawConfig`` or a subclass, e.g. ``ragjudge.settings.Config``).

    ``path``: a YAML file, or the bare name of a bundled config (``BUNDLED``: ``mlflow``,
    ``local``, ``default``) when no such file exists. ``overrides`` (a nested dict) and
    keyword ``settings`` take the config's keys (``metrics=["sufficiency"]``,
    ``judge={"model": ...}``, ``sufficiency={"fact_threshold": 0.3}``, ``gate={...}``); a
    judge setting or a built-in metric's own setting may also be given flat
    (``model="openai/gpt-4o-mini"``, ``concurrency=8``, ``fact_threshold=0.3``). The old place
    of a metric's setting (``judge.fact_threshold``) still loads, with a note in
    ``notes``. Returns a validated ``model``.
    Raises ``ConfigError`` (exit 2) for a missing or unreadable file, YAML that is not a
    mapping, an unknown key (named) or a bad value; ``flags`` (dotted key -> option, e.g.
    ``{"judge.concurrency": "--concurrency"}``) names the option a bad value came from.
    """
    overrides = _deep_merge(_nest(overrides or {}), _nest(settings)) if settings else (_nest(overrides) if overrides else None)
    files = [(str(path), read_file(path))] if path is not None else []
    data, _ = layered([*files, *([("options", overrides)] if overrides else [])])  # the file, then the keywords (layers.layered)
    source = str(path) if path is not None else "options" if overrides else "config"
    return validate(model, data, source, overrides, flags)

def validate(model: type[C], data: dict[str, Any], source: str = "config", given: dict[str, Any] | None = None,
             flags: dict[str, str] | None = None, setter: Callable[[str], str | None] | None = None) -> C:
    """``data`` (the config's keys) validated as ``model``. Raises ``ConfigError`` (exit 2) for
    the first bad key, named as it was written: in ``source`` (the file, or ``options``), or as
    what set it: ``setter`` (dotted key -> the option or ``--set KEY``; None: the file or a
    default), else the option (``flags``: dotted key -> option) that set it in ``given`` (the
    keys the options set)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, given, flags, data=data, setter=setter)) from None


__all__ = ["load_as", "read_file", "read_raw_config", "validate"]

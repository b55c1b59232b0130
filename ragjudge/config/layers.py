"""The one layering of a config: files (or a caller's keywords) merged section by section, then
single keys laid over them (``--set`` items, the command's flags), with a record of which layer
set each key (``layered``). The command line, the GitHub Action, the pytest plugin and
``evaluate`` / ``load_config`` (``reading.load_as``) all layer their config through it;
``ragjudge.options`` builds the flags' and ``--set``'s ``Assignment``s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ragjudge.config.messages import _deep_merge
from ragjudge.config.raw import RawConfig
from ragjudge.errors import ConfigError


PER_METRIC_KEYS = ("gate.min_pass_rate", "gate.max_error_rate", "gate.max_skip_rate")
GATE_ON = "gate.gate_on"  # one value (judge / corrected) is its '*': a metric's or rate's own entry, from any layer, overrides it


@dataclass(frozen=True)
class Assignment:
    """One value a layer of the config sets: the dotted ``key``, the ``value`` and ``source``,
    where it came from as a person names it (the file's path, ``--set KEY``, ``--min-pass-rate``)."""

    key: str
    value: Any
    source: str


def lay(data: dict[str, Any], sources: dict[str, str], assignment: Assignment) -> None:
    """Lay ``assignment`` over ``data`` (the config's keys, changed in place; the sections on its
    path are copied first, so a dict of the caller's is never changed): its value replaces
    whatever the key held, a whole section included, and the keys below it lose their
    sources. A per-metric key (``PER_METRIC_KEYS``) holding one number becomes ``{"*": number}``
    when a metric's own value is laid over it. Raises ``ConfigError`` for a key below one that
    holds a value (``--set judge=4`` beside ``--model``), naming both. ``gate.gate_on`` is the
    exception to a value replacing a section: one value (``--gate-on corrected``) laid over a map
    with per-metric entries becomes its ``'*'`` (the entries stay and override it), and a metric's
    entry laid over one value keeps that value as ``'*'``."""
    if assignment.key == GATE_ON and isinstance(assignment.value, str):
        held = (data.get("gate") or {}).get("gate_on") if isinstance(data.get("gate"), dict) else None
        if isinstance(held, dict) and any(key != "*" for key in held):
            assignment = Assignment(f"{GATE_ON}.*", assignment.value, assignment.source)
    parts = assignment.key.split(".")
    tree = data
    for depth, part in enumerate(parts[:-1]):
        here = ".".join(parts[:depth + 1])
        node = tree.get(part)
        if isinstance(node, dict):
            node = dict(node)
        elif node is None:
            node = {}
        elif (here in PER_METRIC_KEYS and isinstance(node, (int, float)) and not isinstance(node, bool)) or (here == GATE_ON and isinstance(node, str)):
            node = {"*": node}
        else:
            setter = sources.get(here, "the config")
            first = parts[depth + 1]
            if setter.startswith("--set") and _is_section(here):
                raise ConfigError(f"{setter}: {here} is a section of the config (keys such as {first}), not a value; set one of its "
                                  f"keys, e.g. --set {here}.{first}=...")
            raise ConfigError(f"{assignment.source}: {here} was set to a value by {setter}, so it has no key {first}")
        tree[part] = node
        tree = node
    tree[parts[-1]] = assignment.value
    prefix = assignment.key + "."
    for key in [k for k in sources if k.startswith(prefix)]:
        del sources[key]
    sources[assignment.key] = assignment.source


def _is_section(key: str) -> bool:
    """Whether the dotted ``key`` is a section of the config (holds keys by default: ``judge``,
    ``thresholds``), not a value (``judge.concurrency``)."""
    node: Any = RawConfig().model_dump()
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return isinstance(node, dict)


def layered(files: Sequence[tuple[str, dict[str, Any]]], assignments: Sequence[Assignment] = ()) -> tuple[dict[str, Any], dict[str, str]]:
    """The one config layering of the command line (``options.load_layers``: the file, ``--set``,
    the flags), the GitHub Action (which runs it), the pytest plugin (``testing.project_config``:
    the YAML file, ``[tool.ragjudge]``, ``--ragjudge-config``) and ``evaluate`` /
    ``load_config`` (``load_as``: the file, then the keywords), from lowest to highest: the
    ``files`` (``(name, keys)``, as ``read_file`` gives them), each merged over the ones before
    section by section (a key it sets replaces that key; the others stay), then the
    ``assignments`` (``Assignment``: ``--set`` items, the flags), each laid over its key (``lay``:
    a value replaces a whole section). Returns the keys, not yet validated, and their sources
    (dotted key -> the name of the layer that set it). Raises ``ConfigError`` (``lay``)."""
    data: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, keys in files:
        data = _deep_merge(data, keys)
        sources.update({key: name for key in _leaves(keys)})
    for assignment in assignments:
        lay(data, sources, assignment)
    return data, sources


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        out += _leaves(value, dotted + ".") if isinstance(value, dict) and value else [dotted]
    return out


__all__ = ["PER_METRIC_KEYS", "Assignment", "lay", "layered"]

"""The settings' documentation, generated from one source: the config models' field
descriptions (``ragjudge.config``'s models, and each built-in judge's own settings model in
``ragjudge.judges``, brought together by ``ragjudge.settings.Config``). ``default_yaml()`` is ``configs/default.yaml`` (every key
with its default) and ``markdown()`` is ``docs/configuration.md``; ``python
scripts/gen_docs.py`` writes both, and a test fails when either drifts from the models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ragjudge import local, metrics
from ragjudge.config import MOVED, CacheSettings, Columns, GateSettings, JudgeSettings
from ragjudge.judges import judge_class
from ragjudge.settings import Config


def _metric_section(metric: metrics.Metric) -> tuple[str, type[BaseModel], str]:
    """A built-in metric's section, as the registry gives it: its judge's settings model."""
    moved = [key for key, name in MOVED.items() if name == metric.name]
    formerly = f" Formerly under judge: (judge.{moved[0]} ...), which still loads, with a note." if moved else ""
    path = metric.module.replace(".", "/") + ".py"
    return (metric.name, judge_class(metric.name).Settings,
            f"{metric.name.capitalize()}'s own settings (its judge's settings model, {path}).{formerly}")


SECTIONS: list[tuple[str, type[BaseModel] | None, str]] = [
    ("columns", Columns, "Where each canonical field is in the input: a column name, or a dotted path into nested objects "
                         "(inputs.query). null: the same-named column, else a common alias."),
    ("judge", JudgeSettings, "The judge model and how it is called."),
    ("metrics", None, ""),
    ("thresholds", None, ""),
    ("labels", None, ""),
    *(_metric_section(metric) for metric in metrics.BUILT_IN),
    ("gate", GateSettings, "What fails the run (exit 1)."),
    ("cache", CacheSettings, "The response cache."),
    ("chunk_size", None, ""),
    ("judges", None, ""),
    ("extend", None, ""),
]


def _yaml_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1:
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml_value(v)}" for k, v in value.items()) + "}" if value else "{}"
    return str(value)


def _pad(text: str, width: int) -> str:
    return text + " " * max(1, width - len(text))


def _yaml_entry(key: str, value: Any, description: str | None, indent: str = "") -> list[str]:
    """``key: value  # description`` at ``indent``; a non-empty dict as one key per line below."""
    if isinstance(value, dict) and value:
        return [_pad(f"{indent}{key}:", 30) + f"# {description}", *(f"{indent}  {k}: {_yaml_value(v)}" for k, v in value.items())]
    text = _yaml_value(value.model_dump() if isinstance(value, BaseModel) else value)
    return [_pad(f"{indent}{key}: {text}", 30) + f"# {description}"]


def default_yaml() -> str:
    """``configs/default.yaml``: every key with its default, each described."""
    lines = [
        "# ragjudge configuration: every key, with its default. Flags override these values.",
        "# Unknown keys are an error that names the key. Generated from the settings' descriptions",
        "# (ragjudge/config/, ragjudge/judges/) by scripts/gen_docs.py; docs/configuration.md says the same.",
        "",
    ]
    config = Config()
    for name, model, about in SECTIONS:
        field = Config.model_fields[name]
        if model is None:
            lines += [*_yaml_entry(name, getattr(config, name), field.description), ""]
            continue
        lines.append(f"# {about}")
        lines.append(f"{name}:")
        instance = getattr(config, name)
        for key, item in model.model_fields.items():
            lines += _yaml_entry(key, getattr(instance, key), item.description, "  ")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def markdown() -> str:
    """``docs/configuration.md``: every setting, its default and what it does."""
    out = [
        "# Configuration",
        "",
        "Put the settings you change in a YAML file and pass it with `-c FILE` / `--config FILE` (or name a bundled one: `-c local`, "
        "`-c mlflow`); command-line flags override the file. `ragjudge config show > my.yaml` prints every key with its "
        "default, to start from. An unknown key is an error that names it (each unknown key of the file, in one message; a metric misspelt gets the closest name).",
        "",
        "```yaml",
        "judge:",
        "  model: openai/gpt-4o-mini",
        "  concurrency: 32",
        "gate:",
        "  min_pass_rate: {sufficiency: 0.9, completeness: 0.8}",
        "```",
        "",
        "Any key can also be set on the command line of `ragjudge score` (and `render`, `report`) with `--set KEY=VALUE`: the key "
        "dotted as in the tables "
        "below, the value read as YAML (`4`, `0.3`, `true`, `null`, `[a, b]`), repeatable. The `--set` values are laid over the "
        "file before the config is checked, so an unknown key or a bad value is the same error as in a file; an option named "
        "for a key (`--concurrency`) wins over `--set`.",
        "",
        "```bash",
        "ragjudge score data.jsonl --set judge.concurrency=4 --set gate.max_error_rate=0.05 --set thresholds.completeness=4",
        "```",
        "",
        "## The effective config",
        "",
        "The layers, lowest first: the defaults below, the file (`-c`), the `--set` items in the order given, the named "
        "options. Each replaces what a lower layer set at the same key, whole sections included: `--min-pass-rate 0` replaces "
        "the file's `gate.min_pass_rate` map, `--min-pass-rate completeness=0.8` that metric's entry only. "
        "`ragjudge score INPUT --print-config` (with the same options as the run) prints the config the run will use as YAML "
        "that `-c` reads back, each value followed by what set it: `default`, `-c FILE`, `--set KEY`, the option, or "
        "`embedded judge` (the bundled model's calibrated settings, filled where nothing else set them); it reads no input.",
        "",
        "```text",
        "gate:",
        "  min_pass_rate:",
        "    sufficiency: 0.0                        # --min-pass-rate",
        "    completeness: 0.8                       # --min-pass-rate",
        "  max_error_rate: 0.05                      # --set gate.max_error_rate",
        "```",
        "",
                "This page is generated from the settings' own descriptions (`ragjudge/config/`, and each built-in judge's settings "
        "model in `ragjudge/judges/`) by `python scripts/gen_docs.py`;",
        "`configs/default.yaml` is generated from the same source, and a test fails when either drifts.",
        "",
    ]
    config = Config()
    for name, model, about in SECTIONS:
        field = Config.model_fields[name]
        if model is None:
            out += [f"## `{name}`", "", f"{field.description[0].upper()}{field.description[1:]}. Default: `{_yaml_value(getattr(config, name))}`.", ""]
            continue
        out += [f"## `{name}`", "", about, "", "| key | default | what it does |", "|---|---|---|"]
        instance = getattr(config, name)
        for key, item in model.model_fields.items():
            value = getattr(instance, key)
            shown = _yaml_value(value.model_dump() if isinstance(value, BaseModel) else value)
            out.append(f"| `{name}.{key}` | `{shown}` | {str(item.description).replace('|', '/')} |")
            for sub, part in _entries(item.annotation).items():  # a list of settings models: each entry's keys
                default = "required" if part.is_required() else f"`{_yaml_value(part.default)}`"
                out.append(f"| `{name}.{key}[].{sub}` | {default} | {str(part.description).replace('|', '/')} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _entries(annotation: Any) -> dict[str, Any]:
    """The fields of the settings model a list field holds (``judge.panel``: ``PanelMember``);
    empty for any other field."""
    from typing import get_args, get_origin

    if get_origin(annotation) is not list:
        return {}
    inner = get_args(annotation)
    if inner and isinstance(inner[0], type) and issubclass(inner[0], BaseModel):
        return dict(inner[0].model_fields)
    return {}


def write(root: Any) -> list[str]:
    """Write both files under the checkout ``root``; returns their paths."""
    from pathlib import Path

    root = Path(root)
    targets = {root / "ragjudge" / "configs" / "default.yaml": default_yaml(), root / "docs" / "configuration.md": markdown()}
    for path, text in targets.items():
        path.write_text(text, encoding="utf-8")
    return [str(p) for p in targets]


__all__ = ["default_yaml", "markdown", "write"]


def effective(loaded: Any) -> str:
    """``ragjudge score ... --print-config``: the config a run with these options uses, as YAML
    that ``-c`` reads back, each value followed by where it came from: ``default``, the config
    file, ``--set KEY``, the named option (``--min-pass-rate``), or ``embedded judge`` (the
    bundled model's calibrated settings, filled where nothing else set them). ``loaded``: an
    ``ragjudge.options.Loaded``."""
    import yaml

    config = loaded.config
    filled: list[str] = []
    if config.judge.model.startswith("local/"):
        config, filled = local.calibrated(config)
    embedded = {item.split("=", 1)[0] for item in filled}
    data = config.model_dump(mode="json")
    floors = data.get("gate", {}).get("min_pass_rate")
    if isinstance(floors, dict):  # a metric the map leaves out is gated at the default floor: shown, not hidden
        data["gate"]["min_pass_rate"] = {**floors, **{metric: config.min_pass_rate(metric) for metric in config.metrics
                                                      if metric not in floors and "*" not in floors}}

    def scalar(value: Any) -> str:
        return yaml.safe_dump(value, default_flow_style=True, width=10**9, allow_unicode=True).strip().removesuffix("\n...").strip()

    def source(key: str) -> str:
        return "embedded judge (ragjudge config show local)" if key in embedded else loaded.source(key)

    lines = ["# the config of this run; after each value, what set it: default, the config file, --set KEY or an option",
             "# (the options win over --set, which wins over the file); save it and pass it with -c to run with it"]

    def emit(value: Any, key: str, name: str, indent: str) -> None:
        # a key as YAML writes it: quoted where it would not read back as itself (the all-metrics key '*')
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{scalar(name)}:")
            for sub, item in value.items():
                emit(item, f"{key}.{sub}", str(sub), indent + "  ")
            return
        lines.append(_pad(f"{indent}{scalar(name)}: {scalar(value)}", 44) + f"# {source(key)}")

    ordered = [name for name, _, _ in SECTIONS if name in data]  # the documented order (config show's), whatever the model's
    for name in [*ordered, *(name for name in data if name not in ordered)]:
        emit(data[name], name, name, "")
    return "\n".join(lines) + "\n"

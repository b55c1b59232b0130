"""A run's options, checked by the library: what ``ragjudge score`` (and a Python caller) may ask
for, refused before any judging with a ``ConfigError`` (exit 2) that names the fix.

- ``FLAG_TABLE``: the one table from the config keys to the options of ``ragjudge score`` that set
  them; ``overrides`` builds the config overrides from the options' values, and ``FLAGS``
  (config key -> option, named in messages about a bad value) is derived from it.
- ``set_overrides``: ``--set KEY=VALUE`` (dotted config keys, values read as YAML), any key of the
  config, applied to the raw config before it is validated (an unknown key is the config's
  usual error naming it).
- ``names``: ``OptionError``, a refused option that carries its request fields and is named once,
  as its reader knows it (``Names``: the command line's flags, ``CLI``, or a Python call's
  keyword arguments, ``KEYWORDS``); ``check_budget``: ``judge.max_cost`` for a
  model with no known price (the ``Scorer`` checks it too). The checks of a run's options are
  ``ragjudge.run.checks``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ragjudge.audit import METRICS as AUDIT_METRICS
from ragjudge.errors import ConfigError
from ragjudge.judges import bundled_names
from ragjudge.settings import Config
from ragjudge.config import DEFAULT_METRICS, FIELDS, METRICS, read_file, validate
from ragjudge.config import PER_METRIC_KEYS as PER_METRIC_KEYS, Assignment as Assignment, lay as lay, layered as layered  # re-exported
from ragjudge.io import read_record
from ragjudge.options.names import CLI as CLI, KEYWORDS as KEYWORDS, Names as Names, check_budget as check_budget  # re-exported
from ragjudge.options.names import OptionError as OptionError, OptionInputError as OptionInputError, said as said  # re-exported

_JUDGE_KEYS = ("model", "transport", "api_base", "concurrency", "workers", "timeout", "max_retries", "rpm", "samples", "max_cost",
               "panel", "panel_rule", "panel_quorum", "cascade", "cascade_band", "batch", "batch_fallback")


@dataclass(frozen=True)
class Flag:
    """One option of ``ragjudge score`` that sets the config key ``key``: its ``option`` as shown
    (``--max-cost``), the command's ``param`` name, and how its value becomes the key's:
    ``value`` as given (None: not given), ``list`` (a repeated option, empty: not given),
    ``numbers`` (METRIC=NUMBER pairs), ``texts`` (METRIC=TEXT pairs), ``rates`` (RATE or METRIC=RATE), ``columns``
    (FIELD=COLUMN pairs), ``off`` (a switch that sets the key to False), ``ks`` (whole numbers
    separated by commas, ``1,3,5``)."""

    key: str
    option: str
    param: str
    kind: str = "value"


FLAG_TABLE: tuple[Flag, ...] = (
    *(Flag(f"judge.{key}", f"--{key.replace('_', '-')}", key) for key in _JUDGE_KEYS),
    Flag("metrics", "-m/--metric", "metric", "list"),
    Flag("columns", "--map", "map", "columns"),
    Flag("thresholds", "--threshold", "threshold", "numbers"),
    Flag("gate.min_pass_rate", "--min-pass-rate", "min_pass_rate", "rates"),
    Flag("gate.max_error_rate", "--max-error-rate", "max_error_rate", "rates"),
    Flag("gate.max_skip_rate", "--max-skip-rate", "max_skip_rate", "rates"),
    Flag("gate.max_diagnosis", "--max-diagnosis", "max_diagnosis", "numbers"),
    Flag("gate.max_rate", "--max-rate", "max_rate", "numbers"),
    Flag("gate.target_accuracy", "--target-accuracy", "target_accuracy"),
    Flag("gate.app_confidence", "--app-confidence", "app_confidence"),
    Flag("gate.audit", "--audit", "audit", "list"),
    Flag("labels", "--labels", "labels", "texts"),
    Flag("passage_relevance.at_k", "--at-k", "at_k", "ks"),
    Flag("pairwise.responses", "--pairwise", "pairwise", "pair"),
    Flag("gate.gate_on", "--gate-on", "gate_on"),
    Flag("cache.enabled", "--no-cache", "no_cache", "off"),
    Flag("cache.dir", "--cache-dir", "cache_dir"),
)


def _fields() -> tuple[str, ...]:
    return FIELDS


# config key -> the option of `ragjudge score` that sets it (named in messages about a bad value)
FLAGS: dict[str, str] = {
    **{flag.key: flag.option for flag in FLAG_TABLE if flag.kind not in ("columns", "off", "texts")},
    **{f"columns.{name}": "--map" for name in ("id", "request", "context", "expected_facts", "expected_response", "response")},
}


def pairs(values: list[str], flag: str, allowed: tuple[str, ...] | None = None) -> dict[str, str]:
    """``KEY=VALUE`` items -> a dict; raises ``ConfigError`` naming ``flag`` for an item without
    ``=``, an empty side, a key given twice with two values, or (with ``allowed``) an unknown key."""
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ConfigError(f"{flag} expects KEY=VALUE, got '{item}'")
        if allowed and key not in allowed:
            raise ConfigError(f"{flag}: unknown name '{key}'; use one of: {', '.join(allowed)}")
        if key in out and out[key] != value:  # the last would win unseen (--map request=x --map request=id)
            raise ConfigError(f"{flag} {key}= is given twice ({key}={out[key]}, {key}={value}); give it once")
        out[key] = value
    return out


def number(value: str, flag: str) -> float:
    """``value`` as a float; raises ``ConfigError`` naming ``flag``."""
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{flag}: '{value}' is not a number") from None


def column_pair(value: Any, flag: str) -> list[str]:
    """``response_a,response_b`` (or a library caller's two names) -> ``["response_a", "response_b"]``;
    raises ``ConfigError`` naming ``flag`` unless it names two different, non-empty columns."""
    items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [value]
    names = [str(item).strip() for item in items]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise ConfigError(f"{flag} expects two different response columns separated by a comma, A then B "
                          f"(e.g. response_a,response_b), got '{value if isinstance(value, str) else ','.join(names)}'")
    return names


def whole_numbers(value: Any, flag: str) -> list[int]:
    """``1,3,5`` (or a library caller's list) -> ``[1, 3, 5]``; raises ``ConfigError`` naming ``flag``
    for an item that is not a whole number >= 1."""
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        text = str(item).strip()
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(f"{flag} expects whole numbers >= 1 separated by commas (e.g. 1,3,5), got '{value}'")
        out.append(int(text))
    return out


def _put(tree: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


def overrides(options: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The config overrides that ``options`` (``score``'s parameter values, by ``Flag.param``)
    set, per ``FLAG_TABLE``, and the fields mapped by ``--map``."""
    over: dict[str, Any] = {}
    mapped: dict[str, str] = {}
    for flag in FLAG_TABLE:
        given = options.get(flag.param)
        if flag.kind == "value":
            if given is not None:
                _put(over, flag.key, given)
        elif flag.kind == "list":
            if given:
                _put(over, flag.key, list(given))
        elif flag.kind == "off":
            if given:
                _put(over, flag.key, False)
        elif flag.kind == "columns":
            mapped = pairs(given or [], flag.option, _fields())
            if mapped:
                _put(over, flag.key, mapped)
        elif flag.kind == "numbers":
            numbers = {k: number(v, flag.option) for k, v in pairs(given or [], flag.option).items()}
            if numbers:
                _put(over, flag.key, numbers)
        elif flag.kind == "texts":
            texts = pairs(given or [], flag.option)
            if texts:
                _put(over, flag.key, texts)
        elif flag.kind == "ks":
            if given is not None and given != "":
                _put(over, flag.key, whole_numbers(given, flag.option))
        elif flag.kind == "pair":
            if given is not None:
                _put(over, flag.key, column_pair(given, flag.option))
        elif flag.kind == "rates" and isinstance(given, (int, float)) and not isinstance(given, bool):
            _put(over, flag.key, given)  # a library caller's single number: every metric
        elif flag.kind == "rates":
            rates: dict[str, float] = {}
            for item in given or []:
                if "=" in item:
                    rates.update({k: number(v, flag.option) for k, v in pairs([item], flag.option).items()})
                else:
                    rates["*"] = number(item, flag.option)  # every metric of the run
            if rates:
                _put(over, flag.key, rates)
        else:
            raise AssertionError(flag.kind)
    return over, frozenset(mapped)


def set_overrides(items: list[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` items -> the nested config keys they set: ``judge.concurrency=4`` is
    ``{"judge": {"concurrency": 4}}``. The value is read as YAML (``4`` an int, ``0.3`` a float,
    ``true``, ``null``, ``text``, ``[a, b]``). Each item is laid over the ones before as every
    layer of the config is (``lay``): a later value replaces the key's, a whole section
    included, and a metric's own rate laid over a per-metric key's single number keeps that
    number for the other metrics (``gate.min_pass_rate=0.5`` then
    ``gate.min_pass_rate.completeness=0.8`` is ``{"*": 0.5, "completeness": 0.8}``). Raises
    ``ConfigError`` for an item without ``=``, an empty key or key part, a value that is not
    YAML, or a key below one set to a value."""
    out: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for assignment in set_assignments(items):
        lay(out, sources, assignment)
    return out


def set_flags(sets: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """config key -> ``--set KEY`` for every key ``sets`` (from ``set_overrides``) gives: a bad
    value is named as the option it came from."""
    out: dict[str, str] = {}
    for key, value in sets.items():
        dotted = f"{prefix}{key}"
        out[dotted] = f"--set {dotted}"
        if isinstance(value, dict):
            out.update(set_flags(value, dotted + "."))
    return out


# config keys that take one number for every metric or a number per metric: a per-metric value
# laid over a single number keeps that number for the other metrics (as the key "*")
def flag_assignments(options: dict[str, Any]) -> tuple[list[Assignment], frozenset[str]]:
    """The values the named options of ``score`` set (``options``: by ``Flag.param``), in the
    order they are laid over the config (``FLAG_TABLE``'s; for a repeated per-metric option,
    its single number first, then each ``METRIC=VALUE``), and the fields mapped by ``--map``.
    Raises ``ConfigError`` naming the option for a malformed item."""
    out: list[Assignment] = []
    mapped: dict[str, str] = {}
    for flag in FLAG_TABLE:
        given = options.get(flag.param)
        if flag.kind == "value":
            if given is not None:
                out.append(Assignment(flag.key, given, flag.option))
        elif flag.kind == "list":
            if given:
                out.append(Assignment(flag.key, list(given), flag.option))
        elif flag.kind == "off":
            if given:
                out.append(Assignment(flag.key, False, flag.option))
        elif flag.kind == "columns":
            mapped = pairs(given or [], flag.option, _fields())
            out += [Assignment(f"{flag.key}.{name}", column, flag.option) for name, column in mapped.items()]
        elif flag.kind == "numbers":
            out += [Assignment(f"{flag.key}.{k}", number(v, flag.option), flag.option) for k, v in pairs(given or [], flag.option).items()]
        elif flag.kind == "texts":
            out += [Assignment(f"{flag.key}.{k}", v, flag.option) for k, v in pairs(given or [], flag.option).items()]
        elif flag.kind == "ks":
            if given is not None and given != "":
                out.append(Assignment(flag.key, whole_numbers(given, flag.option), flag.option))
        elif flag.kind == "pair":
            if given is not None:  # an empty value is refused (column_pair), not taken for no option
                out.append(Assignment(flag.key, column_pair(given, flag.option), flag.option))
                if not options.get("metric"):  # the metric pairwise alone; with -m, the metrics it names (a judge with per: pair among them)
                    out.append(Assignment("metrics", ["pairwise"], flag.option))
        elif flag.kind == "rates" and isinstance(given, (int, float)) and not isinstance(given, bool):
            out.append(Assignment(flag.key, given, flag.option))  # a library caller's single number: every metric
        elif flag.kind == "rates":
            items = list(given or [])
            every = [number(item, flag.option) for item in items if "=" not in item]
            if len(set(every)) > 1:
                raise ConfigError(f"{flag.option} is given {len(every)} numbers for every metric ({', '.join(f'{v:g}' for v in every)}); "
                                  "give one (and METRIC=RATE for a metric of its own)")
            if every:
                out.append(Assignment(flag.key, every[-1], flag.option))  # every metric of the run, whatever the file says
            named = pairs([item for item in items if "=" in item], flag.option)
            out += [Assignment(f"{flag.key}.{k}", number(v, flag.option), flag.option) for k, v in named.items()]
        else:
            raise AssertionError(flag.kind)
    return out, frozenset(mapped)


def set_assignments(items: Sequence[str]) -> list[Assignment]:
    """``--set KEY=VALUE`` items as ``Assignment``s, in the order given, each value read as YAML.
    Raises ``ConfigError`` for an item without ``=``, an empty key or key part, or a value that
    is not YAML."""
    if not items:
        return []
    import yaml

    out = []
    for item in items:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not key.strip() or not all(part.strip() for part in parts):
            raise ConfigError(f"--set expects KEY=VALUE with a dotted config key, e.g. --set judge.concurrency=4; got '{item}'")
        key = ".".join(part.strip() for part in parts)
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {key}: '{text}' is not a YAML value ({getattr(exc, 'problem', exc)})") from None
        out.append(Assignment(key, value, f"--set {key}"))
    return out


@dataclass(frozen=True)
class Loaded:
    """A run's config and where each value came from: ``config`` (the validated ``Config``),
    ``mapped`` (the fields ``--map`` set), ``sources`` (dotted key -> what set it: the config
    file's path, ``--set KEY``, or the named option; keys absent have their defaults), and
    ``flagged`` (the keys a named option or ``--set`` set)."""

    config: Any
    mapped: frozenset[str]
    sources: dict[str, str]

    def source(self, key: str) -> str:
        """What set the dotted ``key``: its own source, else the nearest section's (a section set
        whole sets its keys), else ``default``."""
        return _source_of(self.sources, key)


def _source_of(sources: dict[str, str], key: str) -> str:
    """What set the dotted ``key`` by the layering's record ``sources`` (``Loaded.sources``): its
    own source, else the all-metrics key's of its per-metric map, else the nearest section's,
    else ``default``."""
    parts = key.split(".")
    for depth in range(len(parts), 0, -1):
        found = sources.get(".".join(parts[:depth]))
        if found is not None:
            return found
        star = ".".join([*parts[:depth - 1], "*"])
        if depth == len(parts) and ".".join(parts[:depth - 1]) in PER_METRIC_KEYS and star in sources:
            return sources[star]
    return "default"


def _setter(sources: dict[str, str], key: str) -> str | None:
    """What a message about the dotted ``key`` names as the place its value was set: the option
    that set it (or a section above it, or, when nothing did, every key below it), or ``--set
    KEY`` naming the key itself (``--set judge={concurrency: 0}`` is ``--set judge.concurrency``);
    None for the config file or a default (the message names the file)."""
    found = _source_of(sources, key)
    if found == "default":
        below = {source for dotted, source in sources.items() if dotted.startswith(key + ".")}
        return below.pop() if len(below) == 1 and not next(iter(below)).startswith("-c ") else None
    if found.startswith("-c "):
        return None
    return f"--set {key}" if found.startswith("--set ") else found


def load_layers(config: str | None, options: dict[str, Any], sets: Sequence[str] = (), held: Sequence[str] | None = None,
                recorded: tuple[str, dict[str, Any]] | None = None) -> Loaded:
    """The run's config in three layers, each laid over the one before key by key (``lay``): the
    file ``config`` (or a bundled one), then the ``--set`` items in the order given, then the
    named options (``options``: by ``Flag.param``). A value replaces what the layer below set
    at the same key, whole sections included: ``--min-pass-rate 0`` replaces the file's
    per-metric map, ``--min-pass-rate completeness=0.8`` that metric's entry. A metric named by
    an option must be one this run judges (``ConfigError`` naming the option and the run's
    metrics; ``held``: for a command that reads a scored table, the metrics the table holds, which
    the options' metrics must be among instead). ``recorded``: (a scored table's path, the run's
    settings it records, ``run_record``), the first layer where no ``config`` is given. Returns
    ``Loaded``. Raises ``ConfigError`` (exit 2)."""
    flagged, mapped = flag_assignments(options)
    given = set_assignments(list(sets))
    name = "options" if config is None else str(config)
    files: list[tuple[str, dict[str, Any]]] = []
    if config is not None:
        files.append((f"-c {config}", read_file(config)))
    elif recorded is not None:
        name = f"the run's settings recorded in {recorded[0]}"
        files.append((f"-c {recorded[0]}", {key: value for key, value in recorded[1].items() if key in RECORDED}))  # as a config file's
    data, sources = layered(files, [*given, *flagged])
    _check_flag_metrics(data, sources, held)
    # a bad value is named as what set it (the layering's record): a --set key, the named option, else the file
    settings = validate(Config, data, name, setter=lambda key: _setter(sources, key))
    return Loaded(settings, mapped, sources)


def table_record(path: str, sets: bool = False) -> tuple[dict[str, Any] | None, list[str]]:
    """The run's settings the scored table at ``path`` records (``run_record``; None where it
    records none, or none this version can read) and the notes ``ragjudge report`` says about
    them: where it falls back to the default thresholds and bounds (``sets``: ``--set`` gave
    some)."""
    record = read_record(path)
    if record is None:
        return None, [f"note: {path} does not record the run's gate (a Parquet file written by ragjudge score does): the report checks "
                      "the default thresholds and bounds" + (" where --set gives none" if sets else "")
                      + "; give the run's -c and --set to check its own"]
    try:
        load_layers(None, {}, recorded=(path, record))
    except ConfigError as exc:  # written by another version of ragjudge, say
        why = str(exc).removeprefix(f"the run's settings recorded in {path}: ")
        return None, [f"note: the run's settings recorded in {path} cannot be read ({why}): the report checks the default thresholds "
                      "and bounds; give the run's -c and --set to check its own"]
    return record, []


RECORDED = ("metrics", "thresholds", "gate", "labels", "columns", "judges", "pairwise")  # the settings a scored Parquet file records (run_record)


def run_record(config: Any, id_path: str | None, judged: Sequence[str] = ()) -> dict[str, Any]:
    """The settings of a run that decide its verdicts' gate, as a scored Parquet file records
    them (``TableWriter.record``) for ``ragjudge report`` and ``compare`` to read back as their
    first layer (``load_layers``' ``recorded``): the thresholds, the gate's bounds as they were
    given (one number for every metric stays one number, ``*``; a metric named keeps its own),
    the labels columns, the metrics when they were asked for, the id column the rows were named
    by (``id_path``, from the run's mapping; ``--map id=qid``), the judges the config defined
    (``judges:``, whose metrics the rest may name), the two responses a pairwise run compared
    (``pairwise.responses``) and the metrics the run judged (``judged``:
    a table scored again keeps an earlier run's columns, which this run's gate did not count).
    A dict of JSON values."""
    record: dict[str, Any] = {"gate": config.gate_given(), "labels": dict(config.labels)}
    if "thresholds" in config.model_fields_set:  # set (by the run, or the embedded judge's settings); else each metric's default
        record["thresholds"] = dict(config.thresholds)
    if "metrics" in config.model_fields_set:
        record["metrics"] = list(config.metrics)
    if id_path and id_path != "id":
        record["columns"] = {"id": id_path}
    responses = getattr(getattr(config, "pairwise", None), "responses", None)
    if responses:  # a pairwise run: the metric (or a judge per pair) is refused without the two columns it compared
        record["pairwise"] = {"responses": list(responses)}
    if config.judges:  # the judges the config defined: their metrics, thresholds and bounds are only known with them
        record["judges"] = [judge.model_dump(mode="json", exclude_unset=True) for judge in config.judges]
    if judged:
        record["judged"] = list(judged)  # not a config key: the metrics a reader of the table counts
    return record


_METRIC_KEYED = ("thresholds", "gate.min_pass_rate", "gate.max_error_rate", "gate.max_skip_rate", "labels")


def _flag_metrics(data: dict[str, Any], sources: dict[str, str]) -> Iterator[tuple[str, str]]:
    """Each metric named by an option or ``--set`` (not the file, not a default) in a
    metric-keyed map (``_METRIC_KEYED``), with how the message names what set it."""
    for key in _METRIC_KEYED:
        node: Any = data
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        for metric in node if isinstance(node, dict) else []:
            source = _source_of(sources, f"{key}.{metric}")
            if metric == "*" or source == "default" or source.startswith("-c "):
                continue
            yield metric, source if source.startswith("--set") else f"{source} {metric}=..."


def _check_flag_metrics(data: dict[str, Any], sources: dict[str, str], held: Sequence[str] | None = None) -> None:
    """Refuse a metric this run does not judge, named by an option or ``--set`` (``sources``: the
    layering's record; a config file's keys are the config's own check) in a metric-keyed map
    (``_METRIC_KEYED``), whether one entry was set (``--set gate.min_pass_rate.groundedness=0.5``)
    or the whole map (``--set gate.min_pass_rate={groundedness: 0.5}``): misspelt
    (``--max-skip-rate sufficency=0.1``) or not asked for (``--min-pass-rate groundedness=0.9``
    without ``-m groundedness``), its bound would gate nothing. The message names the fix
    (``_not_judged``). ``held``: a scored table's metrics (``ragjudge report``): a metric it does
    not hold is refused as such, with the closest it holds."""
    if held is not None:
        import difflib

        for metric, where in _flag_metrics(data, sources):
            if metric not in held:
                close = difflib.get_close_matches(metric, list(held), n=1)
                raise ConfigError(f"{where}: the table holds no '{metric}' (no {metric}_status, {metric}_passed columns)"
                                  + (f"; did you mean '{close[0]}'?" if close else ".")
                                  + f" It holds {', '.join(held) or 'no metric'}; a setting for another metric applies to nothing")
        return
    metrics = data.get("metrics")
    run = [str(m) for m in metrics] if isinstance(metrics, list) and metrics else list(DEFAULT_METRICS)
    if "*" in run:  # no metric: the config's own check says so
        return
    gate = data.get("gate")
    audits = gate.get("audit") if isinstance(gate, dict) else None
    if isinstance(audits, (list, tuple)) and "abstention" in audits or audits == "abstention":
        run += [m for m in AUDIT_METRICS if m not in run]  # --audit abstention judges them (config.raw's _audit_metrics)
    for metric, where in _flag_metrics(data, sources):
        if metric not in run:
            raise ConfigError(f"{where}: this run does not judge '{metric}'" + _not_judged(metric, run, data, _source_of(sources, "metrics")))


def _not_judged(metric: str, run: list[str], data: dict[str, Any], listed: str) -> str:
    """The fix for a bound on ``metric``, which the run (judging ``run``; ``listed``: what set
    that list, ``default`` for none) does not judge: a name close to a metric's (difflib) is
    "did you mean"; a metric that exists is judged by naming every metric with -m, since -m
    replaces the list (``-m sufficiency -m completeness -m groundedness``); any other name is
    no metric (the known ones listed: built-in, bundled, defined in the config's ``judges:``)."""
    import difflib

    judges = data.get("judges")
    defined = [j["name"] for j in judges if isinstance(j, dict) and isinstance(j.get("name"), str)] if isinstance(judges, list) else []
    known = list(dict.fromkeys([*METRICS, *bundled_names(), *defined]))

    def add(name: str) -> str:
        return (f"it judges {', '.join(run)}, and -m replaces {'the default list' if listed == 'default' else 'that list'}: to judge "
                f"{name} too, give {' '.join(f'-m {m}' for m in [*run, name])}")

    if metric in known:
        return f"; {add(metric)}"
    close = difflib.get_close_matches(metric, list(dict.fromkeys([*run, *known])), n=1)
    if close and close[0] in run:
        return f"; did you mean '{close[0]}'? (it judges {', '.join(run)})"
    if close:
        fix = add(close[0])
        return f"; did you mean '{close[0]}'? {fix[0].upper()}{fix[1:]}"
    return f", and no metric has that name; it judges {', '.join(run)} (known metrics: {', '.join(known)} or a judge defined in the config)"


def load(config: str | None, options: dict[str, Any], sets: Sequence[str] = (), held: Sequence[str] | None = None,
         recorded: tuple[str, dict[str, Any]] | None = None) -> tuple[Any, frozenset[str]]:
    """The run's validated ``Config`` (``load_layers``, ``held`` and ``recorded`` as it takes
    them) and the fields mapped by ``--map``."""
    loaded = load_layers(config, options, sets, held, recorded)
    return loaded.config, loaded.mapped


# the options of `ragjudge score` not named --FIELD (a ScoreRequest field, or the config key judge.max_cost)

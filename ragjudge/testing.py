"""Judge verdicts as test assertions, and one shared ``Scorer`` per test session.

    from ragjudge.testing import assert_sufficient, assert_complete, assert_passes

    def test_the_retriever_finds_the_capital():
        assert_sufficient(request="What is the capital of France?", context=retrieve("capital of France"),
                          expected_facts=["Paris is the capital of France"])

    def test_the_eval_set():
        assert_passes(pd.read_json("eval.jsonl", lines=True), metrics=["sufficiency"], min_pass_rate=0.9)

Each helper judges with the current ``Session``'s ``Scorer``: under pytest, the session the
plugin (``ragjudge.pytest_plugin``) opens for the test session, configured from ``[tool.ragjudge]``
in ``pyproject.toml`` or ``--ragjudge-config``; elsewhere a module-level default session
(``configure`` sets its config; ragjudge's defaults otherwise). A session builds its ``Scorer`` on
first use and keeps it: one response cache, one concurrency limit and one ``Summary`` of
everything judged (the plugin's terminal summary prints it). ``scorer=`` judges with another.

A failed check raises ``VerdictError`` (an ``AssertionError``) whose message shows each failing
row's verdict (status, score, the threshold, passed), its rationale and the missing facts or
statements; it carries the verdicts (``verdicts``) and, from ``assert_passes``, the scored
frame (``scored``). A verdict that is not ok (a judge error, a row skipped for lack of a field)
fails too: the assertion was not established. Bad arguments raise ``ValueError``; bad settings
``ConfigError``; unusable input ``InputError``.

Also here, without pytest: ``project_config`` (the config a project's ``[tool.ragjudge]`` and
``--ragjudge-config`` make, and its tables) and ``Table`` (a table collected as test items:
one per row and metric, scored once).
"""

from __future__ import annotations

import atexit
import copy
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.counting import row_ids, row_names, table_verdicts
from ragjudge.gate import check_gate, row_name
from ragjudge.reports.gate_text import failures_of
from ragjudge.config import RawConfig, layered, read_file, validate
from ragjudge.settings import Config, load_config
from ragjudge.plan import resolve
from ragjudge.scoring import Scorer
from ragjudge.types import Reason

__all__ = ["ProjectConfig", "Session", "Table", "VerdictError", "activate", "assert_complete", "assert_passes", "assert_sufficient",
           "configure", "current", "deactivate", "describe_verdict", "project_config"]

SHOWN_ROWS = 50  # failing rows a message lists; the rest are counted


class VerdictError(AssertionError):
    """A judged assertion failed. ``verdicts``: the ``ragjudge.types.Verdict`` of each failing
    row (``assert_passes``: of each row that did not pass, per failing metric); ``scored``: the
    ``Scored`` of ``assert_passes`` (None for the one-row helpers)."""

    def __init__(self, message: str, verdicts: list[Any], scored: Any = None) -> None:
        super().__init__(message)
        self.verdicts = verdicts
        self.scored = scored


# -- the session: one Scorer, built on first use --------------------------------------------


class Session:
    """One ``Scorer`` for a test session, built on first use from ``config`` (a
    ``ragjudge.settings.Config``, a YAML path or bundled name, or None: ragjudge's defaults;
    ``settings`` laid over it, as ``load_config`` takes them) or given ready (``scorer``, not
    closed here), and the ``Summary`` of everything scored through it (``summary``: None until
    something is). Thread-safe; ``close()`` closes the scorer it built."""

    def __init__(self, config: Any = None, *, scorer: Any = None, **settings: Any) -> None:
        self._config = config
        self._settings = settings
        self._scorer = scorer
        self._own = scorer is None
        self._views: dict[tuple[tuple[str, ...], bool], Any] = {}  # (metrics, asked) -> ``Scorer.only`` of the scorer
        self._lock = threading.Lock()
        self.summary: Any = None
        self.scored_tables: list[str] = []  # the tables scored, in order (``Table.score``)

    @property
    def config(self) -> Any:
        """The ``Config`` the scorer is (or will be) built with. Raises ``ConfigError``."""
        if self._scorer is not None:
            return self._scorer.config

        if not isinstance(self._config, Config) or self._settings:
            if isinstance(self._config, Config):
                self._config = self._config.updated(self._settings)
            else:
                self._config = load_config(self._config, self._settings)
            self._settings = {}
        return self._config

    @property
    def started(self) -> bool:
        """Whether the scorer exists (was built or given)."""
        return self._scorer is not None

    def scorer(self) -> Any:
        """The session's ``Scorer``, built on the first call. Raises ``ConfigError`` for bad
        settings (and ``LocalModelError`` when the embedded judge is asked for but missing)."""
        with self._lock:
            if self._scorer is None:
                self._scorer = Scorer(self.config)
            return self._scorer

    def score(self, frame: Any, metrics: list[str] | None = None, asked: bool = True, again: list[tuple[Any, Any, int]] = ()) -> Any:
        """Score ``frame`` (a DataFrame or a list of dicts) with ``metrics`` (None: the
        scorer's own) in one ``Scorer`` call, and add its summary to ``summary``. ``asked``:
        whether a metric that needs a column the frame lacks is an ``InputError`` (True) or a
        note (``Scorer.only``). ``again``: the error verdicts these rows had, each ``(verdict,
        row id, position)``, when they are judged again (a rerun test): those rows leave the
        summary's counts (``drop_error``; their calls and cost stay), so that each
        row counts once, with its last verdict. Returns ``Scored``."""
        scorer = self.scorer()
        if metrics is not None and list(metrics) != [j.name for j in scorer.judges]:
            key = (tuple(metrics), asked)
            with self._lock:
                if key not in self._views:
                    self._views[key] = scorer.only(list(metrics), asked=asked)
                scorer = self._views[key]
        scored = scorer.score(frame)
        with self._lock:
            self.summary = scored.summary if self.summary is None else self.summary.merge(scored.summary)
            for verdict, ident, position in again:
                drop_error(self.summary.metrics[verdict.metric], verdict, ident, position)
                self.summary.rows -= 1
        return scored

    def close(self) -> None:
        """Close the scorer this session built (its connections and cache); a later call
        builds a new one."""
        with self._lock:
            scorer, self._scorer = self._scorer, None
            self._views.clear()
        if scorer is not None and self._own:
            scorer.close()

    def summary_lines(self) -> list[str]:
        """What the session judged, for a terminal: per metric, its judged rows, pass rate,
        errors and skips; then the judge model, provider calls, cached rows and cost (USD; unknown
        when the model has no price). Empty when nothing was scored."""
        summary = self.summary
        if summary is None:
            return []
        out = []
        for name, m in summary.metrics.items():
            rate = "-" if m.pass_rate is None else f"{m.pass_rate:.2f}"
            extra = "".join(f", {count} {what}" for count, what in ((m.error, "error(s)"), (m.skipped, "skipped")) if count)
            out.append(f"{name}: pass rate {rate} ({m.passed} of {m.ok} ok rows passed{extra})")
        cached = sum(m.cached for m in summary.metrics.values())
        cost = summary.cost_usd
        spent = f"cost ${cost:.4f}" if cost is not None else f"cost unknown (no price for {summary.judge_model}: set judge.price)"
        out.append(f"judge {summary.judge_model}: {summary.provider_calls} provider call(s), {cached} verdict(s) from the cache, {spent}")
        return out


_active: list[Session] = []
_default: Session | None = None
_default_lock = threading.Lock()


def activate(session: Session) -> None:
    """Make ``session`` the current one (the pytest plugin does, at the start of a test
    session); ``deactivate`` restores the one before."""
    _active.append(session)


def deactivate(session: Session) -> None:
    """Undo ``activate(session)`` (its scorer stays open: ``session.close()`` closes it)."""
    if session in _active:
        _active.remove(session)


def current() -> Session:
    """The session the helpers judge with: the last one activated (under pytest, the test
    session's), else the module-level default (``configure``; built on first use and closed
    at exit)."""
    global _default
    if _active:
        return _active[-1]
    with _default_lock:
        if _default is None:
            _default = Session()
        return _default


def configure(config: Any = None, **settings: Any) -> Session:
    """Set the module-level default session's config (used outside pytest): ``config`` a
    ``Config``, a YAML path or a bundled name; ``settings`` as ``load_config`` takes them
    (``model="openai/gpt-4o-mini"``, ``judge={...}``). Closes the previous default's scorer.
    Returns the new default ``Session``. Raises ``ConfigError`` for bad settings."""
    global _default
    session = Session(config, **settings)
    session.config  # noqa: B018 - checked now, not at the first assertion
    with _default_lock:
        old, _default = _default, session
    if old is not None:
        old.close()
    return session


def _close_default() -> None:
    if _default is not None:
        _default.close()


atexit.register(_close_default)


# -- the assertions -----------------------------------------------------------------------------


def describe_verdict(verdict: Any, threshold: float | None = None) -> str:
    """One row's verdict as failure messages show it: ``score 0 (passes at 1), passed False:
    RATIONALE; missing: A; B`` for an ok verdict, ``error: WHY`` / ``skipped: WHY`` otherwise."""
    if verdict.status != "ok":
        return f"{verdict.status}: {verdict.error or 'no reason given'}"
    at = f" (passes at {threshold:g})" if threshold is not None else ""
    text = f"score {verdict.score:g}{at}, passed {verdict.passed}"
    if verdict.rationale:
        text += f": {verdict.rationale}"
    if verdict.missing:
        text += f"; missing: {'; '.join(verdict.missing)}"
    return text


def _one_row(metric: str, row: dict[str, Any], scorer: Any) -> Any:
    """Judge one row with ``metric`` and return its verdict; raises ``VerdictError`` unless it
    is ok and passed."""
    __tracebackhide__ = True

    session = current() if scorer is None else Session(scorer=scorer)
    scored = session.score([{k: v for k, v in row.items() if v is not None}], metrics=[metric])
    verdict = table_verdicts(scored.frame, metric)[0]
    if verdict.status == "ok" and verdict.passed:
        return verdict
    threshold = scored.summary.metrics[metric].threshold
    what = "failed" if verdict.status == "ok" else "was not judged"
    raise VerdictError(f"{metric} {what}: {describe_verdict(verdict, threshold)}", [verdict])


def assert_sufficient(request: str, context: Any, expected_facts: list[str] | None = None, expected_response: str | None = None, *,
                      scorer: Any = None) -> Any:
    """Assert that ``context`` (a string, a list of passages, or what a table's context cell
    holds) holds enough to answer ``request``: the ``sufficiency`` judge says yes. With
    ``expected_facts`` (a list of strings) or ``expected_response`` it judges against that
    ground truth (every fact must be supported), else reference-free.

    Judges with the current session's scorer (``current``; ``scorer``: this ``Scorer``
    instead), its settings for sufficiency included. Returns the ``Verdict`` (score 1.0 yes /
    0.0 no). Raises ``VerdictError`` (an ``AssertionError``) with the verdict, the rationale and
    the facts not supported when the judge says no, errs or skips the row (an empty context
    fails); ``ValueError`` for an empty ``request`` or a ``context`` of None."""
    __tracebackhide__ = True
    if not isinstance(request, str) or not request.strip():
        raise ValueError("assert_sufficient needs a request (a non-empty string)")
    if context is None:
        raise ValueError("assert_sufficient needs a context: a string or a list of passages (an empty one fails the assertion)")
    row = {"request": request, "context": context, "expected_facts": expected_facts, "expected_response": expected_response}
    return _one_row("sufficiency", row, scorer)


def assert_complete(response: str, expected_response: str | None = None, expected_facts: list[str] | None = None,
                    request: str | None = None, *, scorer: Any = None) -> Any:
    """Assert that ``response`` holds the ground truth: the ``completeness`` judge scores it at
    or above its threshold (1..5, passes at 3 unless ``thresholds.completeness`` says otherwise).
    The ground truth is ``expected_response`` (a string) or ``expected_facts`` (a list of
    strings); ``request`` is shown to the judge when given.

    Judges with the current session's scorer (``scorer``: this one). Returns the ``Verdict``.
    Raises ``VerdictError`` (an ``AssertionError``) with the score, the threshold, the rationale
    and the statements missing from the response when it scores below the threshold, errs or
    skips the row; ``ValueError`` without a response or without a ground truth."""
    __tracebackhide__ = True
    if not isinstance(response, str) or not response.strip():
        raise ValueError("assert_complete needs a response (a non-empty string)")
    if not expected_response and not expected_facts:
        raise ValueError("assert_complete needs a ground truth: expected_response=... or expected_facts=[...]")
    row = {"request": request, "response": response, "expected_response": expected_response, "expected_facts": expected_facts}
    return _one_row("completeness", row, scorer)


def assert_passes(frame: Any, metrics: list[str] | str | None = None, min_pass_rate: float | dict[str, float] | None = None, *,
                  scorer: Any = None) -> Any:
    """Score ``frame`` (a pandas DataFrame of evaluation rows, or a list of dicts; columns found
    as ``ragjudge score`` finds them, or ``columns:`` in the config) with ``metrics`` (a name or
    a list; None: the session config's ``metrics``) in one call, and assert each metric's gate:
    pass rate (0..1, over ok rows) >= ``min_pass_rate`` (a number for every metric, or
    metric -> number; None: the config's ``gate.min_pass_rate``, 1.0 unless set), error rate <=
    ``gate.max_error_rate`` (0 unless set), skip rate <= ``gate.max_skip_rate``; a metric that
    judged no row fails when ``min_pass_rate`` is given.

    Returns the ``Scored`` (``frame``, ``summary``, ``notes``). Raises ``VerdictError`` (an
    ``AssertionError``; ``.scored`` holds the ``Scored``) naming each failed check as the
    command prints it (``completeness: pass rate 0.50 < 0.80 (1 of 2 ok rows passed)``) and, per
    failed metric, each row that did not pass, by id (else ``row N``), with its verdict and
    rationale (the first ``SHOWN_ROWS``; the rest counted). ``ValueError`` for a rate off 0..1."""
    __tracebackhide__ = True
    session = current() if scorer is None else Session(scorer=scorer)
    names = [metrics] if isinstance(metrics, str) else (None if metrics is None else list(metrics))
    scored = session.score(frame, metrics=names)
    summary = copy.deepcopy(scored.summary)  # its bounds are this assertion's
    floors = {}
    if min_pass_rate is not None:
        floors = dict(min_pass_rate) if isinstance(min_pass_rate, dict) else {m: min_pass_rate for m in summary.metrics}
        for metric, rate in floors.items():
            if metric not in summary.metrics:
                raise ValueError(f"min_pass_rate names {metric!r}, which this assertion does not judge ({', '.join(summary.metrics)})")
            if not 0.0 <= float(rate) <= 1.0:
                raise ValueError(f"min_pass_rate for {metric} must be between 0 and 1, not {rate}")
            summary.metrics[metric].min_pass_rate = float(rate)
            summary.metrics[metric].bounds = tuple(dict.fromkeys([*summary.metrics[metric].bounds, "min_pass_rate"]))
    gate = check_gate(summary)
    if gate.passed:
        return scored
    failed_metrics = [c.metric for c in gate.checks if c.failed and c.metric is not None] or list(summary.metrics)
    id_path = session.scorer().resolve(scored.frame).paths.get("id")
    rows = row_names(scored.frame, id_path)
    lines = [f"FAIL {text}" for text in failures_of(gate)]
    failing = []
    for metric in dict.fromkeys(failed_metrics):
        threshold = summary.metrics[metric].threshold
        for name, verdict in zip(rows, table_verdicts(scored.frame, metric)):
            if verdict.status == "error" or (verdict.status == "ok" and not verdict.passed):
                failing.append(verdict)
                if len(failing) <= SHOWN_ROWS:
                    lines.append(f"  {name} {metric}: {describe_verdict(verdict, threshold)}")
    if len(failing) > SHOWN_ROWS:
        lines.append(f"  ... and {len(failing) - SHOWN_ROWS} more row(s) (VerdictError.scored.frame holds every verdict)")
    raise VerdictError("\n".join(lines), failing, scored)


# -- a project's config: [tool.ragjudge] and --ragjudge-config ----------------------------------

PROJECT_KEYS = ("config", "tables")  # [tool.ragjudge]'s own keys; the others are the config's


@dataclass
class ProjectConfig:
    """What a project asks of the pytest plugin: the ``config`` (``ragjudge.settings.Config``;
    None when nothing configures ragjudge: its defaults) and the ``tables`` to collect (absolute
    paths), with ``sources`` (where the settings came from, in the order laid: lowest first) and
    ``set`` (whether anything configured ragjudge or listed a table)."""

    config: Any
    tables: list[Path] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    set: bool = False


def project_config(pyproject: str | Path | None = None, override: str | Path | None = None, tables: list[str] | None = None,
                   cwd: str | Path | None = None) -> ProjectConfig:
    """The config of a test session, laid from lowest to highest: ragjudge's defaults; the YAML
    file (or bundled config name) that ``[tool.ragjudge] config`` names (relative to the
    ``pyproject.toml``); the other keys of ``[tool.ragjudge]`` (the config's own keys:
    ``metrics``, ``thresholds``, ``judge.model``, ``cache.dir``, ...); the YAML file
    ``override`` (``--ragjudge-config``, relative to ``cwd``). Each layer overrides the ones
    below it key by key. The tables are ``[tool.ragjudge] tables`` (relative to the
    ``pyproject.toml``) then ``tables`` (``--ragjudge``, relative to ``cwd``).

    Raises ``ConfigError`` naming the layer for TOML that cannot be read, an unknown key, a bad
    value, a missing config file or a table that does not exist."""
    import tomllib

    cwd = Path(cwd or Path.cwd())
    layers: list[tuple[str, dict[str, Any]]] = []
    listed: list[Path] = []
    where = None
    if pyproject is not None and Path(pyproject).is_file():
        pyproject = Path(pyproject)
        try:
            section = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("ragjudge")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{pyproject}: cannot read [tool.ragjudge]: {exc}") from None
        where = f"{pyproject.name} [tool.ragjudge]"
        if section is not None:
            if not isinstance(section, dict):
                raise ConfigError(f"{pyproject.name}: tool.ragjudge must be a table ([tool.ragjudge])")
            section = dict(section)
            base = section.pop("config", None)
            if base is not None:
                if not isinstance(base, str) or not base.strip():
                    raise ConfigError(f"{where}: config must be the path of a YAML config (or a bundled name), not {base!r}")

                path = pyproject.parent / base
                layers.append((base, read_file(path if path.exists() else base)))
            named = section.pop("tables", [])
            if isinstance(named, str) or not isinstance(named, list) or not all(isinstance(t, str) for t in named):
                raise ConfigError(f"{where}: tables must be a list of paths, e.g. tables = [\"evals/eval.jsonl\"]")
            listed += [_table_path(pyproject.parent / t, f"{where} tables") for t in named]
            layers.append((where, section))
    if override is not None:
        layers.append((f"--ragjudge-config {override}", read_file(cwd / override if (cwd / override).exists() else override)))
    listed += [_table_path(cwd / t, "--ragjudge") for t in tables or []]
    if not layers:  # nothing configures ragjudge: ragjudge's defaults, loaded when first used (pydantic and the judges stay unimported)
        return ProjectConfig(None, list(dict.fromkeys(listed)), [], bool(listed))
    for source, layer in layers:
        validate(RawConfig, layer, source)  # each layer's own keys, named by the layer that holds them
    data, _ = layered(layers)  # as the command line lays its config file (config.layered)
    sources = [source for source, _ in layers]
    config = validate(Config, data, " over ".join(reversed(sources)) or "config")
    return ProjectConfig(config, list(dict.fromkeys(listed)), sources, bool(layers or listed))


def _table_path(path: Path, where: str) -> Path:
    if not path.exists():
        raise ConfigError(f"{where}: no table at {path}")
    return path.resolve()


# -- a table as test items ------------------------------------------------------------------------


class Table:
    """An evaluation table collected as test items (one per row and metric): its rows
    (``frame``), their item names (``names``: each row's id, else ``row N`` from 1; ``::`` in an
    id becomes ``:`` and a repeated id gets ``#2``, ``#3``...), the ``metrics`` of the session
    config, and, once ``score`` has run, each row's verdicts. Read with ``read``."""

    def __init__(self, path: Path, frame: Any, names: list[str], metrics: list[str], asked: bool, id_column: str | None = "id") -> None:
        self.path = path
        self._id_column = id_column
        self.frame = frame
        self.names = names
        self.metrics = metrics
        self.asked = asked
        self._verdicts: dict[tuple[int, str], Any] = {}
        self._thresholds: dict[str, float] = {}
        self._error: BaseException | None = None
        self._scored = False
        self._lock = threading.Lock()

    @property
    def scored(self) -> bool:
        """Whether ``score`` has run (or failed)."""
        return self._scored

    @classmethod
    def read(cls, path: str | Path, config: Any) -> "Table":
        """The table at ``path`` (JSONL, CSV, Parquet or JSON, by its suffix) with ``config``'s
        column mapping and metrics. Raises ``InputError`` for a table that cannot be read or a
        mapped column it lacks."""
        from ragjudge.io import read_table

        path = Path(path)
        frame = read_table(str(path))
        mapping = resolve(frame, config.columns, path.name)
        names, seen = [], {}
        for index, ident in enumerate(row_ids(frame, mapping.paths.get("id"))):
            name = " ".join(row_name(ident, index).replace("::", ":").split()) or f"row {index + 1}"
            seen[name] = seen.get(name, 0) + 1
            names.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
        return cls(path, frame, names, list(config.metrics), "metrics" in config.model_fields_set, mapping.paths.get("id"))

    def score(self, session: Session, positions: list[int] | None = None, metrics: list[str] | None = None) -> None:
        """Score the rows at ``positions`` (None: every row) with ``metrics`` (None: every metric
        of the table) in one call of ``session``'s scorer; later calls do nothing. An error
        (bad settings, unusable input) is kept and raised by this and every later call."""
        with self._lock:
            if self._scored:
                if self._error is not None:
                    raise self._error
                return
            self._scored = True

            positions = sorted(set(range(len(self.frame)) if positions is None else positions))
            metrics = [m for m in self.metrics if metrics is None or m in metrics]
            try:
                rows = self.frame.iloc[positions].reset_index(drop=True)
                scored = session.score(rows, metrics=metrics, asked=self.asked)
            except BaseException as exc:
                self._error = exc
                raise
            session.scored_tables.append(self.path.name)
            for metric in metrics:
                self._thresholds[metric] = scored.summary.metrics[metric].threshold
                for position, verdict in zip(positions, table_verdicts(scored.frame, metric)):
                    self._verdicts[(position, metric)] = verdict

    def retry(self, session: Session, position: int, metric: str) -> bool:
        """Judge again what the row at ``position`` read as ``metric``'s error: a rerun of its
        test (pytest-rerunfailures' ``--reruns``) retries the judge rather than reading the
        stored error. When the row's verdict is an error, that row and metric alone are judged
        again, in one ``Scorer`` call, and the new verdict replaces it (the error leaves the
        session's counts, ``Session.score``'s ``again``; an unusable input makes no call and
        gives its error again, as does a judge stopped for the session by an authentication,
        permission or quota error). An error of a spent budget (``judge.max_cost``) is not
        retried, nor a table whose scoring raised (unusable input or settings: the same again).
        Returns whether the row was judged again; raises what the scoring raises."""
        with self._lock:
            old = self._verdicts.get((position, metric))
            if old is None or old.status != "error" or old.reason is Reason.BUDGET_REACHED:
                return False
            rows = self.frame.iloc[[position]].reset_index(drop=True)
            ident = row_ids(self.frame, self._id_column)[position]
            scored = session.score(rows, metrics=[metric], asked=self.asked, again=[(old, ident, position)])
            self._verdicts[(position, metric)] = table_verdicts(scored.frame, metric)[0]
            return True

    def verdict(self, position: int, metric: str) -> Any:
        """The ``Verdict`` of the row at ``position`` for ``metric`` (``score`` first; None for
        a row it left out)."""
        return self._verdicts.get((position, metric))

    def threshold(self, metric: str) -> float | None:
        """``metric``'s pass threshold (known once scored)."""
        return self._thresholds.get(metric)


def drop_error(self: Any, verdict: Any, ident: Any = None, index: int | None = None) -> None:
    """Undo ``MetricSummary.add`` (``self``) of an error ``verdict`` whose row was judged again and counted anew (a
    test rerun by pytest-rerunfailures): the row leaves ``rows``, ``error`` and its reason's
    count, and the error ids; the calls it made and their cost stay in ``usage``. Raises
    ``ValueError`` for a verdict that is not an error, or when no error is counted."""
    if verdict.status != "error" or self.error < 1:
        raise ValueError(f"{self.metric}: no error counted to drop (status {verdict.status}, {self.error} error(s))")
    self.rows -= 1
    self.error -= 1
    reason = (verdict.error or "error")[:300]
    if self.errors_by.get(reason, 0) > 1:
        self.errors_by[reason] -= 1
    else:
        self.errors_by.pop(reason, None)
    self.input_errors -= verdict.input_error
    self.interrupted -= verdict.reason is Reason.INTERRUPTED
    self.unpaid -= verdict.reason is Reason.BUDGET_REACHED
    name = row_name(ident, self.rows if index is None else index)
    if name in self.ids["error"]:
        self.ids["error"].remove(name)
    if verdict.cached:
        self.cached -= 1

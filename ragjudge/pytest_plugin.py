"""ragjudge's pytest plugin (entry point ``pytest11``: ``ragjudge``; ``-p no:ragjudge`` turns it off).

- **One scorer per test session.** ``pytest_configure`` reads the session's config
  (``ragjudge.testing.project_config``: ragjudge's defaults < the YAML that ``[tool.ragjudge]
  config`` names < the other keys of ``[tool.ragjudge]`` in ``pyproject.toml`` <
  ``--ragjudge-config PATH``) and makes it the current ``ragjudge.testing.Session``: the
  ``assert_*`` helpers and the collected tables judge with its ``Scorer`` (built on first use:
  one response cache, one concurrency limit). A bad config is a usage error (exit 4).
- **Tables as test items.** Each table in ``[tool.ragjudge] tables`` (collected when pytest is
  given no paths, or when the table is given) or ``--ragjudge TABLE`` (always) is a file node
  with one node per row, named by the row's id (else ``row N``), and under it one item per metric:
  ``evals/eval.jsonl::r7::sufficiency``. ``-k``, ``-m ragjudge`` (every item carries the marker),
  ``--lf`` and JUnit work as for any test. The first item of a table to run scores every
  selected row of it with every selected metric in one ``Scorer`` call; the others read their
  verdict. An item passes when its verdict passed, fails showing the verdict (score, threshold,
  passed), the rationale and the missing facts, fails on a judge error, and is skipped when the
  row was skipped (the reason shown). Its verdict is in its ``user_properties`` (JUnit properties).
  A rerun of an item (pytest-rerunfailures' ``--reruns``) whose row and metric got a judge error
  judges them again (``Table.retry``); the summary counts the row once, with its last verdict.
- **A terminal summary**: per metric, the pass rate over what the session judged; then the judge,
  the provider calls, the verdicts from the cache and the cost (USD).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragjudge import testing
from ragjudge.errors import RagjudgeError

_STATE = pytest.StashKey["_State"]()


class _State:
    """A test session's ragjudge: the project's config and tables, the ``Session``, and the
    tables read at collection (path -> ``Table``)."""

    def __init__(self, project: testing.ProjectConfig, session: testing.Session) -> None:
        self.project = project
        self.session = session
        self.listed = set(project.tables)
        self.tables: dict[Path, testing.Table] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragjudge", "ragjudge: LLM judges of RAG rows as tests")
    group.addoption("--ragjudge", action="append", default=[], metavar="TABLE", dest="ragjudge_tables",
                    help="collect TABLE (JSONL, CSV, Parquet or JSON) as test items, one per row and metric (repeatable; "
                         "added to [tool.ragjudge] tables)")
    group.addoption("--ragjudge-config", metavar="PATH", dest="ragjudge_config", default=None,
                    help="a ragjudge YAML config (or bundled name: default, local, mlflow) laid over [tool.ragjudge] key by key")


def _pyproject(config: pytest.Config) -> Path | None:
    """The ``pyproject.toml`` that holds ``[tool.ragjudge]``: pytest's own config file when it is
    one, else the one in the rootdir (if any)."""
    if config.inipath is not None and config.inipath.name == "pyproject.toml":
        return config.inipath
    found = config.rootpath / "pyproject.toml"
    return found if found.is_file() else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ragjudge: an item judged by ragjudge (a row and metric of a collected table)")
    try:
        project = testing.project_config(_pyproject(config), config.getoption("ragjudge_config"),
                                         config.getoption("ragjudge_tables"), cwd=config.invocation_params.dir)
    except RagjudgeError as exc:
        raise pytest.UsageError(f"ragjudge: {exc}") from None
    session = testing.Session(project.config)
    config.stash[_STATE] = _State(project, session)
    testing.activate(session)
    given = [str(config.invocation_params.dir / t) for t in config.getoption("ragjudge_tables")]
    if config.args_source is not pytest.Config.ArgsSource.ARGS:  # no paths given: the listed tables too
        given += [str(path) for path in project.tables]
    config.args.extend(path for path in dict.fromkeys(given) if path not in config.args)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        testing.deactivate(state.session)
        state.session.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(_STATE, None)
    if state is not None and file_path.resolve() in state.listed:
        return TableFile.from_parent(parent, path=file_path)
    return None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    lines = state.session.summary_lines() if state is not None else []
    if lines:
        terminalreporter.write_sep("=", "ragjudge")
        for line in lines:
            terminalreporter.write_line(line)


class TableFile(pytest.File):
    """A collected table: one ``TableRow`` per row."""

    def collect(self) -> Any:
        state = self.config.stash[_STATE]
        try:
            table = testing.Table.read(self.path, state.session.config)
        except RagjudgeError as exc:
            raise TableError(str(exc)) from None
        state.tables[self.path] = table
        for position, name in enumerate(table.names):
            yield TableRow.from_parent(self, name=name, table=table, position=position)

    def repr_failure(self, excinfo: Any) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, TableError):
            return f"ragjudge: {excinfo.value}"
        return super().repr_failure(excinfo)


class TableRow(pytest.Collector):
    """One row of a table: one ``JudgedItem`` per metric."""

    def __init__(self, *, table: testing.Table, position: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.position = position

    def collect(self) -> Any:
        for metric in self.table.metrics:
            yield JudgedItem.from_parent(self, name=metric, table=self.table, position=self.position, metric=metric)


class TableError(Exception):
    """A table that could not be read, scored or judged: its message is the whole report."""


_PROPERTIES = ("metric", "status", "score", "passed", "rationale", "cached")  # each item's user_properties


class JudgedItem(pytest.Item):
    """One row and metric of a collected table: passes when the row's verdict passed."""

    def __init__(self, *, table: testing.Table, position: int, metric: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.position = position
        self.metric = metric
        self.ran = False  # whether runtest ran before: a rerun (pytest-rerunfailures) judges an error again
        self.add_marker("ragjudge")

    def runtest(self) -> None:
        table = self.table
        session = self.config.stash[_STATE].session
        if self.ran:  # a rerun: an error read before is judged again, not read again
            try:
                table.retry(session, self.position, self.metric)
            except RagjudgeError as exc:
                raise TableError(f"{table.path.name}: {exc}") from None
        self.ran = True
        self.user_properties[:] = [p for p in self.user_properties if p[0] not in _PROPERTIES]  # this run's, not the last's
        positions = metrics = None
        if not table.scored:  # the first of the table's items to run: every selected row and metric, in one call
            mine = [item for item in self.session.items if isinstance(item, JudgedItem) and item.table is table]
            positions = sorted({item.position for item in mine} | {self.position})
            metrics = [m for m in table.metrics if m == self.metric or any(item.metric == m for item in mine)]
        try:
            table.score(session, positions, metrics)  # once; later calls raise what it raised
        except RagjudgeError as exc:
            raise TableError(f"{table.path.name}: {exc}") from None
        verdict = table.verdict(self.position, self.metric)
        if verdict is None:
            raise TableError(f"{table.path.name}: {self.metric} did not judge row {self.name!r}")
        self.user_properties.extend([("metric", self.metric), ("status", verdict.status), ("score", verdict.score),
                                     ("passed", verdict.passed), ("rationale", verdict.rationale or verdict.error or ""),
                                     ("cached", verdict.cached)])
        if verdict.status == "skipped":  # reported at the row (reportinfo), not at this line
            raise pytest.skip.Exception(f"{self.metric} skipped this row: {verdict.error or 'no reason given'}", _use_item_location=True)
        if verdict.status != "ok" or not verdict.passed:
            what = "failed" if verdict.status == "ok" else "was not judged"
            raise TableError(f"{self.metric} {what} on {self.parent.name} ({table.path.name} row {self.position + 1}): "
                             + testing.describe_verdict(verdict, table.threshold(self.metric)))

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, TableError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.position, f"{self.parent.name}::{self.metric}"  # the row (from 0; shown from 1)

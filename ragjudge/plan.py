"""``RunPlan``: a run's set-up, written once. Every way of running the judges (``evaluate``,
``Scorer.score`` without a mapping, the dry run, both Ray entry points and ``render``) builds
one before it judges anything:

    plan = RunPlan.of(scorer, chunks, "data.jsonl", flag_fields)
    plan.mapping, plan.notes          # the column mapping; every note, in the order shown
    for chunk in plan.chunks(): ...   # the first chunk (read once, for the mapping), then the rest

It reads the first chunk (the run's options were checked before: ``ragjudge.run.ScoreRequest.check``), resolves the column mapping,
describes it, collects its warnings, checks each judge's needed fields (``check_needs``) and
notes the input columns the run's own output replaces. A check that fails raises
``ConfigError`` / ``InputError`` (exit 2) before any call.

Events: ``evaluate(on_event=...)`` reports a run as it goes with the typed events below
(``Start``, ``Note``, ``Progress``, ``Row``), one callback for all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ragjudge import audit
from ragjudge.config import FIELDS
from ragjudge.records import Mapping, resolve_mapping
from ragjudge.counting import check_labels
from ragjudge.compare import metrics_of
from ragjudge.errors import InputError

# -- events ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """The run starts judging: ``total`` rows (records), None where unknown without reading
    the whole table (stdin, a JSON array)."""

    total: int | None


@dataclass(frozen=True)
class Note:
    """A line for the reader: how the input was read and mapped, a warning, a note.
    ``warning``: it says an output will not be written as asked, or replies were not cached as
    they should be (shown even with ``-q``)."""

    text: str
    warning: bool = False


@dataclass(frozen=True)
class Progress:
    """``rows`` more rows are finished (every metric's verdict in); ``cost_usd`` spent on them
    (USD, None where a priced call's price is unknown)."""

    rows: int
    cost_usd: float | None


@dataclass(frozen=True)
class Row:
    """One row's verdicts (one ``Verdict`` per metric, in the run's metric order) are all in:
    ``position`` counts the table's rows from 0, ``id`` is the row's id."""

    position: int
    id: Any
    verdicts: list[Any] = field(default_factory=list)


Event = Start | Note | Progress | Row


def events(on_event: Callable[[Any], None] | None = None, *, on_start: Callable[[int | None], None] | None = None,
           on_progress: Callable[..., None] | None = None,
           on_row: Callable[[int, Any, list[Any]], None] | None = None) -> Callable[[Any], None] | None:
    """One event callback from ``on_event`` and the older per-kind callbacks (``on_start(total)``,
    ``on_progress(rows, cost_usd)``, ``on_row(position, id, verdicts)``), which each hear their
    kind; None when none is given."""
    if on_start is None and on_progress is None and on_row is None:
        return on_event

    def hear(event: Any) -> None:
        if on_event is not None:
            on_event(event)
        if isinstance(event, Start) and on_start is not None:
            on_start(event.total)
        elif isinstance(event, Progress) and on_progress is not None:
            on_progress(event.rows, event.cost_usd)
        elif isinstance(event, Row) and on_row is not None:
            on_row(event.position, event.id, event.verdicts)

    return hear


# -- checks ------------------------------------------------------------------------------


def check_needs(judges: list[Any], mapping: Mapping, asked: bool) -> list[str]:
    """Each judge's needed fields (``Judge.needs``) against ``mapping``. When the metrics were
    ``asked`` for (``metrics`` set in the config, ``-m``), a judge that needs a field no column
    holds raises ``InputError`` (exit 2) naming the field and the ``--map`` to set; for metrics
    run by default, the same is returned as a note (it will judge no row). The hints suggest
    no column for two fields (``Mapping.suggestions`` over every missing field)."""
    notes = []
    missing = [need.split("|")[0] for judge in judges for need in judge.needs  # the fields the hints below name: one column each
               if need.split("|")[0] in FIELDS and not any(mapping.paths.get(name) for name in need.split("|"))]
    for judge in judges:
        for need in judge.needs:
            fields = need.split("|")
            if fields[0] not in FIELDS:  # a column of the input, by name or dotted path
                if need in mapping.columns or need.split(".", 1)[0] in mapping.columns:
                    continue
                message = f"{judge.name} needs a column '{need}' and the input has none; columns: {', '.join(mapping.columns) or '(none)'}"
            elif any(mapping.paths.get(name) for name in fields):
                continue
            else:
                article = "an" if fields[0][0] in "aeiou" else "a"
                message = f"{judge.name} needs {article} {' or '.join(fields)} column and none was found{mapping.hint(fields[0], missing)}"
            if asked:
                raise InputError(message + _all_at_once(mapping, missing))
            notes.append(f"note: {message}; {judge.name} will judge no row")
    return notes


def _all_at_once(mapping: Mapping, missing: list[str]) -> str:
    """Where several needed fields have no column and a column is suggested for each of two or
    more: every suggested ``--map`` in one line, so that one fix is one run (it named one field a
    run: 'Question', then 'Context', then ...)."""
    found = mapping.suggestions(list(dict.fromkeys(missing)))
    if len(found) < 2:
        return ""
    return "; if these columns hold them, every field at once: " + " ".join(f"--map {name}={column}" for name, column in found.items())


def resolve(frame: Any, columns: Any, source: str = "input", flag_fields: frozenset[str] = frozenset()) -> Mapping:
    """The column mapping for ``frame`` (``columns``: the config's ``columns``, else same-named
    columns and common aliases, looked for in the first 50 rows). Raises ``InputError`` (exit 2)
    for a mapped column that does not exist."""
    return resolve_mapping([str(c) for c in frame.columns], frame.head(50).to_dict("records"), columns, flag_fields, source)


def replaced_note(replaced: list[str]) -> str:
    """The note for input columns that the run's own output columns replace."""
    return f"note: the input's column(s) {', '.join(replaced)} are replaced in the output by this run's own"


# -- the plan ----------------------------------------------------------------------------


class RunPlan:
    """One run's set-up; see the module docstring.

    ``config``: the run's ``Config``; ``judges``: its judges (``make_judges``); ``chunks``: the
    input, a DataFrame or an iterable of DataFrame chunks (only the first is read here);
    ``name``: the input as messages name it; ``flag_fields``: the fields ``--map`` set;
    ``own``: the columns the run writes (``Scorer.column_types``), for the replaced-columns
    note; ``notes``: notes to put first (the scorer's); ``asked``: whether the metrics were
    asked for (default: ``metrics`` set in the config); ``empty``: the chunk to plan with when
    the input yields none (default: no mapping, ``mapping`` None).

    Attributes: ``first`` (the first chunk, or ``empty``), ``mapping``, ``notes`` (every note,
    the given ones first), ``input_notes`` (the mapping's description, its warnings, the needs
    not met, the replaced columns), ``replaced`` (those columns' names).
    """

    def __init__(self, config: Any, judges: list[Any], chunks: Any, name: str = "input", flag_fields: frozenset[str] = frozenset(), *,
                 own: dict[str, str] | None = None, notes: Iterable[str] = (), asked: bool | None = None, empty: Any = None) -> None:
        self.config = config
        self.judges = judges
        self._rest: Iterator[Any] = iter([chunks]) if _is_frame(chunks) else iter(chunks)
        first = next(self._rest, None)
        self._read = first is not None
        self.first = empty if first is None else first
        self.mapping: Mapping | None = None
        self.replaced: list[str] = []
        self.input_notes: list[str] = []
        if self.first is not None:
            self.mapping = resolve(self.first, config.columns, name, flag_fields)
            wanted = "metrics" in config.model_fields_set if asked is None else asked
            # no rows, so no column to look for: the run says "the input has no rows" (exit 2)
            needs = check_needs(judges, self.mapping, wanted) if len(self.first) else []
            if len(self.first):
                check_labels(config, self.first, name)
                self._check_confidence()
            self.input_notes = [self.mapping.describe(), *self.mapping.warnings, *needs]
            self.replaced = [str(c) for c in self.first.columns if str(c) in (own or {})]
            if self.replaced:
                self.input_notes.append(replaced_note(self.replaced))
            stale = [metric for metric in metrics_of(self.first) if metric not in config.metrics]
            if stale:  # a scored table scored again for fewer metrics: the others' verdicts are an earlier run's
                self.input_notes.append(f"note: the input holds {', '.join(stale)} verdicts of an earlier run ({stale[0]}_status, "
                                        f"{stale[0]}_passed, ...); this run does not judge {', '.join(stale)}, so the output keeps them "
                                        "as they were, and its summary and gate count only this run's metrics")
        self.notes: list[str] = [*notes, *self.input_notes]

    def _check_confidence(self) -> None:
        """The application's confidence column (``gate.app_confidence``) of an audited run, on the
        first chunk before any call (found at the end, it cost every call): a column the input
        lacks, a cell that is not a number (``audit.check_scores``); ``InputError`` (exit 2)."""
        column = self.config.gate.app_confidence
        if not column or not set(audit.METRICS) <= {judge.name for judge in self.judges}:
            return
        if column not in self.first.columns:
            raise InputError(f"--app-confidence: the input has no column '{column}' (its columns: {', '.join(map(str, self.first.columns))})")
        audit.check_scores(self.first[column].tolist(), column)

    @classmethod
    def of(cls, scorer: Any, chunks: Any, name: str = "input", flag_fields: frozenset[str] = frozenset(), *,
           scorer_notes: bool = True, **options: Any) -> "RunPlan":
        """The plan of a run by ``scorer`` (a ``Scorer``): its config, judges, output columns and
        (with ``scorer_notes``) its notes; ``options`` as ``RunPlan`` takes them."""
        return cls(scorer.config, scorer.judges, chunks, name, flag_fields, own=scorer.column_types(),
                   notes=scorer.notes if scorer_notes else (), **options)

    def chunks(self) -> Iterator[Any]:
        """The input's chunks: the first (already read; ``empty`` when the input had none),
        then the rest, each read as it is asked for."""
        if self.first is not None:
            yield self.first
        yield from self._rest

    @property
    def was_empty(self) -> bool:
        """Whether the input yielded no chunk at all."""
        return not self._read


def _is_frame(value: Any) -> bool:
    return hasattr(value, "columns") and hasattr(value, "iloc")

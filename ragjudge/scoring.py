"""``Scorer``: a pandas DataFrame in, the same rows with each metric's verdict out.

    from ragjudge import Scorer
    with Scorer(metrics=["sufficiency"], model="openai/gpt-4o-mini") as scorer:
        scored = scorer.score(df)          # or: await scorer.ascore(df)
    scored.frame, scored.summary, scored.notes

A ``Scorer`` is built once and reused for every batch: it owns the judges (one per metric),
the model chokepoint (``ragjudge.model``: cache, limits, retries) and the embedded model.
Its judge calls run on ragjudge's own event loop (``ragjudge._loop``), so ``score`` works
in a plain script, inside a running event loop and from several threads at once.

Output columns, after the input's own (an input column with one of these names is
replaced), per metric ``M``: ``M_score`` (float64; sufficiency 1.0/0.0, completeness 1..5),
``M_passed`` (bool, null unless ok), ``M_rationale``, ``M_status`` (ok / error / skipped),
``M_error``, ``M_missing`` (list of strings), ``M_raw`` (the judge's reply, kept on error
rows), ``M_cached`` (bool), ``M_prompt_tokens``, ``M_completion_tokens`` (int64),
``M_cost_usd`` (float64, USD; null when the model has no price), ``M_tokens_estimated``
(bool: the reply reported no token counts, so they were estimated), ``M_probability`` (float64
in 0..1: P(yes) of a binary metric, P(pass) of a scored one; null where the judge gives no
probability), for a scored metric ``M_distribution`` (list of float64: each level's probability,
lowest first) and ``M_confidence`` (float64, the provider's concentration measure), with ``judge.samples`` > 1
``M_agreement`` (float64), then each judge's own columns (``sufficiency_mode``,
``sufficiency_p_yes``), ``diagnosis`` (string, when both sufficiency and completeness are judged:
ok / generation / retrieval / beyond_context, null unless both are ok; ``ragjudge.diagnosis``),
``removed_instructions`` (list of strings: sentences addressed to the
judge, removed before judging) and ``judge_model``. ``output_schema`` gives them exactly.

The run's set-up (first chunk, mapping, needs, notes, option checks) is ``ragjudge.plan``'s
``RunPlan``.

Why it is over 600 lines: ``Scorer`` is the one place where a row's verdicts are settled (skips,
trace statuses, cache, samples, a panel's members, interruption) and turned into typed output
columns and a summary, each step reading the others' state; the set-up (``ragjudge.plan``), the
judging (``ragjudge.judges``, a panel's rule and columns in ``ragjudge.judges.panel``) and the
calls (``ragjudge.model``) live apart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ragjudge import _loop, audit, diagnosis, local
from ragjudge.counting import count_row, label_cells, label_passes, metric_summary, rank_ks
from ragjudge import ranking
from ragjudge.gate import Summary
from ragjudge.model import AHEAD, CANCELLED, Ledger, PanelModel, model_for
from ragjudge.cascade import STAGE_COLUMNS, CascadeModel, decide as cascade_decide, escalation, stage_label, stage_values
from ragjudge.judges.panel import PANEL_COLUMNS, decide as panel_decide, panel_values, tempered
from ragjudge.plan import RunPlan, check_needs
from ragjudge.plan import resolve as resolve_frame
from ragjudge.records import EMPTY_ROW, EvalRecord, Mapping, to_records
from ragjudge.settings import load_config, Config
from ragjudge.traces.spans import trace_status
from ragjudge.types import OK, SPAN, Call, Reason, Usage, Verdict, decision_model
from ragjudge.judges.base import BINARY
from ragjudge.http_errors import redact
from ragjudge.errors import ConfigError, InputError
from ragjudge.options import check_budget, KEYWORDS
from ragjudge.config import FIELDS
from ragjudge.judges import make_judges
from ragjudge.cache import ResponseCache
from ragjudge.transports import resolve_model
from ragjudge.io.rows import RowChunk

# every metric's common columns: suffix -> type
COMMON_COLUMNS = {
    "score": "float64",
    "passed": "bool",
    "rationale": "string",
    "status": "string",
    "error": "string",
    "missing": "list<string>",
    "raw": "string",
    "cached": "bool",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "cost_usd": "float64",
    "tokens_estimated": "bool",
    "probability": "float64",
}
# a scored metric's (``Judge.kind`` scale) columns beyond the common ones: suffix -> type
SCALE_COLUMNS = {"distribution": "list<float64>", "confidence": "float64"}


def arrow_type(name: str) -> Any:
    """A column type name (``float64``, ``bool``, ``string``, ``int64``, ``list<string>``) as
    pyarrow's: ``ragjudge.io.arrow.arrow_type``, imported on first use (pandas and pyarrow load
    only when a run needs them)."""
    from ragjudge.io.arrow import arrow_type as of_name

    return of_name(name)


def _pandas_array(values: list[Any], kind: str) -> Any:
    import numpy as np
    import pandas as pd

    if kind.startswith("list<"):  # Python lists in an object column: an Arrow list dtype's Parquet metadata is not read back by
        out = np.empty(len(values), dtype=object)  # plain pandas ("data type 'list<item: string>[pyarrow]' not understood")
        out[:] = [list(v) if v is not None else None for v in values]
        return out
    return pd.array(values, dtype={"float64": "Float64", "bool": "boolean", "int64": "Int64", "string": "string"}[kind])


@dataclass
class Scored:
    """What ``Scorer.score`` returns: the scored ``frame`` (the input's rows and index, in
    order, with the output columns), the ``summary`` of these rows (counts, pass rates,
    tokens, cost; ``Summary.merge`` adds several) and ``notes`` for the reader: how cells were
    read, and, when ``score`` resolved the mapping itself, the mapping used, columns replaced
    and sentences removed."""

    frame: Any
    summary: Summary
    notes: list[str] = field(default_factory=list)



# seconds an interrupt (Ctrl-C, SIGTERM: ``Scorer.interrupt``) waits for the requests already sent, so that
# their replies, paid for, are counted and cached rather than paid again by the re-run; short enough to end
# before a container's SIGKILL (docker stop: 10 s after SIGTERM). A second interrupt stops at once
INTERRUPT_GRACE_S = 5.0
BLOCK = 64  # rows prepared together, their cache keys looked up in one read (``Model.prefetch``)


DIRECT_BATCH = ("note: judge.batch is a run's (ragjudge score, ragjudge.evaluate: docs/batch.md); a Scorer calls the model directly, "
                "at the direct price")

class Scorer:
    """Scores DataFrames of evaluation rows; see the module docstring.

    ``config``: a ``Config`` (``load_config``); keyword ``settings`` override it, as
    ``load_config`` takes them (``metrics=["sufficiency"]``, ``model="openai/gpt-4o-mini"``,
    ``judge={...}``). ``transport``: how requests reach the model (tests pass an in-process
    fake; default from the model string).

    Raises ``ConfigError`` (exit 2) for a bad setting or an unknown provider, and
    ``LocalModelError`` when the embedded judge is asked for but not installed.

    A fatal provider error (auth, quota, unknown model) or ``interrupt()`` stops this scorer:
    later rows get error verdicts ("not run: ...", "interrupted") without a call. Close it
    with ``close()`` or use it as a context manager. It installs no signal handlers.
    """

    def __init__(self, config: Config | None = None, *, transport: Any = None, **settings: Any) -> None:
        if config is None:
            config = load_config(None, settings)
        else:
            config = Config.of(config)  # a RawConfig (ragjudge.config.read_raw_config) is typed and checked here
            if settings:
                config = config.updated(settings)
        self.notes: list[str] = list(config.notes)  # keys read from an old place
        if config.judge.model.startswith("local/") and not config.judge.panel and not config.judge.cascade:  # a panel's members are API models

            config, filled = local.calibrated(config)
            if filled:
                self.notes.append("embedded judge: the bundled model's settings " + ", ".join(filled) + " (`ragjudge config show local`)")
        if config.judge.workers > 1:
            self.notes.append("note: --workers (judge.workers) is no longer needed and is ignored: one process makes every call")
        # said when this Scorer scores (``_rows``), not by a dry run, which prices the batch itself
        self._direct_batch = bool(config.judge.batch) and getattr(transport, "manifest", None) is None

        if config.judge.cascade and "model" in config.judge.model_fields_set:
            self.notes.append(f"note: judge.model {config.judge.model} is not asked: the cascade's stages judge ({config.judge.judge_model})")
        elif config.judge.panel and "model" in config.judge.model_fields_set:
            self.notes.append(f"note: judge.model {config.judge.model} is not asked: the panel's members judge "
                              f"({', '.join(member.model for member in config.judge.panel)})")
        if not config.judge.batch and "batch_fallback" in config.judge.model_fields_set:
            self.notes.append(f"note: judge.batch_fallback ({config.judge.batch_fallback}) decides what a batch does with the calls it "
                              "could not judge; this run calls the model directly: give --batch (judge.batch: true) to use it")
        if not config.judge.cascade and "cascade_band" in config.judge.model_fields_set:
            self.notes.append(f"note: judge.cascade_band decides which rows a cascade sends on; this run has one judge "
                              f"({config.judge.judge_model}): give --cascade FIRST,THEN (judge.cascade)")
        if config.judge.panel and config.judge.cascade and "panel" not in config.judge.cascade:
            self.notes.append(f"note: judge.panel ({', '.join(member.model for member in config.judge.panel)}) is not asked: the cascade's "
                              f"stages judge ({', '.join(config.judge.cascade)}); name panel as its last stage "
                              "(--cascade FIRST,panel) to have the panel decide the rows it sends on, or leave --panel out")
        if not config.judge.panel and {"panel_rule", "panel_quorum"} & config.judge.model_fields_set:
            self.notes.append("note: judge.panel_rule and judge.panel_quorum decide a panel's verdicts; this run has one judge "
                              f"({config.judge.model}): give --panel MODEL,MODEL,... (judge.panel)")
        idle = idle_bounds(config)
        if idle:
            self.notes.append(f"note: {', '.join(idle)} {'is' if len(idle) == 1 else 'are'} not checked: this run judges "
                              f"{', '.join(config.metrics)} (add -m METRIC, or metrics: in the config, to judge and gate it)")
        check_budget(config, KEYWORDS)  # judge.max_cost with no known price could never trip: refused before anything is spent
        self.config = config
        self.cache = None
        self._not_kept: tuple[int, int, str, str] | None = None  # the cache's writes that failed (``cache_notes``)
        if config.cache.enabled:
            self.cache = ResponseCache(config.cache.dir)
        try:
            if config.judge.cascade:
                self.model: Any = _cascade_model(config.judge, self.cache, transport)
            else:
                self.model = PanelModel(config.judge, self.cache, transport) if config.judge.panel else model_for(config.judge, self.cache, transport)
        except BaseException:
            self._close_cache()
            raise
        self._set_judges(config)
        try:
            check_decision_metrics(config, self.judges)
        except BaseException:
            self._close_cache()
            raise
        self._asked: bool | None = None  # whether the metrics were asked for (None: the config says, ``check``)
        self.interrupted = False
        self._tasks: set[asyncio.Future] = set()
        self._started: asyncio.Future | None = None  # set once the last job's rows are all started (``_judge``)
        self._closed = False
        self._trace: tuple[str | None, list[Verdict] | None] = (None, None)  # rows read from traces: the last trace's id, its first row's verdicts

    def _set_judges(self, config: Config) -> None:
        """One judge per metric of ``config`` (``make_judges``) and the other columns that judges
        defined in YAML read (``needs``)."""
        self.judges = make_judges(config)
        self.extra = tuple(dict.fromkeys(n for j in self.judges for n in j.needs if "|" not in n and n not in FIELDS))

    def only(self, metrics: list[str] | str, asked: bool = True) -> "Scorer":
        """A scorer of ``metrics`` (names this scorer's config knows: built-in, bundled or defined
        under ``judges:``; not only its own ``config.metrics``), in the order given, with this
        scorer's settings, thresholds and extensions, that shares its model: the same response
        cache, concurrency limit, budget and in-flight de-duplication. For scoring some rows with
        other metrics without a second cache or limit (``ragjudge.testing`` judges one metric per
        assertion with it). Closing it closes nothing; close this scorer.

        ``asked``: a needed column no input has is an ``InputError`` (True, as for metrics named in
        a config) or a note (False: as for metrics run by default; ``check``). Raises
        ``ConfigError`` for a metric the config does not know, or none."""
        import copy

        names = [metrics] if isinstance(metrics, str) else list(dict.fromkeys(metrics))
        view = copy.copy(self)
        view.config = self.config.updated({"metrics": names})
        view._set_judges(view.config)
        view._asked = asked
        view.notes = []
        view._tasks = set()
        view._trace = (None, None)
        view._closed = True  # the model and the cache are this scorer's
        return view

    # -- columns -------------------------------------------------------------------------
    def column_types(self) -> dict[str, str]:
        """Every column ``score`` adds, in order: name -> type name (see ``arrow_type``)."""
        types: dict[str, str] = {}
        for judge in self.judges:
            for suffix, kind in COMMON_COLUMNS.items():
                types[f"{judge.name}_{suffix}"] = kind
            if judge.kind != BINARY:
                for suffix, kind in SCALE_COLUMNS.items():
                    types[f"{judge.name}_{suffix}"] = kind
            if self.config.judge.samples > 1:
                types[f"{judge.name}_agreement"] = "float64"
            if self.config.judge.cascade:
                types[f"{judge.name}_stage"] = "string"
                types[f"{judge.name}_to_label"] = "bool"
                for stage in self.config.judge.cascade:
                    for suffix, kind in STAGE_COLUMNS.items():
                        types[f"{judge.name}_cascade_{stage_label(stage)}_{suffix}"] = kind
            if self.config.judge.panel:
                types[f"{judge.name}_panel_agreement"] = "float64"
                for member in self.config.judge.panel:
                    for suffix, kind in PANEL_COLUMNS.items():
                        types[f"{judge.name}_panel_{member.label}_{suffix}"] = kind
            types.update(judge.columns())
            for name in (ranking.NDCG, ranking.RECALL):  # passage_relevance against per-passage labels
                for k in rank_ks(self.config, judge.name):
                    types[f"{judge.name}_{name}_at_{k}"] = "float64"
        if self._diagnosed():
            types[diagnosis.COLUMN] = "string"
        if self._audited():
            types[audit.COLUMN] = "string"
        types["removed_instructions"] = "list<string>"
        types["judge_model"] = "string"
        return types

    @property
    def judge_model(self) -> str:
        """The judge as the ``judge_model`` column and the summary name it: ``judge.model``, or
        with a panel ``panel: MODEL, MODEL, ...`` (``JudgeSettings.judge_model``)."""
        return self.config.judge.judge_model

    def _audited(self) -> bool:
        """Whether the run judges sufficiency, abstention and completeness: the abstention audit."""
        return set(audit.METRICS) <= {judge.name for judge in self.judges}

    def _diagnosed(self) -> bool:
        names = {judge.name for judge in self.judges}
        return diagnosis.SUFFICIENCY in names and diagnosis.COMPLETENESS in names

    def output_schema(self, input_schema: Any = None) -> Any:
        """The ``pyarrow.Schema`` of the frames ``score`` returns for input of ``input_schema``
        (a ``pyarrow.Schema``, e.g. ``pyarrow.Schema.from_pandas(df, preserve_index=False)``;
        None: no input columns): the input's columns, less those this run replaces, then the
        output columns with their types."""
        import pyarrow as pa

        own = self.column_types()
        fields = [f for f in (input_schema or pa.schema([])) if f.name not in own]
        return pa.schema(fields + [pa.field(name, arrow_type(kind)) for name, kind in own.items()])

    # -- scoring -------------------------------------------------------------------------
    def resolve(self, frame: Any, source: str = "input", flag_fields: frozenset[str] = frozenset()) -> Mapping:
        """The column mapping for ``frame`` (``config.columns``, else same-named columns and
        common aliases). Raises ``InputError`` (exit 2) for a mapped column that does not exist."""
        return resolve_frame(frame, self.config.columns, source, flag_fields)

    def plan(self, chunks: Any, source: str = "input", flag_fields: frozenset[str] = frozenset(), **options: Any) -> RunPlan:
        """The ``RunPlan`` of a run of this scorer over ``chunks`` (a DataFrame, or an iterable of
        chunks): the mapping, the notes, the options checked. Raises ``InputError`` /
        ``ConfigError`` (exit 2)."""
        if self._asked is not None:  # a scorer from ``only``: whether its metrics were asked for is its own
            options.setdefault("asked", self._asked)
        return RunPlan.of(self, chunks, source, flag_fields, **options)

    def check(self, mapping: Mapping) -> list[str]:
        """Each metric's needed fields against ``mapping`` (``check_needs``)."""
        asked = "metrics" in self.config.model_fields_set if self._asked is None else self._asked
        return check_needs(self.judges, mapping, asked)

    def records(self, frame: Any, mapping: Mapping) -> list[EvalRecord]:
        """``frame``'s rows as ``EvalRecord`` (as ``score`` reads them: mapped, normalised,
        sentences addressed to the judge removed)."""
        return to_records(row_dicts(frame), mapping, 0, self.config.judge.strip_instructions, self.extra, trace_status)

    def score(self, frame: Any, mapping: Mapping | None = None, on_progress: Any = None, start: int = 0,
              skip: set[int] | None = None, on_row: Any = None) -> Scored:
        """Score every row of ``frame`` (a pandas DataFrame) with every metric.

        ``mapping``: from ``resolve`` (default: resolved from ``frame``). ``on_progress(rows, cost_usd)`` is
        called as rows finish (from ragjudge's loop thread; cost None when a price is unknown; rows in ``skip`` are no
        progress). ``start``: the position of the
        frame's first row in a larger table (rows are named ``row N`` from it when they have
        no id). Returns ``Scored``; every input row is in ``frame``, in order, with a status per
        metric. ``skip``: positions (in ``frame``, from 0) not to judge: their status is skipped,
        reason "not sampled" (``--limit`` / ``--sample``). ``on_row(position, id, verdicts)`` is
        called as each row's verdicts (one per metric) are all in (``position`` counts from
        ``start``). Provider failures become error rows; raises only for unusable input
        (``InputError``) or settings. A list of dicts is taken as the rows of a DataFrame."""
        return self.finish(self.submit(frame, mapping, on_progress, start, skip, on_row))

    def submit(self, frame: Any, mapping: Mapping | None = None, on_progress: Any = None, start: int = 0,
               skip: set[int] | None = None, on_row: Any = None, *, in_turn: bool = False, ahead: bool = False) -> "Job":
        """Start scoring ``frame`` (``score``'s arguments) and return at once; ``finish(job)``
        waits for it and returns the ``Scored``. The file pipeline submits the next chunk
        before it finishes the last, so that the chunk's last calls, its writing and the next
        chunk's reading overlap the next chunk's calls (jobs share the concurrency limit).
        ``in_turn``: the job's rows start once the last job submitted in turn has started all of
        its own, so such jobs finish in the order submitted (the file pipeline's jobs); other
        jobs and ``score``/``ascore`` calls share the slots with them as they come.
        Finish jobs in the order submitted; a trace source's chunks must not overlap (a trace's
        later rows read its first row's verdicts). ``ahead``: the job's calls are made ahead of
        the rows that will make them again (a run's first row, before the rest of its first chunk
        is read): the first later row to make each call gets its verdict as its own (paid, not
        cached); such a job is never finished, only ``drop``ped."""
        if not isinstance(frame, RowChunk):  # a JSON Lines chunk as read: framed when it is finished (``io.rows``)
            frame = as_frame(frame)
        resolved = mapping is None
        rows, notes, mapping = self._rows(frame, mapping, start)
        future = _loop.submit(self._judge(rows, mapping, on_progress, skip, _Reporter(on_row, start), in_turn, ahead))
        return Job(frame, future, notes, resolved, start)

    def until_answered(self, job: "Job", timeout: float) -> None:
        """Wait at most ``timeout`` seconds, until the run's first call has an answer or ``job``
        is done: the loop thread makes the first calls alone (a thread working beside it takes
        turns with it for the interpreter)."""
        _until_answered(self.model, job.future, timeout)

    def drop(self, job: "Job") -> list[str]:
        """Wait for a job submitted ``ahead`` (its verdicts are not kept); returns a note for its
        calls that no row of the run made again: their replies (cached when ok; else the error)
        and cost (USD, counted toward ``judge.max_cost``), which the output and its summary do
        not hold."""
        try:
            _loop.wait(job.future)
        except (asyncio.CancelledError, concurrent.futures.CancelledError):
            return []  # interrupted: the rows say so
        unclaimed = self.model.unclaimed()
        if not unclaimed:
            return []
        cost = _cost(unclaimed)
        spent = f"; USD {cost:.4f}, counted toward judge.max_cost but not in the table or its summary" if cost else ""
        replies = "their replies are cached" if all(v.status == OK for v in unclaimed) else "; ".join(
            dict.fromkeys(f"{v.error}" for v in unclaimed if v.status != OK))
        why = ("the run was interrupted before its rows took them" if self.interrupted
               else "a column first seen further on changed the prompts")
        return [f"note: {len(unclaimed)} call(s) made for the first row before the rest of the first chunk was read were not made "
                f"again by the run ({why}): {replies}{spent}"]

    def finish(self, job: "Job") -> Scored:
        """The ``Scored`` of a ``submit``ted job, waited for (a KeyboardInterrupt cancels it)."""
        frame = job.frame
        if isinstance(frame, RowChunk):  # a JSON Lines chunk is framed while its calls run
            if "pandas" not in sys.modules:  # its import then: once the first call has its answer (issue 51)
                _until_answered(self.model, job.future)
            frame = frame.frame()
        records, verdicts = _loop.wait(job.future)
        return self._scored(frame, records, verdicts, job.notes, job.resolved, job.start)

    async def ascore(self, frame: Any, mapping: Mapping | None = None, on_progress: Any = None, start: int = 0,
                     skip: set[int] | None = None, on_row: Any = None) -> Scored:
        """``score`` for async code (Jupyter, web apps): ``await scorer.ascore(df)``."""
        frame = as_frame(frame)
        resolved = mapping is None
        rows, notes, mapping = self._rows(frame, mapping, start)
        records, verdicts = await _loop.arun(self._judge(rows, mapping, on_progress, skip, _Reporter(on_row, start)))
        return self._scored(frame, records, verdicts, notes, resolved, start)

    def interrupt(self) -> None:
        """Stop: no request leaves after it (``Model.interrupt``), and every row not finished
        becomes an error row "interrupted", now and in later calls. The requests already sent get
        ``INTERRUPT_GRACE_S`` (5 s) to bring their replies, which are counted (calls, tokens,
        cost) and cached as any other, so a re-run does not pay for them again; then whatever is
        unfinished is cancelled. A second interrupt cancels at once. Safe from any thread and
        from a signal handler."""
        again = self.interrupted
        self.interrupted = True
        self.model.interrupt()
        _loop.call_soon(self._cancel if again else self._wind_down)

    def _wind_down(self) -> None:
        """On the loop: cancel what is unfinished once no request is in flight, or after the grace."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + INTERRUPT_GRACE_S

        def look() -> None:
            if self.model.on_wire and loop.time() < deadline:
                loop.call_later(0.02, look)
            else:
                self._cancel()

        look()

    def _cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def _rows(self, frame: Any, mapping: Mapping | None, start: int = 0) -> tuple[list[dict[str, Any]], list[str], Mapping]:
        notes: list[str] = []
        if mapping is None:
            plan = self.plan(frame, scorer_notes=False)
            mapping, notes = plan.mapping, list(plan.notes)
        if self._direct_batch:
            notes.append(DIRECT_BATCH)
        rows = row_dicts(frame)
        confidence = self.config.gate.app_confidence
        if confidence and self._audited():
            audit.check_scores([row.get(confidence) for row in rows], confidence, start)
        return rows, notes, mapping

    async def _judge(self, rows: list[dict[str, Any]], mapping: Mapping, on_progress: Any, skip: set[int] | None = None,
                     reporter: Any = None, in_turn: bool = False, ahead: bool = False) -> tuple[list[EvalRecord], list[list[Verdict]]]:
        """Every row x metric, concurrently: each row's record is built and its verdicts
        settled (skipped, cached) at once, and a row that needs calls starts them while the
        next rows are prepared. The calls run as tasks that an interrupt cancels (a verdict
        already received is never lost). ``in_turn``, ``ahead``: see ``submit``."""
        if ahead:
            AHEAD.set(True)  # this task's context, copied by the rows' tasks it starts
        strip = self.config.judge.strip_instructions
        records: list[EvalRecord] = []
        out: list[Any] = [None] * len(rows)
        pending: list[tuple[int, asyncio.Future]] = []
        # jobs take the calls' slots in the order submitted, so the oldest job finishes first and
        # the next one is submitted while two others hold the slots; sharing them, the jobs in
        # flight finished together and the slots drained until new rows started (bench/README.md,
        # figure 1c)
        before = None
        started = asyncio.get_running_loop().create_future()
        if in_turn:
            before, self._started = self._started, started
        # rows prepared ahead of the calls: enough to keep every slot busy, few enough that the
        # preparing is spread over the run instead of delaying its first calls. It counts the rows
        # whose calls are not finished, not the rows since the oldest of them: a slow call (a
        # retry's back-off, a long reply) holds one place, not the whole window, so the rows after
        # it keep the slots busy while the job after this one waits its turn
        ahead = max(64, 2 * self.config.judge.concurrency * self.config.judge.samples)
        unfinished = 0
        room = asyncio.Event()

        def finished(_: Any) -> None:
            nonlocal unfinished
            unfinished -= 1
            room.set()

        position = 0
        try:
            if before is not None and not before.done() and before.get_loop() is asyncio.get_running_loop():
                await asyncio.shield(before)  # the job before's rows first (cancelling this job leaves it be)
            while position < len(rows):
                while unfinished >= ahead:
                    room.clear()
                    await room.wait()
                # a block of rows at a time (no more than the window has room for): their calls are
                # prepared, then the response cache is asked for all their keys at once
                block = min(BLOCK, len(rows) - position, ahead - unfinished)
                made = to_records(rows[position:position + block], mapping, position, strip, self.extra, trace_status)
                prepared: list[list[Any]] = []
                for record in made:
                    self._trace_order(record)
                    if skip and record.index in skip:
                        prepared.append([Verdict.skipped(judge.name, Reason.NOT_SAMPLED) for judge in self.judges])
                    else:
                        prepared.append([self._guarded(self._prepare, judge, record) for judge in self.judges])
                single = self.config.judge.samples == 1  # with several samples a final call is not peeked (``_settle``)
                self.model.prefetch([item for row in prepared for item in row if isinstance(item, Call) and (single or not item.final)])
                for record, row in zip(made, prepared):
                    records.append(record)
                    row = [self._guarded(self._settle, judge, item) if isinstance(item, Call) else item for judge, item in zip(self.judges, row)]
                    if any(isinstance(item, Call) for item in row):
                        task = asyncio.ensure_future(self._row(row, on_progress, reporter, record))
                        task.add_done_callback(finished)
                        unfinished += 1
                        pending.append((position, task))
                    else:
                        out[position] = row
                        if on_progress and not (skip and record.index in skip):  # a row left out is no progress
                            on_progress(1, _cost(row))
                        if reporter:
                            reporter(record, row)
                    if position % 32 == 31:
                        await asyncio.sleep(0)  # let the calls made so far go out
                    position += 1
            if not started.done():
                started.set_result(None)
            for position, task in pending:
                out[position] = await task
            self._same_trace(records, out)
        except BaseException:  # cancelled from outside (Ctrl-C in a script), or a bug: no call outlives it
            for _, task in pending:
                task.cancel()
            raise
        finally:
            if not started.done():  # failed or cancelled before its rows were all started: the next job goes
                started.set_result(None)
            if self.cache is not None:
                self.cache.flush()  # every reply of the chunk stored once it is judged, closed or not
        return records, out

    # -- rows read from traces (``ragjudge.traces``: one row per retriever span) --------------
    def _trace_order(self, record: EvalRecord) -> None:
        """A trace's rows come together: a row whose trace's first row was not seen (filtered
        out) becomes the first, so its trace-level metrics are judged."""
        trace = record.trace
        if trace is None:
            return
        if not trace.first and trace.trace_id != self._trace[0]:
            record.trace = replace(trace, first=True)
        if record.trace.first:
            self._trace = (trace.trace_id, None)

    def _same_trace(self, records: list[EvalRecord], out: list[list[Verdict]]) -> None:
        """The trace-level verdicts of a trace's other rows: copies of its first row's (no call,
        no usage: ``M_cached`` true), counted once in the summary (``_summary``)."""
        for record, row in zip(records, out):
            if record.trace is None:
                continue
            if record.trace.first:
                self._trace = (record.trace.trace_id, row)
                continue
            first = self._trace[1] if self._trace[0] == record.trace.trace_id else None
            for position, verdict in enumerate(row):
                if verdict.reason is Reason.SAME_TRACE and first is not None:
                    source = first[position]
                    row[position] = source.copy(usage=Usage(), cached=None if source.cached is None else True)

    async def _row(self, row: list[Verdict | Call], on_progress: Any, reporter: Any = None, record: Any = None) -> list[Verdict]:
        calls = [(judge, item) for judge, item in zip(self.judges, row) if isinstance(item, Call)]
        self.model.group([item for _, item in calls])  # a decision model asks the row's metrics in one request
        if len(calls) == 1:  # one call: made in this row's own task (an interrupt cancels it here)
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            try:
                results: list[Any] = [await self._run(*calls[0], wait_turn=True)]
            finally:
                self._tasks.discard(task)
        else:
            leaves = [asyncio.ensure_future(self._run(judge, item)) for judge, item in calls]
            self._tasks.update(leaves)
            try:
                results = await asyncio.gather(*leaves, return_exceptions=True)
            finally:
                self._tasks.difference_update(leaves)
        pending = iter(results)
        verdicts: list[Verdict] = []
        for judge, item in zip(self.judges, row):
            if isinstance(item, Call):
                result = next(pending)
                if isinstance(result, asyncio.CancelledError):
                    result = Verdict.failed(judge.name, Reason.INTERRUPTED, mode=item.mode)
                elif isinstance(result, Exception):  # one row's fault stays in its row
                    result = unexpected(judge.name, result, item.mode)
                elif isinstance(result, BaseException):
                    raise result
                item = result
            verdicts.append(item)
        if on_progress:
            on_progress(1, _cost(verdicts))
        if reporter:
            reporter(record, verdicts)
        return verdicts

    @staticmethod
    def _guarded(step: Any, judge: Any, item: Any) -> Verdict | Call:
        """``step(judge, item)``, or the row's error verdict when it raises something unplanned."""
        try:
            return step(judge, item)
        except Exception as exc:  # noqa: BLE001 - one row's fault stays in its row
            return unexpected(judge.name, exc, getattr(item, "mode", None))

    def _prepare(self, judge: Any, record: EvalRecord) -> Verdict | Call:
        """The verdict when the row needs no call at all (skipped, input error, held by its
        trace), else the judge's first call."""
        if record.empty:
            return Verdict.failed(judge.name, EMPTY_ROW, input_error=True)
        held = _trace_held(judge, record)
        if held is not None:
            return held
        return judge.prepare(record)

    def _settle(self, judge: Any, call: Call) -> Verdict | Call:
        """The verdict when every call of ``call``'s chain is remembered or cached, else the call
        to make next."""
        if self.config.judge.panel:  # each member reads its own cache as it is asked (``_panel``)
            return call
        while not call.final:
            found = self.model.peek(call)
            if found is None or found.status != OK:
                return call
            call = judge.follow_up(call, found)
        if self.config.judge.samples == 1:
            found = self.model.peek(call)
            if found is not None:
                return judge.decide(found, call)
        return call

    async def _run(self, judge: Any, call: Call, wait_turn: bool = False) -> Verdict:
        """Make ``call`` (and any follow-up), then decide; samples are decided one by one,
        then combined; with a panel, each member does so and the panel's rule decides
        (``_panel``). ``wait_turn``: first let the tasks made before this one start (a call
        made in its row's own task then goes out when a task of its own would have)."""
        if wait_turn:
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                return Verdict.failed(judge.name, Reason.INTERRUPTED, mode=call.mode)
        if isinstance(self.model, CascadeModel):
            return await self._cascade(judge, call)
        if isinstance(self.model, PanelModel):
            return await self._panel(judge, call)
        return await self._chain(judge, call, self.model)

    async def _cascade(self, judge: Any, call: Call) -> Verdict:
        """``call`` judged by the cascade's stages in turn (``ragjudge.cascade``): each stage by
        ``_chain`` (a panel by ``_panel``), the next asked only while the last one's verdict
        escalates (an error, no probability, or P(yes) in the band). Every stage but the last is
        asked with log-probabilities, so that a chat judge's verdict carries P(yes); the last is
        asked as the judge asks it alone (its cache is a plain run's)."""
        model = self.model
        results: list[tuple[str, str, Verdict]] = []
        for position, (name, stage) in enumerate(model.stages):
            last = position == len(model.stages) - 1
            asked = call if last or not call.final or call.logprobs else replace(call, logprobs=True)
            verdict = await (self._panel(judge, asked, stage) if isinstance(stage, PanelModel) else self._chain(judge, asked, stage))
            results.append((name, stage.provider_model, verdict))
            if verdict.reason is Reason.INTERRUPTED or last or escalation(verdict, model.band) is None:
                break
        return cascade_decide(judge.name, results, model.band, len(results) == len(model.stages))

    async def _panel(self, judge: Any, call: Call, model: Any = None) -> Verdict:
        """Every member's verdict of ``call`` (its own calls, cache and samples: ``_chain``),
        combined by the panel's rule and quorum (``ragjudge.judges.panel.decide``). ``model``:
        the ``PanelModel`` (default: the run's; a cascade's panel stage)."""
        model = model or self.model
        settings = self.config.judge
        if model.fatal is not None:  # fewer members than the quorum can answer: no member is asked
            return Verdict.failed(judge.name, f"not run: {model.fatal}", mode=call.mode)
        tasks = [asyncio.ensure_future(self._chain(judge, call, member, own.temperature))
                 for (_, member), own in zip(model.members, settings.panel)]
        try:
            verdicts = list(await asyncio.gather(*tasks))
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            return _interrupted(judge.name, call.mode, _usage_of(tasks))
        return panel_decide(judge.name, verdicts, model.names, [m.provider_model for _, m in model.members], settings.panel_rule,
                            settings.quorum, judge.threshold, judge.kind == BINARY)

    async def _chain(self, judge: Any, call: Call, model: Any, temperature: float | None = None) -> Verdict:
        """``call`` and its follow-ups made through ``model``, then decided (samples: each
        decided, then combined). ``temperature``: a panel member's own, in place of
        ``judge.temperature`` (raised to 0.7 for samples as ``Judge.temperature`` does)."""
        spent = Usage()
        paid = False
        samples = self.config.judge.samples
        drawing: list[asyncio.Future] = []
        lost: list[Usage] = []  # what this chain's calls cancelled in flight had cost (``model.CANCELLED``)
        unset = CANCELLED.set(lost)
        try:
            call = tempered(call, temperature, samples)
            while not call.final:
                first = await model.call(call, judge.parse)
                spent = spent + first.usage
                paid |= first.cached is False and first.usage.calls > 0
                if first.status != OK:
                    first.usage = spent
                    return first
                call = tempered(judge.follow_up(call, first), temperature, samples)
            if samples == 1:
                verdict = judge.decide(await model.call(call, judge.parse), call)
            else:
                drawing = [asyncio.ensure_future(model.call(call, judge.parse, sample)) for sample in range(samples)]
                drawn = await asyncio.gather(*drawing)
                verdict = judge.combine([judge.decide(v, call) for v in drawn])
        except asyncio.CancelledError:  # interrupted: what the calls made so far were paid is counted all the same
            for task in drawing:
                task.cancel()
            return _interrupted(judge.name, call.mode, sum(lost, spent + _usage_of(drawing)))
        except Exception as exc:  # noqa: BLE001 - a transport, parser or judge that raises something unplanned: this row's error
            return unexpected(judge.name, exc, call.mode, spent)
        finally:
            CANCELLED.reset(unset)
        verdict.usage = spent + verdict.usage
        if paid:
            verdict.cached = False
        return verdict

    def _scored(self, frame: Any, records: list[EvalRecord], verdicts: list[list[Verdict]], notes: list[str], resolved: bool,
                start: int = 0) -> Scored:
        import pandas as pd

        types = self.column_types()
        columns: dict[str, Any] = {}
        for position, judge in enumerate(self.judges):
            column = [row[position] for row in verdicts]
            name = judge.name
            called = [v.cached is not None for v in column]  # no call was attempted: usage is null
            values: dict[str, list[Any]] = {
                f"{name}_score": [v.score for v in column],
                f"{name}_passed": [v.passed for v in column],
                f"{name}_rationale": [v.rationale for v in column],
                f"{name}_status": [v.status for v in column],
                f"{name}_error": [v.error for v in column],
                f"{name}_missing": [list(v.missing) for v in column],
                f"{name}_raw": [v.raw for v in column],
                f"{name}_cached": [v.cached for v in column],
                f"{name}_prompt_tokens": [v.usage.prompt_tokens if c else None for v, c in zip(column, called)],
                f"{name}_completion_tokens": [v.usage.completion_tokens if c else None for v, c in zip(column, called)],
                f"{name}_cost_usd": [v.usage.cost_usd if c else None for v, c in zip(column, called)],
                f"{name}_tokens_estimated": [v.usage.estimated if c else None for v, c in zip(column, called)],
                f"{name}_probability": [v.probability for v in column],
            }
            if judge.kind != BINARY:
                values[f"{name}_distribution"] = [list(v.distribution) if v.distribution is not None else None for v in column]
                values[f"{name}_confidence"] = [v.confidence for v in column]
            if self.config.judge.samples > 1:
                values[f"{name}_agreement"] = [v.agreement for v in column]
            if self.config.judge.cascade:
                values.update(stage_values(name, [stage_label(stage) for stage in self.config.judge.cascade], column))
            if self.config.judge.panel:
                values.update(panel_values(name, [m.label for m in self.config.judge.panel], column))
            extra = [judge.values(v) for v in column]
            for key in judge.columns():
                values[key] = [item.get(key) for item in extra]
            values.update(self._rank_values(judge.name, frame, records, column, notes))
            for key, items in values.items():
                columns[key] = _pandas_array(items, types[key])
        diagnosed = None
        if self._diagnosed():
            diagnosed = diagnosis.of_frame(pd.DataFrame(columns, index=frame.index), frame)
        if diagnosed is not None:
            columns[diagnosis.COLUMN] = _pandas_array(diagnosed, "string")
        audited = (audit.of_frame(pd.DataFrame(columns, index=frame.index), frame, label_passes(frame, self.config, audit.METRICS))
                   if self._audited() else None)
        if audited is not None:
            columns[audit.COLUMN] = _pandas_array(audited, "string")
        columns["removed_instructions"] = _pandas_array([list(r.removed) for r in records], "list<string>")
        columns["judge_model"] = _pandas_array([self.judge_model] * len(records), "string")
        kept = frame.drop(columns=[c for c in frame.columns if str(c) in types])
        own = pd.DataFrame(columns, index=frame.index)
        out = pd.concat([kept, own], axis=1) if len(kept.columns) else own
        summary = self._summary(records, verdicts, start, frame)
        if diagnosed is not None:
            summary.diagnosis = diagnosis.counts(diagnosed)
        if audited is not None:
            confidence = self.config.gate.app_confidence
            if confidence and confidence not in out.columns:
                raise InputError(f"--app-confidence: the input has no column '{confidence}' (its columns: {', '.join(map(str, frame.columns))})")
            scores = audit.scores_of(out, confidence)
            summary.audit.add(audited, scores)
        notes.extend(dict.fromkeys(note for record in records for note in record.notes))
        if summary.rows_with_removed_instructions and resolved:
            notes.append(removed_note(summary.rows_with_removed_instructions))
        return Scored(out, summary, notes)

    def _rank_values(self, metric: str, frame: Any, records: list[EvalRecord], column: list[Verdict], notes: list[str]) -> dict[str, list[Any]]:
        """``metric``'s nDCG@k and recall@k per row against its per-passage labels (``--labels
        passage_relevance=COL``, ``ragjudge.ranking``), for each k of ``at_k``: null on a row not judged
        ok, unlabelled, or whose label list is not one grade per passage (a note names the first such)."""
        ks = rank_ks(self.config, metric)
        if not ks or frame is None:
            return {}
        cells = [row[0] for row in label_cells(frame, self.config, [metric]) or [[None]] * len(records)]
        out: dict[str, list[Any]] = {f"{metric}_{name}_at_{k}": [] for name in (ranking.NDCG, ranking.RECALL) for k in ks}
        mismatched = []
        for record, verdict, cell in zip(records, column, cells):
            found = None if verdict.status != OK else ranking.grades(cell)
            if found is not None and len(found) != len(record.passages):
                mismatched.append(f"{record.id if record.id is not None else f'row {record.index + 1}'} "
                                  f"({len(found)} grades, {len(record.passages)} passages)")
                found = None
            figures = ranking.figures(found, list(ks)) if found is not None else None
            for name in (ranking.NDCG, ranking.RECALL):
                for k in ks:
                    out[f"{metric}_{name}_at_{k}"].append(None if figures is None else figures[name][k])
        if mismatched:
            notes.append(f"--labels {metric}={self.config.labels[metric]}: {len(mismatched)} row(s) hold a label list that is not one "
                         f"grade per passage, so no nDCG@k or recall@k: {', '.join(mismatched[:5])}")
        return out

    def new_summary(self) -> Summary:
        """An empty ``Summary`` of this scorer's metrics, thresholds and gate settings."""
        config = self.config
        return Summary(
            metrics={j.name: metric_summary(config, j.name, j.threshold, j.version) for j in self.judges},
            judge_model=self.judge_model,
            max_cost=config.judge.max_cost,
            max_diagnosis=dict(config.gate.max_diagnosis),
            cache=config.cache.enabled,
            diagnosis=dict.fromkeys(diagnosis.CELLS, 0) if self._diagnosed() else None,
            allow_undiagnosed=bool({"diagnosis", "*"} & set(config.gate.allow_unjudged)),
            audit=audit.Audit(max_rate=dict(config.gate.max_rate), target_accuracy=config.gate.target_accuracy)
            if self._audited() or config.gate.max_rate else None,
        )

    def _summary(self, records: list[EvalRecord], verdicts: list[list[Verdict]], start: int = 0, frame: Any = None) -> Summary:
        summary = self.new_summary()
        levels = [judge.level for judge in self.judges]
        labels = None if frame is None else label_cells(frame, self.config, [judge.name for judge in self.judges])
        for i, (record, row) in enumerate(zip(records, verdicts)):  # a trace-level metric counts once per trace, on its first row
            count_row(summary, record.id, start + record.index, row, levels, None if record.trace is None else record.trace.first,
                      None if labels is None else labels[i])
        summary.rows = len(records)
        summary.rows_with_removed_instructions = sum(1 for record in records if record.removed)
        summary.fatal = str(self.model.fatal) if self.model.fatal is not None else None
        summary.interrupted = self.interrupted
        summary.budget_reached = self.model.budget_reached
        return summary

    # -- life ----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the model's share of the concurrency limit, its connections and the cache."""
        if self._closed:
            return
        self._closed = True
        try:
            _loop.run(self.model.aclose())
        finally:
            self._close_cache()

    def _close_cache(self) -> None:
        if self.cache is not None:
            cache, self.cache = self.cache, None
            try:
                cache.close()
            finally:
                if cache.not_kept:
                    self._not_kept = (cache.not_kept, cache.written, str(cache.directory), cache.write_error or "")

    def cache_notes(self) -> list[str]:
        """Once the scorer is closed: one warning when the response cache could not write some
        replies (a full disk, an I/O error; ``ragjudge.cache.ResponseCache.flush``), with their
        count, else nothing. Their verdicts stand (the cache is a side store; the run's exit code
        is the gate's); only a re-run pays for those calls again."""
        if self._not_kept is None:
            return []
        lost, written, folder, error = self._not_kept
        return [f"warning: the response cache in {folder} could not keep {lost} of {lost + written} replies ({error}); their "
                "verdicts are in this run's outputs, but a re-run pays for those calls again: free space there, choose another "
                "folder with --cache-dir, or run with --no-cache"]

    def __enter__(self) -> "Scorer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _usage_of(tasks: list[asyncio.Future]) -> Usage:
    """The usage of the verdicts that ``tasks`` (calls, or a panel's members) brought back."""
    total = Usage()
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is None:
            total = total + task.result().usage
    return total


def _interrupted(metric: str, mode: str | None, spent: Usage) -> Verdict:
    """The verdict "interrupted" of a row whose calls were cancelled, carrying what its replies
    already received cost (``spent``: counted in calls, tokens and cost; ``M_cached`` false)."""
    verdict = Verdict.failed(metric, Reason.INTERRUPTED, mode=mode, usage=spent)
    if spent.calls:
        verdict.cached = False
    return verdict


@dataclass
class Job:
    """A chunk being scored (``Scorer.submit``): its frame and the future of its verdicts."""

    frame: Any
    future: Any
    notes: list[str]
    resolved: bool
    start: int

    def cancel(self) -> None:
        self.future.cancel()


class _Reporter:
    """Calls ``on_row(position, id, verdicts)`` for a finished row; false when there is none."""

    def __init__(self, on_row: Any, start: int) -> None:
        self.on_row, self.start = on_row, start

    def __bool__(self) -> bool:
        return self.on_row is not None

    def __call__(self, record: Any, verdicts: list[Any]) -> None:
        self.on_row(self.start + record.index, record.id, verdicts)




def _span_level(judge: Any) -> bool:
    """Whether ``judge`` judges a retriever span (it reads the context), not the whole trace."""
    return judge.level == SPAN


def _trace_held(judge: Any, record: EvalRecord) -> Verdict | None:
    """The verdict a row read from a trace gets without a call (``types.TraceStatus``): a
    trace-level metric on a trace's other rows waits for the first row's (``Reason.SAME_TRACE``); a
    trace skipped (its state) skips every metric; a span-level metric is skipped for a trace
    without a retriever span and an error naming a span without usable text. None: judge it."""
    trace = record.trace
    if trace is None:
        return None
    if not _span_level(judge) and not trace.first:
        return Verdict.skipped(judge.name, Reason.SAME_TRACE)
    if trace.skip_all:
        return Verdict.skipped(judge.name, trace.skip_all)
    if _span_level(judge) and trace.span_skip:
        return Verdict.skipped(judge.name, trace.span_skip)
    if _span_level(judge) and trace.span_error:
        return Verdict.failed(judge.name, trace.span_error, input_error=True)
    return None


def check_decision_metrics(config: Config, judges: list[Any]) -> None:
    """Raise ``ConfigError`` (exit 2) when a decision model (``judge.model``, a panel member or a
    cascade stage: ``ragjudge.types.decision_model``) would judge a metric whose judge asks it no
    typed questions (``Judge.asks_questions``), naming the metrics and the model, before any call:
    every row of it would otherwise be an error."""
    settings = config.judge
    models = ([member.model for member in settings.panel] if settings.panel else []) + list(settings.cascade or []) + \
        ([] if settings.panel or settings.cascade else [settings.model])
    deciding = [m for m in models if decision_model(m)]
    unasked = [judge.name for judge in judges if not judge.asks_questions()]
    if deciding and unasked:
        raise ConfigError(f"{', '.join(unasked)} cannot be judged by the decision model {deciding[0]}: "
                          f"{'it asks' if len(unasked) == 1 else 'they ask'} no typed questions (docs/judges.md#decision-models); "
                          f"judge {'it' if len(unasked) == 1 else 'them'} with a chat model in a run of {'its' if len(unasked) == 1 else 'their'} own, "
                          "or leave it out (-m)")


def _cascade_model(settings: Any, cache: Any, transport: Any) -> CascadeModel:
    """The cascade of ``settings.cascade``: one ``Model`` per stage (a ``PanelModel`` for
    ``panel``), each with its own cache keys, all sharing one budget (``judge.max_cost``).
    ``transport``: as ``Model``'s; one with ``for_model`` gives each stage its own."""
    ledger = Ledger()
    stages: list[tuple[str, Any]] = []
    for stage in settings.cascade:
        own = settings.stage(stage)
        if stage == "panel":
            panel = PanelModel(own, cache, transport)
            panel.ledger = ledger  # every member's budget is the cascade's
            for _, member in panel.members:
                member.ledger = ledger
            stages.append((stage_label(stage), panel))
            continue
        given = transport.for_model(resolve_model(own)) if hasattr(transport, "for_model") else transport
        stages.append((stage_label(stage), model_for(own, cache, given, ledger)))
    return CascadeModel(stages, settings.cascade_band, ledger)


def idle_bounds(config: Config) -> list[str]:
    """The gate bounds of ``config`` (``gate.min_pass_rate``, ``max_error_rate``, ``max_skip_rate``,
    keyed by metric) that name a metric the run does not judge, as dotted keys:
    a shared config's bound on a metric left out of ``-m`` checks nothing, and the run says so."""
    gate = config.gate
    out = []
    if "min_pass_rate" in gate.model_fields_set:  # the defaults name every built-in metric: only a bound set counts
        out += [f"gate.min_pass_rate.{name}" for name in sorted(gate._named) if name in gate.min_pass_rate and gate.min_pass_rate[name] > 0
                and name not in config.metrics]
    for where, bounds in (("max_error_rate", gate.max_error_rate), ("max_skip_rate", gate.max_skip_rate)):
        if where in gate.model_fields_set and isinstance(bounds, dict):
            out += [f"gate.{where}.{name}" for name in bounds if name != "*" and name not in config.metrics]
    return out


def unexpected(metric: str, exc: Exception, mode: str | None = None, usage: Usage | None = None) -> Verdict:
    """The error verdict of a row whose judging raised something no step planned for (a bug, a
    transport or parser that raises an unknown exception): the exception's type and first line,
    keys redacted. The run goes on; ``RAGJUDGE_DEBUG=1`` raises it instead, with its traceback."""
    import os

    if os.environ.get("RAGJUDGE_DEBUG"):
        raise exc

    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return Verdict.failed(metric, f"unexpected {type(exc).__name__}" + (f": {redact(text)}" if text else ""), mode=mode, usage=usage)


def _cost(verdicts: list[Any]) -> float | None:
    """USD spent on one row's verdicts (None when a priced call's price is unknown)."""
    return Usage.total([v.usage for v in verdicts if isinstance(v, Verdict)]).cost_usd


def removed_note(rows: int) -> str:
    """The note for ``rows`` rows that lost sentences addressed to the judge."""
    return (f"{rows} row(s): sentences addressed to the judge were removed from the context or response before "
            "judging (column removed_instructions; judge.strip_instructions: false keeps them)")


def _until_answered(model: Any, future: Any, timeout: float | None = None) -> None:
    """Wait until ``model``'s first call has an answer (``Model.answered``), ``future`` is done, or
    ``timeout`` seconds have passed. Until then ragjudge's loop thread is making the run's first
    calls; importing pandas or reading beside them would make the two threads take turns for the
    interpreter and delay those calls (on a 2-core machine the first call came 0.13 s after its
    job was submitted instead of 0.02 s)."""
    answered = getattr(model, "answered", None)
    if answered is None:
        return
    deadline = None if timeout is None else time.monotonic() + timeout
    step = 0.01 if timeout is None else 0.002
    while not answered.wait(step) and not future.done():
        if deadline is not None and time.monotonic() >= deadline:
            return


def row_dicts(frame: Any) -> list[dict[str, Any]]:
    """``frame``'s rows as dicts, one per row: a frame with no columns (a chunk of ``{}`` rows)
    has rows too, which ``to_dict("records")`` would drop."""
    if isinstance(frame, RowChunk):
        return frame.to_dict("records")
    return frame.to_dict("records") if len(frame.columns) else [{} for _ in range(len(frame))]


def as_frame(frame: Any) -> Any:
    """``frame`` as a DataFrame whose columns the scorer can name: a list of dicts becomes one;
    anything else that is not a DataFrame, MultiIndex columns, column names that are not text
    and a column name given twice raise ``InputError`` with the fix."""
    import pandas as pd

    if isinstance(frame, list) and all(isinstance(row, dict) for row in frame):
        frame = pd.DataFrame(frame)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"score takes a pandas DataFrame (or a list of dicts), not {type(frame).__name__}")
    if isinstance(frame.columns, pd.MultiIndex):
        raise InputError("the DataFrame has MultiIndex columns; flatten them first, e.g. "
                         "df.columns = ['_'.join(map(str, c)) for c in df.columns]")
    odd = [c for c in frame.columns if not isinstance(c, str)]
    if odd:
        raise InputError(f"column names must be text; {', '.join(map(repr, odd[:5]))} {'is' if len(odd) == 1 else 'are'} not: "
                         "rename them, e.g. df.columns = df.columns.astype(str)")
    twice = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
    if twice:
        raise InputError(f"the column name(s) {', '.join(twice)} appear more than once; give each column its own name")
    return frame


def _one_call_scorer(metrics: list[str] | str | None, config: Config | str | None, settings: dict[str, Any]) -> "Scorer":
    """The ``Scorer`` of one ``score`` / ``ascore`` call: ``config`` (a ``Config``, or a YAML path
    or bundled name read with ``settings`` laid over it) with ``metrics`` chosen."""
    if metrics is not None:
        settings["metrics"] = [metrics] if isinstance(metrics, str) else list(metrics)
    if not isinstance(config, Config):
        config = load_config(config, settings)
        settings = {}
    return Scorer(config, **settings)


def score(frame: Any, metrics: list[str] | None = None, config: Config | str | None = None, **settings: Any) -> Scored:
    """Score ``frame`` (a pandas DataFrame) in one line: ``ragjudge.score(df, metrics=["sufficiency"],
    model="openai/gpt-4o-mini")``. ``config``: a ``Config`` or the path (or bundled name) of a
    YAML config; ``settings`` override it (``load_config``'s keywords). Returns ``Scored``."""
    with _one_call_scorer(metrics, config, settings) as scorer:
        return scorer.score(frame)


async def ascore(frame: Any, metrics: list[str] | None = None, config: Config | str | None = None, **settings: Any) -> Scored:
    """``score`` for async code: ``await ragjudge.ascore(df, ...)``."""
    scorer = _one_call_scorer(metrics, config, settings)
    try:
        return await scorer.ascore(frame)
    finally:
        await _loop.arun(scorer.model.aclose())
        scorer._closed = True
        scorer._close_cache()

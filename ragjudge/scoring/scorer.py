"""``Scorer``: a pandas DataFrame in, the same rows with each metric's verdict out (the package's
docstring, ``ragjudge.scoring``): its set-up, the jobs that score chunks on ragjudge's event loop,
interruption and closing. The output columns are ``schema``'s, a row's calls ``chain``'s."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ragjudge import _loop, audit, local
from ragjudge.model import Model, PanelModel, model_for
from ragjudge.plan import RunPlan, check_needs
from ragjudge.plan import resolve as resolve_frame
from ragjudge.records import EvalRecord, Mapping, to_records
from ragjudge.settings import load_config, Config
from ragjudge.traces.spans import trace_status
from ragjudge.types import Call, Reason, Verdict, decision_model
from ragjudge.errors import ConfigError
from ragjudge.options import check_budget, KEYWORDS
from ragjudge.config import FIELDS
from ragjudge.judges import make_judges
from ragjudge.cache import ResponseCache
from ragjudge.io.rows import RowChunk
from ragjudge.transports.batch import BatchTransport
from ragjudge.scoring.chain import Chains, _cascade_model, _cost
from ragjudge.scoring.intake import as_frame, row_dicts
from ragjudge.scoring.schema import Frames, Scored
from ragjudge.scoring.trace_order import TraceOrder


# their replies, paid for, are counted and cached rather than paid again by the re-run; short enough to end
# before a container's SIGKILL (docker stop: 10 s after SIGTERM). A second interrupt stops at once
INTERRUPT_GRACE_S = 5.0
BLOCK = 64  # rows prepared together, their cache keys looked up in one read (``Model.prefetch``)


DIRECT_BATCH = ("note: judge.batch is a run's (ragjudge score, ragjudge.evaluate: docs/batch.md); a Scorer calls the model directly, "
                "at the direct price")
class Scorer(Frames, TraceOrder, Chains):
    """Scores DataFrames of evaluation rows; see the docstring of ``ragjudge.scoring``.

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
        self._direct_batch = bool(config.judge.batch) and not isinstance(transport, BatchTransport)

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
        self._turns = Turns()
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
        view._turns = copy.copy(self._turns)  # its own from here, as the last job in turn was then
        view._closed = True  # the model and the cache are this scorer's
        return view

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
               skip: set[int] | None = None, on_row: Any = None, *, in_turn: bool = False) -> "Job":
        """Start scoring ``frame`` (``score``'s arguments) and return at once; ``finish(job)``
        waits for it and returns the ``Scored``. The file pipeline submits the next chunk
        before it finishes the last, so that the chunk's last calls, its writing and the next
        chunk's reading overlap the next chunk's calls (jobs share the concurrency limit).
        ``in_turn``: the job's rows start once the last job submitted in turn has started all of
        its own, so such jobs finish in the order submitted (the file pipeline's jobs); other
        jobs and ``score``/``ascore`` calls share the slots with them as they come.
        Finish jobs in the order submitted; a trace source's chunks must not overlap (a trace's
        later rows read its first row's verdicts)."""
        if not isinstance(frame, RowChunk):  # a JSON Lines chunk as read: framed when it is finished (``io.rows``)
            frame = as_frame(frame)
        resolved = mapping is None
        rows, notes, mapping = self._rows(frame, mapping, start)
        future = _loop.submit(self._judge(rows, mapping, on_progress, skip, _Reporter(on_row, start), in_turn))
        return Job(frame, future, notes, resolved, start)

    def finish(self, job: "Job") -> Scored:
        """The ``Scored`` of a ``submit``ted job, waited for (a KeyboardInterrupt cancels it)."""
        frame = job.frame
        if isinstance(frame, RowChunk):  # a JSON Lines chunk is framed (pandas imported) once the first call has its answer (issue 51)
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
                     reporter: Any = None, in_turn: bool = False) -> tuple[list[EvalRecord], list[list[Verdict]]]:
        """Every row x metric, concurrently: each row's record is built and its verdicts
        settled (skipped, cached) at once, and a row that needs calls starts them while the
        next rows are prepared. The calls run as tasks that an interrupt cancels (a verdict
        already received is never lost). ``in_turn``: see ``submit``."""
        strip = self.config.judge.strip_instructions
        records: list[EvalRecord] = []
        out: list[Any] = [None] * len(rows)
        pending: list[tuple[int, asyncio.Future]] = []
        before, started = self._turns.join(in_turn)
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
            await Turns.wait(before)
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


class Turns:
    """The jobs submitted in turn (``Scorer.submit(..., in_turn=True)``: the file pipeline's) take
    the call slots in the order submitted: a job's rows start once the job before it has started
    all of its own (``join``, then ``wait``; the job sets its ``started`` future then, or when it
    fails or is cancelled). The oldest job finishes first and the next is submitted while two
    others hold the slots; sharing them, the jobs in flight finished together and the slots
    drained until new rows started. Bench/README.md, figure 1c, "jobs take the call slots in
    order", paired: C=64 20.65 -> 20.48 s, C=256 41.60 -> 41.31 s, figure 4 101.5 -> 91.0 s, with
    5% of 429s 19.9 -> 13.5 s. Other jobs and ``score``/``ascore`` share the slots as they come."""

    def __init__(self) -> None:
        self._last: asyncio.Future | None = None  # set once the last job in turn has started all of its rows

    def join(self, in_turn: bool) -> tuple[asyncio.Future | None, asyncio.Future]:
        """(the future of the job in turn before this one, or None; this job's ``started``)."""
        started = asyncio.get_running_loop().create_future()
        if not in_turn:
            return None, started
        before, self._last = self._last, started
        return before, started

    @staticmethod
    async def wait(before: asyncio.Future | None) -> None:
        """Until the job before has started all of its rows (cancelling this job leaves it be)."""
        if before is not None and not before.done() and before.get_loop() is asyncio.get_running_loop():
            await asyncio.shield(before)


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


def _until_answered(model: Any, future: Any) -> None:
    """Wait until ``model``'s first call has an answer (``Model.answered``) or ``future`` is
    done. Until then ragjudge's loop thread is making the run's first
    calls; importing pandas or reading beside them would make the two threads take turns for the
    interpreter and delay those calls (on a 2-core machine the first call came 0.13 s after its
    job was submitted instead of 0.02 s)."""
    if not isinstance(model, Model):  # a panel's or a cascade's models: their first calls are their members'
        return
    answered = model.answered
    while not answered.wait(0.01) and not future.done():
        pass

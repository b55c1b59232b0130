"""``evaluate()``: read a table in chunks, judge every row x metric concurrently, write the
scored chunks, and summarise. It never prints: progress and notes go to callbacks.

Output columns per metric ``M`` (in input order, after the input's own columns):
``M_score`` (sufficiency 1.0/0.0; completeness 1..5), ``M_passed`` (null unless ok),
``M_rationale``, ``M_status`` (ok/error/skipped), ``M_error``, ``M_missing`` (list),
``M_raw`` (the judge's reply, kept on error rows), ``M_cached``, ``M_prompt_tokens``,
``M_completion_tokens``, ``M_cost_usd`` (USD; null when the model has no price), and with
``--samples`` > 1 ``M_agreement``; then ``sufficiency_mode`` (grounded/reference_free),
``removed_instructions`` (list: "passage N: ..." / "response: ...", the sentences addressed to the
judge, removed before judging; see ``ragjudge.injection``) and ``judge_model``.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragjudge.config import Config
from ragjudge.gate import GateResult, MetricSummary, Summary, check_gate
from ragjudge.judges import get_judge
from ragjudge.judges.base import OK, Prepared, Verdict
from ragjudge.records import EvalRecord, Mapping, resolve_mapping, to_records

COLUMN_TYPES = {
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
    "agreement": "float64",
}


def output_column_types(metrics: list[str], samples: int) -> dict[str, str]:
    """Column name -> type name of every column ``evaluate`` adds (for typed Parquet)."""
    types = {}
    for metric in metrics:
        for suffix, kind in COLUMN_TYPES.items():
            if suffix == "agreement" and samples == 1:
                continue
            types[f"{metric}_{suffix}"] = kind
    if "sufficiency" in metrics:
        types["sufficiency_mode"] = "string"
        types["sufficiency_p_yes"] = "float64"
    types["removed_instructions"] = "list<string>"
    types["judge_model"] = "string"
    return types


@dataclass
class RunResult:
    """What ``evaluate`` returns: the ``summary``, the ``gate`` verdict, the column
    ``mapping`` used, and (when ``keep_rows``) the scored table."""

    summary: Summary
    gate: GateResult
    mapping: Mapping | None
    table: Any = None
    notes: list[str] = field(default_factory=list)


class _Interrupt:
    def __init__(self) -> None:
        self.requested = False
        self.tasks: set[asyncio.Task] = set()

    def __call__(self) -> None:
        self.requested = True
        for task in list(self.tasks):
            task.cancel()


def _combine(metric: str, samples: list[Verdict]) -> Verdict:
    """Majority verdict over several samples; ``agreement`` = share agreeing with it."""
    ok = [v for v in samples if v.status == OK]
    if not ok:
        return samples[0]
    scores = [v.score for v in ok]
    if metric == "sufficiency":
        yes = sum(1 for s in scores if s >= 0.5)
        majority = 1.0 if yes * 2 > len(scores) else 0.0
    elif all(float(score).is_integer() for score in scores):
        majority = float(round(statistics.median(scores)))
    else:  # coverage_score / expected_score: float scores; agreement = same score to the nearest point
        majority = round(statistics.median(scores), 3)
    agreeing = [v for v in ok if round(v.score) == round(majority)]
    chosen = min(ok, key=lambda v: abs(v.score - majority))
    result = Verdict(**{**chosen.__dict__})
    result.score = majority
    result.agreement = len(agreeing) / len(samples)
    result.cached = all(bool(v.cached) for v in samples)
    result.prompt_tokens = sum(v.prompt_tokens or 0 for v in samples)
    result.completion_tokens = sum(v.completion_tokens or 0 for v in samples)
    costs = [v.cost_usd for v in samples]
    result.cost_usd = None if any(c is None for c in costs) else sum(costs)  # type: ignore[arg-type]
    return result


def _note(verdict: Verdict, note: str) -> None:
    """Put ``note`` (why ragjudge's decision differs from the verdict the judge wrote) in front
    of the judge's rationale."""
    verdict.rationale = f"{note}. {verdict.rationale}" if verdict.rationale else note


def _unpaid(verdict: Verdict) -> Verdict:
    """``verdict`` for a row that did not make the call: no tokens, no cost."""
    copy = Verdict(**{**verdict.__dict__})
    copy.prompt_tokens = copy.completion_tokens = 0
    copy.cost_usd = 0.0
    return copy


def _covered_share(details: dict[str, Any]) -> float | None:
    """Covered share (0..1) of the ground truth's statements: the mean P(covered) when the
    judge marked each statement exactly once and every mark has a probability, else the
    share marked covered (a statement left unmarked counts as not covered); None when no
    statement was marked (the written score then stands)."""
    covered = details.get("covered") or []
    p_covered = details.get("p_covered") or []
    if covered and all(flag is not None for flag in covered) and len(p_covered) == len(covered) and all(p is not None for p in p_covered):
        return sum(p_covered) / len(p_covered)
    if not any(flag is not None for flag in covered):
        return None
    return sum(1 for flag in covered if flag) / len(covered)


_REUSE = 4096  # first-call verdicts (ground-truth statements) kept in memory for reuse within a run


class _Judging:
    def __init__(self, config: Config, client: Any, interrupt: _Interrupt, on_progress: Callable[[int], None] | None) -> None:
        self.config = config
        self.client = client
        self.interrupt = interrupt
        self.on_progress = on_progress
        self._in_flight: dict[str, asyncio.Future] = {}
        self._done: OrderedDict[str, Verdict] = OrderedDict()

    def settled(self, record: EvalRecord, metric: str) -> Verdict | Prepared:
        """The verdict when no model call is needed (skipped, input error, cache hit), else
        the rendered prompt for ``one``. A two-call judge (completeness from an expected
        response) whose first call is cached starts from its second call."""
        judge = get_judge(metric)
        prepared = judge.prepare(record)
        if isinstance(prepared, Verdict):
            return prepared
        if prepared.mode == "statements":
            key = self.client.key(prepared, judge.PROMPT_VERSION, 0)
            first = self.client.from_cache(key)
            if first is None:
                prepared.cache_key = key
                return prepared
            prepared = judge.follow_up(prepared, first)
        if self.config.judge.samples == 1:
            key = self.client.key(prepared, judge.PROMPT_VERSION, 0)
            verdict = self.client.from_cache(key)
            if verdict is not None:
                return self.decide(verdict, metric, prepared)
            prepared.cache_key = key  # the client need not hash and look it up again
        return prepared

    async def one(self, metric: str, prepared: Prepared) -> Verdict:
        judge = get_judge(metric)
        if self.interrupt.requested or self.client.fatal is not None:
            reason = "interrupted" if self.interrupt.requested else f"not run: {self.client.fatal}"
            return Verdict.failed(metric, reason, mode=prepared.mode)
        samples = self.config.judge.samples
        first: Verdict | None = None
        try:
            if prepared.mode == "statements":  # the first of two calls: the ground truth's statements
                first, owner = await self._shared_call(prepared, judge)
                if first.status != OK:
                    return first
                prepared = judge.follow_up(prepared, first)
                if not owner:  # another row made (and pays for) this call
                    first = None
            if samples == 1:
                verdict = self.decide(await self.client.judge(prepared, judge.parse, judge.PROMPT_VERSION), metric, prepared)
            else:  # each sample decided on its own, then the majority (not decided again)
                drawn = await asyncio.gather(*(self.client.judge(prepared, judge.parse, judge.PROMPT_VERSION, s) for s in range(samples)))
                verdict = _combine(metric, [self.decide(v, metric, prepared) for v in drawn])
                if verdict.status == OK:
                    verdict.passed = bool(verdict.score >= self.config.threshold(metric))
        except asyncio.CancelledError:
            return Verdict.failed(metric, "interrupted", mode=prepared.mode)
        if first is not None and not first.cached:  # the first call's usage counts for the row
            verdict.prompt_tokens = (verdict.prompt_tokens or 0) + (first.prompt_tokens or 0)
            verdict.completion_tokens = (verdict.completion_tokens or 0) + (first.completion_tokens or 0)
            verdict.cost_usd = None if verdict.cost_usd is None or first.cost_usd is None else verdict.cost_usd + first.cost_usd
            verdict.cached = False
        return verdict

    async def _shared_call(self, prepared: Prepared, judge: Any) -> tuple[Verdict, bool]:
        """One call for every row of the run that renders the same ``prepared`` (rows sharing
        a ground truth): rows that come while it is in flight wait for it, later rows reuse
        it from memory (the last ``_REUSE`` verdicts, so the output does not depend on
        chunking or on the response cache being on). Returns the verdict and whether this
        row made the call."""
        key = prepared.cache_key or self.client.key(prepared, judge.PROMPT_VERSION, 0)
        if key in self._done:
            self._done.move_to_end(key)
            return _unpaid(self._done[key]), False
        task = self._in_flight.get(key)
        if task is not None:
            return _unpaid(await task), False
        prepared.cache_key = key
        task = self._in_flight[key] = asyncio.ensure_future(self.client.judge(prepared, judge.parse, judge.PROMPT_VERSION))
        try:
            verdict = await task
        finally:
            self._in_flight.pop(key, None)
        # a failed call is reused too (every row sharing it errs alike, whatever the chunking),
        # unless the run was stopping, when the rows are "interrupted" / "not run" anyway
        if verdict.status == OK or not (self.interrupt.requested or self.client.fatal is not None or self.client.stopping):
            self._done[key] = verdict
            if len(self._done) > _REUSE:
                self._done.popitem(last=False)
        return verdict, True

    def decide(self, verdict: Verdict, metric: str, prepared: Prepared | None = None) -> Verdict:
        """Apply ``judge.yes_threshold`` to P(yes) where it was read, ``judge.fact_threshold``
        to each fact's P(supported), the ``judge.fact_evidence`` check, then the pass
        threshold. Runs after the cache, so changing these settings needs no new calls."""
        if verdict.status != OK:
            return verdict
        details = verdict.details or {}
        written = verdict.score
        cut = self.config.judge.yes_threshold
        p_yes = details.get("p_yes")
        if cut is not None and p_yes is not None:
            verdict.score = 1.0 if p_yes >= cut else 0.0
            if verdict.score != written:  # the rationale argues for the written verdict: say so
                _note(verdict, f"probability check: P(yes) {p_yes:.2f} {'>=' if verdict.score else '<'} yes_threshold {cut:g}, "
                               f"so {'yes' if verdict.score else 'no'} (the judge wrote {'yes' if written else 'no'})")
        fact_cut = self.config.judge.fact_threshold
        p_facts = details.get("p_supported") or []
        facts = details.get("facts") or []
        if fact_cut is not None and facts and len(p_facts) == len(facts) and all(p is not None for p in p_facts):
            verdict.missing = [fact for fact, p in zip(facts, p_facts) if p < fact_cut]
            verdict.score = 0.0 if verdict.missing else 1.0
            verdict.details = {**details, "p_yes": min(p_facts)}
            if verdict.score != written:
                _note(verdict, f"probability check: {len(verdict.missing)} fact(s) with P(supported) < fact_threshold {fact_cut:g}, so no"
                               if verdict.missing else f"probability check: every fact has P(supported) >= fact_threshold {fact_cut:g}, so yes")
        p_score = details.get("p_score")
        if metric == "completeness" and self.config.judge.expected_score and p_score and not self.config.judge.coverage_score:
            verdict.score = round(sum(int(k) * p for k, p in p_score.items()), 3)
        if metric == "completeness" and self.config.judge.coverage_score:
            share = _covered_share(details)
            if share is not None:
                verdict.score = round(1 + 4 * share, 3)
        share_cut = self.config.judge.fact_evidence
        if share_cut is not None and prepared is not None and prepared.mode == "grounded" and prepared.items:
            from ragjudge.judges.sufficiency import evidence_shares

            shares = evidence_shares(prepared.items, prepared.passages)
            absent = [fact for fact, share in zip(prepared.items, shares) if share < share_cut]
            if absent:
                verdict.missing = list(dict.fromkeys([*verdict.missing, *absent]))
                if verdict.score:
                    _note(verdict, f"evidence check: the words of {len(absent)} expected fact(s) are mostly absent from the passages")
                verdict.score = 0.0
            verdict.details = {**(verdict.details or {}), "evidence": shares}
        verdict.passed = bool(verdict.score >= self.config.threshold(metric))
        return verdict

    async def chunk(self, records: list[EvalRecord]) -> list[list[Verdict]]:
        """Judge every row x metric of a chunk concurrently. An interrupt cancels only the
        unfinished (row, metric) tasks, so a verdict already received is never lost."""
        metrics = self.config.metrics

        async def tracked(known: list[Verdict | Prepared]) -> list[Verdict]:
            leaves = [asyncio.ensure_future(self.one(m, p)) for m, p in zip(metrics, known) if isinstance(p, Prepared)]
            self.interrupt.tasks.update(leaves)
            try:
                results = await asyncio.gather(*leaves, return_exceptions=True)
            finally:
                self.interrupt.tasks.difference_update(leaves)
            pending = iter(results)
            verdicts = []
            for metric, verdict in zip(metrics, known):
                if isinstance(verdict, Prepared):
                    result = next(pending)
                    if isinstance(result, asyncio.CancelledError):
                        result = Verdict.failed(metric, "interrupted")
                    elif isinstance(result, BaseException):
                        raise result
                    verdict = result
                verdicts.append(verdict)
            if self.on_progress:
                self.on_progress(1)
            return verdicts

        out: list[list[Verdict] | None] = []
        waiting = []
        for record in records:
            known = [self.settled(record, m) for m in metrics]
            if not any(isinstance(v, Prepared) for v in known):
                out.append(known)  # type: ignore[arg-type]
                if self.on_progress:
                    self.on_progress(1)
            else:
                out.append(None)
                waiting.append((len(out) - 1, tracked(known)))
        if waiting:
            for (position, _), verdicts in zip(waiting, await asyncio.gather(*(c for _, c in waiting))):
                out[position] = verdicts
        return out  # type: ignore[return-value]


def _scored(df: Any, verdicts: list[list[Verdict]], config: Config, model: str, records: list[EvalRecord]) -> Any:
    import pandas as pd

    out = df.copy()
    samples = config.judge.samples
    for position, metric in enumerate(config.metrics):
        column = [row[position] for row in verdicts]
        out[f"{metric}_score"] = pd.array([v.score for v in column], dtype="Float64")
        out[f"{metric}_passed"] = pd.array([v.passed for v in column], dtype="boolean")
        out[f"{metric}_rationale"] = [v.rationale for v in column]
        out[f"{metric}_status"] = [v.status for v in column]
        out[f"{metric}_error"] = [v.error for v in column]
        out[f"{metric}_missing"] = [list(v.missing) for v in column]
        out[f"{metric}_raw"] = [v.raw for v in column]
        out[f"{metric}_cached"] = pd.array([v.cached for v in column], dtype="boolean")
        out[f"{metric}_prompt_tokens"] = pd.array([v.prompt_tokens for v in column], dtype="Int64")
        out[f"{metric}_completion_tokens"] = pd.array([v.completion_tokens for v in column], dtype="Int64")
        out[f"{metric}_cost_usd"] = pd.array([v.cost_usd for v in column], dtype="Float64")
        if samples > 1:
            out[f"{metric}_agreement"] = pd.array([v.agreement for v in column], dtype="Float64")
        if metric == "sufficiency":
            out["sufficiency_mode"] = [v.mode for v in column]
            if config.judge.yes_threshold is not None or config.judge.fact_threshold is not None:
                out["sufficiency_p_yes"] = pd.array([(v.details or {}).get("p_yes") for v in column], dtype="Float64")
    out["removed_instructions"] = [list(record.removed) for record in records]
    out["judge_model"] = model
    return out


def evaluate(
    source: str,
    config: Config,
    output: str | None = None,
    input_format: str | None = None,
    output_format: str | None = None,
    flag_fields: frozenset[str] = frozenset(),
    on_start: Callable[[int | None], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    keep_table: bool = False,
) -> RunResult:
    """Score the table at ``source`` (a path or ``-``) with ``config``.

    Writes the scored table to ``output`` (a path, ``-`` or None for no table) atomically,
    every input row in input order with a status per metric. Returns a ``RunResult``.
    Raises ``InputError`` / ``ConfigError`` (exit 2) before any judging when the input or
    mapping is unusable. Provider failures never raise: they become error rows, and a
    fatal one (auth, quota, not found) stops the run with ``summary.fatal`` set (exit 3).
    Ctrl-C / SIGTERM stops new calls; unfinished rows get status error, reason 'interrupted'.
    """
    return asyncio.run(
        _evaluate(source, config, output, input_format, output_format, flag_fields, on_start, on_progress, on_note, keep_table)
    )


def count_rows(source: str, fmt: str) -> int | None:
    """Cheap row count for the progress bar (None for stdin and JSON arrays)."""
    if source == "-" or fmt == "json":
        return None
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(source).metadata.num_rows
        count = 0
        with open(source, "rb") as handle:
            for line in handle:
                if line.strip():
                    count += 1
        return max(count - 1, 0) if fmt == "csv" else count
    except OSError:
        return None


async def _evaluate(source, config, output, input_format, output_format, flag_fields, on_start, on_progress, on_note, keep_table) -> RunResult:
    import pandas as pd

    from ragjudge.io import TableWriter, detect_format, iter_chunks
    from ragjudge.llm import JudgeClient

    fmt = detect_format(source, input_format)
    if config.judge.model.startswith("local/"):
        from ragjudge import local

        local.check_available(config.judge)
        local.configure(config.judge, config.cache.dir)
        judge_settings, filled = local.calibrated(config.judge)
        if filled:
            config = config.model_copy(update={"judge": judge_settings})
            if on_note:
                on_note("embedded judge: the bundled model's settings " + ", ".join(f"{k}={local.CALIBRATED[k]}" for k in filled) + " (`ragjudge config show local`)")
        if config.judge.workers > 1 and on_note:
            on_note("note: --workers is ignored for the embedded judge; it runs one prompt at a time in this process")

    chunks = iter_chunks(source, fmt, config.chunk_size)
    first = next(chunks, None)
    if first is None:
        first = pd.DataFrame()
    mapping = resolve_mapping(
        [str(c) for c in first.columns],
        first.head(50).to_dict("records"),
        config.columns,
        flag_fields,
        "<stdin>" if source == "-" else source,
    )
    notes = [mapping.describe(), *mapping.warnings]
    replaced = [str(c) for c in first.columns if str(c) in output_column_types(config.metrics, config.judge.samples)]
    if replaced:
        notes.append(f"note: the input's column(s) {', '.join(replaced)} are replaced in the output by this run's own")
    if on_note:
        for note in notes:
            on_note(note)
    cache = None
    if config.cache.enabled:
        from ragjudge.cache import ResponseCache

        cache = ResponseCache(config.cache.dir)
    if config.judge.workers > 1 and not config.judge.model.startswith("local/"):
        from ragjudge.workers import WorkerPool

        client: Any = WorkerPool(config.judge, cache)
    else:  # one process (the embedded judge runs one prompt at a time anyway)
        client = JudgeClient(config.judge, cache)
    summary = Summary(
        metrics={
            m: MetricSummary(
                m,
                config.threshold(m),
                min_pass_rate=config.gate.min_pass_rate.get(m, 1.0),
                max_error_rate=config.gate.max_error_rate,
            )
            for m in config.metrics
        },
        judge_model=config.judge.model,
    )
    writer = TableWriter(output, output_format, output_column_types(config.metrics, config.judge.samples)) if output else None
    interrupt = _Interrupt()
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, interrupt)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    if on_start:
        on_start(count_rows(source, fmt))
    judging = _Judging(config, client, interrupt, on_progress)
    kept = []
    start = 0
    try:
        chunk = first
        while chunk is not None:
            records = to_records(chunk.to_dict("records"), mapping, start, config.judge.strip_instructions)
            summary.rows_with_removed_instructions += sum(1 for record in records if record.removed)
            verdicts = await judging.chunk(records)
            client.stopping = interrupt.requested
            for row in verdicts:
                for metric, verdict in zip(config.metrics, row):
                    summary.metrics[metric].add(verdict)
            scored = _scored(chunk, verdicts, config, config.judge.model, records)
            if writer:
                writer.write(scored)
            if keep_table:
                kept.append(scored)
            summary.rows += len(chunk)
            start += len(chunk)
            chunk = next(chunks, None)
        if writer:
            writer.close()
            for note in writer.notes:
                notes.append(note)
                if on_note:
                    on_note(note)
    except BaseException:
        if writer:
            writer.abort()
        raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        if hasattr(client, "aclose"):
            await client.aclose()
        if cache is not None:
            cache.close()
    if summary.rows_with_removed_instructions:
        note = (
            f"{summary.rows_with_removed_instructions} row(s): sentences addressed to the judge were removed from the context or response before "
            "judging (column removed_instructions; judge.strip_instructions: false keeps them)"
        )
        notes.append(note)
        if on_note:
            on_note(note)
    summary.fatal = str(client.fatal) if client.fatal else None
    summary.interrupted = interrupt.requested
    summary.provider_calls = client.calls
    table = None
    if keep_table:
        table = pd.concat(kept, ignore_index=True) if len(kept) > 1 else (kept[0] if kept else first)
    return RunResult(summary, check_gate(summary), mapping, table, notes)

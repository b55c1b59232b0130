"""Scoring on a Ray cluster with Ray Data (``pip install ".[ray]"``; ``--engine ray``).

Rows are scored by ``Dataset.map_batches`` over a callable class that builds one ``Scorer``
per actor and reuses it for every batch; each batch's ``Summary`` goes to a small collector
actor, which the driver merges (``Summary.merge``) into the summary of the whole run, so the
summary table, summary JSON, gate and exit codes are those of a local run.

- Input (``evaluate_on_ray``): a file, a folder or a glob of JSONL, CSV or Parquet files (one
  format), read by ragjudge's own readers in Ray tasks: the same values and the same error
  messages (exit 2) as a local run. The files are read twice: a first pass finds each
  chunk's column types, which the driver unifies as the local engine does
  (``io.unified_schema``), and every block is cast to that one schema, so the same files give
  the same table on both engines. Row order is kept.
- Output: a folder of Parquet files, or one file when OUTPUT names one (written by the driver
  as a local run writes it); a name ending in ``/`` or an existing folder is always a folder.
- Limits across the cluster: ``judge.concurrency`` is per actor, so the provider sees
  actors x concurrency calls in flight; ``judge.rpm`` is split evenly across the actors.
- Cache: each node uses its own per-user cache folder by default; a ``cache.dir`` on shared
  storage is shared by all, and a re-run pays only for rows not yet cached.
- Faults: a batch whose actor dies is retried by Ray on a new actor (no row lost or written
  twice: a batch's summary is kept once, by the batch's key); a fatal provider error (bad key)
  is shared through the collector, so each actor makes at most one call after it, then
  returns "not run" rows; Ctrl-C on the driver cancels the job and says what was written.

``score_dataset(ds, config)`` scores a ``ray.data.Dataset`` you already hold and returns the
scored dataset (materialized, so that its summary is known) and the summary.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ragjudge.errors import InputError, ProviderFatalError, RagjudgeError
from ragjudge.gate import check_gate, Summary
from ragjudge.settings import Config
from ragjudge.options import run_record
from ragjudge.counting import id_column
from ragjudge.scoring import Scorer
from ragjudge.run.engine import RunResult
from ragjudge.run.request import EngineChoice, Outputs, Selection
from ragjudge.run.source import Source, choose
from ragjudge.io import names_folder, source_files, SUFFIXES, TableWriter, to_stdout

FILE, ROW = "__ragjudge_file", "__ragjudge_row"  # where each row came from, dropped before scoring
ACTOR_CPUS = 0.25  # a scoring actor waits on the network: a quarter of a CPU each leaves room for the readers
CRASH_ONCE = "RAGJUDGE_TEST_CRASH_ONCE"  # a test hook: a marker file's path; the first actor to reach its 2nd batch exits, once


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError('--engine ray needs Ray: pip install ".[ray]" in a ragjudge checkout') from None
    return ray


def input_files(source: str, input_format: str | None = None) -> tuple[list[str], str]:
    """The files of ``source`` (a file, a folder or a glob) and their one format (``input_format``,
    else the suffixes'), as the local engine finds them (``io.source_files``). Raises
    ``InputError`` for no readable file or mixed formats."""
    return source_files(source, input_format)


def _file_schemas(batch: Any, fmt: str, chunk_size: int) -> Any:
    """Ray task: the Arrow schema of each chunk of each file in ``batch['path']``, pickled (the
    driver unifies them as the local engine does, ``io.unified_schema``), and the file's rows;
    or the ragjudge error its reading raised (a malformed file), pickled in ``error``: returned,
    not raised, since Ray Data wraps a task's exception in one that loses it on the way to the
    driver, and so that the driver names the first bad file, as a local run does."""
    import pickle

    import pandas as pd

    from ragjudge.io import chunk_schemas_and_rows

    found: list[tuple[list[Any], int, bytes]] = []
    for path in batch["path"]:
        try:
            found.append((*chunk_schemas_and_rows(str(path), fmt, chunk_size), b""))
        except RagjudgeError as exc:
            found.append(([], 0, pickle.dumps(exc)))
    return pd.DataFrame({"index": [int(i) for i in batch["index"]], "schemas": [pickle.dumps(schemas) for schemas, _, _ in found],
                         "rows": [rows for _, rows, _ in found], "error": [error for _, _, error in found]})


def _read_files(batch: Any, fmt: str, chunk_size: int, schema: Any, origins: dict[str, str], collector: Any = None) -> Any:
    """Ray task: the rows of each file in ``batch['path']`` read by ragjudge's readers, as Arrow
    tables of the files' one ``schema`` (``io.conform_table``: the local engine's table) with
    the row's file and position. A ragjudge error (a value the shared type cannot hold) is
    handed to ``collector`` before it is raised (``_carry``)."""
    import pyarrow as pa

    from ragjudge.io import conform_table, iter_chunks

    where = pa.schema([pa.field(FILE, pa.int64()), pa.field(ROW, pa.int64())])
    for index, path in zip(batch["index"], batch["path"]):
        start = 0
        for chunk in iter_chunks(str(path), fmt, chunk_size):
            chunk = chunk.copy()
            chunk[FILE] = int(index)
            chunk[ROW] = range(start, start + len(chunk))
            try:
                table = conform_table(chunk, schema, str(path), where, origins)
            except RagjudgeError as exc:
                _carry(collector, (int(index), start), exc)
                raise
            start += len(chunk)
            yield table


def _carry(collector: Any, key: Any, exc: BaseException) -> None:
    """Hand the ragjudge error ``exc``, raised in a Ray task at ``key`` (file, row), to the
    driver through ``collector``, as it is: Ray Data wraps a task's exception in a
    ``UserCodeException`` whose cause does not reach the driver, or appends its retry advice to
    the message, so the driver asks the collector for it (``_raise_carried``)."""
    if collector is not None:
        import ray

        ray.get(collector.carry.remote(key, exc))


def _unified_schema(paths: Any, files: list[str], fmt: str, chunk_size: int) -> tuple[Any, dict[str, str], list[int]]:
    """The files' one schema: each file's chunk schemas found by a Ray task, unified on the
    driver in file order (``io.unified_schema``); with the origins of its types and each
    file's number of rows."""
    import pickle

    from ragjudge.io import unified_schema

    found = paths.map_batches(_file_schemas, fn_kwargs={"fmt": fmt, "chunk_size": chunk_size}, batch_format="pandas", batch_size=1)
    try:
        rows = sorted(found.take_all(), key=lambda row: row["index"])
    except Exception as exc:
        unwrapped = _unwrap(exc)
        if unwrapped is not exc:
            raise unwrapped from None
        raise
    for row in rows:  # the first file that could not be read, as a local run reads them
        if row["error"]:
            raise pickle.loads(row["error"]) from None
    schema, origins = unified_schema(files, [pickle.loads(row["schemas"]) for row in rows])
    return schema, origins, [int(row["rows"]) for row in rows]


def _unwrap(exc: BaseException) -> BaseException:
    """A ragjudge error raised inside a Ray task, as it was raised, where Ray kept it: a
    ``RayTaskError``'s ``cause`` is the task's exception (the ``RayTaskError`` is an instance of
    its class too, but its text is Ray's traceback, so the cause is taken first). Else ``exc``."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        cause = getattr(seen, "cause", None)
        if isinstance(cause, BaseException) and cause is not seen:
            seen = cause
            continue
        if isinstance(seen, RagjudgeError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return exc


def _raise_carried(collector: Any, exc: BaseException) -> None:
    """Raise the ragjudge error behind ``exc`` (a Ray job's failure): the first one a task
    handed to ``collector`` (``_carry``), else the one Ray kept (``_unwrap``); return when
    there is none (``exc`` is then raised as it is)."""
    ray = _ray()
    carried = ray.get(collector.carried.remote())
    if carried is not None:
        raise carried from None
    found = _unwrap(exc)
    if found is not exc:
        raise found from None


def _collector_class() -> Any:
    ray = _ray()

    @ray.remote(num_cpus=0)
    class Collector:
        """The batches' summaries, one per batch key, the run's fatal provider error and the
        ragjudge errors its tasks raised (``_carry``)."""

        def __init__(self) -> None:
            self.summaries: dict[Any, Any] = {}
            self.fatal: str | None = None
            self.errors: dict[Any, Any] = {}

        def carry(self, key: Any, error: Any) -> None:
            self.errors.setdefault(key, error)

        def carried(self) -> Any:
            """The error of the first row (file, row) that raised one, else None."""
            return self.errors[min(self.errors)] if self.errors else None

        def add(self, key: Any, summary: Any) -> None:
            self.summaries[key] = summary  # a retried batch replaces its own, never adds to it
            if summary.fatal and self.fatal is None:
                self.fatal = summary.fatal

        def get_fatal(self) -> str | None:
            return self.fatal

        def merged(self) -> list[Any]:
            return [self.summaries[key] for key in sorted(self.summaries, key=repr)]

    return Collector


class _ScoreBatch:
    """``map_batches``' callable class: one ``Scorer`` per actor, every batch scored with it."""

    def __init__(self, config: dict[str, Any], mapping: Any, collector: Any, crash_marker: str | None = None,
                 chosen: Any = None, offsets: list[int] | None = None) -> None:
        self.scorer = Scorer(Config.model_validate(config))
        self.mapping = mapping
        self.collector = collector
        self.crash_marker = crash_marker
        self.chosen = chosen  # the rows judged (--limit / --sample: positions in the whole input), None: all
        self.offsets = offsets or []  # each file's first row's position in the whole input
        self.batches = 0

    def __call__(self, batch: Any) -> Any:
        import ray

        self.batches += 1
        marker = self.crash_marker
        if marker and self.batches == 2 and not os.path.exists(marker):
            Path(marker).write_text("crashed once")
            os._exit(1)
        fatal = ray.get(self.collector.get_fatal.remote())
        if fatal and self.scorer.model.fatal is None:
            self.scorer.model.fatal = ProviderFatalError(fatal)  # another actor's bad key: no call from this one
        if FILE in batch.columns:
            key: Any = (int(batch[FILE].iloc[0]), int(batch[ROW].iloc[0])) if len(batch) else ("empty", id(batch))
            positions = [self.offsets[int(f)] + int(r) for f, r in zip(batch[FILE], batch[ROW])] if self.offsets else []
            start = positions[0] if positions else 0
            batch = batch.drop(columns=[FILE, ROW])
        else:
            import pandas as pd

            key = hashlib.sha256(pd.util.hash_pandas_object(batch.astype(str), index=False).values.tobytes()).hexdigest()
            start, positions = 0, []
        skip = None
        if self.chosen is not None and positions:
            skip = {i for i, position in enumerate(positions) if position not in self.chosen}
        scored = self.scorer.score(batch, self.mapping, start=start, skip=skip)
        ray.get(self.collector.add.remote(key, scored.summary))
        import pyarrow as pa

        from ragjudge.io import plain_frame

        # Arrow types the batch as Scorer.output_schema does (Ray's own conversion would pickle list
        # cells), with list columns as plain lists, as the local writer stores them
        schema = self.scorer.output_schema(pa.Schema.from_pandas(batch, preserve_index=False))
        return pa.Table.from_pandas(plain_frame(scored.frame), schema=schema, preserve_index=False)


def _quiet(ray: Any) -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore", module=r"ray\..*")

    from ray.data import DataContext

    context = DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    for name in ("ray", "ray.data", "ray.data._internal.execution.streaming_executor"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _share(config: Config, actors: int) -> dict[str, Any]:
    """``config`` as each actor builds its ``Scorer``: ``judge.rpm`` and the budget
    ``judge.max_cost`` split evenly across the actors (each actor counts its own spending)."""
    data = config.model_dump(exclude_unset=True)
    if config.judge.rpm:
        data.setdefault("judge", {})["rpm"] = config.judge.rpm / actors
    if config.judge.max_cost is not None:
        data.setdefault("judge", {})["max_cost"] = config.judge.max_cost / actors
    return data


def _score(ds: Any, config: Config, mapping: Any, actors: int, chosen: Any = None, offsets: list[int] | None = None,
           collector: Any = None) -> tuple[Any, Summary]:
    ray = _ray()
    _quiet(ray)
    collector = collector or _collector_class().remote()
    batch_size = max(1, min(config.chunk_size, 1000))
    ds = ds.repartition(target_num_rows_per_block=batch_size)  # blocks of one batch each: every actor gets work
    from ray.data import ActorPoolStrategy

    scored = ds.map_batches(
        _ScoreBatch,
        fn_constructor_kwargs={"config": _share(config, actors), "mapping": mapping, "collector": collector,
                               "crash_marker": os.environ.get(CRASH_ONCE), "chosen": chosen, "offsets": offsets},
        batch_format="pandas",
        batch_size=batch_size,
        compute=ActorPoolStrategy(size=actors),  # Ray Data restarts an actor that dies and retries its batch
        num_cpus=ACTOR_CPUS,
    ).materialize()
    parts = ray.get(collector.merged.remote())
    summary = parts[0] if parts else None
    for part in parts[1:]:
        summary = summary.merge(part)
    if summary is None:
        with Scorer(config) as scorer:
            summary = scorer.new_summary()
    summary.max_cost = config.judge.max_cost  # the run's budget, not an actor's share
    for name, metric in summary.metrics.items():  # the bounds as the driver's config sets them (an actor's copy names every metric)
        metric.bounds = config.bounds_set(name)
    return scored, summary


def score_dataset(ds: Any, config: Config, actors: int | None = None, mapping: Any = None) -> tuple[Any, Summary]:
    """Score a ``ray.data.Dataset`` of evaluation rows with ``config``.

    ``actors``: scoring actors (default: the cluster's CPUs). ``mapping``: the column mapping
    (default: resolved from the dataset's first rows). Returns the scored dataset
    (materialized; the output columns as ``Scorer.output_schema`` gives them) and the
    ``Summary`` of every row. Raises ``InputError`` for a mapped column that does not exist."""
    import pandas as pd

    ray = _ray()

    if mapping is None:
        with Scorer(config) as scorer:
            mapping = scorer.plan(pd.DataFrame(ds.take(50)), "the dataset").mapping
    actors = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    return _score(ds, config, mapping, actors)


EVERY_ROW, NO_OUTPUT, RAY = Selection(), Outputs(), EngineChoice("ray")


def evaluate_on_ray(source: Source, config: Config, selection: Selection = EVERY_ROW, outputs: Outputs = NO_OUTPUT,
                    engine: EngineChoice = RAY, *, flag_fields: frozenset[str] = frozenset(), on_note: Any = None,
                    recorded: dict[str, Any] | None = None) -> Any:
    """``ragjudge score --engine ray`` (through ``ragjudge.run.run``, which checks the options):
    read ``source`` (a ``ragjudge.run.source.Source``: a file, folder or glob, in its format),
    score it on the Ray cluster at ``engine.ray_address`` (default: a local one) with
    ``engine.ray_actors`` actors (default: one a CPU), write ``outputs.output`` (a folder of Parquet
    files, or one file when it names one by its suffix or ``outputs.table_format`` names its
    format, unless it ends in ``/`` or is a folder: ``io.names_folder``) and return a
    ``RunResult`` with the merged summary and the gate. ``selection`` chooses the rows judged as
    the local engine chooses them (``source.choose``: the same rows); the others are written as
    skipped, "not sampled". ``recorded``: as
    ``engine.score_source`` takes it.
    Raises ``InputError`` / ``ConfigError`` (exit 2) as a local run does."""
    import pandas as pd

    from ragjudge.io import conform_frame, iter_chunks
    output, output_format, address, actors = outputs.output, outputs.table_format, engine.ray_address, engine.ray_actors
    files, fmt = input_files(source.path, source.format)
    ray = _ray()
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    written = None
    try:
        _quiet(ray)
        paths = ray.data.from_items([{"index": i, "path": p} for i, p in enumerate(files)])
        schema, origins, counts = _unified_schema(paths, files, fmt, config.chunk_size)
        offsets = [sum(counts[:i]) for i in range(len(counts))]
        chosen = choose(sum(counts), selection.limit, selection.sample, selection.seed)
        with Scorer(config) as scorer:  # the driver checks the input and the mapping as a local run does
            first = next(iter_chunks(files[0], fmt, scorer.config.chunk_size), None)
            first = conform_frame(pd.DataFrame() if first is None else first, schema, files[0], origins)
            plan = scorer.plan(first, files[0], flag_fields)
            mapping, notes = plan.mapping, list(plan.notes)
            own = scorer.column_types()
            config = scorer.config
        for note in notes:
            if on_note:
                on_note(note)
        actors = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
        if on_note:
            on_note(f"ray: {actors} actor(s), each with judge.concurrency {config.judge.concurrency} (the provider sees up to "
                    f"{actors * config.judge.concurrency} calls in flight){'; judge.rpm split across them' if config.judge.rpm else ''}"
                    f"{'; judge.max_cost split across them (each actor stops at its share)' if config.judge.max_cost is not None else ''}")
        collector = _collector_class().remote()
        ds = paths.map_batches(_read_files, fn_kwargs={"fmt": fmt, "chunk_size": config.chunk_size, "schema": schema,
                                                          "origins": origins, "collector": collector},
                               batch_format="pandas", batch_size=1)
        try:
            scored, summary = _score(ds, config, mapping, actors, chosen, offsets, collector)
        except Exception as exc:
            _raise_carried(collector, exc)
            raise
        if output:
            if not names_folder(output) and (Path(output).suffix.lower() in SUFFIXES or to_stdout(output) or output_format):
                writer = TableWriter(output, output_format, own)
                writer.record = {**run_record(config, id_column(mapping), list(summary.metrics)), **(recorded or {})}  # as the local engine's
                try:
                    for batch in scored.iter_batches(batch_format="pandas", batch_size=config.chunk_size):
                        writer.write(batch)
                    writer.close()
                except BaseException:
                    writer.abort()
                    raise
            else:
                scored.write_parquet(output)
            written = output
    except KeyboardInterrupt:
        where = f"; {output} may hold part of the output" if output and os.path.isdir(output) else ""
        raise KeyboardInterrupt(f"interrupted: the Ray job was cancelled{where}") from None
    finally:
        if started_here:
            ray.shutdown()
    summary.judge_model = config.judge.judge_model
    return RunResult(summary, check_gate(summary), mapping, None, notes + ([f"wrote {written}"] if written else []))

"""Judge calls spread over worker processes (``judge.workers`` / ``--workers``), for hosted
providers at high concurrency.

litellm spends a few milliseconds of CPU on each call (request building, response objects,
logging, cost look-up), so one Python process tops out at a few hundred calls per second
whatever the provider's capacity. ``WorkerPool`` keeps the ``JudgeClient`` interface the
runner uses (``key``, ``from_cache``, ``judge``, ``calls``, ``fatal``, ``stopping``) and runs
the calls in ``workers`` child processes, each with its own ``JudgeClient`` and event loop:

- the concurrency limit stays global: the pool keeps at most ``judge.concurrency`` calls in
  flight in all, each worker holding its share; the pool itself paces requests to
  ``judge.rpm`` before handing them to a worker;
- the first call of a run still goes alone (to the first worker, before any other is
  sent), so a bad key costs one call, and a fatal error in any worker stops every worker;
- workers read and write the same diskcache directory (SQLite; safe across processes);
- workers ignore SIGINT: the runner handles Ctrl-C and the pool ends its children, and a
  worker whose parent dies sees its socket close and exits.

Requests and replies are pickled, length-prefixed frames over a socket pair, read and
written with asyncio streams on both sides. Workers start on the first uncached call, so a
warm-cache run never starts one.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import signal
import socket
import struct
from typing import Any, Callable

from ragjudge.config import JudgeSettings
from ragjudge.errors import ProviderFatalError
from ragjudge.judges.base import Prepared, Verdict
from ragjudge.llm import Pacer

_HEADER = struct.Struct("!I")


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    size = _HEADER.unpack(await reader.readexactly(_HEADER.size))[0]
    return pickle.loads(await reader.readexactly(size))


def _write_frame(writer: asyncio.StreamWriter, message: Any) -> None:
    blob = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    writer.write(_HEADER.pack(len(blob)) + blob)


def _share(total: int, index: int, workers: int) -> int:
    """Worker ``index``'s part of ``total`` (the parts differ by at most one and sum to it)."""
    return total // workers + (1 if index < total % workers else 0)


def _worker_main(sock: socket.socket, settings: JudgeSettings, cache_dir: str | None, probe: bool) -> None:
    """Entry point of a worker process: serve judge requests until the socket closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(_serve(sock, settings, cache_dir, probe))


async def _serve(sock: socket.socket, settings: JudgeSettings, cache_dir: str | None, probe: bool) -> None:
    from ragjudge.judges import get_judge
    from ragjudge.llm import JudgeClient

    cache = None
    if cache_dir is not None:
        from ragjudge.cache import ResponseCache

        cache = ResponseCache(cache_dir)
    client = JudgeClient(settings, cache)
    if not probe:  # only the first worker makes the run's probe call (its first call, sent alone)
        client._probe_started = True
        client._loop_state()
        client._probe_done.set()  # type: ignore[union-attr]
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    tasks: set[asyncio.Task] = set()

    async def handle(ident: int, prepared: Prepared, version: str, sample: int) -> None:
        judge = get_judge(prepared.metric)
        try:
            verdict = await client.judge(prepared, judge.parse, version, sample)
        except Exception as exc:  # never lose the reply slot: the row becomes an error
            verdict = Verdict.failed(prepared.metric, f"judge worker failed: {type(exc).__name__}: {exc}", mode=prepared.mode)
        fatal = str(client.fatal) if client.fatal is not None else None
        _write_frame(writer, ("verdict", ident, verdict, client.calls, fatal))
        await writer.drain()

    try:
        while True:
            try:
                message = await _read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            kind = message[0]
            if kind == "judge":
                task = asyncio.ensure_future(handle(*message[1:]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            elif kind == "fatal":
                if client.fatal is None:
                    client.fatal = ProviderFatalError(message[1])
            elif kind == "stop":
                break
    finally:
        for task in list(tasks):
            task.cancel()
        if cache is not None:
            cache.close()
        writer.close()


class WorkerPool:
    """``JudgeClient``'s interface over ``workers`` processes; see the module docstring.

    ``settings``: ``JudgeSettings`` (``workers`` >= 2); ``cache_dir``: the response cache
    folder, or None when the cache is off. ``await aclose()`` when done.
    """

    def __init__(self, settings: JudgeSettings, cache: Any = None) -> None:
        from ragjudge.llm import JudgeClient

        self.settings = settings
        self.workers = settings.workers
        # in this process the client only hashes keys and reads the cache; it never calls
        self._local = JudgeClient(settings, cache)
        self._cache_dir = str(cache.directory) if cache is not None else None
        self._calls: list[int] = []
        self.fatal: ProviderFatalError | None = None
        self.stopping = False
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self._probe_done: asyncio.Event | None = None
        self._slots: asyncio.Semaphore | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._load: list[int] = []
        self._alive: list[bool] = []
        self._futures: dict[int, asyncio.Future] = {}
        self._readers: list[asyncio.Task] = []
        self._processes: list[Any] = []
        self._next_id = 0
        # judge.rpm across all workers: requests leave this process at most every 60/rpm
        # seconds (retries inside a worker follow their own backoff)
        self._pacer = Pacer(settings.rpm)

    @property
    def calls(self) -> int:
        """Provider calls made by all workers (retries and re-asks included)."""
        return sum(self._calls)

    # the parts the runner uses synchronously, served by the in-process client
    def key(self, prepared: Prepared, version: str, sample: int) -> str:
        return self._local.key(prepared, version, sample)

    def from_cache(self, key: str) -> Verdict | None:
        return self._local.from_cache(key)

    async def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        for index in range(self.workers):
            parent, child = socket.socketpair()
            share = self.settings.model_copy(update={
                "concurrency": max(1, _share(self.settings.concurrency, index, self.workers)),
                "rpm": None,  # the pool paces requests itself, so the workers' calls never burst
                "workers": 1,
            })
            process = context.Process(target=_worker_main, args=(child, share, self._cache_dir, index == 0), daemon=True, name=f"ragjudge-worker-{index}")
            process.start()
            child.close()
            reader, writer = await asyncio.open_unix_connection(sock=parent)
            self._processes.append(process)
            self._writers.append(writer)
            self._load.append(0)
            self._calls.append(0)
            self._alive.append(True)
            self._readers.append(asyncio.ensure_future(self._receive(index, reader)))

    async def _receive(self, index: int, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                message = await _read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            _, ident, verdict, calls, fatal = message
            self._calls[index] = calls  # the worker's running total
            if fatal is not None and self.fatal is None:
                self.fatal = ProviderFatalError(fatal)
                for writer in self._writers:
                    _write_frame(writer, ("fatal", fatal))
            future = self._futures.pop(ident, None)
            if future is not None and not future.done():
                future.set_result(verdict)
        # the worker is gone: no more requests go to it, its unanswered ones become error rows
        self._alive[index] = False
        for ident, future in list(self._futures.items()):
            if getattr(future, "worker", None) == index and not future.done():
                self._futures.pop(ident, None)
                future.set_exception(RuntimeError(f"judge worker {index} exited"))

    async def judge(self, prepared: Prepared, parse: Callable[[str | None, Prepared], Verdict], version: str, sample: int = 0) -> Verdict:
        """One verdict for a prepared prompt, from the cache or from a worker; see
        ``JudgeClient.judge`` (same returns; ``parse`` must be the metric's own parser,
        which the worker looks up by ``prepared.metric``)."""
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
            self._probe_done = asyncio.Event()
            self._slots = asyncio.Semaphore(self.settings.concurrency)
        key = prepared.cache_key if sample == 0 and prepared.cache_key else None
        if key is None:
            hit = self.from_cache(self.key(prepared, version, sample))
            if hit is not None:
                return hit
        probe = False
        async with self._start_lock:
            if not self._started:
                await self._start()
                self._started = probe = True
        if not probe:
            await self._probe_done.wait()  # type: ignore[union-attr]
        try:
            if self.fatal is not None or self.stopping:
                reason = f"not run: {self.fatal}" if self.fatal else "interrupted"
                return Verdict.failed(prepared.metric, reason, mode=prepared.mode)
            async with self._slots:  # type: ignore[union-attr]
                await self._pacer.wait()  # before choosing a worker, so loads are current
                alive = [i for i in range(self.workers) if self._alive[i]]
                if not alive:
                    return Verdict.failed(prepared.metric, "every judge worker process exited", mode=prepared.mode)
                index = min(alive, key=self._load.__getitem__)
                self._load[index] += 1
                try:
                    return await self._ask(index, prepared, version, sample)
                except RuntimeError as exc:
                    return Verdict.failed(prepared.metric, str(exc), mode=prepared.mode)
                finally:
                    self._load[index] -= 1
        finally:
            if probe:
                self._pacer.restart()  # the probe left when its worker had started, not when paced
                self._probe_done.set()  # type: ignore[union-attr]

    async def _ask(self, index: int, prepared: Prepared, version: str, sample: int) -> Verdict:
        ident = self._next_id
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        future.worker = index  # type: ignore[attr-defined]
        self._futures[ident] = future
        if not self._processes[index].is_alive():
            self._futures.pop(ident, None)
            self._alive[index] = False
            raise RuntimeError(f"judge worker {index} exited")
        _write_frame(self._writers[index], ("judge", ident, prepared, version, sample))
        await self._writers[index].drain()
        try:
            return await future
        finally:
            self._futures.pop(ident, None)

    async def aclose(self) -> None:
        """Stop the workers (they finish no further calls) and wait briefly for them."""
        for writer in self._writers:
            try:
                _write_frame(writer, ("stop",))
                writer.close()
            except Exception:
                pass
        for task in self._readers:
            task.cancel()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._join)

    def _join(self) -> None:
        for process in self._processes:
            process.join(5)
            if process.is_alive():
                process.terminate()
                process.join(5)

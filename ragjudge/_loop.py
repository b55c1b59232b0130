"""The one event loop that ragjudge's judge calls run on, in a daemon thread of its own.

``Scorer.score`` works from a plain script, from inside a running event loop (Jupyter, an
async web app) and from several threads at once because every judge call runs here: one
loop per process, so the per-model concurrency limits and HTTP sessions are shared by every
caller. The thread starts on first use. It holds no other state.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def get_loop() -> asyncio.AbstractEventLoop:
    """The ragjudge event loop (started on first call)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = _new_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.set_exception_handler(_quiet_handler)
                loop.call_soon(ready.set)
                loop.run_forever()

            _thread = threading.Thread(target=run, name="ragjudge-loop", daemon=True)
            _thread.start()
            ready.wait()
            _loop = loop
        return _loop


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (libuv: about half asyncio's CPU per socket
    event), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _quiet_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's report of an error nobody awaited, which must never stop the loop itself
    (stderr may be a closed pipe)."""
    try:
        loop.default_exception_handler(context)
    except Exception:  # noqa: S110 (nowhere left to report it)
        pass


def on_loop() -> bool:
    """True when called from the ragjudge loop's own thread."""
    return _thread is not None and threading.current_thread() is _thread


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the ragjudge loop and wait for its result in this thread. A
    KeyboardInterrupt (or any exception) while waiting cancels it there. Raises
    ``RuntimeError`` when called from the loop's own thread (it would wait for itself)."""
    if on_loop():
        coro.close()
        raise RuntimeError("ragjudge: use `await scorer.ascore(df)` inside ragjudge's own event loop")
    return wait(submit(coro))


def submit(coro: Coroutine[Any, Any, T]) -> "concurrent.futures.Future[T]":
    """Start ``coro`` on the ragjudge loop; returns its future at once (``wait`` for it).
    Raises ``RuntimeError`` from the loop's own thread, as ``run`` does."""
    if on_loop():
        coro.close()
        raise RuntimeError("ragjudge: use `await scorer.ascore(df)` inside ragjudge's own event loop")
    return asyncio.run_coroutine_threadsafe(coro, get_loop())


def wait(future: "concurrent.futures.Future[T]") -> T:
    """The result of ``future`` (from ``submit``), waited for in this thread. A
    KeyboardInterrupt (or any exception) while waiting cancels it on the loop."""
    try:
        while True:
            try:
                return future.result(timeout=1.0)
            except concurrent.futures.TimeoutError:
                if _thread is None or not _thread.is_alive():
                    raise RuntimeError("ragjudge's event loop thread stopped") from None
    except BaseException:
        future.cancel()
        raise


async def arun(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on the ragjudge loop, from any event loop (or that loop itself)."""
    if on_loop():
        return await coro
    future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, get_loop())
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise


def call_soon(callback: Any, *args: Any) -> None:
    """Schedule ``callback(*args)`` on the ragjudge loop from any thread (a no-op before the
    loop exists)."""
    if _loop is not None and not _loop.is_closed():
        _loop.call_soon_threadsafe(callback, *args)

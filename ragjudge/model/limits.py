"""The concurrency limit (``judge.concurrency``, one per model and API base in the process) and
the pacing (``judge.rpm``) that every request of ``ragjudge.model.Model`` passes."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any


class Pacer:
    """``judge.rpm``: at most ``rpm`` calls start per minute, evenly spaced on asyncio's
    clock (one every 60/rpm seconds, no bursts); ``rpm`` None: no waiting."""

    def __init__(self, rpm: float | None) -> None:
        self.rpm = rpm
        self._next = 0.0
        self._lock: asyncio.Lock | None = None

    async def wait(self) -> None:
        """Return when the next call may start."""
        if not self.rpm:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = asyncio.get_running_loop().time()
            if self._next > now:
                await asyncio.sleep(self._next - now)
            self._next = max(now, self._next) + 60.0 / self.rpm


class CallLimit:
    """``judge.concurrency`` for every model of one (provider model, API base) on one event loop:
    an ``asyncio.Semaphore`` (calls wait in order of arrival) whose size is the lowest that a live
    model asked for (``ask``; ``leave`` when it closes). A size lowered while its slots are taken
    takes them back as they come free; ``in_use``: the calls holding a slot.

    A call that leaves with its reply and wakes a waiting call lets that call send its request
    before its own reply is read, cached and decided: two turns of the event loop, the woken
    call's task and, on Python before 3.12, the task in which aiohttp writes its request body.
    When replies come back together, new calls then go out as each slot frees, not after the
    whole burst has been processed (bench/README.md, figure 1c; issue 65, paired on 2 cores: a
    plain semaphore without it was slower in 5 of 5 runs at C=64 and at C=256). The reply is already received then, so a
    cancellation that arrives in those two turns does not lose it: it is held, and raised at the
    task's next call (``held_cancellation``, called by ``Model.call``)."""

    # tasks whose cancellation arrived while they let a woken call go first, with a reply in hand
    _cancel_at_next_call: "weakref.WeakSet[asyncio.Task]" = weakref.WeakSet()

    def __init__(self) -> None:
        self.asked: dict[int, int] = {}
        self.size = 0
        self.in_use = 0
        self._owed = 0  # slots to take back as they come free (the size was lowered)
        self._slots = asyncio.Semaphore(0)

    def ask(self, model: int, concurrency: int) -> None:
        """``model`` (an id) asks for at most ``concurrency`` calls at once."""
        self.asked[model] = concurrency
        self._resize()

    def leave(self, model: int) -> None:
        """``model`` is closed: its ask no longer counts."""
        self.asked.pop(model, None)
        self._resize()

    def _resize(self) -> None:
        size = min(self.asked.values()) if self.asked else 1
        change, self.size = size - self.size, size
        while change > 0 and self._owed:
            self._owed -= 1
            change -= 1
        for _ in range(change):
            self._slots.release()
        self._owed += max(0, -change)

    async def __aenter__(self) -> None:
        while self._owed and not self._slots.locked():  # a free slot of a lowered size: taken back (no wait)
            await self._slots.acquire()
            self._owed -= 1
        await self._slots.acquire()
        self.in_use += 1

    async def __aexit__(self, exc_type: Any = None, *exc: Any) -> None:
        self.in_use -= 1
        if self._owed:
            self._owed -= 1
            return
        self._slots.release()
        if not self._slots.locked() or exc_type is not None:  # no call was woken, or this one has no reply
            return
        cancelled = 0
        for _ in range(2):  # the woken call goes first
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                cancelled += 1
        task = asyncio.current_task()
        if cancelled and task is not None:
            for _ in range(cancelled):
                task.uncancel()
            self._cancel_at_next_call.add(task)

    @classmethod
    def held_cancellation(cls) -> None:
        """Raise the cancellation held for this task while it let a woken call go first, if any."""
        task = asyncio.current_task()
        if task is not None and task in cls._cancel_at_next_call:
            cls._cancel_at_next_call.discard(task)
            raise asyncio.CancelledError()


# one limit per event loop and (provider model, API base)
_LIMITS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str | None], CallLimit]]" = weakref.WeakKeyDictionary()


"""``FirstCall``: a model's first uncached call goes alone (step 3 of ``ragjudge.model``)."""

from __future__ import annotations

import asyncio
import threading

PROBE_GRACE_S = 0.5  # seconds the other calls wait for the probe's answer at most (bench/README.md, figure 1c)
PROBE_LATE_S = 0.05  # a grace timer this late found the loop thread held (the probe perhaps never sent): the grace starts again


class FirstCall:
    """The first call of one model (the probe) goes alone, so a bad key costs one call; the
    others start once its first attempt has an answer or ``PROBE_GRACE_S`` (0.5 s) after it
    started, whichever comes first: an auth error comes back in the connection's set-up and one
    round trip, while a judge's answer takes the model's time, which the others need not wait
    for (bench/README.md, figure 1c: C=256, L=1 s, 0.917 -> 0.934 of the call-rate limit).

    A grace timer that fires more than ``PROBE_LATE_S`` late found the loop thread held (a
    panel's run imported pandas on the main thread while its members' first calls were out):
    the probe may not even have been sent, or its answer, a 401 say, waits unread, so the grace
    starts again rather than letting the queued calls go before that answer (issue 60 item 15:
    a member with a bad key was called 16 times, its concurrency, instead of once).

    ``turn()``: awaited by each call before it is sent; True for the probe. ``answer()``: the
    probe has its answer, or was never sent. ``answered``: a ``threading.Event`` set then (from
    the loop thread): a JSON Lines run imports pandas once it is set, not while the first calls
    are being made (``Scorer.finish``)."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        self._started = False
        self._released: asyncio.Event | None = None

    async def turn(self) -> bool:
        """True for the first call (it goes now); the others wait for its answer or the grace."""
        if self._released is None:
            self._released = asyncio.Event()
        if not self._started:
            self._started = True
            # a timer, not a wait per call, of a loop thread free to send the probe
            self._release_after(asyncio.get_running_loop(), PROBE_GRACE_S)
            return True
        if not self._released.is_set():
            await self._released.wait()
        return False

    def answer(self) -> None:
        """The probe has its answer (or was never sent): the other calls go."""
        self.answered.set()
        if self._released is not None:
            self._released.set()

    def _release_after(self, loop: asyncio.AbstractEventLoop, grace: float) -> None:
        """Let the others go ``grace`` seconds from now, unless the probe's answer did first; a
        timer this late (``PROBE_LATE_S``) starts the grace again."""
        due = loop.time() + grace
        released = self._released
        assert released is not None

        def release() -> None:
            if released.is_set():
                return
            if loop.time() - due > PROBE_LATE_S:
                self._release_after(loop, grace)
                return
            released.set()

        loop.call_later(grace, release)

"""``CallsAhead``: the calls a model makes ahead of the rows that will make them (step 2 of
``ragjudge.model``)."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

from ragjudge.types import Verdict

# set in a task whose calls are made ahead of the rows that will claim them (``Scorer.submit(ahead=True)``)
AHEAD: ContextVar[bool] = ContextVar("ragjudge_call_ahead", default=False)


class CallsAhead:
    """One model's calls made ahead of their rows: a JSON Lines run's first row is judged while
    the rest of its first chunk is read (``Scorer.submit(..., ahead=True)`` sets ``AHEAD`` in the
    job's task). The first row that makes such a call again gets its verdict as its own (paid,
    not cached: ``claim``); ``unclaimed`` gives those no row made, for the run's note
    (``Scorer.drop``). Bench/README.md, figure 1c, "the first call before the first chunk is
    read": the first call 0.44-0.53 -> 0.37-0.44 s from the process's start."""

    def __init__(self) -> None:
        self._made: dict[str, asyncio.Future] = {}  # key -> the call's verdict, not claimed yet

    def __contains__(self, key: str) -> bool:
        return key in self._made

    def start(self, key: str, done: asyncio.Future) -> bool:
        """Keep ``done`` (the verdict of the call of ``key`` just started) for its row when this
        task makes its calls ahead; whether it does."""
        if not AHEAD.get():
            return False
        self._made[key] = done
        return True

    def claim(self, key: str) -> asyncio.Future | None:
        """The call of ``key`` made ahead, given to the row that makes it now (once), else None."""
        return self._made.pop(key, None) if self._made else None

    def unclaimed(self) -> list[Verdict]:
        """The verdicts of the calls made ahead that no row has made since: their cost is in the
        model's ``spent`` and an ok reply is cached, but no row holds them. Read once the calls are done."""
        return [made.result() for made in self._made.values() if made.done() and not made.cancelled() and made.exception() is None]

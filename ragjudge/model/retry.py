"""What one request of ``ragjudge.model.Model`` may end in, and the waits between its attempts:
the backoff (tenacity's, with the servers' own ``Retry-After``), the failures (``_Failed``: a row
error; ``_Budget``, ``_Stopped``), the usage counted for the attempts made, and the ``Ledger`` of
USD that ``judge.max_cost`` bounds."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from ragjudge.errors import ProviderFatalError
from ragjudge.http_errors import RETRY_AFTER_MAX_S
from ragjudge.transports import base
from ragjudge.transports.base import TransportError
from ragjudge.types import Reason, Reply, Usage

BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 30.0
# set by a row's chain of calls (``Scorer._chain``): a list the usage of its calls cancelled by an interrupt is added
# to (the requests sent, a reply already received before a re-ask), so the row's "interrupted" verdict counts them
CANCELLED: ContextVar[list[Usage] | None] = ContextVar("ragjudge_cancelled_usage", default=None)


class _Again(Exception):
    """Ask again at once (the server rejected ``response_format``; it is dropped)."""


BUDGET = Reason.BUDGET_REACHED


class _Budget(Exception):
    """``judge.max_cost`` is spent: no new call starts."""


class _Stopped(Exception):
    """The run was interrupted (``Model.interrupt``): no new request leaves, a retry included."""


class _Failed(Exception):
    def __init__(self, message: str | Reason, usage: Usage, fatal: ProviderFatalError | None = None, kind: str | None = None) -> None:
        super().__init__(message.value if isinstance(message, Reason) else message)
        self.reason = message if isinstance(message, Reason) else None
        self.usage = usage
        self.fatal = fatal
        self.kind = kind  # the transport error's kind, where one ended the call


class Ledger:
    """USD spent by the models that share one budget (``judge.max_cost``): one model, or every
    member of a panel."""

    def __init__(self) -> None:
        self.spent = 0.0




def asked_wait(after: float | None, step: float) -> float:
    """Seconds to wait before a retry: the backoff's next ``step``, or the server's ``after``
    (Retry-After and the like, seconds) where it asks for longer, up to ``RETRY_AFTER_MAX_S``. A
    server's wait of zero, below zero, in the past or unreadable never shortens the backoff: a
    server answering ``Retry-After: 0`` while overloaded got its retries back to back
    (will-ockmore/httpx-retries#13)."""
    if after is None or not after > step:  # None, NaN, 0, negative, or shorter than the backoff
        return step
    return min(after, RETRY_AFTER_MAX_S)


_BACKOFF: Any = None


def _backoff() -> Any:
    """tenacity's exponential backoff with jitter (made on the first retry, and again when
    ``BACKOFF_INITIAL_S`` or ``BACKOFF_MAX_S`` changed): before retry n (n = 1, 2, ...) it waits
    ``min(BACKOFF_INITIAL_S * 2**(n-1) + uniform(0, BACKOFF_INITIAL_S), BACKOFF_MAX_S)`` seconds
    (Google Cloud's retry strategy, which tenacity follows).

    tenacity 9.2 renamed the first factor ``initial=`` to ``multiplier=`` (``initial=`` warns there);
    every release from 8.2 to 9.1 (Phoenix's server keeps 9.1.4) knows only ``initial=``, and
    ``multiplier=`` raised TypeError on each retry there (issue 60 item 11): the name is taken from
    the installed release's signature."""
    global _BACKOFF
    if _BACKOFF is None or _BACKOFF[0] != (BACKOFF_INITIAL_S, BACKOFF_MAX_S):
        import inspect

        from tenacity import wait_exponential_jitter

        factor = "multiplier" if "multiplier" in inspect.signature(wait_exponential_jitter).parameters else "initial"
        _BACKOFF = ((BACKOFF_INITIAL_S, BACKOFF_MAX_S),
                    wait_exponential_jitter(**{factor: BACKOFF_INITIAL_S}, max=BACKOFF_MAX_S, jitter=BACKOFF_INITIAL_S))
    return _BACKOFF[1]


def _cancelled(usage: Usage) -> None:
    """Add ``usage``, spent on a call being cancelled, to its row's ``CANCELLED`` list."""
    spent = CANCELLED.get()
    if spent is not None and usage.calls:
        spent.append(usage)


def _requests(attempts: int) -> Usage:
    """The usage of ``attempts`` requests that got no reply: every one counted, all but the first a retry."""
    return Usage(calls=attempts, retries=max(0, attempts - 1))


def _counted(reply: Reply, attempts: int) -> Reply:
    """``reply``, its usage counting every request made for it (``attempts``; the failed
    ones before it are retries)."""
    reply.usage = replace(reply.usage, calls=attempts, retries=max(0, attempts - 1))
    return reply


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, _Again):
        return True
    return isinstance(exc, TransportError) and exc.kind in base.RETRYABLE



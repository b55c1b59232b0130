"""``python -m ragjudge.fakeserver``: the loopback fake judge server (``ragjudge.fakes.server``),
by the name the tests, bench/ and the README start and import it (``FakeJudgeServer``,
``FakeTransport``, ``heuristic_reply``). A test double, never a judge."""

from __future__ import annotations

from ragjudge.fakes.server import FakeJudgeServer, FakeTransport, heuristic_reply, main

__all__ = ["FakeJudgeServer", "FakeTransport", "heuristic_reply", "main"]

if __name__ == "__main__":
    main()

"""The embedded judge's turns between processes (issue 44 item 10): a run that waits for
another process's call says so once, naming that process, and its time left is estimated from
the time spent judging, not waiting (it said "about 1.5 min left" and took five)."""

from __future__ import annotations

from ragjudge import local


def test_the_time_left_counts_the_time_spent_judging(monkeypatch):
    from ragjudge.reports import terminal

    class Quiet:
        is_terminal = False

        def __init__(self):
            self.lines = []

        def print(self, text, **_):
            self.lines.append(text)

    clock = iter([0.0, 100.0])
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    monkeypatch.setattr(local, "TURNS", local._Turns())
    console = Quiet()
    progress = terminal.Progress(console)
    progress.start(20)
    local.TURNS.waited = 80.0  # 80 of the 100 seconds were spent waiting for another run's calls
    progress.advance(10, 0.0)
    assert console.lines == ["judged 10/20 rows (0.5 rows/s, about 0.3 min left; $0.0000 so far)"]

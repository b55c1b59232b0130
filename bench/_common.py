"""Helpers shared by the benchmarks: a fake judge server in its own process, data generation."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / "_work"
PYTHON = sys.executable


def machine() -> str:
    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}"


@contextmanager
def fake_server(latency: float = 0.0):
    """The fake OpenAI-compatible server in a separate process (so it does not share the
    client's interpreter lock); yields its base URL."""
    process = subprocess.Popen(
        [PYTHON, "-m", "ragjudge.fakeserver", "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
    )
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        if not url.startswith("http"):
            raise RuntimeError("fake server did not start")
        yield url
    finally:
        process.terminate()
        process.wait(10)


def synthetic_rows(path: Path, n: int, distinct: int | None = None, context_bytes: int = 300) -> Path:
    """Write ``n`` grounded-sufficiency rows; with ``distinct``, the judge inputs repeat
    every ``distinct`` rows (ids stay unique), so a warm cache covers them all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    filler = ("The archive records trade, weather and harvests for each season of the year. " * 20)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            k = i % distinct if distinct else i
            context = f"Landmark {k} stands in city {k}. " + filler[: max(0, context_bytes - 30)]
            handle.write(json.dumps({"id": f"row-{i}", "request": f"Where is landmark {k}?", "context": [context], "expected_response": f"city {k}"}) + "\n")
    return path


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start

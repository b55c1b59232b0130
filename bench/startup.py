"""Figure 3: start-up time of `ragjudge --help` and `ragjudge score --help` (best and median of 7).

    python bench/startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import machine

RAGJUDGE = str(Path(sys.executable).with_name("ragjudge"))


def wall(command: list[str], repeat: int = 7) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    print(f"machine: {machine()}")
    for args in (["--help"], ["score", "--help"]):
        times = wall([RAGJUDGE, *args])
        print(f"[3] ragjudge {' '.join(args)}: best {min(times):.3f} s, median {statistics.median(times):.3f} s (target <= 0.5 s)")


if __name__ == "__main__":
    main()

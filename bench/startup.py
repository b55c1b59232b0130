"""Figure 3: start-up time of `ragjudge --help` and `ragjudge score --help` (best and median of 7).
Figure 3b: a 20-row CI-sized run against the fake server answering at once: the whole
process's wall time and the time from process start to the first request the server sees
(best and median of 7), beside its floor: a bare interpreter importing only the libraries such a
run cannot do without (pandas, pyarrow's Parquet, aiohttp, pydantic, uvloop, orjson), which
no change inside ragjudge can take below. ``--checkout DIR`` times another checkout of ragjudge (run with
this interpreter from that folder), e.g. an older commit for a before/after figure.

    python bench/startup.py [--checkout ../ragjudge-old]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, WORK, machine

RAGJUDGE = str(Path(sys.executable).with_name("ragjudge"))


def wall(command: list[str], repeat: int = 7) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return times


def first_call(checkout: Path, repeat: int = 7) -> tuple[list[float], list[float]]:
    """(whole-process seconds, seconds to the first request) of a 20-row run, ``repeat`` times."""
    from ragjudge.fakeserver import FakeJudgeServer

    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."], "expected_response": f"city {i}"}
            for i in range(20)]
    source = WORK / "rows_20.jsonl"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key"}
    totals, firsts = [], []
    with FakeJudgeServer() as server:
        for _ in range(repeat):
            server.arrivals.clear()
            start = time.monotonic()  # the server records arrivals on the same clock
            subprocess.run([sys.executable, "-m", "ragjudge", "score", str(source), "-m", "sufficiency", "--model", "openai/fake-judge",
                            "--api-base", server.url, "--no-cache", "-q", "--min-pass-rate", "0", "-o", str(WORK / "rows_20.scored.parquet")],
                           cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            totals.append(time.monotonic() - start)
            firsts.append(server.arrivals[0] - start)
    return totals, firsts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the ragjudge checkout to time for figure 3b (default: this one)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    for command in (["--help"], ["score", "--help"]):
        times = wall([RAGJUDGE, *command])
        print(f"[3] ragjudge {' '.join(command)}: best {min(times):.3f} s, median {statistics.median(times):.3f} s (target <= 0.5 s)")
    floor = wall([sys.executable, "-c", "import pandas, pyarrow.parquet, aiohttp, pydantic, uvloop, orjson"])
    print(f"[3c] the floor of a run: python -c 'import pandas, pyarrow.parquet, aiohttp, pydantic, uvloop, orjson': "
          f"best {min(floor):.2f} s, median {statistics.median(floor):.2f} s")
    totals, firsts = first_call(args.checkout.resolve())
    print(f"[3b] 20 rows against the fake server ({args.checkout}): whole process best {min(totals):.2f} s, median {statistics.median(totals):.2f} s "
          f"(goal <= 1.5 s); first request after best {min(firsts):.2f} s, median {statistics.median(firsts):.2f} s")


if __name__ == "__main__":
    main()

"""Figure 5b: the demo's rows with the embedded judge, one run alone, then two runs at once.

Each run scores sample_data/demo.jsonl (6 rows, 7 judge calls) with the embedded judge and a
fresh response cache of its own, as `make demo` does on a new machine (the model is already
assembled). Two runs at once should each take about twice as long as one alone on a machine
whose cores they share: their calls take turns (ragjudge.local.machine_turn). With
RAGJUDGE_LOCAL_SHARED=0 in the environment the threads of both runs fight over the cores at
every step instead (over 7 times as long on 2 cores).

    python bench/embedded_pair.py [--poll 0] [--skip-alone]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

from _common import ROOT, WORK, machine


def start(tag: str, poll: int) -> tuple[subprocess.Popen, float]:
    cache = WORK / f"pair_cache_{tag}"
    shutil.rmtree(cache, ignore_errors=True)
    command = [sys.executable, "-m", "ragjudge", "score", "sample_data/demo.jsonl", "-c", "local", "--cache-dir", str(cache),
               "-q", "--min-pass-rate", "0"]
    env = dict(os.environ, RAGJUDGE_LOCAL_POLL=str(poll))
    return subprocess.Popen(command, cwd=ROOT, env=env), time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poll", type=int, default=0, help="llama.cpp's polling (0..100); ragjudge uses 0")
    parser.add_argument("--skip-alone", action="store_true", help="only the two runs at once")
    args = parser.parse_args()
    print(f"machine: {machine()}; poll {args.poll}")
    alone = None
    if not args.skip_alone:
        process, began = start("alone", args.poll)
        code = process.wait()
        alone = time.perf_counter() - began
        print(f"[5b] one run alone: {alone:.0f} s (exit {code})")
    pair = [start("a", args.poll), start("b", args.poll)]
    times = []
    for process, began in pair:
        code = process.wait()
        times.append(time.perf_counter() - began)
    line = f"[5b] two runs at once: {times[0]:.0f} s and {times[1]:.0f} s"
    if alone:
        line += f", {max(times) / alone:.1f} times one run alone"
    print(line)


if __name__ == "__main__":
    main()

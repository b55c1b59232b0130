"""Figure 4: a large JSONL scored from a warm cache, streamed in chunks: wall time and peak RSS.

Generates N rows (default 1,000,000) with about 1 KB of context each, whose judge inputs
repeat every 1,000 rows (ids stay unique), warms the cache on the first 1,000 rows against
the fake server, then scores the whole file in a child process and reads its peak RSS.

    python bench/scale.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, WORK, fake_server, machine, synthetic_rows

DISTINCT = 1000


def score(source: Path, output: Path, url: str, cache: Path) -> tuple[float, float, int]:
    command = [sys.executable, "-m", "ragjudge", "score", str(source), "-m", "sufficiency", "-o", str(output),
               "--model", "openai/fake-judge", "--api-base", url, "--cache-dir", str(cache), "--min-pass-rate", "0", "-q"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    code = subprocess.call(command, cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key"})
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak_kib, before) / 1024, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    source = WORK / f"scale_{args.rows}.jsonl"
    if not source.exists():
        synthetic_rows(source, args.rows, distinct=DISTINCT, context_bytes=1000)
    warm = synthetic_rows(WORK / "scale_warm.jsonl", DISTINCT, distinct=DISTINCT, context_bytes=1000)
    cache = WORK / "scale_cache"
    shutil.rmtree(cache, ignore_errors=True)
    output = WORK / "scale_out.parquet"
    with fake_server(0.0) as url:
        seconds, _, code = score(warm, WORK / "scale_warm_out.parquet", url, cache)
        print(f"warmed the cache with {DISTINCT} distinct rows in {seconds:.1f} s (exit {code})")
        seconds, peak_mib, code = score(source, output, url, cache)
    size_mib = source.stat().st_size / 2**20
    print(f"[4] {args.rows} rows ({size_mib:.0f} MiB JSONL) from a warm cache: {seconds:.1f} s "
          f"({args.rows / seconds:.0f} rows/s end to end, process start-up included), peak RSS {peak_mib:.0f} MiB "
          f"(target <= 1024 MiB), exit {code}")


if __name__ == "__main__":
    main()

"""Figures 1 and 2: judge throughput against a fake server with fixed latency, and a warm-cache re-run.

N rows, one metric (sufficiency), a fake OpenAI-compatible server answering after a fixed
latency L (100 ms) in its own process, concurrency C in {16, 64}. The physical limit is
C / L calls per second. Each run is repeated with 1 and 2 judge worker processes
(``--workers``). Prints rows/s over the judging phase (first call to last verdict)
and end to end (read, judge, write; process start-up excluded, see startup.py), the ratio
to the limit, then the same run again from the warm cache.

    python bench/throughput.py [--rows 5000] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import shutil
import time

from _common import WORK, Timer, fake_server, machine, synthetic_rows


def run(source: str, output: str, url: str, concurrency: int, cache_dir: str, workers: int = 1) -> dict:
    from ragjudge.config import load_config
    from ragjudge.pipeline import evaluate

    config = load_config(None, {
        "judge": {"model": "openai/fake-judge", "api_base": url, "concurrency": concurrency, "workers": workers},
        "metrics": ["sufficiency"],
        "cache": {"dir": cache_dir},
        "gate": {"min_pass_rate": 0.0},
    })
    marks: dict[str, float] = {}

    def started(_total):
        marks["judge_start"] = time.perf_counter()

    def progressed(_rows):
        marks["judge_end"] = time.perf_counter()

    with Timer() as total:
        result = evaluate(source, config, output=output, on_start=started, on_progress=progressed)
    rows = result.summary.rows
    return {
        "rows": rows,
        "ok": result.summary.metrics["sufficiency"].ok,
        "cached": result.summary.metrics["sufficiency"].cached,
        "calls": result.summary.provider_calls,
        "judge_rows_per_s": rows / (marks["judge_end"] - marks["judge_start"]),
        "end_to_end_rows_per_s": rows / total.seconds,
        "seconds": total.seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="judge worker processes (ragjudge --workers); each value is a run")
    args = parser.parse_args()
    import os

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    source = synthetic_rows(WORK / f"rows_{args.rows}.jsonl", args.rows)
    print(f"machine: {machine()}; {args.rows} rows, one metric, fake server latency {args.latency * 1000:.0f} ms")
    with fake_server(args.latency) as url:
        for concurrency in args.concurrency:
            limit = concurrency / args.latency
            for workers in args.workers:
                cache_dir = WORK / f"cache_c{concurrency}_w{workers}"
                shutil.rmtree(cache_dir, ignore_errors=True)
                label = f"concurrency {concurrency}, {workers} worker{'s' if workers > 1 else ''}"
                cold = run(str(source), str(WORK / "out.parquet"), url, concurrency, str(cache_dir), workers)
                print(f"[1] {label}: judging {cold['judge_rows_per_s']:.0f} rows/s = {cold['judge_rows_per_s'] / limit:.2f} of the "
                      f"{limit:.0f} calls/s limit; end to end {cold['end_to_end_rows_per_s']:.0f} rows/s "
                      f"({cold['seconds']:.1f} s, {cold['calls']} calls, {cold['ok']} ok)", flush=True)
                warm = run(str(source), str(WORK / "out.parquet"), url, concurrency, str(cache_dir), workers)
                print(f"[2] warm cache, {label}: end to end {warm['end_to_end_rows_per_s']:.0f} rows/s "
                      f"({warm['seconds']:.2f} s, {warm['cached']} of {warm['rows']} rows from the cache, {warm['calls']} calls)", flush=True)

if __name__ == "__main__":
    main()
